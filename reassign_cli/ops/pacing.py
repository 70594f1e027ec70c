"""`execute --max-moves-per-broker N`: the window in the foreground (the pure rules are core/pacing.py).

Through the admin API, and in ZooKeeper mode given the brokers too (backends.protocol.adds_moves: the
trigger znode first, then AlterPartitionReassignments beside it), the window is a loop over ops/step.step on
the plan ops/stored.Keeper stored (or one kept in this process's memory): each poll is one step, which
notes the moves that ended, holds on pause, hours and health, marks the moves that fit through the fence,
rewrites the throttle lists for the moves running, starting and next in line, and submits them beside the
running ones (KIP-455). `_Window` only watches: with sizes (DescribeLogDirs) progress in bytes (each added
replica's size against its leader's), the ETA, the stall and "grows" warnings, --timeout and Ctrl-C.

Through ZooKeeper alone the trigger znode takes one batch at a time: the window is sent as batches
(each fills an empty window), run as steps of the stored plan (ops/stored_foreground.py), or by execute's
`_run_batches` when the plan is not stored.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from reassign_cli.backends.protocol import adds_moves
from reassign_cli.core import pacing as pc
from reassign_cli.core import run_plan as rp
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition, tp_str
from reassign_cli.core.names import count
from reassign_cli.core.progress import PartitionProgress, Status, StuckWatch, classify
from reassign_cli.errors import BusyError, OperationalError
from reassign_cli.ops import step as st
from reassign_cli.ops import stored_foreground
from reassign_cli.ops.execute import (
    NO_BYTES_LIMIT,
    THROTTLE_SETTLE_SECONDS,
    started_line,
    submit_batch,
    would_start_line,
)
from reassign_cli.ops.pace_file import PaceFile
from reassign_cli.ops.request import (
    Clock,
    ExecuteReport,
    ExecuteRequest,
    WaitInterrupted,
    cancel_command,
    describe_moving,
    request_resume_command,
    stuck_line,
    verify_command,
)
from reassign_cli.ops.throttle_writes import said_writes
from reassign_cli.ops.window_watch import (
    Bytes,
    SizeReader,
    diagnose,
    leader_sizes,
    moves_phrase,
    stalled_line,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from reassign_cli.backends.protocol import Backend, LogDirMoves, ReplicaKey

READ_RETRY_SECONDS = 60.0
TRAILING_SECONDS = 60.0  # the end of a run: how long a broker's metadata may still show a move's replica set
ZK_NOTE = (
    "Through ZooKeeper alone the window runs as batches (the trigger znode takes one at a time); the "
    "brokers would allow a window that starts a move as soon as one ends: give --bootstrap-server as well"
)


class PaceSink(Protocol):
    def update(self, snap: pc.Snapshot, elapsed: float) -> None: ...


class PaceView(Protocol):
    """What render.progress.ExecuteReport shows of a paced run."""

    def pacing(self, total: int) -> AbstractContextManager[PaceSink]: ...
    def paced(self, summary: dict[str, Any]) -> None: ...


@dataclass(slots=True)
class BatchKeeper:
    """execute's batch runner for --batch-size: `_run_batches`, with the run kept beside the plan before its
    first batch starts (as a paced run keeps its cap): verify then calls the batches not started queued, and
    `execute --resume` goes on with the same size."""

    keep: PaceFile

    def keep_run(self, req: ExecuteRequest, report: ExecuteReport) -> None:
        """Keep the run beside the plan, before its first move."""
        if not req.dry_run and req.batch_size is not None:
            kept = pc.Pace(None, None, req.throttle, req.log_dir_throttle, batch_size=req.batch_size)
            self.keep.save(kept_dirs(kept, req), report)

    def __call__(
        self,
        backend: Backend,
        state: ClusterState,
        batches: list[list[PlanEntry]],
        req: ExecuteRequest,
        report: ExecuteReport,
        wait: bool,
        mover: LogDirMoves | None,
    ) -> list[PartitionProgress]:
        if batches:
            self.keep_run(req, report)
        return stored_foreground.batches(backend, state, batches, req, report, wait, mover)


@dataclass(slots=True)
class Pacer:
    """execute's batch runner for --max-moves-per-broker (ops.execute.execute(..., pacer=))."""

    cap: int
    order: pc.Order | None
    view: PaceView
    sizer: SizeReader | None = None
    keep: PaceFile | None = None  # where the cap is kept for --resume (written before the first move)
    stored: Any = None  # ops/stored.Keeper: the plan stored in the cluster (its lease, its rate loop kept)
    env: st.StepEnv | None = None  # the steps' environment on that stored plan (None: a plan in memory)
    lease: sp.Lease | None = None  # this run's lease of it
    observer: Any = field(default_factory=sp.watch)  # how another run's lease is judged stale

    def keep_run(self, req: ExecuteRequest, report: ExecuteReport) -> None:
        """Keep the cap beside the plan, before the first move."""
        if self.keep is not None and not req.dry_run:
            pace = pc.Pace(self.cap, self.order, req.throttle, req.log_dir_throttle)
            self.keep.save(kept_dirs(pace, req), report)

    def __call__(
        self,
        backend: Backend,
        state: ClusterState,
        batches: list[list[PlanEntry]],
        req: ExecuteRequest,
        report: ExecuteReport,
        wait: bool,
        mover: LogDirMoves | None,
    ) -> list[PartitionProgress]:
        entries = [e for b in batches for e in b]
        adds = adds_moves(backend)  # the admin API, or ZooKeeper mode with the brokers
        if not entries:
            return []
        self.keep_run(req, report)
        if not adds:
            report.info(ZK_NOTE)
            return stored_foreground.batches(
                backend, state, self.batches(backend, state, entries), req, report, wait, mover
            )
        if req.dry_run:
            return self.dry_window(backend, entries, req, report, mover)
        return _Window(self, backend, entries, req, report, mover).run()

    def batches(
        self, backend: Backend, state: ClusterState, entries: list[PlanEntry]
    ) -> list[list[PlanEntry]]:
        """The window as batches of at most `cap` moves per broker (each also within the trigger's size)."""
        limit = backend.reassignment_bytes_limit()
        return rp.paced_batches(
            entries, state, self.cap, self.order, NO_BYTES_LIMIT if limit is None else limit
        )

    def window(self, state: ClusterState, entries: Sequence[PlanEntry]) -> rp.Window:
        """The window at its start (core.run_plan.window): the moves with their leaders' sizes, when the
        brokers tell them. The real run (_Window) and the dry run both start from this."""
        return rp.window(
            pc.make_moves(entries, state, leader_sizes(self.sizer, state, entries)), self.cap, self.order
        )

    def dry_window(
        self,
        backend: Backend,
        entries: list[PlanEntry],
        req: ExecuteRequest,
        report: ExecuteReport,
        mover: LogDirMoves | None,
    ) -> list[PartitionProgress]:
        """What the window would start first (its writes recorded by the dry-run backend), and the order
        of the moves queued behind them."""
        topics = sorted({e.topic for e in entries})
        state = backend.read_state(topics, partition_state=True)  # as _Window reads it
        w = self.window(state, entries)
        by_tp = {(e.topic, e.partition): e for e in entries}
        queued = [pc_name(m) for m in w.queued()]
        sized = all(m.size is not None for m in w.first)
        lines = [
            f"Dry run: a window of at most {w.cap} moves per broker, in {w.order} order"
            f"{' (sizes from the brokers)' if sized else ''}; these start first (the writes listed below "
            "are theirs):",
            would_start_line([m.tp for m in w.first]),
        ]
        if queued:
            lines.append(
                f"Then {len(queued)} queued moves, each started as soon as it fits (the receiving broker with "
                f"the fewest moves coming in first), in this order: {','.join(queued)}"
            )
        doc = {"max_moves_per_broker": w.cap, "order": w.order, "first": [pc_name(m) for m in w.first]}
        report.run_plan(lines, {"window": {**doc, "queued": queued}})
        submit_batch(backend, state, [by_tp[m.tp] for m in w.first], req, report, mover, first=True)
        return []


