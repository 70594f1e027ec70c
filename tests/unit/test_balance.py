"""The balanced strategy (reassign_cli.planning.balanced.planner) against the contract of issue 11, points 1-6.

Hand-worked examples first, then hypothesis over random clusters: brokers added, removed from the broker
list, dead (holding replicas, not registered), racks of equal and unequal size or none, skewed placements,
mixed RF, RF up and down, subsets of topics. Every expected value is computed here, independently of the
code under test: the best achievable replica spread by brute force over rack totals and a greedy fill one
unit at a time, the best leader spread by max-flow, the lower bound from its definition.
"""

from __future__ import annotations

import math
import os
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import Assignment, Broker, Topic
from reassign_cli.core.replicas import ReplicaStore, TopicReplicas
from reassign_cli.planning.balanced.planner import Balanced, plan_balanced
from reassign_cli.planning.plan import TopicSpec, assign_topics

# ---------------------------------------------------------------------------------------------
# Helpers (independent of reassign_cli.planning.balanced.planner)
# ---------------------------------------------------------------------------------------------


def assignment(result: Balanced) -> Assignment:
    out: Assignment = {}
    for chunk in result.chunks(7):  # small chunks: the chunking itself is exercised
        assert not out.keys() & chunk.keys()
        out.update(chunk)
    return out


def specs_of(topics: Mapping[str, Topic], names: Sequence[str], rf: int | None = None) -> list[TopicSpec]:
    return [
        TopicSpec(t, len(topics[t].replicas), rf or len(next(iter(topics[t].replicas.values()))))
        for t in sorted(names)
    ]


def copies(before: Mapping[str, Mapping[int, Sequence[int]]], after: Assignment) -> int:
    return sum(len(set(r) - set(before[t][p])) for t, parts in after.items() for p, r in parts.items())


def broker_counts(
    topics: Mapping[str, Topic], result: Assignment, ids: Sequence[int]
) -> tuple[dict[int, int], dict[int, int]]:
    """Replicas and preferred leaders per broker of `ids`, all topics, with `result` replacing its topics."""
    reps = dict.fromkeys(ids, 0)
    leads = dict.fromkeys(ids, 0)
    for name, topic in topics.items():
        for row in result.get(name, topic.replicas).values():
            for b in row:
                if b in reps:
                    reps[b] += 1
            if row and row[0] in leads:
                leads[row[0]] += 1
    return reps, leads


Arc = tuple[object, object, int, int]  # (from, to, capacity, cost)


Graph = tuple[dict[object, int], list[list[int]], list[int], list[int], list[int]]


def residual(arcs: list[Arc]) -> Graph:
    """(node index, arcs out of each node, head, capacity, cost): each arc e paired with its reverse
    e ^ 1 (capacity 0, cost negated)."""
    index: dict[object, int] = {}
    for u, v, _, _ in arcs:
        index.setdefault(u, len(index))
        index.setdefault(v, len(index))
    adj: list[list[int]] = [[] for _ in index]
    to: list[int] = []
    cap: list[int] = []
    cost: list[int] = []
    for u, v, c, w in arcs:
        for x, y, c2, w2 in ((index[u], index[v], c, w), (index[v], index[u], 0, -w)):
            adj[x].append(len(to))
            to.append(y)
            cap.append(c2)
            cost.append(w2)
    return index, adj, to, cap, cost


def augment(via: list[int], to: list[int], cap: list[int], src: int, sink: int) -> int:
    """Push the bottleneck along the path the arcs `via` trace back from sink to src; returns it."""
    path, x = [], sink
    while x != src:
        path.append(via[x])
        x = to[via[x] ^ 1]
    push = min(cap[e] for e in path)
    for e in path:
        cap[e] -= push
        cap[e ^ 1] += push
    return push


def max_flow(arcs: list[Arc]) -> int:
    """Edmonds-Karp from "s" to "t" over arcs (u, v, capacity, cost unused), each path's bottleneck at
    a time."""
    index, adj, to, cap, _ = residual(arcs)
    if "s" not in index or "t" not in index:
        return 0
    src, sink, total = index["s"], index["t"], 0
    while True:
        via: list[int] = [-1] * len(index)  # the arc that reached each node
        seen = [False] * len(index)
        seen[src] = True
        queue = [src]
        for x in queue:
            for e in adj[x]:
                if cap[e] > 0 and not seen[to[e]]:
                    seen[to[e]] = True
                    via[to[e]] = e
                    queue.append(to[e])
        if not seen[sink]:
            return total
        total += augment(via, to, cap, src, sink)


