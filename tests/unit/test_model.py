"""Kafka's file formats: parsing refusals and the exact output bytes."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.core.model import (
    Topic,
    duplicates,
    format_plan_entries,
    format_reassignment_json,
    parse_reassignment,
    parse_topics_to_move,
)
from reassign_cli.errors import ExitCode, InvalidInputError


def test_topics_file_kafka_format() -> None:
    assert parse_topics_to_move('{"topics":[{"topic":"foo"},{"topic":"foo1"}],"version":1}') == [
        "foo",
        "foo1",
    ]
    assert parse_topics_to_move('{"topics":[{"topic":"a"}]}') == ["a"]  # version defaults to 1
    assert parse_topics_to_move("{}") == []  # missing topics: empty list, as Kafka


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ('{"topics":[{"topic":"a"}],"version":2}', "Not supported version field value 2"),
        ('{"topics":[{"topic":"a"},{"topic":"b"},{"topic":"a"}]}', "contains duplicate entries: a"),
        ('{"topics":[{"name":"a"}]}', "No such field exists: `topic`"),
        ('{"topics": [', "not valid JSON"),
    ],
)
def test_topics_file_refusals(doc: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as info:
        parse_topics_to_move(doc)
    assert info.value.exit_code == ExitCode.INVALID


def test_invalid_json_says_where() -> None:
    with pytest.raises(InvalidInputError, match=r"line 2 column"):
        parse_reassignment('{"version":1,\n "partitions": [}')


def test_reassignment_file_parses_kafka_format() -> None:
    f = parse_reassignment(
        '{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2,3],'
        '"log_dirs":["any","any","/data/d1"]},{"topic":"foo","partition":0,"replicas":[2]}]}'
    )
    assert [(e.topic, e.partition, e.replicas, e.log_dirs) for e in f.entries] == [
        ("foo", 1, [1, 2, 3], ["any", "any", "/data/d1"]),
        ("foo", 0, [2], None),
    ]
    assert f.has_log_dir_moves()
    assert f.targets() == {("foo", 1): [1, 2, 3], ("foo", 0): [2]}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ('{"version":3,"partitions":[]}', "Not supported version field value 3"),
        (
            '{"partitions":[{"topic":"foo","replicas":[1]}]}',
            "partitions\\[0\\]: No such field exists: `partition`",
        ),
        ('{"partitions":[{"topic":"foo","partition":0}]}', "No such field exists: `replicas`"),
        ('{"partitions":[{"topic":"foo","partition":"x","replicas":[1]}]}', "must be an integer"),
        ('{"partitions":[{"topic":"foo","partition":0,"replicas":[1,"2"]}]}', "foo-0.*list of integers"),
        ('{"partitions":[{"topic":"foo","partition":0,"replicas":[true]}]}', "list of integers"),
        (
            '{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
            r"Size of replicas list \[1, 2\] is different from size of log dirs list \[any\] for partition foo-0",
        ),
        ("[1,2]", "expected a JSON object"),
    ],
)
def test_reassignment_file_refusals(doc: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        parse_reassignment(doc)


def test_duplicates_are_kept_for_validation() -> None:
    f = parse_reassignment(
        '{"partitions":[{"topic":"a","partition":0,"replicas":[1,1]},'
        '{"topic":"a","partition":0,"replicas":[2]}]}'
    )
    assert len(f.entries) == 2 and f.entries[0].replicas == [1, 1]


def test_format_matches_kafka_bytes() -> None:
    # Kafka 3.9 --generate output: compact, sorted by (topic, partition), log_dirs "any".
    got = format_reassignment_json({"foo": {1: [2, 3], 0: [1, 2]}, "bar": {0: [3]}})
    assert got == (
        '{"version":1,"partitions":[{"topic":"bar","partition":0,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"foo","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}'
    )
    # The trigger format never has log_dirs (Kafka's strict decoder rejects unknown fields).
    assert format_reassignment_json({"foo": {0: [1]}}, log_dirs=False) == (
        '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1]}]}'
    )
    assert format_reassignment_json({}) == '{"version":1,"partitions":[]}'


def test_partition_sort_is_numeric_not_lexicographic() -> None:
    doc = orjson.loads(format_reassignment_json({"t": {p: [1] for p in (10, 2, 1)}}))
    assert [e["partition"] for e in doc["partitions"]] == [1, 2, 10]


def test_plan_entries_keep_log_dirs_only_when_asked() -> None:
    f = parse_reassignment('{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["/d"]}]}')
    assert "log_dirs" not in format_plan_entries(f.entries)
    assert '"log_dirs":["/d"]' in format_plan_entries(f.entries, log_dirs=True)


names = st.text(alphabet="abcXYZ09._-", min_size=1, max_size=12)
assignments = st.dictionaries(
    names,
    st.dictionaries(st.integers(0, 200), st.lists(st.integers(0, 5000), min_size=1, max_size=5), min_size=1),
    max_size=6,
)


@given(assignments)
def test_format_round_trips_through_the_parser(a: dict[str, dict[int, list[int]]]) -> None:
    text = format_reassignment_json(a)
    parsed = parse_reassignment(text)
    assert {(e.topic, e.partition): e.replicas for e in parsed.entries} == {
        (t, p): r for t, parts in a.items() for p, r in parts.items()
    }
    keys = [(e.topic, e.partition) for e in parsed.entries]
    assert keys == sorted(keys)
    assert orjson.loads(text) == orjson.loads(orjson.dumps(orjson.loads(text)))  # valid, compact JSON


def test_topic_target_and_origin_follow_kafka_reassign_to() -> None:
    # KAFKA-SPEC §4.1: ORS [1,2,3] -> TRS [3,4,2] gives RS [3,4,2,1], AR [4], RR [1].
    t = Topic("t", {0: [3, 4, 2, 1]}, adding={0: [4]}, removing={0: [1]})
    assert t.target(0) == [3, 4, 2]
    assert t.origin(0) == [3, 2, 1]
    assert t.is_reassigning(0)
    assert not Topic("t", {0: [1, 2]}).is_reassigning(0)


def test_duplicates_helper() -> None:
    assert duplicates([1, 2, 1, 3, 2, 1]) == [1, 2]
    assert duplicates([]) == []
