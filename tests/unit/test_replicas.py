"""The compact replica assignment (reassign_cli/core/replicas.py): TopicReplicas behaves as the plain dict of
lists it stands for, and the readers with fast paths over it (snapshot loading, formatting, topic specs,
plan statistics) give what they give for that dict."""

from __future__ import annotations

import pickle

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core import snapshot
from reassign_cli.core.model import NO_ENTRIES, ClusterState, Topic, format_partition_entries
from reassign_cli.core.replicas import ReplicaStore, TopicReplicas, int_array, stack
from reassign_cli.planning.plan import plan_stats, topic_specs


def compact(assignment: dict[str, dict[int, list[int]]]) -> dict[str, TopicReplicas]:
    """The same assignment as views over one store, topics one after the other in the given order."""
    store = ReplicaStore()
    views: dict[str, TopicReplicas] = {}
    for name, parts in assignment.items():
        ids = [b for reps in parts.values() for b in reps]
        start = store.append(int_array(ids))
        views[name] = TopicReplicas.from_rows(store, start, list(parts), [len(r) for r in parts.values()])
    store.finish()
    return views


# ---------------------------------------------------------------------------------------------
# TopicReplicas, worked by hand
# ---------------------------------------------------------------------------------------------


def hand_store() -> ReplicaStore:
    #                          t: p0      p1     |  u: p7        p3
    return ReplicaStore.of(np.array([1, 2, 3, 4, 5, 6, 30, 31, 32, 40, 41], dtype=np.int32))


def test_regular_topic_reads_its_rows() -> None:
    t = TopicReplicas(hand_store(), 0, 2, 3)
    assert t[0] == [1, 2, 3] and t[1] == [4, 5, 6]
    assert type(t[0][0]) is int  # Python ints, as from a dict of lists
    assert len(t) == 2 and list(t) == [0, 1]
    assert list(t.values()) == [[1, 2, 3], [4, 5, 6]]
    assert list(t.items()) == [(0, [1, 2, 3]), (1, [4, 5, 6])]
    assert t == {0: [1, 2, 3], 1: [4, 5, 6]}
    assert {0: [1, 2, 3], 1: [4, 5, 6]} == t  # noqa: SIM300 - the dict's __eq__ defers to the Mapping's
    assert t != {0: [1, 2, 3], 1: [4, 6, 5]}
    assert t.rf == 3 and t.rows() == [[1, 2, 3], [4, 5, 6]]
    block = t.regular_block()
    assert block is not None and block.tolist() == [[1, 2, 3], [4, 5, 6]]


def test_membership_and_missing_keys() -> None:
    t = TopicReplicas(hand_store(), 3, 1, 3)  # only partition 0: [4, 5, 6]
    assert 0 in t and np.int64(0) in t and True not in TopicReplicas(hand_store(), 0, 0, 3)
    assert 1 not in t and -1 not in t and "0" not in t and None not in t
    assert t.get(0) == [4, 5, 6] and t.get(1) is None and t.get(-1, "x") == "x"
    with pytest.raises(KeyError):
        t[1]


def test_irregular_topic_keeps_its_order_and_spans() -> None:
    u = TopicReplicas.from_rows(hand_store(), 6, [7, 3], [3, 2])
    assert list(u) == [7, 3] and len(u) == 2
    assert u[7] == [30, 31, 32] and u[3] == [40, 41]
    assert 0 not in u and 5 not in u
    assert list(u.values()) == [[30, 31, 32], [40, 41]]
    assert list(u.items()) == [(7, [30, 31, 32]), (3, [40, 41])]
    assert u.rf == -1 and u.regular_block() is None


def test_from_rows_is_regular_only_for_ids_0_to_n_minus_1_in_order_and_one_count() -> None:
    store = hand_store()
    assert TopicReplicas.from_rows(store, 0, [0, 1], [3, 3]).rf == 3
    assert TopicReplicas.from_rows(store, 0, [], []).rf == 0
    assert TopicReplicas.from_rows(store, 0, [1, 0], [3, 3]).rf == -1  # out of order
    assert TopicReplicas.from_rows(store, 0, [0, 2], [3, 3]).rf == -1  # a gap
    mixed = TopicReplicas.from_rows(store, 0, [0, 1], [4, 2])  # mixed counts (mid-reassignment)
    assert mixed.rf == -1 and mixed == {0: [1, 2, 3, 4], 1: [5, 6]}
    with pytest.raises(ValueError, match="repeated"):
        TopicReplicas.from_rows(store, 0, [0, 0], [3, 3])


def test_rows_with_zero_replicas() -> None:
    t = TopicReplicas(hand_store(), 2, 3, 0)
    assert t == {0: [], 1: [], 2: []} and t.rows() == [[], [], []]
    assert stack([t]) is not None and stack([t]).shape == (3, 0)