def _search_level(ok: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest level in [lo, hi] for which ok holds (ok monotone, true at hi)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def min_cost(arcs: list[Arc]) -> tuple[int, int]:
    """(flow, cost) of a min-cost max-flow from "s" to "t": successive shortest paths (queue-based
    Bellman-Ford, so negative costs are fine while the graph has no negative cycle)."""
    index, adj, to, cap, cost = residual(arcs)
    src, sink = index["s"], index["t"]
    flow = total = 0
    while True:
        dist = [math.inf] * len(index)
        via = [-1] * len(index)
        dist[src] = 0
        queue, queued = [src], {src}
        while queue:
            x = queue.pop(0)
            queued.discard(x)
            for e in adj[x]:
                if cap[e] > 0 and dist[x] + cost[e] < dist[to[e]]:
                    dist[to[e]] = dist[x] + cost[e]
                    via[to[e]] = e
                    if to[e] not in queued:
                        queued.add(to[e])
                        queue.append(to[e])
        if dist[sink] == math.inf:
            return flow, total
        push = augment(via, to, cap, src, sink)
        flow += push
        total += push * int(dist[sink])


@dataclass
class Placement:
    """Where the selected replicas may go: partitions (topic, RF), brokers, racks, per-topic caps."""

    parts: list[tuple[str, int]]
    ids: list[int]
    rack: dict[int, str | None]
    cap: dict[tuple[str, int], int]  # per (topic, broker)
    fixed: dict[int, int]
    current: list[set[int]]  # each partition's brokers now

    def arcs(self, sink_cap: Mapping[int, int]) -> list[Arc]:
        """Partition i -> (topic, broker) costs 1 when the broker is not in the partition now (a copy)."""
        racks = sorted({r for r in self.rack.values() if r is not None})
        arcs: list[Arc] = []
        for i, (t, rf) in enumerate(self.parts):
            arcs.append(("s", ("p", i), rf, 0))
            for b in self.ids:
                # With racks (and RF <= racks, as `exact` requires): one replica per rack.
                via = ("pr", i, self.rack[b]) if len(racks) > 1 else ("p", i)
                arcs.append((via, ("tb", t, b), 1, int(b not in self.current[i])))
            if len(racks) > 1:
                arcs.extend((("p", i), ("pr", i, r), 1, 0) for r in racks)
        for t in {t for t, _ in self.parts}:
            arcs.extend((("tb", t, b), ("b", b), self.cap[t, b], 0) for b in self.ids)
        arcs.extend((("b", b), "t", c, 0) for b, c in sink_cap.items())
        return arcs

    def fewest_copies(self, best_max: int, best_min: int) -> int:
        """The fewest copies of any placement whose counts lie in [best_min, best_max]: a min-cost flow
        where each broker's first (best_min - fixed) units earn a large reward, so they fill first."""
        big = 10_000
        arcs = [a for a in self.arcs({}) if a[1] != "t"]
        for b in self.ids:
            low = max(0, best_min - self.fixed[b])
            arcs.append((("b", b), "t", low, -big))
            arcs.append((("b", b), "t", max(0, best_max - self.fixed[b]) - low, 0))
        flow, cost = min_cost(arcs)
        lows = sum(max(0, best_min - self.fixed[b]) for b in self.ids)
        assert flow == sum(rf for _, rf in self.parts)
        return cost + big * lows

    def best(self) -> tuple[int, int]:
        """(least possible max, greatest possible min) of replica counts: both by max-flow (the counts
        a flow can give form a polymatroid base, whose lexicographic optimum has both)."""
        total = sum(rf for _, rf in self.parts)
        fixed, ids = self.fixed, self.ids
        top = max(fixed.values()) + total

        def fits_under(hi: int) -> bool:
            return max_flow(self.arcs({b: max(0, hi - fixed[b]) for b in ids})) == total

        def cannot_reach(lo: int) -> bool:
            need = {b: max(0, lo - fixed[b]) for b in ids}
            return max_flow(self.arcs(need)) < sum(need.values())

        hi = _search_level(fits_under, max(fixed.values()), top)
        return hi, _search_level(cannot_reach, min(fixed.values()), top + 1) - 1


def best_leader_spread(rows: list[list[int]], fixed: dict[int, int]) -> tuple[int, int]:
    """(least possible max, greatest possible min) of leader counts when each row's leader is one of its
    replicas and `fixed` leaders are already there: both by max-flow."""

    def arcs(sink_cap: Mapping[int, int]) -> list[Arc]:
        out: list[Arc] = [("s", ("p", i), 1, 0) for i in range(len(rows))]
        out += [(("p", i), ("b", b), 1, 0) for i, r in enumerate(rows) for b in r]
        return out + [(("b", b), "t", c, 0) for b, c in sink_cap.items()]

    top = max(fixed.values()) + len(rows)
    hi = _search_level(
        lambda hi: max_flow(arcs({b: max(0, hi - f) for b, f in fixed.items()})) == len(rows),
        max(fixed.values()),
        top,
    )

    def cannot_reach(lo: int) -> bool:
        need = {b: max(0, lo - f) for b, f in fixed.items()}
        return max_flow(arcs(need)) < sum(need.values())

    return hi, _search_level(cannot_reach, min(fixed.values()), top + 1) - 1


def racks_of(brokers: Sequence[Broker]) -> dict[int, str | None]:
    return {b.id: b.rack for b in brokers}


def spans(row: Sequence[int], rack_of: Mapping[int, str | None]) -> int:
    return len({rack_of[b] for b in row})


# ---------------------------------------------------------------------------------------------
# Hand-worked examples
# ---------------------------------------------------------------------------------------------


def test_two_topics_on_brokers_1_2_onto_1_2_3() -> None:
    # a: 4 partitions, b: 2 partitions, RF 2, all on brokers 1 and 2 (6 replicas each, broker 3 empty).
    topics = {
        "a": Topic("a", {0: [1, 2], 1: [2, 1], 2: [1, 2], 3: [2, 1]}),
        "b": Topic("b", {0: [1, 2], 1: [2, 1]}),
    }
    brokers = [Broker(1), Broker(2), Broker(3)]
    result = plan_balanced(topics, brokers, specs_of(topics, ["a", "b"]), seed=1)
    after = assignment(result)
    # T = 12 replicas over n = 3 brokers: 4 each. Lower bound: (a) broker 3 must receive 4 - 0 = 4;
    # (b) brokers 1 and 2 must each shed 6 - 4 = 2, no RF change: 4. So exactly 4 copies, all to broker 3.
    assert result.stats.lower_bound == 4
    assert copies({t: topics[t].replicas for t in topics}, after) == 4
    reps, leads = broker_counts(topics, after, [1, 2, 3])
    assert reps == {1: 4, 2: 4, 3: 4}
    # 6 partitions, 6 preferred leaders: 2 each. Before: 1 led 3, 2 led 3 (spread 3 with broker 3).
    assert leads == {1: 2, 2: 2, 3: 2}
    assert result.stats.replicas_spread == (6, 0)
    assert result.stats.leaders_spread == (3, 0)
    # Topic b (2 partitions) has two different leaders; topic a (4 over 3 brokers) at most 2 on one.
    assert len({after["b"][0][0], after["b"][1][0]}) == 2
    assert max(Counter(r[0] for r in after["a"].values()).values()) == 2
    # Broker 3 takes one replica of each of four partitions; each such partition keeps one of 1, 2.
    assert sum(3 in r for parts in after.values() for r in parts.values()) == 4


def test_an_added_broker_takes_an_even_share_of_every_topic() -> None:
    # The README's "adding brokers" cluster: orders (6 partitions, RF 2) and clicks (3, RF 2) on brokers
    # 1,2; metrics (6, RF 1) alternating 1,2. 24 replicas over 3 brokers: 8 each; broker 3 receives 8.
    # Each topic's even share: orders 12/3 = 4, clicks 6/3 = 2, metrics 6/3 = 2, and 4 + 2 + 2 = 8: so the
    # 8 copies can spread every topic evenly, and must (rather than 6 of orders' 12 replicas on broker 3,
    # which the cap alone allows since brokers 1 and 2 held 6 of orders before).
    topics = {
        "orders": Topic("orders", {p: [1 + p % 2, 2 - p % 2] for p in range(6)}),
        "clicks": Topic("clicks", {p: [1 + p % 2, 2 - p % 2] for p in range(3)}),
        "metrics": Topic("metrics", {p: [1 + p % 2] for p in range(6)}),
    }
    brokers = [Broker(1), Broker(2), Broker(3)]
    for seed in range(20):
        result = plan_balanced(topics, brokers, specs_of(topics, sorted(topics)), seed=seed)
        after = assignment(result)
        assert copies({t: topics[t].replicas for t in topics}, after) == 8 == result.stats.lower_bound
        for t, even in (("orders", 4), ("clicks", 2), ("metrics", 2)):
            held = Counter(b for r in after[t].values() for b in r)
            assert held == {1: even, 2: even, 3: even}, (seed, t, held)


def test_unequal_racks_a_large_rack_evens_out_beyond_its_rack_share() -> None:
    # Found by hypothesis. Racks r0 = {1, 3, 6}, r1 = {4, 5, 7, 8}, r2 = {2, 9, 10}; only t0 (4 partitions,
    # RF 3: one replica per rack per partition) moves; t1 puts 2 fixed replicas on 1 and 4, t2 one on 2.
    # r1 holds 2 fixed + 4 of t0 = 6 over 4 brokers: 2, 2, 1, 1 at best, so broker 4 (2 fixed) takes no
    # t0 replica and one of 5, 7, 8 takes two, above r1's own even share of t0 (1) but within the
    # contract's ceil(12 / 10) = 2. r0: 2 + 4 = 6 over 3: 2 each; r2: 1 + 4 = 5 over 3: 2, 2, 1.
    topics = {
        "t0": Topic("t0", {0: [1, 6, 7], 1: [8, 1, 2], 2: [2, 3, 4], 3: [5, 6, 3]}),
        "t1": Topic("t1", {0: [1, 4], 1: [1, 4]}),
        "t2": Topic("t2", {0: [2]}),
    }
    rack = {1: "r0", 3: "r0", 6: "r0", 4: "r1", 5: "r1", 7: "r1", 8: "r1", 2: "r2", 9: "r2", 10: "r2"}
    brokers = [Broker(b, rack[b]) for b in range(1, 11)]
    after = assignment(plan_balanced(topics, brokers, specs_of(topics, ["t0"]), seed=0))
    reps, _ = broker_counts(topics, after, list(range(1, 11)))
    assert (max(reps.values()), min(reps.values())) == (2, 1)
    assert all(len({rack[b] for b in row}) == 3 for row in after["t0"].values())


def test_unequal_racks_a_forced_count_does_not_loosen_the_cap_on_replanning() -> None:
    # Found by hypothesis. Racks r0 = {1, 2}, r1 = {3}, r2 = {4, 5}; t0 (5 partitions, RF 1 -> 4) must
    # put a replica of every partition on broker 3, the only broker of r1: 5 of t0 there, more than
    # ceil(20 / 5) = 4 and than anyone held before (4). Planning the result again must change nothing
    # (point 6), though broker 3 now "held 5 before".
    topics = {
        "t0": Topic("t0", {0: [1], 1: [1], 2: [1], 3: [1], 4: [2]}),
        "t1": Topic("t1", {0: [1], 1: [1]}),
        "t2": Topic("t2", {0: [1]}),
    }
    rack = {1: "r0", 2: "r0", 3: "r1", 4: "r2", 5: "r2"}
    brokers = [Broker(b, rack[b]) for b in range(1, 6)]
    first = assignment(plan_balanced(topics, brokers, specs_of(topics, ["t0"], 4), seed=0))
    assert sum(3 in row for row in first["t0"].values()) == 5
    again_topics = {**topics, "t0": Topic("t0", {p: list(r) for p, r in first["t0"].items()})}
    again = plan_balanced(again_topics, brokers, specs_of(again_topics, ["t0"]), seed=1)
    assert again.stats.copies == 0 and again.stats.leader_changes == 0
    assert {p: list(r) for p, r in assignment(again)["t0"].items()} == {
        p: list(r) for p, r in first["t0"].items()
    }


def test_drain_a_broker() -> None:
    # One topic, 3 partitions on 1,2,3 (RF 2); broker 3 leaves the broker list.
    topics = {"t": Topic("t", {0: [1, 2], 1: [2, 3], 2: [3, 1]})}
    result = plan_balanced(topics, [Broker(1), Broker(2)], specs_of(topics, ["t"]), seed=7)
    after = assignment(result)
    # Every partition needs both remaining brokers: {1,2} three times; the two replicas on broker 3
    # are replaced: 2 copies, the lower bound ((b): 0 over-full + 2 slots lost off B).
    assert {p: sorted(r) for p, r in after["t"].items()} == {0: [1, 2], 1: [1, 2], 2: [1, 2]}
    assert copies({"t": topics["t"].replicas}, after) == 2 == result.stats.lower_bound
    # Partition 0 is unchanged and keeps its order; 3 leaders over 2 brokers: 2 and 1.
    assert after["t"][0] == [1, 2]
    assert sorted(Counter(r[0] for r in after["t"].values()).values()) == [1, 2]


def test_rf_up_from_2_to_3_on_three_brokers() -> None:
    topics = {"t": Topic("t", {0: [1, 2], 1: [2, 3], 2: [3, 1]})}
    specs = specs_of(topics, ["t"], rf=3)
    result = plan_balanced(topics, [Broker(1), Broker(2), Broker(3)], specs, seed=3)
    after = assignment(result)
    # Each partition gains the one broker it lacks: 3 copies (the lower bound: 3 slots to gain), and keeps
    # its leader (leaders 1, 2, 3 are already one each).
    assert after == {"t": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}}
    assert result.stats.copies == 3 == result.stats.lower_bound
    assert result.stats.leader_changes == 0


