"""One step over the stored plan (issue 25, DESIGN.md §5a): read the stored plan and the cluster, decide with
core/pacing.py's window rules, write through the stored plan's fence, then submit.

Used by `execute --detach` (its first step), `execute --resume` with no plan file (steps until done, holding
the lease), `verify` with a stored plan (one step per run; `--no-advance` only reports) and the foreground
window (ops/pacing._Window: a step per poll, holding the lease; `StepEnv.finish` False leaves the end to
execute) and ZooKeeper mode's foreground batches (ops/stored_foreground.py, the same way).

One step, in this order:
1. take the driver lease (backends/plan_store.take_lease); another run's fresh lease: report who drives,
   change nothing;
2. read the plan's partitions; a move of the plan that is moving but not recorded as started is adopted
   (recorded as started: it counts against the cap); a started move at its target replicas and no longer
   reassigning is done (`mark_done`); a started move neither moving nor done has vanished (a controller
   change, or a step killed between its mark and its submit) and is submitted again;
3. pause and hours (core/schedule.py), health (backends/*/health.py gather + core/health.check; the epoch
   seen is recorded with `stepped`): while anything holds, no new move starts;
4. the new moves that fit under the cap (core/pacing.Queue.take, the moves started and not done running);
5. ONE compare-and-set of the stored plan (done, adopted, started, stepped, lease renewed) BEFORE any
   submit: a lost fence aborts the step's starts, so nothing is ever submitted that was not marked. A step
   killed after the mark leaves "started, not moving, not done": vanished, re-submitted by the next step,
   counted against the cap meanwhile;
6. the throttle lists for the moves running, starting and next in line, through execute's fenced commit
   (`apply_throttles`: prior values recorded first);
7. the submit (AlterPartitionReassignments beside the running ones);
8. at the end (every move done): the throttles cleared exactly as verify clears them, then the stored plan
   deleted.

A plan that names log dirs (ops/stored_log_dirs.py): before 7, the arriving replicas' dirs told to their
brokers (`tell`); once every partition move is done, its log-dir moves paced (`phase`, its own single
compare-and-set) before the end, which then checks every planned dir.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from reassign_cli.backends import plan_store as ps
from reassign_cli.core import health as hc
from reassign_cli.core import pacing as pc
from reassign_cli.core import schedule as sch
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition
from reassign_cli.core.progress import PartitionProgress, Status, classify
from reassign_cli.errors import OperationalError
from reassign_cli.ops import stored_log_dirs

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend
    from reassign_cli.core.record_log import LeaseWatch

SETTLE_SECONDS = 1.0  # brokers apply config changes asynchronously: a throttle write is given this long
HEALTH_REFRESH_SECONDS = 30.0  # a lazy driver reads health at least this often (a controller change, min ISR)


@dataclass(slots=True)
class StepEnv:
    """What a step works on. `health`: the cluster's signals (None: not checked); `throttle_settle`: the
    pause after a throttle write that concerns the moves starting."""

    backend: Backend
    store: ps.PlanStore
    health: Callable[[], hc.Signals] | None = None
    now: Callable[[], float] = time.time
    clock: Callable[[], float] = time.monotonic
    throttle_settle: float = SETTLE_SECONDS
    sleep: Callable[[float], None] = time.sleep
    # Another run's lease is watched this long (this process's own clock) before the step gives up: a
    # driver killed -9 renews no more and is taken over; a live one renews at least every RENEW_SECONDS.
    watch_seconds: float = sp.STALE_SECONDS + 1.0
    first_seen: dict[str, float] = field(default_factory=dict)  # holds seen, across a run's steps
    sizer: Any = (
        None  # replica sizes through the brokers (the adaptive throttle's measure: ops/stored_rates.py)
    )
    # batches (ops/stored_batches.gate): what is submitted when moves start together, after the last batch
    gate: Callable[..., Any] | None = None
    # ZooKeeper mode's foreground batches (ops/stored_foreground.py): execute's own submit of a batch (its
    # setup mark, throttles and lines), called with (state, entries) instead of the step's
    submitter: Callable[[ClusterState, list[PlanEntry]], None] | None = None
    additional: bool = True  # False through ZooKeeper alone: a batch is the trigger znode, created alone
    # A foreground run (ops/pacing._Window) ends the plan itself (execute's end: the throttles cleared as
    # today, log-dir moves, --elect-leaders) and runs its own rate loop: `finish` False makes a step whose
    # moves are all done return `all_done` (nothing cleared, nothing deleted); `rates` False ticks no loop.
    finish: bool = True
    rates: bool = True
    # A driver that steps every poll holding its lease (the foreground window, `lazy`): its lease is not
    # written again by each step's take; the health signals (a whole-cluster read) are read only when a move
    # could start, or HEALTH_REFRESH_SECONDS after the last read; the plan is written only when it changed
    # or its lease is due for renewal. A cron step (a new process each time) is never lazy.
    lazy: bool = False
    written_at: float | None = None  # `clock` at this run's last write of the plan
    # False for a plan only this run sees (ops/watch.py): a move that vanished was cancelled or replaced by
    # someone else, and ended (not as planned); it is never submitted again over them
    resubmit: bool = True
    health_at: float | None = None  # `clock` at this run's last read of the health signals


@dataclass(slots=True)
class StepResult:
    """What one step saw and did. `stored` False: no plan is stored (nothing else is set)."""

    stored: bool = True
    total: int = 0
    moving: int = 0
    queued: int = 0
    done: int = 0
    bytes_total: int | None = None
    bytes_done: int | None = None
    rate: float | None = None  # bytes/s of the moves done, since the plan was stored
    eta: float | None = None
    started: list[TopicPartition] = field(default_factory=list)
    resubmitted: list[TopicPartition] = field(default_factory=list)
    # --on-under-min-isr cancel (ops/isr_cancel.py): the moves this step cancelled
    cancelled: list[TopicPartition] = field(default_factory=list)
    cancel_file: str | None = None  # where the cancelled moves' targets were saved
    verdict: hc.Verdict | None = None
    held_line: str | None = None
    first_seen: dict[str, float] = field(default_factory=dict)  # when each hold was first seen
    at: float | None = None  # the step's time (its holds' "since" counts to it)
    wait: str | None = None  # pause or hours
    driver: str | None = None  # another run drives: who (nothing was changed)
    lost_fence: bool = False  # another writer changed the plan: this step started nothing
    finished: bool = False  # every move done, throttles cleared, the stored plan deleted
    not_as_planned: list[PartitionProgress] = field(default_factory=list)
    cleared: Any = None
    plan_sha256: str = ""
    rate_lines: list[str] = field(default_factory=list)  # the throttle loop's changes (ops/stored_rates.py)
    rate_changes: list[dict[str, Any]] = field(default_factory=list)  # the same, written, for --format json
    log_dirs: Any = None  # the plan's log-dir moves (ops/stored_log_dirs.DirCounts; None: it names no dir)
    in_dirs_phase: bool = False  # every partition move done, the log-dir moves stepped: held_line counts them
    dirs_started: list[tuple[str, int, int]] = field(default_factory=list)  # log-dir moves this step started
    all_done: bool = False  # every partition move done, the end left to the caller (StepEnv.finish False)
    state: ClusterState | None = None  # the plan's topics as this step read them
    writes: Any = (
        None  # the throttle writes before this step's submit (ops/throttle_writes.ThrottleWrites), if any
    )
    plan: sp.StoredPlan | None = None  # the plan as this step left it (None: not read)
    submit_seconds: float = 0.0  # what starting this step's moves took (throttle writes, settle, submit)
    health_read: bool = True  # False: a lazy driver's step that read no health (no move could start)

    def progress_line(self) -> str:
        text = f"{self.moving} moving, {self.queued} queued, {self.done} done of {self.total}"
        if self.bytes_total is not None and self.bytes_done is not None:
            text += f"; {pc.human_bytes(self.bytes_done)} of {pc.human_bytes(self.bytes_total)} copied"
            if self.rate:
                text += f" at {pc.human_bytes(self.rate)}/s, {pc.eta_text(self.eta)}"
        return text


# -- pure decisions ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Seen:
    """The plan's moves as the cluster shows them."""

    ended: frozenset[TopicPartition]  # at target, not reassigning
    adopted: frozenset[TopicPartition]  # moving, not recorded as started
    vanished: frozenset[TopicPartition]  # started, not moving, not at target


