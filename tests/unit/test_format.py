"""Kafka's compact reassignment JSON (KAFKA-SPEC §3.5) and the sliced entries."""

from __future__ import annotations

import itertools

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import format_partition_entries, format_reassignment_json


def reference(assignment, log_dirs=True) -> str:
    """The format built the obvious way, through a JSON serializer."""
    entries = []
    for t in sorted(assignment):
        for p in sorted(assignment[t]):
            reps = [int(b) for b in assignment[t][p]]
            e = {"topic": t, "partition": int(p), "replicas": reps}
            if log_dirs:
                e["log_dirs"] = ["any"] * len(reps)
            entries.append(e)
    return orjson.dumps({"version": 1, "partitions": entries}).decode()


def test_kafka_example_entry():
    assert format_reassignment_json({"foo": {0: [1, 2]}}) == (
        '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}'
    )
    assert format_reassignment_json({"foo": {0: [1, 2]}}, log_dirs=False) == (
        '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}'
    )


def test_sorted_by_topic_then_numeric_partition():
    assignment = {
        "b": {10: [1], 2: [2], 0: [3]},
        "a": {1: [4], 0: [5]},
    }
    doc = orjson.loads(format_reassignment_json(assignment))
    assert [(e["topic"], e["partition"]) for e in doc["partitions"]] == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
        ("b", 2),
        ("b", 10),
    ]
    assert list(doc["partitions"][0]) == ["topic", "partition", "replicas", "log_dirs"]
    assert format_reassignment_json(assignment) == reference(assignment)


def test_empty():
    assert format_reassignment_json({}) == '{"version":1,"partitions":[]}'
    assert format_reassignment_json({"t": {}}) == '{"version":1,"partitions":[]}'
    assert format_partition_entries({}) == ""


def test_escaped_topic_and_mixed_rf_and_numpy_ints():
    assignment = {
        'we"ird\\top\x00ic': {0: [1, 2, 3], 1: [2]},
        "np": {0: list(np.array([7, 8], dtype=np.int64)), 1: np.array([9], dtype=np.int32)},
    }
    assert format_reassignment_json(assignment) == reference(assignment)
    assert format_reassignment_json(assignment, log_dirs=False) == reference(assignment, log_dirs=False)


assignments = st.dictionaries(
    st.text(max_size=8),
    st.dictionaries(
        st.integers(0, 30),
        st.lists(st.integers(-1, 2**31 - 1), min_size=0, max_size=4),
        max_size=12,
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(assignments, st.booleans())
def test_equals_reference(assignment, log_dirs):
    assert format_reassignment_json(assignment, log_dirs=log_dirs) == reference(assignment, log_dirs)


@settings(max_examples=200, deadline=None)
@given(assignments, st.lists(st.integers(0, 12), max_size=5))
def test_slices_concatenate_to_the_document(assignment, cuts):
    topics = sorted(assignment)
    bounds = [0, *sorted(min(c, len(topics)) for c in cuts), len(topics)]
    fragments = [
        format_partition_entries({t: assignment[t] for t in topics[lo:hi]})
        for lo, hi in itertools.pairwise(bounds)
    ]
    joined = '{"version":1,"partitions":[' + ",".join(f for f in fragments if f) + "]}"
    assert joined == format_reassignment_json(assignment)


def test_contiguous_partitions_in_any_insertion_order():
    ordered = {"t": {p: [p, p + 1, p + 2] for p in range(12)}}
    scrambled = {"t": {p: [p, p + 1, p + 2] for p in [5, 0, 11, 3, 1, 2, 4, 6, 7, 8, 9, 10]}}
    assert format_reassignment_json(scrambled) == format_reassignment_json(ordered) == reference(ordered)
