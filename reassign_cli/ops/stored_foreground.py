"""ZooKeeper mode's foreground batches with their plan stored (issue 25 item 4, slice 2): `execute --batch-size
N`, and `--max-moves-per-broker N` through ZooKeeper alone, run as a loop of ops/step.step over the stored plan,
as the admin API's window (ops/pacing._Window) is.

Used by ops/pacing (BatchKeeper, Pacer) when cli/stored.foreground stored the plan (ops/stored.Keeper, its
StepEnv kept on it); a dry run, and a plan not stored, keep ops/execute._run_batches (whose waits are steps
too: ops/watch.wait_for).

Each poll is one step (lazy: the lease held, written when due). The step reads the plan's partitions, marks
the batch that ended done, checks the cluster's health, and picks the next batch once the previous one ended
(ops/stored_batches.gate); it marks it started through the fence, then submits it through execute's own
submit (`submit_batch`: the setup mark, the throttles, the "started" line, a lost race undone), after the
"Batch i/n" line and, from the second batch on, the check that no other reassignment appeared. While a health
check holds, no batch starts, and the hold is said once (again only when what holds changes). The batch
running is watched by ops/watch.Watch, as wait_for watches: its progress, the stuck warnings, the rate loop,
--timeout (per batch) and Ctrl-C (the batches not started named, with the resume command).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition
from reassign_cli.core.names import count
from reassign_cli.core.progress import PartitionProgress, classify
from reassign_cli.errors import BusyError, OperationalError
from reassign_cli.ops import step as st
from reassign_cli.ops import stored_batches as sb
from reassign_cli.ops.execute import THROTTLE_SETTLE_SECONDS, _run_batches, check_free, submit_batch
from reassign_cli.ops.request import (
    WaitInterrupted,
    request_resume_command,
    verify_command,
)
from reassign_cli.ops.watch import Watch, interrupted

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend, LogDirMoves
    from reassign_cli.ops.request import ExecuteReport, ExecuteRequest


def stepped(req: ExecuteRequest) -> bool:
    """Whether this run's batches are steps of its stored plan (a real run whose plan was stored)."""
    return req.stored is not None and getattr(req.stored, "env", None) is not None and not req.dry_run


def batches(
    backend: Backend,
    state: ClusterState,
    batches: list[list[PlanEntry]],
    req: ExecuteRequest,
    report: ExecuteReport,
    wait: bool,
    mover: LogDirMoves | None,
) -> list[PartitionProgress]:
    """The batches' runner of ops/pacing (BatchKeeper, and Pacer through ZooKeeper alone): steps of the stored
    plan when it is stored, else execute's own loop (a dry run, a plan not stored)."""
    if wait and stepped(req):
        return run(backend, batches, req, report, mover)
    return _run_batches(backend, state, batches, req, report, wait, mover)


def run(
    backend: Backend,
    batches: list[list[PlanEntry]],
    req: ExecuteRequest,
    report: ExecuteReport,
    mover: LogDirMoves | None,
) -> list[PartitionProgress]:
    """Step the stored plan until every move is done; the results of each batch as it ended."""
    return _Batches(backend, batches, req, report, mover).run()


