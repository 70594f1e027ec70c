"""The snapshot file: a cluster's state as one JSON document, for planning offline. Pure: bytes in and out.

    {"version":1,
     "brokers":[{"id":1,"rack":"r1","disk_total_bytes":1000,"disk_usable_bytes":400,
                 "log_dirs":[{"path":"/d0","offline":false,"cordoned":null,"bytes":9,"future_bytes":0,
                              "total_bytes":1000,"usable_bytes":400}]},{"id":2}],
     "deleting":["old-topic"],
     "reassignment":[{"topic":"t","partition":0,"replicas":[2,3]}],
     "topics":[{"topic":"t","topic_id":"...","partitions":[
         {"partition":0,"replicas":[2,3,1],"isr":[1,2,3],"leader":1,
          "adding_replicas":[3],"removing_replicas":[1],"size":1048576,"dirs":[null,null,0]}]}]}

Required: "version" (1), "brokers" (each "id"; "rack" optional, null = none; "disk_total_bytes" and
"disk_usable_bytes" optional, together: the sums over the broker's live log dirs of their volume's total
and usable bytes, from DescribeLogDirs v4+, Kafka 3.3 and later; absent when unknown), "topics" (each "topic" and
"partitions", each "partition" and "replicas"). Optional: "deleting", "reassignment" (the content of
/admin/reassign_partitions; absent when that znode did not exist), "topic_id", and per partition "isr",
"leader", "adding_replicas", "removing_replicas", and "size" (the partition's size in bytes: its largest
replica's, as the brokers reported it to DescribeLogDirs when the snapshot was taken through the admin API;
absent when unknown). Written sorted (brokers by id, topics by name,
partitions by id), so a snapshot of an unchanged cluster is byte-identical.

Disks (issue 27; core/disks.py): a broker's optional "log_dirs", its log dirs in the order the partitions'
"dirs" index them (written sorted by path), each {"path", "offline", "cordoned" (null: unknown), "bytes",
"future_bytes", "total_bytes", "usable_bytes" (each absent when unknown), "error" (when offline)}; a
partition's optional "dirs" and "future_dirs": per replica, the index of the dir holding it (or its future
copy) in that broker's "log_dirs", or null. All optional and ignored by older readers: still version 1.

Loading is the hot path of `generate --snapshot` (1M-10M partitions): orjson parses the topics a chunk
at a time, every replica id goes into one numpy array (replicas.ReplicaStore) and each topic's
`replicas` is a read-only view of it (replicas.TopicReplicas), so no object per partition outlives its
chunk; the checks cost a few C-level passes per chunk.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from operator import is_not, itemgetter, methodcaller
from typing import Any, NoReturn, Protocol

import numpy as np
import orjson

from reassign_cli.core.model import NO_ENTRIES, Broker, Capacity, ClusterState, LogDir, Topic, TopicPartition
from reassign_cli.core.replicas import ReplicaStore, TopicReplicas, int_array
from reassign_cli.errors import InvalidInputError

VERSION = 1
_WHAT = "snapshot file"


def _err(msg: str) -> InvalidInputError:
    return InvalidInputError(f"{_WHAT}: {msg}")


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def to_document(state: ClusterState) -> dict[str, Any]:
    """The snapshot as plain JSON-able data (sorted)."""
    doc = header_document(state)
    doc["topics"] = [topic_document(state.topics[name]) for name in sorted(state.topics)]
    return doc


def header_document(state: ClusterState) -> dict[str, Any]:
    """Everything of the document but "topics": version, brokers, deleting, reassignment (if any)."""
    brokers = [_broker_document(b, state.capacities.get(b.id), state.disks.get(b.id)) for b in state.brokers]
    doc: dict[str, Any] = {"version": VERSION, "brokers": brokers, "deleting": sorted(state.deleting)}
    if state.reassignment is not None:
        doc["reassignment"] = [
            {"topic": t, "partition": p, "replicas": reps}
            for (t, p), reps in sorted(state.reassignment.items())
        ]
    return doc


def _broker_document(b: Broker, cap: Capacity | None, dirs: Sequence[LogDir] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": b.id, "rack": b.rack} if b.rack is not None else {"id": b.id}
    if cap is not None:
        doc["disk_total_bytes"], doc["disk_usable_bytes"] = cap.total, cap.usable
        if cap.shared is not None:
            doc["disk_shared_log_dirs"] = cap.shared
    if dirs is not None:
        doc["log_dirs"] = [_dir_document(d) for d in dirs]
    return doc


def _dir_document(d: LogDir) -> dict[str, Any]:
    doc: dict[str, Any] = {"path": d.path, "offline": d.offline, "cordoned": d.cordoned}
    for key, value in zip(_DIR_INTS, (d.held, d.future_held, d.total, d.usable), strict=True):
        if value is not None:
            doc[key] = value
    if d.error is not None:
        doc["error"] = d.error
    return doc


_DIR_INTS = ("bytes", "future_bytes", "total_bytes", "usable_bytes")


def topic_document(t: Topic) -> dict[str, Any]:
    """One entry of "topics": the topic, its id if known, its partitions sorted."""
    parts: list[dict[str, Any]] = []
    isr, leader, adding, removing, sizes = t.isr, t.leader, t.adding, t.removing, t.sizes
    dirs, future_dirs = t.dirs, t.future_dirs
    for p in sorted(t.replicas):
        entry: dict[str, Any] = {"partition": p, "replicas": t.replicas[p]}
        if p in isr:
            entry["isr"] = isr[p]
        if p in leader:
            entry["leader"] = leader[p]
        if adding.get(p):
            entry["adding_replicas"] = adding[p]
        if removing.get(p):
            entry["removing_replicas"] = removing[p]
        if p in sizes:
            entry["size"] = sizes[p]
        if p in dirs:
            entry["dirs"] = dirs[p]
        if p in future_dirs:
            entry["future_dirs"] = future_dirs[p]
        parts.append(entry)
    tdoc: dict[str, Any] = {"topic": t.name}
    if t.topic_id is not None:
        tdoc["topic_id"] = t.topic_id
    tdoc["partitions"] = parts
    return tdoc


def dumps(state: ClusterState) -> bytes:
    """The snapshot file's bytes: compact JSON and a trailing newline."""
    return orjson.dumps(to_document(state)) + b"\n"


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def loads(
    data: bytes | str | Buffer,
    *,
    partition_state: bool = True,
    release: Callable[[], None] | None = None,
    replica_dirs: bool | None = None,
) -> ClusterState:
    """Parse and check a snapshot file. Problems: InvalidInputError (exit 3) naming the first bad item.

    partition_state=False skips "isr" and "leader" (planning does not need them; it saves a third of the
    load time at 1M partitions). "adding_replicas"/"removing_replicas" are always read. `replica_dirs`:
    read the partitions' "dirs"/"future_dirs" (which log dir holds each replica) [default: with
    partition_state]; the brokers' "log_dirs" are always read.

    `data` may also be a read-only memory map of the file (anything with find, len and byte slices);
    then `release()` is called whenever the bytes read so far are no longer needed, so that the caller
    can drop the mapped pages (a 10M-partition file is 750 MB: it need not add to the peak memory).

    Each topic's `replicas` is a replicas.TopicReplicas (read-only); its `adding`, `removing`, `isr` and
    `leader` are its own dicts when it has entries, else the shared read-only model.NO_ENTRIES.

    Many short-lived containers are built here: the CLI entry point (cli.run) tunes the cyclic garbage
    collector for that; a library must not change it for the whole process.
    """
    raw = data.encode() if isinstance(data, str) else data
    # Per-partition optional fields cost a pass over every partition: skip it when no partition can
    # have them (the key never occurs in the bytes), or when the caller does not want isr/leader.
    reassigning = raw.find(b'"adding_replicas"') >= 0 or raw.find(b'"removing_replicas"') >= 0
    sized = raw.find(SIZE_KEY) >= 0
    located = (partition_state if replica_dirs is None else replica_dirs) and has_dirs(raw)
    state = _loads_chunked(raw, partition_state, reassigning, release or _nothing, sizes=sized, dirs=located)
    if state is None:
        whole = raw if isinstance(raw, bytes) else raw[0 : len(raw)]
        state = _loads_whole(whole, partition_state, reassigning, sizes=sized, dirs=located)
    return state


