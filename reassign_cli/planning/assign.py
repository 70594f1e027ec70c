"""Kafka's replica assignment (`AdminUtils.assignReplicasToBrokers`, Kafka 3.9), exact. Pure.

Two implementations of the same algorithm:

* `assign_replicas`: the scalar reference, one topic at a time, with Kafka's signature, validation
  order and messages (KAFKA-SPEC §2.2-§2.5). `rng` is anything with `randrange(n)`; Kafka makes two
  draws per call, the start index first and the replica shift second.
* `assign_many`: a numpy kernel for many topics that share (brokers, partition count, RF): the caller
  passes one start index and one replica shift per topic and gets a `(topics, partitions, rf)` array
  of broker ids. Rack-unaware is closed form; rack-aware steps Kafka's candidate counter `k` in
  lockstep over all partitions with masks. Both equal the scalar reference (tested).

Rack-unaware, for brokers b[0..n), start s, initial shift h, partition id p:

    first(p) = (p + s) % n
    shift(p) = h + (number of ids q in [max(start_partition_id, 1), p] with q % n == 0)
    replica j >= 1 = b[(first + 1 + (shift + j - 1) % (n - 1)) % n]

Rack-aware runs the same over `rack_alternated_broker_list` (one broker per rack in turn, racks
sorted by name) with shift multiplied by the rack count, skipping candidates whose rack already holds
a replica (until every rack does) or whose broker already does.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from reassign_cli.errors import AdminOperationError, InvalidPartitionsError, InvalidReplicationFactorError

__all__ = [
    "RandRange",
    "assign_many",
    "assign_replicas",
    "check_arguments",
    "rack_alternated_broker_list",
]

MIXED_RACKS_MESSAGE = "Not all brokers have rack information for replica rack aware assignment."


class RandRange(Protocol):
    def randrange(self, n: int, /) -> int: ...


# Kafka draws from one static, unseeded java.util.Random; rng=None draws from this one.
_RAND = random.Random()


def check_arguments(n_brokers: int, n_partitions: int, replication_factor: int) -> None:
    """Kafka's argument checks, in Kafka's order and with Kafka's messages."""
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > n_brokers:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {n_brokers}."
        )


def _java_string_key(s: str) -> list[int]:
    """Sort key equal to Java's String.compareTo (UTF-16 code units) for any Python str."""
    b = s.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(b[i : i + 2], "big") for i in range(0, len(b), 2)]


def _sorted_racks(racks: set[str]) -> list[str]:
    # Python's str order is code-point order; it differs from Java's only for astral characters.
    if all(c < "\ud800" for r in racks for c in r):
        return sorted(racks)
    return sorted(racks, key=_java_string_key)


def rack_alternated_broker_list(broker_rack: Mapping[int, str]) -> list[int]:
    """Kafka's getRackAlternatedBrokerList: one broker from each rack in turn (racks sorted by name,
    brokers of a rack by id), skipping racks that have run out, until every broker is placed."""
    by_rack: dict[str, list[int]] = {}
    for b, r in broker_rack.items():
        by_rack.setdefault(r, []).append(b)
    queues = [sorted(by_rack[r]) for r in _sorted_racks(set(by_rack))]
    out: list[int] = []
    depth = 0
    while len(out) < len(broker_rack):
        for q in queues:
            if depth < len(q):
                out.append(q[depth])
        depth += 1
    return out


def _replica_index(first: int, second_shift: int, j: int, n: int) -> int:
    return (first + 1 + (second_shift + j) % (n - 1)) % n


def _rack_map(brokers: Sequence[tuple[int, str | None]]) -> dict[int, str] | None:
    """None when no broker has a rack (rack-unaware); Kafka's error when only some have one."""
    if all(r is None for _, r in brokers):
        return None
    if any(r is None for _, r in brokers):
        raise AdminOperationError(MIXED_RACKS_MESSAGE)
    return {b: r for b, r in brokers if r is not None}


