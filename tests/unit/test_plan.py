"""plan.py: keyed draws, broker selection, topic specs, assign_topics, generate_plan."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.errors import (
    AdminOperationError,
    ExitCode,
    InvalidInputError,
    InvalidReplicationFactorError,
)
from reassign_cli.planning.assign import assign_replicas
from reassign_cli.planning.plan import (
    GenerateRequest,
    TopicRng,
    TopicSpec,
    assign_topics,
    generate_plan,
    select_brokers,
    topic_draws,
    topic_draws_many,
    topic_specs,
)

# ---------------------------------------------------------------------------------------------
# Draws: an independent transcription of the definition in docs/algorithm.md
# ---------------------------------------------------------------------------------------------

M = 2**64


def ref_mix(z: int) -> int:
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 % M
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB % M
    return z ^ (z >> 31)


def ref_draws(seed: int, topic: str, n: int) -> tuple[int, int]:
    h = 0xCBF29CE484222325
    for c in topic.encode("utf-8"):
        h = (h ^ c) * 0x100000001B3 % M
    key = ref_mix((seed % M + 0x9E3779B97F4A7C15) % M)
    a = ref_mix(h ^ key)
    b = ref_mix((a + 0x9E3779B97F4A7C15) % M)
    return (a >> 32) * n >> 32, (b >> 32) * n >> 32


def test_draws_pinned_values():
    # Pinned so that the definition cannot drift: plans made with a seed must stay reproducible.
    assert topic_draws(1, "foo", 1000) == (350, 178)
    assert topic_draws(0, "", 3) == (2, 0)
    assert topic_draws(-5, "ünï", 7) == (5, 5)
    assert topic_draws(2**70, "topic-000042", 1000) == (616, 370)


topic_names = st.text(min_size=0, max_size=40)
seeds = st.integers(-(2**70), 2**70)


@settings(max_examples=200, deadline=None)
@given(seeds, topic_names, st.integers(1, 2**31 - 1))
def test_draws_match_the_definition(seed, topic, n):
    start, shift = topic_draws(seed, topic, n)
    assert (start, shift) == ref_draws(seed, topic, n)
    assert 0 <= start < n and 0 <= shift < n


@settings(max_examples=100, deadline=None)
@given(seeds, st.lists(topic_names, max_size=30), st.integers(1, 5000))
def test_vectorized_draws_equal_scalar(seed, topics, n):
    starts, shifts = topic_draws_many(seed, topics, n)
    assert list(zip(starts.tolist(), shifts.tolist(), strict=True)) == [
        topic_draws(seed, t, n) for t in topics
    ]


def test_draws_look_uniform():
    # 20k topics over 10 buckets: each bucket within 10% of its expectation (a biased or constant
    # draw fails this; a fair one passes with overwhelming probability, and the input is fixed).
    starts, shifts = topic_draws_many(3, [f"topic-{i}" for i in range(20000)], 10)
    for arr in (starts, shifts):
        counts = [int((arr == k).sum()) for k in range(10)]
        assert all(1800 <= c <= 2200 for c in counts), counts


def test_topic_rng_gives_the_two_draws_then_continues():
    rng = TopicRng(9, "orders")
    assert (rng.randrange(50), rng.randrange(50)) == topic_draws(9, "orders", 50)
    third = rng.randrange(50)
    assert 0 <= third < 50
    with pytest.raises(ValueError):
        TopicRng(9, "orders").randrange(0)


# ---------------------------------------------------------------------------------------------
# Broker selection (getBrokerMetadatas)
# ---------------------------------------------------------------------------------------------


def state_of(brokers, topics=None, deleting=()):
    return ClusterState(brokers=brokers, topics=topics or {}, deleting=frozenset(deleting))


RACKED = [Broker(3, "r3"), Broker(1, "r1"), Broker(2, "r2"), Broker(5, "r1")]


def test_select_all_registered_sorted_by_id():
    brokers, warnings = select_brokers(state_of(RACKED), None, True)
    assert brokers == [Broker(1, "r1"), Broker(2, "r2"), Broker(3, "r3"), Broker(5, "r1")]
    assert warnings == []


def test_select_filters_by_broker_list_and_warns_about_unregistered_ids():
    brokers, warnings = select_brokers(state_of(RACKED), [5, 9, 1, 7], True)
    assert brokers == [Broker(1, "r1"), Broker(5, "r1")]
    assert len(warnings) == 1
    assert "9,7" in warnings[0] and "not registered" in warnings[0]


def test_select_duplicate_broker_ids():
    with pytest.raises(InvalidInputError) as info:
        select_brokers(state_of(RACKED), [1, 2, 1, 2, 3], True)
    assert str(info.value) == "Broker list contains duplicate entries: 1,2"
    assert info.value.exit_code == ExitCode.INVALID


MIXED = [Broker(1, "r1"), Broker(2, None), Broker(3, "r3")]


def test_select_mixed_racks_needs_disable_rack_aware():
    with pytest.raises(AdminOperationError) as info:
        select_brokers(state_of(MIXED), None, True)
    assert str(info.value) == (
        "Not all brokers have rack information. Add --disable-rack-aware in command line to make "
        "replica assignment without rack information."
    )
    assert info.value.exit_code == ExitCode.INVALID
    # the check runs on the selected brokers only, as Kafka's does
    assert select_brokers(state_of(MIXED), [1, 3], True)[0] == [Broker(1, "r1"), Broker(3, "r3")]


def test_select_rack_unaware_drops_racks():
    brokers, _ = select_brokers(state_of(MIXED), None, False)
    assert brokers == [Broker(1), Broker(2), Broker(3)]


# ---------------------------------------------------------------------------------------------
# Topic specs
# ---------------------------------------------------------------------------------------------


def topic(name, replicas, adding=None, removing=None):
    return Topic(name=name, replicas=replicas, adding=adding or {}, removing=removing or {})


def test_specs_sorted_by_name():
    topics = {
        "b": topic("b", {0: [1, 2], 1: [2, 3]}),
        "a": topic("a", {0: [1], 1: [2], 2: [3]}),
    }
    assert topic_specs(state_of(RACKED, topics), ["b", "a"]) == [TopicSpec("a", 3, 1), TopicSpec("b", 2, 2)]


def test_specs_use_target_replicas_during_a_reassignment():
    # RS [4,5,6,1,2,3] while moving [1,2,3] -> [4,5,6]: RF is 3, not 6.
    t = topic("m", {0: [4, 5, 6, 1, 2, 3], 1: [1, 2, 3]}, adding={0: [4, 5, 6]}, removing={0: [1, 2, 3]})
    assert topic_specs(state_of(RACKED, {"m": t}), ["m"]) == [TopicSpec("m", 2, 3)]


def test_specs_refuse_mixed_replication_factors():
    t = topic("mixed", {0: [1, 2], 1: [1, 2, 3]})
    with pytest.raises(InvalidInputError, match="mixed") as info:
        topic_specs(state_of(RACKED, {"mixed": t}), ["mixed"])
    assert "different replication factors (2,3)" in str(info.value)


def test_specs_missing_topic():
    topics = {"a": topic("a", {0: [1]})}
    with pytest.raises(InvalidInputError) as info:
        topic_specs(state_of(RACKED, topics), ["a", "nope"])
    assert str(info.value) == "Topic nope not found."
    with pytest.raises(InvalidInputError) as info:
        topic_specs(state_of(RACKED, topics), ["zz", "a", "nope"])
    assert str(info.value) == "Topics not found: nope,zz"


def test_specs_refuse_topic_queued_for_deletion():
    topics = {"a": topic("a", {0: [1]}), "gone": topic("gone", {0: [1]})}
    with pytest.raises(InvalidInputError) as info:
        topic_specs(state_of(RACKED, topics, deleting=["gone"]), ["a", "gone"])
    assert "gone" in str(info.value) and "deletion" in str(info.value)
    assert info.value.exit_code == ExitCode.INVALID


# ---------------------------------------------------------------------------------------------
# assign_topics and generate_plan
# ---------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=12), st.integers(1, 12), st.integers(1, 4)),
        min_size=1,
        max_size=25,
        unique_by=lambda x: x[0],
    ),
    st.booleans(),
    st.integers(0, 2**40),
)
def test_assign_topics_equals_assign_replicas_with_topic_rng(specs_raw, racks, seed):
    brokers = [Broker(b, f"r{b % 3}" if racks else None) for b in (1, 2, 4, 5, 7, 9)]
    specs = sorted((TopicSpec(*s) for s in specs_raw), key=lambda s: s.name)
    got = assign_topics(specs, brokers, seed)
    assert list(got) == [s.name for s in specs]
    pairs = [(b.id, b.rack) for b in brokers]
    for s in specs:
        ref = assign_replicas(pairs, s.n_partitions, s.replication_factor, rng=TopicRng(seed, s.name))
        assert got[s.name] == ref


def test_plan_of_a_topic_does_not_depend_on_the_other_topics_or_their_order():
    brokers = [Broker(b, f"r{b % 4}") for b in range(1, 13)]
    specs = [TopicSpec(f"t{i}", 1 + i % 9, 1 + i % 3) for i in range(60)]
    full = assign_topics(specs, brokers, 42)
    shuffled = specs[:]
    random.Random(1).shuffle(shuffled)
    assert assign_topics(shuffled, brokers, 42) == full
    for i in range(0, 60, 7):
        assert assign_topics(specs[i : i + 3], brokers, 42) == {
            s.name: full[s.name] for s in specs[i : i + 3]
        }
    assert assign_topics(specs, brokers, 43) != full


def test_assign_topics_accepts_id_rack_pairs_and_empty_specs():
    specs = [TopicSpec("x", 4, 2)]
    assert assign_topics(specs, [(1, None), (2, None), (3, None)], 5) == assign_topics(
        specs, [Broker(1), Broker(2), Broker(3)], 5
    )
    assert assign_topics([], [Broker(1)], 5) == {}


def test_assign_topics_rf_larger_than_brokers_names_the_topic():
    with pytest.raises(InvalidReplicationFactorError) as info:
        assign_topics([TopicSpec("a", 1, 1), TopicSpec("b", 2, 3)], [Broker(1), Broker(2)], 0)
    assert str(info.value) == "Replication factor: 3 larger than available brokers: 2."
    assert info.value.hint is not None and "topic b" in info.value.hint


def cluster():
    topics = {
        "orders": topic("orders", {0: [1, 2], 1: [2, 3], 2: [3, 1]}),
        "moving": topic("moving", {0: [4, 1, 2]}, adding={0: [4]}, removing={0: [2]}),
        "other": topic("other", {0: [1]}),
    }
    brokers = [Broker(1, "r1"), Broker(2, "r2"), Broker(3, "r3"), Broker(4, "r1")]
    return state_of(brokers, topics)


def test_generate_plan():
    state = cluster()
    result = generate_plan(state, GenerateRequest(["orders", "moving"], broker_list=[1, 2, 3, 8], seed=11))
    assert result.seed == 11
    assert result.brokers == [Broker(1, "r1"), Broker(2, "r2"), Broker(3, "r3")]
    assert len(result.warnings) == 1 and "8" in result.warnings[0]
    assert result.specs == [TopicSpec("moving", 1, 2), TopicSpec("orders", 3, 2)]
    # current is the znode content (RS during a reassignment), only for the requested topics
    assert result.current == {"moving": {0: [4, 1, 2]}, "orders": {0: [1, 2], 1: [2, 3], 2: [3, 1]}}
    pairs = [(1, "r1"), (2, "r2"), (3, "r3")]
    assert result.proposed == {
        "moving": assign_replicas(pairs, 1, 2, rng=TopicRng(11, "moving")),
        "orders": assign_replicas(pairs, 3, 2, rng=TopicRng(11, "orders")),
    }


def test_generate_plan_without_seed_picks_and_reports_one():
    state = cluster()
    result = generate_plan(state, GenerateRequest(["orders"]))
    again = generate_plan(state, GenerateRequest(["orders"], seed=result.seed))
    assert again.proposed == result.proposed


def test_generate_plan_rack_unaware():
    state = cluster()
    result = generate_plan(state, GenerateRequest(["orders"], rack_aware=False, seed=3))
    assert [b.rack for b in result.brokers] == [None] * 4
    pairs = [(1, None), (2, None), (3, None), (4, None)]
    assert result.proposed["orders"] == assign_replicas(pairs, 3, 2, rng=TopicRng(3, "orders"))


def test_generate_plan_rf_larger_than_selected_brokers():
    with pytest.raises(InvalidReplicationFactorError) as info:
        generate_plan(cluster(), GenerateRequest(["orders"], broker_list=[1, 5], seed=1))
    assert str(info.value) == "Replication factor: 2 larger than available brokers: 1."
    assert info.value.exit_code == ExitCode.INVALID


KAFKA_CASES = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "kafka" / "assign_cases.json").read_text()
)["cases"]


@pytest.mark.parametrize("case", KAFKA_CASES, ids=lambda c: f"{c['topic']}-seed{c['seed']}")
def test_seeded_plan_matches_kafka_jar_fixture(case: dict[str, Any]) -> None:
    """For seed S and topic T, the pinned draws (start index = replica shift) and Kafka's jar output
    for them (tests/fixtures/kafka/assign_cases.json) are exactly what assign_topics proposes."""
    n = len(case["brokers"])
    assert topic_draws(case["seed"], case["topic"], n) == (case["start_index"], case["replica_shift"])
    spec = TopicSpec(case["topic"], case["partitions"], case["rf"])
    got = assign_topics([spec], [(b, r) for b, r in case["brokers"]], case["seed"])
    assert got == {case["topic"]: {int(p): reps for p, reps in case["kafka"].items()}}


@pytest.mark.parametrize("views", ["none", "current", "both"])
def test_plan_stats_with_ids_beyond_the_bincount_range_and_added_in_parts(views: str) -> None:
    from collections import Counter

    from reassign_cli.planning.plan import PlanStats, plan_stats
    from tests.unit.test_replicas import compact

    current: Any = {"t": {0: [2_000_000, 1], 1: [1, 5]}, "u": {0: [7, 5]}}
    if views != "none":  # a loaded snapshot's shape: the statistics read the numpy array directly
        current = compact(current)
    proposed: Any = {"t": {0: [1, 2_000_000], 1: [5, 7]}, "u": {0: [7, 5]}}
    if views == "both":  # and a balanced plan's: both sides straight from their stores
        proposed = compact(proposed)
    st = plan_stats(current, proposed)
    # worked out by hand: t/0 only swaps its leader, t/1 gains broker 7, u is unchanged
    assert (st.partitions, st.partitions_changed, st.replicas_moved, st.leaders_changed) == (3, 2, 1, 2)
    assert st.replicas_before == Counter({1: 2, 5: 2, 2_000_000: 1, 7: 1})
    assert st.replicas_after == Counter({1: 1, 2_000_000: 1, 5: 2, 7: 2})
    assert st.leaders_before == Counter({2_000_000: 1, 1: 1, 7: 1})
    assert st.leaders_after == Counter({1: 1, 5: 1, 7: 1})
    parts = PlanStats()
    for topic in ("t", "u"):  # the pipeline adds the statistics of each chunk of topics
        parts.add(plan_stats(current, {topic: proposed[topic]}))
    assert parts == st
