"""reassign_cli.planning.sizes: partition sizes from replica sizes, and what a plan copies. Every expected value is
worked out by hand in the comments."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.planning import sizes
from reassign_cli.planning.sizes import CopyBytes, ReplicaKey, copy_bytes, largest, record


def test_largest_replica_stands_for_the_partition() -> None:
    # t-0: replicas of 100 and 120 bytes (a follower behind by 20) -> 120; t-1: one replica of 5.
    found = {("t", 0, 1): 100, ("t", 0, 2): 120, ("t", 1, 2): 5, ("u", 0, 3): 0}
    assert largest(found) == {("t", 0): 120, ("t", 1): 5, ("u", 0): 0}


def test_record_asks_live_replicas_only_and_leaves_unknown_partitions_out() -> None:
    # Brokers 1 and 2 are registered; 3 is dead. t-0 on 1,2; t-1 on 3,2; t-2 on 3 only.
    t = Topic("t", {0: [1, 2], 1: [3, 2], 2: [3]})
    state = ClusterState([Broker(1), Broker(2)], {"t": t})
    asked: list[Sequence[ReplicaKey]] = []

    def ask(keys: Sequence[ReplicaKey]) -> tuple[dict[ReplicaKey, int], list[int]]:
        asked.append(list(keys))
        # broker 1 reports t-0 at 100, broker 2 reports t-0 at 90 and t-1 at 50
        return {("t", 0, 1): 100, ("t", 0, 2): 90, ("t", 1, 2): 50}, []

    report = record(state, ask)
    assert asked == [[("t", 0, 1), ("t", 0, 2), ("t", 1, 2)]]  # nothing asked of dead broker 3
    assert t.sizes == {0: 100, 1: 50}  # t-2 has no live replica: unknown, not 0
    assert (report.known, report.unknown, report.silent_brokers) == (2, 1, [])


def test_record_reports_silent_brokers_sorted() -> None:
    t = Topic("t", {0: [1, 2]})
    state = ClusterState([Broker(1), Broker(2)], {"t": t})
    report = record(state, lambda keys: ({}, [2, 1]))
    assert t.sizes == {}
    assert (report.known, report.unknown, report.silent_brokers) == (0, 1, [1, 2])


CURRENT = {"t": {0: [1, 2], 1: [2, 1], 2: [1, 2]}, "u": {0: [1, 2]}}
SIZES = {"t": {0: 100, 1: 200}, "u": {0: 7}}  # t-2's size is unknown


def test_copy_bytes_counts_each_added_broker_once_per_partition() -> None:
    proposed = {
        "t": {0: [1, 3], 1: [3, 2], 2: [2, 1]},  # t-0 adds 3 (100), t-1 adds 3 (200), t-2 reorders only
        "u": {0: [3, 1]},  # adds 3 (7)
    }
    got = copy_bytes(CURRENT, proposed, SIZES)
    assert (got.copies, got.copies_unknown, got.bytes_copied) == (3, 0, 307)
    assert got.inbound == {3: 307}


@pytest.mark.parametrize(
    "t0",
    [
        [1, 2, 3, 4],  # an RF increase (lists of different lengths: the partition-by-partition path)
        [3, 4],  # both replaced (every list of length 2: the numpy path)
    ],
)
def test_copy_bytes_unknown_sizes_and_spread_receivers(t0: list[int]) -> None:
    proposed = {
        "t": {0: t0, 1: [2, 1], 2: [3, 4]},  # t-0: 3 and 4 get 100 each; t-2 (unknown): 2 copies
        "u": {0: [4, 1]},  # 4 gets 7
    }
    got = copy_bytes(CURRENT, proposed, SIZES)
    assert (got.copies, got.copies_unknown, got.bytes_copied) == (5, 2, 207)
    assert got.inbound == {3: 100, 4: 107}
    assert got.busiest() == (4, 107)
    assert got.seconds_at(10) == pytest.approx(10.7)  # the busiest receiver's 107 bytes at 10 B/s


def test_copy_bytes_of_a_topic_without_sizes_counts_copies_only() -> None:
    got = copy_bytes({"v": {0: [1]}}, {"v": {0: [2, 3]}}, {})
    assert (got.copies, got.copies_unknown, got.bytes_copied, dict(got.inbound)) == (2, 2, 0, {})
    assert got.busiest() == (None, 0)


def test_chunks_add_up_and_ties_go_to_the_lowest_id() -> None:
    a = CopyBytes(copies=1, bytes_copied=10, inbound=sizes.Counter({5: 10}))
    b = CopyBytes(copies=2, copies_unknown=1, bytes_copied=10, inbound=sizes.Counter({4: 10}))
    a.add(b)
    assert (a.copies, a.copies_unknown, a.bytes_copied) == (3, 1, 20)
    assert a.busiest() == (4, 10)  # 4 and 5 receive 10 each
    assert a.as_dict(4) == {
        "bytes_copied": 20,
        "copies_size_unknown": 1,
        "bytes_in_max": 10,
        "bytes_in_max_broker": 4,
        "throttle": 4,
        "seconds_at_throttle": 2.5,  # 10 bytes at 4 B/s
    }
    assert "seconds_at_throttle" not in a.as_dict(None)


def test_any_sizes_looks_at_the_selected_topics_only() -> None:
    state = ClusterState([Broker(1)], {"a": Topic("a", {0: [1]}), "b": Topic("b", {0: [1]}, sizes={0: 3})})
    assert sizes.any_sizes(state, ["b"]) and not sizes.any_sizes(state, ["a"])


@st.composite
def regular_plans(draw: st.DrawFn) -> tuple[dict[str, dict[int, list[int]]], dict[str, dict[int, list[int]]]]:
    """Current and proposed assignments of one RF each (the numpy path), over brokers 1..6."""
    rf_old, rf_new = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    n = draw(st.integers(1, 6))
    rows = st.lists(st.integers(1, 6), unique=True, min_size=rf_old, max_size=rf_old)
    new_rows = st.lists(st.integers(1, 6), unique=True, min_size=rf_new, max_size=rf_new)
    current = {"t": {p: draw(rows) for p in range(n)}}
    return current, {"t": {p: draw(new_rows) for p in range(n)}}


@settings(max_examples=200, deadline=None)
@given(regular_plans(), st.dictionaries(st.integers(0, 5), st.integers(0, 1 << 40)))
def test_numpy_path_counts_as_the_definition(
    plans: tuple[dict[str, dict[int, list[int]]], dict[str, dict[int, list[int]]]], known: dict[int, int]
) -> None:
    current, proposed = plans
    got = copy_bytes(current, proposed, {"t": known})
    # the definition, written out: each broker added to a partition receives its size
    inbound: dict[int, int] = {}
    copies = unknown = 0
    for p, new in proposed["t"].items():
        for b in set(new) - set(current["t"][p]):
            copies += 1
            if p in known:
                inbound[b] = inbound.get(b, 0) + known[p]
            else:
                unknown += 1
    assert (got.copies, got.copies_unknown, got.bytes_copied) == (copies, unknown, sum(inbound.values()))
    assert {b: v for b, v in got.inbound.items() if v} == {b: v for b, v in inbound.items() if v}


def test_large_broker_ids_are_summed_exactly() -> None:
    big = 1 << 40  # beyond an indexable table: the sorted path; sizes past float64's exact integers
    got = copy_bytes({"t": {0: [5], 1: [5]}}, {"t": {0: [big], 1: [7]}}, {"t": {0: (1 << 53) + 1, 1: 20}})
    assert got.inbound == {big: (1 << 53) + 1, 7: 20}
    assert got.bytes_copied == (1 << 53) + 21
