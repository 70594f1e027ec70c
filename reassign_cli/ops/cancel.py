"""cancel: revert a running reassignment (AlterPartitionReassignments, an admin-API call in both modes), wait
until the controller has, then remove this tool's throttles as verify does.

Order: read and check (exit 3, nothing done, when a partition would be left without a leader) → cancel
the active partitions (AlterPartitionReassignments, no target) → wait until they no longer reassign →
throttles off (unless preserved, and only once nothing reassigns anywhere).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from reassign_cli.backends.protocol import Backend, ClearResult
from reassign_cli.core.cancel_rules import cancel_plan
from reassign_cli.core.model import TopicPartition, tp_str
from reassign_cli.core.names import shorten
from reassign_cli.errors import BusyError, InvalidInputError
from reassign_cli.ops.unthrottle import clear_throttles


@dataclass(slots=True)
class CancelOutcome:
    cancelled: list[TopicPartition]
    cleared: ClearResult | None


def cancel(
    backend: Backend,
    targets: Mapping[TopicPartition, list[int]],
    *,
    preserve_throttles: bool = False,
    timeout: float = 60.0,
) -> CancelOutcome:
    topics = sorted({t for t, _ in targets})
    plan = cancel_plan(targets, backend.read_state(topics, partition_state=True))
    if plan.unsafe:
        raise InvalidInputError(plan.unsafe[0], hint="\n".join(plan.unsafe[1:]) or None)
    cancelled: list[TopicPartition] = []
    if plan.active:
        cancelled = backend.cancel_reassignments(plan.active)
        _wait_reverted(backend, cancelled, timeout)
    cleared = None if preserve_throttles else clear_throttles(backend, dict(targets))
    return CancelOutcome(cancelled, cleared)


def _wait_reverted(backend: Backend, tps: list[TopicPartition], timeout: float) -> None:
    topics = sorted({t for t, _ in tps})
    deadline = time.monotonic() + timeout
    while True:
        state = backend.read_state(topics)
        left = [tp for tp in tps if tp[0] in state.topics and state.topics[tp[0]].is_reassigning(tp[1])]
        if not left:
            return
        if time.monotonic() >= deadline:
            raise BusyError(
                f"cancel was accepted, but after {timeout:g}s these partitions still reassign: "
                f"{shorten(tp_str(tp) for tp in left)}",
                hint="Check with kafka-reassign list; run verify to remove the throttles once they revert.",
            )
        time.sleep(0.5)
