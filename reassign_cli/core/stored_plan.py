"""The stored plan (issue 25, DESIGN.md §5a): a paced or batched execute's plan and its window, kept in the
cluster so that any host (a cron `verify`, `execute --resume` elsewhere) carries it on. Pure: the
document, its transitions, its bytes and its lease. Stored by backends/zookeeper/stored_plan.py (znodes
under /reassign_cli/plan) and backends/admin/plan_topic.py (the topic __reassign_cli_plan); the step of
ops/ (a later session) reads it, decides with core/pacing.py, and writes it back through their fence.

A stored plan is two documents:
- the CONTENT, fixed for the plan's life: the plan's entries (topic, partition, replicas, log_dirs) in the
  plan file's order, each with the bytes its move copies when known. Large (about 85 bytes a partition:
  1.7 MB for 20,000), so it is written once, in chunks.
- the HEAD, small (a few KB for 20,000 moves), rewritten by every change: the SHA-256 of the plan file's
  bytes exactly as read from disk (`core.pacing.plan_digest`, the digest FILE.pacing.json keeps), the pace
  (cap, order, batch size, throttle rates: `core.pacing.Pace`), who stored it and when, the moves started
  and done (bitmaps over the content's entry indexes, base64: 2.5 KB per set for 20,000 moves), the
  schedule and pause (opaque JSON objects owned by core/schedule.py), the last step (when, the controller
  epoch it saw), the driver lease, and the content's own digest, size and chunk count, so that a reader
  checks the content it assembled is the one the head was written with.

Moves are topic-partitions. `started` holds every move ever started (the done ones too), `done` the ones
that ended: moving = started - done, queued = the rest. A move is never started twice (`mark_started`
refuses one already started or done).

The lease says who drives (a run id, its host and pid) and counts its renewals. It is clock-free: an
observer that sees the same (run, renewals) for STALE_SECONDS of its own monotonic clock calls it stale
(`core.record_log.LeaseWatch` with this module's mark), and may take it over. No wall clock is compared
across hosts. The lease lives in the head, so taking, renewing and releasing it are fenced like every other
change, and a holder whose lease was taken over finds out at its next write.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from reassign_cli.core import hints
from reassign_cli.core import pacing as pc
from reassign_cli.core.model import PlanEntry, TopicPartition, tp_str
from reassign_cli.core.names import listed
from reassign_cli.core.record_log import Codec, LeaseWatch
from reassign_cli.errors import BusyError, OperationalError

FORMAT = 1  # the "v" of both documents this version writes and reads
STALE_SECONDS = 15.0  # a lease seen unrenewed this long (the observer's own clock) is stale
RENEW_SECONDS = 5.0  # its holder renews it at least this often while it drives
WHAT = "the stored plan"


class StoredPlanError(OperationalError):
    """The stored plan cannot be read: another format version, malformed, or its content does not match
    its head."""


class PlanConflict(BusyError):
    """A plan is already stored (exit 4): the message names it, the hint says how to cancel it."""


class StartedTwice(OperationalError):
    """A transition that would start a move already started or done, or one not in the plan."""


class LeaseLost(BusyError):
    """The lease this run held is another run's now (it was seen stale and taken over)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Who stored the plan, and when (UTC seconds)."""

    host: str
    user: str
    at: float


@dataclass(frozen=True, slots=True)
class Lease:
    """The driver: a run (random id), its host and pid; `renewals` counts its renewals."""

    run: str
    host: str
    pid: int
    renewals: int = 0

    def doc(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "renewals": self.renewals, "run": self.run}


@dataclass(frozen=True, slots=True)
class LastStep:
    """The last step: when it ran (UTC seconds) and the controller epoch it saw (None: not known)."""

    at: float
    controller_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class ContentRef:
    """What the head says of the content: its SHA-256, its size, how many chunks hold it, and where
    (a name the store gives it; "" when the store needs none)."""

    sha256: str
    size: int
    chunks: int
    where: str = ""


