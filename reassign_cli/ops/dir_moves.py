"""Replica moves between the log dirs of a broker (AlterReplicaLogDirs through backend.LogDirMoves,
kafka-python's admin client by default): asked for until each has started, then waited for with
DescribeLogDirs as verify checks them. ops/execute.py and the paced log-dir runs call them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from reassign_cli.backends.protocol import LogDirMoves, ReplicaDirs, ReplicaKey
from reassign_cli.core.model import PlanEntry, ReassignmentFile
from reassign_cli.core.names import shorten
from reassign_cli.core.progress import MoveStatus, ReplicaMoveProgress, moves_ongoing
from reassign_cli.errors import BusyError, OperationalError
from reassign_cli.ops.request import Clock, WaitInterrupted, verify_command
from reassign_cli.ops.verify import replica_moves

if TYPE_CHECKING:
    from reassign_cli.ops.request import ExecuteReport, ExecuteRequest


def log_dir_moves(entries: Iterable[PlanEntry]) -> ReplicaDirs:
    return ReassignmentFile(list(entries)).log_dir_targets()


def raise_hard(failed: dict[ReplicaKey, str]) -> None:
    """Errors other than "replica not there yet" end the attempt (Kafka retries only those)."""
    hard = {k: e for k, e in failed.items() if e not in ("ReplicaNotAvailableError", "NoResponse")}
    if hard:
        k, e = sorted(hard.items())[0]
        raise OperationalError(f"log-dir move of replica {k[0]}-{k[1]} on broker {k[2]} failed: {e}")


def start_until_done(mover: LogDirMoves, moves: ReplicaDirs, timeout: float, report: ExecuteReport) -> None:
    """Retry until every move has started, or raise after the timeout (Kafka's message)."""
    pending = dict(moves)
    deadline = time.monotonic() + timeout
    while True:
        started, failed = mover.attempt(pending)
        for key in sorted(started):
            t, p, b = key
            report.result(
                f"Successfully started moving log directory to {pending[key]} for replica {t}-{p} "
                f"with broker {b} "
            )
            pending.pop(key)
        if not pending:
            return
        raise_hard(failed)
        if time.monotonic() >= deadline:
            names = shorten((f"{t}-{p} on broker {b}" for t, p, b in sorted(pending)), sep=", ")
            raise OperationalError(f"Timed out before log directory move(s) could be started for: {names}")
        time.sleep(0.5)


def wait_for_log_dirs(
    mover: LogDirMoves, dirs: ReplicaDirs, req: ExecuteRequest, report: ExecuteReport
) -> list[ReplicaMoveProgress]:
    """Poll DescribeLogDirs (verify's check) until no planned replica has a future copy left. --timeout:
    BusyError naming the replicas still copying (the throttles stay); Ctrl-C: WaitInterrupted."""
    clock = Clock(req)
    try:
        while True:
            moves = replica_moves(dirs, mover)
            report.log_dir_progress(moves, clock.elapsed())
            if not moves_ongoing(moves):
                for m in moves:
                    if m.status is not MoveStatus.COMPLETE:
                        report.warn(m.line())
                return moves
            if clock.expired():
                raise BusyError(
                    f"Timed out after {req.timeout:g}s; replicas still moving between log dirs: "
                    f"{describe_copying(moves)}",
                    hint=f"The moves keep running. Check them with: {verify_command(req)}",
                )
            clock.pause()
    except KeyboardInterrupt:
        raise WaitInterrupted(
            "Interrupted while waiting; the replica moves between log dirs keep running",
            hint=f"Check them (and remove the throttles once they are done) with: {verify_command(req)}",
        ) from None


def describe_copying(moves: Sequence[ReplicaMoveProgress], limit: int = 10) -> str:
    """The replicas that still have a future copy: "t-0 on broker 1 (to /d1)"."""
    copying = [m for m in moves if m.future is not None]
    parts = [f"{m.topic}-{m.partition} on broker {m.broker} (to {m.future})" for m in copying[:limit]]
    if len(copying) > limit:
        parts.append(f"and {len(copying) - limit} more")
    return ", ".join(parts)
