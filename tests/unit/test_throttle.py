"""Throttles: Kafka's move map and replica lists, rate keys, config merges and the prior-values record."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import Broker, ClusterState, PlanEntry, Topic, TopicPartition
from reassign_cli.core.throttle import (
    BROKER_KEYS,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
    TOPIC_KEYS,
    Move,
    apply_config,
    broker_rate_config,
    dump_record,
    empty_record,
    load_record,
    log_dir_move_brokers,
    move_map,
    parse_throttled_replicas,
    record_entry,
    record_forget,
    record_is_empty,
    record_priors,
    restore_config,
    throttled_brokers,
    topic_throttles,
)
from reassign_cli.errors import ExitCode, InvalidInputError, OperationalError, UsageError


def state_of(topics: dict[str, Topic], brokers: tuple[int, ...] = (1, 2, 3, 4, 5)) -> ClusterState:
    return ClusterState([Broker(b) for b in brokers], topics)


def test_key_names_are_kafkas() -> None:
    assert BROKER_KEYS == (
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second",
    )
    assert TOPIC_KEYS == ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def test_golden_vector_kafka_3_9() -> None:
    # ReassignPartitionsUnitTest.testMoveMap: current bar-0 [2,3,4], plan bar-0 [1,2,3].
    state = state_of({"bar": Topic("bar", {0: [2, 3, 4]})})
    moves = move_map({("bar", 0): [1, 2, 3]}, state)
    assert moves == {("bar", 0): Move(sources=[2, 3, 4], destinations=[1])}
    assert topic_throttles(moves) == {"bar": {LEADER_REPLICAS: "0:2,0:3,0:4", FOLLOWER_REPLICAS: "0:1"}}
    assert throttled_brokers(moves) == [1, 2, 3, 4]


def test_lists_sort_as_strings_like_a_java_treeset() -> None:
    state = state_of({"t": Topic("t", {2: [1], 10: [1]})})
    moves = move_map({("t", 2): [2], ("t", 10): [2]}, state)
    assert topic_throttles(moves) == {"t": {LEADER_REPLICAS: "10:1,2:1", FOLLOWER_REPLICAS: "10:2,2:2"}}


def test_leader_list_names_every_planned_partition_even_without_movers() -> None:
    state = state_of({"t": Topic("t", {0: [1, 2], 1: [2, 3]}), "u": Topic("u", {0: [1, 2]})})
    # t-0 is a pure reorder, t-1 moves 3 -> 4; u-0 only reorders: its follower list is "" but written.
    moves = move_map({("t", 0): [2, 1], ("t", 1): [2, 4], ("u", 0): [2, 1]}, state)
    assert topic_throttles(moves) == {
        "t": {LEADER_REPLICAS: "0:1,0:2,1:2,1:3", FOLLOWER_REPLICAS: "1:4"},
        "u": {LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: ""},
    }
    assert throttled_brokers(moves) == [1, 2, 3, 4]


def test_sources_of_a_reassigning_partition_are_its_origin_kafka_10779() -> None:
    # KAFKA-SPEC §4.1: ORS [1,2,3] -> TRS [3,4,2] gives RS [3,4,2,1], AR [4], RR [1].
    topic = Topic("foo", {0: [3, 4, 2, 1]}, adding={0: [4]}, removing={0: [1]})
    assert sorted(topic.origin(0)) == [1, 2, 3]
    assert topic.target(0) == [3, 4, 2]
    moves = move_map({("foo", 0): [5, 2, 3]}, state_of({"foo": topic}))
    # The half-created replica 4 is not a source; the new replica 5 is the only destination.
    assert sorted(moves[("foo", 0)].sources) == [1, 2, 3]
    assert moves[("foo", 0)].destinations == [5]
    assert topic_throttles(moves)["foo"] == {LEADER_REPLICAS: "0:1,0:2,0:3", FOLLOWER_REPLICAS: "0:5"}


def test_destinations_keep_target_order() -> None:
    moves = move_map({("t", 0): [9, 1, 7, 8]}, state_of({"t": Topic("t", {0: [1]})}))
    assert moves[("t", 0)].destinations == [9, 7, 8]


def test_move_map_refuses_missing_partition() -> None:
    state = state_of({"t": Topic("t", {0: [1]})})
    for tp in (("t", 1), ("nope", 0)):
        with pytest.raises(InvalidInputError, match=f"{tp[0]}-{tp[1]}"):
            move_map({tp: [1]}, state)


def test_broker_rate_config() -> None:
    assert broker_rate_config(500, None) == {LEADER_RATE: "500", FOLLOWER_RATE: "500"}
    assert broker_rate_config(None, 7) == {LOG_DIR_RATE: "7"}
    assert broker_rate_config(0, 2**63 - 1) == {
        LEADER_RATE: "0",
        FOLLOWER_RATE: "0",
        LOG_DIR_RATE: "9223372036854775807",
    }
    assert broker_rate_config(None, None) == {}


@pytest.mark.parametrize(("rate", "log_dir_rate"), [(-1, None), (None, -5), (2**63, None), (True, None)])
def test_broker_rate_config_refuses_out_of_range(rate: int | None, log_dir_rate: int | None) -> None:
    with pytest.raises(UsageError) as info:
        broker_rate_config(rate, log_dir_rate)
    assert info.value.exit_code == ExitCode.USAGE
    assert "\n" not in str(info.value)


def test_log_dir_move_brokers() -> None:
    entries = [
        PlanEntry("t", 0, [1, 2, 3], ["any", "/d2", "any"]),
        PlanEntry("t", 1, [4, 5], None),
        PlanEntry("u", 0, [3, 6], ["/d1", "any"]),
    ]
    assert log_dir_move_brokers(entries) == [2, 3]


# ----- config merges ----------------------------------------------------------------------------


def test_apply_config_keeps_unrelated_keys() -> None:
    existing = {"retention.ms": "1000", LEADER_REPLICAS: "0:9"}
    new = apply_config(existing, {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: ""})
    assert new == {"retention.ms": "1000", LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: ""}
    assert existing == {"retention.ms": "1000", LEADER_REPLICAS: "0:9"}  # not mutated


def test_restore_config_puts_back_recorded_values_and_removes_the_rest() -> None:
    existing = {"x": "1", LEADER_RATE: "10", FOLLOWER_RATE: "10", LOG_DIR_RATE: "3"}
    priors = {LEADER_RATE: "999", FOLLOWER_RATE: None}
    assert restore_config(existing, BROKER_KEYS, priors) == {"x": "1", LEADER_RATE: "999"}
    # Nothing recorded for this entity: Kafka's behaviour, every key removed.
    assert restore_config(existing, BROKER_KEYS, None) == {"x": "1"}
    # Keys not asked for are never touched.
    assert restore_config(existing, [LOG_DIR_RATE], priors) == {
        "x": "1",
        LEADER_RATE: "10",
        FOLLOWER_RATE: "10",
    }


# ----- the prior-values record ------------------------------------------------------------------


def test_record_keeps_the_first_prior() -> None:
    rec = empty_record()
    operator = {"x": "1", LEADER_RATE: "100"}
    rec1 = record_priors(rec, "brokers", 1, operator, BROKER_KEYS)
    assert rec == empty_record()  # input not mutated
    assert record_entry(rec1, "brokers", 1) == {LEADER_RATE: "100", FOLLOWER_RATE: None, LOG_DIR_RATE: None}
    # Our first execute wrote 500; a second execute sees 500 and must not record it as the prior.
    ours = apply_config(operator, broker_rate_config(500, 7))
    rec2 = record_priors(rec1, "brokers", "1", ours, BROKER_KEYS)
    assert rec2 == rec1
    assert restore_config(ours, BROKER_KEYS, record_entry(rec2, "brokers", 1)) == operator


def test_record_adds_keys_written_later() -> None:
    rec = record_priors(empty_record(), "brokers", 2, {}, (LEADER_RATE, FOLLOWER_RATE))
    rec = record_priors(rec, "brokers", 2, {LEADER_RATE: "5", LOG_DIR_RATE: "8"}, BROKER_KEYS)
    assert record_entry(rec, "brokers", 2) == {LEADER_RATE: None, FOLLOWER_RATE: None, LOG_DIR_RATE: "8"}


def test_record_forget_and_empty() -> None:
    rec = record_priors(empty_record(), "topics", "t", {}, TOPIC_KEYS)
    rec = record_priors(rec, "brokers", 1, {}, BROKER_KEYS)
    assert not record_is_empty(rec)
    rec = record_forget(rec, "topics", "t")
    assert record_entry(rec, "topics", "t") is None
    assert record_entry(rec, "brokers", 1) is not None
    rec = record_forget(record_forget(rec, "brokers", 1), "brokers", 1)  # forgetting twice is harmless
    assert record_is_empty(rec)
    assert rec == empty_record()


def test_record_bytes_round_trip() -> None:
    rec = record_priors(empty_record(), "brokers", 1, {LEADER_RATE: "100"}, BROKER_KEYS)
    rec = record_priors(rec, "topics", "t", {}, TOPIC_KEYS)
    data = dump_record(rec)
    assert orjson.loads(data) == {
        "version": 1,
        "brokers": {"1": {LEADER_RATE: "100", FOLLOWER_RATE: None, LOG_DIR_RATE: None}},
        "topics": {"t": {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None}},
    }
    assert load_record(data) == rec
    assert load_record(None) == empty_record()
    assert load_record(b"") == empty_record()


@pytest.mark.parametrize(
    "data",
    [
        b"{",
        b"[]",
        b'{"version":2,"brokers":{},"topics":{}}',
        b'{"version":1,"brokers":{"1":{"k":5}},"topics":{}}',
        b'{"version":1,"brokers":[],"topics":{}}',
    ],
)
def test_load_record_refuses_malformed(data: bytes) -> None:
    with pytest.raises(OperationalError, match="/reassign_cli/throttles") as info:
        load_record(data, "/reassign_cli/throttles")
    assert "\n" not in str(info.value)


# ----- the replica-list validator ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("", []),
        ("*", "*"),
        (" * ", "*"),
        ("*,", "*"),
        (",*", "*"),
        (" 0:1 ", [(0, 1)]),
        ("0:1", [(0, 1)]),
        ("0:1, 10:2 ,3:3", [(0, 1), (10, 2), (3, 3)]),
        ("0:1,,1:2,", [(0, 1), (1, 2)]),
    ],
)
# Every value in these two tables was also sent to a Kafka 3.9.2 broker (AlterConfigs on a topic): it
# accepted exactly the first table and refused exactly the second.
def test_parse_throttled_replicas_accepts_what_kafka_accepts(value: str, parsed: object) -> None:
    assert parse_throttled_replicas(value) == parsed


@pytest.mark.parametrize("value", ["a:1", "0:1:2", "*,0:1", "0:-1", "0 :1", "0", "٣:1", "**"])
def test_parse_throttled_replicas_refuses_what_kafka_refuses(value: str) -> None:
    with pytest.raises(InvalidInputError, match=r"must be the literal '\*' or a list of replicas") as info:
        parse_throttled_replicas(value, LEADER_REPLICAS)
    assert "\n" not in str(info.value)


def test_parse_throttled_replicas_message_is_kafkas() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_throttled_replicas("*, 0:1", FOLLOWER_REPLICAS)
    assert str(info.value) == (
        "Invalid value [*, 0:1] for configuration follower.replication.throttled.replicas: "
        "follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the "
        "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


# ----- properties -------------------------------------------------------------------------------

broker_ids = st.integers(min_value=0, max_value=12)
replica_lists = st.lists(broker_ids, min_size=1, max_size=4, unique=True)


@st.composite
def plans(draw: st.DrawFn) -> tuple[ClusterState, dict[TopicPartition, list[int]]]:
    topics: dict[str, Topic] = {}
    targets: dict[TopicPartition, list[int]] = {}
    for name in draw(st.lists(st.sampled_from(["a", "b", "c.x", "d_1"]), min_size=1, unique=True)):
        parts = draw(st.lists(st.integers(0, 25), min_size=1, max_size=6, unique=True))
        replicas: dict[int, list[int]] = {}
        adding: dict[int, list[int]] = {}
        for p in parts:
            origin = draw(replica_lists)
            if draw(st.booleans()):
                # An active reassignment: RS = (target ++ origin).distinct, AR = RS - origin.
                running = draw(replica_lists)
                rs = list(dict.fromkeys(running + origin))
                ar = [b for b in rs if b not in origin]
                replicas[p] = rs
                if ar:
                    adding[p] = ar
            else:
                replicas[p] = origin
            if draw(st.booleans()):
                targets[(name, p)] = draw(replica_lists)
        topics[name] = Topic(name, replicas, adding=adding)
    return state_of(topics, tuple(range(13))), targets


@settings(max_examples=200, deadline=None)
@given(plans())
def test_throttle_lists_are_exact_and_parse_back(
    plan: tuple[ClusterState, dict[TopicPartition, list[int]]],
) -> None:
    state, targets = plan
    moves = move_map(targets, state)
    lists = topic_throttles(moves)
    assert set(lists) == {t for t, _ in targets}
    for topic, config in lists.items():
        assert set(config) == set(TOPIC_KEYS)
        leader = parse_throttled_replicas(config[LEADER_REPLICAS])
        follower = parse_throttled_replicas(config[FOLLOWER_REPLICAS])
        assert leader != "*" and follower != "*"
        planned = [(p, t) for (t2, p), t in targets.items() if t2 == topic]
        origin = {p: set(state.topics[topic].origin(p)) for p, _ in planned}
        # Every source is in the leader list, every destination in the follower list, and nothing else.
        assert set(leader) == {(p, s) for p, _ in planned for s in origin[p]}
        assert set(follower) == {(p, d) for p, t in planned for d in t if d not in origin[p]}
        for value in config.values():
            items = value.split(",") if value else []
            assert items == sorted(set(items))  # a string-sorted set, as Java's TreeSet<String>
    assert throttled_brokers(moves) == sorted(
        {b for m in moves.values() for b in m.sources} | {b for m in moves.values() for b in m.destinations}
    )


config_keys = st.sampled_from(["retention.ms", "cleanup.policy", "x", *BROKER_KEYS, *TOPIC_KEYS])
configs = st.dictionaries(config_keys, st.text(alphabet="0123456789:,", max_size=6), max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    configs,
    st.lists(st.dictionaries(st.sampled_from(BROKER_KEYS), st.from_regex(r"[0-9]{1,4}", fullmatch=True))),
)
def test_restore_after_any_number_of_applies_gives_back_the_original(
    original: dict[str, str], writes: list[dict[str, str]]
) -> None:
    record = empty_record()
    current = dict(original)
    for updates in writes:
        record = record_priors(record, "brokers", 1, current, updates.keys())
        current = apply_config(current, updates)
        for key in set(original) - set(BROKER_KEYS):
            assert current[key] == original[key]  # unrelated keys never change
    written = {k for u in writes for k in u}
    priors = record_entry(record, "brokers", 1)
    # Restoring the keys we wrote gives back exactly the original config...
    assert restore_config(current, sorted(written), priors) == original
    # ...and clearing every broker key (what verify does) differs from it only by the keys we never wrote.
    cleared = restore_config(current, BROKER_KEYS, priors)
    assert cleared == {k: v for k, v in original.items() if k in written or k not in BROKER_KEYS}


def test_replica_lists_too_long_for_a_request_become_the_wildcard() -> None:
    from reassign_cli.core.throttle import MAX_REQUEST_STRING, fit_replica_lists

    assert MAX_REQUEST_STRING == 32767  # Kafka's generated request readers: 0x7fff
    fits = "1" * 32767
    over = ",".join(f"{p}:1" for p in range(5000))  # 5,000 x "p:1" is 33,889 bytes with the commas
    assert len(over) == 33889
    lr, fr = "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"
    assert fit_replica_lists({lr: fits, fr: over, "retention.ms": over}) == {
        lr: fits,
        fr: "*",
        "retention.ms": over,
    }
    assert fit_replica_lists({}) == {}