SIZE_KEY = b'"size"'  # where it never occurs in the bytes, no partition has a size: no pass to read them
DIRS_KEYS = (b'"dirs"', b'"future_dirs"')  # likewise for the replicas' log dirs


def has_dirs(raw: Buffer) -> bool:
    """Whether any partition may say which log dir holds its replicas (the keys occur in the bytes)."""
    return any(raw.find(k) >= 0 for k in DIRS_KEYS)


def _header(doc: Any) -> tuple[list[Broker], frozenset[str], dict[TopicPartition, list[int]] | None]:
    if not isinstance(doc, dict):
        raise _err("expected a JSON object")
    version = doc.get("version")
    if version != VERSION or isinstance(version, bool):
        raise _err(f"unsupported version {version!r} (expected {VERSION})")
    for key in ("brokers", "topics"):
        if not isinstance(doc.get(key), list):
            raise _err(f'"{key}" must be a list')
    brokers = _brokers(doc["brokers"])
    deleting = doc.get("deleting", [])
    if not isinstance(deleting, list) or not all(isinstance(t, str) for t in deleting):
        raise _err('"deleting" must be a list of topic names')
    reassignment = _reassignment(doc["reassignment"]) if doc.get("reassignment") is not None else None
    return brokers, frozenset(deleting), reassignment