def pc_name(m: pc.Move) -> str:
    return tp_str(m.tp)


class _Window:
    """One paced run through the admin API: steps of ops/step.py (read, decide by core/pacing.py's rules,
    mark through the stored plan's fence, write the throttle lists, submit) until every move is done, on
    the plan ops/stored.Keeper stored (or, unstored, on one in this process's memory). The step holds new
    moves while a health check, a pause or the hours say so, as every stored step does. This class only
    watches: the progress and byte view, the ETA, the stall and "grows" warnings, --timeout and Ctrl-C."""

    def __init__(
        self,
        pacer: Pacer,
        backend: Backend,
        entries: list[PlanEntry],
        req: ExecuteRequest,
        report: ExecuteReport,
        mover: LogDirMoves | None,
    ) -> None:
        self.p, self.backend, self.req, self.report, self.mover = pacer, backend, req, report, mover
        self.targets = {(e.topic, e.partition): e.replicas for e in entries}
        self.topics = sorted({t for t, _ in self.targets})
        state = backend.read_state(self.topics, partition_state=True)
        self.sized = pacer.sizer is not None
        start = pacer.window(state, entries)  # as the dry run shows it
        self.moves = {m.tp: m for m in [*start.first, *start.queue.moves()]}
        if pacer.env is None or pacer.lease is None:  # not stored in the cluster: the plan in memory
            self.env, self.lease = _memory_env(pacer, backend, entries, state, req)
        else:
            self.env, self.lease = pacer.env, pacer.lease
        self.env.finish, self.env.rates = False, False  # execute's end, and its own rate loop
        self.env.lazy = True  # a step per poll: health read when a move could start, writes when due
        self.env.throttle_settle = _settle_seconds()
        self.env.additional = True
        self.running: dict[TopicPartition, pc.Move] = {}
        self.queued: list[TopicPartition] = list(self.moves)
        self.done = 0
        self.started_any = False
        self.peak = 0
        self.bytes = Bytes()
        self.meter = pc.Meter()
        self.overhead = pc.Overhead()
        self.stalls = pc.Stalls(req.stuck_after)
        self.stuck = StuckWatch(req.stuck_after)
        self.told: set[str] = set()
        self.said: Any = None  # what held or waited when last said (said again only when it changes)
        self.state = state
        self.failing_since: float | None = None

    def run(self) -> list[PartitionProgress]:
        clock = Clock(self.req)
        if self.sized:
            self.meter.add(time.monotonic(), 0)  # nothing copied yet: the rate is known from the first poll
        try:
            with self.p.view.pacing(len(self.moves)) as sink:
                while True:
                    result = self._step()
                    if result is not None and result.all_done:
                        self._last_frame(sink, clock.elapsed())
                        break
                    self._measure(sink, clock.elapsed())
                    if self.req.rate_loop is not None:
                        self.req.rate_loop.poll(
                            self.backend, self.state, {tp: self.targets[tp] for tp in self.running}
                        )
                    self._timeout(clock)
                    clock.pause()
            results = self._settled(clock)
        except KeyboardInterrupt:
            raise WaitInterrupted(
                f"Interrupted while pacing; {moves_phrase(len(self.running), 'started keep', 'started keeps')} "
                f"running in the cluster, {moves_phrase(len(self.queued), 'are', 'is')} not started",
                hint=f"Continue with: {request_resume_command(self.req)} (or check with: "
                f"{verify_command(self.req)})",
            ) from None
        self.p.view.paced(
            {
                "bytes_copied": self.bytes.done if self.sized else None,
                "seconds": round(clock.elapsed(), 3),
                "max_in_flight_per_broker": self.peak,
            }
        )
        return results

    def _last_frame(self, sink: PaceSink, elapsed: float) -> None:
        """Every move has ended: the frame that stays on screen says so (no move running, no ETA)."""
        copied = self.bytes.done if self.sized else 0
        rate = copied / elapsed if self.sized and elapsed > 0 else None
        sink.update(pc.Snapshot(copied, copied, rate, None, 0, 0, self.done), elapsed)

    def _settled(self, clock: Clock) -> list[PartitionProgress]:
        """Where the plan ended. A broker's metadata may trail the controller's by more than the backend
        waits for it (seen at 3,000 moves under load 15-20): a partition that reads not as planned with its
        target and more replicas (the set a move passes through) is read again, every poll, for up to
        TRAILING_SECONDS; one that still reads so is reported as read."""
        deadline = time.monotonic() + TRAILING_SECONDS
        while True:
            results = classify(self.targets, self.state)
            trailing = [
                r for r in results if r.status is Status.NOT_AS_PLANNED and pc.mid_move(r.target, r.current)
            ]
            if not trailing or time.monotonic() >= deadline or clock.expired():
                return results
            clock.pause()
            self.state = self.backend.read_state(self.topics, partition_state=True)

    # -- the step and what it did ----------------------------------------------------------------
    def _step(self) -> st.StepResult | None:
        """One step of the plan; None when it failed (a broker that just left was asked, a throttle write
        failed): the next poll steps again, for up to READ_RETRY_SECONDS; the moves keep running meanwhile
        (a move marked but not submitted is submitted again by the next step)."""
        t0 = time.monotonic()
        try:
            result = st.step(
                self.env, self.lease, self.p.observer, ignore=self.req.ignore_health, keep_lease=True
            )
        except OperationalError as e:
            if self.failing_since is None:
                self.failing_since = t0
                self.report.warn(f"{e}; trying again at the next poll")
            if time.monotonic() - self.failing_since >= READ_RETRY_SECONDS:
                raise
            return None
        self.failing_since = None
        if result.driver is not None:
            raise BusyError(f"Another run took over the stored plan of this file: {result.driver}")
        if not result.stored or result.plan is None:
            raise OperationalError("the stored plan is gone (cancelled?); no more moves start")
        if result.state is not None:
            self.state = result.state
        self._check_alone(result.plan)
        self._follow(result, time.monotonic() - t0)
        self._say(result)
        return result

    def _follow(self, result: st.StepResult, cost: float) -> None:
        """The window's view of the plan after a step: the moves running, queued and done (this run's)."""
        plan, now = result.plan, time.monotonic()
        assert plan is not None
        for tp in [tp for tp in self.running if tp in plan.done]:
            m = self.running.pop(tp)
            self.overhead.ended(tp, now)
            self.done += 1
            self.bytes.done += self.bytes.total.get(tp, m.total_bytes if self.sized else 0)
            for d in (self.bytes.copied, self.bytes.total, self.bytes.leader, self.bytes.move):
                d.pop(tp, None)
        for tp in plan.started:
            if tp in self.moves and tp not in plan.done and tp not in self.running:
                self.running[tp] = self.moves[tp]
        done_before = [tp for tp in self.queued if tp in plan.done]  # done before this run's view of it
        self.done += len(done_before)
        self.queued = [tp for tp in self.queued if tp not in plan.started and tp not in plan.done]
        if self.running:
            self.peak = max(self.peak, *pc.in_flight(self.running.values()).values())
        if result.started:
            # the first start sets the run up (record, setup mark): not a move's cost
            # a start's cost is its own writes, not the step's reads (the ETA counts it once a move left)
            self.overhead.started(result.started, result.submit_seconds if self.started_any else 0.0)

    def _say(self, result: st.StepResult) -> None:
        """What the step did, as execute says it: the first start's throttle lines, the moves started (stdout),
        and a hold, pause or hours line when it changes."""
        req, report = self.req, self.report
        if result.writes is not None:
            said_writes(result.writes, report)
        if result.started and not self.started_any:
            self.started_any = True
            if req.throttle is not None:
                report.result(f"The inter-broker throttle limit was set to {req.throttle} B/s")
            if req.log_dir_throttle is not None:
                report.result(f"The replica-alter-dir throttle limit was set to {req.log_dir_throttle} B/s")
        for tps in (result.started, result.resubmitted):
            if tps:
                report.result(started_line(tps))
        said = st.hold_said(result)
        if said is None:
            return  # no health read (no move could start): what held is said again only when it changes
        key, line = said
        if key != self.said and line is not None:
            report.warn(line)
        self.said = key

    def _running(self) -> list[PartitionProgress]:
        """Where the running moves stand (only they: a poll costs the window's size, not the plan's)."""
        return classify({tp: self.targets[tp] for tp in self.running}, self.state)

    def _check_alone(self, plan: sp.StoredPlan) -> None:
        """Nothing but this plan may reassign while the window adds moves."""
        st_, mine = self.state, set(plan.moves)
        foreign = sorted(st_.reassigning_elsewhere) + sorted(
            (t, p)
            for t, topic in st_.topics.items()
            for p in {*topic.adding, *topic.removing}
            if topic.is_reassigning(p) and (t, p) not in mine
        )
        if foreign:
            raise BusyError(
                f"Cannot go on pacing: another reassignment appeared ({', '.join(map(tp_str, foreign[:5]))}); "
                f"{count(self.done, 'move')} of this plan complete, {len(self.running)} still moving",
                hint=f"Once it has finished, continue with: {request_resume_command(self.req)}",
            )

    def _timeout(self, clock: Clock) -> None:
        if clock.expired():
            moving = [r for r in self._running() if r.status is Status.IN_PROGRESS]
            raise BusyError(
                f"Timed out after {self.req.timeout:g}s; still in progress: {describe_moving(moving)}; "
                f"{count(len(self.queued), 'move')} not started",
                hint=f"The moves started keep running. Continue with: {request_resume_command(self.req)}",
            )

    # -- progress --------------------------------------------------------------------------------
    def _measure(self, sink: PaceSink, elapsed: float) -> None:
        now = time.monotonic()
        if self.sized:
            self._read_bytes(now)
        queued_bytes = sum(self.moves[tp].total_bytes for tp in self.queued) if self.sized else 0
        copied = self.bytes.done + sum(self.bytes.copied.values())
        total = self.bytes.done + sum(self.bytes.total.values()) + queued_bytes
        rate = self.meter.add(now, copied) if self.sized else None
        left = len(self.running) + len(self.queued)
        eta = pc.eta(copied, total, rate, left, self.overhead.mean, len(self.running))
        snap = pc.Snapshot(copied, total, rate, eta, len(self.running), len(self.queued), self.done)
        sink.update(snap, elapsed)
        self._warn_stuck(now)
        if self.sized:
            self._diagnose()

    def _read_bytes(self, now: float) -> None:
        assert self.p.sizer is not None
        keys: list[ReplicaKey] = []
        for (t, p), m in self.running.items():
            keys += [(t, p, m.source), *((t, p, b) for b in m.receivers)]
        sizes, _ = self.p.sizer.replica_sizes(keys)
        for (t, p), m in self.running.items():
            lead = sizes.get((t, p, m.source))
            got = {b: sizes.get((t, p, b), 0) for b in m.receivers}
            copied, total = pc.move_copied(m, lead, got)
            self.bytes.copied[(t, p)], self.bytes.total[(t, p)] = copied, total
            self.overhead.copied((t, p), copied, total, now)
            if lead is not None:
                self.bytes.leader.setdefault((t, p), pc.Meter(pc.DIAGNOSE_WINDOW)).add(now, lead)
            self.bytes.move.setdefault((t, p), pc.Meter(pc.DIAGNOSE_WINDOW)).add(now, copied)

    def _warn_stuck(self, now: float) -> None:
        live = set(self.state.broker_ids)
        if self.sized:
            copying = {tp: self.bytes.copied.get(tp, 0) for tp, m in self.running.items() if m.receivers}
            for tp, secs in self.stalls.update(copying, now):
                m = self.running[tp]
                down = [b for b in m.receivers if b not in live]
                self.report.warn(stalled_line(tp_str(tp), m, down, secs, cancel_command(self.req)))
            return
        for r, broker, gone in self.stuck.update(self._running(), live, now):
            self.report.warn(stuck_line(r.name, broker, gone, self.req))

    def _diagnose(self) -> None:
        """Once each: a receiving broker copying at the throttle; a move whose leader outgrows its copy."""
        for level, line in diagnose(self.running, self.bytes, self.req.throttle, self.told):
            (self.report.info if level == "info" else self.report.warn)(line)


