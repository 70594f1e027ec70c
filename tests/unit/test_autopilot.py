"""The autopilot's decision of one tick (reassign_cli.core.autopilot, issue 26 items 2-4 and 7).

Every expected value is worked out by hand in the comments from the issue's rules; the hypothesis
properties use the balanced planner only to make their input (a plan at --tolerance 0.05), and the
expectation is the rule (judged balanced at --trigger 0.10: no flapping).
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from reassign_cli.core import autopilot as ap
from reassign_cli.core.autopilot import BrokerState, Ledger
from reassign_cli.core.model import Assignment, Broker, Capacity, Topic
from reassign_cli.planning.balanced.planner import count_range
from tests.unit.test_balance import Case, best_leader_spread, broker_counts, exact, specs_of
from tests.unit.test_balance_bytes import Sized, loads, plan, sized, topic
from tests.unit.test_balance_capacity import _plan as plan_with_capacities
from tests.unit.test_balance_capacity import caps_allow, roomy

GiB = 1 << 30
SETTINGS = settings(
    max_examples=int(os.environ.get("BALANCE_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def gib(
    bid: int,
    size: float,
    replicas: int = 10,
    leaders: int = 5,
    largest: float = 1,
    capacity: int | None = None,
) -> BrokerState:
    """A broker of `size` GiB whose largest partition is `largest` GiB."""
    return BrokerState(
        bid, replicas, leaders, bytes=int(size * GiB), capacity=capacity, largest=int(largest * GiB)
    )


# ---------------------------------------------------------------------------------------------
# The rules, by hand
# ---------------------------------------------------------------------------------------------


def test_a_new_empty_broker_is_a_rebalance() -> None:
    # 30 replicas over 4 brokers: mean 7.5, count band ceil(6.75)=7 .. max(floor(8.25), 8)=8, so broker 4
    # (0, low edge 7 >= 1) holds no replica and brokers 1-3 (10) are above 8. Bytes 30 GiB / 4 = 7.5 GiB,
    # slack max(0.75, 1) = 1 GiB: 6.5-8.5 GiB, so 10 GiB is out. Leaders 4, 3, 3, 0: broker 4 holds no
    # replica to lead (its own line); among the others 4 - 3 <= 2.
    brokers = [gib(1, 10, 10, 4), gib(2, 10, 10, 3), gib(3, 10, 10, 3), BrokerState(4, 0, 0, bytes=0)]
    d = ap.decide(brokers)
    assert d.kind == "rebalance"
    assert d.reasons == (
        "broker 4 holds no replica",
        "broker 1: 10.0 GiB, outside 6.5-8.5 GiB (goal 7.5 GiB, trigger 10%)",
        "broker 2: 10.0 GiB, outside 6.5-8.5 GiB (goal 7.5 GiB, trigger 10%)",
        "broker 3: 10.0 GiB, outside 6.5-8.5 GiB (goal 7.5 GiB, trigger 10%)",
        "broker 1: 10 replicas, outside 7-8 (the mean count ±10%)",
        "broker 2: 10 replicas, outside 7-8 (the mean count ±10%)",
        "broker 3: 10 replicas, outside 7-8 (the mean count ±10%)",
    )
    # worst: broker 4, |0 - 7.5| / 7.5 = 100% of its goal
    assert d.worst == ap.Deviation(4, 1.0, "bytes")


def test_the_issue_example_line() -> None:
    # 180 GiB over 4: goal 45; the largest partition 5 GiB > 10% (4.5): band 40.0-50.0 GiB.
    d = ap.decide([gib(1, 61, largest=5), gib(2, 40), gib(3, 40), gib(4, 39)])
    assert d.kind == "rebalance"
    assert d.reasons == (
        "broker 1: 61.0 GiB, outside 40.0-50.0 GiB (goal 45.0 GiB, trigger 10%)",
        "broker 4: 39.0 GiB, outside 40.0-50.0 GiB (goal 45.0 GiB, trigger 10%)",
    )
    assert d.worst is not None and d.worst.broker == 1 and abs(d.worst.fraction - 16 / 45) < 1e-12


def test_just_inside_the_trigger_is_balanced() -> None:
    # goal 45 GiB, trigger band 40.5-49.5 GiB: both edges inside; worst 4.5 / 45 = 10%, broker 1 first.
    d = ap.decide([gib(1, 49.5), gib(2, 40.5), gib(3, 45), gib(4, 45)])
    assert d.kind == "balanced" and d.reasons == ()
    assert d.worst is not None and d.worst.broker == 1 and abs(d.worst.fraction - 0.1) < 1e-9
    assert d.line() == "balanced: worst deviation 10.0% (broker 1, bytes)"


def test_just_outside_the_trigger_is_a_rebalance() -> None:
    d = ap.decide([gib(1, 50), gib(2, 40), gib(3, 45), gib(4, 45)])
    assert d.kind == "rebalance"
    assert d.reasons == (
        "broker 1: 50.0 GiB, outside 40.5-49.5 GiB (goal 45.0 GiB, trigger 10%)",
        "broker 2: 40.0 GiB, outside 40.5-49.5 GiB (goal 45.0 GiB, trigger 10%)",
    )


def test_outside_the_tolerance_but_inside_the_trigger_is_balanced() -> None:
    # 48 and 42 GiB are outside the planner's 5% (42.75-47.25) but inside the trigger's 10%: a plan
    # would start, and its result would then sit inside 5%; the trigger leaves it alone (no flapping).
    assert ap.decide([gib(1, 48), gib(2, 42), gib(3, 45), gib(4, 45)]).kind == "balanced"


def test_a_wider_trigger() -> None:
    # --trigger 0.2: 45 ± 9 = 36-54 GiB holds 50 and 40.
    assert ap.decide([gib(1, 50), gib(2, 40), gib(3, 45), gib(4, 45)], trigger=0.2).kind == "balanced"


def test_the_largest_partition_of_the_cluster_widens_every_band() -> None:
    # 120 GiB over 3: goal 40, the largest partition 100 GiB: band -60..140 for every broker, so brokers
    # 2 and 3 (10 GiB, holding only 2 GiB partitions) are inside too. With "the largest partition on it"
    # they would be outside 36-44 forever, and no plan could bring them in (the planner's band is the
    # cluster's largest partition).
    d = ap.decide([gib(1, 100, 7, 3, 100), gib(2, 10, 7, 3, 2), gib(3, 10, 7, 3, 2)])
    assert d.kind == "balanced"


def test_utilization_with_capacities() -> None:
    # capacities 100 and 300 GiB: shares 0.5 and 1.5 of 200 GiB / 2 = 100: goals 50 and 150 GiB.
    even = [gib(1, 50, 10, capacity=100 * GiB), gib(2, 150, 30, capacity=300 * GiB)]
    d = ap.decide(even)
    assert d.kind == "balanced" and d.worst == ap.Deviation(1, 0.0, "utilization")
    # 100 and 100 GiB: broker 1 outside 45-55 GiB (45.0-55.0% of 100), broker 2 (33.3%) outside
    # 135-165 GiB (45.0-55.0% of 300). Counts 10 and 30 are their shares of the mean 20 (9-11, 27-33).
    uneven = [gib(1, 100, 10, capacity=100 * GiB), gib(2, 100, 30, capacity=300 * GiB)]
    d = ap.decide(uneven)
    assert d.reasons == (
        "broker 1: 100.0% used, outside 45.0-55.0% (goal 50.0%, trigger 10%)",
        "broker 2: 33.3% used, outside 45.0-55.0% (goal 50.0%, trigger 10%)",
    )


def test_a_tiny_utilization_is_said_with_the_decimals_that_tell_its_band_apart() -> None:
    # 2 and 6 MB on disks of 500 GB each: goal 4 MB = 0.0008% of 500 GB, band +-10%: 3.6-4.4 MB =
    # 0.00072-0.00088%; broker 1 at 0.0004%, broker 2 at 0.0012%. At one decimal all of it read 0.0%.
    disk = 500 * 10**9
    d = ap.decide([BrokerState(b, 10, 3, bytes=n * 10**6, capacity=disk) for b, n in ((1, 2), (2, 6))])
    assert d.reasons == (
        "broker 1: 0.0004% used, outside 0.0007-0.0009% (goal 0.0008%, trigger 10%)",
        "broker 2: 0.0012% used, outside 0.0007-0.0009% (goal 0.0008%, trigger 10%)",
    ), d.reasons


def test_replica_counts_when_sizes_are_unknown() -> None:
    # 44 replicas over 4: mean 11, band ceil(9.9)=10 .. floor(12.1)=12.
    d = ap.decide([BrokerState(b, c, 3) for b, c in [(1, 10), (2, 10), (3, 10), (4, 14)]])
    assert d.kind == "rebalance"
    assert d.reasons == ("broker 4: 14 replicas, outside 10-12 (the mean count ±10%)",)
    d = ap.decide([BrokerState(b, c, 3) for b, c in [(1, 10), (2, 10), (3, 12), (4, 12)]])
    assert d.kind == "balanced"
    # worst: |10 - 11| / 11, broker 1 first
    assert d.worst is not None and d.worst.broker == 1 and d.worst.measure == "replicas"
    assert abs(d.worst.fraction - 1 / 11) < 1e-12


def test_leaders_that_follow_the_counts() -> None:
    # One replica per partition, disks of 100, 300 and 200 GiB: shares 0.5, 1.5, 1 of the mean count
    # 18 / 3 = 6: 3, 9, 6 (bands 2.7-3.3 -> 3-3, 8.1-9.9 -> 9-9, 5.4-6.6 -> 6-6, each widened to the
    # even 6-6: 3-6, 6-9, 6-6). Bytes 30, 90, 60 GiB are exactly the goals (180 x the shares / 3).
    # Every broker leads all it holds: spread 9 - 3 = 6, yet no broker could lead more.
    brokers = [
        gib(1, 30, 3, 3, capacity=100 * GiB),
        gib(2, 90, 9, 9, capacity=300 * GiB),
        gib(3, 60, 6, 6, capacity=200 * GiB),
    ]
    assert ap.decide(brokers).kind == "balanced"


def test_counts_with_capacities_hold_the_share_and_the_mean() -> None:
    # The bands of the test above: 3-6, 6-9, 6-6. Even counts (6, 6, 6) are in; 7 on broker 1 is not.
    caps = (100, 300, 200)
    even = [gib(b, x, 6, 3, capacity=c * GiB) for b, x, c in zip((1, 2, 3), (30, 90, 60), caps, strict=True)]
    assert ap.decide(even).kind == "balanced"
    counts = (7, 5, 6)
    off = [
        gib(b, x, n, 3, capacity=c * GiB)
        for b, x, n, c in zip((1, 2, 3), (30, 90, 60), counts, caps, strict=True)
    ]
    assert ap.decide(off).reasons == (
        "broker 1: 7 replicas, outside 3-6 (its capacity's share of the mean count ±10%, or the mean)",
        "broker 2: 5 replicas, outside 6-9 (its capacity's share of the mean count ±10%, or the mean)",
    )


def test_leaders_a_broker_must_keep() -> None:
    # Broker 1 leads 6, all of them partitions it alone holds (one replica each): it can give none away.
    # Broker 3 leads 2 of its 6 and could take more, but from no one: no rule. Without must_lead,
    # 6 - 2 = 4 > 2 would be a rebalance no plan can fix.
    brokers = [BrokerState(1, 7, 6, must_lead=6), BrokerState(2, 7, 4), BrokerState(3, 7, 2)]
    assert ap.decide(brokers).kind == "balanced"
    brokers[0] = BrokerState(1, 7, 6, must_lead=3)  # three it could hand over: 6 - 2 = 4 > 2
    assert ap.decide(brokers).reasons == (
        "preferred leaders spread by 4 (broker 1: 6, broker 3: 2 of its 7 replicas; at most 2)",
    )
    # unless the replica sets allow no less than 4 (the caller's floor)
    assert ap.decide(brokers, leader_floor=4).kind == "balanced"
    assert ap.decide(brokers, leader_floor=3).reasons[0].endswith("at most 3)")


def test_counts_the_rack_rule_forces_are_not_out_of_band() -> None:
    brokers = [BrokerState(b, c, 3) for b, c in [(1, 10), (2, 10), (3, 10)]]
    brokers.append(BrokerState(4, 14, 3, forced_counts=(10, 14)))
    assert ap.decide(brokers).kind == "balanced"


def test_preferred_leaders_spread() -> None:
    # spread 3 > 2: rebalance; spread 2: balanced
    d = ap.decide([BrokerState(b, 10, lead) for b, lead in [(1, 5), (2, 5), (3, 5), (4, 2)]])
    assert d.reasons == (
        "preferred leaders spread by 3 (broker 1: 5, broker 4: 2 of its 10 replicas; at most 2)",
    )
    assert (
        ap.decide([BrokerState(b, 10, lead) for b, lead in [(1, 5), (2, 5), (3, 4), (4, 3)]]).kind
        == "balanced"
    )


def test_excluded_and_unregistered_brokers_are_not_judged() -> None:
    # B = {1, 2, 3}: 30 replicas over 3 = 10 each; broker 4 (excluded) and 5 (not registered) are empty.
    brokers = [BrokerState(b, 10, 4) for b in (1, 2, 3)]
    brokers += [BrokerState(4, 0, 0), BrokerState(5, 0, 0, registered=False)]
    assert ap.decide(brokers, exclude=[4]).kind == "balanced"
    assert ap.decide(brokers).reasons[0] == "broker 4 holds no replica"


def test_fewer_replicas_than_brokers_is_not_an_empty_broker() -> None:
    # 2 replicas over 3 brokers: mean 0.67, band 0..1: someone stays empty whatever a plan does.
    assert ap.decide([BrokerState(1, 1, 1), BrokerState(2, 1, 1), BrokerState(3, 0, 0)]).kind == "balanced"


def test_skipped_for_a_foreign_reassignment_or_a_pause() -> None:
    brokers = [BrokerState(4, 0, 0), BrokerState(1, 10, 5)]
    d = ap.decide(brokers, foreign="orders-0, orders-1 (started by someone else)")
    assert (d.kind, d.reasons) == (
        "skipped",
        ("a reassignment not ours is in progress: orders-0, orders-1 (started by someone else)",),
    )
    d = ap.decide(brokers, paused="paused since 2026-12-01T01:00:00Z by alice@ops1")
    assert (d.kind, d.reasons) == ("skipped", ("paused since 2026-12-01T01:00:00Z by alice@ops1",))


# ---------------------------------------------------------------------------------------------
# The ledger: missing, dead, back
# ---------------------------------------------------------------------------------------------

T0 = 1_764_000_000.0


def ledger_with_3_missing_at(t: float) -> Ledger:
    led = ap.update(Ledger(), [1, 2, 3], [1, 2, 3], T0)
    return ap.update(led, [1, 2], [1, 2, 3], t)


def test_missing_ten_minutes_is_wait() -> None:
    led = ledger_with_3_missing_at(T0 + 60)
    brokers = [BrokerState(1, 10, 5), BrokerState(2, 10, 5), BrokerState(3, 10, 5, registered=False)]
    d = ap.decide(brokers, ledger=led, now=T0 + 60 + 600, dead_after=1800)
    assert d.kind == "wait"
    assert d.dead_at == {3: T0 + 60 + 1800}
    assert d.reasons == (
        # T0 = 1,764,000,000 s = 2025-11-24T16:00:00Z; + 1860 s = 16:31:00
        "broker 3 is missing (for 600 s): dead in 1200 s (at 2025-11-24T16:31:00Z) unless it comes back; "
        "nothing starts until then",
    )


def test_missing_31_minutes_is_heal() -> None:
    led = ledger_with_3_missing_at(T0)
    now = T0 + 31 * 60
    assert ap.dead(led, now, 1800) == {3}
    d = ap.decide([BrokerState(1, 10, 5), BrokerState(2, 10, 5)], ledger=led, now=now, dead_after=1800)
    assert d.kind == "heal" and d.dead == {3}
    assert d.reasons == (
        "broker 3 has been missing for 1860 s (--dead-after 1800 s): its replicas go to live brokers",
    )


def test_dead_at_exactly_dead_after() -> None:
    led = ledger_with_3_missing_at(T0)
    assert ap.dead(led, T0 + 1799, 1800) == set() and ap.dead(led, T0 + 1800, 1800) == {3}


def test_back_before_dead_after_clears_its_time() -> None:
    led = ledger_with_3_missing_at(T0)
    back = ap.update(led, [1, 2, 3], [1, 2, 3], T0 + 900)
    assert back.missing_since == {1: None, 2: None, 3: None}
    assert ap.dead(back, T0 + 3600) == set()
    again = ap.update(back, [1, 2], [1, 2, 3], T0 + 1000)  # a new absence starts its own clock
    assert again.missing_since[3] == T0 + 1000
    assert ap.dead(again, T0 + 2799) == set()


def test_one_missing_holds_the_heal_of_another() -> None:
    led = ap.update(Ledger(), [1, 2, 3, 4], [1, 2, 3, 4], T0)
    led = ap.update(led, [1, 2, 4], [1, 2, 3, 4], T0 + 10)  # 3 missing
    led = ap.update(led, [1, 2], [1, 2, 3, 4], T0 + 2000)  # 4 missing, 3 dead by now
    d = ap.decide([BrokerState(1, 10, 5), BrokerState(2, 10, 5)], ledger=led, now=T0 + 2000)
    assert d.kind == "wait" and set(d.dead_at) == {4}


def test_forgotten_once_missing_and_holding_nothing() -> None:
    led = ledger_with_3_missing_at(T0)
    healed = ap.update(led, [1, 2], [1, 2], T0 + 4000)  # its replicas were moved away
    assert healed.missing_since == {1: None, 2: None}
    # a registered broker that never held a replica is not known; once it holds one, it is
    assert 5 not in ap.update(healed, [1, 2, 5], [1, 2], T0).missing_since
    assert ap.update(healed, [1, 2, 5], [1, 2, 5], T0).missing_since[5] is None


steps = st.lists(
    st.tuples(st.sets(st.integers(0, 9)), st.sets(st.integers(0, 9)), st.integers(0, 5000)), max_size=12
)


@SETTINGS
@given(steps)
def test_ledger_round_trip_and_bound(seq: list[tuple[set[int], set[int], int]]) -> None:
    led, now = Ledger(), T0
    for registered, holding, dt in seq:
        prev = led
        now += dt
        led = ap.update(led, registered, holding, now)
        # bound: only brokers registered or holding replicas (and known to have held some)
        assert set(led.missing_since) <= (registered | holding)
        assert set(led.missing_since) == (set(prev.missing_since) | holding) & (registered | holding)
        for b, t in led.missing_since.items():
            assert (t is None) == (b in registered)
            if t is not None and prev.missing_since.get(b) is not None:
                assert t == prev.missing_since[b]  # the first-missing time is kept
        assert Ledger.from_dict(json.loads(json.dumps(led.to_dict()))) == led


# ---------------------------------------------------------------------------------------------
# No flapping: a plan at --tolerance 0.05 is balanced at --trigger 0.10
# ---------------------------------------------------------------------------------------------


def states(case: Case, after: Assignment, capacity: dict[int, int] | None = None) -> list[BrokerState]:
    """Each broker of B once `after` is done: its replicas, leaders, bytes, largest partition, the
    partitions it alone holds, and the counts the rack rule forces (the planner's count_range, as the
    tick that wires this will give them)."""
    ids = [b.id for b in case.brokers]
    size = loads(case.topics, after, ids)
    reps, leads = broker_counts(case.topics, after, ids)
    largest, alone = dict.fromkeys(ids, 0), dict.fromkeys(ids, 0)
    for name, t in case.topics.items():
        for p, row in after.get(name, t.replicas).items():
            for b in row:
                largest[b] = max(largest[b], t.sizes[p])
            if len(set(row)) == 1 and row[0] in alone:
                alone[row[0]] += 1
    cap = capacity or {}
    forced = count_range(case.topics, case.brokers, specs_of(case.topics, case.selected, case.rf))
    return [
        BrokerState(
            b, reps[b], leads[b], bytes=size[b], capacity=cap.get(b), largest=largest[b],
            forced_counts=forced[b], must_lead=alone[b],
        )
        for b in ids
    ]  # fmt: skip


def largest_of(case: Case) -> int:
    return max((max(t.sizes.values(), default=0) for t in case.topics.values()), default=0)


def test_a_topic_cap_that_keeps_a_big_disk_from_its_goal_is_not_a_planner_miss() -> None:
    """The example hypothesis found (derandomized, 2000 examples): nine 1 MiB partitions of t0, three on
    each of brokers 1-3 (rack r0), RF 1 -> 2 over racks r0 {1,2,3} and r1 {4,5,6}, disks 54, 54, 108 MiB in
    each rack. Each rack holds 9 replicas; broker 3's goal is 4.5 MiB (its disk is twice the others'), but
    t0's cap (point 4: max(ceil(18 / 6), 3 held before) = 3 a broker) keeps it at 3 MiB, outside 3.5-5.5
    MiB. The planner stops at the cap (3 replicas on every broker), the judge says rebalance, and the
    property rules the case out as test_balance_capacity's does (caps_allow)."""
    mib = 1 << 20
    t0 = Topic("t0", {p: [1 + p // 3] for p in range(9)}, sizes=dict.fromkeys(range(9), mib))
    brokers = [Broker(b, "r0" if b <= 3 else "r1") for b in range(1, 7)]
    case = Case({"t0": t0}, brokers, ["t0"], 2, "equal", 0)
    small, big = 54 * mib + 2, 108 * mib + 4
    caps = {b: Capacity(big if b in (3, 6) else small, big if b in (3, 6) else small) for b in range(1, 7)}
    after, _ = plan_with_capacities(case, caps, 1.0)
    ids = list(range(1, 7))
    assert broker_counts(case.topics, after, ids)[0] == dict.fromkeys(ids, 3)  # every broker at t0's cap
    total = sum(c.total for c in caps.values())
    goal = {b: 18 * mib * caps[b].total / total for b in ids}
    assert not caps_allow(case, goal, {b: max(0.10 * goal[b], mib) for b in ids})
    d = ap.decide(states(case, after, {b: caps[b].total for b in ids}), trigger=0.10)
    assert d.kind == "rebalance" and d.reasons[0].startswith("broker 3: 2.8% used, outside 3.2-5.1%"), d


def leader_floor(case: Case, after: Assignment) -> int:
    """The least spread of preferred leaders the rows of `after` allow (max-flow, test_balance's oracle)."""
    rows = [row for name, t in case.topics.items() for row in after.get(name, t.replicas).values()]
    best_max, best_min = best_leader_spread(rows, {b.id: 0 for b in case.brokers})
    return best_max - best_min


@SETTINGS
@given(sized())
def test_a_planned_cluster_is_judged_balanced(s: Sized) -> None:
    case = s.case
    # Where the planner promises its bands (docs/balanced.md points 2 and 3): every topic selected,
    # racks equal or none, and the rules can all be met.
    assume(set(case.selected) == set(case.topics) and case.racks in ("none", "equal", "ignored"))
    assume(exact(case))
    _, _, after = plan(case, 0.05)
    d = ap.decide(states(case, after), trigger=0.10, leader_floor=leader_floor(case, after))
    assert d.kind == "balanced", d.reasons


MIB = 1 << 20


def _one_mib(name: str, rows: list[list[int]]) -> Topic:
    return Topic(name, dict(enumerate(rows)), sizes=dict.fromkeys(range(len(rows)), MIB))


def _six(
    topics: dict[str, Topic], seed: int, units: list[int], unit: int
) -> tuple[Sized, dict[int, Capacity]]:
    """Six brokers, no racks, every topic selected, RF kept; broker b's disk units[b - 1] x unit bytes."""
    case = Case(topics, [Broker(b) for b in range(1, 7)], list(topics), None, "ignored", seed)
    return Sized(case, "equal"), {b: Capacity(k * unit, k * unit) for b, k in enumerate(units, start=1)}


# Found by hypothesis (not derandomized), already minimal. 42 replicas of 1 MiB, disks 3:1:3:3:4:4 (18
# units of 168 MiB): goals 42 x 3/18 = 7, 42/18 = 2.33, 7, 7, 9.33, 9.33 MiB; the trigger's band for
# broker 2 is 2.33 +- max(10%, 1 MiB) = 1.33-3.33 MiB (0.8-2.0%). Count bands, each one's share of the
# mean count 7 +- 10% rounded out: brokers 1, 3, 4 [7, 7], broker 2 (2.33) [2, 3], brokers 5, 6 (9.33)
# [9, 10]. The planner widened each to the even count 7 (what --balance replicas aims at, though no rack
# rule forces it): broker 2's band became [2, 7], so the count step stopped taking replicas off it at 7;
# the bytes step took it to 4 MiB, its four replicas then all t1 rows [2, 5, 6]: no single move helps
# (5 and 6 hold those rows, 1, 3 and 4 are pinned at 7), equal-sized swaps gain nothing: 2.4%, judged
# out. A plan with broker 2 at 3 exists: that one with t1 [2, 5, 6] -> [1, 5, 6] and one of broker 1's
# t3 replicas to broker 6 (counts 7, 3, 7, 7, 9, 9; t1 on broker 1 and t3 on 6 under their caps 6, 4).
CAPACITY_COUNT_STOP = _six(
    {
        "t0": _one_mib("t0", [[1], [2], [4]]),
        "t1": _one_mib("t1", [[2, 3, 4], [1, 2, 3], [2, 1, 3], [4, 1, 2], [1, 2, 4], [1, 3, 4], [1, 2, 3]]),
        "t2": _one_mib("t2", [[1], [1], [1], [3], [3], [3], [4], [4], [4]]),
        "t3": _one_mib("t3", [[1], [1], [1], [1], [2], [2], [3], [3], [3]]),
    },
    1,
    [3, 1, 3, 3, 4, 4],
    176160770,
)

# the partition sizes of CAPACITY_PARTNERS and CAPACITY_FRACTION (one hypothesis draw, two layouts)
SIZES = {
    "t0": [10730442, 7288750, 23222541],
    "t1": [10400351, 3978820, 15285153, 62833571, 36785762, 3092211, 1331568],
    "t2": [3488869, 9454382, 271700, 6400025, 1371113, 2962662, 3927884, 5529178, 16476502],
    "t3": [42447138, 7327888, 69005392, 3276243, 15055668, 34456398, 10231875, 2913166, 2229776],
}


def _drawn(layouts: dict[str, dict[int, list[int]]], disks: list[int]) -> tuple[Sized, dict[int, Capacity]]:
    """Topics t0-t3 of SIZES laid out as `layouts` says, on six brokers with these disk units."""
    return _six({t: topic(t, layout, SIZES[t]) for t, layout in layouts.items()}, 0, disks, 1235325085)


# Found by hypothesis once the band above was no longer widened (it passed before). Disks 3:2:3:3:8:8 (27
# units), 42 replicas: count goals 42 x 3/27 = 4.67, 3.11, 4.67, 4.67, 12.44, 12.44, bands [4, 5], [3, 4],
# [4, 5], [4, 5], [11, 13], [11, 13]. The count step gave only to a broker holding two replicas fewer and
# took only from one holding two more, in raw counts: broker 1 at 8 (3.3 over its goal) could give only to
# brokers at 6 or less (2, 3, 4: at or over their band's top) and brokers 5, 6 at 9 (3.4 under) could take
# only from one at 11 or more (none): the count step stopped with broker 1 at 8 replicas, out of its band,
# though moving one from 1 to 5 brings both nearer their goals. Now "two fewer" is counted from each
# broker's goal (the mean count's share), as it was already where every goal is the mean.
CAPACITY_PARTNERS = _drawn(
    {
        "t0": {0: [1], 1: [1], 2: [1]},
        "t1": {p: [1, 2, 3] for p in range(7)},
        "t2": {p: [1] for p in range(9)},
        "t3": {p: [1] for p in range(9)},
    },
    [3, 2, 3, 3, 8, 8],
)


# Found by hypothesis with "two fewer" counted from each goal: disks 2:2:6:8:8:8 (34 units), 42 replicas:
# count goals 2.47, 2.47, 7.41, 9.88, 9.88, 9.88, bands [2, 3], [2, 3], [7, 8], [9, 10] x 3. The count step
# ended at 3, 3, 6, 10, 10, 10: broker 3 (1.41 under its goal) needed one from a broker at least 2 over
# it, but brokers 4-6 are 0.12 over theirs (1.53 apart) and 1, 2 0.53 over (1.94 apart). Moving one from 4
# to 3 still brings both nearer: 0.12^2 + 1.41^2 = 2.0 before, 0.88^2 + 0.41^2 = 0.94 after; a move from u
# to v does so exactly when u is more than one replica further over its goal than v (the squares fall by
# 2 x (that difference - 1)), which for whole counts is "two more", the rule where every goal is the mean.
CAPACITY_FRACTION = _drawn(
    {
        "t0": {0: [1], 1: [1], 2: [2]},
        "t1": {0: [1, 2, 3], 1: [1, 2, 4], **{p: [1, 2, 3] for p in range(2, 7)}},
        "t2": {p: [1] for p in range(9)},
        "t3": {p: [1] if p < 8 else [2] for p in range(9)},
    },
    [2, 2, 6, 8, 8, 8],
)


def test_a_small_disk_is_planned_to_its_share_of_the_count() -> None:
    """CAPACITY_COUNT_STOP by hand: broker 2 (a third of the others' disk) ends within its count band
    [2, 3] and within 1.33-3.33 MiB; before, it kept 4 replicas (4 MiB, 2.4% of 168 MiB)."""
    s, caps = CAPACITY_COUNT_STOP
    after, _ = plan_with_capacities(s.case, caps, 1.0)
    ids = list(range(1, 7))
    counts = broker_counts(s.case.topics, after, ids)[0]
    assert 2 <= counts[2] <= 3 and 9 <= counts[5] <= 10 and 9 <= counts[6] <= 10, counts
    assert counts[1] == counts[3] == counts[4] == 7, counts


def test_counts_reach_their_capacity_bands_across_brokers_of_unequal_counts() -> None:
    """CAPACITY_PARTNERS by hand: every count ends in its band (see the comment above)."""
    s, caps = CAPACITY_PARTNERS
    after, _ = plan_with_capacities(s.case, caps, 1.0)
    counts = broker_counts(s.case.topics, after, list(range(1, 7)))[0]
    band = {1: (4, 5), 2: (3, 4), 3: (4, 5), 4: (4, 5), 5: (11, 13), 6: (11, 13)}
    assert all(band[b][0] <= counts[b] <= band[b][1] for b in band), counts


def test_a_partner_less_than_two_whole_replicas_nearer_its_goal_still_gives() -> None:
    """CAPACITY_FRACTION by hand: every count ends in its band (see the comment above)."""
    s, caps = CAPACITY_FRACTION
    after, _ = plan_with_capacities(s.case, caps, 1.0)
    counts = broker_counts(s.case.topics, after, list(range(1, 7)))[0]
    band = {1: (2, 3), 2: (2, 3), 3: (7, 8), 4: (9, 10), 5: (9, 10), 6: (9, 10)}
    assert all(band[b][0] <= counts[b] <= band[b][1] for b in band), counts


@SETTINGS
@given(roomy())
@example(CAPACITY_COUNT_STOP)
@example(CAPACITY_PARTNERS)
@example(CAPACITY_FRACTION)
def test_a_planned_cluster_with_capacities_is_judged_balanced(x: tuple[Sized, dict[int, Capacity]]) -> None:
    s, caps = x
    case = s.case
    # Where the planner promises its utilization band (test_balance_capacity's own assumptions).
    assume(set(case.selected) == set(case.topics) and case.racks in ("none", "equal", "ignored"))
    assume(exact(case))
    after, _ = plan_with_capacities(case, caps, 1.0)
    ids = [b.id for b in case.brokers]
    size = loads(case.topics, after, ids)
    cap_total = sum(caps[b].total for b in ids)
    distinct = sum(sum(t.sizes.values()) for t in case.topics.values())
    assume(all(sum(size.values()) * caps[b].total / cap_total <= distinct / 2 for b in ids))
    # Point 4 (no broker holds more of a topic than its cap) ranks before bytes: where it keeps a broker
    # from its utilization band, the planner rightly stops short and the tick judges it out (then plans
    # nothing to move). test_balance_capacity's property assumes the same. Regression:
    # test_a_topic_cap_that_keeps_a_big_disk_from_its_goal_is_not_a_planner_miss.
    goal = {b: sum(size.values()) * caps[b].total / cap_total for b in ids}
    assume(caps_allow(case, goal, {b: max(0.10 * goal[b], largest_of(case)) for b in ids}))
    brokers = states(case, after, {b: caps[b].total for b in ids})
    d = ap.decide(brokers, trigger=0.10, leader_floor=leader_floor(case, after))
    assert d.kind == "balanced", d.reasons


# ---------------------------------------------------------------------------------------------
# Limiting a plan per tick
# ---------------------------------------------------------------------------------------------

CUR = {"t": {0: [1], 1: [1], 2: [1]}}
NEW = {"t": {0: [2], 1: [3], 2: [2]}}
SIZES = {"t": {0: 30, 1: 20, 2: 10}}


def test_limit_by_gain_by_hand() -> None:
    # loads 60, 0, 0; after the whole plan 0, 40, 20: goal 20 each.
    # t-0 (30 to 2): (40² + 20²) - (10² + 10²) = 2000 - 200 = 1800
    # t-1 (20 to 3): (40² + 20²) - (20² + 0²) = 2000 - 400 = 1600
    # t-2 (10 to 2): (40² + 20²) - (30² + 10²) = 2000 - 1000 = 1000
    lim = ap.limit_plan(CUR, NEW, SIZES, max_moves=2)
    assert [(m.partition, m.gain, m.bytes) for m in lim.taken] == [(0, 1800.0, 30), (1, 1600.0, 20)]
    assert [m.partition for m in lim.left] == [2] and lim.bytes == 50
    assert lim.proposed == {"t": {0: [2], 1: [3]}}
    # --max-bytes 45: t-0 (30), then t-1 would make 50: stop there (a prefix, t-2 waits too)
    lim = ap.limit_plan(CUR, NEW, SIZES, max_bytes=45)
    assert [m.partition for m in lim.taken] == [0] and [m.partition for m in lim.left] == [1, 2]
    # --max-bytes 25: t-0 alone is too large; then t-1 (20), and t-2 would make 30
    lim = ap.limit_plan(CUR, NEW, SIZES, max_bytes=25)
    assert [m.partition for m in lim.taken] == [1] and [m.partition for m in lim.left] == [2]
    assert [m.partition for m in lim.too_large] == [0]


def test_limit_by_replicas_when_sizes_are_unknown() -> None:
    # counts 3, 0, 0 -> 0, 2, 1: goal 1. Each move: (2² + 1²) - (1² + 0²) = 4; ties by partition.
    lim = ap.limit_plan(CUR, NEW, None, max_moves=2, max_bytes=1)
    assert [(m.partition, m.gain) for m in lim.taken] == [(0, 4.0), (1, 4.0)] and lim.bytes == 0


def test_a_move_copies_its_size_per_broker_added() -> None:
    lim = ap.limit_plan({"a": {0: [1, 2], 1: [1, 2]}}, {"a": {0: [3, 4], 1: [2, 1]}}, {"a": {0: 10, 1: 7}})
    by = {m.partition: m for m in lim.taken}
    assert by[0].bytes == 20 and by[1].bytes == 0 and by[1].gain == 0.0


@st.composite
def plans(draw: st.DrawFn) -> tuple[dict, dict, dict | None, int | None, int | None]:
    n = draw(st.integers(3, 6))
    cur: dict[str, dict[int, list[int]]] = {}
    new: dict[str, dict[int, list[int]]] = {}
    sizes: dict[str, dict[int, int]] = {}
    for t in draw(st.sets(st.sampled_from("abc"), min_size=1)):
        for p in range(draw(st.integers(1, 5))):
            rf = draw(st.integers(1, 3))
            cur.setdefault(t, {})[p] = draw(st.permutations(range(n)))[:rf]
            new.setdefault(t, {})[p] = draw(st.permutations(range(n)))[:rf]
            sizes.setdefault(t, {})[p] = draw(st.integers(0, 100))
    known = draw(st.booleans())
    return (
        cur,
        new,
        sizes if known else None,
        draw(st.none() | st.integers(0, 8)),
        draw(st.none() | st.integers(0, 400)),
    )


@SETTINGS
@given(plans())
def test_limit_respects_both_limits_and_is_a_deterministic_prefix(x: tuple) -> None:
    cur, new, sizes, max_moves, max_bytes = x
    lim = ap.limit_plan(cur, new, sizes, max_moves=max_moves, max_bytes=max_bytes)
    changed = {(t, p) for t in new for p in new[t] if new[t][p] != cur[t][p]}
    every = lim.taken + lim.left + lim.too_large
    assert sorted((m.topic, m.partition) for m in every) == sorted(changed)
    for m in lim.taken:
        assert lim.proposed[m.topic][m.partition] == new[m.topic][m.partition]  # whole, as planned
    assert max_moves is None or len(lim.taken) <= max_moves
    if sizes is not None:
        for m in every:
            assert m.bytes == sizes[m.topic][m.partition] * len(set(m.after) - set(m.before))
        assert lim.bytes == sum(m.bytes for m in lim.taken)
        assert max_bytes is None or lim.bytes <= max_bytes
        assert all(max_bytes is not None and m.bytes > max_bytes for m in lim.too_large)
    # a prefix by gain: taken then left in (gain desc, topic, partition) order; the first left breaks a limit
    key = [(-m.gain, m.topic, m.partition) for m in lim.taken + lim.left]
    assert key == sorted(key)
    if lim.left:
        nxt = lim.left[0]
        full = max_moves is not None and len(lim.taken) >= max_moves
        over = sizes is not None and max_bytes is not None and lim.bytes + nxt.bytes > max_bytes
        assert full or over
    # deterministic: the input's dict order does not matter
    rev = {t: dict(reversed(list(new[t].items()))) for t in reversed(list(new))}
    assert ap.limit_plan(cur, rev, sizes, max_moves=max_moves, max_bytes=max_bytes) == lim


# ---------------------------------------------------------------------------------------------
# The heal's order; the metrics
# ---------------------------------------------------------------------------------------------


def test_heal_order() -> None:
    replicas = {
        "a": {0: [1, 3], 1: [3], 2: [1, 2]},
        "b": {0: [1, 2, 3], 1: [2, 3], 2: [3, 1]},
    }
    isr = {"a": {0: [1], 1: []}, "b": {0: [1], 1: [2], 2: [3, 1]}}
    sizes = {"a": {0: 50, 1: 5}, "b": {0: 100, 1: 50, 2: 1}}
    # short of a live in-sync replica: a-0 1, a-1 1, b-0 2 (2 out of ISR, 3 dead), b-1 1, b-2 1;
    # a-2 has no replica on 3. Then smaller first: b-2 (1), a-1 (5), then a-0 and b-1 (50) by name.
    assert ap.heal_order(replicas, {3}, sizes, isr) == [("b", 0), ("b", 2), ("a", 1), ("a", 0), ("b", 1)]
    # without ISR: only the dead replicas count short; sizes unknown count 0: by name
    assert ap.heal_order(replicas, {3}) == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]


def test_tick_metrics() -> None:
    balanced = ap.decide([gib(1, 49.5), gib(2, 40.5), gib(3, 45), gib(4, 45)])
    m = ap.tick_metrics(balanced)
    assert m.to_dict() == {
        "decision": "balanced",
        "worst_deviation_before": 0.1,
        "worst_deviation_after": 0.1,
        "bytes_planned": 0,
    }
    rebalance = ap.decide([gib(1, 61, largest=5), gib(2, 40), gib(3, 40), gib(4, 39)])
    m = ap.tick_metrics(rebalance, worst_after=0.02, bytes_planned=16 * GiB)
    assert (m.decision, m.worst_after, m.bytes_planned) == ("planned", 0.02, 16 * GiB)
    assert ap.tick_metrics(ap.Decision("wait", ("x",))).decision == "held"
    assert ap.tick_metrics(ap.Decision("skipped", ("x",))).decision == "skipped"
    assert set(ap.METRIC_DECISIONS) >= {ap.tick_metrics(ap.Decision(k, ())).decision for k in ap.KINDS}


# ---------------------------------------------------------------------------------------------
# The standing pause, kept in the ledger's document
# ---------------------------------------------------------------------------------------------


def test_the_standing_pause_rides_in_the_ledger_and_every_update_keeps_it() -> None:
    pause = {"since": "2026-12-01T01:00:00Z", "user": "alice", "host": "ops1", "reason": "disk 91%"}
    ledger = Ledger({1: None, 3: 100.0}, pause)
    doc = ledger.to_dict()
    assert doc == {"brokers": {"1": None, "3": 100.0}, "paused": pause}
    assert Ledger.from_dict(json.loads(json.dumps(doc))) == ledger
    assert Ledger({1: None}).to_dict() == {"brokers": {"1": None}}  # none stands: the document as before
    assert ap.update(ledger, [1, 2], [1, 2], 200.0) == Ledger({1: None, 2: None}, pause)


def test_the_pause_comes_before_a_foreign_reassignment_and_a_missing_broker() -> None:
    line = "paused since 2026-12-01T01:00:00Z by alice@ops1: disk 91%"
    d = ap.decide(
        [BrokerState(1, 10, 5), BrokerState(2, 0, 0)],
        paused=line,
        foreign="1 partition(s) reassigning",
        ledger=Ledger({3: 0.0}),
        now=10.0,
    )
    assert (d.kind, d.line()) == ("skipped", f"skipped: {line}")