def _loads_whole(
    raw_bytes: bytes, partition_state: bool, reassigning: bool, *, sizes: bool = False, dirs: bool = False
) -> ClusterState:
    """One parse of the whole document; precise errors."""
    try:
        doc = orjson.loads(raw_bytes)
    except orjson.JSONDecodeError as e:
        raise _err(f"not valid JSON: {e}") from None
    brokers, deleting, reassignment = _header(doc)
    disks = log_dirs(doc["brokers"])
    builder = _TopicsBuilder(partition_state, reassigning, sizes, dir_counts(disks) if dirs else None)
    try:
        builder.add(doc["topics"])
    except _SHAPE_ERRORS:
        _explain_topics(doc["topics"])  # raises with a precise message
    topics = builder.finish()
    return ClusterState(
        brokers=brokers,
        topics=topics,
        deleting=deleting,
        reassignment=reassignment,
        capacities=capacities(doc["brokers"]),
        disks=disks,
    )


# What a malformed topic or partition object raises in _TopicsBuilder.add.
_SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, OverflowError)


_TOPICS_KEY = b'"topics":['
_TOPIC_SEP = b'},{"topic":'
# Measured at 1M partitions (77 MB file, memory-mapped, 2-core box), load alone: 16 KiB chunks 0.95 s CPU /
# 132 MiB peak RSS, 64 KiB 0.93 s / 133 MiB, 1 MiB 1.05 s / 147 MiB, 4 MiB 1.44 s / 190 MiB. Small chunks
# keep the parsed objects in cache between orjson building them and us consuming and freeing them.
CHUNK_BYTES = 64 << 10
RELEASE_BYTES = 64 << 20  # how often a mapped file's pages read so far are handed back (see loads)


class Buffer(Protocol):
    """What the chunked parser needs of the file's bytes: bytes, or a read-only mmap."""

    def find(self, sub: bytes, start: int = ..., end: int = ..., /) -> int: ...

    def __len__(self) -> int: ...

    def __getitem__(self, index: slice, /) -> bytes: ...


def _nothing() -> None:
    pass


