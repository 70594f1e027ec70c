"""The adaptive throttle's decision (issue 28 items 2 to 4): `--throttle auto --min-throttle R1 --max-throttle
R2`, or `--throttle R --max-throttle R2` (the same loop starting at R), per broker and role. Pure: no I/O, no
clock; each call is given what was measured over one interval and returns the rates to write and why.

Run today by ops/rate_loop.py while execute waits (--wait, --max-moves-per-broker, --resume). The
stored plan's step (issue 25) will, every
`--throttle-interval` seconds, measure per receiving broker the bytes copied into it, call `decide`, write
`Decision.writes` (the broker config keys in ROLE_KEYS), print `Decision.lines()` and `Decision.warnings`,
keep `Change.to_dict()` as the --format json history, and keep `State.to_dict()` in the fenced record so a
restart or the next cron step resumes at the same rates. Settings (the bounds and the interval) are stored
with the plan. The operator's prior values are restored at the end as today (core.throttle's record),
whatever the loop wrote.

The rules (docs/execute-verify.md, "Adaptive throttle"):
- Roles: a follower rate on each receiving broker, a leader rate on each source feeding one, a log-dir rate
  on each broker with log-dir moves (with its own bounds).
- Start at the bounds' start (R1, or R), never below the floor.
- Raise by 25% (never above the maximum) a receiver that is throttle-bound while the guards are green, and
  the leader rate of every source feeding it (the source's throttle would cap the copy otherwise). A source
  is judged on its own too (`Observation.senders`): the bytes it sent against its leader rate (or its
  receivers' follower rates, when less); bound, its leader rate rises 25%. A source feeding several
  receivers shares one leader rate among them, so none of them looks bound against its own follower rate:
  without this judgement nothing would ever rise (issue 28 item 6).
- Halve every rate (never below the minimum nor the floor) when a guard trips, or when a follower that is
  not moving leaves the ISR of a partition led by one of our sources or receivers.
- The floor (`floors`) is core.pacing's catch-up rule: twice the leader's ingest per move sharing the
  throttle, capped at the maximum; a floor above the maximum is warned about once per broker and role.
- Throttle-bound: the bytes copied into the receiver, plus one fetch (FETCH_STEP) of slack per move copying
  into it, reach AT_THROTTLE[0] of what its rate allowed. Judged only once that slack is within PRECISION
  of the bytes allowed (core.pacing's rule for the "throttle is the limit" diagnosis); at a low rate, over
  as many intervals as it takes (State.pending), see `min_interval`.
- Write only a change of more than 10% (HYSTERESIS).

Decisions, where the issue is silent:
- What a receiver's rate allowed is the lesser of its follower rate and the sum of its sources' leader
  rates: a source's leader rate can be the cap (after a floor raised the follower alone), and judging
  against the follower rate only would then never find the receiver bound, and never raise either.
- A copy above its allowance counts as throttle-bound (core.pacing.at_throttle's upper band is left out):
  the decision must answer monotonically to more bytes copied.
- A guard or the ISR signal halves every rate the loop holds, not one broker's: both are signs that
  replication crowds out clients, and the copies into a broker pass through its sources too.
- A raise that would end 10% or less below the maximum goes to the maximum (the 10% rule would otherwise
  hold the rate short of it for good).
- The floor moves with the leaders' ingest, so the 10% rule applies to it too: a rate less than 10% below
  its floor is left as it is (the copy still gains on the log at 0.8 times its growth); one more than 10%
  below is raised to the floor.
- While a guard is tripped (or the ISR signal fires) nothing is raised, not even to a floor that rose:
  the clients come before the copy. A halving stops at the floor, or at the rate itself when the floor is
  above it.
- A rate first set in a decision (a receiver or source new to the loop) starts at the start rate, and its
  first interval is not judged: its bytes were copied under another rate.
- `--throttle R --max-throttle R2` without `--min-throttle` has R as its minimum (bounds_from_options).
- The accumulated slack uses the most moves seen over the accumulated intervals; any change written to
  the rate, and any halving, starts the judgement afresh.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from reassign_cli.core.pacing import AT_THROTTLE, FETCH_STEP, PRECISION, catch_up_rate
from reassign_cli.core.rates import human_rate
from reassign_cli.core.throttle import FOLLOWER_RATE, LEADER_RATE, LOG_DIR_RATE
from reassign_cli.errors import UsageError

Role = Literal["leader", "follower", "log-dir"]
ROLES: tuple[Role, ...] = ("leader", "follower", "log-dir")
ROLE_KEYS: dict[Role, str] = {"leader": LEADER_RATE, "follower": FOLLOWER_RATE, "log-dir": LOG_DIR_RATE}
Key = tuple[int, Role]

RAISE = (5, 4)  # a raise multiplies by 5/4 (25%)
HYSTERESIS = 0.10  # a change of this share of the rate or less is not written
DEFAULT_INTERVAL = 30.0  # --throttle-interval's default, seconds
STATE_VERSION = 1


def min_interval(rate: float, moves: int) -> float:
    """The shortest interval (seconds) over which a receiver copying at `rate` B/s for `moves` moves can be
    judged throttle-bound: its slack, one fetch per move at each end, within PRECISION of the bytes the rate
    allows. A shorter --throttle-interval still works; the judgement then spans several intervals."""
    if rate <= 0 or moves < 0:
        raise ValueError(f"min_interval: rate {rate} and moves {moves}")
    return 2 * max(moves, 1) * FETCH_STEP / (PRECISION * rate)


# ---------------------------------------------------------------------------------------------
# bounds and settings (from the options; stored with the plan)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bounds:
    """One loop's bounds in B/s: low (R1) <= start <= high (R2)."""

    low: int
    high: int
    start: int

    def __post_init__(self) -> None:
        if not 1 <= self.low <= self.start <= self.high:
            raise ValueError(f"bounds out of order: {self.low} <= {self.start} <= {self.high} does not hold")

    def to_dict(self) -> dict[str, int]:
        return {"low": self.low, "high": self.high, "start": self.start}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Bounds:
        return cls(int(data["low"]), int(data["high"]), int(data["start"]))


