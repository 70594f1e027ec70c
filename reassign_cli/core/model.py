"""Plain data for the pure core, and Kafka's JSON file formats (read and write). Pure: no I/O.

Shapes are chosen for 1M-partition clusters: a topic's assignment is a mapping of partition id to a
list of broker ids, never an object per partition (a dict, or replicas.TopicReplicas over one numpy
array when a snapshot is loaded for planning).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import orjson

from reassign_cli.core.names import listed
from reassign_cli.core.replicas import stack
from reassign_cli.errors import InvalidInputError

# topic -> partition -> replicas. The universal "assignment" shape (current, proposed, targets).
Assignment = dict[str, dict[int, list[int]]]
TopicPartition = tuple[str, int]


class _NoEntries(dict[Any, Any]):
    """An empty dict that cannot be filled: the one shared default of topics loaded for planning, where
    a million topics would otherwise carry four empty dicts each (256 MB). Filling it raises."""

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("this empty mapping is shared and read-only")

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = setdefault = pop = popitem = clear = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, ())


NO_ENTRIES: dict[Any, Any] = _NoEntries()


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class Capacity:
    """A broker's disks as its log dirs report them to DescribeLogDirs (v4+, KIP-827, Kafka 3.3 and
    later): the sums, over its live log dirs, of the volume's total and usable bytes (each log dir its
    own disk, unless `shared`)."""

    total: int
    usable: int
    # How its log dirs were counted: True, those of one filesystem once (--shared-log-dirs); False, each
    # log dir as its own disk (the default); None: unknown (a snapshot taken before the choice existed,
    # which counted log dirs of one total size, equally full to 0.1%, once).
    shared: bool | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log dir of a broker as DescribeLogDirs (and its cordoned.log.dirs) report it: core/disks.py."""

    path: str
    offline: bool = False
    error: str | None = None  # why it is offline (DescribeLogDirs' error name); None when live
    held: int | None = None  # bytes of its current replicas; None when offline
    future_held: int | None = None  # bytes of future replicas being moved into it; None when offline
    total: int | None = None  # its filesystem's total bytes (v4+); None when unknown
    usable: int | None = None  # its filesystem's usable bytes (v4+); None when unknown
    cordoned: bool | None = None  # in cordoned.log.dirs (Kafka 4.3+); None when unknown


@dataclass(slots=True)
class Topic:
    """What `/brokers/topics/<t>` (and optionally the partition state znodes) say about a topic."""

    name: str
    # partitions[p] exactly as in the znode: during a reassignment this is RS (target first, then origin).
    # Read-only: a dict, or a replicas.TopicReplicas when loaded from a snapshot for planning.
    replicas: Mapping[int, list[int]]
    adding: dict[int, list[int]] = field(default_factory=dict)  # AR, only non-empty entries
    removing: dict[int, list[int]] = field(default_factory=dict)  # RR, only non-empty entries
    isr: dict[int, list[int]] = field(default_factory=dict)  # from .../partitions/<p>/state, when read
    leader: dict[int, int] = field(default_factory=dict)  # -1: no leader
    topic_id: str | None = None
    # Partition -> size in bytes (the largest replica's), when known: a snapshot taken through the admin
    # API records them (DescribeLogDirs); partitions of unknown size are absent.
    sizes: dict[int, int] = field(default_factory=dict)
    # Partition -> for each replica, the index of the log dir holding it in its broker's dirs
    # (ClusterState.disks), None where unknown; `future_dirs` the same for future copies being moved
    # between log dirs. Only partitions with one located (core/disks.py). By default the shared read-only
    # empty mapping: a million topics carry no dicts of their own.
    dirs: dict[int, list[int | None]] = field(default_factory=lambda: NO_ENTRIES)
    future_dirs: dict[int, list[int | None]] = field(default_factory=lambda: NO_ENTRIES)

    def target(self, p: int) -> list[int]:
        """TRS: replicas minus removing, order kept (Kafka's ReplicaAssignment.targetReplicas)."""
        rs = self.replicas[p]
        rr = self.removing.get(p)
        return [b for b in rs if b not in rr] if rr else rs

    def origin(self, p: int) -> list[int]:
        """ORS: replicas minus adding, order kept (Kafka's ReplicaAssignment.originReplicas)."""
        rs = self.replicas[p]
        ar = self.adding.get(p)
        return [b for b in rs if b not in ar] if ar else rs

    def is_reassigning(self, p: int) -> bool:
        return bool(self.adding.get(p)) or bool(self.removing.get(p))


