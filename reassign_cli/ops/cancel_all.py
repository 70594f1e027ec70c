"""cancel --all: cancel every reassignment in flight when the plan file is gone.

Order: list what is in flight (ListPartitionReassignments through the admin API; in ZooKeeper mode the topic
znodes' AR/RR and /admin/reassign_partitions) → ops.cancel's own sequence with those partitions as the plan:
the KAFKA-14424 check (exit 3, nothing written), then the rollback file (the targets being given up, in
Kafka's reassignment JSON: executing it starts the moves again) BEFORE the cancel, the cancel, the wait,
and this tool's throttles off as verify removes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reassign_cli.backends.protocol import Backend
from reassign_cli.core.in_flight import in_flight_rollback_json, in_flight_targets
from reassign_cli.core.model import TopicPartition
from reassign_cli.errors import OperationalError
from reassign_cli.ops.cancel import CancelOutcome, cancel
from reassign_cli.ops.execute import default_rollback_path


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
) -> CancelAllOutcome:
    targets = in_flight_targets(backend.read_state())
    result = CancelAllOutcome(sorted(targets))
    if not targets:
        return result

    def save(active: list[TopicPartition]) -> None:
        path = rollback_file or default_rollback_path()
        try:
            Path(path).write_text(in_flight_rollback_json(targets, active) + "\n")
        except OSError as e:
            raise OperationalError(f"cannot write the rollback file {path}: {e.strerror}") from None
        result.rollback_file = path

    result.outcome = cancel(
        backend, targets, preserve_throttles=preserve_throttles, timeout=timeout, before=save
    )
    return result
