"""Compact replica assignments: many topics' partition -> replicas maps over one shared numpy array. Pure.

As dicts of lists, a 10M-partition cluster costs ~2.3 GB of Python objects (per partition a dict entry,
a list and three ints). Here every replica id of every topic sits in one flat int array (4 bytes each,
8 when an id does not fit in 32 bits), and each topic is a small read-only `Mapping[int, list[int]]`
over its slice of it: `TopicReplicas`, ~100 bytes per topic however many partitions it has.

A topic is *regular* when its partition ids are 0..P-1 in that order and every partition has the same
replica count R: partition p is then flat[start + p*R : start + (p+1)*R], no per-partition bookkeeping.
Any other topic (ids out of order or with gaps, mixed counts during a reassignment) keeps a dict of
partition -> (begin, end) in the flat array, in its original order.

Reading a partition gives a new list of ints (mutating it changes nothing stored). Bulk readers
(`rows`, `values`, `items`, `regular_block`, `stack`) cost one numpy call per topic or per run of
topics, not one per partition.
"""

from __future__ import annotations

import operator
from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView
from typing import Any

import numpy as np

__all__ = ["ReplicaStore", "TopicReplicas", "int_array", "stack"]

_I32 = np.iinfo(np.int32)


def int_array(ids: list[int]) -> np.ndarray:
    """`ids` as int32 when every id fits (Kafka's broker ids are Java ints), else int64. Raises
    OverflowError beyond 64 bits."""
    try:
        return np.array(ids, dtype=np.int32)
    except OverflowError:
        return np.array(ids, dtype=np.int64)


class ReplicaStore:
    """Replica ids of many partitions, one after the other. Filled by `append` (a loader adds one chunk
    of topics at a time), then `finish`ed into one array; views read it only after that."""

    __slots__ = ("_parts", "_size", "flat")

    def __init__(self) -> None:
        self.flat: np.ndarray | None = None
        self._parts: list[np.ndarray] = []
        self._size = 0

    @classmethod
    def of(cls, flat: np.ndarray) -> ReplicaStore:
        store = cls()
        store.flat = flat
        store._size = len(flat)
        return store

    def append(self, ids: np.ndarray) -> int:
        """Add ids at the end; returns the position of the first one."""
        if self.flat is not None:
            raise RuntimeError("the store is finished")
        start = self._size
        self._parts.append(ids)
        self._size += len(ids)
        return start

    def finish(self) -> None:
        """One array of everything appended (int32 unless some chunk needed int64)."""
        if self.flat is None:
            parts, self._parts = self._parts, []
            self.flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


class TopicReplicas(Mapping[int, list[int]]):
    """One topic's partition -> replica ids, read-only, over a ReplicaStore.

    Regular (partition ids 0..n-1 in order, rf replicas each): `rows` is None. Otherwise `rows` maps
    each partition, in the topic's own order, to its (begin, end) in the store, and rf is -1."""

    __slots__ = ("_n", "_rf", "_rows", "_start", "_store")

    def __init__(
        self, store: ReplicaStore, start: int, n: int, rf: int, rows: dict[int, tuple[int, int]] | None = None
    ) -> None:
        self._store = store
        self._start = start
        self._n = n
        self._rf = rf if rows is None else -1
        self._rows = rows

    @classmethod
    def from_rows(
        cls, store: ReplicaStore, start: int, pids: Sequence[int], lens: Sequence[int]
    ) -> TopicReplicas:
        """The view of partitions `pids` whose replica lists (of lengths `lens`) start at `start`, one
        after the other. Regular when it can be. Raises ValueError on a repeated partition id."""
        n = len(pids)
        if list(pids) == list(range(n)) and (n == 0 or lens.count(lens[0]) == n):
            return cls(store, start, n, lens[0] if n else 0)
        rows: dict[int, tuple[int, int]] = {}
        pos = start
        for p, k in zip(pids, lens, strict=True):
            rows[p] = (pos, pos + k)
            pos += k
        if len(rows) != n:
            raise ValueError("a partition id is repeated")
        return cls(store, start, n, -1, rows)

    # --- the Mapping -----------------------------------------------------------------------------

    def _span(self, p: object) -> tuple[int, int] | None:
        if self._rows is not None:
            return self._rows.get(p)  # type: ignore[call-overload]
        try:
            i = operator.index(p)  # type: ignore[arg-type]
        except TypeError:
            return None
        if not 0 <= i < self._n:
            return None
        b = self._start + i * self._rf
        return b, b + self._rf

    def __getitem__(self, p: int) -> list[int]:
        span = self._span(p)
        if span is None:
            raise KeyError(p)
        flat = self._store.flat
        assert flat is not None, "the store is not finished"
        return flat[span[0] : span[1]].tolist()

    def __contains__(self, p: object) -> bool:
        return self._span(p) is not None

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._n) if self._rows is None else self._rows)

    def values(self) -> ValuesView[list[int]]:
        return _Values(self)

    def items(self) -> ItemsView[int, list[int]]:
        return _Items(self)

    def __repr__(self) -> str:
        return f"TopicReplicas({dict(self.items())!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (list(self.items()),))  # pickles (e.g. to Spark) as a plain dict

    # --- bulk access -----------------------------------------------------------------------------

    @property
    def rf(self) -> int:
        """The replica count of every partition when the topic is regular, else -1."""
        return self._rf

    def regular_block(self) -> np.ndarray | None:
        """Regular topics: the (partitions x rf) matrix of replica ids, a view of the store (no copy)."""
        if self._rows is not None:
            return None
        flat = self._store.flat
        assert flat is not None, "the store is not finished"
        return flat[self._start : self._start + self._n * self._rf].reshape(self._n, self._rf)

    def rows(self) -> list[list[int]]:
        """Every partition's replicas, in iteration order."""
        block = self.regular_block()
        if block is not None:
            return block.tolist()
        assert self._rows is not None and self._store.flat is not None
        if not self._rows:
            return []
        lo = min(b for b, _ in self._rows.values())
        hi = max(e for _, e in self._rows.values())
        ids = self._store.flat[lo:hi].tolist()
        return [ids[b - lo : e - lo] for b, e in self._rows.values()]


class _Values(ValuesView[list[int]]):
    _mapping: TopicReplicas

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self._mapping.rows())


class _Items(ItemsView[int, list[int]]):
    _mapping: TopicReplicas

    def __iter__(self) -> Iterator[tuple[int, list[int]]]:
        return zip(self._mapping, self._mapping.rows(), strict=True)


def stack(views: Sequence[Mapping[int, Sequence[int]]]) -> np.ndarray | None:
    """The replica ids of every partition of `views` (in order) as one (partitions x rf) matrix, when
    every view is a regular TopicReplicas over one store with one rf; else None. Topics that follow
    each other in the store (a snapshot's topics are stored in name order) cost one slice together."""
    if not views:
        return None
    first = views[0]
    if not isinstance(first, TopicReplicas) or first._rows is not None:
        return None
    store, rf = first._store, first._rf
    spans: list[tuple[int, int]] = []
    for v in views:
        if not isinstance(v, TopicReplicas) or v._rows is not None or v._store is not store or v._rf != rf:
            return None
        b, e = v._start, v._start + v._n * rf
        if spans and spans[-1][1] == b:
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((b, e))
    flat = store.flat
    assert flat is not None, "the store is not finished"
    parts = [flat[b:e] for b, e in spans]
    joined = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return joined.reshape(-1, rf) if rf else np.zeros((sum(len(v) for v in views), 0), dtype=flat.dtype)