@dataclass(slots=True)
class ClusterState:
    """A consistent-enough read of the cluster: what every pure function plans and checks against."""

    brokers: list[Broker]  # registered (live) brokers, sorted by id
    topics: dict[str, Topic]
    deleting: frozenset[str] = frozenset()  # children of /admin/delete_topics
    # Content of /admin/reassign_partitions; None when the znode does not exist.
    reassignment: dict[TopicPartition, list[int]] | None = None
    # Why the controller cannot use that znode (invalid JSON, unknown fields such as log_dirs), or None.
    trigger_problem: str | None = None
    # Partitions being reassigned in topics this read left out. The admin API lists every reassignment
    # of the cluster in one request, so its reads fill this; ZooKeeper reads leave it empty.
    reassigning_elsewhere: frozenset[TopicPartition] = frozenset()
    # Each broker's disk capacity, where the brokers reported it (snapshot --bootstrap-server on Kafka
    # 3.3+); empty when unknown.
    capacities: dict[int, Capacity] = field(default_factory=dict)
    # Each broker's log dirs, sorted by path, where the brokers reported them (core/disks.py); brokers
    # that did not answer are absent; empty when unknown (ZooKeeper alone, an older snapshot).
    disks: dict[int, tuple[LogDir, ...]] = field(default_factory=dict)

    @property
    def broker_ids(self) -> list[int]:
        return [b.id for b in self.brokers]


@dataclass(slots=True)
class PlanEntry:
    topic: str
    partition: int
    replicas: list[int]
    log_dirs: list[str] | None = None  # None when the file had no log_dirs for this partition


@dataclass(slots=True)
class ReassignmentFile:
    """A parsed --reassignment-json-file, entries in file order (duplicates kept for validation)."""

    entries: list[PlanEntry]

    def targets(self) -> dict[TopicPartition, list[int]]:
        return {(e.topic, e.partition): e.replicas for e in self.entries}

    def has_log_dir_moves(self) -> bool:
        return any(e.log_dirs and any(d != "any" for d in e.log_dirs) for e in self.entries)

    def log_dir_targets(self) -> dict[tuple[str, int, int], str]:
        """(topic, partition, broker) -> the log dir the plan names for that replica (not "any")."""
        out: dict[tuple[str, int, int], str] = {}
        for e in self.entries:
            for b, d in zip(e.replicas, e.log_dirs or (), strict=False):
                if d != "any":
                    out[(e.topic, e.partition, b)] = d
        return out


# ---------------------------------------------------------------------------------------------
# Reading Kafka's input files
# ---------------------------------------------------------------------------------------------


def _loads(data: bytes | str, what: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        # orjson's message carries "line L column C (char N)": say where, as the issue asks.
        raise InvalidInputError(f"{what} is not valid JSON: {e}") from None


def _check_version(doc: Mapping[str, Any], what: str) -> None:
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise InvalidInputError(f"{what}: Not supported version field value {version}")


def _top_list(data: bytes | str, what: str, key: str) -> list[Any]:
    """The document's `key` list, after the checks both of Kafka's input files share."""
    doc = _loads(data, what)
    if not isinstance(doc, dict):
        raise InvalidInputError(f'{what}: expected a JSON object with a "{key}" list')
    _check_version(doc, what)
    raw = doc.get(key, [])
    if not isinstance(raw, list):
        raise InvalidInputError(f'{what}: "{key}" must be a list')
    return raw


def parse_topics_to_move(data: bytes | str) -> list[str]:
    """Kafka's --topics-to-move-json-file: {"topics":[{"topic":"foo"}],"version":1}."""
    what = "topics-to-move file"
    raw = _top_list(data, what, "topics")
    topics: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "topic" not in item:
            raise InvalidInputError(f"{what}: topics[{i}]: No such field exists: `topic`")
        name = item["topic"]
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f'{what}: topics[{i}]: "topic" must be a non-empty string')
        topics.append(name)
    dups = duplicates(topics)
    if dups:
        raise InvalidInputError(listed("List of topics to reassign contains duplicate entries: {}", dups))
    return topics


