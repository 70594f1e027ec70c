"""cancel: which partitions of a plan are actively reassigning, and which of those cannot be cancelled
safely. Pure: no I/O.

Cancelling reverts a partition to its original replicas (ORS). When none of them is alive and in the ISR,
the partition would be left without a leader (KAFKA-14424), so the whole cancel is refused.
A partition counts as active when its topic znode has adding OR removing replicas: Kafka 3.7-3.9's test
(`adding empty || removing non-empty`) skips pure additions, which is a known bug (KAFKA-SPEC §3.8).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reassign_cli.core.model import ClusterState, TopicPartition, tp_str


@dataclass(frozen=True, slots=True)
class CancelPlan:
    active: list[TopicPartition]  # to cancel, sorted
    unsafe: list[str]  # one line per partition that would be left without a leader


def cancel_plan(tps: Iterable[TopicPartition], state: ClusterState) -> CancelPlan:
    live = set(state.broker_ids)
    active: list[TopicPartition] = []
    unsafe: list[str] = []
    for t, p in sorted(set(tps)):
        topic = state.topics.get(t)
        if topic is None or p not in topic.replicas or not topic.is_reassigning(p):
            continue
        active.append((t, p))
        origin = topic.origin(p)
        isr = set(topic.isr.get(p, ()))
        if not any(b in live and b in isr for b in origin):
            unsafe.append(
                f"cannot cancel the reassignment of {tp_str((t, p))}: none of its original replicas "
                f"{','.join(map(str, origin))} is online and in the ISR, so it would be left without a leader"
            )
    return CancelPlan(active, unsafe)


def cancelled_line(tps: list[TopicPartition]) -> str:
    if not tps:
        return "None of the specified partition reassignments are active."
    s = "s" if len(tps) > 1 else ""
    return f"Successfully cancelled partition reassignment{s} for: {','.join(tp_str(tp) for tp in tps)}"


def stopped_moves_lines(stopped: Mapping[tuple[str, int, int], str]) -> list[str]:
    """Kafka's --cancel lines for the replica moves between log dirs it stopped (each moved back to its
    current dir, hence Kafka's "started moving" wording), or its line when none was copying."""
    if not stopped:
        return ["None of the specified partition moves are active."]
    return [
        f"Successfully started moving log directory to {d} for replica {t}-{p} with broker {b} "
        for (t, p, b), d in sorted(stopped.items())
    ]
