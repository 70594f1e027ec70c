"""What an execute run starts, and when: the partitions it skips, the moves it waits for, its batches or
its window's first starts and order. Pure: no I/O. `execute --dry-run` prints exactly this, and the
real run follows it (ops.execute and ops.pacing call these functions), so the two cannot diverge.

- A run that resumes (`--resume`, `--batch-size`, `--max-moves-per-broker`) skips the partitions already
  at their target and first waits for this plan's moves already running (core.progress.resume_split).
  A plain execute submits every partition, as Kafka's tool does (the controller completes a partition
  already at its target at once).
- Batches: `--batch-size N` and the trigger znode's size cut the rest (core.validate.split_batches); the
  window through ZooKeeper alone runs as batches that each fill an empty window (core.pacing.batches).
- The window through the admin API: the first starts are the moves that fit an empty window in the
  order given (core.pacing.Queue.take); the rest start as moves end, each time the emptiest receiving
  broker first, so only the first starts and the order of the queue are known beforehand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reassign_cli.core import pacing as pc
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition
from reassign_cli.core.progress import resume_split
from reassign_cli.core.validate import split_batches


@dataclass(frozen=True, slots=True)
class Window:
    """The admin API window at its start: the cap, the order, the moves started first (filling the empty
    window) and the queue behind them (in the order each lane hands them out)."""

    cap: int
    order: pc.Order
    first: list[pc.Move]
    queue: pc.Queue

    def queued(self) -> list[pc.Move]:
        """The moves not started first, in the order given (ties: plan order)."""
        return sorted(self.queue.moves(), key=lambda m: pc.order_key(m, self.order))


@dataclass(slots=True)
class RunPlan:
    """One execute run, before it starts."""

    skipped: list[PlanEntry] = field(default_factory=list)  # at their target: not submitted
    running: list[PlanEntry] = field(default_factory=list)  # this plan's, already moving: waited for
    todo: list[PlanEntry] = field(default_factory=list)  # what the run submits
    batches: list[list[PlanEntry]] = field(default_factory=list)  # one after another (no window)
    window: Window | None = None  # the admin API window (then no batches)
    sized: bool = False  # the order could use the partitions' sizes


def split_run(entries: Sequence[PlanEntry], state: ClusterState, resuming: bool) -> RunPlan:
    """Skipped, waited for and submitted: a resuming run leaves out what is done or already running."""
    if not resuming:
        return RunPlan(todo=list(entries))
    split = resume_split(entries, state)
    return RunPlan(skipped=split.done, running=split.running, todo=split.todo)


def batched(run: RunPlan, batch_size: int | None, bytes_limit: int) -> RunPlan:
    """The run as batches of at most `batch_size` partitions, each within the trigger's `bytes_limit`."""
    run.batches = split_batches(run.todo, batch_size, bytes_limit) if run.todo else []
    return run


def paced_batches(
    entries: Sequence[PlanEntry],
    state: ClusterState,
    cap: int,
    order: pc.Order | None,
    bytes_limit: int,
    sizes: Mapping[TopicPartition, int] | None = None,
) -> list[list[PlanEntry]]:
    """The window as batches (ZooKeeper alone): each fills an empty window, at most `cap` moves per
    broker, in the order given; each also within the trigger's size."""
    moves = pc.make_moves(entries, state, sizes)
    by_tp = {(e.topic, e.partition): e for e in entries}
    out: list[list[PlanEntry]] = []
    for batch in pc.batches(moves, cap, order or pc.default_order(moves)):
        out += split_batches([by_tp[m.tp] for m in batch], None, bytes_limit)
    return out


def window(moves: Sequence[pc.Move], cap: int, order: pc.Order | None) -> Window:
    """The admin API window at its start: the queue in the order given (default: largest-first with
    every size known, else as-planned) and the moves that fill the empty window."""
    chosen = order or pc.default_order(moves)
    queue = pc.Queue(moves, chosen)
    first = queue.take((), cap)
    return Window(cap, chosen, first, queue)