def _loads_chunked(
    raw_bytes: Buffer,
    partition_state: bool,
    reassigning: bool,
    release: Callable[[], None] = _nothing,
    *,
    sizes: bool = False,
    dirs: bool = False,
) -> ClusterState | None:
    """The fast path for documents shaped like ours ("topics" last, each topic object starting with
    "topic"): parse the topics array CHUNK_BYTES at a time, so the parsed partition objects of only one
    chunk exist at once (at 1M partitions: a third of the peak memory and two thirds of the CPU of one
    whole parse).
    Returns None whenever the shape is not as expected or anything is wrong, and the caller then parses
    the whole document (which also produces the precise error messages)."""
    start = raw_bytes.find(_TOPICS_KEY)
    end = len(raw_bytes)
    while end and raw_bytes[end - 1 : end] in (b" ", b"\t", b"\r", b"\n"):
        end -= 1
    if start < 0 or raw_bytes.find(_TOPICS_KEY, start + 1) >= 0 or raw_bytes[end - 2 : end] != b"]}":
        return None
    body_start, body_end = start + len(_TOPICS_KEY), end - 2
    try:
        head = orjson.loads(raw_bytes[:body_start] + b"]}")
        if not isinstance(head, dict) or head.get("topics") != []:
            return None
        brokers, deleting, reassignment = _header(head)
        caps = capacities(head["brokers"])
        disks = log_dirs(head["brokers"])
        builder = _TopicsBuilder(partition_state, reassigning, sizes, dir_counts(disks) if dirs else None)
        pos = released = body_start
        release()  # the scans above touched every byte
        while pos < body_end:
            cut = raw_bytes.find(_TOPIC_SEP, min(pos + CHUNK_BYTES, body_end), body_end)
            stop = body_end if cut < 0 else cut + 1  # the chunk keeps the closing brace
            chunk = orjson.loads(b"".join((b"[", raw_bytes[pos:stop], b"]")))
            builder.add(chunk)  # checked chunk by chunk, while the new objects are still in cache
            del chunk
            pos = stop + 1  # skip the comma
            if pos - released >= RELEASE_BYTES:
                release()
                released = pos
        topics = builder.finish()
    except (orjson.JSONDecodeError, InvalidInputError, *_SHAPE_ERRORS):
        return None
    return ClusterState(
        brokers=brokers,
        topics=topics,
        deleting=deleting,
        reassignment=reassignment,
        capacities=caps,
        disks=disks,
    )


def _is_int(v: object) -> bool:
    return type(v) is int


def _brokers(raw: list[Any]) -> list[Broker]:
    out: list[Broker] = []
    for i, b in enumerate(raw):
        if not isinstance(b, dict) or not _is_int(b.get("id")):
            raise _err(f'brokers[{i}] needs an integer "id"')
        rack = b.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise _err(f'broker {b["id"]}: "rack" must be a string or null')
        out.append(Broker(b["id"], rack))
    out.sort(key=lambda b: b.id)
    ids = [b.id for b in out]
    if len(set(ids)) != len(ids):
        dup = next(x for x, y in itertools.pairwise(ids) if x == y)
        raise _err(f"broker {dup} is listed twice")
    return out


_DISK_KEYS = ("disk_total_bytes", "disk_usable_bytes")


def capacities(raw: list[Any]) -> dict[int, Capacity]:
    """The brokers' capacities from the (already checked) "brokers" list: both keys or neither, each a
    non-negative integer, usable at most total; and how the log dirs were counted
    ("disk_shared_log_dirs", absent in snapshots taken before the choice existed: None)."""
    out: dict[int, Capacity] = {}
    for b in raw:
        values = [b.get(k) for k in _DISK_KEYS]
        if values == [None, None]:
            continue
        total, usable = values
        if not (_is_int(total) and _is_int(usable) and 0 <= usable <= total):
            raise _err(
                f'broker {b["id"]}: "disk_total_bytes" and "disk_usable_bytes" go together, as integers '
                "with 0 <= usable <= total"
            )
        shared = b.get("disk_shared_log_dirs")
        if shared is not None and not isinstance(shared, bool):
            raise _err(f'broker {b["id"]}: "disk_shared_log_dirs" must be true or false')
        out[b["id"]] = Capacity(total, usable, shared)
    return out


def log_dirs(raw: list[Any]) -> dict[int, tuple[LogDir, ...]]:
    """The brokers' log dirs from the (already checked) "brokers" list, in the file's order (the
    partitions' "dirs" index it): each a "path" (unique within the broker), "offline" (false if absent),
    "cordoned" (true, false, or null: unknown), the non-negative integers "bytes", "future_bytes",
    "total_bytes", "usable_bytes" where known, and "error" (a string) when offline. Brokers without the key
    (snapshots taken before it existed, or brokers that did not answer) are absent."""
    out: dict[int, tuple[LogDir, ...]] = {}
    for b in raw:
        dirs = b.get("log_dirs")
        if dirs is None:
            continue
        if type(dirs) is not list:
            raise _err(f'broker {b["id"]}: "log_dirs" must be a list')
        parsed = tuple(_log_dir(b["id"], i, d) for i, d in enumerate(dirs))
        if len({d.path for d in parsed}) != len(parsed):
            raise _err(f'broker {b["id"]}: a log dir is listed twice in "log_dirs"')
        out[b["id"]] = parsed
    return out


