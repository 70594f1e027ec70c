"""cancel --all: cancel every reassignment in flight when the plan file is gone.

Order: list what is in flight (ListPartitionReassignments through the admin API; in ZooKeeper mode the topic
znodes' AR/RR and /admin/reassign_partitions; and, when `log_dirs` is given, the replicas with a future copy
on every live broker: moves between log dirs) → ops.cancel's own sequence with those as the plan:
the KAFKA-14424 check (exit 3, nothing written), then the rollback file (the targets being given up, in
Kafka's reassignment JSON: executing it starts the moves again) BEFORE the cancel, the cancel, the wait,
and this tool's throttles off as verify removes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reassign_cli.backends.protocol import Backend, LogDirScan
from reassign_cli.core.in_flight import in_flight_rollback_json, in_flight_targets
from reassign_cli.core.model import TopicPartition
from reassign_cli.errors import OperationalError
from reassign_cli.ops.cancel import CancelOutcome, cancel
from reassign_cli.ops.request import default_rollback_path


@dataclass(slots=True)
class CancelAllOutcome:
    in_flight: list[TopicPartition]  # what was listed (empty: nothing in flight, nothing done)
    rollback_file: str | None = None  # None: nothing was cancellable, nothing written
    outcome: CancelOutcome | None = None


def cancel_all(
    backend: Backend,
    *,
    rollback_file: str | None = None,
    preserve_throttles: bool = False,
    timeout: float = 60.0,
    log_dirs: LogDirScan | None = None,
) -> CancelAllOutcome:
    """`log_dirs`: stop the moves between log dirs too (as cancel does for a plan's), and keep the throttles
    when a broker does not answer (its copies cannot be seen)."""
    state = backend.read_state()
    targets = in_flight_targets(state)
    dirs = {} if log_dirs is None else log_dirs.futures([b.id for b in state.brokers])
    silent = [] if log_dirs is None else list(log_dirs.unanswered)
    result = CancelAllOutcome(sorted(targets))
    if not targets and not dirs:
        return result
    # The partitions of the log-dir moves join the "plan" (not reassigning: nothing to cancel for them), so
    # that the throttle lines name their topics as cancel with the plan would.
    plan = {(t, p): list(state.topics[t].replicas.get(p, [])) for t, p, _ in dirs if t in state.topics}
    plan.update(targets)

    save = rollback_saver(targets, rollback_file, result)
    result.outcome = cancel(
        backend,
        plan,
        preserve_throttles=preserve_throttles or bool(silent),
        timeout=timeout,
        dirs=dirs or None,
        log_dirs=log_dirs if dirs else None,
        before=save,
    )
    if silent and not preserve_throttles and result.outcome.kept is None:
        brokers = ",".join(map(str, silent))
        result.outcome.kept = (
            f"Throttles kept: broker{'' if len(silent) == 1 else 's'} {brokers} did not answer "
            "DescribeLogDirs, so whether its replicas still move between log dirs is unknown."
        )
    return result


def rollback_saver(
    targets: Mapping[TopicPartition, list[int]], rollback_file: str | None, result: Any
) -> Callable[[list[TopicPartition]], None]:
    """cancel's `before`: save the targets given up of the partitions still reassigning (executing the file
    starts those moves again) to `rollback_file` (default rollback-YYYYmmdd-HHMMSS.json), and note its path
    on `result.rollback_file`. Shared by cancel --all and the cancel of a stored plan."""

    def save(active: list[TopicPartition]) -> None:
        path = rollback_file or default_rollback_path()
        try:
            Path(path).write_text(in_flight_rollback_json(dict(targets), active) + "\n")
        except OSError as e:
            raise OperationalError(f"cannot write the rollback file {path}: {e.strerror}") from None
        result.rollback_file = path

    return save