def test_int_array_picks_the_narrowest_type() -> None:
    assert int_array([1, -1, 2**31 - 1]).dtype == np.int32
    wide = int_array([1, 2**31])
    assert wide.dtype == np.int64 and wide.tolist() == [1, 2**31]
    with pytest.raises(OverflowError):
        int_array([2**63])


def test_store_appends_then_finishes_once() -> None:
    store = ReplicaStore()
    assert store.append(int_array([1, 2])) == 0
    assert store.append(int_array([2**40])) == 2  # one int64 chunk widens the whole store
    assert store.append(int_array([])) == 3
    store.finish()
    assert store.flat is not None and store.flat.tolist() == [1, 2, 2**40] and store.flat.dtype == np.int64
    with pytest.raises(RuntimeError):
        store.append(int_array([3]))
    empty = ReplicaStore()
    empty.finish()
    assert empty.flat is not None and len(empty.flat) == 0


def test_stack_joins_neighbours_and_refuses_what_is_not_one_regular_shape() -> None:
    store = hand_store()
    a, b = TopicReplicas(store, 0, 1, 3), TopicReplicas(store, 3, 1, 3)
    assert stack([a, b]).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert stack([b, a]).tolist() == [[4, 5, 6], [1, 2, 3]]
    assert stack([]) is None
    assert stack([a, TopicReplicas(store, 6, 1, 2)]) is None  # another replica count
    assert stack([a, {0: [1, 2, 3]}]) is None  # a plain dict
    assert stack([a, TopicReplicas.from_rows(store, 6, [7, 3], [3, 2])]) is None
    assert stack([a, TopicReplicas(hand_store(), 3, 1, 3)]) is None  # another store


def test_pickles_and_prints_as_a_dict() -> None:
    t = TopicReplicas(hand_store(), 0, 2, 3)
    back = pickle.loads(pickle.dumps(t))
    assert type(back) is dict and back == {0: [1, 2, 3], 1: [4, 5, 6]}
    assert repr(t) == "TopicReplicas({0: [1, 2, 3], 1: [4, 5, 6]})"


def test_shared_empty_mapping_cannot_be_filled() -> None:
    assert NO_ENTRIES == {} and not NO_ENTRIES and NO_ENTRIES.get(0) is None
    for fill in (
        lambda m: m.__setitem__(0, [1]),
        lambda m: m.update({0: [1]}),
        lambda m: m.setdefault(0, [1]),
        lambda m: m.pop(0),
        lambda m: m.popitem(),
        lambda m: m.clear(),
        lambda m: m.__delitem__(0),
        lambda m: m.__ior__({0: [1]}),
    ):
        with pytest.raises(TypeError, match="shared and read-only"):
            fill(NO_ENTRIES)
    assert NO_ENTRIES == {}
    assert type(pickle.loads(pickle.dumps(NO_ENTRIES))) is dict


# ---------------------------------------------------------------------------------------------
# Equivalence with the dict of lists, for any assignment
# ---------------------------------------------------------------------------------------------

replica_lists = st.lists(st.integers(-1, 2**40), max_size=4)
partition_maps = st.dictionaries(st.integers(0, 30), replica_lists, max_size=12)
regular_maps = st.tuples(st.integers(0, 8), st.integers(0, 4)).flatmap(
    lambda nr: st.lists(
        st.lists(st.integers(0, 2**31 - 1), min_size=nr[1], max_size=nr[1]), min_size=nr[0], max_size=nr[0]
    ).map(lambda rows: dict(enumerate(rows)))
)
assignments = st.dictionaries(st.text(max_size=6), st.one_of(partition_maps, regular_maps), max_size=8)


@settings(max_examples=300, deadline=None)
@given(partition_maps, st.lists(st.integers(-3, 33), max_size=6))
def test_view_equals_the_dict(parts: dict[int, list[int]], probes: list[int]) -> None:
    view = compact({"t": parts})["t"]
    assert view == parts and dict(view) == parts
    assert list(view) == list(parts) and len(view) == len(parts)
    assert list(view.values()) == list(parts.values()) and view.rows() == list(parts.values())
    assert list(view.items()) == list(parts.items())
    assert list(view.keys()) == list(parts.keys())
    for p in probes:
        assert (p in view) == (p in parts)
        assert view.get(p) == parts.get(p)
    block = view.regular_block()
    if block is not None:
        assert block.tolist() == list(parts.values())


@settings(max_examples=200, deadline=None)
@given(assignments, st.booleans())
def test_formatting_views_equals_formatting_dicts(assignment: dict, log_dirs: bool) -> None:
    views = compact(assignment)
    assert format_partition_entries(views, log_dirs=log_dirs) == format_partition_entries(
        assignment, log_dirs=log_dirs
    )