@dataclass(frozen=True, slots=True)
class StoredPlan:
    plan_sha256: str  # pacing.plan_digest of the plan file's bytes as read
    entries: tuple[PlanEntry, ...]  # the plan's partitions in the file's order
    sizes: tuple[int | None, ...]  # per entry: the bytes its move copies; None: unknown
    pace: pc.Pace
    origin: Origin
    created: float
    updated: float
    started: frozenset[TopicPartition] = frozenset()
    done: frozenset[TopicPartition] = frozenset()
    schedule: Mapping[str, Any] = field(default_factory=dict)
    paused: Mapping[str, Any] = field(default_factory=dict)
    last_step: LastStep | None = None
    lease: Lease | None = None
    # The content's digest, size and place as stored (set by `decode` and the stores' create; carried by
    # the transitions, which never change the content): a change writes the head without encoding the
    # content again.
    content_ref: ContentRef | None = field(default=None, compare=False, repr=False)

    @property
    def moves(self) -> tuple[TopicPartition, ...]:
        return tuple((e.topic, e.partition) for e in self.entries)


def new_plan(
    plan: bytes,
    entries: Sequence[PlanEntry],
    pace: pc.Pace,
    origin: Origin,
    sizes: Sequence[int | None] | None = None,
    schedule: Mapping[str, Any] | None = None,
) -> StoredPlan:
    """The plan to store before a paced or batched execute's first move: `plan` is the plan file's bytes as
    read (their SHA-256 is kept), `entries` its parsed partitions (validated: no duplicates)."""
    sz = tuple(sizes) if sizes is not None else (None,) * len(entries)
    if len(sz) != len(entries):
        raise ValueError("one size per entry")
    if len({(e.topic, e.partition) for e in entries}) != len(entries):
        raise ValueError("duplicate partitions in a stored plan")
    return StoredPlan(
        pc.plan_digest(plan), tuple(entries), sz, pace, origin, origin.at, origin.at, schedule=schedule or {}
    )


# -- transitions ------------------------------------------------------------------------------------
def _unknown(plan: StoredPlan, moves: Iterable[TopicPartition]) -> list[TopicPartition]:
    known = set(plan.moves)
    return [m for m in moves if m not in known]


def mark_started(plan: StoredPlan, moves: Iterable[TopicPartition], now: float) -> StoredPlan:
    """`moves` started. Refuses (StartedTwice) a move already started or done, or not in the plan: a
    step computed from a state another step has since changed must read again, never start twice."""
    new = list(dict.fromkeys(moves))
    stray = _unknown(plan, new)
    if stray:
        raise StartedTwice(
            listed("cannot start moves that are not in the stored plan: {}", map(tp_str, stray))
        )
    again = [m for m in new if m in plan.started]
    if again:
        raise StartedTwice(listed("refusing to start moves again (already started): {}", map(tp_str, again)))
    return replace(plan, started=plan.started | frozenset(new), updated=now)


def mark_done(plan: StoredPlan, moves: Iterable[TopicPartition], now: float) -> StoredPlan:
    """`moves` ended (as planned or not). A move that ended without being recorded as started (a step died
    between starting it and recording it) is recorded as both. Moves already done are left as they are."""
    new = frozenset(moves)
    stray = _unknown(plan, new)
    if stray:
        raise StartedTwice(listed("cannot end moves that are not in the stored plan: {}", map(tp_str, stray)))
    return replace(plan, started=plan.started | new, done=plan.done | new, updated=now)


def stepped(plan: StoredPlan, at: float, controller_epoch: int | None) -> StoredPlan:
    return replace(plan, last_step=LastStep(at, controller_epoch), updated=at)


