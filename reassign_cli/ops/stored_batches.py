"""A stored plan run as batches (issue 25 item 9): what a step submits when moves can only be started
together, one batch after the previous one ended.

Used by ops/step.py's `_drive` (the `gate` of its StepEnv, set by cli/stored.step_env) for:
- ZooKeeper alone (no --bootstrap-server): a batch is the trigger znode /admin/reassign_partitions, which
  is create-only; a new batch starts only when the znode is gone (the controller deletes it when the last
  of its partitions completed);
- a plan stored with `--batch-size N` (any backend): the next batch starts when no move of the plan is
  moving.

What a batch holds (`pick`, pure):
- a plan stored with `--batch-size N`: the moves started and not done that vanished (recorded before a
  step died, never submitted) first, then the next queued moves in the plan's order, N at most;
- a plan stored with `--max-moves-per-broker N`: the moves step.decide took (at most N per broker, the
  vanished ones counted as running) and the vanished ones: each batch respects the cap;
- and never more than one trigger znode holds (`limit`, the backend's reassignment_bytes_limit): the rest
  waits for the next batch.

While the previous batch runs (the trigger znode exists, or a move of the plan is moving), the step submits
nothing: it notes the moves that ended and writes its compare-and-set as always. So a batch is never
created twice while the trigger exists; a step killed after its mark but before its trigger leaves moves
"started, not moving, not done" (vanished), which the next step submits as its batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reassign_cli.core.model import PlanEntry, TopicPartition

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend
    from reassign_cli.core import stored_plan as sp
    from reassign_cli.core.model import ClusterState
    from reassign_cli.ops.step import Seen


@dataclass(frozen=True, slots=True)
class Pick:
    """What a batch step submits: the vanished moves again, the new ones, and the next in line (throttled
    ahead)."""

    resubmit: list[TopicPartition]
    new: list[TopicPartition]
    heads: list[TopicPartition]


def batched(plan: sp.StoredPlan, zk_alone: bool) -> bool:
    """Whether the plan's steps run batches: through ZooKeeper alone, or a plan stored with --batch-size."""
    return zk_alone or plan.pace.batch_size is not None


def fit(entries: Sequence[PlanEntry], limit: int | None) -> int:
    """How many of `entries` (in this order) one trigger znode of `limit` bytes holds (None: all)."""
    if limit is None or not entries:
        return len(entries)
    from reassign_cli.core.znodes import encode_reassignment

    lo, hi = 1, len(entries)  # at least one: a single partition too large is refused by execute's checks
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(encode_reassignment(list(entries[:mid]))) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def pick(
    plan: sp.StoredPlan,
    busy: bool,
    resubmit: Sequence[TopicPartition],
    new: Sequence[TopicPartition],
    heads: Sequence[TopicPartition],
    *,
    may_start: bool,
    limit: int | None = None,
    may_start_tp: Callable[[TopicPartition], bool] = lambda tp: True,
) -> Pick:
    """The batch to submit (pure). `busy`: the previous batch still runs (nothing is submitted);
    `resubmit`, `new`, `heads`: what a step's window would submit (step.decide); `may_start`: nothing holds
    (pause, hours, health): new moves may start; `may_start_tp`: the partition-level hold (a partition at
    min ISR): such a move stays queued, out of this batch, and the next queued moves take its place."""
    if busy:
        return Pick([], [], [])
    size = plan.pace.batch_size
    if size is not None:
        queued = [tp for tp in plan.moves if tp not in plan.started and may_start_tp(tp)]
        room = max(size - len(resubmit), 0)
        new = queued[:room] if may_start else []
        heads = queued[room : room + size] if may_start else []
    by_tp = {(e.topic, e.partition): e for e in plan.entries}
    wanted = [*resubmit, *new]
    n = fit([by_tp[tp] for tp in wanted], limit)
    kept = wanted[:n]
    return Pick(
        [tp for tp in kept if tp in set(resubmit)],
        [tp for tp in kept if tp not in set(resubmit)],
        list(heads) if n == len(wanted) else [],
    )


def trigger_exists(backend: Backend) -> bool:
    """Whether /admin/reassign_partitions exists (a ZooKeeper backend; False otherwise)."""
    from reassign_cli.backends.zookeeper.backend import ZkBackend
    from reassign_cli.core.znodes import REASSIGN_PARTITIONS

    if not isinstance(backend, ZkBackend):
        return False
    _, version = backend.session.get(REASSIGN_PARTITIONS)
    return version is not None


def gate(backend: Backend) -> Callable[..., Pick | None]:
    """The StepEnv's gate for `backend`: given (plan, the step's view, resubmit, new, heads, may_start and the
    partition-level may_start_tp), the batch to submit, or None when the plan does not run batches (the
    window's choice stands)."""
    from reassign_cli.backends.zookeeper.backend import ZkBackend

    zk_alone = isinstance(backend, ZkBackend) and backend.admin is None

    def check(
        plan: sp.StoredPlan,
        view: Seen,
        resubmit: Sequence[TopicPartition],
        new: Sequence[TopicPartition],
        heads: Sequence[TopicPartition],
        may_start: bool,
        may_start_tp: Callable[[TopicPartition], bool] = lambda tp: True,
    ) -> Pick | None:
        if not batched(plan, zk_alone):
            return None
        moving = (plan.started - plan.done) - view.vanished  # the last batch's moves still moving
        busy = bool(moving) or trigger_exists(backend)
        limit = backend.reassignment_bytes_limit() if isinstance(backend, ZkBackend) else None
        return pick(
            plan, busy, resubmit, new, heads, may_start=may_start, limit=limit, may_start_tp=may_start_tp
        )

    return check


