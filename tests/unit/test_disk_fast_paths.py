"""Issue 27's measure: fast paths of planning/balanced/disks.py agree with the simple ones they
replaced. DiskPlan.entries formats the topics without log dirs given, in name order, in one
format_partition_entries call per run (not one per topic); _within_dirs writes the dirs of the replicas
moved within their broker in numpy (not row by row); _movable lists each disk's replicas as Python's sort
would; _count_within counts the moves within brokers in numpy (not replica by replica)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core.replicas import ReplicaStore, TopicReplicas
from reassign_cli.planning.balanced.disks import (
    _PAD,
    DiskPlan,
    _count_within,
    _movable,
    _Rows,
    _within_cells,
    _within_dirs,
)

_PATHS = [(1, "/a"), (1, "/b%"), (2, "/c"), (2, '/d"é')]
_NAMES = st.text(alphabet='ab%"é\\-', min_size=1, max_size=4)


def _regular(rows: list[list[int]]) -> TopicReplicas:
    """A snapshot's view of partitions 0..n-1 (regular when every row has as many replicas)."""
    flat = np.array([b for r in rows for b in r], dtype=np.int64)
    store = ReplicaStore.of(flat)
    return TopicReplicas.from_rows(store, 0, list(range(len(rows))), [len(r) for r in rows])


@st.composite
def _documents(draw: st.DrawFn) -> tuple[DiskPlan, dict[str, object]]:
    """Topics in any order (dicts or snapshot views), some with log dirs given for some partitions."""
    names = draw(st.lists(_NAMES, min_size=1, max_size=8, unique=True))
    plan = DiskPlan(list(_PATHS), [], 0.05, 0.85, weighted=False, goal_utilization=0.0)
    assignment: dict[str, object] = {}
    for name in names:
        n, rf = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        rows = [draw(st.lists(st.integers(0, 9), min_size=rf, max_size=rf)) for _ in range(n)]
        if draw(st.booleans()):
            rows[-1] = rows[-1] + [7]  # one row longer: not regular
        assignment[name] = _regular(rows) if draw(st.booleans()) else dict(enumerate(rows))
        for p in draw(st.sets(st.integers(0, n), max_size=2)):  # n: a partition not in the topic
            k = len(rows[p]) if p < n else rf
            plan.explicit[name, p] = draw(
                st.lists(st.sampled_from([p for _, p in _PATHS] + ["any"]), min_size=k, max_size=k)
            )
    return plan, assignment


@settings(max_examples=300, deadline=None)
@given(_documents())
def test_entries_in_runs_as_topic_by_topic(case: tuple[DiskPlan, dict[str, object]]) -> None:
    plan, assignment = case
    one_by_one = [plan.entries({t: parts}) for t, parts in assignment.items()]  # type: ignore[dict-item]
    assert plan.entries(assignment) == ",".join(x for x in one_by_one if x)  # type: ignore[arg-type]


def _within_dirs_loop(
    plan: DiskPlan,
    final: np.ndarray,
    origin: dict[tuple[int, int], int],
    disk_of: dict[int, int],
    ch: set[int],
) -> dict[int, list[str]]:
    """_within_dirs row by row, as _explicit wrote it before."""
    cols: dict[int, set[int]] = {}
    for (r, c), src in origin.items():
        if r not in ch and disk_of[int(final[r, c])] != src:
            cols.setdefault(r, set()).add(c)
    out: dict[int, list[str]] = {}
    for r, moved in cols.items():
        row = [g for g in final[r].tolist() if g != _PAD]
        out[r] = [plan.paths[g][1] if c in moved else "any" for c, g in enumerate(row)]
    return out


_DISK_OF = {0: 0, 1: 1, 2: 2, 3: 2}  # global dir -> disk: dirs 2 and 3 one disk (one filesystem)


def _finals(data: st.DataObject, n_rows: int) -> np.ndarray:
    """A plan's dirs (n_rows x 3): global dirs 0..3, -1 (any) and _PAD after a row's replicas."""
    final = np.full((n_rows, 3), _PAD, dtype=np.int64)
    for r in range(n_rows):
        k = data.draw(st.integers(1, 3))
        final[r, :k] = data.draw(st.lists(st.integers(-1, 3), min_size=k, max_size=k))
    return final


