"""What is reassigning now, read from a ClusterState (the topic znodes' or ListPartitionReassignments'
RS/AR/RR, and /admin/reassign_partitions): `list` shows it, `cancel --all` cancels it. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass

from reassign_cli.core.model import ClusterState, TopicPartition, format_reassignment_json, tp_str
from reassign_cli.core.names import shorten


@dataclass(slots=True)
class Row:
    topic: str
    partition: int
    replicas: list[int]
    adding: list[int]
    removing: list[int]
    source: str  # "controller": AR/RR in the topic znode; "znode": only in /admin/reassign_partitions so far

    @property
    def target(self) -> list[int]:
        """Where the partition is moving: RS minus RR, in RS's order."""
        return [b for b in self.replicas if b not in self.removing]


def active_reassignments(state: ClusterState) -> list[Row]:
    """Every partition being reassigned, sorted by (topic, partition).

    A partition with AR/RR in its topic znode shows the controller's RS/AR/RR. A partition that is only in
    /admin/reassign_partitions (the controller has not acted yet) shows what the controller will write:
    RS = (target + origin) without duplicates, AR = RS - origin, RR = RS - target (KAFKA-SPEC §4.1).
    """
    rows: dict[tuple[str, int], Row] = {}
    for name, topic in state.topics.items():
        for p in sorted(set(topic.adding) | set(topic.removing)):
            if topic.is_reassigning(p):
                rows[(name, p)] = Row(
                    name,
                    p,
                    list(topic.replicas[p]),
                    list(topic.adding.get(p, [])),
                    list(topic.removing.get(p, [])),
                    "controller",
                )
    for (t, p), target in (state.reassignment or {}).items():
        if (t, p) in rows:
            continue
        known = state.topics.get(t)
        origin = list(known.replicas[p]) if known is not None and p in known.replicas else []
        full = list(dict.fromkeys([*target, *origin]))
        rows[(t, p)] = Row(
            t, p, full, [b for b in full if b not in origin], [b for b in full if b not in target], "znode"
        )
    return [rows[k] for k in sorted(rows)]


def in_flight_targets(state: ClusterState) -> dict[TopicPartition, list[int]]:
    """Each reassigning partition -> the replicas it is moving to, sorted by (topic, partition)."""
    return {(r.topic, r.partition): r.target for r in active_reassignments(state)}


def in_flight_rollback_json(targets: dict[TopicPartition, list[int]], tps: list[TopicPartition]) -> str:
    """cancel --all's rollback file, in Kafka's reassignment JSON format: the targets the partitions `tps`
    were moving to before the cancel (executing it starts those moves again), log_dirs "any"."""
    doc: dict[str, dict[int, list[int]]] = {}
    for t, p in sorted(tps):
        doc.setdefault(t, {})[p] = list(targets[(t, p)])
    return format_reassignment_json(doc, log_dirs=True)


def not_cancelled_line(in_flight: list[TopicPartition], cancelled: list[TopicPartition]) -> str | None:
    """cancel --all's warning for what it listed but did not cancel (a trigger-znode entry the controller
    has not started, a move that finished meanwhile); None when everything listed was cancelled."""
    missed = sorted(set(in_flight) - set(cancelled))
    if not missed:
        return None
    return (
        f"{len(missed)} of the {len(in_flight)} partitions listed in flight were not cancelled (not started "
        f"by the controller yet, or finished meanwhile): {shorten(tp_str(tp) for tp in missed)}; "
        "see kafka-reassign list, and run cancel --all again if they still move"
    )