def test_rf_down_drops_from_the_fullest_broker() -> None:
    # RF 3 -> 2 over 3 brokers with 2 partitions of t; the unselected topic u holds two more replicas on
    # broker 1. After: 4 + 2 = 6 replicas over 3 brokers, 2 each, so broker 1 (4 now) must shed both of
    # its t replicas, which the RF decrease drops for free: no copy at all.
    topics = {
        "t": Topic("t", {0: [1, 2, 3], 1: [2, 1, 3]}),
        "u": Topic("u", {0: [1], 1: [1]}),
    }
    result = plan_balanced(topics, [Broker(1), Broker(2), Broker(3)], specs_of(topics, ["t"], rf=2), seed=0)
    after = assignment(result)
    # Partition 0 lost its leader (1): its next replica, 2, leads; partition 1 keeps 2 and 3 in order, but
    # leaders are balanced 1 and 1 between 2 and 3 (broker 1 already leads u's two partitions).
    assert [sorted(r) for r in after["t"].values()] == [[2, 3], [2, 3]]
    assert sorted(r[0] for r in after["t"].values()) == [2, 3]
    assert result.stats.copies == 0 == result.stats.lower_bound
    reps, leads = broker_counts(topics, after, [1, 2, 3])
    assert reps == {1: 2, 2: 2, 3: 2}
    assert leads == {1: 2, 2: 1, 3: 1}