def _log_dir(broker: int, i: int, d: Any) -> LogDir:
    where = f"broker {broker}: log_dirs[{i}]"
    if type(d) is not dict or type(d.get("path")) is not str or not d["path"]:
        raise _err(f'{where} needs a "path"')
    offline, cordoned, error = d.get("offline", False), d.get("cordoned"), d.get("error")
    if type(offline) is not bool or (cordoned is not None and type(cordoned) is not bool):
        raise _err(f'{where}: "offline" must be true or false, "cordoned" true, false or null')
    if error is not None and type(error) is not str:
        raise _err(f'{where}: "error" must be a string')
    ints = [d.get(k) for k in _DIR_INTS]
    if not all(v is None or (_is_int(v) and v >= 0) for v in ints):
        raise _err(f"{where}: {', '.join(_DIR_INTS)} must be non-negative integers (bytes)")
    held, future_held, total, usable = ints
    return LogDir(d["path"], offline, error, held, future_held, total, usable, cordoned)


def dir_counts(disks: Mapping[int, Sequence[LogDir]]) -> dict[int, int]:
    """How many log dirs each broker has in the snapshot: what a replica's dir index must stay below."""
    return {b: len(dirs) for b, dirs in disks.items()}


def _reassignment(raw: Any) -> dict[TopicPartition, list[int]]:
    if not isinstance(raw, list):
        raise _err('"reassignment" must be a list')
    out: dict[TopicPartition, list[int]] = {}
    for i, e in enumerate(raw):
        if (
            not isinstance(e, dict)
            or not isinstance(e.get("topic"), str)
            or not _is_int(e.get("partition"))
            or not _int_list(e.get("replicas"))
        ):
            raise _err(f'reassignment[{i}] needs "topic", "partition" and "replicas"')
        out[(e["topic"], e["partition"])] = e["replicas"]
    return out


def _int_list(v: Any) -> bool:
    return type(v) is list and all(type(b) is int for b in v)


_STR, _INT, _LIST = frozenset({str}), frozenset({int}), frozenset({list})
_TOPIC_ID_TYPES = frozenset({str, type(None)})
_NAME, _PARTS = itemgetter("topic"), itemgetter("partitions")
_PID, _REPLICAS = itemgetter("partition"), itemgetter("replicas")
_TOPIC_ID = methodcaller("get", "topic_id")
_SIZE = methodcaller("get", "size")
_SIZE_TYPES = frozenset({int, type(None)})


def _add_sizes(topics: list[Topic], counts: list[int], pids: list[int], sizes: list[Any]) -> None:
    """Each topic's known sizes (a dict of its own; none known: the shared empty one). `sizes` holds
    every partition's "size" (None when absent), in the order of `pids`."""
    known = [s for s in sizes if s is not None]
    if not set(map(type, known)) <= _INT or (known and min(known) < 0):
        first = 0
        for t, count in zip(topics, counts, strict=True):
            for p, s in zip(pids[first : first + count], sizes[first : first + count], strict=True):
                if s is not None and (type(s) is not int or s < 0):
                    raise _err(f'partition {t.name}-{p}: "size" must be a non-negative integer (bytes)')
            first += count
    if not known:
        return
    first = 0
    for t, count in zip(topics, counts, strict=True):
        part = sizes[first : first + count]
        if part.count(None) != count:
            t.sizes = {p: s for p, s in zip(pids[first : first + count], part, strict=True) if s is not None}
        first += count