# -- a foreground run's batches, numbered (issue 25 item 4, slice 2) ---------------------------------
# ZooKeeper mode's foreground batches run as steps of ops/step.py (ops/stored_foreground.py): the steps
# pick each batch through `gate`; execute's lines ("Batch i/n: ...", the batches left on Ctrl-C: `left`)
# number execute's batches, which `planned` shows the steps pick (tests/unit/test_stored_batches.py).
def planned(
    plan: sp.StoredPlan, limit: int | None = None, state: ClusterState | None = None
) -> list[list[TopicPartition]]:
    """The batches the plan's steps start, in order, when nothing holds and each batch ends before the next
    (pure: `pick` replayed). A plan stored with --batch-size needs no `state`; a capped plan's batches are
    the window's choice (ops/step.decide), which needs the plan's partitions as read (`state`). A capped
    window batch larger than one trigger znode differs from core/run_plan.paced_batches: there its rest is a
    batch of its own; here it goes into the next window's choice."""
    from reassign_cli.core import stored_plan as stp

    out: list[list[TopicPartition]] = []
    while len(plan.started) < len(plan.entries):
        new: list[TopicPartition] = []
        if plan.pace.batch_size is None:
            from reassign_cli.ops.step import decide, stored_sizes

            if state is None:
                raise ValueError("a capped plan's batches need the partitions as read")
            new, _ = decide(plan, state, lambda tp: True, stored_sizes(plan))
        got = pick(plan, False, [], new, [], may_start=True, limit=limit)
        if not got.new:
            raise ValueError("no batch could start")  # cannot happen: a queued move always fits one batch
        out.append(got.new)
        plan = stp.mark_done(stp.mark_started(plan, got.new, 0.0), got.new, 0.0)
    return out


def batch_line(batches: Sequence[Sequence[TopicPartition]], started: Sequence[TopicPartition]) -> str | None:
    """execute's "Batch i/n: k partitions" line for the moves a step just started (None: one batch only, or
    moves that are not one of `batches`: a batch resubmitted after a kill, numbered by nothing)."""
    wanted = set(started)
    for i, batch in enumerate(batches):
        if set(batch) == wanted and len(batches) > 1:
            from reassign_cli.core.names import count

            return f"Batch {i + 1}/{len(batches)}: {count(len(batch), 'partition')}"
    return None


@dataclass(frozen=True, slots=True)
class Left:
    """Where a foreground batch run stopped: the batch running (1-based), of how many, and the batches
    not started (their numbers as text, "batch 3" or "batches 3-5", and their partitions)."""

    running: int
    of: int
    which: str | None  # None: the last batch runs (nothing is left unstarted)
    partitions: int


def left(batches: Sequence[Sequence[TopicPartition]], started: Iterable[TopicPartition]) -> Left:
    """What is left of `batches` once the moves `started` were started (pure): the last batch with a started
    move is the one running; every later one is not started."""
    seen = set(started)
    i = max((j for j, b in enumerate(batches) if seen & set(b)), default=0)
    n = len(batches)
    if i >= n - 1:
        return Left(i + 1, n, None, 0)
    which = f"batch {i + 2}" if i + 2 == n else f"batches {i + 2}-{n}"
    return Left(i + 1, n, which, sum(len(b) for b in batches[i + 1 :]))


# -- a plan larger than one trigger znode (issue 25 item 9) ------------------------------------------
@dataclass(frozen=True, slots=True)
class Oversize:
    """A plan whose trigger needs `need` bytes, more than one znode's `limit`: it runs as `batches`."""

    need: int
    limit: int
    batches: int

    def line(self, partitions: int, waiting: bool) -> str:
        how = "waiting for each" if waiting else "stored in the cluster; later `verify` steps start the rest"
        return (
            f"The reassignment of {partitions} partitions needs {self.need} bytes in /admin/reassign_partitions, "
            f"more than one znode holds ({self.limit} bytes): it runs as {self.batches} batches, each started "
            f"once the previous one is complete ({how})"
        )


def oversize(entries: Sequence[PlanEntry], limit: int | None) -> Oversize | None:
    """The plan's trigger against one znode's `limit` (None: no limit, the admin API): None when it fits
    (pure, bar the encoding). Entries in execute's order (topic, partition)."""
    from reassign_cli.core.validate import split_batches
    from reassign_cli.core.znodes import encode_reassignment

    if limit is None or not entries:
        return None
    need = len(encode_reassignment(list(entries)))
    if need <= limit:
        return None
    return Oversize(need, limit, len(split_batches(list(entries), None, limit)))


def zookeeper_limit() -> int:
    """One trigger znode's limit as a ZooKeeper-mode execute uses it (ZkBackend.reassignment_bytes_limit)."""
    from reassign_cli.backends.zookeeper import backend as zb

    return zb.max_trigger_bytes() - zb.TRIGGER_COMPANIONS