AUTO: Literal["auto"] = "auto"
Throttle = int | Literal["auto"] | None


def bounds_from_options(
    throttle: Throttle,
    low: int | None,
    high: int | None,
    names: tuple[str, str, str] = ("--throttle", "--min-throttle", "--max-throttle"),
) -> Bounds | None:
    """The loop's bounds from `--throttle auto|R`, `--min-throttle`, `--max-throttle` (or the log-dir
    options, named in `names`); None: no loop (a fixed rate, or none, as today). UsageError, one line, on a
    combination that makes no loop: auto without both bounds, a bound without auto or a rate, a bound below
    1 B/s, the minimum above the maximum, a starting rate outside them. `--throttle R --max-throttle R2`
    without a minimum has R as its minimum: the loop never goes below the rate the operator chose."""
    n_t, n_lo, n_hi = names
    given = [n for n, v in ((n_lo, low), (n_hi, high)) if v is not None]
    if throttle is None or (throttle != AUTO and throttle < 0):
        if given:
            raise UsageError(f"{given[0]} needs {n_t} auto or a {n_t} rate")
        return None
    if throttle == AUTO and len(given) < 2:
        raise UsageError(f"{n_t} auto needs both {n_lo} and {n_hi} (the loop's bounds)")
    for name, value in ((n_lo, low), (n_hi, high)):
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1 B/s, got {value}")
    if high is None:
        if low is not None:
            raise UsageError(f"{n_lo} needs {n_hi} (with a {n_t} rate, the loop starts at that rate)")
        return None
    start = cast(int, low) if throttle == AUTO else throttle
    floor, floor_name = (low, n_lo) if low is not None else (start, n_t)
    if floor > high:
        raise UsageError(f"{floor_name} {human_rate(floor)} is above {n_hi} {human_rate(high)}")
    if not floor <= start <= high:
        raise UsageError(
            f"{n_t} {human_rate(start)} is outside {n_lo} {human_rate(floor)} to {n_hi} {human_rate(high)}"
        )
    return Bounds(floor, high, start)