def observe(plan: sp.StoredPlan, results: Iterable[PartitionProgress]) -> Seen:
    """Sort the plan's moves by what the cluster shows (`results`: core.progress.classify of the plan)."""
    status = {(r.topic, r.partition): r.status for r in results}
    ended = {tp for tp, s in status.items() if s is Status.COMPLETE and tp not in plan.done}
    moving = {tp for tp, s in status.items() if s is Status.IN_PROGRESS}
    adopted = {tp for tp in moving if tp not in plan.started}
    running = plan.started - plan.done
    vanished = {tp for tp in running if tp not in moving and tp not in ended}
    return Seen(frozenset(ended), frozenset(adopted), frozenset(vanished))


def decide(
    plan: sp.StoredPlan,
    state: ClusterState,
    may_start: Callable[[TopicPartition], bool],
    sizes: dict[TopicPartition, int] | None = None,
) -> tuple[list[TopicPartition], list[TopicPartition]]:
    """(the moves to start now, the moves next in line) under the plan's cap and order: the moves started
    and not done count as running (vanished ones too: they are submitted again); a move `may_start` refuses
    (at min ISR) stays queued."""
    entries = list(plan.entries)
    moves = pc.make_moves(entries, state, sizes)
    running = [m for m in moves if m.tp in plan.started and m.tp not in plan.done]
    waiting = [m for m in moves if m.tp not in plan.started and may_start(m.tp)]
    cap = plan.pace.cap or 1
    order = plan.pace.order or pc.default_order(moves)
    queue = pc.Queue(waiting, order)
    new = queue.take(running, cap) if waiting else []
    return [m.tp for m in new], [m.tp for m in queue.heads(cap)]