class _Batches:
    def __init__(
        self,
        backend: Backend,
        batches: list[list[PlanEntry]],
        req: ExecuteRequest,
        report: ExecuteReport,
        mover: LogDirMoves | None,
    ) -> None:
        self.backend, self.req, self.report, self.mover = backend, req, report, mover
        self.batches = [[(e.topic, e.partition) for e in b] for b in batches]
        self.n = len(batches)
        self.targets = {(e.topic, e.partition): list(e.replicas) for b in batches for e in b}
        self.env: st.StepEnv = req.stored.env
        self.lease: sp.Lease = req.stored.run
        self.env.finish, self.env.rates, self.env.lazy = False, False, True  # execute's end, its own loop
        self.env.throttle_settle = THROTTLE_SETTLE_SECONDS
        self.env.submitter = self._submit
        self.observer = sp.watch()
        self.index = -1  # the batch running (0-based)
        self.running: list[TopicPartition] = []
        self.results: list[PartitionProgress] = []
        self.stack = ExitStack()
        self.watch: Watch | None = None  # the batch running
        self.started_at = time.monotonic()
        self.said: Any = None

    def run(self) -> list[PartitionProgress]:
        try:
            with self.stack:
                for _ in self._polls():
                    pass
        except KeyboardInterrupt:
            raise self._interrupted() from None
        return self.results

    def _polls(self) -> Iterator[None]:
        while True:
            result = self._step()
            assert result.plan is not None and result.state is not None
            if self.running and all(tp in result.plan.done for tp in self.running):
                self._ended(result.state)
            if result.all_done:
                return
            if not self.running:
                self._idle(result)
            elif not result.started:  # a batch this step started is watched from the next (reads predate it)
                self._watch(result.state)
            yield
            self._pause()

    def _step(self) -> st.StepResult:
        result = st.step(self.env, self.lease, self.observer, ignore=self.req.ignore_health, keep_lease=True)
        if result.driver is not None:
            raise BusyError(f"Another run took over the stored plan of this file: {result.driver}")
        if not result.stored or result.plan is None:
            raise OperationalError("the stored plan is gone (cancelled?); no more moves start")
        self._say(result)
        return result

    # -- a batch starts (called by the step, after its compare-and-set) ------------------------------
    def _submit(self, state: ClusterState, entries: list[PlanEntry]) -> None:
        tps = [(e.topic, e.partition) for e in entries]
        if self.running and all(tp in self.running for tp in tps):  # moves of the running batch, lost
            submit_batch(self.backend, state, entries, self.req, self.report, self.mover, first=False)
            return
        if self.running:  # the previous batch ended in this step's reads
            self._ended(state)
        i = self.index + 1
        if self.n > 1:
            self.report.info(f"Batch {i + 1}/{self.n}: {count(len(entries), 'partition')}")
        if i > 0:
            state = self.backend.read_state(sorted({e.topic for e in entries}))
            check_free(state, i, self.n, self.req)
        submit_batch(self.backend, state, entries, self.req, self.report, self.mover, first=(i == 0))
        self.index, self.running = i, tps
        self.started_at = time.monotonic()
        self.watch = Watch(self.backend, {tp: self.targets[tp] for tp in tps}, self.req)
        self.watch.bar = self.stack.enter_context(self.report.progress(len(tps)))

    def _ended(self, state: ClusterState) -> None:
        results = classify({tp: self.targets[tp] for tp in self.running}, state)
        if self.watch is not None and self.watch.bar is not None:
            self.watch.bar.update(results, self.watch.clock.elapsed())
        self.stack.close()
        self.stack = ExitStack()
        self.watch = None
        self.results += results
        self.running = []

    # -- a poll ----------------------------------------------------------------------------------
    def _watch(self, state: ClusterState) -> None:
        """The batch running, as ops/watch.wait_for watches it."""
        assert self.watch is not None
        self.watch.update(state, self.report)

    def _idle(self, result: st.StepResult) -> None:
        """No batch runs and none started: held (said by `_say`), or another reassignment is in the way."""
        held = result.wait is not None or (result.verdict is not None and result.verdict.held)
        assert result.state is not None
        if not held and result.health_read:
            state = self.backend.read_state(sorted({t for t, _ in self.targets}))
            check_free(state, self.index + 1, self.n, self.req)
        if self.req.timeout is not None and time.monotonic() - self.started_at >= self.req.timeout:
            which, partitions = self._not_started()
            raise BusyError(
                f"Timed out after {self.req.timeout:g}s while held; {which} ({count(partitions, 'partition')}) "
                "not started",
                hint=f"Continue with: {request_resume_command(self.req)} (or check with: {verify_command(self.req)})",
            )

    def _not_started(self) -> tuple[str, int]:
        """The batches after the one running (or after the last that ended), as text, and their partitions."""
        if self.index < 0:
            which = "batch 1" if self.n == 1 else f"batches 1-{self.n}"
            return which, sum(len(b) for b in self.batches)
        left = sb.left(self.batches, [tp for b in self.batches[: self.index + 1] for tp in b])
        return left.which or "no batch", left.partitions

    def _say(self, result: st.StepResult) -> None:
        """A hold, pause or hours line, said when what holds changes (as the window says it)."""
        said = st.hold_said(result)
        if said is None:
            return
        key, line = said
        if key != self.said and line is not None:
            self.report.warn(line)
        self.said = key

    def _pause(self) -> None:
        time.sleep(max(self.req.poll_interval, 0.05))

    def _interrupted(self) -> WaitInterrupted:
        which, partitions = self._not_started()
        if self.index < 0 or not partitions:
            return interrupted(self.req)
        return WaitInterrupted(
            f"Interrupted while waiting for batch {self.index + 1}/{self.n}; it keeps running in the cluster, "
            f"{which} ({partitions} partition{'' if partitions == 1 else 's'}) not started",
            hint=f"Continue with: {request_resume_command(self.req)} (or check with: {verify_command(self.req)})",
        )