def test_dead_broker_replicas_move_and_racks_are_spread() -> None:
    # Racks: 1,2 in a; 3,4 in b. Broker 9 is dead (not registered, not in B) and holds replicas.
    brokers = [Broker(1, "a"), Broker(2, "a"), Broker(3, "b"), Broker(4, "b")]
    topics = {"t": Topic("t", {0: [9, 1], 1: [1, 2], 2: [3, 9], 3: [4, 3]})}
    result = plan_balanced(topics, brokers, specs_of(topics, ["t"]), seed=11)
    after = assignment(result)
    rack = racks_of(brokers)
    for row in after["t"].values():
        assert len(set(row)) == 2 and 9 not in row and spans(row, rack) == 2
    # Two replicas off B (broker 9) and two rack repairs (partitions 1 and 3 sit in one rack): the lower
    # bound's per-partition term is 1 + 1 + 1 + 1 = 4, and that is what moves.
    assert result.stats.lower_bound == 4 == result.stats.copies
    reps, leads = broker_counts(topics, after, [1, 2, 3, 4])
    assert sorted(reps.values()) == [2, 2, 2, 2] and sorted(leads.values()) == [1, 1, 1, 1]


def test_same_bytes_whatever_the_dict_order() -> None:
    rng = random.Random(5)
    parts = {p: rng.sample(range(1, 7), 3) for p in range(30)}
    a = {"x": Topic("x", dict(parts)), "y": Topic("y", {0: [1, 2, 3], 1: [4, 5, 6]})}
    b = {"y": Topic("y", {1: [4, 5, 6], 0: [1, 2, 3]}), "x": Topic("x", dict(reversed(parts.items())))}
    brokers = [Broker(i) for i in range(1, 10)]
    first = assignment(plan_balanced(a, brokers, specs_of(a, ["x", "y"]), seed=9))
    second = assignment(plan_balanced(b, list(reversed(brokers)), specs_of(b, ["y", "x"]), seed=9))
    assert repr(first) == repr(second)


