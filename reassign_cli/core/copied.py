"""Bytes copied by a partition move, from the replicas' sizes (DescribeLogDirs): the one arithmetic behind
`verify`'s bytes copied, `verify --metrics-file`'s bytes remaining and the paced executor's progress.
Pure: the sizes are passed in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from reassign_cli.core.model import TopicPartition
from reassign_cli.core.progress import PartitionProgress, Status

ReplicaKey = tuple[str, int, int]


def copied_bytes(full: int, receiving: Iterable[int]) -> tuple[int, int]:
    """(bytes copied, bytes to copy) of a partition of `full` bytes copied to each receiving replica, given
    the size each of those replicas has reached (0 for one not created yet; one longer than `full`, as the
    leader's log grew since it was read, counts as caught up)."""
    got = list(receiving)
    return sum(min(max(s, 0), full) for s in got), full * len(got)


def adding_replicas(r: PartitionProgress) -> list[int]:
    """The brokers receiving a new replica of a partition in progress."""
    return r.adding or [b for b in r.target if b not in r.current]


def moving_bytes(
    results: Sequence[PartitionProgress], sizes: Mapping[ReplicaKey, int]
) -> dict[TopicPartition, tuple[int, int]]:
    """(bytes copied, bytes to copy) of each partition in progress whose size is known: the partition's
    size is its largest origin replica (a replica that is not being added). A partition none of whose
    origin replicas has a size is left out."""
    out: dict[TopicPartition, tuple[int, int]] = {}
    for r in results:
        if r.status != Status.IN_PROGRESS:
            continue
        adding = adding_replicas(r)
        known = [
            sizes[k] for k in ((r.topic, r.partition, b) for b in r.current if b not in adding) if k in sizes
        ]
        if known:
            full = max(known)
            out[(r.topic, r.partition)] = copied_bytes(
                full, (sizes.get((r.topic, r.partition, b), 0) for b in adding)
            )
    return out
