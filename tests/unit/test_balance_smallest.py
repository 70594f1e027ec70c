"""--balance replicas with partition sizes known: among moves of equal count, the smaller partitions
(docs/balanced.md, "Sizes known"). Without sizes the plans are today's (test_balance.py pins them)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping

from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.core.model import Assignment, Broker, Topic
from reassign_cli.planning.balanced.planner import plan_balanced
from reassign_cli.planning.plan import TopicSpec
from tests.unit.test_balance import SETTINGS, Case, _plan, assignment, broker_counts, cases, copies, specs_of


def copied_bytes(
    topics: Mapping[str, Topic], after: Assignment, size: Mapping[str, Mapping[int, int]]
) -> int:
    return sum(
        size[t][p] * len(set(row) - set(topics[t].replicas[p]))
        for t, parts in after.items()
        for p, row in parts.items()
    )


def test_the_two_smallest_partitions_move_to_the_added_broker() -> None:
    # One topic, 4 partitions of RF 1, all on broker 1; broker 2 added. Even counts: 2 and 2, so two
    # partitions move, any two (the topic's share on each broker is 2). By hand: the two smallest,
    # partitions 1 (5 bytes) and 3 (7 bytes), 12 bytes copied instead of up to 200. Whatever the seed.
    sizes = {0: 100, 1: 5, 2: 100, 3: 7}
    topic = Topic("t", {0: [1], 1: [1], 2: [1], 3: [1]}, sizes=sizes)
    brokers = [Broker(1), Broker(2)]
    for seed in range(10):
        result = plan_balanced({"t": topic}, brokers, specs_of({"t": topic}, ["t"]), seed)
        assert assignment(result) == {"t": {0: [1], 1: [2], 2: [1], 3: [2]}}
        assert result.stats.copies == 2


def test_adding_brokers_with_the_sizes_measured_on_the_real_cluster() -> None:
    # scripts/example_adding_brokers, with the sizes its snapshot recorded (2026-11-25). Broker 3 must
    # take each topic's even share: 4 of the 12 `orders` replicas, 2 of 6 `clicks`, 2 of 6 `metrics`,
    # 8 copies whatever it picks; brokers 1 and 2 give 4 each. By hand, the smallest that can go:
    # orders 4, 0, 2 (9.30, 9.30, 9.31 MB) and 3 (10.92), clicks 0 and 2 (4.02, 4.05), metrics 4 (on
    # broker 1, 3.98) and 3 (on broker 2, 4.02): 54,913,834 bytes. The smaller `orders` replicas are the
    # leaders' on broker 1 (slot 0), so the plan must move leaders' replicas to reach it.
    sizes = {
        "orders": [9301685, 10954595, 9312849, 10922191, 9301673, 10975936],
        "clicks": [4018840, 4083662, 4051250],
        "metrics": [4051250, 4083660, 4083660, 4021943, 3983403, 4083660],
    }
    rows = {
        "orders": [[1, 2], [2, 1]] * 3,
        "clicks": [[2, 1], [1, 2], [2, 1]],
        "metrics": [[1], [2]] * 3,
    }
    topics = {
        t: Topic(t, dict(enumerate(rows[t])), sizes=dict(enumerate(sizes[t])))
        for t in ("orders", "clicks", "metrics")
    }
    brokers = [Broker(b) for b in (1, 2, 3)]
    size = {t: dict(enumerate(sizes[t])) for t in topics}
    for seed in (1, 42):
        result = plan_balanced(topics, brokers, specs_of(topics, sorted(topics)), seed)
        after = assignment(result)
        assert result.stats.copies == 8
        assert copied_bytes(topics, after, size) == 54_913_834


def test_with_a_size_missing_the_plan_is_the_sizeless_one() -> None:
    rows = {p: [1, 2] for p in range(6)} | {p: [2, 3] for p in range(6, 9)}
    bare = Topic("t", rows)
    some = Topic("t", rows, sizes={p: 10 * p + 1 for p in range(8)})  # partition 8 unknown
    brokers = [Broker(b) for b in (1, 2, 3, 4)]
    specs = specs_of({"t": bare}, ["t"])
    a = plan_balanced({"t": bare}, brokers, specs, 5)
    b = plan_balanced({"t": some}, brokers, specs, 5)
    assert assignment(a) == assignment(b)


@st.composite
def sized(draw: st.DrawFn) -> tuple[Case, Case, dict[str, dict[int, int]]]:
    """A random cluster of test_balance.py, and the same with random sizes on every partition
    (lognormal, heavy-tailed, all equal or one giant)."""
    case = draw(cases())
    rnd = random.Random(draw(st.integers(0, 2**32)))
    kind = draw(st.sampled_from(["lognormal", "pareto", "equal", "giant"]))
    size: dict[str, dict[int, int]] = {}
    for name, t in case.topics.items():
        if kind == "lognormal":
            size[name] = {p: int(rnd.lognormvariate(10, 2)) for p in t.replicas}
        elif kind == "pareto":
            size[name] = {p: int(1000 * rnd.paretovariate(1.2)) for p in t.replicas}
        else:
            size[name] = dict.fromkeys(t.replicas, 1000)
    if kind == "giant":
        name = rnd.choice(sorted(size))
        size[name][rnd.choice(sorted(size[name]))] = 10**9
    topics = {n: dataclasses.replace(t, sizes=size[n]) for n, t in case.topics.items()}
    return case, dataclasses.replace(case, topics=topics), size


@SETTINGS
@given(sized())
def test_same_copies_no_more_bytes_counts_as_even(
    drawn: tuple[Case, Case, dict[str, dict[int, int]]],
) -> None:
    """With sizes: the copies of the sizeless plan, no more bytes copied, the same replica and leader
    spreads; the same plan again for the same seed."""
    bare, with_sizes, size = drawn
    r0, a0 = _plan(bare)
    r1, a1 = _plan(with_sizes)
    before = {n: t.replicas for n, t in bare.topics.items()}
    assert copies(before, a1) == r1.stats.copies == r0.stats.copies == copies(before, a0)
    assert copied_bytes(bare.topics, a1, size) <= copied_bytes(bare.topics, a0, size)
    ids = [b.id for b in bare.brokers]
    reps0, _ = broker_counts(bare.topics, a0, ids)
    reps1, _ = broker_counts(bare.topics, a1, ids)
    assert max(reps1.values()) - min(reps1.values()) <= max(reps0.values()) - min(reps0.values())
    assert r1.stats.leaders_spread[1] <= r0.stats.leaders_spread[1]
    assert assignment(_plan(with_sizes)[0]) == a1


def test_spark_batches_carry_the_sizes_to_the_driver() -> None:
    """The executors' packed topics (SplitTopics) keep each partition's size, regular topics or not, so
    the driver plans with them as the local engine does; without any size, none appears."""
    from reassign_cli.spark.split import SplitTopics, join_topics

    regular = Topic("a", {0: [1, 2], 1: [2, 1], 2: [1, 2]}, sizes={0: 30, 1: 10, 2: 20})
    gappy = Topic("b", {0: [1], 5: [2, 1]}, sizes={5: 7})  # partition 0 unknown
    for chosen in ([regular], [regular, gappy]):
        specs = [TopicSpec(t.name, len(t.replicas), 2) for t in chosen]
        topics, _ = join_topics([SplitTopics.of(chosen, specs)])
        assert {n: dict(t.sizes) for n, t in topics.items()} == {t.name: t.sizes for t in chosen}
    bare = Topic("a", regular.replicas)
    batch = SplitTopics.of([bare], [TopicSpec("a", 3, 2)])
    assert batch.sizes is None and not join_topics([batch])[0]["a"].sizes


def test_same_plan_from_the_spark_batches() -> None:
    """Planned from the executors' batches, the sized plan of the local engine."""
    from reassign_cli.spark.split import SplitTopics, join_topics

    rows = {p: [1 + p % 2] for p in range(8)}
    t = Topic("t", rows, sizes={p: (p * 37) % 11 + 1 for p in range(8)})
    brokers = [Broker(1), Broker(2), Broker(3), Broker(4)]
    specs = [TopicSpec("t", 8, 1)]
    topics, specs2 = join_topics([SplitTopics.of([t], specs)])
    local = plan_balanced({"t": t}, brokers, specs, 3)
    spark = plan_balanced(topics, brokers, specs2, 3)
    bare = plan_balanced({"t": Topic("t", rows)}, brokers, specs, 3)
    assert assignment(spark) == assignment(local)
    size = {"t": t.sizes}
    # By hand: broker 1 holds partitions 0, 2, 4, 6 (sizes 1, 9, 6, 3), broker 2 holds 1, 3, 5, 7 (5, 2,
    # 10, 7); each gives two to the empty brokers 3 and 4: the two smallest, 1 + 3 and 2 + 5 bytes.
    assert (
        copied_bytes({"t": t}, assignment(local), size) == 11 < copied_bytes({"t": t}, assignment(bare), size)
    )
    moved = {p for p, row in assignment(local)["t"].items() if row != rows[p]}
    assert moved == {0, 6, 1, 3}