def stored_sizes(plan: sp.StoredPlan) -> dict[TopicPartition, int] | None:
    """The bytes each move copies, as stored, when every one is known (the window's default order is then
    largest-first, as core/pacing.default_order says); None otherwise."""
    if any(s is None for s in plan.sizes):
        return None
    return {(e.topic, e.partition): s for e, s in zip(plan.entries, plan.sizes, strict=True) if s is not None}


def observed(plan: sp.StoredPlan, seen: Seen, now: float) -> sp.StoredPlan:
    """The plan with what the cluster shows recorded (ended moves done, moving ones adopted)."""
    plan = sp.mark_done(plan, seen.ended, now)
    adopt = [tp for tp in seen.adopted if tp not in plan.started]
    return sp.mark_started(plan, adopt, now) if adopt else plan


def schedule_wait(plan: sp.StoredPlan, now: float) -> str | None:
    """The pause or hours line while no new move may start (None: one may)."""
    at = datetime.fromtimestamp(now, UTC)
    schedule = sch.Schedule.from_dict(plan.schedule) if plan.schedule else sch.Schedule()
    paused = sch.Paused.from_dict(plan.paused) if plan.paused else None
    return sch.wait_line(at, schedule, paused)


def counts(plan: sp.StoredPlan, result: StepResult, now: float) -> None:
    pr = sp.progress(plan)
    result.total, result.moving, result.queued, result.done = pr.total, pr.moving, pr.queued, pr.done
    result.bytes_total, result.bytes_done = pr.bytes_total, pr.bytes_done
    result.plan_sha256 = plan.plan_sha256
    result.log_dirs = stored_log_dirs.counts(plan)
    if pr.bytes_total is not None and pr.bytes_done and now > plan.created:
        result.rate = pr.bytes_done / (now - plan.created)
        result.eta = (pr.bytes_total - pr.bytes_done) / result.rate


def hold_said(result: StepResult) -> tuple[Any, str | None] | None:
    """What a driver that steps every poll says of a hold, pause or hours: (the key of what holds, its line),
    compared by the caller with the key it said last (a line's "since" and counts change every step, the key
    only when what holds does); None when the step read no health and waits for nothing (said as before)."""
    if not result.health_read and result.wait is None:
        return None
    v = result.verdict
    line = result.held_line if v is not None and v.held else result.wait
    if line is None and result.held_line is not None:
        line = result.held_line  # a partition at min ISR that a queued move touches waits
    if line is None:
        return None, None
    return ((result.wait, *(h.key for h in v.holds), *sorted(v.waiting)) if v else line), line


