"""`execute --max-moves-per-disk N` / `--one-broker-at-a-time`: paced moves of replicas between the log
dirs of one broker (the pure rules are core/logdir_pacing.py). ops.execute calls it through `DirPacer`.

Which moves are paced: a replica the plan names a log dir for, on a broker that already holds it (an
intra-broker move: AlterReplicaLogDirs copies it on that machine). A replica that arrives on a new
broker is not: its broker is told the dir before the reassignment starts and places it there on arrival
(as Kafka's tool does); --max-moves-per-broker and --throttle pace those. The intra-broker moves are held
back from the batches (`defer`) and run after the partition moves have ended (`run`), as Cruise
Control's executor runs its intra-broker phase after the inter-broker one: at most N moves into or out of
one disk at a time, each started as soon as one ends; the log-dir rate (--replica-alter-log-dirs-throttle)
written through execute's fenced commit before each start (prior values recorded); byte progress (each
future replica against its current one) and the stall warning while they copy. Then execute's usual end:
every planned log dir checked (wait_for_log_dirs), the throttles taken off as verify does.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from reassign_cli.backends.protocol import Backend, LogDirMoves, ReplicaDirs, ReplicaKey
from reassign_cli.core import logdir_pacing as lp
from reassign_cli.core.model import ClusterState, PlanEntry
from reassign_cli.core.names import count, shorten
from reassign_cli.core.progress import ReplicaMoveProgress
from reassign_cli.errors import BusyError
from reassign_cli.ops.dir_moves import start_until_done, wait_for_log_dirs
from reassign_cli.ops.request import (
    Clock,
    ExecuteReport,
    ExecuteRequest,
    WaitInterrupted,
    cancel_command,
    verify_command,
)
from reassign_cli.ops.throttle_writes import THROTTLE_SETTLE_SECONDS, apply_throttles

SHOW_EVERY = 30.0  # seconds: the progress line at least this often (else when it changes)


class CopyReader(Protocol):
    """DescribeLogDirs with sizes (admin.log_dirs.LogDirMover.copies)."""

    def copies(self, replicas: Sequence[ReplicaKey]) -> dict[ReplicaKey, list[lp.Copy]]: ...


def intra_moves(entries: Sequence[PlanEntry], state: ClusterState) -> ReplicaDirs:
    """The plan's log-dir targets of replicas already on their broker (its origin replicas)."""
    out: ReplicaDirs = {}
    for e in entries:
        topic = state.topics.get(e.topic)
        if topic is None or e.partition not in topic.replicas:
            continue
        origin = set(topic.origin(e.partition))
        for b, d in zip(e.replicas, e.log_dirs or (), strict=False):
            if d != "any" and b in origin:
                out[(e.topic, e.partition, b)] = d
    return out


def without(entries: Sequence[PlanEntry], held: ReplicaDirs) -> list[PlanEntry]:
    """The entries with the log dirs of `held` replicas set to "any"."""
    out = []
    for e in entries:
        if not e.log_dirs or not any((e.topic, e.partition, b) in held for b in e.replicas):
            out.append(e)
            continue
        pairs = zip(e.replicas, e.log_dirs, strict=False)
        out.append(
            dataclasses.replace(
                e, log_dirs=["any" if (e.topic, e.partition, b) in held else d for b, d in pairs]
            )
        )
    return out


@dataclass(slots=True)
class LogDirPacer:
    """execute's DirPacer: `defer` holds the intra-broker moves back from the batches, `run` runs them."""

    cap: int | None = 1  # None: every move at once (a paced or batched plan run without --max-moves-per-disk)
    one_broker: bool = False
    held: ReplicaDirs = field(default_factory=dict)
    peak_per_disk: int = 0
    peak_brokers: int = 0
    # ops/stored.Keeper: the plan stored in the cluster (a foreground paced execute's), when kept there: each
    # move recorded started before it starts, done when seen done; the lease renewed from the polls
    stored: Any = None
    rates: Any = None  # --replica-alter-log-dirs-throttle auto: ops.logdir_rates.LogDirLoop

    def defer(self, entries: list[PlanEntry], state: ClusterState) -> list[PlanEntry]:
        """The entries without their intra-broker log dirs (kept in `held`, for `run`)."""
        found = intra_moves(entries, state)
        self.held.update(found)
        return without(entries, found) if found else entries

    def run(
        self,
        backend: Backend,
        mover: LogDirMoves,
        dirs: ReplicaDirs,
        req: ExecuteRequest,
        report: ExecuteReport,
    ) -> list[ReplicaMoveProgress]:
        """The held moves, paced; then every planned log dir checked (execute's wait_for_log_dirs)."""
        if self.held:
            _Run(self, backend, mover, req, report).go()
        return wait_for_log_dirs(mover, dirs, req, report)

    def dry_run(self, report: ExecuteReport) -> None:
        """What a dry run says of the held moves (stdout; `run_plan.log_dir_moves` in JSON): their order as
        the run would take them on an empty cluster of moves (plan order; one broker at a time: by broker)."""
        if not self.held:
            return
        order = sorted(self.held, key=lambda k: (k[2], k) if self.one_broker else k)
        listed = [f"{t}-{p} on broker {b} (to {self.held[(t, p, b)]})" for t, p, b in order]
        how = per_disk(self.cap) + (", one broker at a time" if self.one_broker else "")
        report.run_plan(
            [
                f"Dry run: {count(len(order), 'replica move')} between log dirs of one broker held back, started "
                f"after the partition moves, {how} (a replica already in its dir is skipped then): "
                + ", ".join(listed)
            ],
            {
                "log_dir_moves": {
                    "max_moves_per_disk": self.cap,
                    "one_broker_at_a_time": self.one_broker,
                    "queued": [
                        {"topic": t, "partition": p, "broker": b, "log_dir": self.held[(t, p, b)]}
                        for t, p, b in order
                    ],
                }
            },
        )


