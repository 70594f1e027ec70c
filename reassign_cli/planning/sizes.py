"""Partition sizes: what `snapshot` records (each partition's largest replica, in bytes, as the brokers
report it to DescribeLogDirs) and what a plan copies. Pure: plain data in and out.

A copy is a broker added to a partition's replica set (balance.py's definition); it fetches the whole
partition, so it costs the partition's size. The largest replica stands for the partition: the leader's
log is normally the longest, and a replica still catching up (or being added) holds less.

Time at a throttle: Kafka's `--throttle` sets `follower.replication.throttled.rate` (and the leader's)
on each broker involved: a broker receives its throttled replicas' data at most at that rate, whatever
the other brokers do. So the copy takes at least (the most bytes one broker receives) / rate; the
brokers fill in parallel. It takes longer when a leader's outbound throttle binds (a broker leading many
moving partitions sends to several brokers at once, the same rate for all), when the network or the
disks are slower than the rate, or when the plan is executed in batches. Total bytes / rate would be the
time if one broker received everything, an overestimate whenever the receivers are spread.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reassign_cli.core.model import ClusterState, TopicPartition
from reassign_cli.planning import plan

ReplicaKey = tuple[str, int, int]  # (topic, partition, broker)
# The brokers' answer for some replicas: {replica: bytes} for those reported, and the brokers that did not
# answer (admin.log_dirs.LogDirMover.replica_sizes).
AskSizes = Callable[[Sequence[ReplicaKey]], tuple[dict[ReplicaKey, int], list[int]]]


@dataclass(frozen=True, slots=True)
class SizeReport:
    """What `record` found: partitions with a size, partitions without one (no replica on a registered
    broker that answered with a live log dir), and the registered brokers that did not answer."""

    known: int
    unknown: int
    silent_brokers: list[int]


def live_replicas(state: ClusterState) -> list[ReplicaKey]:
    """Every replica of the state's topics on a registered broker (only those can be asked), sorted."""
    live = set(state.broker_ids)
    return sorted(
        (t.name, p, b)
        for t in state.topics.values()
        for p, reps in t.replicas.items()
        for b in reps
        if b in live
    )


def largest(replica_sizes: Mapping[ReplicaKey, int]) -> dict[TopicPartition, int]:
    """Each partition's size: the largest of its replicas' sizes."""
    out: dict[TopicPartition, int] = {}
    for (t, p, _), size in replica_sizes.items():
        if size > out.get((t, p), -1):
            out[(t, p)] = size
    return out


def record(state: ClusterState, ask: AskSizes) -> SizeReport:
    """Ask the brokers for every live replica's size and set each topic's `sizes` (partition -> the
    largest replica's bytes). A partition none of whose replicas answered (its brokers dead, silent, or
    its log dirs offline) gets no size: unknown, never a guess."""
    found, silent = ask(live_replicas(state))
    sizes = largest(found)
    known = total = 0
    for t in state.topics.values():
        t.sizes = {p: sizes[(t.name, p)] for p in sorted(t.replicas) if (t.name, p) in sizes}
        known += len(t.sizes)
        total += len(t.replicas)
    return SizeReport(known, total - known, sorted(silent))


@dataclass(slots=True)
class CopyBytes:
    """The bytes a plan copies: per broker, the sizes of the partitions it is added to."""

    copies: int = 0  # brokers added to replica sets (every partition, size known or not)
    copies_unknown: int = 0  # of which the partition's size is unknown (not in the bytes)
    bytes_copied: int = 0
    inbound: Counter[int] = field(default_factory=Counter)  # broker -> bytes it receives

    def add(self, other: CopyBytes) -> None:
        self.copies += other.copies
        self.copies_unknown += other.copies_unknown
        self.bytes_copied += other.bytes_copied
        self.inbound.update(other.inbound)

    def busiest(self) -> tuple[int | None, int]:
        """(the broker that receives the most bytes, those bytes); (None, 0) when nothing is copied.
        Ties: the lowest id."""
        if not self.inbound:
            return None, 0
        broker = min(self.inbound, key=lambda b: (-self.inbound[b], b))
        return broker, self.inbound[broker]

    def seconds_at(self, rate: int) -> float:
        """The least time the copies take at `rate` bytes/s per broker: the busiest receiver's bytes / rate."""
        return self.busiest()[1] / rate

    def as_dict(self, rate: int | None) -> dict[str, Any]:
        broker, most = self.busiest()
        doc: dict[str, Any] = {
            "bytes_copied": self.bytes_copied,
            "copies_size_unknown": self.copies_unknown,
            "bytes_in_max": most,
            "bytes_in_max_broker": broker,
        }
        if rate is not None:
            doc["throttle"] = rate
            doc["seconds_at_throttle"] = round(self.seconds_at(rate), 3)
        return doc


