"""The prior-values record (throttle.py's format) kept as a log in a Kafka topic, for the admin-API backend.
Pure: the messages' bytes and the replay; backends/admin/record_topic.py produces and consumes them.

A write is one message, or, when the record does not fit in one (messages are limited to about 1 MB),
`n` chunk messages and then a commit message:

    {"base":41,"id":"<hex>","record":{...},"v":2}                 one message
    {"chunk":0,"id":"<hex>","part":"<the record's JSON, cut>","v":2}  ... chunk n-1, then
    {"base":41,"chunks":n,"id":"<hex>","v":2}                     the commit

A write's END is its commit or its one message. `base` is the offset of the last write's end the writer
had read (counted or not; -1 when it read none). A write COUNTS when no other write ends between its base
and its own end, and all its chunks are there; any other lost a race: its writer reads again and computes
again. Other messages between (chunks of other writes, messages not ours) do not matter, so of writers
racing, the first to end wins: no livelock. The record is the last counted write's. The rule looks only at
the messages between a write's base and its end, never at which earlier write counted, so removing a
prefix of the log (DeleteRecords, retention) can never turn a write that lost into one that counts: two
writers can never both believe they won.

A prefix removed after a write's base leaves its outcome unknown (the message removed may have been
another write's end), and a log whose start offset is above 0 says nothing of the record until a write that
counts follows. Until then the record is unknown, and reading it is refused (OperationalError) rather than
guessed. The tool itself only removes the messages up to the base of a write that counted (compaction,
record_topic.py), so its own log is always known.

Messages of the first format (no "v"; `base` = the offset of the last write that counted) replay by their
own rule: they count when their base is the last counted write's offset and the log has been read from its
start. A message of ours that this version does not understand is refused, never guessed from.

A write may also carry a lease, `"lease":{"kind":"setup"|"clear","run":"<hex>","since":<unix seconds>}`:
an execute between its throttle writes and its reassignment ("setup"), or a clear taking throttles off
("clear"), holds it so that no other run changes the same throttles meanwhile (the admin API has no
ephemeral node and no multi-key transaction). Each write carries the lease as it found it unless it takes,
renews or ends one, so taking a lease is a read-modify-write like any other: of two runs, one wins.

A lease is over when its holder stops renewing it (it was killed, or stalled): its holder writes it again
with a new `since` at least every RENEW_SECONDS while it works, and another run that has seen the same
lease (run and `since`) in the log for LEASE_SECONDS of its OWN clock takes it for over (`LeaseWatch`). No
wall clock is compared across hosts: `since` only tells one renewal from the next (and keeps older
versions, which read it as a time, from taking a renewed lease for over). The holder is fenced on the log:
a renewal counts only if no other write ended after the one it was computed from, so a holder whose lease
was taken over learns it at its next renewal, which it makes right before each throttle write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from reassign_cli.core import throttle as th
from reassign_cli.errors import OperationalError

TOPIC = "__reassign_cli_throttles"
NO_BASE = -1
FORMAT = 2  # the "v" of the messages this version writes
CHUNK_BYTES = 512 * 1024  # largest message written: half the broker's default message.max.bytes (1048588)
COMPACT_AFTER = 20  # messages before the last counted write that trigger a compaction


def topic_spec(brokers: int) -> tuple[int, dict[str, str]]:
    """(replication factor, topic configs) of the record topic in a cluster of `brokers` live brokers:
    one partition, up to 3 replicas, 2 in sync for each write when there are 3, never deleted by time."""
    rf = max(1, min(3, brokers))
    configs = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
    if rf == 3:
        configs["min.insync.replicas"] = "2"
    return rf, configs


LEASE_SECONDS = 30.0  # a lease seen unrenewed this long (the observer's own clock) is over
RENEW_SECONDS = 10.0  # its holder writes it again at least this often while it holds it
Lease = dict[str, Any]  # {"kind": "setup"|"clear", "run": str, "since": float}


def _dumps(doc: Mapping[str, Any]) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def _whole(doc: Mapping[str, Any]) -> bool:
    return True


def _keep(before: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    return doc


@dataclass(frozen=True, slots=True)
class Codec:
    """What a log of these writes keeps: its topic, the field of a single message that holds the document,
    how the document is read (`load`, OperationalError when it is not understood) and written (`dump`).
    A log whose writes may leave out a part of the document that an earlier write carries (the stored
    plan's content, written once: core/stored_plan.py) says which writes are `whole` and how a write is
    `merge`d onto the document before it; a compaction never cuts past the last whole write."""

    topic: str
    field: str
    load: Callable[[bytes], dict[str, Any]]
    dump: Callable[[Mapping[str, Any]], bytes]
    empty: Callable[[], dict[str, Any]]
    whole: Callable[[Mapping[str, Any]], bool] = _whole
    merge: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] = _keep


RECORD = Codec(TOPIC, "record", lambda data: th.load_record(data, TOPIC), th.dump_record, th.empty_record)


def encode_write(
    base: int,
    record: Mapping[str, Any],
    write_id: str,
    lease: Mapping[str, Any] | None = None,
    *,
    limit: int | None = None,
    codec: Codec = RECORD,
) -> list[bytes]:
    """The messages of one write, in order: one message when it fits in `limit` bytes (CHUNK_BYTES by
    default), else chunks and a commit. Compact JSON, keys sorted (the record as throttle.dump_record has it)."""
    limit = CHUNK_BYTES if limit is None else limit
    text = codec.dump(record).decode()
    head: dict[str, Any] = {"base": base, "id": write_id, "v": FORMAT}
    if lease is not None:
        head["lease"] = dict(lease)
    single = _dumps({**head, codec.field: orjson.loads(text)})
    if len(single) <= limit:
        return [single]
    parts = _cut(text, write_id, limit)
    chunks = [_dumps({"chunk": i, "id": write_id, "part": p, "v": FORMAT}) for i, p in enumerate(parts)]
    return [*chunks, _dumps({**head, "chunks": len(parts)})]


def _cut(text: str, write_id: str, limit: int) -> list[str]:
    """`text` cut into pieces whose chunk messages are at most `limit` bytes (JSON escapes included)."""
    size = max(1, limit // 2)
    while True:
        parts = [text[i : i + size] for i in range(0, len(text), size)]
        overhead = len(_dumps({"chunk": len(parts), "id": write_id, "part": "", "v": FORMAT}))
        if size == 1 or all(len(orjson.dumps(p)) - 2 + overhead <= limit for p in parts):
            return parts
        size //= 2


@dataclass(frozen=True, slots=True)
class Message:
    """One message of ours: a chunk (`index` set) or a write (`record` set, or `chunks` > 0 to assemble)."""

    write_id: str
    version: int  # 1: the first format (no "v"), 2: this one
    base: int = NO_BASE
    index: int | None = None  # a chunk: its index
    part: str = ""  # a chunk: its piece of the record's JSON
    chunks: int = 0  # a commit of chunks: how many precede it
    record: dict[str, Any] | None = None
    lease: Lease | None = None


FIELDS = {
    1: frozenset({"base", "id", "record", "lease"}),
    2: frozenset({"base", "id", "record", "lease", "v"}),
}
CHUNK_FIELDS = frozenset({"chunk", "id", "part", "v"})
COMMIT_FIELDS = frozenset({"base", "chunks", "id", "lease", "v"})


def decode_message(value: bytes | None, codec: Codec = RECORD) -> Message | None:
    """The message; None for one that is not ours (not a JSON object with an "id" and a "base" or a
    "chunk": it never counts, and breaks any write it lands in). A message of ours that this version does
    not understand (another field, another "v", another record version, a malformed lease or record) is
    refused (OperationalError): a newer writer's rules may differ, and guessing could let two writers both
    believe they won."""
    if not value:
        return None
    try:
        doc = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or "id" not in doc or ("base" not in doc and "chunk" not in doc):
        return None
    try:
        return _message(doc, codec)
    except (ValueError, TypeError, KeyError, OperationalError):
        raise OperationalError(_refusal(value, codec.topic)) from None


def _message(doc: dict[str, Any], codec: Codec) -> Message:
    version = doc.get("v", 1)
    write_id = doc["id"]
    if version not in FIELDS or not isinstance(write_id, str) or (version == 1 and "v" in doc):
        raise ValueError
    if codec.field != "record" and version != FORMAT:
        raise ValueError
    if "chunk" in doc:
        if version != FORMAT or set(doc) != CHUNK_FIELDS or not _is_int(doc["chunk"]) or doc["chunk"] < 0:
            raise ValueError
        if not isinstance(doc["part"], str):
            raise ValueError
        return Message(write_id, version, index=doc["chunk"], part=doc["part"])
    base, lease = doc["base"], doc.get("lease")
    if not _is_int(base) or (lease is not None and not _is_lease(lease)):
        raise ValueError
    if "chunks" in doc:
        if version != FORMAT or set(doc) - COMMIT_FIELDS or not _is_int(doc["chunks"]) or doc["chunks"] < 1:
            raise ValueError
        return Message(write_id, version, base, chunks=doc["chunks"], lease=lease)
    fields = FIELDS[version] - {"record"} | {codec.field}
    if set(doc) - fields or codec.field not in doc:
        raise ValueError
    record = codec.load(orjson.dumps(doc[codec.field]))
    return Message(write_id, version, base, record=record, lease=lease)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _refusal(value: bytes, topic: str = TOPIC) -> str:
    shown = value[:200].decode(errors="replace")
    return (
        f"{topic} holds a message this version of kafka-reassign does not understand (written by a newer "
        f"version?); refusing to guess the record from it: {shown}"
    )


def _is_lease(lease: Any) -> bool:
    return (
        isinstance(lease, dict)
        and lease.get("kind") in ("setup", "clear")
        and isinstance(lease.get("run"), str)
        and isinstance(lease.get("since"), int | float)
        and not isinstance(lease.get("since"), bool)
    )


class LeaseWatch:
    """Whose a lease is, as one observer tells: "free" (none, or over), "mine" (held by `run`), or "other".
    Over: the observer has seen the same renewal of another run's lease (its run and its `mark`: `since`
    here, the renewal counter of a stored plan's lease in core/stored_plan.py) for `seconds`
    (LEASE_SECONDS here) of its own monotonic clock (`now`); a new renewal starts the count again."""

    def __init__(self, seconds: float | None = None, mark: str = "since") -> None:
        self.seconds = seconds  # None: LEASE_SECONDS as it is when asked
        self.mark = mark
        self.renewal: tuple[str, float] | None = None
        self.first_seen = 0.0

    def holder(self, lease: Mapping[str, Any] | None, run: str, now: float) -> str:
        if lease is None:
            return "free"
        if lease["run"] == run:
            return "mine"
        renewal = (str(lease["run"]), float(lease[self.mark]))
        if renewal != self.renewal:
            self.renewal, self.first_seen = renewal, now
        limit = LEASE_SECONDS if self.seconds is None else self.seconds
        return "free" if now - self.first_seen >= limit else "other"

    def age(self, now: float) -> float:
        """How long (the observer's clock) the renewal last looked at has been seen unchanged."""
        return now - self.first_seen if self.renewal is not None else 0.0


@dataclass(slots=True)
class Replay:
    """The record as the log says so far: feed it every message in offset order."""

    codec: Codec = RECORD
    record: dict[str, Any] = field(default_factory=th.empty_record)
    last: int = NO_BASE  # offset of the commit (or single message) of the last write that counted
    cut: int = 0  # where a compaction may cut: the first offset after the base of the last counted write
    last_end: int = NO_BASE  # offset of the last write's end (commit or single message), counted or not
    position: int = 0  # next offset to feed
    seen_from: int = 0  # every message from this offset on was fed (the log's start, or after a gap)
    known: bool = True  # the record is the log's (False: a prefix was removed and no write counted since)
    outcome: dict[str, bool | None] = field(default_factory=dict)  # write id -> counted (None: unknown)
    lease: Lease | None = None  # the lease of the last write that counted
    chunks: dict[str, dict[int, str]] = field(default_factory=dict)  # since the last write's end

    def start_at(self, offset: int) -> None:
        """The log starts at `offset` (its start offset, above the position when a prefix was removed)."""
        if offset > self.position:
            self._gap(offset)

    def _gap(self, offset: int) -> None:
        self.position = self.seen_from = offset
        self.known = False
        self.chunks = {}

    def feed(self, offset: int, value: bytes | None) -> None:
        if offset < self.position:
            return  # already seen (a consumer may hand a message back after a seek)
        if offset > self.position:
            self._gap(offset)  # messages removed meanwhile (a consumer reset to the new start)
        self.position = offset + 1
        msg = decode_message(value, self.codec)
        if msg is None:
            return
        if msg.index is not None:
            self.chunks.setdefault(msg.write_id, {}).setdefault(msg.index, msg.part)
            return
        counted = self._counts(msg)
        parts, self.chunks, self.last_end = self.chunks.get(msg.write_id, {}), {}, offset
        if counted and msg.chunks and sorted(parts) != list(range(msg.chunks)):
            counted = False  # a chunk missing (or late): it cannot be assembled
        # A write's outcome is its first end's: a late duplicate of that end never counts, yet says nothing
        # of the write. Past a gap after the write's base, the end seen may be such a duplicate of an end
        # that was removed (and counted): the write's outcome is unknown, whatever this end does.
        removed = msg.version != 1 and msg.base + 1 < self.seen_from
        self.outcome.setdefault(msg.write_id, None if removed else counted)
        if counted is None:
            self.known = False
        elif counted:
            record = msg.record if msg.record is not None else _assemble(parts, self.codec)
            cut = offset if msg.version == 1 else msg.base + 1
            if self.codec.whole(record):
                self.cut = cut
            self.record = self.codec.merge(self.record, record)
            self.lease, self.known, self.last = msg.lease, True, offset

    def _counts(self, msg: Message) -> bool | None:
        """Whether the write ending here counts; None when the log no longer says."""
        if msg.version == 1:
            return (msg.base == self.last) if self.known else None
        if self.last_end > msg.base:
            return False  # another write ended after the one this write was computed from
        if msg.base + 1 < self.seen_from:
            return None  # messages after its base were removed: one of them may have been a write's end
        return True


def _assemble(parts: dict[int, str], codec: Codec = RECORD) -> dict[str, Any]:
    text = "".join(parts[i] for i in range(len(parts))).encode()
    try:
        return codec.load(text)
    except OperationalError:
        raise OperationalError(_refusal(text, codec.topic)) from None


def unknown_record(start: int, topic: str = TOPIC, what: str = "the record of prior throttle values") -> str:
    """Why the record cannot be read: a prefix of the log was removed under the last write."""
    return (
        f"cannot tell {what}: {topic} starts at offset {start}, and no whole "
        "write that counted follows (messages were deleted from it by hand or by a retention setting)"
    )
