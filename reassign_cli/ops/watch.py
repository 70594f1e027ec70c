"""Waiting for moves already submitted (issue 25 item 4): `execute --wait`, the batches of a plan not stored
in the cluster, and `execute --resume` waiting for its batch still running. Each poll is one ops/step.step,
over a plan kept in this process's memory (backends/plan_store.MemoryPlanStore) whose moves are all marked
started: the step reads the partitions, marks the moves that ended, and starts nothing.

Only this run sees that plan, so a move that vanished (cancelled, or replaced by another reassignment) ended,
not as planned: it is never submitted again over whoever stopped it (StepEnv.resubmit False).

What the operator sees is `Watch`, shared with ZooKeeper mode's stored batches (ops/stored_foreground.py):
the progress bar, the stuck warnings, the rate loop and --timeout; Ctrl-C raises WaitInterrupted (the
reassignment keeps running).
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING, Any

from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition
from reassign_cli.core.progress import PartitionProgress, Status, StuckWatch, classify
from reassign_cli.errors import BusyError
from reassign_cli.ops import step as st
from reassign_cli.ops.request import Clock, WaitInterrupted, describe_moving, stuck_line, verify_command

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend
    from reassign_cli.ops.request import ExecuteReport, ExecuteRequest


class Watch:
    """Moves running, watched as the operator sees them: their progress (`bar`: the report's progress sink),
    a warning for a target broker unregistered too long, the rate loop's poll, and --timeout (BusyError
    naming what still moves)."""

    def __init__(
        self, backend: Backend, targets: dict[TopicPartition, list[int]], req: ExecuteRequest
    ) -> None:
        self.backend, self.targets, self.req = backend, targets, req
        self.bar: Any = None
        self.clock = Clock(req)
        self.stuck = StuckWatch(req.stuck_after)

    def update(self, state: ClusterState, report: ExecuteReport) -> list[PartitionProgress]:
        results = classify(self.targets, state)
        if self.bar is not None:
            self.bar.update(results, self.clock.elapsed())
        if self.req.rate_loop is not None:
            self.req.rate_loop.poll(self.backend, state, self.targets)
        for p, broker, gone in self.stuck.update(results, state.broker_ids, time.monotonic()):
            report.warn(stuck_line(p.name, broker, gone, self.req))
        moving = [r for r in results if r.status is Status.IN_PROGRESS]
        if moving and self.clock.expired():
            raise BusyError(
                f"Timed out after {self.req.timeout:g}s; still in progress: {describe_moving(moving)}",
                hint=f"The reassignment keeps running. Check it with: {verify_command(self.req)}",
            )
        return results


def wait_for(
    backend: Backend, targets: dict[TopicPartition, list[int]], req: ExecuteRequest, report: ExecuteReport
) -> list[PartitionProgress]:
    """Step until none of `targets` (submitted already) is in progress; their results as they ended.
    --timeout: BusyError naming what still moves; Ctrl-C: WaitInterrupted (the reassignment keeps running)."""
    env, lease = memory_env(backend, targets)
    observer = sp.watch()
    watch = Watch(backend, targets, req)
    try:
        with report.progress(len(targets)) as watch.bar:
            while True:
                result = st.step(env, lease, observer, keep_lease=True)
                assert result.state is not None
                if req.stored is not None:  # a stored plan's lease, renewed while this run drives
                    req.stored.renew()
                results = watch.update(result.state, report)
                if result.all_done:
                    return results
                watch.clock.pause()
    except KeyboardInterrupt:
        raise interrupted(req) from None


def interrupted(req: ExecuteRequest) -> WaitInterrupted:
    """Ctrl-C while moves run (nothing of the plan left unstarted): they keep running in the cluster."""
    return WaitInterrupted(
        "Interrupted while waiting; the reassignment keeps running in the cluster",
        hint=f"Check it (and remove the throttles once it is complete) with: {verify_command(req)}",
    )


def memory_env(backend: Backend, targets: dict[TopicPartition, list[int]]) -> tuple[st.StepEnv, sp.Lease]:
    """A plan of `targets` in this process's memory, every move marked started, its lease taken: the step
    reads and marks, starts nothing (no cap left), re-submits nothing, checks no health, ends nothing."""
    from reassign_cli.backends.plan_store import in_memory

    entries = [PlanEntry(t, p, list(r)) for (t, p), r in sorted(targets.items())]
    now = time.time()
    plan = sp.new_plan(b"", entries, pc.Pace(None, None), sp.Origin(socket.gethostname(), "this run", now))
    store, lease = in_memory(sp.mark_started(plan, sorted(targets), now), sp.watch())
    env = st.StepEnv(backend, store, finish=False, rates=False, lazy=True, resubmit=False)
    return env, lease