@settings(max_examples=200, deadline=None)
@given(assignments, st.sampled_from([1, 100, snapshot.CHUNK_BYTES]))
def test_snapshot_loads_to_views_equal_to_the_document(assignment: dict, chunk_bytes: int) -> None:
    topics = [
        {"topic": t, "partitions": [{"partition": p, "replicas": r} for p, r in parts.items()]}
        for t, parts in assignment.items()
    ]
    doc = orjson.dumps({"version": 1, "brokers": [], "topics": topics})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(snapshot, "CHUNK_BYTES", chunk_bytes)  # 1: one topic per chunk
        assert snapshot._loads_chunked(doc, False, False) is not None  # not the whole-document fallback
        state = snapshot.loads(doc, partition_state=False)
    assert set(state.topics) == set(assignment)
    for name, parts in assignment.items():
        topic = state.topics[name]
        assert isinstance(topic.replicas, TopicReplicas)
        assert topic.replicas == parts and list(topic.replicas) == list(parts)
        assert topic.adding is NO_ENTRIES and topic.removing is NO_ENTRIES
        assert topic.isr is NO_ENTRIES and topic.leader is NO_ENTRIES


def test_snapshot_gives_own_dicts_only_to_topics_with_entries() -> None:
    doc = (
        b'{"version":1,"brokers":[],"topics":['
        b'{"topic":"a","partitions":[{"partition":0,"replicas":[1,2],"isr":[1],"leader":1}]},'
        b'{"topic":"b","partitions":[{"partition":0,"replicas":[3,2,1],"adding_replicas":[3],'
        b'"removing_replicas":[1]},{"partition":1,"replicas":[2,1]}]},'
        b'{"topic":"c","partitions":[{"partition":0,"replicas":[2]}]}]}'
    )
    full, planning = snapshot.loads(doc), snapshot.loads(doc, partition_state=False)
    a, b, c = (full.topics[t] for t in "abc")
    assert (a.isr, a.leader, a.adding, a.removing) == ({0: [1]}, {0: 1}, {}, {})
    assert a.adding is NO_ENTRIES and a.removing is NO_ENTRIES
    assert (b.adding, b.removing, b.isr, b.leader) == ({0: [3]}, {0: [1]}, {}, {})
    assert b.replicas == {0: [3, 2, 1], 1: [2, 1]} and b.target(0) == [3, 2] and b.origin(0) == [2, 1]
    assert all(m is NO_ENTRIES for m in (c.adding, c.removing, c.isr, c.leader))
    pa, pb = planning.topics["a"], planning.topics["b"]
    assert pa.isr is NO_ENTRIES and pa.leader is NO_ENTRIES
    assert (pb.adding, pb.removing) == ({0: [3]}, {0: [1]})


# Current assignments that can be planned: every topic has partitions, one RF each.
plannable = st.dictionaries(
    st.text(min_size=1, max_size=6),
    st.tuples(st.integers(1, 6), st.integers(1, 3), st.booleans()).flatmap(
        lambda nrs: st.lists(
            st.lists(st.integers(0, 9), min_size=nrs[1], max_size=nrs[1]), min_size=nrs[0], max_size=nrs[0]
        ).map(
            lambda rows, shuffled=nrs[2]: (
                dict(reversed(list(enumerate(rows)))) if shuffled else dict(enumerate(rows))
            )
        )
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(plannable, st.data())
def test_specs_and_stats_over_views_equal_those_over_dicts(current: dict, data: st.DataObject) -> None:
    views = compact(current)
    as_views = ClusterState([], {t: Topic(t, v) for t, v in views.items()})
    as_dicts = ClusterState([], {t: Topic(t, parts) for t, parts in current.items()})
    assert topic_specs(as_views, list(current)) == topic_specs(as_dicts, list(current))
    # a proposal for some of the topics: partitions 0..n-1, any replica count
    chosen = data.draw(st.lists(st.sampled_from(sorted(current)), unique=True))
    rf = data.draw(st.integers(1, 3))
    proposed = {
        t: {
            p: data.draw(st.lists(st.integers(0, 9), min_size=rf, max_size=rf))
            for p in range(len(current[t]))
        }
        for t in chosen
    }
    assert plan_stats(views, proposed) == plan_stats(current, proposed)


def test_formatting_views_worked_by_hand() -> None:
    views = compact({"b%": {0: [3, 1], 1: [1, 2]}, "a": {1: [5], 0: [4]}})
    assert format_partition_entries(views, log_dirs=False) == (
        '{"topic":"a","partition":0,"replicas":[4]},{"topic":"a","partition":1,"replicas":[5]},'
        '{"topic":"b%","partition":0,"replicas":[3,1]},{"topic":"b%","partition":1,"replicas":[1,2]}'
    )
    assert format_partition_entries({"b%": views["b%"]}) == (
        '{"topic":"b%","partition":0,"replicas":[3,1],"log_dirs":["any","any"]},'
        '{"topic":"b%","partition":1,"replicas":[1,2],"log_dirs":["any","any"]}'
    )
