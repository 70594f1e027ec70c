"""`execute --max-moves-per-broker N`: the window in the foreground (the pure rules are core/pacing.py).

Through the admin API (a backend that can `add_reassignment`) the window is a loop over ops/step.step on
the plan ops/stored.Keeper stored (or one kept in this process's memory): each poll is one step, which
notes the moves that ended, holds on pause, hours and health, marks the moves that fit through the fence,
rewrites the throttle lists for the moves running, starting and next in line, and submits them beside the
running ones (KIP-455). `_Window` only watches: with sizes (DescribeLogDirs) progress in bytes (each added
replica's size against its leader's), the ETA, the stall and "grows" warnings, --timeout and Ctrl-C.

Through ZooKeeper alone the trigger znode takes one batch at a time: the window is sent as batches
(each fills an empty window), run by execute's `_run_batches`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reassign_cli.core import pacing as pc
from reassign_cli.core import run_plan as rp
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition, tp_str
from reassign_cli.core.names import count
from reassign_cli.core.progress import PartitionProgress, Status, StuckWatch, classify
from reassign_cli.errors import BusyError, InvalidInputError, OperationalError, UsageError
from reassign_cli.ops import step as st
from reassign_cli.ops.execute import (
    NO_BYTES_LIMIT,
    THROTTLE_SETTLE_SECONDS,
    ExecuteReport,
    ExecuteRequest,
    WaitInterrupted,
    _Clock,
    _run_batches,
    cancel_command,
    describe_moving,
    request_resume_command,
    said_writes,
    started_line,
    stuck_line,
    submit_batch,
    verify_command,
    would_start_line,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from reassign_cli.backends.protocol import Backend, LogDirMoves, ReplicaKey

READ_RETRY_SECONDS = 60.0
TRAILING_SECONDS = 60.0  # the end of a run: how long a broker's metadata may still show a move's replica set
ZK_NOTE = (
    "Through ZooKeeper alone the window runs as batches (the trigger znode takes one at a time); the "
    "brokers would allow a window that starts a move as soon as one ends: run it with --bootstrap-server "
    "(without --zookeeper)"
)


class SizeReader(Protocol):
    """DescribeLogDirs sizes (admin.log_dirs.LogDirMover.replica_sizes)."""

    def replica_sizes(self, replicas: Sequence[ReplicaKey]) -> tuple[dict[ReplicaKey, int], list[int]]: ...


class PaceSink(Protocol):
    def update(self, snap: pc.Snapshot, elapsed: float) -> None: ...


class PaceView(Protocol):
    """What render.progress.ExecuteReport shows of a paced run."""

    def pacing(self, total: int) -> AbstractContextManager[PaceSink]: ...
    def paced(self, summary: dict[str, Any]) -> None: ...


PACE_SUFFIX = ".pacing.json"


@dataclass(frozen=True, slots=True)
class PaceFile:
    """`<plan file>.pacing.json`, beside the plan: the cap and order a paced run started with, kept until
    the run ends, so that `execute --resume` continues with the same cap (core.pacing.dump_pace)."""

    path: Path
    plan: bytes

    @classmethod
    def beside(cls, file_name: str, plan: bytes) -> PaceFile:
        return cls(Path(file_name + PACE_SUFFIX), plan)

    def read(self) -> pc.Pace | None:
        """The pace kept for this very plan; None when there is none (or it is for another plan)."""
        return self.kept()[0]

    def kept(self) -> tuple[pc.Pace | None, str | None]:
        """(the pace kept for this plan, None) or (None, why the file there cannot be used); (None, None)
        when there is no file."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None, None
        except OSError as e:
            return None, f"cannot be read ({e.strerror or e})"
        found = pc.read_pace(data)
        if found is None:
            return None, "is not a pace this version keeps"
        if found[1] != pc.plan_digest(self.plan):
            return None, (
                "was kept for other plan bytes (the plan was edited since, or the file comes from "
                "another directory or host)"
            )
        return found[0], None

    def save(self, pace: pc.Pace, report: ExecuteReport) -> None:
        """Written whole (a temporary file renamed over it); a failure is a warning, not an error."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_bytes(pc.dump_pace(pace, self.plan))
            os.replace(tmp, self.path)
        except OSError as e:
            again = run_option(pace)
            report.warn(
                f"cannot keep the cap in {self.path} ({e.strerror or e}): execute --resume will need {again} again"
            )

    def forget(self) -> None:
        """The run ended: nothing to resume."""
        self.path.unlink(missing_ok=True)


def resumed_pace(
    keep: PaceFile, cap: int | None, order: pc.Order | None, resume: bool, report: ExecuteReport
) -> pc.Pace | None:
    """This run's pace: the options given; with --resume, what they leave out comes from the kept file (a
    cap given anew replaces the kept one, said on stderr). None: not paced. A kept file that is not this
    plan's (other bytes, unreadable) is refused unless a cap is given (then it is said, and replaced):
    resuming unpaced would start every remaining move at once."""
    kept, problem = keep.kept() if resume else (None, None)
    if problem is not None:
        if cap is None:
            raise InvalidInputError(
                f"Cannot resume: {keep.path} {problem}; nothing was started. Give --max-moves-per-broker N "
                "to resume paced with that cap, or remove the file to resume unpaced"
            )
        report.info(f"Not using {keep.path}: it {problem}; the cap given, {cap}, holds from now on")
    if cap is None and kept is None:
        if order is not None:
            where = f" (no cap is kept in {keep.path})" if resume else ""
            raise UsageError(f"--order needs --max-moves-per-broker{where}")
        return None
    if cap is None:
        assert kept is not None
        if kept.cap is None:  # a --batch-size run
            if order is not None:
                raise UsageError(
                    f"--order needs --max-moves-per-broker ({keep.path} keeps a --batch-size run)"
                )
            report.info(f"Resuming with {run_option(kept)}, as kept in {keep.path}")
            return kept
        pace = dataclasses.replace(kept, order=order or kept.order)
        how = f" --order {pace.order}" if pace.order else ""
        report.info(f"Resuming with --max-moves-per-broker {pace.cap}{how}, as kept in {keep.path}")
        return pace
    if kept is not None and kept.cap != cap:
        was = kept.cap if kept.cap is not None else run_option(kept)
        report.info(
            f"Resuming with --max-moves-per-broker {cap} instead of the {was} this plan started with "
            f"(kept in {keep.path}): the new cap holds from now on"
        )
    if kept is not None:
        return dataclasses.replace(kept, cap=cap, order=order or kept.order, batch_size=None)
    return pc.Pace(cap, order)


def run_option(pace: pc.Pace) -> str:
    """The option a kept run goes with: `--max-moves-per-broker N` or `--batch-size N`."""
    if pace.cap is not None:
        return f"--max-moves-per-broker {pace.cap}"
    return f"--batch-size {pace.batch_size}"


def work_left(file_name: str, plan: bytes) -> pc.Pace | None:
    """THE test of whether a run of this plan has not ended (a paced or --batch-size run, interrupted or
    between two moves or batches): its pace, or None. verify then calls what is not started "queued" and keeps the throttles.
    Today the pace file beside the plan (kept from before the first move until the run ends)."""
    return PaceFile.beside(file_name, plan).read()


def forget_run(file_name: str, plan: bytes) -> bool:
    """The run of this plan is over (cancelled): nothing of it is queued or to resume any more. True when
    a pace was kept for it (and is now gone)."""
    keep = PaceFile.beside(file_name, plan)
    if keep.read() is None:
        return False
    keep.forget()
    return True


@dataclass(slots=True)
class BatchKeeper:
    """execute's batch runner for --batch-size: `_run_batches`, with the run kept beside the plan before its
    first batch starts (as a paced run keeps its cap): verify then calls the batches not started queued, and
    `execute --resume` goes on with the same size."""

    keep: PaceFile

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
        if batches and not req.dry_run and req.batch_size is not None:
            kept = pc.Pace(None, None, req.throttle, req.log_dir_throttle, batch_size=req.batch_size)
            self.keep.save(kept, report)
        return _batches(backend, state, batches, req, report, wait, mover)


def _batches(
    backend: Backend,
    state: ClusterState,
    batches: list[list[PlanEntry]],
    req: ExecuteRequest,
    report: ExecuteReport,
    wait: bool,
    mover: LogDirMoves | None,
) -> list[PartitionProgress]:
    """ZooKeeper mode's batches: steps of the stored plan when it is stored (ops/stored_foreground.py),
    else execute's own loop (a dry run, a plan not stored)."""
    from reassign_cli.ops import stored_foreground

    if wait and stored_foreground.stepped(req):
        return stored_foreground.run(backend, batches, req, report, mover)
    return _run_batches(backend, state, batches, req, report, wait, mover)


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
        adds = callable(getattr(backend, "add_reassignment", None))
        if not entries:
            return []
        if self.keep is not None and not req.dry_run:
            self.keep.save(pc.Pace(self.cap, self.order, req.throttle, req.log_dir_throttle), report)
        if not adds:
            report.info(ZK_NOTE)
            return _batches(backend, state, self.batches(backend, state, entries), req, report, wait, mover)
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


