"""`--balance bytes` (reassign_cli.planning.balanced.bytes) against the contract of issue 18, points 1-6.

Hand-worked examples first, then hypothesis over the random clusters of test_balance (brokers added,
removed, dead; racks equal, unequal, none, ignored; skewed placements; RF up and down; subsets of topics)
with partition sizes lognormal, heavy-tailed (Pareto), one giant partition, or all equal. Every expected
value is computed here from the contract's definitions, independently of the code under test; tiny
clusters are checked against the exact optimum found by trying every placement.
"""

from __future__ import annotations

import itertools
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import Assignment, Broker, Topic
from reassign_cli.planning.balanced.bytes import BytesStats, plan_bytes
from reassign_cli.planning.balanced.planner import Balanced, plan_balanced
from tests.unit.test_balance import (
    Case,
    assignment,
    best_leader_spread,
    broker_counts,
    cases,
    exact,
    placement,
    racks_of,
    spans,
    specs_of,
)

TOL = 0.05

# ---------------------------------------------------------------------------------------------
# Helpers (independent of the code under test)
# ---------------------------------------------------------------------------------------------


def loads(topics: Mapping[str, Topic], result: Assignment, ids: Sequence[int]) -> dict[int, int]:
    """Bytes per broker of `ids`, all topics, with `result` replacing its topics."""
    out = dict.fromkeys(ids, 0)
    for name, topic in topics.items():
        for p, row in result.get(name, topic.replicas).items():
            for b in row:
                if b in out:
                    out[b] += topic.sizes.get(p, 0)
    return out


def copied_bytes(topics: Mapping[str, Topic], after: Assignment) -> int:
    return sum(
        topics[t].sizes[p] * len(set(row) - set(topics[t].replicas[p]))
        for t, parts in after.items()
        for p, row in parts.items()
    )


def mean_bytes(
    topics: Mapping[str, Topic], selected: Sequence[str], rf: int | None, ids: Sequence[int]
) -> float:
    fixed = loads({t: x for t, x in topics.items() if t not in selected}, {}, ids)
    total = sum(fixed.values()) + sum(
        s * (rf or len(topics[t].replicas[p])) for t in selected for p, s in topics[t].sizes.items()
    )
    return total / len(ids)


def lower_bound_by_hand(case: Case, tol: float = TOL) -> float:
    """The contract's bound: the larger of (a) what must leave brokers above mean x (1 + tol), plus what
    each partition must gain (replicas off B, RF increases) net of RF decreases; (b) what must enter
    brokers below mean x (1 - tol); (c) per partition, size x the slots or racks it lacks."""
    ids = [b.id for b in case.brokers]
    rack = racks_of(case.brokers)
    n_racks = len(set(rack.values()))
    mean = mean_bytes(case.topics, case.selected, case.rf, ids)
    now = loads(case.topics, {}, ids)
    a = sum(max(0.0, now[b] - mean * (1 + tol)) for b in ids)
    b_term = sum(max(0.0, mean * (1 - tol) - now[b]) for b in ids)
    c_term = 0.0
    for t in case.selected:
        topic = case.topics[t]
        rf = case.rf or len(topic.replicas[0])
        for p, row in topic.replicas.items():
            kept = {x for x in row if x in rack}
            a += topic.sizes[p] * (rf - len(kept))
            lack = min(rf, n_racks) - len({rack[x] for x in kept})
            c_term += topic.sizes[p] * max(0, rf - len(kept), lack)
    return max(a, b_term, c_term)


def rack_forced_bytes(case: Case) -> float:
    """Per partition, size x the racks it lacks (the rack term of the bound alone)."""
    rack = racks_of(case.brokers)
    n_racks = len(set(rack.values()))
    forced = 0.0
    for t in case.selected:
        topic = case.topics[t]
        rf = case.rf or len(topic.replicas[0])
        for p, row in topic.replicas.items():
            have = {rack[x] for x in row if x in rack}
            forced += topic.sizes[p] * max(0, min(rf, n_racks) - len(have))
    return forced