def assign_replicas(
    brokers: Sequence[tuple[int, str | None]],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: RandRange | None = None,
) -> dict[int, list[int]]:
    """Kafka's AdminUtils.assignReplicasToBrokers (scalar reference). `brokers`: (id, rack or None)
    pairs, in the order Kafka would get them (the ZooKeeper tools sort by id)."""
    check_arguments(len(brokers), n_partitions, replication_factor)
    rack_of = _rack_map(brokers)
    ids = [b for b, _ in brokers] if rack_of is None else rack_alternated_broker_list(rack_of)
    n = len(ids)
    draw = (rng or _RAND).randrange
    start = fixed_start_index if fixed_start_index >= 0 else draw(n)
    pid = max(0, start_partition_id)
    shift = fixed_start_index if fixed_start_index >= 0 else draw(n)
    out: dict[int, list[int]] = {}
    if rack_of is None:
        for _ in range(n_partitions):
            if pid > 0 and pid % n == 0:
                shift += 1
            first = (pid + start) % n
            reps = [ids[first]]
            reps.extend(ids[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1))
            out[pid] = reps
            pid += 1
        return out
    n_racks = len(set(rack_of.values()))
    for _ in range(n_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        leader = ids[first]
        reps = [leader]
        racks = {rack_of[leader]}
        chosen = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                b = ids[_replica_index(first, shift * n_racks, k, n)]
                k += 1
                r = rack_of[b]
                if (r not in racks or len(racks) == n_racks) and (b not in chosen or len(chosen) == n):
                    reps.append(b)
                    racks.add(r)
                    chosen.add(b)
                    break
        out[pid] = reps
        pid += 1
    return out


# ---------------------------------------------------------------------------------------------
# Vectorized kernel
# ---------------------------------------------------------------------------------------------


def _shift_bumps(pids: np.ndarray, n: int, start_partition_id: int) -> np.ndarray:
    """How many times Kafka has bumped the replica shift by the time it emits partition id p."""
    lo = max(start_partition_id, 1)
    return pids // n - (lo - 1) // n


def assign_many(
    brokers: Sequence[tuple[int, str | None]],
    n_partitions: int,
    replication_factor: int,
    starts: np.ndarray,
    shifts: np.ndarray,
    start_partition_id: int = 0,
) -> np.ndarray:
    """Kafka's assignment for many topics at once: topic i uses start index starts[i] and initial
    replica shift shifts[i] (Kafka's two draws, each in [0, n_brokers)). Returns an int64 array of
    broker ids of shape (len(starts), n_partitions, replication_factor); partition ids run from
    max(0, start_partition_id). Same checks and messages as `assign_replicas`."""
    check_arguments(len(brokers), n_partitions, replication_factor)
    rack_of = _rack_map(brokers)
    starts = np.asarray(starts, dtype=np.int64)
    shifts = np.asarray(shifts, dtype=np.int64)
    t = len(starts)
    spid = max(0, start_partition_id)
    if rack_of is None:
        ids = np.fromiter((b for b, _ in brokers), dtype=np.int64, count=len(brokers))
        pos = _unaware_positions(len(ids), n_partitions, replication_factor, starts, shifts, spid)
    else:
        arranged = rack_alternated_broker_list(rack_of)
        rack_names = sorted(set(rack_of.values()))
        rack_idx = {r: i for i, r in enumerate(rack_names)}
        ids = np.array(arranged, dtype=np.int64)
        rack_of_pos = np.array([rack_idx[rack_of[b]] for b in arranged], dtype=np.int64)
        pos = _aware_positions(
            rack_of_pos, len(rack_names), n_partitions, replication_factor, starts, shifts, spid
        )
    return ids[pos].reshape(t, n_partitions, replication_factor)


def _unaware_positions(
    n: int, n_partitions: int, rf: int, starts: np.ndarray, shifts: np.ndarray, spid: int
) -> np.ndarray:
    pids = np.arange(spid, spid + n_partitions, dtype=np.int64)
    first = (pids[None, :] + starts[:, None]) % n  # (T, P)
    pos = np.empty((len(starts), n_partitions, rf), dtype=np.int64)
    pos[:, :, 0] = first
    if rf > 1:
        shift = shifts[:, None] + _shift_bumps(pids, n, spid)[None, :]  # (T, P)
        for j in range(rf - 1):
            pos[:, :, j + 1] = (first + 1 + (shift + j) % (n - 1)) % n
    return pos


def _aware_positions(
    rack_of_pos: np.ndarray,
    n_racks: int,
    n_partitions: int,
    rf: int,
    starts: np.ndarray,
    shifts: np.ndarray,
    spid: int,
) -> np.ndarray:
    """Positions in the rack-alternated list. Kafka's inner `while` loop over the candidate counter k,
    stepped in lockstep for every (topic, partition) row that still needs a replica. Every unfinished
    row has tried exactly as many candidates as the loop has run, so k is one number for all of them;
    the loop runs on whole columns while most rows are unfinished, then on the unfinished rows only."""
    n = len(rack_of_pos)
    pids = np.arange(spid, spid + n_partitions, dtype=np.int64)
    first = ((pids[None, :] + starts[:, None]) % n).ravel()
    rows = len(first)
    # Column-major: pos[j] is the j-th replica of every row (-1 until placed).
    pos = np.full((rf, rows), -1, dtype=np.int64)
    pos[0] = first
    if rf == 1:
        return pos.T
    rack = np.full((rf, rows), -1, dtype=np.int64)
    rack[0] = rack_of_pos[first]
    base = first + 1
    second_shift = ((shifts[:, None] + _shift_bumps(pids, n, spid)[None, :]) * n_racks).ravel()
    filled = np.ones(rows, dtype=np.int64)  # replicas placed so far
    racks_used = np.ones(rows, dtype=np.int64)  # distinct racks among them
    sel: slice | np.ndarray = slice(None)  # the unfinished rows: all of them, then an index array
    k = 0
    while True:
        cand = (base[sel] + (second_shift[sel] + k) % (n - 1)) % n
        cand_rack = rack_of_pos[cand]
        rack_seen = rack[0][sel] == cand_rack
        broker_seen = pos[0][sel] == cand
        for j in range(1, rf):
            rack_seen |= rack[j][sel] == cand_rack
            broker_seen |= pos[j][sel] == cand
        # Kafka's broker-set test `size == numBrokers` can never hold here: rf <= n.
        ok = ~broker_seen & (~rack_seen | (racks_used[sel] == n_racks))
        if isinstance(sel, slice) and k >= rf - 1:  # each step places at most one replica per row
            ok &= filled < rf
        k += 1
        acc = np.flatnonzero(ok) if isinstance(sel, slice) else sel[ok]
        col = filled[acc]
        pos[col, acc] = cand[ok]
        rack[col, acc] = cand_rack[ok]
        racks_used[acc] += ~rack_seen[ok]
        filled[acc] = col + 1
        if isinstance(sel, slice):
            unfinished = filled < rf
            if int(unfinished.sum()) * 2 < rows:
                sel = np.flatnonzero(unfinished)
        else:
            sel = sel[filled[sel] < rf]
        if not isinstance(sel, slice) and len(sel) == 0:
            return pos.T
