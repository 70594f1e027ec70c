"""verify: where each partition of a plan stands, then the throttles off once nothing reassigns anywhere.

Order: read the plan's topics with their partition states → classify each partition → the plan's replica
moves between log dirs, from DescribeLogDirs (when there are any and the admin API is at hand) → unless
preserved, and unless a log-dir move is still running, `unthrottle.clear_throttles` (which reads the whole
cluster again and does nothing while anything reassigns) → the orphaned throttles among those it removed
(`progress.orphaned_throttles`), for the warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reassign_cli.backends.protocol import Backend, ClearResult, LogDirMoves, ReplicaDirs
from reassign_cli.core.model import TopicPartition
from reassign_cli.core.progress import (
    PartitionProgress,
    ReplicaMoveProgress,
    classify,
    classify_moves,
    moves_ongoing,
    orphaned_throttles,
)
from reassign_cli.ops.unthrottle import clear_throttles


@dataclass(slots=True)
class VerifyOutcome:
    results: list[PartitionProgress]
    cleared: ClearResult | None  # None: kept (preserved, or something still reassigns or moves)
    moves: list[ReplicaMoveProgress] = field(default_factory=list)
    # Throttles of ours that no finished reassignment of this plan accounts for (an interrupted
    # execute's), as the clear found them: (brokers, topics); None when there were none or no clear.
    orphans: tuple[list[int], list[str]] | None = None


def verify(
    backend: Backend,
    targets: Mapping[TopicPartition, list[int]],
    *,
    preserve_throttles: bool = False,
    dirs: ReplicaDirs | None = None,
    log_dirs: LogDirMoves | None = None,
) -> VerifyOutcome:
    """`dirs`: the plan's replica moves between log dirs, checked through `log_dirs` when given."""
    state = backend.read_state(sorted({t for t, _ in targets}), partition_state=True)
    results = classify(targets, state)
    moves = replica_moves(dirs, log_dirs) if dirs and log_dirs is not None else []
    keep = preserve_throttles or moves_ongoing(moves)
    cleared = None if keep else clear_throttles(backend, dict(targets))
    orphans = None
    if cleared is not None:
        orphans = orphaned_throttles((cleared.recorded_brokers, cleared.recorded_topics), results)
    return VerifyOutcome(results, cleared, moves, orphans)


def replica_moves(dirs: ReplicaDirs, log_dirs: LogDirMoves) -> list[ReplicaMoveProgress]:
    """Where each planned replica move between log dirs stands, from DescribeLogDirs on the brokers
    concerned (verify, and `execute --wait` before it takes the throttles off)."""
    return classify_moves(dirs, log_dirs.describe(dict(sorted(dirs.items()))))