def largest(case: Case) -> int:
    return max(s for t in case.selected for s in case.topics[t].sizes.values())


def plan(case: Case, tol: float = TOL) -> tuple[Balanced, BytesStats, Assignment]:
    result, stats = plan_bytes(
        case.topics, case.brokers, specs_of(case.topics, case.selected, case.rf), case.seed, tol
    )
    return result, stats, assignment(result)


def topic(name: str, parts: dict[int, list[int]], sizes: Sequence[int]) -> Topic:
    return Topic(name, parts, sizes=dict(enumerate(sizes)))


# ---------------------------------------------------------------------------------------------
# Hand-worked examples
# ---------------------------------------------------------------------------------------------


def test_a_crowded_broker_swaps_a_large_partition_for_a_small_one() -> None:
    """Brokers 1, 2; RF 1; 100 + 100 bytes on 1, 10 + 10 on 2. Mean 110, band [104.5, 115.5]. Counts
    must stay 2 and 2 (mean 2, band [2, 2]), so a single move (100/120, counts 1/3) is out: the plan
    swaps a 100 for a 10: 110 and 110, 110 bytes copied. The lower bound: 200 - 115.5 = 84.5 must
    leave broker 1 (and as much enter broker 2): 85."""
    t = topic("a", {0: [1], 1: [1], 2: [2], 3: [2]}, [100, 100, 10, 10])
    case = Case({"a": t}, [Broker(1), Broker(2)], ["a"], None, "none", 3)
    _, stats, after = plan(case)
    assert loads(case.topics, after, [1, 2]) == {1: 110, 2: 110}
    assert copied_bytes(case.topics, after) == 110
    assert stats.lower_bound == 85
    assert (stats.max_dev(stats.before), stats.max_dev(stats.after)) == (90 / 110, 0.0)
    assert Counter(b for row in after["a"].values() for b in row) == {1: 2, 2: 2}


def test_an_added_broker_gets_the_mean() -> None:
    """Brokers 1, 2 hold 3 partitions of 10 bytes each; broker 3 is added. Mean 20, band [19, 21]:
    broker 3 takes one partition from each (20 bytes copied); lower bound max(2 x 9, 19) = 19."""
    t = topic("a", {p: [1 + p % 2] for p in range(6)}, [10] * 6)
    case = Case({"a": t}, [Broker(1), Broker(2), Broker(3)], ["a"], None, "none", 1)
    _, stats, after = plan(case)
    assert loads(case.topics, after, [1, 2, 3]) == {1: 20, 2: 20, 3: 20}
    assert copied_bytes(case.topics, after) == 20 and stats.lower_bound == 19


def test_stop_at_the_band_edge() -> None:
    """Brokers 1, 2 with partitions of 1 byte: 60 on 1, 40 on 2 (counts kept in band [45, 55] by
    tolerance 0.10: mean 50, band [45, 55]). Broker 1 is brought to 55 by 5 moves, not to the mean (10)."""
    t = topic("a", {p: [1 if p < 60 else 2] for p in range(100)}, [1] * 100)
    case = Case({"a": t}, [Broker(1), Broker(2)], ["a"], None, "none", 5)
    _, stats, after = plan(case, tol=0.10)
    assert loads(case.topics, after, [1, 2]) == {1: 55, 2: 45}
    assert copied_bytes(case.topics, after) == 5 == stats.lower_bound


def test_a_giant_partition_stays_and_counts_even_out() -> None:
    """Broker 1 holds one partition of 1000 bytes, broker 2 four of 10. No move brings the bytes closer
    (the giant alone exceeds the band); the counts (1 and 4, mean 2.5, band [2, 3]) need one small
    partition on broker 1: 10 bytes copied, broker 1 at 1010."""
    t = topic("a", {0: [1], 1: [2], 2: [2], 3: [2], 4: [2]}, [1000, 10, 10, 10, 10])
    case = Case({"a": t}, [Broker(1), Broker(2)], ["a"], None, "none", 2)
    _, _, after = plan(case)
    assert loads(case.topics, after, [1, 2]) == {1: 1010, 2: 30}
    assert after["a"][0] == [1]


