"""The balanced strategy split the way Spark runs it, without Spark: the executors scan their splits (and
count the unselected topics per broker), the driver plans over what they packed, the executors format
pieces of the plan. For any cut of the file, the documents and statistics equal the local engine's."""

from __future__ import annotations

import pickle
import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import Broker, ClusterState, Topic, format_partition_entries
from reassign_cli.core.replicas import stack
from reassign_cli.planning import plan
from reassign_cli.planning.balanced import planner as balance
from reassign_cli.planning.balanced.planner import OtherCounts, plan_balanced
from reassign_cli.planning.plan import TopicSpec
from reassign_cli.spark import split as split_plan
from tests.unit.test_balance import Case, assignment, cases, specs_of
from tests.unit.test_split_plan import checked_specs, clusters, scan_splits

CHUNK = 100_000  # generate.CHUNK_PARTITIONS: how the local engine cuts the plan for formatting


def unselected(case: Case) -> list[Topic]:
    return [t for name, t in case.topics.items() if name not in case.selected]


@settings(max_examples=200, deadline=None)
@given(cases(), st.integers(0, 2**32))
def test_counts_of_the_unselected_topics_plan_as_the_topics_themselves(case: Case, salt: int) -> None:
    """plan_balanced given only the selected topics and the others' per-broker counts (added up from any
    grouping of them, as the splits do) plans exactly what it plans given every topic."""
    expected = plan_balanced(
        case.topics, case.brokers, specs_of(case.topics, case.selected, case.rf), case.seed
    )
    rest = unselected(case)
    random.Random(salt).shuffle(rest)
    groups = [rest[i::3] for i in range(3)]
    others = OtherCounts({}, {})
    for group in groups:
        others = others.plus(OtherCounts.of([balance.targets_of(t) for t in group]))
    selected = {name: case.topics[name] for name in case.selected}
    got = plan_balanced(
        selected, case.brokers, specs_of(case.topics, case.selected, case.rf), case.seed, others
    )
    assert assignment(got) == assignment(expected)
    assert got.stats == expected.stats


def test_other_counts_by_hand() -> None:
    """Replicas of every id, leaders = first target replica; a partition being reassigned counts with RS
    minus RR; an empty replica list leads nothing."""
    moving = Topic("m", {0: [4, 1, 2], 1: []}, removing={0: [4]})
    plain = Topic("p", {0: [2, 3], 1: [3, 9]})
    counts = OtherCounts.of([balance.targets_of(moving), balance.targets_of(plain)])
    assert counts == OtherCounts({1: 1, 2: 2, 3: 2, 9: 1}, {1: 1, 2: 1, 3: 1})
    assert counts.plus(OtherCounts({9: 1, 5: 2}, {5: 1})) == OtherCounts(
        {1: 1, 2: 2, 3: 2, 9: 2, 5: 2}, {1: 1, 2: 1, 3: 1, 5: 1}
    )
    reps, leads = counts.on(np.array([1, 3, 5]))
    assert (reps.tolist(), leads.tolist()) == ([1, 2, 0], [1, 1, 0])


def local_engine(state: ClusterState, asked: list[str], brokers: Any, rf: int | None, seed: int) -> Any:
    """What generate.run does with --strategy balanced on the local engine."""
    bs = [Broker(i, r) for i, r in brokers]
    specs = checked_specs(state, asked, bs, rf)
    if isinstance(specs, tuple):
        return specs
    current = {s.name: state.topics[s.name].replicas for s in specs}
    result = plan_balanced(state.topics, bs, specs, seed)
    stats = plan.PlanStats()
    for chunk in result.chunks(CHUNK):
        stats.add(plan.plan_stats(current, chunk))
    proposed = ",".join(t for t in map(format_partition_entries, result.chunks(CHUNK)) if t)
    return ("ok", format_partition_entries(current), proposed, stats, result.stats)