class _TopicsBuilder:
    """Topic objects from parsed topic objects, one chunk at a time, with every replica id in one
    ReplicaStore: no list or int object per partition outlives its chunk. Shapes and types are checked a
    chunk at a time with flat passes that run in C (the set of types seen; `type(x) is int` rejects
    bools); a bad one raises KeyError/TypeError/ValueError/AttributeError/OverflowError, and the caller
    explains it (_explain_topics). Optional per-partition fields become per-topic dicts only where present.
    """

    def __init__(
        self,
        partition_state: bool,
        reassigning: bool,
        sizes: bool = False,
        dirs: Mapping[int, int] | None = None,
    ) -> None:
        self.topics: dict[str, Topic] = {}
        self.store = ReplicaStore()
        self.dir_store = ReplicaStore()  # the replicas' dir indexes, where _dir_views keeps them
        self.partition_state = partition_state
        # Read the partitions' "dirs"/"future_dirs" (with the optional fields' pass), each index checked
        # against its broker's number of log dirs (dir_counts); None: not read.
        self.dirs = dirs
        self.table = None if dirs is None else _dir_table(dirs)
        self.optional = partition_state or reassigning or dirs is not None
        self.sizes = sizes  # read the partitions' "size" (one C-level pass over the chunk's partitions)

    def add(self, raw: list[Any]) -> None:
        if type(raw) is not list:
            raise TypeError
        names, plists = list(map(_NAME, raw)), list(map(_PARTS, raw))
        parts = list(itertools.chain.from_iterable(plists))
        pids, reps = list(map(_PID, parts)), list(map(_REPLICAS, parts))
        flat = list(itertools.chain.from_iterable(reps))
        if not (
            set(map(type, names)) <= _STR
            and set(map(type, plists)) <= _LIST
            and set(map(type, pids)) <= _INT
            and set(map(type, reps)) <= _LIST
            and set(map(type, flat)) <= _INT
        ):
            raise TypeError
        block = int_array(flat)
        start = self.store.append(block)
        views = self._views(start, list(map(len, plists)), pids, lens := list(map(len, reps)))
        ids = list(map(_TOPIC_ID, raw))
        none = itertools.repeat(NO_ENTRIES)
        new = list(map(Topic, names, views, none, none, none, none, ids, none, none, none))
        if not set(map(type, ids)) <= _TOPIC_ID_TYPES:
            _check_optional(new)  # raises with the topic's name
        if self.optional:
            bulk = self.dirs is not None and _bulk_dirs(
                new,
                list(map(len, plists)),
                pids,
                parts,
                (reps, lens, block),
                self.dirs,
                self.table,
                self.dir_store,
            )
            plain = _PLAIN_KEYS if self.partition_state else _PLAIN_KEYS_NO_STATE
            if not (bulk and all(map(plain.issuperset, parts))):  # else no partition has more to read
                _check_optional(
                    [t for t, ps in zip(new, plists, strict=True) if self._add_optional(t, ps, bulk)]
                )
        if self.sizes:
            _add_sizes(new, list(map(len, plists)), pids, list(map(_SIZE, parts)))
        before = len(self.topics)
        self.topics.update(zip(names, new, strict=True))
        if len(self.topics) != before + len(new):
            raise ValueError("a topic is listed twice")

    def _views(self, start: int, counts: list[int], pids: list[int], lens: list[int]) -> list[TopicReplicas]:
        store, k = self.store, len(counts)
        n = counts[0] if counts else 0
        rf = lens[0] if lens else 0
        # The usual chunk: every topic with partitions 0..n-1 of rf replicas each, checked in three C passes.
        if counts.count(n) == k and lens.count(rf) == len(lens) and pids == list(range(n)) * k:
            step = n * rf
            return [TopicReplicas(store, start + i * step, n, rf) for i in range(k)]
        views: list[TopicReplicas] = []
        first = 0
        for count in counts:
            ls = lens[first : first + count]
            views.append(TopicReplicas.from_rows(store, start, pids[first : first + count], ls))
            start += sum(ls)
            first += count
        return views

    def _add_optional(self, topic: Topic, parts: list[dict[str, Any]], bulk: bool = False) -> bool:
        """isr/leader (with partition_state) and AR/RR into the topic; whether it has any. `bulk`: the
        "dirs" are read already (_bulk_dirs): a partition with no other optional key is skipped."""
        found = False
        plain = _PLAIN_KEYS if self.partition_state else _PLAIN_KEYS_NO_STATE
        for e in parts:
            if len(e) > 2 and not (bulk and e.keys() <= plain):
                found = _optional(topic, e, self.partition_state, self.dirs, bulk) or found
        return found

    def finish(self) -> dict[str, Topic]:
        self.store.finish()
        self.dir_store.finish()
        return self.topics


def _own(topic: Topic, field: str) -> dict[Any, Any]:
    """The topic's own dict for `field`, replacing the shared empty one on first use."""
    m: dict[Any, Any] = getattr(topic, field)
    if m is NO_ENTRIES:
        m = {}
        setattr(topic, field, m)
    return m


