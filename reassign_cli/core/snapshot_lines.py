"""The JSON-lines snapshot: the snapshot document cut into lines, so that it can be read in pieces (Spark
executors, each from its own byte range) and chunk by chunk. Pure: bytes in and out.

    {"format":"jsonl","version":1,"brokers":[{"id":1,"rack":"r1"}],"deleting":[],"reassignment":[...]}
    {"topic":"a","partitions":[{"partition":0,"replicas":[1,2],"isr":[1,2],"leader":1}]}
    {"topic":"b","topic_id":"...","partitions":[...]}

Line 1, the header: "format":"jsonl" first, then the document's fields other than "topics", with the same
rules (snapshot.py). Every other line is one entry of the document's "topics", byte for byte as
snapshot.dumps writes it, with the same rules. The topic lines are strictly sorted by name (Python's str
order, i.e. by code point; for Kafka's legal names, [a-zA-Z0-9._-], that is what `LC_ALL=C sort` gives), so
no topic is listed twice, and a reader that got the file in byte ranges knows that its pieces' results,
concatenated in range order, are in name order: the order is checked within each piece and where two
pieces meet, and no shuffle is needed.

Lines end with \\n, \\r\\n or \\r (the line ends of Hadoop's line reader, behind Spark's textFile, and of
bytes.splitlines). Blank lines are ignored but counted: errors name the line, 1-based, the header being
line 1, and every reader (whole file, chunk by chunk, or in byte ranges) names the same line.

Readers tell the two formats apart by the first bytes (`is_lines`): a snapshot document starts with
{"version":..., a JSON-lines snapshot with {"format":"jsonl".
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import orjson

from reassign_cli.core import snapshot
from reassign_cli.core.model import Broker, Capacity, ClusterState, LogDir, Topic, TopicPartition
from reassign_cli.errors import InvalidInputError

FORMAT = "jsonl"
SNIFF_BYTES = 64  # is_lines needs at most this many bytes of the file's start
_MAGIC = re.compile(rb'\A[ \t]*\{[ \t]*"format"[ \t]*:[ \t]*"jsonl"')
# Lines parsed at once by loads (one orjson call per chunk); see snapshot.CHUNK_BYTES for the measurement.
CHUNK_BYTES = 64 << 10
_OPTIONAL_KEYS = (b'"adding_replicas"', b'"removing_replicas"', b"\\u")


def is_lines(head: bytes) -> bool:
    """Whether a file starting with `head` is a JSON-lines snapshot (else: the snapshot document)."""
    return _MAGIC.match(head) is not None


def line_error(line_no: int, detail: str) -> InvalidInputError:
    return InvalidInputError(f"snapshot file: line {line_no}: {detail}")


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def header_line(state: ClusterState) -> bytes:
    return orjson.dumps({"format": FORMAT, **snapshot.header_document(state)}) + b"\n"


def dump_lines(state: ClusterState, block_bytes: int = 1 << 20) -> Iterator[bytes]:
    """The file's bytes in blocks of about block_bytes: the header line, then one line per topic, sorted."""
    yield header_line(state)
    block: list[bytes] = []
    size = 0
    dumps, topics = orjson.dumps, state.topics
    for name in sorted(topics):
        line = dumps(snapshot.topic_document(topics[name])) + b"\n"
        block.append(line)
        size += len(line)
        if size >= block_bytes:
            yield b"".join(block)
            block, size = [], 0
    if block:
        yield b"".join(block)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Header:
    brokers: list[Broker]
    deleting: frozenset[str]
    reassignment: dict[TopicPartition, list[int]] | None
    capacities: dict[int, Capacity] = field(default_factory=dict)
    disks: dict[int, tuple[LogDir, ...]] = field(default_factory=dict)


def header_span(data: snapshot.Buffer) -> tuple[int, int]:
    """(end of the header line, start of line 2) in the file's bytes."""
    n = len(data)
    ends = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
    end = min(ends) if ends else n
    start = end + 2 if data[end : end + 2] == b"\r\n" else min(end + 1, n)
    return end, start