# ---------------------------------------------------------------------------------------------
# Random clusters
# ---------------------------------------------------------------------------------------------


@dataclass
class Case:
    topics: dict[str, Topic]
    brokers: list[Broker]  # B, as given to the planner
    selected: list[str]
    rf: int | None  # --replication-factor
    racks: str  # "none", "equal", "unequal", "ignored" (racks exist, --disable-rack-aware)
    seed: int


def _gap(topics: dict[str, dict[int, list[int]]], racks: dict[int, str], selected: list[str]) -> Case:
    """A case the planner is known to miss (unequal racks with a subset of topics selected: docs/balanced.md,
    "phases"): pinned as an expected failure, so a fix shows up as an XPASS that fails the run."""
    return Case(
        {t: Topic(t, {p: list(r) for p, r in parts.items()}) for t, parts in topics.items()},
        [Broker(b, rack) for b, rack in sorted(racks.items())],
        selected,
        None,
        "unequal",
        0,
    )


# Found by hypothesis this session (2026-11-25): max/min 4/1 where 4/2 is possible.
GAP_EVEN = _gap(
    {"t0": {0: [1, 2], 1: [1, 3], 2: [3, 4]}, "t1": {0: [1, 2, 4], 1: [1, 2, 4], 2: [1, 2, 5]}},
    {1: "r0", 3: "r0", 2: "r1", 4: "r1", 5: "r1", 6: "r1"},
    ["t0"],
)
# Found by hypothesis this session: 1 copy made, where the most even placement needs 3 (the plan stops
# less even than it could be).
GAP_COPIES = _gap(
    {
        "t0": {0: [1, 2, 3], 1: [1, 4, 5]},
        "t1": {0: [1, 2, 3, 6], 1: [6, 1, 2, 3], 2: [1, 2, 3, 5], 3: [1, 2, 3, 5]},
    },
    {1: "r0", 2: "r1", 3: "r1", 4: "r1", 5: "r2", 6: "r2", 7: "r2"},
    ["t0"],
)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(["none", "equal", "unequal", "ignored"]))
    if kind in ("equal", "ignored"):
        n_racks = draw(st.integers(2, 3))
        sizes = [draw(st.integers(1, 3))] * n_racks
    elif kind == "unequal":
        sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=3).filter(lambda s: len(set(s)) > 1))
    else:
        sizes = [draw(st.integers(1, 8))]
    names = [f"r{i}" for i in range(len(sizes))] if kind != "none" else [None]
    rack_list = [r for r, s in zip(names, sizes, strict=True) for _ in range(s)]
    draw(st.randoms()).shuffle(rack_list)
    brokers = [Broker(i + 1, r) for i, r in enumerate(rack_list)]
    n = len(brokers)
    added = draw(st.integers(0, min(3, n - 1)))  # the last brokers of B hold nothing yet
    others = list(range(101, 101 + draw(st.integers(0, 2))))  # removed from the list or dead
    pool = [b.id for b in brokers[: n - added]] + others
    topics: dict[str, Topic] = {}
    for t in range(draw(st.integers(1, 4))):
        rf = draw(st.integers(1, min(4, len(pool))))
        n_parts = draw(st.integers(1, 9))
        weights = draw(st.lists(st.integers(1, 5), min_size=len(pool), max_size=len(pool)))
        rnd = draw(st.randoms())
        parts = {}
        for p in range(n_parts):
            chosen: list[int] = []
            while len(chosen) < rf:  # skewed: heavier brokers drawn more often
                b = rnd.choices(pool, weights)[0]
                if b not in chosen:
                    chosen.append(b)
            parts[p] = chosen
        topics[f"t{t}"] = Topic(f"t{t}", parts)
    selected = draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True))
    rf_opt = draw(st.one_of(st.none(), st.integers(1, min(4, n))))
    if rf_opt is None and any(len(topics[t].replicas[0]) > n for t in selected):
        rf_opt = n
    if kind in ("ignored", "none"):
        brokers = [Broker(b.id) for b in brokers]
    return Case(topics, brokers, sorted(selected), rf_opt, kind, draw(st.integers(0, 2**31)))