@dataclass(frozen=True, slots=True)
class Progress:
    total: int
    moving: int
    queued: int
    done: int
    bytes_total: int | None  # None: some move's size is unknown
    bytes_done: int | None  # of the moves done
    bytes_moving: int | None  # of the moves moving (their whole size, not what is copied yet)

    def line(self) -> str:
        text = f"{self.moving} moving, {self.queued} queued, {self.done} done"
        if self.bytes_total is not None and self.bytes_done is not None:
            text += f" ({pc.human_bytes(self.bytes_done)} of {pc.human_bytes(self.bytes_total)} done)"
        return text


def progress(plan: StoredPlan) -> Progress:
    moving = plan.started - plan.done
    sized = all(s is not None for s in plan.sizes)

    def total(of: frozenset[TopicPartition] | None) -> int | None:
        if not sized:
            return None
        return sum(
            s or 0
            for e, s in zip(plan.entries, plan.sizes, strict=True)
            if of is None or (e.topic, e.partition) in of
        )

    return Progress(
        len(plan.entries),
        len(moving),
        len(plan.entries) - len(plan.started),
        len(plan.done),
        total(None),
        total(plan.done),
        total(moving),
    )


def utc(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def conflict(
    stored: StoredPlan, plan_sha256: str, connection: Iterable[hints.ConnectionOption] = ()
) -> PlanConflict | None:
    """A second paced execute of a plan whose file's bytes have SHA-256 `plan_sha256` (pacing.plan_digest)
    while `stored` is stored: None when they are the same bytes (then it is a resume), else the error
    (exit 4) naming the stored plan, its progress and the command that cancels it (`cancel` with no plan
    file cancels the stored plan: issue 25, wired by a later session)."""
    if plan_sha256 == stored.plan_sha256:
        return None
    who = f"{stored.origin.user}@{stored.origin.host}"
    message = (
        f"another plan is stored in the cluster and runs paced: {len(stored.entries)} partition(s), plan "
        f"SHA-256 {stored.plan_sha256[:12]}, stored by {who} at {utc(stored.origin.at)}; "
        f"{progress(stored).line()}; nothing was started"
    )
    cancel = hints.command_line(["cancel"], connection)
    return PlanConflict(message, hint=f"Let it finish, or cancel it with: {cancel}")


# -- the lease --------------------------------------------------------------------------------------
def watch() -> LeaseWatch:
    """An observer of stored-plan leases (keep one per process: it counts how long it saw a renewal)."""
    return LeaseWatch(STALE_SECONDS, mark="renewals")


def take_lease(plan: StoredPlan, me: Lease, observer: LeaseWatch, now: float) -> StoredPlan | None:
    """The plan with `me` driving: when no one holds the lease, `me` does already (a renewal), or the
    holder's lease is stale to `observer` (its clock `now`). None: another run holds it."""
    lease = plan.lease
    held = observer.holder(None if lease is None else lease.doc(), me.run, now)
    if held == "other":
        return None
    renewals = lease.renewals + 1 if lease is not None else me.renewals
    return replace(plan, lease=replace(me, renewals=renewals))


def renew_lease(plan: StoredPlan, run: str) -> StoredPlan:
    """The holder's renewal (the counter moves on); LeaseLost when the lease is not `run`'s any more."""
    lease = plan.lease
    if lease is None or lease.run != run:
        raise LeaseLost(_lost(lease))
    return replace(plan, lease=replace(lease, renewals=lease.renewals + 1))


def release_lease(plan: StoredPlan, run: str) -> StoredPlan:
    """The plan without `run`'s lease (unchanged when another run holds it)."""
    if plan.lease is None or plan.lease.run != run:
        return plan
    return replace(plan, lease=None)


def _lost(lease: Lease | None) -> str:
    holder = "no one" if lease is None else f"run {lease.run} (pid {lease.pid} on {lease.host})"
    return f"this run's lease on the stored plan was taken over (it was not renewed for {STALE_SECONDS:g} s); {holder} drives it now"


# -- bytes ----------------------------------------------------------------------------------------
def _dumps(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def encode_content(plan: StoredPlan) -> bytes:
    """`{"entries":[[topic,partition,[replicas],[log_dirs]|null,bytes|null],...],"v":1}`."""
    rows = [
        [e.topic, e.partition, list(e.replicas), None if e.log_dirs is None else list(e.log_dirs), s]
        for e, s in zip(plan.entries, plan.sizes, strict=True)
    ]
    return _dumps({"entries": rows, "v": FORMAT})


def _bits(plan: StoredPlan, moves: frozenset[TopicPartition]) -> str:
    out = bytearray((len(plan.entries) + 7) // 8)
    for i, e in enumerate(plan.entries):
        if (e.topic, e.partition) in moves:
            out[i // 8] |= 1 << (i % 8)
    return base64.b64encode(bytes(out)).decode()


def _unbits(text: str, entries: Sequence[PlanEntry]) -> frozenset[TopicPartition]:
    raw = base64.b64decode(text.encode(), validate=True)
    if len(raw) != (len(entries) + 7) // 8:
        raise ValueError("a move set's length")
    out = {(e.topic, e.partition) for i, e in enumerate(entries) if raw[i // 8] >> (i % 8) & 1}
    if sum(bin(b).count("1") for b in raw) != len(out):
        raise ValueError("a move set names moves beyond the plan")
    return frozenset(out)


def same_content(a: StoredPlan, b: StoredPlan) -> bool:
    """Whether two plans have the same content (the stores refuse a change of it)."""
    return a.plan_sha256 == b.plan_sha256 and a.entries == b.entries and a.sizes == b.sizes


def encode_head(plan: StoredPlan, content: bytes | None = None, chunks: int = 1, where: str = "") -> bytes:
    """The head's bytes; without `content`, the content as `plan.content_ref` says it is stored."""
    if content is None:
        if plan.content_ref is None:
            raise ValueError("a head without its content needs the plan's content_ref")
        ref = plan.content_ref
    else:
        ref = ContentRef(hashlib.sha256(content).hexdigest(), len(content), chunks, where)
    pace = {
        "order": plan.pace.order,
        "max_moves_per_broker": plan.pace.cap,
        "batch_size": plan.pace.batch_size,
    }
    for key, attr in pc.RATE_KEYS.items():
        pace[key] = getattr(plan.pace, attr)
    doc = {
        "v": FORMAT,
        "plan_sha256": plan.plan_sha256,
        "moves": len(plan.entries),
        "content": {"sha256": ref.sha256, "bytes": ref.size, "chunks": ref.chunks, "where": ref.where},
        "pace": pace,
        "origin": {"host": plan.origin.host, "user": plan.origin.user, "at": plan.origin.at},
        "created": plan.created,
        "updated": plan.updated,
        "started": _bits(plan, plan.started),
        "done": _bits(plan, plan.done),
        "schedule": dict(plan.schedule),
        "paused": dict(plan.paused),
        "last_step": None
        if plan.last_step is None
        else {"at": plan.last_step.at, "controller_epoch": plan.last_step.controller_epoch},
        "lease": None if plan.lease is None else plan.lease.doc(),
    }
    return _dumps(doc)


def split(data: bytes, limit: int) -> list[bytes]:
    """`data` in chunks of at most `limit` bytes (one empty chunk for no data)."""
    if limit < 1:
        raise ValueError("limit")
    return [data[i : i + limit] for i in range(0, len(data), limit)] or [b""]


def encode(plan: StoredPlan, limit: int, where: str = "") -> tuple[bytes, list[bytes]]:
    """(the head, the content's chunks of at most `limit` bytes). Deterministic: the same plan gives the
    same bytes (keys sorted, compact JSON)."""
    content = encode_content(plan)
    chunks = split(content, limit)
    return encode_head(plan, content, len(chunks), where), chunks


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise StoredPlanError(f"{WHAT}'s {what} is not JSON ({e}); refusing to act on it") from None
    if not isinstance(doc, dict):
        raise StoredPlanError(f"{WHAT}'s {what} is not a JSON object; refusing to act on it")
    version = doc.get("v")
    if version != FORMAT:
        raise StoredPlanError(
            f"{WHAT}'s {what} has format version {str(version)[:20]}, which this version of kafka-reassign "
            f"does not read (it reads version {FORMAT}; written by a newer kafka-reassign?); refusing to act on it"
        )
    return doc


def content_ref(head: bytes) -> ContentRef:
    """The head's word on the content (what a reader fetches), read before the content is."""
    doc = _load(head, "head")
    try:
        c = doc["content"]
        ref = ContentRef(str(c["sha256"]), _int(c["bytes"]), _int(c["chunks"]), str(c["where"]))
    except (KeyError, TypeError, ValueError) as e:
        raise StoredPlanError(f"{WHAT}'s head is malformed ({e!r}); refusing to act on it") from None
    return ref


def matches(ref: ContentRef, content: bytes) -> bool:
    return len(content) == ref.size and hashlib.sha256(content).hexdigest() == ref.sha256


def decode(head: bytes, content: bytes) -> StoredPlan:
    """The stored plan from its head and its content (the chunks joined). StoredPlanError, one line, for
    another format version, a malformed document, or content that is not the one the head was written with."""
    ref = content_ref(head)
    if not matches(ref, content):
        raise StoredPlanError(
            f"{WHAT}'s content does not match its head (SHA-256, size); refusing to act on it"
        )
    doc = _load(head, "head")
    parsed = _parsed(ref, content)
    try:
        return replace(_decode(doc, parsed), content_ref=ref)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise StoredPlanError(f"{WHAT} is malformed ({e!r}); refusing to act on it") from None


# The last content parsed, by its SHA-256 (checked against the bytes by `decode` first): a content is
# written once and read by every read of the plan (a `verify` step reads it three times), while only the head
# changes. One entry: a process works on one stored plan.
_PARSED: dict[str, tuple[tuple[PlanEntry, ...], tuple[int | None, ...]]] = {}


def _parsed(ref: ContentRef, content: bytes) -> tuple[tuple[PlanEntry, ...], tuple[int | None, ...]]:
    known = _PARSED.get(ref.sha256)
    if known is not None:
        return known
    body = _load(content, "content")
    try:
        known = _entries(body)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise StoredPlanError(f"{WHAT} is malformed ({e!r}); refusing to act on it") from None
    _PARSED.clear()
    _PARSED[ref.sha256] = known
    return known


def _int(v: Any) -> int:
    if type(v) is not int:
        raise ValueError(f"not an integer: {v!r}")
    return v


def _num(v: Any) -> float:
    if type(v) not in (int, float):
        raise ValueError(f"not a number: {v!r}")
    return float(v)


def _object(v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ValueError(f"not a JSON object: {v!r}")
    return v


def _entries(body: dict[str, Any]) -> tuple[tuple[PlanEntry, ...], tuple[int | None, ...]]:
    entries, sizes = [], []
    for topic, partition, replicas, log_dirs, size in body["entries"]:
        if not isinstance(topic, str) or any(type(r) is not int for r in replicas):
            raise ValueError(f"an entry: {topic!r}")
        if log_dirs is not None and any(not isinstance(d, str) for d in log_dirs):
            raise ValueError(f"an entry's log_dirs: {log_dirs!r}")
        entries.append(
            PlanEntry(topic, _int(partition), list(replicas), None if log_dirs is None else list(log_dirs))
        )
        sizes.append(None if size is None else _int(size))
    if len({(e.topic, e.partition) for e in entries}) != len(entries):
        raise ValueError("duplicate partitions")
    return tuple(entries), tuple(sizes)


def _pace(doc: dict[str, Any]) -> pc.Pace:
    p = _object(doc["pace"])
    kept = {k: v for k, v in p.items() if v is not None}
    found = pc.read_pace(_dumps({"version": pc.PACE_VERSION, "plan_sha256": doc["plan_sha256"], **kept}))
    if found is None:
        raise ValueError(f"the pace: {p!r}")
    return found[0]


def _lease(v: Any) -> Lease | None:
    if v is None:
        return None
    v = _object(v)
    if (
        set(v) != {"host", "pid", "renewals", "run"}
        or not isinstance(v["run"], str)
        or not isinstance(v["host"], str)
    ):
        raise ValueError(f"the lease: {v!r}")
    return Lease(v["run"], v["host"], _int(v["pid"]), _int(v["renewals"]))


def _decode(doc: dict[str, Any], parsed: tuple[tuple[PlanEntry, ...], tuple[int | None, ...]]) -> StoredPlan:
    entries, sizes = parsed
    if _int(doc["moves"]) != len(entries) or not isinstance(doc["plan_sha256"], str):
        raise ValueError("the head's move count")
    o = _object(doc["origin"])
    step = doc["last_step"]
    last = None
    if step is not None:
        epoch = _object(step)["controller_epoch"]
        last = LastStep(_num(step["at"]), None if epoch is None else _int(epoch))
    started, done = _unbits(doc["started"], entries), _unbits(doc["done"], entries)
    if not done <= started:
        raise ValueError("moves done that were never started")
    return StoredPlan(
        plan_sha256=doc["plan_sha256"],
        entries=entries,
        sizes=sizes,
        pace=_pace(doc),
        origin=Origin(str(o["host"]), str(o["user"]), _num(o["at"])),
        created=_num(doc["created"]),
        updated=_num(doc["updated"]),
        started=started,
        done=done,
        schedule=_object(doc["schedule"]),
        paused=_object(doc["paused"]),
        last_step=last,
        lease=_lease(doc["lease"]),
    )


# -- the stored plan as a log of writes (the admin API's topic) ----------------------------------------
TOPIC = "__reassign_cli_plan"


def _load_log_doc(data: bytes) -> dict[str, Any]:
    """A write's document in the topic: {} (no plan: deleted), {"head":{...},"content":{...}} (stored), or
    {"head":{...}} (a change: the content is the one before it). OperationalError for anything else."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise OperationalError(f"{TOPIC} holds a write that is not JSON") from None
    ok = isinstance(doc, dict) and set(doc) <= {"head", "content"} and ("content" not in doc or "head" in doc)
    if not ok or not all(v is None or isinstance(v, dict) for v in doc.values()):
        raise OperationalError(f"{TOPIC} holds a write this version does not understand")
    return doc


def _whole_log_doc(doc: Mapping[str, Any]) -> bool:
    return "head" not in doc or "content" in doc


def _merge_log_doc(before: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    if "head" in doc and "content" not in doc:
        return {**doc, "content": before.get("content")}
    return doc


# The stored plan's writes in the topic, fenced as the prior-values record's are (core/record_log.py):
# the content is written once, with the head that creates the plan; later writes carry the head alone,
# and a compaction never removes the write that carried the content.
LOG = Codec(TOPIC, "plan", _load_log_doc, _dumps, dict, _whole_log_doc, _merge_log_doc)


def log_doc(plan: StoredPlan, with_content: bool) -> dict[str, Any]:
    """The document of a write of `plan` to the topic (with its content: the write that creates it)."""
    if not with_content:
        return {"head": orjson.loads(encode_head(plan))}
    content = encode_content(plan)
    return {"head": orjson.loads(encode_head(plan, content)), "content": orjson.loads(content)}


def from_log_doc(doc: Mapping[str, Any]) -> StoredPlan | None:
    """The plan a replayed document says (None: no plan stored)."""
    if not doc:
        return None
    if doc.get("content") is None:
        raise StoredPlanError(
            f"{WHAT}'s content is no longer in {TOPIC} (messages were deleted from it by hand or by a "
            "retention setting); refusing to act on it"
        )
    return decode(_dumps(doc["head"]), _dumps(doc["content"]))
