"""The working state of the balanced strategy (reassign_cli.planning.balanced.planner) and its small numpy helpers. Pure.

Brokers are numbered by their position in B (sorted by id): 0..n-1. A selected partition is a row of a
(P, W) matrix of those indices, W the largest target RF; -1 is an empty slot (a hole to fill when its
column is below the row's RF, padding otherwise). Topics are numbered by their position in name order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DENSE_BYTES = 512 << 20  # a (topic, broker) count table up to this size is one flat array


class PairCounts:
    """How many replicas (or leaders) of topic t broker b holds, for keys t * stride + b < size.

    One flat array indexed by key when it fits in DENSE_BYTES (1M partitions, 1,100 brokers: 110 MB of
    uint8, touched sparsely); otherwise a sorted table of the keys present at the start (updated in
    place) plus a dict of the keys that appear later."""

    def __init__(self, keys: np.ndarray, size: int, most: int, reuse: PairCounts | None = None) -> None:
        """`reuse`: a table no longer needed whose flat array (already paged in) may be taken over."""
        dtype = np.uint8 if most < 1 << 8 else np.uint16 if most < 1 << 16 else np.int64
        self.dense: np.ndarray | None = None
        if size * np.dtype(dtype).itemsize <= DENSE_BYTES:
            old = reuse.dense if reuse is not None else None
            if reuse is not None and old is not None and old.dtype == dtype and len(old) >= size:
                self.dense = old[:size]
                self.dense.fill(0)
                reuse.dense = None
            else:
                self.dense = np.zeros(size, dtype=dtype)
            np.add.at(self.dense, keys, self.dense.dtype.type(1))  # a same-type scalar: numpy's fast path
            self.keys = self.counts = np.zeros(0, dtype=np.int64)
        else:
            self.keys, counts = np.unique(keys, return_counts=True)
            self.counts = counts.astype(np.int64)
        self.new: dict[int, int] = {}

    def _find(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(self.keys) == 0:
            return np.zeros(len(q), dtype=np.int64), np.zeros(len(q), dtype=bool)
        if len(q) > 64:
            # Sorted queries search about ten times faster (each search starts where the last ended).
            order = np.argsort(q)
            pos = np.empty(len(q), dtype=np.int64)
            pos[order] = np.searchsorted(self.keys, q[order])
        else:
            pos = np.searchsorted(self.keys, q)
        pos[pos == len(self.keys)] = 0
        return pos, self.keys[pos] == q

    def get(self, q: np.ndarray) -> np.ndarray:
        if self.dense is not None:
            return self.dense[q].astype(np.int64)
        pos, hit = self._find(q)
        out = np.where(hit, self.counts[pos], 0) if len(self.keys) else np.zeros(len(q), dtype=np.int64)
        if self.new and not hit.all():
            miss = np.flatnonzero(~hit)
            get = self.new.get
            out[miss] = [get(k, 0) for k in q[miss].tolist()]
        return out

    def add(self, q: np.ndarray, delta: int) -> None:
        if self.dense is not None:
            # The dense table's unsigned cells wrap on the way down and back (counts never go below 0).
            np.add.at(self.dense, q, self.dense.dtype.type(delta % (1 << (8 * self.dense.itemsize))))
            return
        pos, hit = self._find(q)
        np.add.at(self.counts, pos[hit], delta)
        new = self.new
        for k in q[~hit].tolist():
            new[k] = new.get(k, 0) + delta

    def get1(self, key: int) -> int:
        return int(self.get(np.array([key], dtype=np.int64))[0])

    def add1(self, key: int, delta: int) -> None:
        self.add(np.array([key], dtype=np.int64), delta)


@dataclass(slots=True)
class Work:
    """The plan being made: replica rows, per-broker counts and targets, per-topic counts and caps."""

    n: int  # brokers in B
    rack: np.ndarray  # (n,) rack index of each broker, 0..n_racks-1
    n_racks: int  # 1 when there are no racks (every partition then "spans" its one rack)
    tix: np.ndarray  # (P,) topic index of each row
    rf: np.ndarray  # (P,) target replication factor of each row
    rep: np.ndarray  # (P, W) broker index per slot, -1 empty
    count: np.ndarray  # (n,) replicas on each broker, all topics (unselected ones fixed)
    target: np.ndarray  # (n,) the count each broker should end with
    pairs: PairCounts  # replicas per (topic, broker), key topic * stride + broker
    stride: int
    cap: np.ndarray  # (topics, racks) most replicas of the topic one broker of the rack may hold
    rng: np.random.Generator
    # (share, cap, loose): the caps the phases work under, in turn (balance.py's _caps); `cap` is the one
    # in force; `tight` while under `share`: moves only from brokers beyond their share
    caps: tuple[np.ndarray, ...] = ()
    tight: bool = False
    # (P,) bytes of each row when every selected partition's size is known (--balance replicas then
    # prefers the smaller partitions among moves of equal count); None: the seeded order alone
    size: np.ndarray | None = None
    # --balance bytes with --max-disk-utilization: the room each broker has left for copies, which the
    # seeded rounds and the holes' pass keep within; None: no limit (--balance replicas, no capacities)
    disk: DiskRoom | None = None

    @property
    def rack_ext(self) -> np.ndarray:
        """Rack of each broker index, with -1 for the empty slot (index -1)."""
        return np.append(self.rack, -1)

    def racks_of(self, rows: np.ndarray) -> np.ndarray:
        return self.rack_ext[self.rep[rows]]

    def holes(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        rep = self.rep[rows]
        cols = np.arange(rep.shape[1])
        return ((rep < 0) & (cols[None, :] < self.rf[rows][:, None])).sum(axis=1)

    def required_racks(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        return np.minimum(self.rf[rows], self.n_racks)


@dataclass(slots=True)
class DiskRoom:
    """The bytes each broker may still receive before its peak reaches --max-disk-utilization (its
    partitions' bytes or its volumes' used bytes, plus every byte it receives in the plan). A replica a
    broker held before the plan costs it nothing; one it gives away frees no room (the copy's source is
    deleted only once the plan ends)."""

    old: np.ndarray  # (P, W0) each row's replicas before the plan
    size: np.ndarray  # (P,) bytes of each row
    room: np.ndarray  # (n,) bytes each broker may still receive (updated by `take`)

    def cost(self, rows: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The bytes broker v receives by taking a replica of each row: 0 when it held the row before."""
        back = (self.old[rows] == v[:, None]).any(axis=1)
        return np.where(back, 0, self.size[rows])

    def within(self, rows: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Among candidate additions (in order), those that keep each receiver within its room: the
        candidates whose cost, added to that of the receiver's earlier candidates, still fits."""
        cost = self.cost(rows, v)
        order = np.argsort(v, kind="stable")
        cum = np.cumsum(cost[order])
        sv = v[order]
        start = np.ones(len(sv), dtype=bool)
        start[1:] = sv[1:] != sv[:-1]
        before = np.maximum.accumulate(np.where(start, cum - cost[order], 0))
        ok = np.empty(len(v), dtype=bool)
        ok[order] = cum - before <= self.room[sv]
        return ok

    def take(self, rows: np.ndarray, v: np.ndarray) -> None:
        np.subtract.at(self.room, v, self.cost(rows, v))


def spans(racks: np.ndarray) -> np.ndarray:
    """Distinct racks per row of a (m, W) matrix of rack indices (-1: empty slot, not counted)."""
    out = (racks[:, 0] >= 0).astype(np.int64) if racks.shape[1] else np.zeros(len(racks), np.int64)
    for j in range(1, racks.shape[1]):
        fresh = racks[:, j] >= 0
        for i in range(j):
            fresh &= racks[:, j] != racks[:, i]
        out += fresh
    return out


def group_rank(keys: np.ndarray) -> np.ndarray:
    """For each element, how many equal keys come before it in the array."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    idx = np.arange(len(keys))
    start = np.ones(len(keys), dtype=bool)
    start[1:] = sk[1:] != sk[:-1]
    first = np.maximum.accumulate(np.where(start, idx, 0))
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = idx - first
    return rank


def first_of(keys: np.ndarray) -> np.ndarray:
    """Mask of the first occurrence of each key."""
    return group_rank(keys) == 0


def tokens(amounts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each broker index repeated by its (positive) amount, in a seeded random order."""
    return rng.permutation(np.repeat(np.arange(len(amounts)), np.clip(amounts, 0, None)))