def leader_sizes(
    sizer: SizeReader | None, state: ClusterState, entries: Sequence[PlanEntry]
) -> dict[TopicPartition, int] | None:
    """Each moving partition's leader's log size (DescribeLogDirs); None without a size reader."""
    if sizer is None:
        return None
    keys = [(m.tp[0], m.tp[1], m.source) for m in pc.make_moves(entries, state)]
    sizes, _ = sizer.replica_sizes(keys)
    return {(t, p): s for (t, p, _), s in sizes.items()}


@dataclass(slots=True)
class _Bytes:
    """Byte bookkeeping of the running moves: what each has copied, and its leader's log over time."""

    copied: dict[TopicPartition, int] = field(default_factory=dict)
    total: dict[TopicPartition, int] = field(default_factory=dict)
    leader: dict[TopicPartition, pc.Meter] = field(default_factory=dict)
    move: dict[TopicPartition, pc.Meter] = field(default_factory=dict)
    done: int = 0  # bytes of the moves that ended


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
        self.bytes = _Bytes()
        self.meter = pc.Meter()
        self.overhead = pc.Overhead()
        self.stalls = pc.Stalls(req.stuck_after)
        self.stuck = StuckWatch(req.stuck_after)
        self.told: set[str] = set()
        self.said: Any = None  # what held or waited when last said (said again only when it changes)
        self.state = state
        self.failing_since: float | None = None

    def run(self) -> list[PartitionProgress]:
        clock = _Clock(self.req)
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
                f"Interrupted while pacing; {_moves(len(self.running), 'started keep', 'started keeps')} "
                f"running in the cluster, {_moves(len(self.queued), 'are', 'is')} not started",
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

    def _settled(self, clock: _Clock) -> list[PartitionProgress]:
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
        if not result.health_read and result.wait is None:
            return  # no health read (no move could start): what held is said again only when it changes
        v = result.verdict
        line = result.held_line if v is not None and v.held else result.wait
        if line is None and result.held_line is not None:
            line = result.held_line  # a partition at min ISR that a queued move touches waits
        # said again only when what holds changes (the line's "since" and counts change every step)
        key = (
            None
            if line is None
            else (result.wait, *(h.key for h in v.holds), *sorted(v.waiting))
            if v
            else line
        )
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

    def _timeout(self, clock: _Clock) -> None:
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
        into: dict[int, list[pc.Span]] = {}
        copies: dict[TopicPartition, pc.Span] = {}
        for tp, m in self.running.items():
            moved = pc.span(self.bytes.move.get(tp))
            if moved is None or not m.receivers or not _long_enough(self.bytes.move.get(tp)):
                continue  # a new move's first fetches pass before the quota measures them
            copies[tp] = pc.Span(moved.gained / len(m.receivers), moved.seconds)  # per receiver
            for b in m.receivers:
                into.setdefault(b, []).append(copies[tp])
        throttle = self.req.throttle
        for b, spans in sorted(into.items()):
            if "throttle" not in self.told and pc.at_throttle(spans, throttle):
                self.told.add("throttle")
                r = sum(s.rate for s in spans)
                self.report.info(
                    f"Broker {b} receives at {pc.human_bytes(r)}/s, the throttle's rate ({throttle} B/s): "
                    "the throttle is the limit. To go faster, run this execute again with a higher --throttle "
                    "(it changes the rate of the running moves)"
                )
        for tp, copy in copies.items():
            m, grew = self.running[tp], pc.span(self.bytes.leader.get(tp))
            if grew is None or tp_str(tp) in self.told:
                continue
            sharing = sum(1 for o in self.running.values() if set(o.receivers) & set(m.receivers))
            limit = pc.copy_limit(copy, throttle, sharing)
            need = pc.catch_up_throttle(grew.rate, limit, throttle, sharing)
            if need is not None:
                self.told.add(tp_str(tp))
                self.report.warn(grows_line(tp_str(tp), grew.rate, limit, need, throttle))


