"""The autopilot's decision of one tick (issue 26), with no plan stored: pure, plain data in and out.

Used by `kafka-reassign rebalance` (ops/autopilot.py, cli/rebalance.py; docs/autopilot.md). A tick
reads the cluster, keeps the known-broker `Ledger` beside the stored plan (`update`), calls `decide`,
and on `rebalance` plans with `--balance bytes` (replicas when sizes are unknown) at `--tolerance`,
cuts the plan with `limit_plan`, and on `heal` re-places the dead brokers' replicas in `heal_order`.
`tick_metrics` is what it writes to `--metrics-file`. Time is passed in (seconds since the epoch).

The rules of `decide` (the issue's item 2), judged over B = the registered brokers minus
`--exclude-brokers`, with the planner's goals and bands (core/bands.py, the same functions
planning/balanced/bytes.py plans with):
- a broker of B holds no replica, where its count band's low edge is at least 1 (with fewer replicas
  than brokers someone stays empty whatever a plan does: judging that would flap);
- bytes (utilization when every broker of B has a capacity above 0) outside goal ± max(trigger × goal,
  the largest partition). The largest partition is the cluster's largest (the largest of the brokers'
  `largest`), as in the planner's outer band. The issue says "the largest partition on it"; a broker
  holding only small partitions next to a giant one then has a band the planner does not promise
  (mean 100, partitions 100, 10, 10 on three brokers: the two at 10 would be judged out forever);
- replica count outside the planner's count band (mean ± 10%, rounded out; with capacities and sizes,
  its capacity's share of the mean), widened to `BrokerState.forced_counts` where the rack rule forces
  more (the planner's `replica_range`, given by the caller);
- preferred leaders spread by more than LEADER_SPREAD (or the caller's `leader_floor`, the least spread
  the current replica sets allow): the most leaders of a broker that could lead fewer, less the fewest
  of one that could lead more (see `_judge_leaders`).
The goal counts every byte and replica of the brokers given, so replicas on an excluded or unregistered
broker count towards B's goal, as they land on B in a plan.

Order of the kinds: `skipped` (paused: the standing pause, ops/standing_pause.py; or a reassignment not
ours in progress), then `wait` (a broker
that held replicas is missing and not yet dead: nothing starts, not even a heal of another broker, so a
rolling restart never moves data), then `heal` (a dead broker), then `rebalance` or `balanced`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from reassign_cli.core import bands
from reassign_cli.core.model import Assignment, TopicPartition

TRIGGER = 0.10  # --trigger's default
DEAD_AFTER = 1800.0  # --dead-after's default, seconds
LEADER_SPREAD = 2  # preferred leaders spread by more than this: rebalance
KINDS = ("balanced", "rebalance", "heal", "wait", "skipped")
METRIC_DECISIONS = ("balanced", "planned", "stepping", "held", "skipped")


@dataclass(frozen=True, slots=True)
class BrokerState:
    """One broker as the tick sees it. `bytes`: the sizes of the partitions with a replica on it (None:
    sizes unknown); `capacity`: its log dirs' total bytes (None: unknown); `largest`: the largest
    partition with a replica on it; `forced_counts`: the least and most replicas the rack rule forces on
    it (the planner's replica_range), None when it forces nothing beyond the count band."""

    id: int
    replicas: int
    leaders: int
    registered: bool = True
    bytes: int | None = None
    capacity: int | None = None
    largest: int = 0
    forced_counts: tuple[int, int] | None = None
    must_lead: int = 0  # partitions whose only replica is on it: it leads them whatever a plan does


@dataclass(frozen=True, slots=True)
class Deviation:
    """The broker farthest from its goal: |value - goal| / goal, in `measure` (bytes, utilization or
    replicas)."""

    broker: int
    fraction: float
    measure: str

    def text(self) -> str:
        return f"{self.fraction * 100:.1f}% (broker {self.broker}, {self.measure})"


@dataclass(frozen=True, slots=True)
class Decision:
    kind: str  # one of KINDS
    reasons: tuple[str, ...]  # one line each, naming brokers and numbers
    worst: Deviation | None = None  # None: no broker in B, or nothing to measure
    dead: frozenset[int] = frozenset()  # kind heal: the dead brokers
    dead_at: Mapping[int, float] = field(default_factory=dict)  # kind wait: broker -> when it is dead

    def line(self) -> str:
        """The one line the tick logs."""
        if self.kind == "balanced":
            worst = self.worst.text() if self.worst is not None else "nothing to measure"
            return f"balanced: worst deviation {worst}"
        return f"{self.kind}: " + "; ".join(self.reasons)


# ---------------------------------------------------------------------------------------------
# The known-broker ledger
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ledger:
    """The brokers that have held replicas, each with the time it was first seen missing (None while
    registered). Bounded: a broker is kept only while it is registered or holds a replica, so the
    ledger never outgrows the registered brokers plus those named in partitions' replica lists. A
    missing broker holding nothing has nothing to heal or wait for and is forgotten (its replicas moved
    away, or an operator drained it); back, it is an empty broker, and the next tick fills it.

    `paused`: the standing pause (`kafka-reassign pause` with no plan stored; core/schedule.Paused's
    to_dict), kept in the same document so both stores (a znode, a topic) carry it with one fenced write;
    None when none stands. Every `update` keeps it as it is."""

    missing_since: Mapping[int, float | None] = field(default_factory=dict)
    paused: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"brokers": {str(b): self.missing_since[b] for b in sorted(self.missing_since)}}
        if self.paused:
            out["paused"] = dict(self.paused)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ledger:
        raw = data.get("brokers", {})
        if not isinstance(raw, Mapping):
            raise ValueError("ledger: 'brokers' is not an object")
        out: dict[int, float | None] = {}
        for key, value in raw.items():
            if value is not None and not isinstance(value, int | float):
                raise ValueError(f"ledger: broker {key}: missing-since is not a number")
            out[int(key)] = None if value is None else float(value)
        paused = data.get("paused")
        if paused is not None and not isinstance(paused, Mapping):
            raise ValueError("ledger: 'paused' is not an object")
        return cls(out, dict(paused) if paused else None)