def parse_header(line: bytes) -> Header:
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise line_error(1, f"not valid JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise line_error(1, 'expected the header {"format":"jsonl","version":1,"brokers":[...],...}')
    if "topics" in doc:
        raise line_error(1, '"topics" has no place in the header: one topic per line follows it')
    try:
        brokers, deleting, reassignment = snapshot._header({**doc, "topics": []})
        caps = snapshot.capacities(doc["brokers"])
        disks = snapshot.log_dirs(doc["brokers"])
    except InvalidInputError as e:
        raise line_error(1, _detail(e)) from None
    return Header(brokers, deleting, reassignment, caps, disks)


class LineError(Exception):
    """A bad line: its index in the lines given to parse_lines, and what is wrong (without the line number)."""

    def __init__(self, index: int, detail: str) -> None:
        super().__init__(index, detail)
        self.index = index
        self.detail = detail


def order_problem(name: str, prev: str | None) -> str | None:
    """What is wrong with topic `name` on the line after topic `prev`'s, or None."""
    if prev is None or prev < name:
        return None
    if prev == name:
        return f"topic {name} is listed twice"
    return f"topic {name} comes after {prev}: the topic lines must be sorted by name"


def parse_lines(
    lines: Sequence[bytes],
    prev: str | None,
    partition_state: bool,
    builder: snapshot._TopicsBuilder | None = None,
    dirs: Mapping[int, int] | None = None,
) -> list[Topic]:
    """The topics of consecutive topic lines (blank lines allowed), in order, checked like the document's
    topics plus the order (`prev`: the topic on the line before these, if any). Raises LineError for the
    first bad line. One orjson parse for all the lines; only when anything is wrong, line by line.

    The topics' replica ids go into `builder`'s store (a caller reading a whole file passes one builder
    for all its chunks and finishes it at the end); without one, into a store of their own, finished
    here, so that the topics can be read at once.

    `dirs` (each broker's number of log dirs in the header: snapshot.dir_counts): read each partition's
    "dirs"/"future_dirs", checked against them; None: not read."""
    body = [ln for ln in lines if ln and not ln.isspace()]
    if not body:
        return []
    joined = b",".join(body)
    own = builder is None
    b = builder if builder is not None else snapshot._TopicsBuilder(partition_state, False)
    # Per chunk, so that every chunking reads the same: where neither key can occur, reading is a no-op.
    b.optional = partition_state or _has_optional(joined)
    b.sizes = _has_sizes(joined)
    b.dirs = dirs if _has_dirs(joined) else None
    b.optional = b.optional or b.dirs is not None
    try:
        raw = orjson.loads(b"[" + joined + b"]")
        names = list(map(_NAME, raw))
        if len(raw) == len(body) and set(map(type, names)) <= _STR and all(names) and _ordered(names, prev):
            b.add(raw)
            if own:
                b.finish()
            return [b.topics[n] for n in names]
    except (orjson.JSONDecodeError, InvalidInputError, *snapshot._SHAPE_ERRORS):
        pass
    valid = _parse_one_by_one(lines, prev, partition_state, dirs)  # LineError for the first bad line
    b.optional = b.sizes = True
    b.dirs = dirs
    b.add(valid)  # only if the fast path refused good lines: a bug, but the lines are good
    if own:
        b.finish()
    return [b.topics[t["topic"]] for t in valid]


_NAME = itemgetter("topic")
_STR = frozenset({str})


def _has_optional(data: bytes) -> bool:
    """Whether any partition may carry adding/removing replicas: their keys occur literally, or escapes
    do (a key could be spelt with \\u escapes). Without them, a pass over every partition is saved."""
    return any(data.find(k) >= 0 for k in _OPTIONAL_KEYS)


def _has_dirs(data: bytes) -> bool:
    """Whether any partition may say which log dir holds its replicas (the keys, or escapes)."""
    return snapshot.has_dirs(data) or data.find(b"\\u") >= 0


def _has_sizes(data: bytes) -> bool:
    """Whether any partition may carry a "size" (the key, or escapes that could spell it)."""
    return data.find(snapshot.SIZE_KEY) >= 0 or data.find(b"\\u") >= 0


def _ordered(names: list[str], prev: str | None) -> bool:
    return (prev is None or prev < names[0]) and all(map(operator.lt, names, names[1:]))


def _parse_one_by_one(
    lines: Sequence[bytes],
    prev: str | None,
    partition_state: bool,
    dirs: Mapping[int, int] | None = None,
) -> list[Any]:
    """The slow, precise path: each line parsed and checked alone, in order; LineError on the first bad
    one. Returns the parsed topic objects (all good)."""
    valid: list[Any] = []
    for i, line in enumerate(lines):
        if not line or line.isspace():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise LineError(i, f"not valid JSON: {e}") from None
        problem = _shape_problem(obj)
        if problem is None:
            try:  # builds the topic alone: the checks of the fast path, for this line only
                snapshot._TopicsBuilder(partition_state, True, True, dirs).add([obj])
            except InvalidInputError as e:
                problem = _detail(e)
            problem = problem or order_problem(obj["topic"], prev)
        if problem is not None:
            raise LineError(i, problem)
        valid.append(obj)
        prev = obj["topic"]
    return valid


def _shape_problem(obj: object) -> str | None:
    """What a topic line lacks (the checks of snapshot._explain_topics, for one topic), or None."""
    if not isinstance(obj, dict):
        return 'expected a JSON object with "topic" and "partitions"'
    name = obj.get("topic")
    if not isinstance(name, str) or not name:
        return 'needs a "topic" name'
    parts = obj.get("partitions")
    if not isinstance(parts, list):
        return f'topic {name}: "partitions" must be a list'
    ids: set[int] = set()
    for j, e in enumerate(parts):
        if not isinstance(e, dict) or not snapshot._is_int(e.get("partition")):
            return f'topic {name}: partitions[{j}] needs an integer "partition"'
        p = e["partition"]
        if p in ids:
            return f"partition {name}-{p} is listed twice"
        ids.add(p)
        reps: Any = e.get("replicas")
        if not snapshot._int_list(reps) or not all(_I64_MIN <= r <= _I64_MAX for r in reps):
            return f'partition {name}-{p}: "replicas" must be a list of integers'
    return None


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1  # the replica store's widest ids


def _detail(e: InvalidInputError) -> str:
    return str(e).removeprefix(f"{snapshot._WHAT}: ")


def loads(
    data: bytes | str | snapshot.Buffer,
    *,
    partition_state: bool = True,
    release: Callable[[], None] | None = None,
    replica_dirs: bool | None = None,
) -> ClusterState:
    """Parse and check a JSON-lines snapshot, CHUNK_BYTES of lines at a time, into the same compact state
    as snapshot.loads (one ReplicaStore, a TopicReplicas per topic). Problems: InvalidInputError (exit 3)
    naming the line. `partition_state`, `release` and `replica_dirs` as in snapshot.loads."""
    raw = data.encode() if isinstance(data, str) else data
    end, pos = header_span(raw)
    header = parse_header(raw[0:end])
    builder = snapshot._TopicsBuilder(partition_state, False)
    wanted = partition_state if replica_dirs is None else replica_dirs
    dirs = snapshot.dir_counts(header.disks) if wanted else None
    size, line_no, released, prev = len(raw), 2, 0, None
    while pos < size:
        cut = raw.find(b"\n", min(pos + CHUNK_BYTES, size))
        stop = size if cut < 0 else cut + 1
        lines = raw[pos:stop].splitlines()
        try:
            new = parse_lines(lines, prev, partition_state, builder, dirs)
        except LineError as e:
            raise line_error(line_no + e.index, e.detail) from None
        if new:
            prev = new[-1].name
        line_no += len(lines)
        pos = stop
        if release is not None and pos - released >= snapshot.RELEASE_BYTES:
            release()
            released = pos
    return ClusterState(
        brokers=header.brokers,
        topics=builder.finish(),
        deleting=header.deleting,
        reassignment=header.reassignment,
        capacities=header.capacities,
        disks=header.disks,
    )
