"""The throttle that follows the cluster while execute waits (issue 28 items 1 to 3 and 5, in the foreground
ways of executing: `--wait` and the paced window `--max-moves-per-broker`).

Two modes, one at a time (cli/execute.py refuses both together):
- `--throttle-schedule "22:00-06:00=200MB,*=40MB"` (core.throttle_schedule): at every poll, the rate in
  force (UTC) is compared with the rate each throttled broker holds; a poll that crosses a boundary writes the
  new rate, leader and follower, on the brokers of the running moves.
- `--throttle auto --min-throttle R1 --max-throttle R2` or `--throttle R --max-throttle R2`
  (core.autothrottle): every `--throttle-interval` seconds, the bytes copied into each receiving broker are
  measured (DescribeLogDirs, through the brokers), and core.autothrottle.decide says which rates change.

`RateLoop` is the decision side (no I/O: `tick(now, observation)` returns the changes, `state()` and
`from_state()` keep it, e.g. with a stored plan); `Runner` is the I/O side that ops/watch.wait_for and
ops.pacing's `_Window` call at each poll (`poll(backend, state, running)`): it measures, ticks, writes the
changes through `write_rates` (one fenced commit, the prior values recorded first, as `apply_throttles`),
reports one line per change and keeps the history for --format json. The operator's prior values are
restored at the end by the same clear as always (ops.unthrottle): every key the loop writes is recorded.

A resumed run (`--resume`) starts at the rates the loop last wrote: they are read back from the brokers
whose rate keys the record names as this tool's (`resumed_state`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from reassign_cli.core import autothrottle as at
from reassign_cli.core import throttle as th
from reassign_cli.core.model import ClusterState, TopicPartition, tp_str
from reassign_cli.core.rates import human_rate as th_human
from reassign_cli.core.throttle_schedule import ThrottleSchedule, next_boundary
from reassign_cli.errors import OperationalError

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend, ConfigReader, ConfigUpdate, ReplicaKey

SCHEDULE = "throttle schedule"
RESUMED = "resumed at the rate last written"


@dataclass(slots=True)
class RateLoop:
    """The rates of one run: by schedule (`schedule`) or adaptive (`settings`), never both."""

    settings: at.Settings | None = None
    schedule: ThrottleSchedule | None = None
    auto: at.State = field(default_factory=at.State)
    warnings: list[str] = field(default_factory=list)  # the last tick's (a floor above the maximum)

    def __post_init__(self) -> None:
        if (self.settings is None) == (self.schedule is None):
            raise ValueError("a rate loop runs either a schedule or the adaptive throttle")

    def start_rate(self, now: datetime) -> int:
        """The rate of the first moves (what `--throttle` would have been)."""
        if self.schedule is not None:
            rate = self.schedule.rate_at(now)
            assert rate is not None  # cli/execute.py refuses a schedule with no-throttle hours
            return rate
        assert self.settings is not None and self.settings.replication is not None
        return self.settings.replication.start

    @property
    def interval(self) -> float:
        """How often `tick` wants a measured observation (the schedule needs none: every poll)."""
        return self.settings.interval if self.settings is not None else 0.0

    def overrides(self) -> dict[int, dict[str, str]]:
        """The rate keys the loop holds, per broker: written instead of the start rate whenever execute
        writes the throttles of new moves (so a start never undoes the loop's rates)."""
        out: dict[int, dict[str, str]] = {}
        for (b, role), rate in sorted(self.auto.rates.items()):
            out.setdefault(b, {})[at.ROLE_KEYS[role]] = str(rate)
        return out

    def tick(self, now: datetime, obs: at.Observation) -> list[at.Change]:
        """The changes to write for what `obs` saw (the state moves on as if they were written)."""
        if self.schedule is not None:
            return self._scheduled(now, obs)
        assert self.settings is not None
        decision = at.decide(self.auto, obs, self.settings)
        self.auto = decision.state
        self.warnings = list(decision.warnings)
        return list(decision.changes)

    def _scheduled(self, now: datetime, obs: at.Observation) -> list[at.Change]:
        assert self.schedule is not None
        rate = self.start_rate(now)
        keys = [k for k in _keys(obs) if k[1] != "log-dir"]
        changes = []
        rates, why = dict(self.auto.rates), dict(self.auto.why)
        for key in keys:
            old = rates.get(key)
            if old != rate:
                changes.append(at.Change(key[0], key[1], old, rate, SCHEDULE))
                rates[key], why[key] = rate, SCHEDULE
        self.auto = at.State(rates, why)
        return changes

    def state(self) -> dict[str, Any]:
        """What to keep (JSON-able): the mode's settings and the rates held, as core.autothrottle keeps them."""
        return {
            "settings": None if self.settings is None else self.settings.to_dict(),
            "schedule": None if self.schedule is None else self.schedule.to_dict(),
            "state": self.auto.to_dict(),
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> RateLoop:
        settings, schedule = data.get("settings"), data.get("schedule")
        return cls(
            None if settings is None else at.Settings.from_dict(settings),
            None if schedule is None else ThrottleSchedule.from_dict(schedule),
            at.State.from_dict(data["state"]),
        )


def _keys(obs: at.Observation) -> list[at.Key]:
    keys: dict[at.Key, None] = {}
    for r in obs.receivers:
        keys[(r.broker, "follower")] = None
        for s in r.sources:
            keys[(s, "leader")] = None
    return list(keys)


# ---------------------------------------------------------------------------------------------
# measuring (the I/O side reads; this keeps what the last interval ended with)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Running:
    """A running move as the cluster shows it: its leader (the source) and the replicas being added."""

    tp: TopicPartition
    source: int
    receivers: tuple[int, ...]


def running_moves(state: ClusterState, targets: Mapping[TopicPartition, Sequence[int]]) -> list[Running]:
    """The moves of `targets` still adding replicas, with their leaders (a read with partition state)."""
    out = []
    for t, p in sorted(targets):
        topic = state.topics.get(t)
        if topic is None or not topic.adding.get(p):
            continue
        out.append(Running((t, p), topic.leader.get(p, -1), tuple(sorted(topic.adding[p]))))
    return out


def every_partition(backend: Backend, state: ClusterState) -> ClusterState:
    """Every topic's partitions with leader and ISR, for the ISR signal (a follower that is not moving
    leaves the ISR of ANY partition led by a source or receiver of ours, not only the plan's): one read
    per interval, the plan's topics as `state` shows them; `state` alone when that read fails."""
    try:
        wide = backend.read_state(None, partition_state=True)
    except OperationalError:
        return state
    return dataclasses.replace(wide, topics={**wide.topics, **state.topics})


def out_of_isr(state: ClusterState, ours: set[int]) -> set[tuple[str, int, int]]:
    """(topic, partition, broker): a follower that is not moving, out of the ISR of a partition of the
    topics read whose leader is one of `ours` (the brokers the running moves use)."""
    out = set()
    for t, topic in state.topics.items():
        for p, isr in topic.isr.items():
            leader = topic.leader.get(p, -1)
            if leader not in ours:
                continue
            staying = set(topic.target(p)) - set(topic.adding.get(p, ()))
            out |= {(t, p, b) for b in staying - set(isr) - {leader}}
    return out


@dataclass(slots=True)
class Meter:
    """The byte counts and ISR seen at the last interval's end: each interval is the difference."""

    at_time: float | None = None
    sizes: dict[ReplicaKey, int] = field(default_factory=dict)
    out: set[tuple[str, int, int]] = field(default_factory=set)

    def observe(
        self,
        now: float,
        moves: Sequence[Running],
        sizes: Mapping[ReplicaKey, int],
        out: set[tuple[str, int, int]],
    ) -> at.Observation | None:
        """The interval since the last call (None on the first: it only sets the baseline). A replica seen
        for the first time counts nothing this interval (its bytes were copied before it started)."""
        last, seconds = self.sizes, (None if self.at_time is None else now - self.at_time)
        left = sorted(out - self.out)
        self.at_time, self.sizes, self.out = now, dict(sizes), set(out)
        if seconds is None or seconds <= 0:
            return None
        copies: list[tuple[int, int, int]] = []  # (source, receiver, bytes copied); source -1: no leader
        feeds = []
        for m in moves:
            t, p = m.tp
            for b in m.receivers:
                got, had = sizes.get((t, p, b)), last.get((t, p, b))
                copies.append((m.source, b, max(got - had, 0) if got is not None and had is not None else 0))
            lead, led = sizes.get((t, p, m.source)), last.get((t, p, m.source))
            if m.source >= 0 and lead is not None and led is not None:
                feeds.append(at.Feed(m.source, m.receivers, max(lead - led, 0) / seconds))
        receivers = _sums(copies, by_source=False)
        senders = _sums([c for c in copies if c[0] >= 0], by_source=True)
        isr = ", ".join(f"broker {b} left the ISR of {tp_str((t, p))}" for t, p, b in left) or None
        return at.Observation(seconds, receivers, isr_left=isr, floors=at.floors(feeds), senders=senders)


def _sums(copies: Sequence[tuple[int, int, int]], by_source: bool) -> tuple[at.Receiver, ...]:
    """Per receiver (or per source): the bytes copied, the copies, the brokers at the other end."""
    copied: dict[int, int] = {}
    count: dict[int, int] = {}
    other: dict[int, set[int]] = {}
    for source, receiver, n in copies:
        b, o = (source, receiver) if by_source else (receiver, source)
        copied[b] = copied.get(b, 0) + n
        count[b] = count.get(b, 0) + 1
        if o >= 0:
            other.setdefault(b, set()).add(o)
    return tuple(at.Receiver(b, copied[b], count[b], tuple(sorted(other.get(b, ())))) for b in sorted(copied))


def replica_keys(moves: Sequence[Running]) -> list[ReplicaKey]:
    keys: list[ReplicaKey] = []
    for m in moves:
        t, p = m.tp
        keys += [(t, p, b) for b in m.receivers]
        if m.source >= 0:
            keys.append((t, p, m.source))
    return keys


# ---------------------------------------------------------------------------------------------
# writing (one fenced commit per tick) and resuming
# ---------------------------------------------------------------------------------------------


def write_rates(backend: Backend, rates: Mapping[at.Key, int]) -> None:
    """The rate keys written per broker in ONE fenced commit, their prior values recorded first (only the
    first write of a key records one: the loop's own earlier value is never taken for the operator's)."""
    by_broker: dict[int, dict[str, str]] = {}
    for (b, role), rate in rates.items():
        by_broker.setdefault(b, {})[at.ROLE_KEYS[role]] = str(rate)
    if not by_broker:
        return
    updates: list[ConfigUpdate] = [("brokers", str(b), _setter(cfg)) for b, cfg in sorted(by_broker.items())]

    def plan(rec: dict[str, Any], read: ConfigReader) -> tuple[list[ConfigUpdate], dict[str, Any]]:
        items: list[tuple[th.Entity, str | int, dict[str, str], Any]] = [
            ("brokers", b, read("brokers", str(b)), cfg.keys()) for b, cfg in by_broker.items()
        ]
        return updates, th.record_priors_all(rec, items)

    backend.commit_throttles(plan)


def _setter(cfg: dict[str, str]) -> Any:
    return lambda cur: th.apply_config(cur, cfg)


def resumed_state(backend: Backend, brokers: Sequence[int], bounds: at.Bounds) -> at.State:
    """The rates a resumed run starts at: the leader and follower rates the brokers hold where the record
    names them as this tool's (so the loop's last writes), kept within the bounds."""
    record = backend.read_priors()
    rates: dict[at.Key, int] = {}
    for b in brokers:
        entry = th.record_entry(record, "brokers", b) or {}
        config = backend.read_config("brokers", str(b)) or {}
        for role in ("leader", "follower"):
            key = at.ROLE_KEYS[role]
            if key in entry and config.get(key, "").isdigit():
                rates[(b, role)] = min(max(int(config[key]), bounds.low), bounds.high)
    return at.State(rates, dict.fromkeys(rates, RESUMED))


# ---------------------------------------------------------------------------------------------
# the runner that execute's waits call
# ---------------------------------------------------------------------------------------------


class Runner:
    """One run's loop at each poll: measure (every interval), tick, write, report."""

    def __init__(
        self,
        loop: RateLoop,
        sizer: Any,
        report: Any,
        req: Any = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.loop, self.sizer, self.report, self.req = loop, sizer, report, req
        self.clock, self.wall = clock, wall
        self.meter = Meter()
        self.last_tick: float | None = None
        self.history: list[dict[str, Any]] = []
        self.boundary: datetime | None = None
        self.on_change: Callable[[], None] | None = None  # once a change is written (ops/stored.Keeper)

    def overrides(self) -> dict[int, dict[str, str]]:
        return self.loop.overrides()

    def start_rate(self, now: datetime | None = None) -> int:
        return self.loop.start_rate(now or datetime.now(UTC))

    def poll(
        self, backend: Backend, state: ClusterState, targets: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        mono, now = self.clock(), self.wall()
        moves = running_moves(state, targets)
        if self.loop.schedule is not None:
            receivers = [
                at.Receiver(b, 0, 1, (m.source,) if m.source >= 0 else ()) for m in moves for b in m.receivers
            ]
            self._apply(backend, state, now, self.loop.tick, at.Observation(1.0, tuple(receivers)))
            if self.req is not None:
                self.req.throttle = self.loop.start_rate(now)  # the moves started next: the rate in force
            return
        if self.last_tick is not None and mono - self.last_tick < self.loop.interval:
            return
        self.last_tick = mono
        sizes, _ = self.sizer.replica_sizes(replica_keys(moves)) if moves else ({}, [])
        ours = {b for m in moves for b in (m.source, *m.receivers)}
        out = out_of_isr(every_partition(backend, state), ours) if ours else set()
        measured = self.meter.observe(mono, moves, sizes, out)
        if measured is not None:
            self._apply(backend, state, now, self.loop.tick, measured)
            for w in self.loop.warnings:
                self.report.warn(w)

    def _apply(
        self,
        backend: Backend,
        state: ClusterState,
        now: datetime,
        tick: Callable[[datetime, at.Observation], list[at.Change]],
        obs: at.Observation,
    ) -> None:
        """Tick, and write its changes; a write that fails (a broker that just left) is warned about and
        the loop's rates stay as they were, to be decided again at the next tick."""
        before = self.loop.auto
        changes = tick(now, obs)
        if not changes:
            return
        live = None if backend.offline_broker_configs else set(state.broker_ids)
        try:
            write_rates(
                backend, {(c.broker, c.role): c.new for c in changes if live is None or c.broker in live}
            )
        except OperationalError as e:
            self.loop.auto = before
            self.report.warn(f"{e}; the throttle rates are decided again at the next interval")
            return
        if self.on_change is not None:  # kept before the lines: a line said is a state kept
            self.on_change()
        for c in changes:
            self.report.info(c.line())
            self.history.append({"time": now.isoformat(timespec="seconds"), **c.to_dict()})
        keep = getattr(self.report, "throttle_changes", None)
        if keep is not None:
            keep(self.history, self.rates())

    def schedule_line(self, now: datetime) -> str | None:
        """`Throttle schedule (UTC): 22:00-06:00 UTC 200 MB/s, otherwise 40 MB/s; 40 MB/s now, until 22:00`."""
        sched = self.loop.schedule
        if sched is None:
            return None
        until = next_boundary(now, sched)
        rate = th_human(self.loop.start_rate(now))
        return f"Throttle schedule: {sched.describe()}; {rate} now" + (
            f", until {until:%H:%M} UTC" if until is not None else ""
        )

    def resume_args(self) -> list[str]:
        """The options that run this loop again (the `execute --resume` line to paste)."""
        if self.loop.schedule is not None:
            return ["--throttle-schedule", str(self.loop.schedule)]
        assert self.loop.settings is not None and self.loop.settings.replication is not None
        b = self.loop.settings.replication
        return [
            *("--throttle", "auto", "--min-throttle", str(b.low), "--max-throttle", str(b.high)),
            *("--throttle-interval", f"{self.loop.settings.interval:g}"),
        ]

    def rates(self) -> dict[str, int]:
        """The rates held now, `3/follower` -> B/s (the --format json gauge)."""
        return {at.key_text(k): v for k, v in sorted(self.loop.auto.rates.items())}