def driver_text(lease: sp.Lease | None) -> str:
    return "no one" if lease is None else f"run {lease.run} (pid {lease.pid} on {lease.host})"


# -- the step ----------------------------------------------------------------------------------------
def step(
    env: StepEnv,
    me: sp.Lease,
    observer: LeaseWatch,
    *,
    advance: bool = True,
    ignore: Iterable[str] = (),
    keep_lease: bool = False,
) -> StepResult:
    """One step (see the module docstring). `advance` False: only report (no lease, no write).
    `keep_lease`: the caller drives on (a foreground run): the lease is not released at the end."""
    if not advance:
        seen = env.store.read()
        if seen is None:
            return StepResult(stored=False)
        result = StepResult()
        counts(seen.plan, result, env.now())
        result.wait = schedule_wait(seen.plan, env.now())
        return result
    taken, seen = _take(env, me, observer)
    if seen is None:
        return StepResult(stored=False)
    if not taken:
        result = StepResult(driver=driver_text(seen.plan.lease))
        counts(seen.plan, result, env.now())
        return result
    try:
        return _drive(env, seen, me, ignore)
    finally:
        if not keep_lease:
            ps.release_lease(env.store, me.run)


def _take(env: StepEnv, me: sp.Lease, observer: LeaseWatch) -> tuple[bool, ps.Versioned | None]:
    if env.lazy:  # the lease ours already: read, not written (the step's own write renews it when due)
        seen = env.store.read()
        if seen is not None and seen.plan.lease is not None and seen.plan.lease.run == me.run:
            return True, seen
    taken, seen = take_watching(env.store, me, observer, env.clock, env.sleep, env.watch_seconds)
    if taken:
        env.written_at = env.clock()
    return taken, seen


def take_watching(
    store: ps.PlanStore,
    me: sp.Lease,
    observer: LeaseWatch,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    seconds: float = sp.STALE_SECONDS + 1.0,
) -> tuple[bool, ps.Versioned | None]:
    """The lease: taken at once when free or ours; another run's is watched until it is renewed (that run
    is alive: not taken) or stale (taken over), for at most `seconds` of `clock`."""
    taken, seen = ps.take_lease(store, me, observer, clock)
    if taken or seen is None:
        return taken, seen
    first = seen.plan.lease
    deadline = clock() + seconds
    while clock() < deadline:
        sleep(1.0)
        taken, seen = ps.take_lease(store, me, observer, clock)
        if taken or seen is None or seen.plan.lease != first:
            break
    return taken, seen


def _drive(env: StepEnv, seen: ps.Versioned, me: sp.Lease, ignore: Iterable[str]) -> StepResult:
    plan, now = seen.plan, env.now()
    targets = {(e.topic, e.partition): list(e.replicas) for e in plan.entries}
    state = env.backend.read_state(sorted({t for t, _ in targets}), partition_state=True)
    results = classify(targets, state)
    view = observe(plan, results)
    if not env.resubmit and view.vanished:
        plan = sp.mark_done(plan, view.vanished, now)
        view = Seen(view.ended, view.adopted, frozenset())
    plan = observed(plan, view, now)
    result = StepResult(state=state, plan=plan)
    wait = schedule_wait(plan, now)
    verdict = _verdict(env, plan, state, wait, now, ignore, result)
    if verdict is not None:
        plan = with_holds_seen(plan, env.first_seen)  # written with this step's compare-and-set
        moved = _cancel_under_min_isr(env, seen, plan, verdict, now, result)
        if moved is None:
            return result
        seen, plan = moved
    resubmit = sorted(view.vanished - set(result.cancelled))
    new: list[TopicPartition] = []
    heads: list[TopicPartition] = []
    may_start = wait is None and (verdict is None or not verdict.held)
    may_start_tp = verdict.may_start if verdict else lambda tp: True  # a partition at min ISR waits
    if may_start:
        new, heads = decide(plan, state, may_start_tp, stored_sizes(plan))
    picked = None if env.gate is None else env.gate(plan, view, resubmit, new, heads, may_start, may_start_tp)
    if picked is not None:  # batches (ops/stored_batches.py): nothing while the last batch runs
        resubmit, new, heads = picked.resubmit, picked.new, picked.heads
    if len(plan.done) == len(plan.entries):
        if not env.finish:
            counts(plan, result, now)
            result.all_done = True
            return result
        if _dirs_phase(env, seen, plan, me, wait is None, now, result):
            return result
        return _finish(env, seen, plan, result, now)
    plan = sp.mark_started(plan, new, now) if new else plan
    plan = sp.stepped(plan, now, verdict.epoch if verdict else _epoch(seen.plan))
    plan = sp.renew_lease(plan, me.run)
    ticked = _tick(env, plan, state, now, verdict)
    if not resubmit and not new and _unchanged(env, seen.plan, ticked.plan):
        counts(plan, result, now)  # a lazy driver: nothing to write yet, nothing to submit
        return _held(env, verdict, plan, now, result)
    written = env.store.replace(seen, ticked.plan)
    if written is None:  # another writer won: start nothing this step
        result.lost_fence = True
        counts(seen.plan, result, now)
        return result
    env.written_at = env.clock()
    plan, result.rate_lines, result.rate_changes = _write_rates(env, written, state, ticked, now)
    result.plan = plan
    t0 = env.clock()
    result.writes = _submit(env, state, plan, [*resubmit, *new], heads, now)
    result.submit_seconds = env.clock() - t0
    result.started, result.resubmitted = new, resubmit
    counts(plan, result, now)
    return _held(env, verdict, plan, now, result)