def parse_reassignment(data: bytes | str) -> ReassignmentFile:
    """Kafka's --reassignment-json-file. Shape errors only; semantic checks live in validate.py."""
    what = "reassignment file"
    raw = _top_list(data, what, "partitions")
    entries: list[PlanEntry] = []
    for i, item in enumerate(raw):
        where = f"{what}: partitions[{i}]"
        if not isinstance(item, dict):
            raise InvalidInputError(f"{where}: expected an object")
        for key in ("topic", "partition", "replicas"):
            if key not in item:
                raise InvalidInputError(f"{where}: No such field exists: `{key}`")
        topic, partition, replicas = item["topic"], item["partition"], item["replicas"]
        if not isinstance(topic, str) or not topic:
            raise InvalidInputError(f'{where}: "topic" must be a non-empty string')
        where = f"{what}: partition {topic}-{partition}"
        if not _is_int(partition):
            raise InvalidInputError(f'{where}: "partition" must be an integer')
        if not isinstance(replicas, list) or not all(_is_int(b) for b in replicas):
            raise InvalidInputError(f'{where}: "replicas" must be a list of integers')
        log_dirs = item.get("log_dirs")
        if log_dirs is not None:
            if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
                raise InvalidInputError(f'{where}: "log_dirs" must be a list of strings')
            if len(log_dirs) != len(replicas):
                raise InvalidInputError(
                    f"Size of replicas list {_jlist(replicas)} is different from size of log dirs list "
                    f"{_jlist(log_dirs)} for partition {topic}-{partition}"
                )
        entries.append(PlanEntry(topic, partition, list(replicas), log_dirs))
    return ReassignmentFile(entries)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _jlist(items: Sequence[object]) -> str:
    """Java's List.toString, as Kafka 3.9 prints lists in messages: [1, 2]."""
    return "[" + ", ".join(str(x) for x in items) + "]"


def duplicates(items: Iterable[Any]) -> list[Any]:
    """Items that occur more than once, in order of first repetition."""
    seen: set[Any] = set()
    dups: list[Any] = []
    for x in items:
        if x in seen and x not in dups:
            dups.append(x)
        seen.add(x)
    return dups


# ---------------------------------------------------------------------------------------------
# Writing Kafka's JSON
# ---------------------------------------------------------------------------------------------


def format_reassignment_json(
    assignment: Mapping[str, Mapping[int, Sequence[int]]], *, log_dirs: bool = True
) -> str:
    """Kafka's compact reassignment JSON, partitions sorted by (topic, partition).

    With log_dirs=True every entry carries "log_dirs":["any",...] as Kafka 3.9's --generate and rollback
    output do; with False it is the /admin/reassign_partitions trigger format (which must never hold log_dirs).
    """
    return '{"version":1,"partitions":[' + format_partition_entries(assignment, log_dirs=log_dirs) + "]}"


# Per-topic templates keyed by (log_dirs, replica count of partition 0, 1, ...): the entries of a topic
# whose partitions are 0..P-1, with "%s" for each partition's comma-joined replica ids and _TOPIC where
# the quoted name goes.
_TOPIC = "\x00"
_TEMPLATES: dict[tuple[bool, tuple[int, ...]], str] = {}  # also the %d templates of _regular_template


def _topic_template(log_dirs: bool, shape: tuple[int, ...]) -> str:
    t = _TEMPLATES.get((log_dirs, shape))
    if t is None:
        entries = []
        for p, n in enumerate(shape):
            e = f'{{"topic":{_TOPIC},"partition":{p},"replicas":[%s]'
            if log_dirs:
                e += ',"log_dirs":[' + ",".join(['"any"'] * n) + "]"
            entries.append(e + "}")
        t = ",".join(entries)
        if len(_TEMPLATES) >= 4096:
            _TEMPLATES.clear()
        _TEMPLATES[(log_dirs, shape)] = t
    return t


def _regular_template(log_dirs: bool, n: int, rf: int) -> str:
    """The entries of a topic of partitions 0..n-1 with rf replicas each, "%d" for each replica id."""
    key = (log_dirs, (-1, n, rf))  # not a tuple of replica counts: no clash with _topic_template's keys
    t = _TEMPLATES.get(key)
    if t is None:
        reps = ",".join(["%d"] * rf)
        dirs = ',"log_dirs":[' + ",".join(['"any"'] * rf) + "]" if log_dirs else ""
        t = ",".join(f'{{"topic":{_TOPIC},"partition":{p},"replicas":[{reps}]{dirs}}}' for p in range(n))
        if len(_TEMPLATES) >= 4096:
            _TEMPLATES.clear()
        _TEMPLATES[key] = t
    return t


