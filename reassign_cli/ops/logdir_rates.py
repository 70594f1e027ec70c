"""The adaptive log-dir throttle (issue 28 item 4): `execute --max-moves-per-disk N` (or
`--one-broker-at-a-time`) with `--replica-alter-log-dirs-throttle auto --min-log-dir-throttle R1
--max-log-dir-throttle R2`, or `--replica-alter-log-dirs-throttle R --max-log-dir-throttle R2` (the same loop
starting at R). ops/log_dirs.py's paced run calls `LogDirLoop.poll` at each poll; cli/execute.py builds it.

Every `--throttle-interval` seconds (the replication loop's interval: one decision period per run), the bytes
the future replicas of each broker's running log-dir moves grew by are measured (DescribeLogDirs, read by the
paced run anyway) and core.autothrottle.decide, role "log-dir", says which rates change: raised 25% (never
above R2) on a broker whose moves are throttle-bound (Kafka's replica.alter.log.dirs.io.max.bytes.per.second
is one rate per broker, shared by the moves of all its disks), halved (never below R1 nor the floor) when a
follower that is not moving leaves the ISR of a partition of the run's topics led by a broker with log-dir
moves (the foreground's guard, as in ops.rate_loop), only a change of more than 10% written. The floor is
core.autothrottle.floors' log-dir rule: twice the current replica's growth per move on that broker.

Each change goes through ops.rate_loop.write_rates (one fenced commit, the prior value recorded first, so the
usual end restores the operator's own value) and is reported in one line; the history joins the replication
loop's in --format json (`throttle_changes`, `throttle_rates`). A change is kept only once its write landed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from reassign_cli.core import autothrottle as at
from reassign_cli.errors import OperationalError
from reassign_cli.ops.rate_loop import RateLoop, out_of_isr, write_rates

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend, ReplicaKey

# What a poll hands over per running move: (bytes its future replica holds, bytes its current one holds).
Sizes = Mapping["ReplicaKey", tuple[int, int]]


def observe(seconds: float, last: Sizes, now: Sizes, isr_left: str | None = None) -> at.Observation:
    """One interval of the log-dir moves: per broker the bytes its future replicas grew by (a move seen at
    one end only counts nothing: it started or ended within the interval), the moves running on it now,
    and the floors from the current replicas' growth. Pure."""
    copied: dict[int, int] = {}
    moves: dict[int, int] = {}
    growth: list[tuple[int, float]] = []
    for key, (fut, cur) in now.items():
        b = key[2]
        moves[b] = moves.get(b, 0) + 1
        before = last.get(key)
        copied[b] = copied.get(b, 0) + (max(fut - before[0], 0) if before is not None else 0)
        # a move first seen shares the broker's rate too (its growth unknown: no floor of its own)
        growth.append((b, max(cur - before[1], 0) / seconds if before is not None else 0.0))
    disks = tuple(at.Receiver(b, copied[b], moves[b]) for b in sorted(moves))
    return at.Observation(seconds, disks=disks, isr_left=isr_left, floors=at.floors((), growth))


class LogDirLoop:
    """The log-dir loop of one paced run: measure every interval, decide, write, report."""

    def __init__(
        self,
        settings: at.Settings,
        report: Any,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if settings.log_dirs is None:
            raise ValueError("a log-dir loop without log-dir bounds")
        self.loop = RateLoop(settings=settings)
        self.report, self.clock, self.wall = report, clock, wall
        self.last: tuple[float, dict[ReplicaKey, tuple[int, int]]] | None = None
        self.out: set[tuple[str, int, int]] = set()
        self.history: list[dict[str, Any]] = []
        self.joined: Any = None  # the replication loop's runner (ops.rate_loop.Runner), for the JSON history

    def start_rate(self) -> int:
        assert self.loop.settings is not None and self.loop.settings.log_dirs is not None
        return self.loop.settings.log_dirs.start

    def overrides(self) -> dict[int, dict[str, str]]:
        """The log-dir rates the loop holds, written instead of the start rate when moves start."""
        return self.loop.overrides()

    def poll(self, backend: Backend, sizes: Sizes, topics: list[str]) -> None:
        """At each poll of the paced run (`sizes`: its running moves): once an interval has passed since
        the last measure, decide and write."""
        mono = self.clock()
        if self.last is not None and mono - self.last[0] < self.loop.interval:
            return
        last, self.last = self.last, (mono, dict(sizes))
        left = self._isr(backend, sizes, topics)
        if last is None or mono - last[0] <= 0:
            return
        self.apply(backend, observe(mono - last[0], last[1], sizes, left))

    def _isr(self, backend: Backend, sizes: Sizes, topics: list[str]) -> str | None:
        """Which non-moving follower left the ISR since the last measure, of a partition of `topics` led
        by a broker with log-dir moves."""
        ours = {k[2] for k in sizes}
        out = out_of_isr(backend.read_state(topics, partition_state=True), ours) if ours else set()
        left, self.out = sorted(out - self.out), out
        return ", ".join(f"broker {b} left the ISR of {t}-{p}" for t, p, b in left) or None

    def apply(self, backend: Backend, obs: at.Observation) -> None:
        """Decide; write the changes; keep the new state only once the write landed (a failed write is
        warned about and decided again at the next interval)."""
        before = self.loop.auto
        changes = self.loop.tick(self.wall(), obs)
        for w in self.loop.warnings:
            self.report.warn(w)
        if not changes:
            return
        try:
            write_rates(backend, {(c.broker, c.role): c.new for c in changes})
        except OperationalError as e:
            self.loop.auto = before
            self.report.warn(f"{e}; the log-dir throttle rates are decided again at the next interval")
            return
        now = self.wall().isoformat(timespec="seconds")
        for c in changes:
            self.report.info(c.line())
            self.history.append({"time": now, **c.to_dict()})
        keep = getattr(self.report, "throttle_changes", None)
        if keep is not None:
            other = self.joined
            history = [*(other.history if other is not None else ()), *self.history]
            rates = {**(other.rates() if other is not None else {}), **self.rates()}
            keep(history, rates)

    def rates(self) -> dict[str, int]:
        return {at.key_text(k): v for k, v in sorted(self.loop.auto.rates.items())}