def update(ledger: Ledger, registered: Iterable[int], holding: Iterable[int], now: float) -> Ledger:
    """The ledger after a look at the cluster: brokers holding replicas join; a registered one has no
    missing time (one back before --dead-after clears it); a missing one keeps its first-missing time
    (or gets `now`); a missing one holding nothing is forgotten."""
    reg, held = set(registered), set(holding)
    out: dict[int, float | None] = {}
    for b in sorted(set(ledger.missing_since) | held):
        if b in reg:
            out[b] = None
        elif b in held:
            since = ledger.missing_since.get(b)
            out[b] = now if since is None else since
    return Ledger(out, ledger.paused)


def dead(ledger: Ledger, now: float, dead_after: float = DEAD_AFTER) -> frozenset[int]:
    """The brokers missing for dead_after seconds or more."""
    return frozenset(b for b, t in ledger.missing_since.items() if t is not None and now - t >= dead_after)


def missing(ledger: Ledger, now: float, dead_after: float = DEAD_AFTER) -> dict[int, float]:
    """The brokers missing and not yet dead, each with the time it becomes dead."""
    return {
        b: t + dead_after
        for b, t in sorted(ledger.missing_since.items())
        if t is not None and now - t < dead_after
    }


# ---------------------------------------------------------------------------------------------
# The decision
# ---------------------------------------------------------------------------------------------


