"""The window of `execute --max-moves-per-broker N`: which moves fit, in which order, and the byte progress,
rate, ETA, stuck moves and diagnosis of a paced reassignment. Pure: no I/O; time is passed in.

A move (one partition to its target) counts against every broker that receives a new replica and
against the broker the data comes from, the partition's leader (as Cruise Control's executor counts its
per-broker concurrency). At most `cap` moves count against any broker at once. Among the moves that fit,
the receiving broker with the fewest moves coming in is served first; within that, the order is
largest-first, smallest-first or as-planned (the plan's (topic, partition) order).
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import orjson

from reassign_cli.core.copied import copied_bytes
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition
from reassign_cli.core.names import count

Order = Literal["largest-first", "smallest-first", "as-planned"]
ORDERS: tuple[Order, ...] = ("largest-first", "smallest-first", "as-planned")

RATE_WINDOW = 30.0  # seconds of samples behind the moving-average rate
AT_THROTTLE = (0.85, 1.25)  # a receiving broker copying within these shares of the throttle is held by it
PRECISION = 0.4  # a rate is judged against the throttle once it is known to within this share of it
FETCH_STEP = 1_048_576  # replica.fetch.max.bytes (Kafka's default): a follower copies in steps up to this
DIAGNOSE_WINDOW = 120.0  # seconds of samples behind a move's diagnoses (a low throttle needs long ones)


@dataclass(frozen=True, slots=True)
class Move:
    """One partition's move as the window sees it."""

    tp: TopicPartition
    index: int  # position in the plan (sorted by topic, partition)
    receivers: tuple[int, ...]  # brokers receiving a new replica, sorted
    source: int  # the partition's leader: where the data comes from
    size: int | None = None  # the leader's log in bytes; None: unknown

    @property
    def brokers(self) -> tuple[int, ...]:
        """Every broker this move counts against (receivers and the source), sorted, no repeats."""
        return tuple(sorted({*self.receivers, self.source}))

    @property
    def total_bytes(self) -> int:
        """Bytes the move copies: the leader's log to each receiver (0 when the size is unknown)."""
        return (self.size or 0) * len(self.receivers)


def make_moves(
    entries: Sequence[PlanEntry], state: ClusterState, sizes: Mapping[TopicPartition, int] | None = None
) -> list[Move]:
    """One Move per plan entry, in plan order. Sources and receivers as Kafka's move map counts them
    (origin replicas while a partition reassigns); the source is the partition's leader when `state`
    knows it, otherwise its first origin replica (the preferred leader)."""
    out: list[Move] = []
    for i, e in enumerate(entries):
        topic = state.topics.get(e.topic)
        origin = list(topic.origin(e.partition)) if topic and e.partition in topic.replicas else []
        leader = topic.leader.get(e.partition, -1) if topic else -1
        source = leader if leader >= 0 else (origin[0] if origin else e.replicas[0])
        receivers = tuple(sorted({b for b in e.replicas if b not in origin}))
        size = sizes.get((e.topic, e.partition)) if sizes is not None else None
        out.append(Move((e.topic, e.partition), i, receivers, source, size))
    return out


def default_order(moves: Iterable[Move]) -> Order:
    """largest-first when every size is known, else as-planned."""
    return "largest-first" if all(m.size is not None for m in moves) else "as-planned"


def _order_key(m: Move, order: Order) -> tuple[int, int]:
    if order == "largest-first":
        return (-(m.size or 0), m.index)
    if order == "smallest-first":
        return (m.size or 0, m.index)
    return (0, m.index)


order_key = _order_key  # public: core.run_plan lists a queue in this order