def test_already_within_tolerance_is_an_empty_plan() -> None:
    t = topic("a", {0: [1, 2], 1: [2, 3], 2: [3, 1]}, [100, 98, 103])
    case = Case({"a": t}, [Broker(1), Broker(2), Broker(3)], ["a"], None, "none", 9)
    result, _, after = plan(case)
    assert after == {"a": t.replicas} and result.stats.copies == 0


def test_unselected_topics_count_but_never_move() -> None:
    """Topic `big` (unselected) puts 300 bytes on broker 1; `small` has three partitions of 50 on broker 1
    and one on broker 2 (loads 450 / 50, mean 250). Moving `small` only, the closest is 350 / 150: two
    moves, broker 2 then holds 3 of `small`, the most any broker held before (point 4's cap)."""
    big = topic("big", {0: [1]}, [300])
    small = topic("small", {0: [1], 1: [1], 2: [1], 3: [2]}, [50] * 4)
    case = Case({"big": big, "small": small}, [Broker(1), Broker(2)], ["small"], None, "none", 4)
    _, _, after = plan(case)
    assert loads(case.topics, after, [1, 2]) == {1: 350, 2: 150}
    assert copied_bytes(case.topics, after) == 100


def test_a_replan_finds_the_count_band_the_plan_had() -> None:
    """Point 6 (found by hypothesis, shrunk). Racks r0 = {1, 3, 4, 6}, r1 = {7}, r2 = {2, 5}. Unselected
    t1 (1, 1 and 2 bytes) on [6, 1, 7], [4, 6, 3], [5, 7, 1]: counts 2, 0, 1, 1, 1, 2, 2 on brokers 1-7,
    bytes 3, 0, 1, 1, 2, 2, 3. Selected t0, three partitions of 1 byte on [2, 4], [5, 3], [5, 1], RF
    raised to 4 over 3 racks: each partition one replica on 7, at most 2 per rack.

    The count band. 21 replicas over 7 brokers: mean 3, +-10% gives [3, 3]. The rack rule's counts:
    water-filling t0's 12 replicas reaches level 3 (everyone up to 3); r1 takes 3 (broker 7 ends at 5);
    at level 3 r0 has room for 1 + 2 + 2 + 1 = 6 and r2 for 3 + 2 = 5, and together they take 9, so r0
    takes 4 to 6 and r2 3 to 5: brokers 1, 3, 4, 6 (2, 1, 1, 2 now) each end with 2 or 3, brokers 2, 5
    (0, 1) with 2 or 3 too. Band: [2, 3] for brokers 1-6, [3, 5] for 7, whatever the counts now.

    Before the fix the band took --balance replicas' one target, whose ties go to the brokers holding
    the most now. Before the plan (counts 3, 1, 2, 2, 3, 2, 2) brokers 1 and 5 won them: r2 got 4, so
    broker 5's band was [3, 3] and 6's [2, 3]. The holes were filled, [2, 4, 3, 7], [5, 3, 2, 7],
    [5, 1, 4, 7] (counts 3, 2, 3, 3, 3, 2, 5, bytes 4, 2, 3, 3, 4, 2, 6; mean 24 / 7 = 3.43, band
    [3.26, 3.60]), and no move off 1 or 5 was allowed. Planning that again, brokers 1, 3, 4 (at 3,
    lower ids) won the ties: r0 got 6, broker 5's band became [2, 3], and the replan moved [5, 3, 2, 7]'s
    replica from 5 to 6 (a copy).

    Now: the same holes, then the bytes step: broker 6 (1.26 bytes under the band) takes a replica of
    broker 1 or 5 (0.40 over): 1.14 bytes out of the band either way for 1 copied (above ALPHA = 0.9);
    5's is the leader of [5, 3, 2, 7] (followers move first; [5, 1, 4, 7] cannot lose 5: r0 would hold
    3), so [5, 1, 4, 7] becomes {4, 5, 6, 7}: bytes 3, 2, 3, 3, 4, 3, 6. Nothing else pays: broker 2
    holds t0's cap (2 on a broker of r2, its even share under the rack rule), a replica off 5 to r0 only
    swaps which broker is 0.4 over, and 7 holds the one r1 replica of each partition. The replan sees
    the same band and moves nothing."""
    racks = {1: "r0", 2: "r2", 3: "r0", 4: "r0", 5: "r2", 6: "r0", 7: "r1"}
    t0 = topic("t0", {0: [2, 4], 1: [5, 3], 2: [5, 1]}, [1, 1, 1])
    t1 = topic("t1", {0: [6, 1, 7], 1: [4, 6, 3], 2: [5, 7, 1]}, [1, 1, 2])
    brokers = [Broker(b, racks[b]) for b in sorted(racks)]
    case = Case({"t0": t0, "t1": t1}, brokers, ["t0"], 4, "unequal", 0)
    _, _, after = plan(case)
    assert [set(row) for _, row in sorted(after["t0"].items())] == [{2, 3, 4, 7}, {2, 3, 5, 7}, {4, 5, 6, 7}]
    assert loads(case.topics, after, list(racks)) == {1: 3, 2: 2, 3: 3, 4: 3, 5: 4, 6: 3, 7: 6}
    again = Case(
        {"t0": topic("t0", dict(after["t0"]), [1, 1, 1]), "t1": t1}, brokers, ["t0"], None, "unequal", 1
    )
    result, _, replanned = plan(again)
    assert replanned == after and result.stats.copies == 0 and result.stats.leader_changes == 0