def _optional(
    topic: Topic,
    e: dict[str, Any],
    partition_state: bool,
    dirs: Mapping[int, int] | None = None,
    bulk: bool = False,
) -> bool:
    p = e["partition"]
    values = [("adding", e.get("adding_replicas") or None), ("removing", e.get("removing_replicas") or None)]
    if partition_state:
        values += [("isr", e.get("isr")), ("leader", e.get("leader"))]
    if dirs is not None:
        for field in ("future_dirs",) if bulk else ("dirs", "future_dirs"):
            v = e.get(field)
            if v is not None:
                _check_indexes(topic.name, p, field, v, e["replicas"], dirs)
                values.append((field, v))
    found = False
    for field, v in values:
        if v is not None:
            _own(topic, field)[p] = v
            found = True
    return found


def _check_optional(topics: list[Topic]) -> None:
    for t in topics:
        if t.topic_id is not None and type(t.topic_id) is not str:
            raise _err(f'topic {t.name}: "topic_id" must be a string')
        for field, m in (("isr", t.isr), ("adding_replicas", t.adding), ("removing_replicas", t.removing)):
            for p, v in m.items():
                if not _int_list(v):
                    raise _err(f'partition {t.name}-{p}: "{field}" must be a list of integers')
        for p, lv in t.leader.items():
            if not _is_int(lv):
                raise _err(f'partition {t.name}-{p}: "leader" must be an integer')


_PLAIN_KEYS = frozenset({"partition", "replicas", "size", "dirs"})  # no optional field but "dirs"
_PLAIN_KEYS_NO_STATE = _PLAIN_KEYS | {"isr", "leader"}  # isr/leader not read (partition_state=False)
_DIRS = methodcaller("get", "dirs")
_NONE = type(None)
_DIR_TYPES = frozenset({int, _NONE})


def _bulk_dirs(
    topics: list[Topic],
    counts: list[int],
    pids: list[int],
    parts: list[Any],
    replicas: tuple[list[Any], list[int], np.ndarray],
    dirs: Mapping[int, int],
    table: _DirTable | None = None,
    store: ReplicaStore | None = None,
) -> bool:
    """The partitions' "dirs" of one chunk into their topics, checked in flat passes (numpy for the
    indexes); False (nothing stored) when one is wrong: the per-partition pass then names it.
    `replicas`: the chunk's replica lists, their lengths and every replica id in one array (as the
    store holds them); `table`: _dir_table(dirs), when the caller has it; `store`: where _dir_views may
    keep them."""
    reps, lens, block = replicas
    dl = list(map(_DIRS, parts))
    if None in dl:
        idx = list(itertools.compress(range(len(dl)), map(is_not, dl, itertools.repeat(None))))
        vs, rs = list(map(dl.__getitem__, idx)), list(map(reps.__getitem__, idx))
        rlens = list(map(len, rs))
    else:  # every partition has "dirs" (as a snapshot from the brokers writes)
        idx, vs, rs, rlens = dl, dl, reps, lens
    if not set(map(type, vs)) <= _LIST or list(map(len, vs)) != rlens:
        return False
    flat = list(itertools.chain.from_iterable(vs))
    kinds = set(map(type, flat))
    if not kinds <= _DIR_TYPES:
        return False
    try:
        held = np.array(
            flat if _NONE not in kinds else [-1 if x is None else x for x in flat], dtype=np.int64
        )
        brokers = block if rs is reps else np.array(list(itertools.chain.from_iterable(rs)), dtype=np.int64)
    except OverflowError:
        return False
    if not _dirs_ok(held, brokers, table if table is not None else _dir_table(dirs)):
        return False
    if len(idx) == len(dl):  # every partition has "dirs" (as a snapshot from the brokers writes)
        if store is not None and _NONE not in kinds and _dir_views(topics, counts, held, store):
            return True
        first = 0
        for t, count in zip(topics, counts, strict=True):
            if count:
                t.dirs = dict(zip(pids[first : first + count], dl[first : first + count], strict=True))
            first += count
        return True
    first = 0
    for t, count in zip(topics, counts, strict=True):
        got = {
            p: v
            for p, v in zip(pids[first : first + count], dl[first : first + count], strict=True)
            if v is not None
        }
        if got:
            t.dirs = got
        first += count
    return True