class Queue:
    """The moves still to start, kept in lanes of moves that load the same brokers (so that a fill looks
    at one head per lane, not at every queued move)."""

    def __init__(self, moves: Iterable[Move], order: Order) -> None:
        self.order = order
        lanes: dict[tuple[tuple[int, ...], int], list[Move]] = {}
        for m in moves:
            lanes.setdefault((m.receivers, m.source), []).append(m)
        self._lanes = {k: deque(sorted(v, key=lambda m: _order_key(m, order))) for k, v in lanes.items()}
        self._queued = {m.tp for v in lanes.values() for m in v}

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, tp: object) -> bool:
        return tp in self._queued

    def moves(self) -> list[Move]:
        """Every queued move, in plan order."""
        return sorted((m for lane in self._lanes.values() for m in lane if m.tp in self._queued), key=_idx)

    def heads(self, n: int) -> list[Move]:
        """The first `n` queued moves of each lane, in queue order within it: the moves that can start next
        (the window throttles them ahead)."""
        out: list[Move] = []
        for lane in self._lanes.values():
            k = 0
            for m in lane:
                if k >= n:
                    break
                if m.tp in self._queued:
                    out.append(m)
                    k += 1
        return out

    def put_back(self, moves: Sequence[Move]) -> None:
        """Moves taken but not started go back to the front of their lanes."""
        for m in reversed(moves):
            self._lanes.setdefault((m.receivers, m.source), deque()).appendleft(m)
            self._queued.add(m.tp)

    def discard(self, tp: TopicPartition) -> None:
        """Leave a move out (it finished or started elsewhere)."""
        self._queued.discard(tp)

    def take(self, running: Iterable[Move], cap: int) -> list[Move]:
        """Take the moves to start now, in order, given the moves running: every move that fits under the
        cap, the emptiest receiving broker first. With nothing running, at least one move is taken."""
        load: Counter[int] = Counter()
        incoming: Counter[int] = Counter()
        for m in running:
            load.update(m.brokers)
            incoming.update(m.receivers)
        picked: list[Move] = []
        while True:
            best: tuple[tuple[int, int, int], tuple[tuple[int, ...], int]] | None = None
            for key, lane in self._lanes.items():
                while lane and lane[0].tp not in self._queued:
                    lane.popleft()
                if not lane:
                    continue
                head = lane[0]
                if any(load[b] >= cap for b in head.brokers):
                    continue
                rank = (min((incoming[b] for b in head.receivers), default=-1), *_order_key(head, self.order))
                if best is None or rank < best[0]:
                    best = (rank, key)
            if best is None:
                self._lanes = {k: v for k, v in self._lanes.items() if v}
                return picked
            m = self._lanes[best[1]].popleft()
            self._queued.discard(m.tp)
            load.update(m.brokers)
            incoming.update(m.receivers)
            picked.append(m)


def _idx(m: Move) -> int:
    return m.index


def batches(moves: Sequence[Move], cap: int, order: Order) -> list[list[Move]]:
    """The window as batches (ZooKeeper's trigger takes one at a time): each batch fills an empty window."""
    queue = Queue(moves, order)
    out: list[list[Move]] = []
    while len(queue):
        out.append(queue.take((), cap))
    return out


def in_flight(moves: Iterable[Move]) -> dict[int, int]:
    """Moves counted against each broker."""
    load: Counter[int] = Counter()
    for m in moves:
        load.update(m.brokers)
    return dict(sorted(load.items()))


# ---------------------------------------------------------------------------------------------
# byte progress, rate, ETA
# ---------------------------------------------------------------------------------------------


def move_copied(move: Move, leader_size: int | None, replica_sizes: Mapping[int, int]) -> tuple[int, int]:
    """(bytes copied, bytes to copy) of a running move: each receiver's replica against the leader's log
    (a replica not created yet counts 0; one longer than the leader counts as caught up)."""
    size = leader_size if leader_size is not None else (move.size or 0)
    return copied_bytes(size, (replica_sizes.get(b, 0) for b in move.receivers))


@dataclass(slots=True)
class Snapshot:
    """The window's numbers at one poll."""

    copied: int
    total: int
    rate: float | None  # bytes/s, moving average; None until two samples
    eta: float | None  # seconds; None while the rate is unknown or zero
    running: int
    queued: int
    done: int

    @property
    def fraction(self) -> float:
        return self.copied / self.total if self.total else 0.0