def copy_bytes(
    current: Mapping[str, Mapping[int, Sequence[int]]],
    proposed: Mapping[str, Mapping[int, Sequence[int]]],
    sizes: Mapping[str, Mapping[int, int]],
) -> CopyBytes:
    """What `proposed` copies from `current`: each broker of a proposed replica list that the partition's
    current list lacks receives the partition's size (`sizes[topic][partition]`; absent: unknown).
    Vectorized (numpy) when every partition has the same replica count before and after, as usual."""
    rows = plan.row_matrices(current, proposed)
    if rows is None:
        return _copy_bytes_rows(current, proposed, sizes)
    old, new = rows
    size = np.fromiter(
        itertools.chain.from_iterable(
            map(sizes.get(t, {}).get, parts, itertools.repeat(-1)) for t, parts in proposed.items()
        ),
        dtype=np.int64,
        count=len(new),
    )
    added = (new[:, :, None] != old[:, None, :]).all(axis=2)  # a new replica on a broker without one
    known = added & (size >= 0)[:, None]
    out = CopyBytes(copies=int(added.sum()))
    out.copies_unknown = out.copies - int(known.sum())
    brokers, weights = new[known], np.broadcast_to(size[:, None], new.shape)[known]
    if brokers.size:
        ids, per_broker = _sum_by(brokers, weights)
        out.inbound = Counter(dict(zip(ids.tolist(), per_broker.tolist(), strict=True)))
        out.bytes_copied = int(per_broker.sum())
    return out


def _sum_by(keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys, the int64 sum of their weights), exact (bincount's float weights are not past 2**53
    bytes). Usual broker ids index a table; others are sorted."""
    lo, hi = int(keys.min()), int(keys.max())
    if lo >= 0 and hi < plan.BINCOUNT_MAX_ID:
        table = np.zeros(hi + 1, dtype=np.int64)
        np.add.at(table, keys, weights)
        hit = np.zeros(hi + 1, dtype=bool)
        hit[keys] = True
        ids = np.flatnonzero(hit)
        return ids, table[ids]
    order = np.argsort(keys, kind="stable")
    ids, starts = np.unique(keys[order], return_index=True)
    return ids, np.add.reduceat(weights[order], starts)


def _copy_bytes_rows(
    current: Mapping[str, Mapping[int, Sequence[int]]],
    proposed: Mapping[str, Mapping[int, Sequence[int]]],
    sizes: Mapping[str, Mapping[int, int]],
) -> CopyBytes:
    """copy_bytes partition by partition (replica counts that differ between partitions)."""
    out = CopyBytes()
    for topic, parts in proposed.items():
        old_parts, topic_sizes = current.get(topic, {}), sizes.get(topic, {})
        for p, new in parts.items():
            old = old_parts.get(p, ())
            added = [b for b in new if b not in old]
            if not added:
                continue
            out.copies += len(added)
            size = topic_sizes.get(p)
            if size is None:
                out.copies_unknown += len(added)
                continue
            out.bytes_copied += size * len(added)
            for b in added:
                out.inbound[b] += size
    return out


def any_sizes(state: ClusterState, topics: Sequence[str]) -> bool:
    """Whether any of `topics` has a partition of known size (then the summary reports bytes)."""
    return any(state.topics[t].sizes for t in topics if t in state.topics)
