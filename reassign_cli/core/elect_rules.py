"""Preferred-leader election: which partitions to elect, the trigger znode's bytes, and where each
partition stands. Pure: no I/O.

ZooKeeper mode moves leadership to a new preferred replica (the first of the list) only through the
automatic rebalance or an explicit election (KAFKA-SPEC §4.4); `/admin/preferred_replica_election` is that
explicit election: `{"version":1,"partitions":[{"topic":"t","partition":0},...]}` (§1.10).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import orjson

from reassign_cli.core.model import ClusterState, TopicPartition, tp_str
from reassign_cli.core.names import listed
from reassign_cli.errors import InvalidInputError

ELECTION_PATH = "/admin/preferred_replica_election"


class Election(StrEnum):
    ELECTED = "elected"  # the preferred replica leads
    PENDING = "pending"  # it does not lead yet, and can: it is in the ISR
    NOT_IN_ISR = "not_in_isr"  # it cannot lead: it is not in the ISR (or the partition has no state)


@dataclass(frozen=True, slots=True)
class LeaderStatus:
    tp: TopicPartition
    preferred: int
    leader: int  # -1: no leader
    isr: tuple[int, ...]
    status: Election

    @property
    def name(self) -> str:
        return tp_str(self.tp)


def partitions_of(state: ClusterState, topics: Iterable[str] | None) -> list[TopicPartition]:
    """Every partition of `topics` (None: of every topic), sorted. A missing topic is an input error."""
    names = sorted(state.topics) if topics is None else sorted(set(topics))
    missing = [t for t in names if t not in state.topics]
    if missing:
        raise InvalidInputError(listed(f"Topic{'s' if len(missing) > 1 else ''} not found: {{}}", missing))
    return [(t, p) for t in names for p in sorted(state.topics[t].replicas)]


def check_partitions(state: ClusterState, tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The partitions, sorted and de-duplicated; one that does not exist is an input error."""
    out = sorted(set(tps))
    missing = [tp for tp in out if tp[0] not in state.topics or tp[1] not in state.topics[tp[0]].replicas]
    if missing:
        what = f"Partition{'s' if len(missing) > 1 else ''} not found: {{}}"
        raise InvalidInputError(listed(what, map(tp_str, missing)))
    if not out:
        raise InvalidInputError("no partitions to elect leaders for")
    return out


def leader_status(state: ClusterState, tps: Sequence[TopicPartition]) -> list[LeaderStatus]:
    """Where each partition stands, from the topic znodes and the partition state znodes."""
    out: list[LeaderStatus] = []
    for t, p in tps:
        topic = state.topics[t]
        preferred = topic.target(p)[0]
        leader = topic.leader.get(p, -1)
        isr = tuple(topic.isr.get(p, ()))
        if leader == preferred:
            status = Election.ELECTED
        elif preferred in isr:
            status = Election.PENDING
        else:
            status = Election.NOT_IN_ISR
        out.append(LeaderStatus((t, p), preferred, leader, isr, status))
    return out


def encode_election(tps: Iterable[TopicPartition]) -> bytes:
    """Kafka's format for the election trigger, partitions sorted."""
    doc = {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in sorted(tps)]}
    return orjson.dumps(doc)


def result_lines(initial: Sequence[LeaderStatus], final: Sequence[LeaderStatus]) -> list[str]:
    """Kafka's kafka-leader-election lines: partitions elected by this run, those whose preferred replica
    already led, and those that could not be elected."""
    already = {s.tp for s in initial if s.status is Election.ELECTED}
    done = [s.name for s in final if s.status is Election.ELECTED and s.tp not in already]
    kept = [s.name for s in final if s.tp in already]
    failed = [s for s in final if s.status is not Election.ELECTED]
    lines = []
    if done:
        lines.append(f"Successfully completed leader election (PREFERRED) for partitions {', '.join(done)}")
    if kept:
        lines.append(f"Valid replica already elected for partitions {', '.join(kept)}")
    for s in failed:
        why = (
            f"preferred replica {s.preferred} is not in the ISR [{','.join(map(str, s.isr))}]"
            if s.status is Election.NOT_IN_ISR
            else f"preferred replica {s.preferred} does not lead yet (leader {s.leader})"
        )
        lines.append(f"Election failed for partition {s.name}: {why}")
    return lines


def status_json(final: Sequence[LeaderStatus]) -> dict[str, object]:
    return {
        "status": "complete" if all(s.status is Election.ELECTED for s in final) else "incomplete",
        "partitions": [
            {
                "topic": s.tp[0],
                "partition": s.tp[1],
                "preferred": s.preferred,
                "leader": s.leader,
                "isr": list(s.isr),
                "status": str(s.status),
            }
            for s in final
        ],
    }