def split_engine(
    state: ClusterState,
    asked: list[str],
    brokers: Any,
    rf: int | None,
    seed: int,
    cuts: list[int],
    chunk: int,
) -> Any:
    """The same through the splits: scan with the others counted, the driver's plan, pieces formatted."""
    scanned = scan_splits(state, asked, brokers, rf, cuts, chunk, others=True)
    if scanned[0] == "error":
        return scanned
    _, passes, scans = scanned
    others = OtherCounts({}, {})
    for s in scans:
        assert isinstance(s, split_plan.SplitScan) and s.others is not None
        others = others.plus(s.others)
    cached = [pickle.loads(pickle.dumps(p[:-1])) for p in passes]  # as Spark caches them
    topics, specs = split_plan.join_topics(b for p in cached for b in p)
    result = plan_balanced(topics, [Broker(i, r) for i, r in brokers], specs, seed, others)
    pieces = pickle.loads(pickle.dumps(result.cut(chunk % 5 + 1)))  # shipped to the executors
    formatted = [",".join(t for t in map(format_partition_entries, p.chunks(chunk)) if t) for p in pieces]
    current = [",".join(split_plan.current_split(p, plan_partitions=chunk % 7 + 1)) for p in cached]
    stats = plan.PlanStats()
    for part in result.chunks(CHUNK):
        stats.add(plan.plan_stats({n: t.replicas for n, t in topics.items()}, part))
    return ("ok", ",".join(t for t in current if t), ",".join(t for t in formatted if t), stats, result.stats)


@settings(max_examples=300, deadline=None)
@given(clusters(), st.lists(st.integers(0, 40), max_size=5), st.integers(1, 2000), st.integers(0, 2**64))
def test_splits_plan_balanced_as_the_local_engine(case: Any, cuts: list[int], chunk: int, seed: int) -> None:
    state, asked, brokers, rf = case
    assert split_engine(state, asked, brokers, rf, seed, cuts, chunk) == local_engine(
        state, asked, brokers, rf, seed
    )


def test_pieces_cover_the_plan_in_order() -> None:
    """Balanced.cut: whole topics, in order, at most n pieces of about equal partition counts."""
    topics = {f"t{i}": Topic(f"t{i}", {p: [1 + (p + i) % 4, 1 + (p + i + 1) % 4] for p in range(i + 1)})
              for i in range(10)}  # fmt: skip
    brokers = [Broker(b) for b in (1, 2, 3, 4)]
    result = plan_balanced(topics, brokers, specs_of(topics, sorted(topics)), 3)
    whole = assignment(result)
    for n in (1, 2, 3, 7, 10, 40):
        pieces = result.cut(n)
        assert 1 <= len(pieces) <= min(n, 10)
        joined: dict[str, Any] = {}
        for piece in pieces:
            joined.update(assignment(piece))
        assert list(joined) == sorted(whole) and joined == whole
    # 55 partitions in 2 pieces: t0..t6 (28) and t7..t9 (27); names sort as t0, t1, t2, ...
    assert [p.names for p in result.cut(2)] == [[f"t{i}" for i in range(7)], ["t7", "t8", "t9"]]


def test_joined_topics_share_one_store() -> None:
    """Two splits' packed topics joined: regular topics read as one block (the balancer's fast path), the
    irregular and mid-reassignment ones keep their partitions and RR."""
    a = split_plan.SplitTopics.of(
        [Topic("a", {0: [1, 2], 1: [2, 3]}), Topic("b", {0: [3, 1]})],
        [TopicSpec("a", 2, 2), TopicSpec("b", 1, 2)],
    )
    c = split_plan.SplitTopics.of(
        [Topic("c", {0: [2, 1]}), Topic("d", {5: [1, 2, 3]}, removing={5: [3]})],
        [TopicSpec("c", 1, 2), TopicSpec("d", 1, 2)],
    )
    topics, specs = split_plan.join_topics(pickle.loads(pickle.dumps([a, c])))
    assert [s.name for s in specs] == ["a", "b", "c", "d"]
    block = stack([topics[t].replicas for t in "abc"])
    assert block is not None and block.tolist() == [[1, 2], [2, 3], [3, 1], [2, 1]]
    assert dict(topics["d"].replicas) == {5: [1, 2, 3]} and topics["d"].target(5) == [1, 2]