@dataclass(slots=True)
class Meter:
    """Bytes copied over time: a moving average over the last `span` seconds."""

    span: float = RATE_WINDOW
    samples: deque[tuple[float, int]] = field(default_factory=deque)

    def add(self, now: float, copied: int) -> float | None:
        """Note a sample; the rate (bytes/s) over the span, None until there are two samples."""
        self.samples.append((now, copied))
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.span:
            self.samples.popleft()
        (t0, c0), (t1, c1) = self.samples[0], self.samples[-1]
        if t1 <= t0:
            return None
        return max(c1 - c0, 0) / (t1 - t0)


def eta(
    copied: int, total: int, rate: float | None, moves_left: int = 0, overhead: float = 0.0, parallel: int = 1
) -> float | None:
    """The bytes left at `rate`, plus the fixed cost of each move left (`overhead` seconds: the poll that
    sees it end, the controller completing it, the next start), `parallel` of them at a time."""
    if rate is None or rate <= 0:
        return None
    return max(total - copied, 0) / rate + overhead * moves_left / max(parallel, 1)


@dataclass(slots=True)
class Overhead:
    """Each move's fixed cost beyond its bytes: from the poll that first saw its bytes all copied to the
    poll that saw it end, plus what starting it took. Time is passed in."""

    full: dict[TopicPartition, float] = field(default_factory=dict)
    start_cost: dict[TopicPartition, float] = field(default_factory=dict)
    samples: list[float] = field(default_factory=list)

    def started(self, tps: Iterable[TopicPartition], cost: float) -> None:
        for tp in tps:
            self.start_cost[tp] = cost

    def copied(self, tp: TopicPartition, done: int, total: int, now: float) -> None:
        if total and done >= total:
            self.full.setdefault(tp, now)

    def ended(self, tp: TopicPartition, now: float) -> None:
        full = self.full.pop(tp, None)
        cost = self.start_cost.pop(tp, 0.0)
        if full is not None:
            self.samples.append(now - full + cost)

    @property
    def mean(self) -> float:
        return sum(self.samples) / len(self.samples) if self.samples else 0.0


def human_bytes(n: float) -> str:
    """1.2 GiB, 48.1 MiB, 512 B."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def rate_text(rate: float | None) -> str:
    """`48.1 MiB/s`; before two samples, `rate not measured yet` (never a placeholder that reads as 0)."""
    return f"{human_bytes(rate)}/s" if rate is not None else "rate not measured yet"


def eta_text(eta: float | None) -> str:
    return f"ETA {clock(eta)}" if eta is not None else "ETA unknown"


def moves_text(s: Snapshot) -> str:
    """`2 moving, 9 queued, 1 done`; at the end, `3 done`."""
    if s.running == 0 and s.queued == 0:
        return f"{s.done} done"
    return f"{s.running} moving, {s.queued} queued, {s.done} done"


def progress_line(s: Snapshot) -> str:
    """`copied 1.2 GiB of 4.7 GiB (26%), 48.1 MiB/s, ETA 0:01:14; 2 moving, 9 queued, 1 done`; once every
    move has ended, no ETA: `copied 4.7 GiB of 4.7 GiB (100%), 45.0 MiB/s; 12 done`."""
    head = f"copied {human_bytes(s.copied)} of {human_bytes(s.total)} ({s.fraction:.0%}), {rate_text(s.rate)}"
    if s.running or s.queued:
        head += f", {eta_text(s.eta)}"
    return f"{head}; {moves_text(s)}"


def closing_line(partitions: int, seconds: float, copied: int | None = None) -> str:
    """The last line of a waiting execute: `8 partitions, 6.5 MiB in 0:00:38` (bytes when measured)."""
    what = count(partitions, "partition")
    if copied is not None:
        what += f", {human_bytes(copied)}"
    return f"{what} in {clock(seconds)}"


# ---------------------------------------------------------------------------------------------
# stuck moves and diagnosis
# ---------------------------------------------------------------------------------------------


class Stalls:
    """Running moves whose copied bytes have not grown for `limit` seconds: each move reported once per
    stall (it is reported again after it grew and stalled again)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._best: dict[TopicPartition, tuple[int, float]] = {}
        self._told: set[TopicPartition] = set()

    def update(self, copied: Mapping[TopicPartition, int], now: float) -> list[tuple[TopicPartition, float]]:
        """(move, seconds without growth) for each running move that has just passed the limit."""
        out = []
        best = {}
        for tp, c in copied.items():
            last = self._best.get(tp)
            if last is None or c > last[0]:
                best[tp] = (c, now)
                self._told.discard(tp)
                continue
            best[tp] = last
            if now - last[1] >= self.limit and tp not in self._told:
                self._told.add(tp)
                out.append((tp, now - last[1]))
        self._best = best
        self._told &= set(copied)
        return sorted(out)


