"""Each broker's log dirs (its disks, on a JBOD broker) and which dir holds each replica, from the brokers'
DescribeLogDirs answers and their `cordoned.log.dirs` config. Pure: plain data in and out.

`snapshot` and live `generate` record them (cli/snapshot.py, ops/generate.py), the snapshot file keeps
them (snapshot.py: each broker's "log_dirs", each partition's "dirs"/"future_dirs"). `--balance bytes`
plans disk by disk with them (planning/balanced/disks.py); paced log-dir moves (issue 27, item 3) will use
them too.

A log dir (model.LogDir), as one broker reports it:
- `path`: as the broker names it (absolute);
- `offline`: DescribeLogDirs answered an error for it (`error`, e.g. KAFKA_STORAGE_ERROR: the disk
  failed, or the broker could not read or lock it at startup); then nothing else is known of it;
- `held`: the bytes of the current replicas in it (each replica's partition_size, as the broker reports
  it); `future_held`: those of future replicas being moved into it (AlterReplicaLogDirs), apart;
- `total`, `usable`: its filesystem's total and usable bytes (DescribeLogDirs v4+, KIP-827, Kafka 3.3 and
  later; None before, or when offline);
- `cordoned`: in the broker's `cordoned.log.dirs` (KIP-1066, Kafka 4.3; "*" cordons them all): no new
  replica is placed there. None when unknown: a broker older than that has no such config (DescribeConfigs
  does not list the key), or its config could not be read.

Replicas are located by index: a partition's `dirs` lists, for each of its replicas in order, the index
of the dir holding it in that broker's dirs (sorted by path), or None when unknown (the broker did not
answer, the replica is in an offline dir, or the broker has no such replica). An index instead of the
path keeps the file small at millions of partitions.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from reassign_cli.core.model import ClusterState, LogDir

# What a broker answered: its log dirs as kafka-python's DescribeLogDirs result dicts ("log_dir",
# "error_code", "topics" [{"name", "partitions" [{"partition_index", "partition_size",
# "is_future_key"}]}], "total_bytes", "usable_bytes" (-1 when not reported), "is_cordoned" (v5+)).
DirAnswer = Mapping[str, Any]
# (topic, partition) -> (index of the dir holding the current replica, index of the dir holding a future
# one, the current replica's size in bytes), each None when none: one broker's replicas.
Located = tuple[int | None, int | None, int | None]
ReplicaLocations = dict[tuple[str, int], Located]

CORDON_ALL = "*"


def cordoned_paths(value: str | None) -> frozenset[str] | None:
    """The dirs a `cordoned.log.dirs` value names (normalized paths; "*" for all); None when the broker
    has no such config (unknown)."""
    if value is None:
        return None
    names = [p.strip() for p in value.split(",") if p.strip()]
    return frozenset(p if p == CORDON_ALL else posixpath.normpath(p) for p in names)


def is_cordoned(path: str, cordoned: frozenset[str] | None, reported: bool = False) -> bool | None:
    """Whether the dir is cordoned: DescribeLogDirs v5 says so (`reported`: IsCordoned, which older
    versions leave false), or the config names it (or "*"); None when neither is known."""
    if reported:
        return True
    if cordoned is None:
        return None
    return CORDON_ALL in cordoned or posixpath.normpath(path) in cordoned


def broker_dirs(
    answer: Iterable[DirAnswer], cordoned: frozenset[str] | None, error_name: Callable[[int], str]
) -> tuple[tuple[LogDir, ...], ReplicaLocations]:
    """One broker's log dirs, sorted by path, and where its replicas are (see ReplicaLocations). A
    replica named as current in two dirs (a move being swapped in) is located in the first."""
    ordered = sorted(answer, key=lambda d: str(d["log_dir"]))
    dirs: list[LogDir] = []
    where: dict[tuple[str, int], list[int | None]] = {}
    for i, d in enumerate(ordered):
        path = str(d["log_dir"])
        cordon = is_cordoned(path, cordoned, bool(d.get("is_cordoned")))
        code = int(d.get("error_code") or 0)
        if code:
            dirs.append(LogDir(path, offline=True, error=error_name(code), cordoned=cordon))
            continue
        held = future = 0
        for topic in d.get("topics") or ():
            for part in topic["partitions"]:
                slot = where.setdefault((topic["name"], int(part["partition_index"])), [None, None, None])
                size = int(part["partition_size"])
                if part["is_future_key"]:
                    future += size
                    slot[1] = i if slot[1] is None else slot[1]
                else:
                    held += size
                    if slot[0] is None:
                        slot[0], slot[2] = i, size
        total, usable = _known(d, "total_bytes"), _known(d, "usable_bytes")
        dirs.append(LogDir(path, False, None, held, future, total, usable, cordon))
    return tuple(dirs), {k: (v[0], v[1], v[2]) for k, v in where.items()}


def _known(d: DirAnswer, key: str) -> int | None:
    v = d.get(key)
    return int(v) if v is not None and int(v) >= 0 else None


def replica_sizes(
    located: Mapping[int, ReplicaLocations], replicas: Iterable[tuple[str, int, int]]
) -> dict[tuple[str, int, int], int]:
    """The size of each of `replicas` (topic, partition, broker) whose current copy its broker reported
    in a live dir; the others are left out (LogDirMover.replica_sizes' contract)."""
    out: dict[tuple[str, int, int], int] = {}
    for t, p, b in replicas:
        size = located.get(b, {}).get((t, p), (None, None, None))[2]
        if size is not None:
            out[(t, p, b)] = size
    return out


def locate(
    state: ClusterState, dirs: Mapping[int, tuple[LogDir, ...]], located: Mapping[int, ReplicaLocations]
) -> None:
    """Record the brokers' log dirs in the state, and in each topic which dir holds each replica: its
    `dirs` and `future_dirs` (see model.Topic), for the partitions with at least one replica located."""
    state.disks = {b: dirs[b] for b in sorted(dirs)}
    for t in state.topics.values():
        t.dirs, t.future_dirs = replica_dirs(t.replicas, t.name, located)


def replica_dirs(
    replicas: Mapping[int, Sequence[int]], topic: str, located: Mapping[int, ReplicaLocations]
) -> tuple[dict[int, list[int | None]], dict[int, list[int | None]]]:
    """A topic's `dirs` and `future_dirs`: for each partition with a replica located, the dir index per
    replica (None where unknown); future ones only where a replica has a future copy."""
    dirs: dict[int, list[int | None]] = {}
    futures: dict[int, list[int | None]] = {}
    nowhere: Located = (None, None, None)
    for p in sorted(replicas):
        found = [located.get(b, {}).get((topic, p), nowhere) for b in replicas[p]]
        if any(f[0] is not None for f in found):
            dirs[p] = [f[0] for f in found]
        if any(f[1] is not None for f in found):
            futures[p] = [f[1] for f in found]
    return dirs, futures