def _held(
    env: StepEnv, verdict: hc.Verdict | None, plan: sp.StoredPlan, now: float, result: StepResult
) -> StepResult:
    """`result` with the hold's line (what holds, since when, with the plan's counts), when one holds."""
    if verdict is not None:
        pr = sp.progress(plan)
        result.held_line = hc.render_line(
            verdict, first_seen=env.first_seen, now=now, moving=pr.moving, queued=pr.queued
        )
    return result


def _verdict(
    env: StepEnv,
    plan: sp.StoredPlan,
    state: ClusterState,
    wait: str | None,
    now: float,
    ignore: Iterable[str],
    result: StepResult,
) -> hc.Verdict | None:
    """The health verdict of this step (None: not checked), recorded in `result`."""
    result.health_read = _health_due(env, plan, state, wait)
    verdict = _health(env, plan, now, ignore) if result.health_read else None
    result.verdict, result.wait, result.first_seen, result.at = verdict, wait, env.first_seen, now
    return verdict


def _health_due(env: StepEnv, plan: sp.StoredPlan, state: ClusterState, wait: str | None) -> bool:
    """Whether this step reads the health signals: always, but for a lazy driver whose last read is fresh
    and under whose cap no move could start now (a hold would change nothing but its line)."""
    if not env.lazy or env.health is None:
        return True
    fresh = env.health_at is not None and env.clock() - env.health_at < HEALTH_REFRESH_SECONDS
    if fresh and (wait is not None or not decide(plan, state, lambda tp: True, stored_sizes(plan))[0]):
        return False
    env.health_at = env.clock()
    return True


def _epoch(plan: sp.StoredPlan) -> int | None:
    """The controller epoch the last step saw (kept by a step that read no health)."""
    return plan.last_step.controller_epoch if plan.last_step is not None else None


def _unchanged(env: StepEnv, before: sp.StoredPlan, after: sp.StoredPlan) -> bool:
    """A lazy driver's plan that only gained a step's time and a renewal, with its last write fresher than
    RENEW_SECONDS - 1: not written (a poll is then a read of the plan and of its partitions, no more)."""
    if not env.lazy or env.written_at is None or env.clock() - env.written_at >= sp.RENEW_SECONDS - 1:
        return False
    return _essence(before) == _essence(after)


def _essence(plan: sp.StoredPlan) -> sp.StoredPlan:
    """The plan without what every step changes (its time, the lease's renewal count)."""
    lease = None if plan.lease is None else replace(plan.lease, renewals=0)
    return replace(plan, last_step=sp.LastStep(0.0, _epoch(plan)), updated=0.0, lease=lease)