@dataclass(frozen=True, slots=True)
class Span:
    """Bytes a move gained over `seconds` (a moving replica's size; a leader's log). A follower copies in
    fetches of up to FETCH_STEP bytes, so a copy's count is uncertain by one step per receiving replica:
    `steps` of them."""

    gained: float
    seconds: float
    steps: int = 1

    @property
    def low(self) -> float:
        return max(self.gained - self.steps * FETCH_STEP, 0.0) / self.seconds

    @property
    def high(self) -> float:
        return (self.gained + self.steps * FETCH_STEP) / self.seconds

    @property
    def rate(self) -> float:
        return self.gained / self.seconds


def span(meter: Meter | None, steps: int = 1) -> Span | None:
    """The meter's samples as a Span; None with fewer than two samples or no time between them."""
    if meter is None or len(meter.samples) < 2:
        return None
    (t0, c0), (t1, c1) = meter.samples[0], meter.samples[-1]
    return Span(c1 - c0, t1 - t0, steps) if t1 > t0 else None


def mid_move(target: Sequence[int], current: Sequence[int]) -> bool:
    """Replicas that hold the whole target and more: the set a move passes through (the target and the
    origin), not where one that was cancelled or changed ends."""
    return set(target) < set(current)


def at_throttle(spans: Iterable[Span], throttle: int | None) -> bool:
    """A receiving broker's copies (one Span per move into it, bytes per receiver) sit at the throttle: the
    throttle, not the brokers, is the limit. Judged only once measured to within PRECISION of the
    throttle (a low throttle takes longer), and never far above it (a new replica's first fetches pass
    before the quota has measured them)."""
    if throttle is None or throttle <= 0:
        return False
    got = list(spans)
    if not got:
        return False
    low, high = sum(s.low for s in got), sum(s.high for s in got)
    band_low, band_high = AT_THROTTLE
    return high - low <= PRECISION * throttle and high >= band_low * throttle and low <= band_high * throttle


def copy_limit(copy: Span, throttle: int | None, sharing: int = 1) -> float:
    """The most this move can be copying per receiver: what was measured (plus a fetch's worth), and at
    most its share of the throttle (`sharing` moves into the same brokers)."""
    return copy.high if throttle is None else min(copy.high, throttle / max(sharing, 1))


def catch_up_throttle(growth: float, limit: float, throttle: int | None, sharing: int = 1) -> int | None:
    """The leader's log grows at `growth` B/s and the copy can go at most `limit` B/s (copy_limit): None when
    the copy can gain on the log. Otherwise, when the throttle is the limit (the copy could go at least
    AT_THROTTLE[0] of its share: `throttle` divided by the `sharing` moves into the same brokers; Kafka's
    quota holds a copy a little under the rate), a --throttle that would let it finish: twice the growth
    per move sharing the broker's throttle (the copy then gains on the log at its growth rate). 0 when
    the brokers (disk, network) are the limit: no throttle given, or the copy goes well below its share
    of the throttle, so a higher throttle would not help."""
    if growth <= 0 or limit > growth:
        return None
    if throttle is None or throttle <= 0 or limit < AT_THROTTLE[0] * throttle / max(sharing, 1):
        return 0
    return catch_up_rate(growth, sharing)


