"""verify: where each partition of a plan stands, then the throttles off once nothing reassigns anywhere.

Order: read the plan's topics with their partition states → classify each partition → unless preserved,
`unthrottle.clear_throttles` (which reads the whole cluster again and does nothing while anything moves).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reassign_cli.backend import Backend
from reassign_cli.model import TopicPartition
from reassign_cli.progress import PartitionProgress, classify
from reassign_cli.unthrottle import ClearResult, clear_throttles


@dataclass(slots=True)
class VerifyOutcome:
    results: list[PartitionProgress]
    cleared: ClearResult | None  # None: kept (preserved, or something still reassigns)


def verify(
    backend: Backend, targets: Mapping[TopicPartition, list[int]], *, preserve_throttles: bool = False
) -> VerifyOutcome:
    state = backend.read_state(sorted({t for t, _ in targets}), partition_state=True)
    results = classify(targets, state)
    cleared = None if preserve_throttles else clear_throttles(backend, dict(targets))
    return VerifyOutcome(results, cleared)
