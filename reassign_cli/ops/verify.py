"""verify: where each partition of a plan stands, then the throttles off once nothing reassigns anywhere.

Order: read the plan's topics with their partition states → classify each partition (those a run of this
plan has not started yet are queued, when it has work left: `work_left`) → the plan's replica
moves between log dirs, from DescribeLogDirs (when there are any and the admin API is at hand) → unless
preserved, and unless a log-dir move is still running or cannot be seen (no admin API, or a broker that
does not answer DescribeLogDirs: the log-dir throttle stays, with the reason), `unthrottle.clear_throttles` (which reads the whole
cluster again and does nothing while anything reassigns; never while the plan's run has queued partitions:
its throttles are for them) → the orphaned throttles among those it removed
(`progress.orphaned_throttles`), for the warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reassign_cli.backends.protocol import Backend, ClearResult, LogDirMoves, ReplicaDirs
from reassign_cli.core.model import TopicPartition
from reassign_cli.core.names import listed
from reassign_cli.core.progress import (
    MoveStatus,
    PartitionProgress,
    ReplicaMoveProgress,
    Status,
    classify,
    classify_moves,
    moves_ongoing,
    orphaned_throttles,
    queued,
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
    # Why the throttles were kept although nothing may be reassigning: the plan's log-dir moves could not
    # all be seen. None when they were (or the plan has none).
    blind: str | None = None
    # Partitions the plan's run (paced or batched, with work left) has not started yet: the throttles
    # stay for them.
    queued: int = 0


def verify(
    backend: Backend,
    targets: Mapping[TopicPartition, list[int]],
    *,
    preserve_throttles: bool = False,
    dirs: ReplicaDirs | None = None,
    log_dirs: LogDirMoves | None = None,
    work_left: bool = False,
) -> VerifyOutcome:
    """`dirs`: the plan's replica moves between log dirs, checked through `log_dirs` when given.
    `work_left`: a run of this plan (paced or batched) has not ended (ops.pace_file.work_left): what it has
    not started is queued, and its throttles stay while anything is."""
    backend.expect(targets)
    state = backend.read_state(sorted({t for t, _ in targets}), partition_state=True)
    results = classify(targets, state)
    if work_left:
        results = queued(results)
    waiting = sum(1 for r in results if r.status is Status.QUEUED)
    moves = replica_moves(dirs, log_dirs) if dirs and log_dirs is not None else []
    blind = blind_spot(dirs, log_dirs, moves)
    keep = preserve_throttles or moves_ongoing(moves) or blind is not None or waiting > 0
    cleared = None if keep else clear_throttles(backend, dict(targets))
    orphans = None
    if cleared is not None:
        orphans = orphaned_throttles((cleared.recorded_brokers, cleared.recorded_topics), results)
    return VerifyOutcome(results, cleared, moves, orphans, blind, waiting)


def replica_moves(dirs: ReplicaDirs, log_dirs: LogDirMoves) -> list[ReplicaMoveProgress]:
    """Where each planned replica move between log dirs stands, from DescribeLogDirs on the brokers
    concerned (verify, cancel, and `execute --wait` before it takes the throttles off). A replica on a
    broker that did not answer is UNKNOWN, which counts as still moving."""
    described = log_dirs.describe(dict(sorted(dirs.items())))
    return classify_moves(dirs, described, log_dirs.unanswered)


def blind_spot(
    dirs: ReplicaDirs | None, log_dirs: LogDirMoves | None, moves: list[ReplicaMoveProgress]
) -> str | None:
    """Why the plan's log-dir copies cannot all be seen (so the log-dir throttle must stay); None if they
    can. Not seeing is never read as "nothing moving"."""
    if not dirs:
        return None
    if log_dirs is None:
        return (
            "Throttles kept: the plan moves replicas between log dirs, and without the admin API "
            "(--bootstrap-server) it cannot be seen whether those copies still run."
        )
    silent = sorted({m.broker for m in moves if m.status is MoveStatus.UNKNOWN})
    if silent:
        return listed(
            f"Throttles kept: broker{'' if len(silent) == 1 else 's'} {{}} did not "
            "answer DescribeLogDirs, so whether its replicas still move between log dirs is unknown.",
            silent,
        )
    return None