def per_disk(cap: int | None) -> str:
    return "all at once" if cap is None else f"at most {cap} per disk"


def dir_states(mover: LogDirMoves, moves: ReplicaDirs) -> dict[ReplicaKey, lp.DirState]:
    """Each replica's current and future copy (with sizes when the mover reads them: `copies`)."""
    read = getattr(mover, "copies", None)
    if callable(read):
        found: dict[ReplicaKey, list[lp.Copy]] = read(sorted(moves))
        return {k: lp.dir_state(c, moves[k]) for k, c in found.items()}
    return {k: lp.DirState(cur, fut, None, None) for k, (cur, fut) in mover.describe(dict(moves)).items()}


class _Run:
    """One paced run of the held log-dir moves."""

    def __init__(
        self,
        pacer: LogDirPacer,
        backend: Backend,
        mover: LogDirMoves,
        req: ExecuteRequest,
        report: ExecuteReport,
    ) -> None:
        self.p, self.backend, self.mover, self.req, self.report = pacer, backend, mover, req, report
        self.running: dict[ReplicaKey, lp.DirMove] = {}
        self.done = 0
        self.bytes_done = 0
        self.sizes: dict[ReplicaKey, tuple[int, int]] = {}  # running: (copied, to copy)
        self.queued_bytes: dict[ReplicaKey, int] = {}  # queued: the current replica's size when read
        self.stalls = lp.FutureStalls(req.stuck_after)
        self.shown: tuple[str, float] = ("", 0.0)
        self.stopped: list[ReplicaKey] = []  # moves whose future replica went before it was done
        self.queue = lp.DiskQueue(self._queued())

    def _queued(self) -> list[lp.DirMove]:
        """The held moves not done yet; one already copying to its target (a resumed run) runs."""
        states = dir_states(self.mover, self.p.held)
        out = []
        for key, target in sorted(self.p.held.items()):
            st = states.get(key)
            if st is None or st.current is None:
                continue  # not found in a live dir: execute's final check reports it
            move = lp.DirMove(key, st.current, target)
            if st.future == target:
                self.running[key] = move
                self.sizes[key] = lp.copied(st)
            elif st.current != target:
                out.append(move)
                self.queued_bytes[key] = st.current_bytes or 0
        skipped = len(self.p.held) - len(out) - len(self.running)
        if skipped:
            self.report.info(
                f"{count(skipped, 'log-dir move')} not to start: already in the planned dir, or not found"
            )
        return out

    def go(self) -> None:
        clock = Clock(self.req)
        what = per_disk(self.p.cap) + (", one broker at a time" if self.p.one_broker else "")
        self.report.info(
            f"Moving {count(len(self.queue) + len(self.running), 'replica')} between log dirs, {what}"
        )
        try:
            while True:
                self._poll(clock)
                if not self.running and (not len(self.queue) or self.stopped):
                    break
                if clock.expired():
                    raise BusyError(
                        f"Timed out after {self.req.timeout:g}s; {count(len(self.running), 'log-dir move')} "
                        f"running, {len(self.queue)} not started",
                        hint=f"The moves started keep running. Check them with: {verify_command(self.req)}; "
                        "run this execute again to start the rest",
                    )
                clock.pause()
        except KeyboardInterrupt:
            raise WaitInterrupted(
                f"Interrupted while moving replicas between log dirs; {len(self.running)} started keep running, "
                f"{len(self.queue)} not started",
                hint=f"Check them with: {verify_command(self.req)}; run this execute again to start the rest",
            ) from None
        self._summary(clock.elapsed())

    def _poll(self, clock: Clock) -> None:
        now = time.monotonic()
        states = dir_states(self.mover, {k: m.target for k, m in self.running.items()})
        silent = set(getattr(self.mover, "unanswered", ()))
        for key, m in list(self.running.items()):
            st = states.get(key)
            if st is None and m.broker in silent:
                continue  # unknown: it may still copy
            if st is None or st.future is None:
                self.running.pop(key)
                got = self.sizes.pop(key, (0, 0))[1]
                if st is not None and st.current != m.target:
                    self.stopped.append(key)  # its future replica was dropped: cancelled
                    continue
                self.done += 1
                self.bytes_done += got
                if self.p.stored is not None:
                    self.p.stored.dirs_ended([key])
            elif st.current_bytes is not None:
                self.sizes[key] = lp.copied(st)
        if self.p.stored is not None:
            self.p.stored.renew()
        if self.stopped:
            self._stop()
        else:
            self._start(self.queue.take(self.running.values(), self.p.cap, self.p.one_broker))
        if self.p.rates is not None:  # after the starts: a move just started counts from its empty future
            self.p.rates.poll(self.backend, self._running_sizes(), sorted({k[0] for k in self.p.held}))
        self._show(clock.elapsed())
        self._warn_stalls(now)

    def _stop(self) -> None:
        """A move was stopped (cancel, or an operator's AlterReplicaLogDirs back to its dir): no move
        starts any more; the queued ones are dropped, said once."""
        if not len(self.queue):
            return
        left = [m.key for m in self.queue.moves()]
        for key in left:
            self.queue.discard(key)
            self.queued_bytes.pop(key, None)
        self.report.warn(
            f"The log-dir move of {names(self.stopped)} was stopped before it was done (its future replica was "
            f"dropped: a cancel?); not starting the {count(len(left), 'log-dir move')} queued: {names(left)}"
        )

    def _start(self, new: list[lp.DirMove]) -> None:
        """The log-dir rate first (fenced, priors recorded; again before each start: a verify may have
        taken it off between two moves), then AlterReplicaLogDirs until each has started."""
        if not new:
            return
        if self.req.log_dir_throttle is not None:
            entries = [PlanEntry(m.key[0], m.key[1], [m.broker], [m.target]) for m in new]
            state = self.backend.read_state([])  # the brokers registered: a rate is set through its broker
            held = None if self.p.rates is None else self.p.rates.overrides()  # the loop's rates win
            writes = apply_throttles(
                self.backend, state, entries, None, self.req.log_dir_throttle, overrides=held
            )
            if writes.changes:
                time.sleep(THROTTLE_SETTLE_SECONDS)  # brokers apply configs asynchronously
        if self.p.stored is not None:  # recorded (fenced) before they start
            self.p.stored.dirs_started([m.key for m in new])
        start_until_done(self.mover, {m.key: m.target for m in new}, self.req.log_dir_timeout, self.report)
        for m in new:
            self.running[m.key] = m
            self.sizes[m.key] = (0, self.queued_bytes.pop(m.key, 0))
        self.p.peak_per_disk = max(self.p.peak_per_disk, *lp.per_disk(self.running.values()).values())
        self.p.peak_brokers = max(self.p.peak_brokers, len({m.broker for m in self.running.values()}))

    def _running_sizes(self) -> dict[ReplicaKey, tuple[int, int]]:
        """(bytes copied, bytes to copy) of each running move, as last read."""
        return {k: self.sizes[k] for k in self.running if k in self.sizes}

    def _progress(self) -> lp.DirProgress:
        copied = self.bytes_done + sum(c for c, _ in self.sizes.values())
        total = self.bytes_done + sum(t for _, t in self.sizes.values()) + sum(self.queued_bytes.values())
        return lp.DirProgress(copied, total, len(self.running), len(self.queue), self.done)

    def _show(self, elapsed: float) -> None:
        line = lp.progress_line(self._progress())
        last, when = self.shown
        if line != last or elapsed - when >= SHOW_EVERY:
            self.report.info(f"[{_clock(elapsed)}] {line}")
            self.shown = (line, elapsed)

    def _warn_stalls(self, now: float) -> None:
        got = {k: self.sizes.get(k, (0, 0))[0] for k in self.running}
        for key, secs in self.stalls.update(got, now):
            c, t = self.sizes.get(key, (0, 0))
            self.report.warn(lp.stalled_line(self.running[key], c, t, secs, cancel_command(self.req)))

    def _summary(self, seconds: float) -> None:
        if lp.progress_line(self._progress()) != self.shown[0]:
            self.report.info(f"[{_clock(seconds)}] {lp.progress_line(self._progress())}")
        summary: dict[str, Any] = {
            "log_dir_moves": {
                "moves": self.done,
                "bytes_copied": self.bytes_done,
                "seconds": round(seconds, 3),
                "max_per_disk": self.p.peak_per_disk,
                "max_brokers_at_once": self.p.peak_brokers,
            }
        }
        paced = getattr(self.report, "paced", None)
        if callable(paced):
            paced(summary)


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def names(keys: Sequence[ReplicaKey]) -> str:
    return shorten((f"{t}-{p} on broker {b}" for t, p, b in keys), sep=", ")