def decide(
    brokers: Sequence[BrokerState],
    *,
    trigger: float = TRIGGER,
    exclude: Iterable[int] = (),
    ledger: Ledger | None = None,
    now: float = 0.0,
    dead_after: float = DEAD_AFTER,
    foreign: str | None = None,
    paused: str | None = None,
    leader_floor: int = 0,
) -> Decision:
    """The tick's decision (see the module's docstring for the rules and their order). `ledger`: already
    `update`d with this look at the cluster; `foreign`: a line naming a reassignment in progress that
    is not ours (whose, which partitions); `paused`: the pause line; `leader_floor`: the least spread of
    preferred leaders the current replica sets allow, when the caller knows it (the planner's leader
    step on the current rows): the leader rule fires only beyond it."""
    if paused is not None:
        return Decision("skipped", (paused,))
    if foreign is not None:
        return Decision("skipped", (f"a reassignment not ours is in progress: {foreign}",))
    led = ledger if ledger is not None else Ledger()
    waiting = missing(led, now, dead_after)
    if waiting:
        lines = tuple(
            f"broker {b} is missing (for {now - (t - dead_after):.0f} s): dead in {t - now:.0f} s "
            f"(at {_utc(t)}) unless it comes back; nothing starts until then"
            for b, t in waiting.items()
        )
        return Decision("wait", lines, dead_at=waiting)
    gone = dead(led, now, dead_after)
    if gone:
        lines = tuple(
            f"broker {b} has been missing for {now - (led.missing_since[b] or 0.0):.0f} s "
            f"(--dead-after {dead_after:.0f} s): its replicas go to live brokers"
            for b in sorted(gone)
        )
        return Decision("heal", lines, dead=gone)
    excluded = set(exclude)
    b_set = [b for b in brokers if b.registered and b.id not in excluded]
    reasons, worst = judge(brokers, b_set, trigger, max(LEADER_SPREAD, leader_floor))
    return Decision("rebalance" if reasons else "balanced", tuple(reasons), worst)


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def judge(
    everyone: Sequence[BrokerState], b_set: Sequence[BrokerState], trigger: float, spread: int = LEADER_SPREAD
) -> tuple[list[str], Deviation | None]:
    """(the rebalance reasons over B, the worst deviation): empty brokers, bytes, counts, leaders."""
    if not b_set:
        return [], None
    count_low, count_high, share = _count_band(everyone, b_set)
    reasons = [
        f"broker {b.id} holds no replica"
        for b, low in zip(b_set, count_low.tolist(), strict=True)
        if b.replicas == 0 and low >= 1
    ]
    byte_reasons, worst = _judge_bytes(everyone, b_set, trigger, share)
    reasons += byte_reasons
    reasons += _judge_counts(b_set, count_low, count_high, share is not None)
    reasons += _judge_leaders(b_set, spread)
    if worst is None:
        worst = _count_worst(everyone, b_set, share)
    return reasons, worst


def _judge_leaders(b_set: Sequence[BrokerState], spread: int) -> list[str]:
    """Preferred leaders spread by more than `spread`, from the most leaders of a broker that could lead
    fewer (it leads more than its `must_lead`) to the fewest of one that could lead more (it holds
    replicas it does not lead): a broker leading every replica it holds is short of replicas, not of
    leaders (the count rules judge that), and with one replica per partition leaders follow the counts,
    which capacities make uneven on purpose."""
    able = [b for b in b_set if b.leaders < b.replicas]
    givers = [b for b in b_set if b.leaders > b.must_lead]
    if not able or not givers:
        return []
    hi = max(givers, key=lambda b: (b.leaders, -b.id))
    lo = min(able, key=lambda b: (b.leaders, b.id))
    if hi.leaders - lo.leaders <= spread:
        return []
    return [
        f"preferred leaders spread by {hi.leaders - lo.leaders} (broker {hi.id}: {hi.leaders}, "
        f"broker {lo.id}: {lo.leaders} of its {lo.replicas} replicas; at most {spread})"
    ]


def _shares(everyone: Sequence[BrokerState], b_set: Sequence[BrokerState]) -> np.ndarray | None:
    """Capacity shares when sizes and every capacity of B are known (above 0), as the planner."""
    if any(b.bytes is None for b in everyone) or any(b.capacity is None or b.capacity <= 0 for b in b_set):
        return None
    return bands.capacity_shares(np.array([b.capacity for b in b_set], dtype=np.int64))