def kept_dirs(pace: pc.Pace, req: ExecuteRequest) -> pc.Pace:
    """The pace kept beside the plan with this run's log-dir pacing (a resume goes on with it)."""
    return dataclasses.replace(pace, dir_cap=req.dir_cap, one_broker=req.one_broker)


def _memory_env(
    pacer: Pacer, backend: Backend, entries: list[PlanEntry], state: ClusterState, req: ExecuteRequest
) -> tuple[st.StepEnv, sp.Lease]:
    """A plan not stored in the cluster, stepped all the same: kept in this process's memory (no health
    checks: they are kept with a stored plan), its lease taken."""
    import socket

    from reassign_cli.backends.plan_store import in_memory

    moves = pc.make_moves(entries, state, leader_sizes(pacer.sizer, state, entries))
    sizes = [None if m.size is None else m.total_bytes for m in moves]
    pace = pc.Pace(pacer.cap, pacer.order, req.throttle, req.log_dir_throttle)
    origin = sp.Origin(socket.gethostname(), "this run", time.time())
    store, lease = in_memory(sp.new_plan(req.data, entries, pace, origin, sizes), pacer.observer)
    loop = req.rate_loop
    if loop is not None:  # kept with the plan as the stored one keeps it: new moves start at its rates
        from reassign_cli.backends.plan_store import update
        from reassign_cli.ops.stored_rates import kept_from

        def keep() -> None:
            update(store, lambda p: kept_from(p, loop))

        keep()
        loop.on_change = keep
    return st.StepEnv(backend, store, sizer=pacer.sizer), lease


def _settle_seconds() -> float:
    """How long a throttle write that concerns the moves starting is given (read at each run)."""
    return THROTTLE_SETTLE_SECONDS
