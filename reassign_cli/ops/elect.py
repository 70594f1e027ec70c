"""elect-leaders: start a preferred-leader election and wait until the leaders moved.

Order: read (nothing written on bad input or while an election is pending) → create the trigger for the
partitions whose preferred replica is in the ISR but does not lead → poll the partition states until each
of them is led by its preferred replica, or the timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reassign_cli.backends.protocol import Backend
from reassign_cli.core.elect_rules import (
    Election,
    LeaderStatus,
    check_partitions,
    leader_status,
    partitions_of,
)
from reassign_cli.core.model import TopicPartition
from reassign_cli.errors import ExitCode


@dataclass(slots=True)
class ElectRequest:
    partitions: list[TopicPartition] | None = None  # explicit partitions (a reassignment file)
    topics: list[str] | None = None  # every partition of these topics
    timeout: float = 60.0
    poll_interval: float = 1.0


@dataclass(slots=True)
class ElectOutcome:
    initial: list[LeaderStatus]
    final: list[LeaderStatus]
    submitted: list[TopicPartition]

    @property
    def exit_code(self) -> int:
        statuses = {s.status for s in self.final}
        if Election.PENDING in statuses:
            return ExitCode.BUSY  # ran out of time: the election may still complete
        return ExitCode.NOT_AS_PLANNED if Election.NOT_IN_ISR in statuses else ExitCode.OK


def _read(backend: Backend, topics: Sequence[str] | None, req: ElectRequest) -> list[LeaderStatus]:
    state = backend.read_state(topics, partition_state=True)
    if req.partitions is not None:
        tps = check_partitions(state, req.partitions)
    else:
        tps = check_partitions(state, partitions_of(state, req.topics))
    return leader_status(state, tps)


def elect_leaders(
    backend: Backend, req: ElectRequest, on_submit: Callable[[list[TopicPartition]], None] | None = None
) -> ElectOutcome:
    topics = sorted({t for t, _ in req.partitions}) if req.partitions is not None else req.topics
    initial = _read(backend, topics, req)
    todo = [s.tp for s in initial if s.status is Election.PENDING]
    if not todo:
        return ElectOutcome(initial, initial, [])
    backend.start_election(todo)  # BusyError while an earlier election is pending
    if on_submit is not None:
        on_submit(todo)
    deadline = time.monotonic() + req.timeout
    watched = ElectRequest(todo, None, req.timeout, req.poll_interval)
    wanted = sorted({t for t, _ in todo})
    while True:
        now = _read(backend, wanted, watched)
        if all(s.status is not Election.PENDING for s in now) or time.monotonic() >= deadline:
            break
        time.sleep(req.poll_interval)
    by_tp = {s.tp: s for s in now}
    return ElectOutcome(initial, [by_tp.get(s.tp, s) for s in initial], todo)