def _count_band(
    everyone: Sequence[BrokerState], b_set: Sequence[BrokerState]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    share = _shares(everyone, b_set)
    mean = sum(b.replicas for b in everyone) / len(b_set)
    even = np.full(len(b_set), mean)
    low, high = bands.count_band(even if share is None else mean * share)
    if share is not None:
        # Also the even counts (floor..ceil of the mean): the planner's band with capacities holds them
        # where racks of unequal capacity force them; elsewhere it is narrower, and a wider judge only
        # leaves alone what the planner would not have planned (no flapping either way).
        low, high = (
            np.minimum(low, bands.count_band(even, 0.0)[0]),
            np.maximum(high, bands.count_band(even, 0.0)[1]),
        )
    for i, b in enumerate(b_set):
        if b.forced_counts is not None:
            low[i] = min(int(low[i]), b.forced_counts[0])
            high[i] = max(int(high[i]), b.forced_counts[1])
    return low, high, share


def _judge_counts(b_set: Sequence[BrokerState], low: np.ndarray, high: np.ndarray, shared: bool) -> list[str]:
    pct = f"{bands.COUNT_BAND:.0%}"
    of = f"its capacity's share of the mean count ±{pct}, or the mean" if shared else f"the mean count ±{pct}"
    return [
        f"broker {b.id}: {b.replicas} replicas, outside {lo}-{hi} ({of})"
        for b, lo, hi in zip(b_set, low.tolist(), high.tolist(), strict=True)
        if b.replicas > 0 and not lo <= b.replicas <= hi
    ]


def _judge_bytes(
    everyone: Sequence[BrokerState], b_set: Sequence[BrokerState], trigger: float, share: np.ndarray | None
) -> tuple[list[str], Deviation | None]:
    if any(b.bytes is None for b in everyone):
        return [], None
    total = float(sum(b.bytes or 0 for b in everyone))
    goal = bands.byte_goals(total / len(b_set), share, len(b_set))
    lo, hi = bands.outer_band(goal, trigger, float(max(b.largest for b in everyone)))
    x = np.array([b.bytes for b in b_set], dtype=np.float64)
    dev = np.abs(x - goal) / np.where(goal > 0, goal, 1)
    i = int(np.argmax(dev))
    measure = "bytes" if share is None else "utilization"
    worst = Deviation(b_set[i].id, float(dev[i]), measure)
    reasons = []
    for j, b in enumerate(b_set):
        if b.replicas == 0 or lo[j] - 1e-6 <= x[j] <= hi[j] + 1e-6:
            continue  # an empty broker has its own line (or is within the band: see `judge`)
        if share is None:
            reasons.append(f"broker {b.id}: {_bytes_band(x[j], lo[j], hi[j], goal[j], trigger)}")
        else:
            cap = float(b.capacity or 1)
            said = _utilization_band(x[j] / cap, lo[j] / cap, hi[j] / cap, goal[j] / cap, trigger)
            reasons.append(f"broker {b.id}: {said}")
    return reasons, worst


def _utilization_band(x: float, lo: float, hi: float, goal: float, trigger: float) -> str:
    """`61.0% used, outside 40.0-50.0% (goal 45.0%, trigger 10%)`, with as many decimals as it takes
    (up to 6) for the band's ends to differ and the value to differ from both: a few MB on a disk of
    hundreds of GB said "0.0% used, outside 0.0-0.0%", which no one can act on."""
    digits = 1
    while digits < 6 and (
        f"{lo:.{digits}%}" == f"{hi:.{digits}%}"
        or f"{x:.{digits}%}" in (f"{lo:.{digits}%}", f"{hi:.{digits}%}")
    ):
        digits += 1
    band = f"{lo * 100:.{digits}f}-{hi:.{digits}%}"
    return f"{x:.{digits}%} used, outside {band} (goal {goal:.{digits}%}, trigger {trigger:.0%})"


def _bytes_band(x: float, lo: float, hi: float, goal: float, trigger: float) -> str:
    """`61.0 GiB, outside 40.0-50.0 GiB (goal 45.0 GiB, trigger 10%)`, in the goal's unit."""
    power = 0
    while power < 4 and abs(goal) >= 1024 ** (power + 1):
        power += 1
    unit = ("B", "KiB", "MiB", "GiB", "TiB")[power]
    f = 1024.0**power

    def n(v: float) -> str:
        return f"{v / f:.1f}"

    return f"{n(x)} {unit}, outside {n(lo)}-{n(hi)} {unit} (goal {n(goal)} {unit}, trigger {trigger:.0%})"


def _count_worst(
    everyone: Sequence[BrokerState], b_set: Sequence[BrokerState], share: np.ndarray | None
) -> Deviation | None:
    mean = sum(b.replicas for b in everyone) / len(b_set)
    if mean <= 0:
        return None
    goal = np.full(len(b_set), mean) if share is None else mean * share
    dev = np.abs(np.array([b.replicas for b in b_set], dtype=np.float64) - goal) / goal
    i = int(np.argmax(dev))
    return Deviation(b_set[i].id, float(dev[i]), "replicas")


# ---------------------------------------------------------------------------------------------
# Limiting a plan per tick
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Move:
    """One partition's move, taken whole: its replicas before and after, the bytes it copies (its size
    times the brokers it adds; 0 when sizes are unknown) and its gain (see `limit_plan`)."""

    topic: str
    partition: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    bytes: int
    gain: float


@dataclass(frozen=True, slots=True)
class Limited:
    proposed: Assignment  # the moves taken, as a reassignment (topic -> partition -> replicas)
    taken: tuple[Move, ...]  # in order of gain
    left: tuple[Move, ...]  # for later ticks, in order of gain
    too_large: tuple[Move, ...]  # each alone copies more than --max-bytes: never taken by a limit
    bytes: int  # bytes the moves taken copy


def limit_plan(
    current: Mapping[str, Mapping[int, Sequence[int]]],
    proposed: Mapping[str, Mapping[int, Sequence[int]]],
    sizes: Mapping[str, Mapping[int, int]] | None = None,
    *,
    max_moves: int | None = None,
    max_bytes: int | None = None,
    loads: Mapping[int, float] | None = None,
    goals: Mapping[int, float] | None = None,
) -> Limited:
    """The proposed plan cut to what one tick starts. Each partition whose replica set or order changes
    is one move, taken whole (so each keeps the plan's rack rule and replication factor). A move's gain
    is how much it alone, applied to the cluster now, cuts the sum over brokers of (load - goal)²: loads
    in bytes, or in replicas when `sizes` is None (then --max-bytes cannot be judged and only
    `max_moves` applies). `loads` default to the current assignment's; `goals` to the mean of the loads
    once the whole plan is done, over the brokers in the plan or in `loads`. Moves are ranked by gain
    (largest first), then topic and partition; the moves larger than `max_bytes` alone are set aside
    (`too_large`), and the longest prefix of the rest within both limits is taken."""
    moves = _moves(current, proposed, sizes)
    load, goal = _loads_goals(moves, sizes, current_loads(current, sizes) if loads is None else loads, goals)
    ranked = sorted(
        (_with_gain(m, load, goal, sizes) for m in moves), key=lambda m: (-m.gain, m.topic, m.partition)
    )
    limit_b = max_bytes if sizes is not None else None
    too_large = tuple(m for m in ranked if limit_b is not None and m.bytes > limit_b)
    fit = [m for m in ranked if limit_b is None or m.bytes <= limit_b]
    taken: list[Move] = []
    total = 0
    for m in fit:
        if (max_moves is not None and len(taken) >= max_moves) or (
            limit_b is not None and total + m.bytes > limit_b
        ):
            break
        taken.append(m)
        total += m.bytes
    out: Assignment = {}
    for m in taken:
        out.setdefault(m.topic, {})[m.partition] = list(m.after)
    return Limited(out, tuple(taken), tuple(fit[len(taken) :]), too_large, total)


def _moves(
    current: Mapping[str, Mapping[int, Sequence[int]]],
    proposed: Mapping[str, Mapping[int, Sequence[int]]],
    sizes: Mapping[str, Mapping[int, int]] | None,
) -> list[Move]:
    out = []
    for t in sorted(proposed):
        for p in sorted(proposed[t]):
            before = tuple(current.get(t, {}).get(p, ()))
            after = tuple(proposed[t][p])
            if before == after:
                continue
            size = sizes.get(t, {}).get(p, 0) if sizes is not None else 0
            out.append(Move(t, p, before, after, size * len(set(after) - set(before)), 0.0))
    return out


def _loads_goals(
    moves: Sequence[Move],
    sizes: Mapping[str, Mapping[int, int]] | None,
    loads: Mapping[int, float],
    goals: Mapping[int, float] | None,
) -> tuple[dict[int, float], dict[int, float]]:
    load = {b: float(v) for b, v in loads.items()}
    if goals is not None:
        return load, {b: float(v) for b, v in goals.items()}
    after = dict(load)
    for m in moves:
        unit = float(sizes.get(m.topic, {}).get(m.partition, 0)) if sizes is not None else 1.0
        for b, d in _delta(m).items():
            after[b] = after.get(b, 0.0) + unit * d
    members = set(load) | {b for m in moves for b in m.after}
    mean = sum(after.get(b, 0.0) for b in members) / len(members) if members else 0.0
    return load, dict.fromkeys(members, mean)


def _delta(m: Move) -> dict[int, int]:
    out = dict.fromkeys(set(m.before) | set(m.after), 0)
    for b in set(m.after) - set(m.before):
        out[b] += 1
    for b in set(m.before) - set(m.after):
        out[b] -= 1
    return out


def _with_gain(
    m: Move,
    load: Mapping[int, float],
    goal: Mapping[int, float],
    sizes: Mapping[str, Mapping[int, int]] | None,
) -> Move:
    unit = float(sizes.get(m.topic, {}).get(m.partition, 0)) if sizes is not None else 1.0
    gain = 0.0
    for b, d in _delta(m).items():
        x, g = load.get(b, 0.0), goal.get(b, 0.0)
        gain += (x - g) ** 2 - (x + unit * d - g) ** 2
    return Move(m.topic, m.partition, m.before, m.after, m.bytes, gain)


def current_loads(
    current: Mapping[str, Mapping[int, Sequence[int]]], sizes: Mapping[str, Mapping[int, int]] | None
) -> dict[int, float]:
    """Each broker's load in `current`: bytes (partitions of unknown size count 0), or replicas when
    `sizes` is None. `limit_plan`'s `loads` when the assignment covers every topic."""
    out: dict[int, float] = {}
    for t, parts in current.items():
        for p, row in parts.items():
            unit = float(sizes.get(t, {}).get(p, 0)) if sizes is not None else 1.0
            for b in set(row):
                out[b] = out.get(b, 0.0) + unit
    return out


# ---------------------------------------------------------------------------------------------
# The heal's order, and the tick's metrics
# ---------------------------------------------------------------------------------------------


def heal_order(
    replicas: Mapping[str, Mapping[int, Sequence[int]]],
    dead_brokers: Iterable[int],
    sizes: Mapping[str, Mapping[int, int]] | None = None,
    isr: Mapping[str, Mapping[int, Sequence[int]]] | None = None,
) -> list[TopicPartition]:
    """The partitions with a replica on a dead broker, most under-replicated first (the most replicas
    short of a live in-sync one: RF minus its ISR's live brokers, or its live replicas when `isr` is
    not given), then the smaller first (of equal damage, more partitions are whole again sooner;
    unknown sizes count 0), then by topic and partition."""
    gone = set(dead_brokers)
    keyed = []
    for t in sorted(replicas):
        for p in sorted(replicas[t]):
            row = list(replicas[t][p])
            if not gone & set(row):
                continue
            in_sync = isr.get(t, {}).get(p, row) if isr is not None else row
            short = len(row) - len(set(in_sync) - gone)
            size = sizes.get(t, {}).get(p, 0) if sizes is not None else 0
            keyed.append((-short, size, t, p))
    return [(t, p) for _, _, t, p in sorted(keyed)]


@dataclass(frozen=True, slots=True)
class TickMetrics:
    """What --metrics-file says of a tick: the last decision (one of METRIC_DECISIONS), the worst
    deviation before and after (a fraction of the goal; None when not measured) and the bytes planned."""

    decision: str
    worst_before: float | None = None
    worst_after: float | None = None
    bytes_planned: int = 0

    def to_dict(self) -> dict[str, Any]:
        def r(v: float | None) -> float | None:
            return None if v is None or math.isnan(v) else round(v, 4)

        return {
            "decision": self.decision,
            "worst_deviation_before": r(self.worst_before),
            "worst_deviation_after": r(self.worst_after),
            "bytes_planned": self.bytes_planned,
        }


_METRIC_OF = {
    "balanced": "balanced",
    "rebalance": "planned",
    "heal": "planned",
    "wait": "held",
    "skipped": "skipped",
}


def tick_metrics(decision: Decision, worst_after: float | None = None, bytes_planned: int = 0) -> TickMetrics:
    """The metrics of a tick that decided (a tick that stepped a stored plan reports `stepping` itself).
    A balanced tick's after is its before: it changes nothing."""
    before = decision.worst.fraction if decision.worst is not None else None
    after = before if decision.kind == "balanced" else worst_after
    return TickMetrics(_METRIC_OF[decision.kind], before, after, bytes_planned)


# ---------------------------------------------------------------------------------------------
# The heal's health exemption
# ---------------------------------------------------------------------------------------------


def without_dead(signals: Any, dead_brokers: Iterable[int]) -> Any:
    """The health signals (core/health.Signals) as a heal's step judges them: the replicas on the dead
    brokers that are still not registered, or registered and fenced, are dropped from every partition's replicas and offline
    replicas, so the damage those brokers alone explain (their replicas offline and out of the ISR, hence
    offline-replicas, under-replicated and min-isr) is the heal's own work and holds nothing. Everything
    else is as gathered: a partition with no leader, a replica out of the ISR on a live broker, a missing
    broker that is not dead yet, the controller's epoch."""
    import dataclasses

    live = signals.registered - (signals.fenced or frozenset())  # KRaft 4.x: a stopped broker stays, fenced
    gone = frozenset(dead_brokers) - live
    if not gone:
        return signals
    parts = {
        tp: dataclasses.replace(
            ph,
            replicas=tuple(b for b in ph.replicas if b not in gone),
            offline=tuple(b for b in ph.offline if b not in gone),
        )
        for tp, ph in signals.partitions.items()
    }
    return dataclasses.replace(signals, partitions=parts)