def format_partition_entries(
    assignment: Mapping[str, Mapping[int, Sequence[int]]], *, log_dirs: bool = True
) -> str:
    """The entries of `format_reassignment_json` only, comma-joined, sorted by (topic, partition): the
    same bytes as inside the whole document. Slices formatted separately (e.g. on Spark executors) join as
    '{"version":1,"partitions":[' + ",".join(non-empty slices) + ']}' when the slices are in topic order."""
    out: list[str] = []
    topics = sorted(assignment)
    # JSON-quote names by hand when no name needs escaping (one check over all names, not one per name).
    joined = "".join(topics)
    plain = joined.isascii() and joined.isprintable() and '"' not in joined and "\\" not in joined
    percent = "%" in joined
    dumps = orjson.dumps
    # Regular TopicReplicas (a loaded snapshot): the ids of all of them as one list, from one numpy call.
    block = stack([assignment[t] for t in topics])
    ids: list[int] = [] if block is None else block.ravel().tolist()
    pos = 0
    r: list[int] = []  # 0..P-1 for the last P seen
    shape: tuple[int, ...] = ()
    template = ""  # the template of the last shape seen (consecutive topics mostly share it)
    for topic in topics:
        parts = assignment[topic]
        if not parts:
            continue
        tq = '"' + topic + '"' if plain else dumps(topic).decode()
        if percent:
            tq = tq.replace("%", "%%")
        if block is not None:
            n, rf = len(parts), block.shape[1]
            out.append(
                _regular_template(log_dirs, n, rf).replace(_TOPIC, tq) % tuple(ids[pos : pos + n * rf])
            )
            pos += n * rf
            continue
        keys = list(parts)
        if len(keys) != len(r):
            r = list(range(len(keys)))
        if keys == r:
            vals = list(parts.values())
        else:
            keys.sort()
            if keys != r:  # not exactly partitions 0..P-1
                out.append(_entries_slow(topic, parts, keys, log_dirs))
                continue
            vals = [parts[p] for p in r]
        # orjson writes all replica lists at C speed ('[[1,2],[3,4]]'); split into one "1,2" per partition.
        try:
            body = dumps(vals)
        except TypeError:  # e.g. numpy integers or arrays
            out.append(_entries_slow(topic, parts, keys, log_dirs))
            continue
        lens = tuple(map(len, vals))
        if lens != shape:
            shape, template = lens, _topic_template(log_dirs, lens)
        out.append(template.replace(_TOPIC, tq) % tuple(body[2:-2].decode().split("],[")))
    return ",".join(out)


def _entries_slow(topic: str, parts: Mapping[int, Sequence[int]], keys: list[int], log_dirs: bool) -> str:
    tq = orjson.dumps(topic).decode()
    entries: list[str] = []
    for p in keys:
        reps = parts[p]
        r = ",".join(str(int(b)) for b in reps)
        if log_dirs:
            dirs = ",".join(['"any"'] * len(reps))
            entries.append(f'{{"topic":{tq},"partition":{int(p)},"replicas":[{r}],"log_dirs":[{dirs}]}}')
        else:
            entries.append(f'{{"topic":{tq},"partition":{int(p)},"replicas":[{r}]}}')
    return ",".join(entries)


def format_plan_entries(entries: Iterable[PlanEntry], *, log_dirs: bool = False) -> str:
    """Entries (already ordered by the caller) in Kafka's v1 format; log_dirs only when asked and present."""
    parts: list[str] = []
    for e in entries:
        tq = orjson.dumps(e.topic).decode()
        r = ",".join(map(str, e.replicas))
        if log_dirs and e.log_dirs is not None:
            dirs = ",".join(orjson.dumps(d).decode() for d in e.log_dirs)
            parts.append(f'{{"topic":{tq},"partition":{e.partition},"replicas":[{r}],"log_dirs":[{dirs}]}}')
        else:
            parts.append(f'{{"topic":{tq},"partition":{e.partition},"replicas":[{r}]}}')
    return '{"version":1,"partitions":[' + ",".join(parts) + "]}"


def tp_str(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"