def catch_up_rate(growth: float, sharing: int = 1) -> int:
    """The rate a throttle shared by `sharing` moves needs for a move whose leader's log grows at `growth`
    B/s to finish: twice the growth per sharing move (the copy then gains on the log at its growth rate),
    one byte over. catch_up_throttle's suggestion, and the adaptive throttle's floor (core.autothrottle)."""
    return int(2 * growth * max(sharing, 1)) + 1


# ---------------------------------------------------------------------------------------------
# the cap kept for --resume
# ---------------------------------------------------------------------------------------------

PACE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Pace:
    """The cap and order a plan runs with, as kept for `execute --resume` (ops.pace_file.PaceFile), and the
    rates it was given (a resume without --throttle keeps throttling the moves it starts; verify's hint
    names them)."""

    cap: int | None  # None: a --batch-size run (batch_size set)
    order: Order | None  # None: the default (largest-first with sizes, else as-planned)
    throttle: int | None = None
    log_dir_throttle: int | None = None
    batch_size: int | None = None  # a --batch-size run, kept the same way (its cap is None)
    dir_cap: int | None = None  # --max-moves-per-disk: the log-dir moves' pacing, kept with the run
    one_broker: bool = False  # --one-broker-at-a-time, kept the same way


RATE_KEYS = {"throttle": "throttle", "replica_alter_log_dirs_throttle": "log_dir_throttle"}


def plan_digest(plan: bytes) -> str:
    """The plan file's bytes, hashed: a kept cap is for this very plan only."""
    return hashlib.sha256(plan).hexdigest()


def dump_pace(pace: Pace, plan: bytes) -> bytes:
    """`{"max_moves_per_broker":2,"order":null,"plan_sha256":"...","version":1}` and a newline (and
    "throttle", "replica_alter_log_dirs_throttle" in B/s when given); a --batch-size run:
    `{"batch_size":N,"plan_sha256":"...","version":1}`; with the log-dir pacing given,
    "max_moves_per_disk": N and "one_broker_at_a_time": true."""
    doc: dict[str, object] = {"version": PACE_VERSION, "plan_sha256": plan_digest(plan)}
    if pace.cap is not None:
        doc |= {"max_moves_per_broker": pace.cap, "order": pace.order}
    else:
        doc["batch_size"] = pace.batch_size
    for key, attr in RATE_KEYS.items():
        if getattr(pace, attr) is not None:
            doc[key] = getattr(pace, attr)
    if pace.dir_cap is not None:
        doc["max_moves_per_disk"] = pace.dir_cap
    if pace.one_broker:
        doc["one_broker_at_a_time"] = True
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)


def read_pace(data: bytes) -> tuple[Pace, str] | None:
    """(the pace, the SHA-256 of the plan it was kept for); None when `data` is not one (malformed,
    another version)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or doc.get("version") != PACE_VERSION:
        return None
    cap, order, size = doc.get("max_moves_per_broker"), doc.get("order"), doc.get("batch_size")
    if not _count(cap) and not (cap is None and order is None and _count(size)):
        return None
    if (order is not None and order not in ORDERS) or (cap is not None and size is not None):
        return None
    rates = {attr: doc.get(key) for key, attr in RATE_KEYS.items()}
    if any(v is not None and (type(v) is not int or v < 0) for v in rates.values()):
        return None
    digest = doc.get("plan_sha256")
    dir_cap, one_broker = doc.get("max_moves_per_disk"), doc.get("one_broker_at_a_time", False)
    if (
        not isinstance(digest, str)
        or not (dir_cap is None or _count(dir_cap))
        or type(one_broker) is not bool
    ):
        return None
    return Pace(cap, order, batch_size=size, dir_cap=dir_cap, one_broker=one_broker, **rates), digest


def _count(value: object) -> bool:
    return type(value) is int and value >= 1


def load_pace(data: bytes, plan: bytes) -> Pace | None:
    """The kept pace of `plan`; None when `data` is not one (malformed, another version) or was kept for
    another plan (its bytes changed since)."""
    found = read_pace(data)
    if found is None or found[1] != plan_digest(plan):
        return None
    return found[0]