def _memory_env(
    pacer: Pacer, backend: Backend, entries: list[PlanEntry], state: ClusterState, req: ExecuteRequest
) -> tuple[st.StepEnv, sp.Lease]:
    """A plan not stored in the cluster, stepped all the same: kept in this process's memory (no health
    checks: they are kept with a stored plan), its lease taken."""
    import secrets
    import socket

    from reassign_cli.backends.plan_store import MemoryPlanStore, take_lease

    moves = pc.make_moves(entries, state, leader_sizes(pacer.sizer, state, entries))
    sizes = [None if m.size is None else m.total_bytes for m in moves]
    pace = pc.Pace(pacer.cap, pacer.order, req.throttle, req.log_dir_throttle)
    here = socket.gethostname()
    plan = sp.new_plan(req.data, entries, pace, sp.Origin(here, "this run", time.time()), sizes)
    store = MemoryPlanStore()
    store.create(plan)
    loop = req.rate_loop
    if loop is not None:  # kept with the plan as the stored one keeps it: new moves start at its rates
        from reassign_cli.backends.plan_store import update
        from reassign_cli.ops.stored_rates import kept_from

        def keep() -> None:
            update(store, lambda p: kept_from(p, loop))

        keep()
        loop.on_change = keep
    lease = sp.Lease(secrets.token_hex(8), here, os.getpid())
    take_lease(store, lease, pacer.observer, time.monotonic)
    return st.StepEnv(backend, store, sizer=pacer.sizer), lease