# ---------------------------------------------------------------------------------------------
# Random clusters
# ---------------------------------------------------------------------------------------------


@dataclass
class Sized:
    case: Case
    kind: str


@st.composite
def sized(draw: st.DrawFn) -> Sized:
    case = draw(cases())
    kind = draw(st.sampled_from(["lognormal", "heavy", "giant", "equal"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    topics = {}
    for name, t in case.topics.items():
        n = len(t.replicas)
        if kind == "lognormal":
            s = rng.lognormal(16, 1.5, n)
        elif kind == "heavy":
            s = (rng.pareto(1.2, n) + 1) * 1e6
        elif kind == "giant":
            s = rng.uniform(1e6, 2e6, n)
        else:
            s = np.full(n, 1 << 20)
        topics[name] = Topic(
            name, t.replicas, sizes={p: int(x) for p, x in zip(sorted(t.replicas), s, strict=True)}
        )
    if kind == "giant":
        name = min(topics)
        topics[name].sizes[0] = 10**9
    return Sized(Case(topics, case.brokers, case.selected, case.rf, case.racks, case.seed), kind)


SETTINGS = settings(
    max_examples=int(os.environ.get("BALANCE_EXAMPLES", "200")),
    deadline=None,
    # The tiny clusters' assume() rejects most draws by design (only those with an exact optimum to
    # compare): the health check then failed about one run in three.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@SETTINGS
@given(sized())
def test_valid_and_rack_aware(s: Sized) -> None:
    """Point 1."""
    case = s.case
    _, _, after = plan(case)
    ids = {b.id for b in case.brokers}
    rack = racks_of(case.brokers)
    for t in case.selected:
        rf = case.rf or len(case.topics[t].replicas[0])
        assert sorted(after[t]) == sorted(case.topics[t].replicas)
        for row in after[t].values():
            assert len(row) == rf == len(set(row)) and set(row) <= ids
            assert spans(row, rack) >= min(rf, len(set(rack.values())))


@SETTINGS
@given(sized())
def test_bytes_within_the_band(s: Sized) -> None:
    """Point 2: with every topic selected and racks equal or none, every broker within mean +-
    max(tolerance x mean, the largest partition), whenever the rules can be met (`exact`)."""
    case = s.case
    assume(set(case.selected) == set(case.topics) and case.racks in ("none", "equal", "ignored"))
    assume(exact(case))
    _, stats, after = plan(case)
    ids = [b.id for b in case.brokers]
    mean = mean_bytes(case.topics, case.selected, case.rf, ids)
    slack = max(TOL * mean, largest(case))
    got = loads(case.topics, after, ids)
    assert all(abs(got[b] - mean) <= slack + 1e-6 for b in ids), (got, mean, slack)
    assert stats.after.tolist() == [got[b] for b in ids]
    assert math.isclose(stats.mean, mean)


@SETTINGS
@given(sized())
def test_counts_and_leaders_stay_even(s: Sized) -> None:
    """Point 3: replica counts within +-10% of the mean count (rounded out to integers) or no more
    spread than before; preferred leaders max - min as small as the replica sets allow (max-flow)."""
    case = s.case
    _, _, after = plan(case)
    ids = [b.id for b in case.brokers]
    before, _ = broker_counts(case.topics, {}, ids)
    reps, leads = broker_counts(case.topics, after, ids)
    mc = sum(reps.values()) / len(ids)
    lo, hi = math.floor(0.9 * mc), math.ceil(1.1 * mc)
    if exact(case):  # the rack rule or a subset may force counts out of the band: the best (max-flow)
        best_max, best_min = placement(case).best()
        lo, hi = min(lo, best_min), max(hi, best_max)
    in_band = all(lo <= c <= hi for c in reps.values())
    spread = max(before.values()) - min(before.values())
    if not exact(case):  # the rack rule beyond one replica per rack, or point 4 forced: no worse than
        # --balance replicas (tested against max-flow where the rules can all be met)
        by_count = broker_counts(
            case.topics,
            assignment(
                plan_balanced(
                    case.topics, case.brokers, specs_of(case.topics, case.selected, case.rf), case.seed
                )
            ),
            ids,
        )[0]
        spread = max(spread, max(by_count.values()) - min(by_count.values()))
    assert in_band or max(reps.values()) - min(reps.values()) <= spread
    fixed: dict[int, int] = dict.fromkeys(ids, 0)
    rows: list[list[int]] = []
    for name, t in case.topics.items():
        for row in after.get(name, t.replicas).values():
            if name in after:
                rows.append(row)
            elif row and row[0] in fixed:
                fixed[row[0]] += 1
    best = best_leader_spread(rows, fixed)
    assert max(leads.values()) - min(leads.values()) <= best[0] - best[1]


@SETTINGS
@given(sized())
def test_no_concentration(s: Sized) -> None:
    """Point 4, whenever the rack rule leaves it possible."""
    case = s.case
    assume(exact(case))
    _, _, after = plan(case)
    n = len(case.brokers)
    for t in case.selected:
        before = Counter(b for r in case.topics[t].replicas.values() for b in r)
        now = Counter(b for r in after[t].values() for b in r)
        rf = case.rf or len(case.topics[t].replicas[0])
        assert max(now.values()) <= max(math.ceil(rf * len(after[t]) / n), max(before.values()))


# Found by hypothesis (not derandomized), as it shrank it: t0 (RF 1, 9 partitions, 153.7 MB in all) the only
# topic selected, brokers 1-3 in rack r0 and 4-6 in r1, t1-t3 unselected (broker 3 holds 7 of their
# replicas, 56.3 MB). Mean 72.28 MB, band 68.66-75.89 MB, count band [6, 7] (38 replicas / 6 = 6.33).
# Bound: max(a, b, c) = 72.13 MB (a: 146.59 - 75.89 on broker 1 plus 77.31 - 75.89 on broker 2), so at
# most 1.10 x 72.13 + 2 x 34.55 = 148.45 MB may be copied. The plan copies every byte of t0 (153.73 MB)
# and still leaves 26.2 MB outside the band (broker 3 forced to 56.26 by its 7 unselected replicas, 5 at
# 85.55, 6 at 77.93): the count step's greedy moves (each the best for the bytes alone) left broker 5 at
# the bottom of its count band holding 32.3 MB of t0 and no small replica where a swap could reach it.
# Trying all 5^9 placements of t0 (broker 3 can take none: it is at 7) with counts in [6, 7]: 124.2 MB
# copied reaches 22.1 MB outside (1: 80.30, 2: 75.27, 4: 66.71, 5: 78.48, 6: 76.63), and 120.2 MB
# reaches 26.1 MB outside, both under 148.45: a planner miss, not an impossible bound. Not fixed yet.
FEWEST_BYTES_MISS = Sized(
    Case(
        {
            "t0": topic(
                "t0",
                {0: [1], 1: [1], 2: [1], 3: [1], 4: [1], 5: [3], 6: [6], 7: [2], 8: [2]},
                [14922434, 30475304, 14587209, 1258289, 34553997, 17357961, 3971165, 21245956, 15353570],
            ),
            "t1": topic(
                "t1",
                {0: [1, 2], 1: [3, 4], 2: [4, 5], 3: [2, 3], 4: [4, 5], 5: [3, 5]},
                [13814077, 9273146, 20177314, 2944115, 6959617, 4311606],
            ),
            "t2": topic(
                "t2",
                {0: [1, 3, 4, 5], 1: [1, 2, 3, 6], 2: [1, 2, 3, 4], 3: [2, 3, 4, 6]},
                [21818511, 9431664, 5730508, 2750071],
            ),
            "t3": topic("t3", {0: [2]}, [6041794]),
        },
        [Broker(b, "r0" if b <= 3 else "r1") for b in range(1, 7)],
        ["t0"],
        None,
        "equal",
        0,
    ),
    "lognormal",
)


@SETTINGS
@given(sized())
@example(FEWEST_BYTES_MISS).xfail(
    reason="known planner miss: the count step's greedy moves (see FEWEST_BYTES_MISS)"
)
def test_fewest_bytes(s: Sized) -> None:
    """Point 5: copied bytes <= 1.10 x the lower bound + 2 x the largest partition; the bound is the
    planner's too."""
    case = s.case
    _, stats, after = plan(case)
    bound = lower_bound_by_hand(case)
    assert abs(stats.lower_bound - bound) <= 1
    # Copies that the rack rule forces (point 1, which outranks point 5) come on top: the bound is the
    # larger of the balance and rack terms, but a plan may need both (worked by hand for a case
    # hypothesis found: 5 brokers in racks 1/1/3, 7 copies needed where max(a, b, c) is 4.2).
    allowed = 1.10 * bound + 2 * largest(case) + rack_forced_bytes(case)
    assert copied_bytes(case.topics, after) <= allowed


# Found by hypothesis: the first plan left broker 9 one replica under the count band --balance replicas'
# tie-broken target gave it, and the replan's target (its ties broken by the plan's counts) let broker
# 6 give one. Shrunk and worked by hand in test_a_replan_finds_the_count_band_the_plan_had.
REPLAN_BAND = Sized(
    Case(
        {
            "t0": topic(
                "t0",
                {0: [1, 6], 1: [6, 1], 2: [1, 3], 3: [3, 6], 4: [1, 2], 5: [2, 1]},
                [14922434, 30475304, 14587209, 1258289, 34553997, 17357961],
            ),
            "t1": topic(
                "t1",
                {
                    0: [1, 3, 4],
                    1: [4, 6, 1],
                    2: [1, 3, 6],
                    3: [1, 5, 6],
                    4: [1, 2, 4],
                    5: [1, 2, 3],
                    6: [4, 1, 5],
                },
                [3971165, 21245956, 15353570, 13814077, 9273146, 20177314, 2944115],
            ),
        },
        [
            Broker(b, r)
            for b, r in zip(range(1, 10), ["r2", "r0", "r1", "r0", "r2", "r1", "r0", "r1", "r1"], strict=True)
        ],
        ["t0"],
        4,
        "unequal",
        0,
    ),
    "lognormal",
)


@SETTINGS
@given(sized())
@example(REPLAN_BAND)
def test_idempotent_and_deterministic(s: Sized) -> None:
    """Point 6: planning the result again copies nothing and changes no leader; the same input in
    another dict order gives the same plan."""
    case = s.case
    _, _, after = plan(case)
    again_topics = dict(case.topics)
    for t, parts in after.items():
        again_topics[t] = Topic(t, parts, sizes=case.topics[t].sizes)
    again, _ = plan_bytes(again_topics, case.brokers, specs_of(again_topics, case.selected), case.seed + 1)
    assert assignment(again) == after
    assert again.stats.copies == 0 and again.stats.leader_changes == 0
    shuffled = {
        t: Topic(t, dict(reversed(list(x.replicas.items()))), sizes=x.sizes)
        for t, x in reversed(list(case.topics.items()))
    }
    other, _ = plan_bytes(shuffled, case.brokers[::-1], specs_of(shuffled, case.selected, case.rf), case.seed)
    assert repr(assignment(other)) == repr(after)


# ---------------------------------------------------------------------------------------------
# Tiny clusters against the exact optimum
# ---------------------------------------------------------------------------------------------


@st.composite
def tiny(draw: st.DrawFn) -> tuple[Case, list[int]]:
    n = draw(st.integers(2, 3))
    n_parts = draw(st.integers(2, 6))
    sizes = draw(st.lists(st.integers(1, 1000), min_size=n_parts, max_size=n_parts))
    pool = draw(st.integers(1, n))  # brokers holding data now (the others are added)
    where = draw(st.lists(st.integers(1, pool), min_size=n_parts, max_size=n_parts))
    t = topic("a", {p: [b] for p, b in enumerate(where)}, sizes)
    return Case(
        {"a": t}, [Broker(i) for i in range(1, n + 1)], ["a"], None, "none", draw(st.integers(0, 99))
    ), sizes


def optimum(case: Case, sizes: list[int]) -> tuple[float, int] | None:
    """(the least worst deviation from the mean any RF-1 placement within the count band and the cap
    reaches, the fewest bytes a placement within the tolerance band copies (None: none is))."""
    ids = [b.id for b in case.brokers]
    n, parts = len(ids), len(sizes)
    mean = sum(sizes) / n
    now = [case.topics["a"].replicas[p][0] for p in range(parts)]
    cap = max(math.ceil(parts / n), max(Counter(now).values()))
    mc = parts / n
    band = (min(math.ceil(0.9 * mc - 1e-9), math.floor(mc)), max(math.floor(1.1 * mc + 1e-9), math.ceil(mc)))
    best_dev, fewest = math.inf, None
    for placed in itertools.product(ids, repeat=parts):
        counts = Counter(placed)
        if any(not band[0] <= counts[b] <= band[1] for b in ids) or max(counts.values()) > cap:
            continue
        load = dict.fromkeys(ids, 0)
        for p, b in enumerate(placed):
            load[b] += sizes[p]
        dev = max(abs(x - mean) for x in load.values())
        best_dev = min(best_dev, dev)
        if dev <= TOL * mean:
            cost = sum(sizes[p] for p in range(parts) if placed[p] != now[p])
            fewest = cost if fewest is None else min(fewest, cost)
    return (best_dev, fewest) if fewest is not None else None


@SETTINGS
@given(tiny())
def test_tiny_clusters_against_the_exact_optimum(t: tuple[Case, list[int]]) -> None:
    """Where some placement is within the band: ours is within max(band, largest), and copies at most
    1.10 x the fewest such a placement copies + 2 x the largest partition."""
    case, sizes = t
    best = optimum(case, sizes)
    assume(best is not None)
    assert best is not None
    _, _, after = plan(case)
    ids = [b.id for b in case.brokers]
    mean = sum(sizes) / len(ids)
    got = loads(case.topics, after, ids)
    assert max(abs(x - mean) for x in got.values()) <= max(TOL * mean, max(sizes))
    assert copied_bytes(case.topics, after) <= 1.10 * best[1] + 2 * max(sizes)