def _plan(case: Case) -> tuple[Balanced, Assignment]:
    result = plan_balanced(
        case.topics, case.brokers, specs_of(case.topics, case.selected, case.rf), case.seed
    )
    return result, assignment(result)


# BALANCE_EXAMPLES=2000 for a longer search.
SETTINGS = settings(
    max_examples=int(os.environ.get("BALANCE_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(cases())
def test_valid_sets_over_b_spanning_the_racks(case: Case) -> None:
    """Point 1."""
    _, after = _plan(case)
    assert sorted(after) == case.selected
    ids = {b.id for b in case.brokers}
    rack = racks_of(case.brokers)
    n_racks = len({r for r in rack.values()})
    for t in case.selected:
        rf = case.rf or len(case.topics[t].replicas[0])
        assert sorted(after[t]) == sorted(case.topics[t].replicas)
        for row in after[t].values():
            assert len(row) == rf == len(set(row)) and set(row) <= ids
            assert spans(row, rack) >= min(rf, n_racks)


def _fixed(case: Case) -> dict[int, int]:
    reps, _ = broker_counts(
        {t: x for t, x in case.topics.items() if t not in case.selected}, {}, [b.id for b in case.brokers]
    )
    return reps


def placement(case: Case) -> Placement:
    """The selected partitions with point 4's cap per (topic, broker)."""
    n = len(case.brokers)
    parts: list[tuple[str, int]] = []
    cap: dict[tuple[str, int], int] = {}
    current: list[set[int]] = []
    for t in case.selected:
        rows = case.topics[t].replicas
        rf = case.rf or len(rows[0])
        parts += [(t, rf)] * len(rows)
        current += [set(rows[p]) for p in sorted(rows)]
        held = Counter(b for r in rows.values() for b in r)
        for b in case.brokers:
            cap[t, b.id] = max(math.ceil(rf * len(rows) / n), max(held.values()))
    return Placement(parts, [b.id for b in case.brokers], racks_of(case.brokers), cap, _fixed(case), current)


def exact(case: Case) -> bool:
    """Whether Placement models every rule (with racks, only RF <= racks is modelled: one per rack) and
    the rules can all be met (with unequal racks, the rack rule can force more onto a small rack than
    point 4 allows; then the rack rule wins and the oracle does not apply)."""
    n_racks = len({b.rack for b in case.brokers})
    p = placement(case)
    if n_racks > 1 and any(rf > n_racks for _, rf in p.parts):
        return False
    return max_flow(p.arcs(dict.fromkeys(p.ids, sum(rf for _, rf in p.parts)))) == sum(
        rf for _, rf in p.parts
    )


@SETTINGS
@given(cases())
@example(GAP_EVEN).xfail(reason="known gap: unequal racks with a subset of topics (docs/balanced.md)")
def test_replicas_as_even_as_possible(case: Case) -> None:
    """Point 2: the best (max, min) achievable under the rules, by max-flow; with every topic selected and
    racks equal (or none), max - min <= 1; no broker fuller than under the Kafka strategy."""
    _, after = _plan(case)
    ids = [b.id for b in case.brokers]
    reps, _ = broker_counts(case.topics, after, ids)
    if exact(case):
        assert (max(reps.values()), min(reps.values())) == placement(case).best()
    if len(case.selected) == len(case.topics) and case.racks in ("none", "equal", "ignored"):
        assert max(reps.values()) - min(reps.values()) <= 1
    # Kafka's plan, where it keeps point 4 too, is one the balanced strategy could have made: ours is
    # no fuller (the contract's promise for unequal racks, checked everywhere it applies).
    kafka = assign_topics(specs_of(case.topics, case.selected, case.rf), case.brokers, case.seed)
    kafka_reps, _ = broker_counts(case.topics, kafka, ids)
    p = placement(case)
    if all(
        n <= p.cap[t, b] for t in kafka for b, n in Counter(x for r in kafka[t].values() for x in r).items()
    ):
        assert max(reps.values()) <= max(kafka_reps.values())


@SETTINGS
@given(cases())
def test_leaders_as_even_as_the_sets_allow(case: Case) -> None:
    """Point 3: global leader counts reach the best (max, min) that max-flow finds for these sets; with
    one topic and nothing else, that is also the topic's own balance."""
    _, after = _plan(case)
    ids = [b.id for b in case.brokers]
    _, leads = broker_counts(case.topics, after, ids)
    unselected = {t: x for t, x in case.topics.items() if t not in case.selected}
    _, fixed = broker_counts(unselected, {}, ids)
    rows = [r for t in case.selected for r in after[t].values()]
    assert (max(leads.values()), min(leads.values())) == best_leader_spread(rows, fixed)


@SETTINGS
@given(cases())
def test_no_concentration(case: Case) -> None:
    """Point 4: no broker holds more of a topic than its even share rounded up or the most any broker
    held of it before, whenever the rack rule leaves that possible (`exact`)."""
    assume(exact(case))
    _, after = _plan(case)
    n = len(case.brokers)
    for t in case.selected:
        before = Counter(b for r in case.topics[t].replicas.values() for b in r)
        now = Counter(b for r in after[t].values() for b in r)
        rf = case.rf or len(case.topics[t].replicas[0])
        limit = max(math.ceil(rf * len(after[t]) / n), max(before.values()))
        assert max(now.values()) <= limit, (t, now, limit)


def lower_bound_by_hand(case: Case, best_max: int, best_min: int) -> int:
    """The contract's lower bound: (a) what brokers below the balanced minimum must receive; (b) what
    must leave brokers above the balanced maximum plus each partition's slot balance (RF change, replicas
    off B); (c) per partition, the slots it lacks or the racks it lacks."""
    ids = [b.id for b in case.brokers]
    rack = racks_of(case.brokers)
    n_racks = len(set(rack.values()))
    fixed = _fixed(case)
    now, _ = broker_counts(case.topics, {}, ids)
    a = sum(max(0, best_min - now[b]) for b in ids if fixed[b] <= best_max)
    b_term = sum(max(0, now[b] - max(best_max, fixed[b])) for b in ids)
    c_term = 0
    for t in case.selected:
        rf = case.rf or len(case.topics[t].replicas[0])
        for row in case.topics[t].replicas.values():
            kept = {x for x in row if x in rack}
            b_term += rf - len(kept)
            c_term += max(0, rf - len(kept), min(rf, n_racks) - len({rack[x] for x in kept}))
    return max(a, b_term, c_term)


@SETTINGS
@given(cases())
@example(GAP_COPIES).xfail(reason="known gap: unequal racks with a subset of topics (docs/balanced.md)")
def test_copies_near_the_lower_bound(case: Case) -> None:
    """Point 5: copies within 10% of the lower bound plus the number of brokers. The true fewest copies
    of a placement as even as ours (min-cost flow) is the reference wherever the rules can be met; the
    contract's bound is met too with racks equal or none, unless even the fewest copies exceed it (the
    bound ignores that a broker holds one replica of a partition, e.g. an RF raised to 4 of 6 brokers
    over a skewed subset), and then the plan has exactly the fewest copies."""
    assume(exact(case))  # the best spread and the fewest copies come from flows that model these cases
    result, after = _plan(case)
    moved = copies({t: case.topics[t].replicas for t in case.selected}, after)
    assert result.stats.copies == moved
    p = placement(case)
    best_max, best_min = p.best()
    fewest = p.fewest_copies(best_max, best_min)
    assert lower_bound_by_hand(case, best_max, best_min) <= fewest  # the bound is a bound
    assert fewest <= moved <= 1.1 * fewest + len(case.brokers), (moved, fewest)
    if case.racks in ("none", "equal", "ignored"):
        bound = lower_bound_by_hand(case, best_max, best_min)
        assert moved <= 1.1 * bound + len(case.brokers) or moved == fewest, (moved, bound, fewest)


@SETTINGS
@given(cases())
def test_idempotent_and_deterministic(case: Case) -> None:
    """Point 6: planning the result again changes nothing; the input's dict order does not matter."""
    _, after = _plan(case)
    again_topics = dict(case.topics)
    for t, parts in after.items():
        again_topics[t] = Topic(t, parts)
    again = plan_balanced(again_topics, case.brokers, specs_of(again_topics, case.selected), case.seed + 1)
    assert assignment(again) == after
    assert again.stats.copies == 0 and again.stats.leader_changes == 0
    shuffled = {
        t: Topic(t, dict(reversed(list(x.replicas.items())))) for t, x in reversed(list(case.topics.items()))
    }
    other = plan_balanced(shuffled, case.brokers[::-1], specs_of(shuffled, case.selected, case.rf), case.seed)
    assert repr(assignment(other)) == repr(after)


def _as_store_views(topics: Mapping[str, Topic]) -> dict[str, Topic]:
    """The same topics over one ReplicaStore, as a loaded snapshot holds them (the planner's numpy path)."""
    store, views = ReplicaStore(), {}
    for name in sorted(topics):
        rows = [topics[name].replicas[p] for p in sorted(topics[name].replicas)]
        start = store.append(np.array([b for row in rows for b in row], dtype=np.int32))
        views[name] = (start, sorted(topics[name].replicas), [len(r) for r in rows])
    store.finish()
    return {n: Topic(n, TopicReplicas.from_rows(store, *views[n])) for n in topics}


@SETTINGS
@given(cases())
def test_snapshot_views_plan_like_dicts(case: Case) -> None:
    _, expected = _plan(case)
    viewed = Case(_as_store_views(case.topics), case.brokers, case.selected, case.rf, case.racks, case.seed)
    _, got = _plan(viewed)
    assert {t: dict(p) for t, p in got.items()} == {t: dict(p) for t, p in expected.items()}