def _settle_seconds() -> float:
    """How long a throttle write that concerns the moves starting is given (read at each run)."""
    return THROTTLE_SETTLE_SECONDS


def _moves(n: int, many: str, one: str) -> str:
    """ "2 moves started keep", "1 move started keeps"."""
    return f"{n} move {one}" if n == 1 else f"{n} moves {many}"


def grows_line(name: str, growth: float, limit: float, need: int, throttle: int | None = None) -> str:
    """The "cannot catch up" warning: a --throttle to use only when the throttle is the limit (need > 0);
    otherwise the brokers are, and a throttle cannot help."""
    head = (
        f"{name}: its leader's log grows at {pc.human_bytes(growth)}/s, faster than the copy can go "
        f"({pc.human_bytes(limit)}/s at most): it cannot catch up"
    )
    if need > 0:
        return f"{head} at this throttle; --throttle {need} would let it finish"
    below = (
        f" (the copy goes slower than the throttle, {pc.human_bytes(throttle)}/s, allows)"
        if throttle is not None and throttle > 0
        else ""
    )
    return (
        f"{head}; the brokers (disk or network), not the throttle, are the limit{below}: a higher --throttle "
        "will not help. Lower the writes to the topic, or move this partition when its traffic is lower"
    )


def _long_enough(meter: pc.Meter | None) -> bool:
    """Enough samples behind a rate to judge a move by it (a third of the rate window)."""
    return (
        meter is not None
        and len(meter.samples) >= 3
        and meter.samples[-1][0] - meter.samples[0][0] >= pc.RATE_WINDOW / 3
    )


def stalled_line(name: str, m: pc.Move, down: Sequence[int], secs: float, cancel: str) -> str:
    if down:
        why = f"its target broker {','.join(map(str, down))} is not registered: start it, or "
    else:
        who = ",".join(map(str, m.receivers))
        why = f"check broker {who} (its log and the replica fetcher) and broker {m.source} (the leader), or "
    return (
        f"{name} is stuck: no bytes copied to broker {','.join(map(str, m.receivers))} for {secs:.0f} s; {why}"
        f"cancel the move: {cancel}"
    )