@dataclass(frozen=True, slots=True)
class Settings:
    """What the plan stores for the loop: the replication bounds, the log-dir bounds (None: that loop is
    off) and the interval (--throttle-interval, seconds)."""

    replication: Bounds | None = None
    log_dirs: Bounds | None = None
    interval: float = DEFAULT_INTERVAL

    def __post_init__(self) -> None:
        if not (math.isfinite(self.interval) and self.interval > 0):
            raise ValueError(f"the interval must be a positive number of seconds, got {self.interval}")

    def bounds(self, role: Role) -> Bounds:
        got = self.log_dirs if role == "log-dir" else self.replication
        if got is None:
            raise ValueError(f"a {role} rate to decide, but that loop has no bounds")
        return got

    def to_dict(self) -> dict[str, Any]:
        return {
            "replication": None if self.replication is None else self.replication.to_dict(),
            "log_dirs": None if self.log_dirs is None else self.log_dirs.to_dict(),
            "interval": self.interval,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settings:
        rep, ld = data.get("replication"), data.get("log_dirs")
        return cls(
            None if rep is None else Bounds.from_dict(rep),
            None if ld is None else Bounds.from_dict(ld),
            float(data.get("interval", DEFAULT_INTERVAL)),
        )


# ---------------------------------------------------------------------------------------------
# what one interval measured
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Receiver:
    """A broker receiving copies over the interval: the bytes copied into it (all its moves together), the
    moves copying into it, and the sources feeding it (their leader rates; none for log-dir moves)."""

    broker: int
    copied: int
    moves: int
    sources: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Observation:
    """One interval: its length, the receivers of inter-broker moves (follower rates; their sources get
    leader rates), the same copies seen from their sources (`senders`: Receiver(source, bytes it sent,
    copies it sends, the receivers it feeds); judged against the source's leader rate), the brokers with log-dir moves (log-dir rates), the guards (`tripped`: why one tripped,
    None while green), the ISR signal (`isr_left`: which non-moving follower left the ISR of a partition
    led by a source or receiver of ours, None if none did), and the floors (`floors`)."""

    seconds: float
    receivers: tuple[Receiver, ...] = ()
    disks: tuple[Receiver, ...] = ()
    tripped: str | None = None
    isr_left: str | None = None
    floors: Mapping[Key, int] = field(default_factory=dict)
    senders: tuple[Receiver, ...] = ()  # per source: the bytes it sent, its copies, the receivers it feeds


@dataclass(frozen=True, slots=True)
class Feed:
    """A running move for the floor: its leader (the source), its receivers, the leader log's growth (B/s)."""

    source: int
    receivers: tuple[int, ...]
    ingest: float


def floors(feeds: Iterable[Feed], log_dir_moves: Iterable[tuple[int, float]] = ()) -> dict[Key, int]:
    """The floor per broker and role, uncapped (decide caps it): on a receiver, core.pacing.catch_up_rate of
    each move into it shared by the moves into it, the largest; on a source, the same over the copies it
    sends (one per receiver of each move it leads); for log-dir moves ((broker, growth) each), over the
    moves on that broker. A move whose log does not grow needs no floor."""
    feeds = list(feeds)
    into: dict[int, int] = {}
    out: dict[int, int] = {}
    for f in feeds:
        for b in f.receivers:
            into[b] = into.get(b, 0) + 1
        out[f.source] = out.get(f.source, 0) + len(f.receivers)
    got: dict[Key, int] = {}

    def put(key: Key, growth: float, sharing: int) -> None:
        if growth > 0:
            got[key] = max(got.get(key, 0), catch_up_rate(growth, sharing))

    for f in feeds:
        for b in f.receivers:
            put((b, "follower"), f.ingest, into[b])
        if f.receivers:
            put((f.source, "leader"), f.ingest, out[f.source])
    disk_moves = list(log_dir_moves)
    on: dict[int, int] = {}
    for b, _ in disk_moves:
        on[b] = on.get(b, 0) + 1
    for b, growth in disk_moves:
        put((b, "log-dir"), growth, on[b])
    return got


# ---------------------------------------------------------------------------------------------
# the state kept in the fenced record
# ---------------------------------------------------------------------------------------------


def key_text(key: Key) -> str:
    """`3/follower`: a key as stored in JSON."""
    return f"{key[0]}/{key[1]}"


def parse_key(text: str) -> Key:
    broker, _, role = text.partition("/")
    if role not in ROLES:
        raise ValueError(f"not a broker/role key: {text!r}")
    return int(broker), role


@dataclass(frozen=True, slots=True)
class Pending:
    """A judgement that spans intervals: the bytes copied and allowed so far, over how long, and the most
    moves seen (their fetches are the slack)."""

    copied: int
    allowed: float
    seconds: float
    moves: int

    def add(self, other: Pending) -> Pending:
        return Pending(
            self.copied + other.copied,
            self.allowed + other.allowed,
            self.seconds + other.seconds,
            max(self.moves, other.moves),
        )

    @property
    def slack(self) -> int:
        return self.moves * FETCH_STEP

    @property
    def judged(self) -> bool:
        """The slack, one fetch per move at each end, is within PRECISION of the bytes allowed."""
        return 2 * self.slack <= PRECISION * self.allowed

    @property
    def bound(self) -> bool:
        """The copy reached the rate (within its slack and Kafka's quota, AT_THROTTLE[0])."""
        return self.copied + self.slack >= AT_THROTTLE[0] * self.allowed

    def to_dict(self) -> dict[str, Any]:
        return {"copied": self.copied, "allowed": self.allowed, "seconds": self.seconds, "moves": self.moves}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pending:
        return cls(int(data["copied"]), float(data["allowed"]), float(data["seconds"]), int(data["moves"]))


@dataclass(frozen=True, slots=True)
class State:
    """The loop's rates per broker and role (B/s, as written), why each was last written, the judgements
    still accumulating, and the floors above the maximum already warned about."""

    rates: Mapping[Key, int] = field(default_factory=dict)
    why: Mapping[Key, str] = field(default_factory=dict)
    pending: Mapping[Key, Pending] = field(default_factory=dict)
    warned: frozenset[Key] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        """`{"version": 1, "rates": {"3/follower": 2500000}, "why": {...}, "pending": {"3/follower":
        {"copied": .., "allowed": .., "seconds": .., "moves": ..}}, "warned": ["3/follower"]}`."""
        return {
            "version": STATE_VERSION,
            "rates": {key_text(k): v for k, v in sorted(self.rates.items())},
            "why": {key_text(k): v for k, v in sorted(self.why.items())},
            "pending": {key_text(k): v.to_dict() for k, v in sorted(self.pending.items())},
            "warned": [key_text(k) for k in sorted(self.warned)],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> State:
        """The inverse of to_dict; ValueError on a record of another version or shape."""
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"an adaptive-throttle state of version {data.get('version')!r}")
        try:
            return cls(
                {parse_key(k): int(v) for k, v in data["rates"].items()},
                {parse_key(k): str(v) for k, v in data["why"].items()},
                {parse_key(k): Pending.from_dict(v) for k, v in data["pending"].items()},
                frozenset(parse_key(k) for k in data["warned"]),
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"an adaptive-throttle state that does not parse: {e}") from None


# ---------------------------------------------------------------------------------------------
# the decision
# ---------------------------------------------------------------------------------------------

BOUND = "throttle-bound, guards green"
FLOOR = "floor: twice the leader's ingest per sharing move"
START = "start"
START_AT_FLOOR = "start, at the floor"
_UNITS = (("GB", 10**9), ("MB", 10**6), ("kB", 10**3))


def rate_change(old: int | None, new: int) -> str:
    """`2.0 -> 2.5 MB/s`, `none -> 2.0 MB/s`: both rates in the unit core.rates.human_rate gives the larger
    (decimal), three significant digits, one decimal at least below 100 (so `2.0`, as the issue writes)."""
    top = max(new, old or 0)
    unit, size = next(((u, s) for u, s in _UNITS if top >= s), ("B", 1))

    def num(v: int) -> str:
        if size == 1:
            return str(v)
        x = v / size
        text = f"{x:.3g}"
        if "e" in text:
            return f"{x:.0f}"
        return text + ".0" if "." not in text and x < 100 else text

    return f"{'none' if old is None else num(old)} -> {num(new)} {unit}/s"


@dataclass(frozen=True, slots=True)
class Change:
    """One rate to write: broker, role, the rate before (None: the loop had not set one) and after, and why."""

    broker: int
    role: Role
    old: int | None
    new: int
    reason: str

    def line(self) -> str:
        """`throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)`."""
        return f"throttle on broker {self.broker} ({self.role}): {rate_change(self.old, self.new)} ({self.reason})"

    def to_dict(self) -> dict[str, Any]:
        """The --format json history entry (the caller adds the time)."""
        return {
            "broker": self.broker,
            "role": self.role,
            "from": self.old,
            "to": self.new,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Decision:
    """The state to keep, the changes to write (more than 10% each, or a first rate), the warnings (a floor
    above the maximum, once per broker and role)."""

    state: State
    changes: tuple[Change, ...]
    warnings: tuple[str, ...] = ()

    @property
    def writes(self) -> dict[Key, int]:
        return {(c.broker, c.role): c.new for c in self.changes}

    def lines(self) -> list[str]:
        return [c.line() for c in self.changes]


def _active(obs: Observation) -> list[Key]:
    """Every broker and role the interval's moves use, followers first, then leaders, then log dirs."""
    keys: dict[Key, None] = {}
    for r in obs.receivers:
        keys[(r.broker, "follower")] = None
    for r in obs.receivers:
        for s in r.sources:
            keys[(s, "leader")] = None
    for d in obs.disks:
        keys[(d.broker, "log-dir")] = None
    return list(keys)


def _lower(key: Key, obs: Observation, settings: Settings) -> int:
    """The least rate allowed: the minimum, or the floor capped at the maximum when higher."""
    b = settings.bounds(key[1])
    return max(b.low, min(obs.floors.get(key, 0), b.high))


def _floor_warnings(
    keys: Iterable[Key], obs: Observation, settings: Settings, warned: frozenset[Key]
) -> list[str]:
    out = []
    for key in keys:
        floor, high = obs.floors.get(key, 0), settings.bounds(key[1]).high
        if floor > high and key not in warned:
            out.append(
                f"broker {key[0]} ({key[1]}): its floor, {human_rate(floor)} (twice its leaders' ingest per "
                f"sharing move), is above the maximum, {human_rate(high)}: held at the maximum, its moves "
                "may not catch up with their leaders' logs"
            )
    return out


def _raised(old: int, high: int) -> int:
    """25% up, never above `high`; to `high` itself when that would end 10% or less below it."""
    new = min(old * RAISE[0] // RAISE[1], high)
    return high if (high - new) <= HYSTERESIS * new else new


def _allowed_rate(r: Receiver, role: Role, rates: Mapping[Key, int]) -> int:
    """The most the receiver could copy per second: its own rate, and what its sources' leader rates let out."""
    own = rates[(r.broker, role)]
    leaders = [rates[(s, "leader")] for s in r.sources if (s, "leader") in rates]
    return min(own, sum(leaders)) if leaders else own


def _sent_rate(s: Receiver, rates: Mapping[Key, int]) -> int:
    """The most a source could send per second: its leader rate, and what its receivers' follower rates let in."""
    own = rates[(s.broker, "leader")]
    followers = [rates[(r, "follower")] for r in s.sources if (r, "follower") in rates]
    return min(own, sum(followers)) if followers else own


def _judge(
    state: State, obs: Observation, rates: Mapping[Key, int], fresh: set[Key]
) -> tuple[dict[Key, Pending], list[tuple[Receiver, Role]]]:
    """Accumulate each receiver's (and each source's) interval; the judgements still open, and the brokers
    found bound. A rate first set in this decision is not judged (its bytes were copied under another rate)."""
    pending: dict[Key, Pending] = {}
    bound: list[tuple[Receiver, Role]] = []
    roles: list[tuple[Receiver, Role]] = [(r, "follower") for r in obs.receivers]
    roles += [(d, "log-dir") for d in obs.disks]
    roles += [(s, "leader") for s in obs.senders if (s.broker, "leader") in rates]
    for r, role in roles:
        key = (r.broker, role)
        if r.moves <= 0 or key in fresh:
            continue
        cap = _sent_rate(r, rates) if role == "leader" else _allowed_rate(r, role, rates)
        got = Pending(r.copied, cap * obs.seconds, obs.seconds, r.moves)
        p = state.pending[key].add(got) if key in state.pending else got
        if not p.judged:
            pending[key] = p
        elif p.bound:
            bound.append((r, role))
    return pending, bound


def _raise_targets(
    bound: list[tuple[Receiver, Role]], rates: Mapping[Key, int], settings: Settings
) -> dict[Key, tuple[int, str]]:
    targets: dict[Key, tuple[int, str]] = {}
    feeds: dict[int, list[int]] = {}
    for r, role in bound:
        key = (r.broker, role)
        targets[key] = (_raised(rates[key], settings.bounds(role).high), BOUND)
        for s in r.sources if role != "leader" else ():
            feeds.setdefault(s, []).append(r.broker)
    high = settings.bounds("leader").high if feeds else 0
    for s, into in sorted(feeds.items()):
        key = (s, "leader")  # bound on its own leader rate too: raised once, by 25%, said as feeding
        brokers = ", ".join(str(b) for b in sorted(set(into)))
        noun = "broker" if len(set(into)) == 1 else "brokers"
        targets[key] = (_raised(rates[key], high), f"feeds {noun} {brokers}, {BOUND}")
    return targets


def _halve_reason(obs: Observation) -> str | None:
    if obs.tripped is not None:
        return f"guard tripped: {obs.tripped}"
    if obs.isr_left is not None:
        return f"a follower left the ISR: {obs.isr_left}"
    return None


def decide(state: State, obs: Observation, settings: Settings) -> Decision:
    """One interval's decision (the rules in the module docstring): the new state, the changes to write
    and why, and the warnings. Rates the interval does not use are kept as they are (halved with the rest
    when a guard trips); their open judgements are dropped."""
    if not (math.isfinite(obs.seconds) and obs.seconds > 0):
        raise ValueError(f"an interval of {obs.seconds} seconds")
    active = _active(obs)
    rates, why = dict(state.rates), dict(state.why)
    lower = {k: _lower(k, obs, settings) for k in {*active, *rates}}
    changes: list[Change] = []
    fresh = {k for k in active if k not in rates}
    for k in active:
        if k in fresh:
            start = settings.bounds(k[1]).start
            rates[k], why[k] = max(start, lower[k]), START if start >= lower[k] else START_AT_FLOOR
            changes.append(Change(k[0], k[1], None, rates[k], why[k]))
    halve = _halve_reason(obs)
    targets: dict[Key, tuple[int, str]] = {}
    if halve is not None:
        pending: dict[Key, Pending] = {}
        # never a raise while a guard is tripped, not even to a floor that rose
        targets = {k: (max(rates[k] // 2, min(lower[k], rates[k])), halve) for k in rates if k not in fresh}
    else:
        pending, bound = _judge(state, obs, rates, fresh)
        targets = {k: v for k, v in _raise_targets(bound, rates, settings).items() if k not in fresh}
        for k in active:
            if k not in fresh and k not in targets and lower[k] > rates[k] * (1 + HYSTERESIS):
                targets[k] = (lower[k], FLOOR)
    for k, (target, reason) in sorted(targets.items()):
        new, old = (target if halve is not None else max(target, lower[k])), rates[k]
        if abs(new - old) > HYSTERESIS * old:
            rates[k], why[k] = new, reason
            changes.append(Change(k[0], k[1], old, new, reason))
            pending.pop(k, None)
    warnings = _floor_warnings(active, obs, settings, state.warned)
    warned = state.warned | {k for k in active if obs.floors.get(k, 0) > settings.bounds(k[1]).high}
    return Decision(State(rates, why, pending, frozenset(warned)), tuple(changes), tuple(warnings))