def _dirs_phase(
    env: StepEnv,
    seen: ps.Versioned,
    plan: sp.StoredPlan,
    me: sp.Lease,
    unpaused: bool,
    now: float,
    result: StepResult,
) -> bool:
    """The plan's log-dir moves once every partition move is done (ops/stored_log_dirs.py), started while
    no pause, hours or health hold. False: every planned replica is in its dir (the end follows)."""
    verdict = result.verdict
    may_start = unpaused and (verdict is None or not verdict.held)
    plan = sp.renew_lease(sp.stepped(plan, now, verdict.epoch if verdict else None), me.run)
    out = stored_log_dirs.phase(env, seen, plan, may_start, now, tripped(verdict))  # a hold halves it
    if out is None:
        return False
    plan, dirs = out
    result.lost_fence, result.dirs_started = dirs.lost_fence, dirs.started
    result.rate_lines, result.rate_changes = dirs.lines, dirs.changes  # ops/stored_logdir_rates.py
    counts(seen.plan if dirs.lost_fence else plan, result, now)
    result.in_dirs_phase = True
    if verdict is not None and not dirs.lost_fence and result.log_dirs is not None:
        d = result.log_dirs  # a hold says why no log-dir move started, with their counts
        result.held_line = hc.render_line(
            verdict, first_seen=env.first_seen, now=now, moving=d.moving, queued=d.queued, of_log_dirs=True
        )
    return True


def tripped(verdict: hc.Verdict | None) -> str | None:
    """A held health check as the rate loops' tripped guard (they halve on it), None when nothing holds."""
    if verdict is None or not verdict.held:
        return None
    return "health: " + ", ".join(dict.fromkeys(h.check for h in verdict.holds))


def _tick(
    env: StepEnv, plan: sp.StoredPlan, state: ClusterState, now: float, verdict: hc.Verdict | None
) -> Any:
    """The throttle loop kept with the plan, ticked (ops/stored_rates.py): its new state rides on this
    step's compare-and-set; a held health check is its tripped guard."""
    from reassign_cli.ops import stored_rates
    from reassign_cli.ops.rate_loop import every_partition

    if not env.rates:
        return stored_rates.Ticked(plan)
    # the ISR signal watches every partition led by a broker of ours, not only the plan's
    return stored_rates.tick(
        plan, state, now, env.sizer, tripped(verdict), lambda: every_partition(env.backend, state)
    )


def _write_rates(
    env: StepEnv, written: ps.Versioned, state: ClusterState, ticked: Any, now: float
) -> tuple[sp.StoredPlan, list[str], list[dict[str, Any]]]:
    """The loop's changes written after the compare-and-set (fenced throttle commit), the loop put back
    when that write fails (ops/stored_rates.settle): the plan as kept, its lines, and the changes written
    as --format json lists them."""
    from reassign_cli.ops import stored_rates

    plan, lines, ok = stored_rates.settle(env.store, written, env.backend, state, ticked)
    when = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
    changes = [{"time": when, **c.to_dict()} for c in ticked.changes] if ok else []
    return plan, [*ticked.warnings, *lines], changes


def _cancel_under_min_isr(
    env: StepEnv, seen: ps.Versioned, plan: sp.StoredPlan, verdict: hc.Verdict, now: float, result: StepResult
) -> tuple[ps.Versioned, sp.StoredPlan] | None:
    """--on-under-min-isr cancel (ops/isr_cancel.py): the running moves of partitions under min ISR marked
    done through the fence, then cancelled. None: the fence was lost (nothing cancelled, nothing started)."""
    from reassign_cli.ops import isr_cancel

    tps = isr_cancel.touched(plan, verdict) if isr_cancel.wants_cancel(plan) else []
    if not tps:
        return seen, plan
    plan = sp.mark_done(plan, tps, now)
    written = env.store.replace(seen, plan)
    if written is None:
        result.lost_fence = True
        counts(seen.plan, result, now)
        return None
    result.cancelled = tps
    result.cancel_file = str(isr_cancel.cancel_moves(env.backend, plan, tps))
    return written, plan


