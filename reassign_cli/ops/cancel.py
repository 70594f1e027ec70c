"""cancel: revert a running reassignment (AlterPartitionReassignments, an admin-API call in both modes), stop
the plan's replica moves between log dirs as Kafka's --cancel does, wait until both have stopped, then remove
this tool's throttles as verify does.

Order: read and check (exit 3, nothing done, when a partition would be left without a leader) → cancel
the active partitions (AlterPartitionReassignments, no target) → stop each planned log-dir move still
copying into its target dir (AlterReplicaLogDirs back to the replica's current dir: the broker drops the
future replica) → wait until the partitions no longer reassign and no future replica is left → throttles
off (unless preserved, only once nothing reassigns anywhere, and never while a log-dir copy may still run
or cannot be seen).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from reassign_cli.backends.protocol import Backend, ClearResult, LogDirMoves, ReplicaDirs, ReplicaKey
from reassign_cli.core.cancel_rules import cancel_plan
from reassign_cli.core.model import TopicPartition, tp_str
from reassign_cli.core.names import shorten
from reassign_cli.core.progress import MoveStatus, moves_ongoing
from reassign_cli.errors import BusyError, InvalidInputError, OperationalError
from reassign_cli.ops.unthrottle import clear_throttles, refuse_other_record
from reassign_cli.ops.verify import blind_spot, replica_moves

RETRIED = ("ReplicaNotAvailableError", "NoResponse")  # as Kafka: the replica is not there yet


@dataclass(slots=True)
class CancelOutcome:
    cancelled: list[TopicPartition]
    cleared: ClearResult | None
    # Replica moves between log dirs stopped: replica -> the dir it stays in (its current one).
    stopped: dict[ReplicaKey, str] = field(default_factory=dict)
    kept: str | None = None  # why the throttles were kept (a log-dir copy still runs, or cannot be seen)


def cancel(
    backend: Backend,
    targets: Mapping[TopicPartition, list[int]],
    *,
    preserve_throttles: bool = False,
    timeout: float = 60.0,
    dirs: ReplicaDirs | None = None,
    log_dirs: LogDirMoves | None = None,
    before: Callable[[list[TopicPartition]], None] | None = None,
    hint: str = "Check with kafka-reassign list; run verify to remove the throttles once they revert.",
) -> CancelOutcome:
    """`dirs`: the plan's replica moves between log dirs, stopped through `log_dirs` when given. `before`
    is called with the partitions about to be cancelled, once they are known to be safe to cancel and
    before anything is written (cancel --all saves its rollback file there). `hint`: the advice when the
    partitions have not reverted within `timeout` (the CLI's has the commands to paste)."""
    if not preserve_throttles:
        refuse_other_record(backend)  # before anything is cancelled: the command that works is named
    topics = sorted({t for t, _ in targets})
    plan = cancel_plan(targets, backend.read_state(topics, partition_state=True))
    if plan.unsafe:
        raise InvalidInputError(plan.unsafe[0], hint="\n".join(plan.unsafe[1:]) or None)
    cancelled: list[TopicPartition] = []
    if plan.active:
        if before is not None:
            before(plan.active)
        cancelled = backend.cancel_reassignments(plan.active)
    deadline = time.monotonic() + timeout
    stopped = stop_log_dir_moves(log_dirs, dirs, deadline) if dirs and log_dirs is not None else {}
    if cancelled:
        _wait_reverted(backend, cancelled, timeout, deadline, hint)
    kept = None
    if not preserve_throttles and dirs:
        kept = _copies_left(dirs, log_dirs, stopped, deadline)
    cleared = None if preserve_throttles or kept else clear_throttles(backend, dict(targets))
    return CancelOutcome(cancelled, cleared, stopped, kept)


def stop_log_dir_moves(log_dirs: LogDirMoves, dirs: ReplicaDirs, deadline: float) -> dict[ReplicaKey, str]:
    """Kafka's --cancel of log-dir moves: each planned replica that has a future copy in its target dir is
    asked to stay in its current dir (retried while its broker answers "not available", until the
    deadline). Returns the replicas stopped and their dirs."""
    pending = {
        (m.topic, m.partition, m.broker): m.current
        for m in replica_moves(dirs, log_dirs)
        if m.status is MoveStatus.IN_PROGRESS and m.current is not None
    }
    stopped: dict[ReplicaKey, str] = {}
    while pending:
        started, failed = log_dirs.attempt(pending)
        stopped.update({k: pending.pop(k) for k in started})
        hard = {k: e for k, e in failed.items() if e not in RETRIED}
        if hard:
            (t, p, b), e = sorted(hard.items())[0]
            raise OperationalError(f"stopping the log-dir move of replica {t}-{p} on broker {b} failed: {e}")
        if pending and time.monotonic() >= deadline:
            names = shorten((f"{t}-{p} on broker {b}" for t, p, b in sorted(pending)), sep=", ")
            raise BusyError(f"Timed out before these log-dir moves could be stopped: {names}")
        if pending:
            time.sleep(0.5)
    return dict(sorted(stopped.items()))


def _copies_left(
    dirs: ReplicaDirs, log_dirs: LogDirMoves | None, stopped: dict[ReplicaKey, str], deadline: float
) -> str | None:
    """Wait (until the deadline) for the brokers to drop the future replicas of the moves stopped; the
    reason to keep the throttles if a copy still runs, or cannot be seen."""
    while True:
        moves = [] if log_dirs is None else replica_moves(dirs, log_dirs)
        blind = blind_spot(dirs, log_dirs, moves)
        if blind is not None:
            return blind
        dropping = [m for m in moves if (m.topic, m.partition, m.broker) in stopped and m.future]
        if not dropping and not moves_ongoing(moves):
            return None
        if not dropping or time.monotonic() >= deadline:
            copying = shorten(
                (f"{m.topic}-{m.partition} on broker {m.broker}" for m in moves if m.future), sep=", "
            )
            return f"Throttles kept: these replicas still copy between log dirs: {copying}."
        time.sleep(0.5)


def _wait_reverted(
    backend: Backend, tps: list[TopicPartition], timeout: float, deadline: float, hint: str
) -> None:
    topics = sorted({t for t, _ in tps})
    while True:
        state = backend.read_state(topics)
        left = [tp for tp in tps if tp[0] in state.topics and state.topics[tp[0]].is_reassigning(tp[1])]
        if not left:
            return
        if time.monotonic() >= deadline:
            raise BusyError(
                f"cancel was accepted, but after {timeout:g}s these partitions still reassign: "
                f"{shorten(tp_str(tp) for tp in left)}",
                hint=hint,
            )
        time.sleep(0.5)