def _dir_views(topics: list[Topic], counts: list[int], held: np.ndarray, store: ReplicaStore) -> bool:
    """A chunk of regular topics (TopicReplicas) whose every replica's dir is known: each topic's `dirs` a
    read-only view over `store` (the chunk's dir indexes `held`, in replica order, as one array; a
    TopicReplicas too), not a dict of lists: no Python object per partition outlives the chunk, and
    planning/balanced/disks.py reads them with one numpy slice. False (nothing stored) when a topic of
    the chunk is not regular."""
    rfs = [t.replicas.rf if isinstance(t.replicas, TopicReplicas) else -1 for t in topics]
    if min(rfs, default=0) < 0:
        return False
    pos = store.append(held.astype(np.int32))
    for t, count, rf in zip(topics, counts, rfs, strict=True):
        if count:
            t.dirs = TopicReplicas(store, pos, count, rf)  # type: ignore[assignment]  # a Mapping, no None
        pos += count * rf
    return True


# (the broker ids, sorted; each one's number of log dirs; that number by broker id, 0 for no broker, one
# past the largest id too, when the ids are small and not negative, else None)
_DirTable = tuple[np.ndarray, np.ndarray, np.ndarray | None]


def _dir_table(dirs: Mapping[int, int]) -> _DirTable:
    """`dirs` (broker -> its number of log dirs) as arrays, for _bulk_dirs: built once a snapshot
    (_TopicsBuilder), not once a chunk."""
    known = sorted(dirs)
    keys, limit = np.array(known, dtype=np.int64), np.array([dirs[b] for b in known], dtype=np.int64)
    dense = None
    if known and known[0] >= 0 and known[-1] < 1 << 22:  # usual broker ids: a lookup beats a bisection
        dense = np.zeros(known[-1] + 2, dtype=np.int64)
        dense[keys] = limit
    return keys, limit, dense


def _dirs_ok(held: np.ndarray, brokers: np.ndarray, table: _DirTable) -> bool:
    """Whether each replica's dir index `held` is -1 (null) or one of its broker's log dirs."""
    keys, limit, dense = table
    if not len(keys):
        return False
    if dense is not None:
        top = len(dense) - 2
        most = dense[np.where((brokers >= 0) & (brokers <= top), brokers, top + 1)]
        return bool(((held == -1) | ((held >= 0) & (held < most))).all())
    at = np.minimum(np.searchsorted(keys, brokers), len(keys) - 1)
    return bool(((held == -1) | ((keys[at] == brokers) & (held >= 0) & (held < limit[at]))).all())


def _check_indexes(topic: str, p: int, field: str, v: Any, replicas: Any, counts: Mapping[int, int]) -> None:
    """A partition's "dirs"/"future_dirs": for each replica, null or the index of one of its broker's log
    dirs."""
    if type(v) is not list or type(replicas) is not list or len(v) != len(replicas):
        raise _err(f'partition {topic}-{p}: "{field}" must list a log dir index or null for each replica')
    for b, i in zip(replicas, v, strict=True):
        if i is not None and (type(i) is not int or not 0 <= i < counts.get(b, 0)):
            raise _err(
                f'partition {topic}-{p}: "{field}": {i!r} is not the index of one of broker {b}\'s '
                f"{counts.get(b, 0)} log dirs in the snapshot"
            )


def _explain_topics(raw: list[Any]) -> NoReturn:
    """Slow, precise pass: raise on the first malformed topic or partition."""
    seen: set[str] = set()
    for i, t in enumerate(raw):
        if not isinstance(t, dict) or not isinstance(t.get("topic"), str) or not t["topic"]:
            raise _err(f'topics[{i}] needs a "topic" name')
        name = t["topic"]
        if name in seen:
            raise _err(f"topic {name} is listed twice")
        seen.add(name)
        parts = t.get("partitions")
        if not isinstance(parts, list):
            raise _err(f'topic {name}: "partitions" must be a list')
        ids: set[int] = set()
        for j, e in enumerate(parts):
            if not isinstance(e, dict) or not _is_int(e.get("partition")):
                raise _err(f'topic {name}: partitions[{j}] needs an integer "partition"')
            p = e["partition"]
            if p in ids:
                raise _err(f"partition {name}-{p} is listed twice")
            ids.add(p)
            if not _int_list(e.get("replicas")):
                raise _err(f'partition {name}-{p}: "replicas" must be a list of integers')
    raise _err('malformed "topics"')