def _health(env: StepEnv, plan: sp.StoredPlan, now: float, ignore: Iterable[str]) -> hc.Verdict | None:
    if env.health is None:
        return None
    signals = env.health()
    brokers = {b for e in plan.entries for b in e.replicas}
    previous = plan.last_step.controller_epoch if plan.last_step is not None else None
    queued = [tp for tp in plan.moves if tp not in plan.started]
    from reassign_cli.ops.stored_health import stored_ignore

    ignore = {*ignore, *stored_ignore(plan.schedule)}  # execute --ignore-health, kept with the plan
    verdict = hc.check(signals, plan_brokers=brokers, queued=queued, previous_epoch=previous, ignore=ignore)
    # when each hold was first seen: kept with the plan, so a cron step (a new process each time) says
    # "since 40 s" of a hold an earlier step saw, not "since 0 s"
    env.first_seen = hc.seen_since(verdict, {**holds_seen(plan), **env.first_seen}, now)
    return verdict


HOLDS_SEEN = "holds_seen"  # the schedule object's key: Hold.key -> when a step first saw it (epoch seconds)


def holds_seen(plan: sp.StoredPlan) -> dict[str, float]:
    """The stored first-seen times of the holds (anything else under the key: none)."""
    value = plan.schedule.get(HOLDS_SEEN)
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, (int, float))}


def with_holds_seen(plan: sp.StoredPlan, seen: dict[str, float]) -> sp.StoredPlan:
    """The plan with `seen` kept under HOLDS_SEEN (the schedule's other keys kept; none: the key gone)."""
    if holds_seen(plan) == seen:
        return plan
    schedule = {k: v for k, v in plan.schedule.items() if k != HOLDS_SEEN}
    if seen:
        schedule[HOLDS_SEEN] = dict(sorted(seen.items()))
    return replace(plan, schedule=schedule)


def _submit(
    env: StepEnv,
    state: ClusterState,
    plan: sp.StoredPlan,
    submit: Sequence[TopicPartition],
    heads: Sequence[TopicPartition],
    now: float | None = None,
) -> Any:
    """Throttle lists (running, starting, next in line) through the fenced commit, then the submit; the
    throttle writes (None: none)."""
    from reassign_cli.ops.stored_rates import for_new_moves
    from reassign_cli.ops.throttle_writes import apply_throttles, concerns

    if not submit:
        return None
    by_tp = {(e.topic, e.partition): e for e in plan.entries}
    if env.submitter is not None:
        env.submitter(state, [by_tp[tp] for tp in submit])
        return None
    running = [tp for tp in plan.moves if tp in plan.started and tp not in plan.done]
    listed = [by_tp[tp] for tp in dict.fromkeys([*running, *submit, *heads])]
    batch: list[PlanEntry] = [by_tp[tp] for tp in submit]
    pace = plan.pace
    rate, overrides = for_new_moves(plan, env.now() if now is None else now)
    writes = None
    if rate is not None or pace.log_dir_throttle is not None:
        writes = apply_throttles(env.backend, state, listed, rate, pace.log_dir_throttle, overrides=overrides)
        # the brokers apply configs asynchronously: a wait only when the write concerned these moves
        # (the moves next in line were listed ahead by an earlier step)
        if writes.changes and concerns(writes.changes, state, batch, rate):
            time.sleep(env.throttle_settle)
    stored_log_dirs.tell(env, plan, state, batch)  # the arriving replicas' log dirs, before the submit
    if not env.backend.create_reassignment(batch, additional=env.additional):
        raise OperationalError("the reassignment could not be submitted; the next step tries again")
    return writes


def _finish(
    env: StepEnv, seen: ps.Versioned, plan: sp.StoredPlan, result: StepResult, now: float
) -> StepResult:
    """Every move done: the throttles cleared as verify clears them, then the stored plan deleted (only
    once the clear happened: while another reassignment runs, verify keeps the throttles)."""
    from reassign_cli.ops.verify import verify

    targets = {(e.topic, e.partition): list(e.replicas) for e in plan.entries}
    dirs = stored_log_dirs.planned(plan.entries) if stored_log_dirs.stored(plan) is not None else {}
    with_dirs: dict[str, Any] = {"dirs": dirs, "log_dirs": env.sizer} if dirs else {}
    outcome = verify(env.backend, targets, **with_dirs)
    counts(plan, result, now)
    result.cleared = outcome.cleared
    result.not_as_planned = [r for r in outcome.results if r.status is Status.NOT_AS_PLANNED]
    if outcome.cleared is None:
        written = env.store.replace(seen, plan)
        result.lost_fence = written is None
        return result
    env.store.delete()
    result.finished = True
    return replace(result, moving=0, queued=0)
