"""Semantic checks of a reassignment file against the cluster, before anything is written. Pure: no I/O.

KAFKA-SPEC §3.4 (the tool's checks, in Kafka's order) plus the controller pitfalls of §1.11 and §6: the
ZooKeeper path of the controller validates nothing, so every replica list it would silently accept and
never finish (empty, duplicate ids, unregistered brokers, topics being deleted) is refused here.

Also the batching of large plans: one `/admin/reassign_partitions` znode must fit ZooKeeper's
`jute.maxbuffer` (KAFKA-SPEC §1.5, §6.10).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson

from reassign_cli.core.model import (
    ClusterState,
    PlanEntry,
    ReassignmentFile,
    TopicPartition,
    duplicates,
    tp_str,
)
from reassign_cli.errors import InvalidInputError, UsageError

# ZooKeeper's default jute.maxbuffer (0xfffff bytes) bounds a znode's data. The request also carries the
# path and a few framing fields, so keep 1 KiB of headroom.
JUTE_MAXBUFFER = 0xFFFFF
TRIGGER_HEADROOM = 1024

_HEADER = '{"version":1,"partitions":['
_FOOTER = "]}"


@dataclass(frozen=True, slots=True)
class Violation:
    partition: TopicPartition | None  # None for file-level problems
    message: str  # one line naming the partition and the problem, Kafka's wording where Kafka has one


def validate_reassignment(
    plan: ReassignmentFile, state: ClusterState, *, bootstrap_server: bool
) -> list[Violation]:
    """Every problem of `plan` against `state`, grouped by check in Kafka's order; [] when it may run.

    Order: empty plan; empty replica lists; partitions listed twice; duplicate brokers in one list;
    negative broker ids; log-dir moves without --bootstrap-server; partitions that do not exist; brokers
    that are not registered; topics queued for deletion. Within a check, entries come in file order.
    """
    entries = plan.entries
    if not entries:
        return [Violation(None, "Partition reassignment list cannot be empty")]
    out = _shape_violations(entries)
    if not bootstrap_server and plan.has_log_dir_moves():
        out.append(
            Violation(None, "bootstrap-server needs to be provided when replica reassignments are present.")
        )
    return out + _state_violations(entries, state)


def _shape_violations(entries: Sequence[PlanEntry]) -> list[Violation]:
    """What is wrong with the file on its own: empty lists, duplicates, negative ids."""
    out: list[Violation] = []
    for e in entries:
        if not e.replicas:
            tp = (e.topic, e.partition)
            out.append(Violation(tp, f"Partition replica list cannot be empty: {tp_str(tp)}"))
    for tp in duplicates((e.topic, e.partition) for e in entries):
        out.append(Violation(tp, f"Partition reassignment contains duplicate topic partitions: {tp_str(tp)}"))
    for e in entries:
        dup_brokers = duplicates(e.replicas)
        if dup_brokers:
            tp = (e.topic, e.partition)
            msg = f"{tp_str(tp)} contains multiple entries for {_ints(dup_brokers)}"
            out.append(Violation(tp, f"Partition replica lists may not contain duplicate entries: {msg}"))
    for e in entries:
        negative = sorted({b for b in e.replicas if b < 0})
        if negative:
            tp = (e.topic, e.partition)
            msg = f"Invalid broker id in replica list of partition {tp_str(tp)}: {_ints(negative)}"
            out.append(Violation(tp, msg))
    return out


def _state_violations(entries: Sequence[PlanEntry], state: ClusterState) -> list[Violation]:
    """What is wrong against the cluster: missing partitions, unregistered brokers, deleting topics."""
    out: list[Violation] = []
    for e in entries:
        topic = state.topics.get(e.topic)
        if topic is None or e.partition not in topic.replicas:
            tp = (e.topic, e.partition)
            why = f" (topic {e.topic} does not exist)" if topic is None else ""
            out.append(
                Violation(tp, f"The proposed assignment contains non-existent partitions: {tp_str(tp)}{why}")
            )
    unregistered = _unregistered(entries, set(state.broker_ids))
    if unregistered is not None:
        out.append(unregistered)
    for topic_name in dict.fromkeys(e.topic for e in entries if e.topic in state.deleting):
        out.append(
            Violation(
                None,
                f"Topic {topic_name} is queued for deletion (/admin/delete_topics/{topic_name}): "
                "the controller would drop its reassignment",
            )
        )
    return out


def _unregistered(entries: Sequence[PlanEntry], registered: set[int]) -> Violation | None:
    holders: dict[int, set[TopicPartition]] = {}
    for e in entries:
        for b in e.replicas:
            if b >= 0 and b not in registered:
                holders.setdefault(b, set()).add((e.topic, e.partition))
    if not holders:
        return None
    # Kafka's line names only the brokers; we also say where they are used, so the fix is obvious.
    tps = sorted(set().union(*holders.values()))
    where = ", ".join(tp_str(tp) for tp in tps[:5]) + (f" and {len(tps) - 5} more" if len(tps) > 5 else "")
    return Violation(
        None,
        f"The proposed assignment contains non-existent brokerIDs: {_ints(sorted(holders))} (in {where})",
    )


def _ints(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def replication_factor_changes(entries: Sequence[PlanEntry], state: ClusterState) -> list[str]:
    """--disallow-replication-factor-change (KIP-860): one line per partition whose target has another
    number of replicas than the partition has now, in Kafka's words (`foo-0: The replication factor is
    changed from 3 to 2`), sorted by (topic, partition). "Now" is where the partition is headed: during a
    reassignment its target (replicas + adding - removing), as Kafka's controller counts it. Partitions
    that do not exist are left to the other checks."""
    out: list[tuple[TopicPartition, str]] = []
    for e in entries:
        topic = state.topics.get(e.topic)
        if topic is None or e.partition not in topic.replicas:
            continue
        now = len(set(topic.target(e.partition)))
        if now != len(e.replicas):
            tp = (e.topic, e.partition)
            out.append(
                (tp, f"{tp_str(tp)}: The replication factor is changed from {now} to {len(e.replicas)}")
            )
    return [line for _, line in sorted(out)]


# ---------------------------------------------------------------------------------------------
# Batching the trigger znode
# ---------------------------------------------------------------------------------------------


def max_trigger_bytes() -> int:
    """Largest trigger JSON we write in one `/admin/reassign_partitions` znode (bytes, UTF-8)."""
    return JUTE_MAXBUFFER - TRIGGER_HEADROOM


def entry_bytes(entry: PlanEntry, quoted_topic: bytes | None = None) -> int:
    """Size of one entry in the trigger JSON (model.format_plan_entries without log_dirs), no comma."""
    tq = quoted_topic if quoted_topic is not None else orjson.dumps(entry.topic)
    # {"topic":T,"partition":P,"replicas":[R]}
    return (
        len(tq)
        + len(str(entry.partition))
        + len(",".join(map(str, entry.replicas)))
        + len('{"topic":,"partition":,"replicas":[]}')
    )


def split_batches(entries: list[PlanEntry], batch_size: int | None, max_bytes: int) -> list[list[PlanEntry]]:
    """Entries sorted by (topic, partition), cut greedily into batches.

    Each batch has at most `batch_size` entries (None: no count limit) and its trigger JSON
    (`model.format_plan_entries(batch)`) is at most `max_bytes` bytes. An entry that cannot fit on its
    own is an input error (exit 3).
    """
    if batch_size is not None and batch_size < 1:
        raise UsageError(f"Batch size must be at least 1, got {batch_size}")
    ordered = sorted(entries, key=lambda e: (e.topic, e.partition))
    overhead = len(_HEADER) + len(_FOOTER)
    batches: list[list[PlanEntry]] = []
    current: list[PlanEntry] = []
    size = overhead
    quoted: dict[str, bytes] = {}
    for e in ordered:
        tq = quoted.get(e.topic)
        if tq is None:
            tq = quoted[e.topic] = orjson.dumps(e.topic)
        n = entry_bytes(e, tq)
        if overhead + n > max_bytes:
            raise InvalidInputError(
                f"Partition {e.topic}-{e.partition} alone needs {overhead + n} bytes in "
                f"/admin/reassign_partitions, more than the limit of {max_bytes}"
            )
        extra = n + (1 if current else 0)
        if current and (size + extra > max_bytes or (batch_size is not None and len(current) >= batch_size)):
            batches.append(current)
            current, size, extra = [], overhead, n
        current.append(e)
        size += extra
    if current:
        batches.append(current)
    return batches