def _origins(data: st.DataObject, final: np.ndarray) -> dict[tuple[int, int], int]:
    """Some replicas of `final` (not "any", not padding) moved within their broker: the disk each came from."""
    cells = [(r, c) for (r, c), g in np.ndenumerate(final) if g >= 0]
    moved = data.draw(st.lists(st.sampled_from(cells), unique=True) if cells else st.just([]))
    return {rc: data.draw(st.integers(0, 2)) for rc in moved}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_within_dirs_as_row_by_row(data: st.DataObject) -> None:
    plan = DiskPlan(list(_PATHS), [], 0.05, 0.85, weighted=False, goal_utilization=0.0)
    n_rows = data.draw(st.integers(1, 6))
    final = _finals(data, n_rows)
    origin = _origins(data, final)
    ch = data.draw(st.sets(st.integers(0, n_rows - 1)))
    within = _within_cells(plan, final, origin, _DISK_OF, np.array(sorted(ch), dtype=np.int64))
    assert _within_dirs(plan, final, within) == _within_dirs_loop(plan, final, origin, _DISK_OF, ch)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_movable_as_sorted(data: st.DataObject) -> None:
    """_movable's numpy lists against Python's sort of every replica on a disk of `on`."""
    plan = DiskPlan(list(_PATHS), [], 0.05, 0.85, weighted=False, goal_utilization=0.0)
    n_rows = data.draw(st.integers(1, 8))
    final = _finals(data, n_rows)
    size = data.draw(st.lists(st.integers(0, 3), min_size=n_rows, max_size=n_rows))  # ties
    on = data.draw(st.dictionaries(st.integers(0, 3), st.integers(0, 2)))
    rows = cast(_Rows, SimpleNamespace(size=np.array(size, dtype=np.int64)))
    keys = sorted((on[g], size[r], r, c) for (r, c), g in np.ndenumerate(final) if int(g) in on)
    items: dict[int, list[int]] = {}
    sizes: dict[int, list[int]] = {}
    for k, s, r, c in keys:
        items.setdefault(k, []).append(r * 3 + c)
        sizes.setdefault(k, []).append(s)
    assert _movable(plan, rows, final, on) == (items, sizes)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_count_within_as_replica_by_replica(data: st.DataObject) -> None:
    """_count_within against the loop it replaced: a replica moved on, or back, counts once."""
    plan = DiskPlan(list(_PATHS), [], 0.05, 0.85, weighted=False, goal_utilization=0.0)
    n_rows = data.draw(st.integers(1, 6))
    final = _finals(data, n_rows)
    sizes = data.draw(st.lists(st.integers(0, 2**70), min_size=n_rows, max_size=n_rows))  # exact sums
    origin = _origins(data, final)
    gone = [r for (r, c), src in origin.items() if _DISK_OF[int(final[r, c])] != src]
    _count_within(plan, sizes, final, origin, _DISK_OF)
    assert (plan.moves_within, plan.bytes_within) == (len(gone), sum(sizes[r] for r in gone))


def test_row_texts_by_hand() -> None:
    """Topic a: partitions 0 and 1 of two replicas; topic b: one partition of two replicas, one of one
    (_PAD after it): not regular, so RowTexts leaves it to the per-partition dict. Row 0 changes (every
    dir written, -1 unknown: "any"), row 1 has its second replica moved within its broker, row 2
    nothing, row 3 changes."""
    from reassign_cli.planning.balanced.disk_texts import row_texts

    final = np.array([[0, -1], [2, 3], [1, 2], [3, _PAD]], dtype=np.int64)
    texts = row_texts(
        _PATHS,
        (["a", "b"], np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])),
        final,
        np.array([0, 3], dtype=np.int64),
        (np.array([1]), np.array([1])),
    )
    assert texts.texts == ['"/a","any"', '"any","/d\\"é"', '"any","any"', '"/d\\"é"']
    assert texts.at == {"a": (0, 2, 2)}
    a = _regular([[1, 1], [2, 2]])
    assert texts.topic("a", a) == (
        '{"topic":"a","partition":0,"replicas":[1,1],"log_dirs":["/a","any"]},'
        '{"topic":"a","partition":1,"replicas":[2,2],"log_dirs":["any","/d\\"é"]}'
    )
    assert texts.topic("a", {0: [1, 1], 1: [2, 2]}) == texts.topic("a", a)
    assert texts.topic("a", {1: [2, 2], 0: [1, 1]}) is None  # not in partition order
    assert texts.topic("b", {0: [1, 2], 1: [2]}) is None
