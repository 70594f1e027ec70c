"""`--balance bytes` with the brokers' disk capacity (issue 18, point 8): utilization balanced within the
tolerance, and no broker's peak during the move above --max-disk-utilization.

Every expected value is computed here from the definitions, independently of the code under test:
- a broker's goal is its share of all the bytes: (bytes over B) x its capacity / (capacity over B);
- a broker's peak is what it holds now (its partitions' bytes, or what its volume reports in use when
  that is more) plus the size of every partition it holds in the plan and did not hold before.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reassign_cli.core.model import Assignment, Broker, Capacity, Topic
from reassign_cli.planning.balanced.bytes import plan_bytes
from tests.unit.test_balance import Case, assignment, exact, specs_of
from tests.unit.test_balance_bytes import SETTINGS, TOL, Sized, largest, loads, sized


def _plan(case: Case, caps: Mapping[int, Capacity], limit: float) -> tuple[Assignment, object]:
    result, stats = plan_bytes(
        case.topics,
        case.brokers,
        specs_of(case.topics, case.selected, case.rf),
        case.seed,
        TOL,
        capacities=caps,
        max_utilization=limit,
    )
    return assignment(result), stats


def received_by_hand(case: Case, after: Assignment) -> dict[int, int]:
    got: dict[int, int] = {b.id: 0 for b in case.brokers}
    for t, parts in after.items():
        topic = case.topics[t]
        for p, row in parts.items():
            for b in set(row) - set(topic.replicas[p]):
                got[b] += topic.sizes[p]
    return got


# ---------------------------------------------------------------------------------------------
# Hand-worked
# ---------------------------------------------------------------------------------------------


def test_a_disk_three_times_larger_takes_three_times_the_bytes() -> None:
    """RF 1, eight partitions of 100 bytes on broker 1 (1000-byte disk); broker 2 has 3000 bytes. The
    mean utilization is 800 / 4000 = 20%: broker 1's goal is 200 bytes, broker 2's 600 (band +-5%: both
    exact with 100-byte partitions). Broker 2 receives 600 bytes: its peak is 600 of 3000 (20%)."""
    topics = {"t": Topic("t", {p: [1] for p in range(8)}, sizes=dict.fromkeys(range(8), 100))}
    case = Case(topics, [Broker(1), Broker(2)], ["t"], None, "none", 1)
    caps = {1: Capacity(1000, 1000), 2: Capacity(3000, 3000)}
    after, stats = _plan(case, caps, 0.85)
    assert loads(topics, after, [1, 2]) == {1: 200, 2: 600}
    assert stats.disks is not None and stats.disks.peak.tolist() == [800, 600]  # type: ignore[attr-defined]
    assert stats.disks.worst() is None  # type: ignore[attr-defined]


def test_the_peak_limit_steers_the_copies() -> None:
    """Broker 1 (rack a) holds four 100-byte partitions, RF 1; brokers 2 and 3 are empty with 1000-byte
    disks, but broker 2's volume already has 750 bytes in use by something else. With the limit at 85%
    broker 2 may receive at most 850 - 750 = 100 bytes: one partition. Utilization goal per broker
    400 x 1000 / 3000 = 133.3, so without the limit brokers 2 and 3 would take one or two each."""
    topics = {"t": Topic("t", {p: [1] for p in range(4)}, sizes=dict.fromkeys(range(4), 100))}
    case = Case(topics, [Broker(1), Broker(2), Broker(3)], ["t"], None, "none", 5)
    caps = {1: Capacity(1000, 600), 2: Capacity(1000, 250), 3: Capacity(1000, 1000)}
    after, stats = _plan(case, caps, 0.85)
    got = received_by_hand(case, after)
    assert got[2] <= 100
    assert stats.disks.worst() is None  # type: ignore[attr-defined]
    # At 80% broker 2 may receive nothing (800 - 750 < 100): broker 3 takes what moves.
    after, stats = _plan(case, caps, 0.80)
    assert received_by_hand(case, after)[2] == 0 and stats.disks.worst() is None  # type: ignore[attr-defined]


def test_impossible_is_reported() -> None:
    """RF 2 asked of a topic on broker 1 alone: the new replica must go to broker 2 (the only other),
    whose volume is full beyond the limit: the plan breaks it, and the stats say where."""
    topics = {"t": Topic("t", {0: [1]}, sizes={0: 500})}
    case = Case(topics, [Broker(1), Broker(2)], ["t"], 2, "none", 1)
    caps = {1: Capacity(1000, 500), 2: Capacity(1000, 400)}
    _, stats = _plan(case, caps, 0.85)
    d = stats.disks  # type: ignore[attr-defined]
    # broker 2: in use 600 (1000 - 400), receives 500: peak 1100 of 1000.
    assert d.worst() == 1 and d.peak.tolist() == [500, 1100]


# ---------------------------------------------------------------------------------------------
# Random clusters
# ---------------------------------------------------------------------------------------------


def _total(case: Case) -> int:
    return sum(sum(t.sizes.values()) * 3 for t in case.topics.values()) + 1


@st.composite
def roomy(draw: st.DrawFn) -> tuple[Sized, dict[int, Capacity]]:
    """Capacities of 2 to 8 times all the bytes of the cluster (three replicas a partition at most
    counted): the peak limit (100%) can never bind, so only the balance is at stake. With racks, every
    rack gets the same disks (the j-th broker of each rack the same size): "racks of equal size" in
    capacity, as point 2 asks (a rack rule forcing one replica of each partition into a rack of small
    disks could not be met otherwise)."""
    s = draw(sized())
    total = _total(s.case)
    n = len(s.case.brokers)
    ks = draw(st.lists(st.sampled_from([2, 3, 4, 6, 8]), min_size=n, max_size=n))
    position: dict[int, int] = {}
    seen: dict[str | None, int] = {}
    for b in s.case.brokers:
        rack = b.rack if s.case.racks == "equal" else f"own-{b.id}"
        position[b.id] = seen.get(rack, 0) if s.case.racks == "equal" else len(position)
        seen[rack] = seen.get(rack, 0) + 1
    return s, {b.id: Capacity(ks[position[b.id]] * total, ks[position[b.id]] * total) for b in s.case.brokers}


def caps_allow(case: Case, goal: Mapping[int, float], band: Mapping[int, float]) -> bool:
    """Whether the no-concentration rule (docs/balanced.md point 4, which ranks before bytes) leaves every
    broker of B room to reach goal +- band: no broker may hold more of a topic than cap = max(ceil(replicas /
    |B|), the most any broker held of it before), so each broker must hold at least replicas - cap x (|B| - 1)
    of it (its smallest partitions at best) and can hold at most cap of it (its largest at best)."""
    ids = [b.id for b in case.brokers]
    n = len(ids)
    least, most = dict.fromkeys(ids, 0), dict.fromkeys(ids, 0)
    for t in case.topics.values():
        rf = {p: case.rf or len(row) for p, row in t.replicas.items()}
        replicas = sum(rf.values())
        held = max(sum(b in row for row in t.replicas.values()) for b in ids)
        cap = max(-(-replicas // n), held)
        sizes = sorted(t.sizes.get(p, 0) for p in t.replicas)
        must = max(0, replicas - cap * (n - 1))
        for b in ids:
            least[b] += sum(sizes[:must])
            most[b] += sum(sizes[len(sizes) - min(cap, len(sizes)) :])
    return all(least[b] <= goal[b] + band[b] and most[b] >= goal[b] - band[b] for b in ids)


@SETTINGS
@given(roomy())
def test_utilization_within_the_band(x: tuple[Sized, dict[int, Capacity]]) -> None:
    """Point 2 in utilization terms: with every topic selected and racks equal or none, every broker of
    B within goal +- max(tolerance x goal, the largest partition), its goal being its capacity's share of
    the bytes, whenever the count rules and the no-concentration cap (which rank before bytes) can be met."""
    s, caps = x
    case = s.case
    assume(set(case.selected) == set(case.topics) and case.racks in ("none", "equal", "ignored"))
    assume(exact(case))
    after, stats = _plan(case, caps, 1.0)
    ids = [b.id for b in case.brokers]
    got = loads(case.topics, after, ids)
    cap_total = sum(caps[b].total for b in ids)
    # A broker holds each partition once at most: a goal above half of all the distinct bytes may be out
    # of reach (RF near the broker count), whatever the planner does.
    distinct = sum(sum(t.sizes.values()) for t in case.topics.values())
    assume(all(sum(got.values()) * caps[b].total / cap_total <= distinct / 2 for b in ids))
    goal = {b: sum(got.values()) * caps[b].total / cap_total for b in ids}
    band = {b: max(TOL * goal[b], largest(case)) for b in ids}
    # Point 4 ranks before bytes: nine 1 MiB partitions of one topic over three brokers put 3 MiB on each
    # (cap 3), whatever a small disk's goal (1.8 MiB +- 1 MiB).
    assume(caps_allow(case, goal, band))
    for b in ids:
        assert abs(got[b] - goal[b]) <= band[b] + 1e-6, (got, b, goal[b])
    assert stats.after.tolist() == [got[b] for b in ids]  # type: ignore[attr-defined]


@SETTINGS
@given(roomy())
def test_equal_capacities_plan_as_raw_bytes(x: tuple[Sized, dict[int, Capacity]]) -> None:
    """Brokers with disks of one size: utilization is bytes over the same number, so the plan is the
    raw bytes plan, byte for byte."""
    s, caps = x
    one = next(iter(caps.values()))
    same = dict.fromkeys(caps, one)
    with_caps, _ = _plan(s.case, same, 1.0)
    raw, _ = plan_bytes(
        s.case.topics, s.case.brokers, specs_of(s.case.topics, s.case.selected, s.case.rf), s.case.seed, TOL
    )
    assert with_caps == assignment(raw)


@st.composite
def tight(draw: st.DrawFn) -> tuple[Sized, dict[int, Capacity], float]:
    """Capacities near the bytes the brokers hold, volumes with other data on them, and a limit: the
    limit often binds."""
    s = draw(sized())
    ids = [b.id for b in s.case.brokers]
    now = loads(s.case.topics, {}, ids)
    mean = max(1, sum(now.values()) // max(1, len(ids)))
    caps = {}
    for b in ids:
        total = int(max(now[b], mean) * draw(st.sampled_from([1.05, 1.3, 2.0, 4.0])))
        other = draw(st.sampled_from([0, 0.1, 0.5]))
        caps[b] = Capacity(total + 1, max(0, total + 1 - now[b] - int(other * total)))
    return s, caps, draw(st.sampled_from([0.5, 0.85, 0.95, 1.0]))


@SETTINGS
@given(tight())
def test_the_peak_never_breaks_the_limit(x: tuple[Sized, dict[int, Capacity], float]) -> None:
    """No broker receiving anything ends the move above the limit, computed by hand: what it holds now
    (its bytes, or its volume's used bytes when more) plus every byte it receives. When the planner
    cannot keep within it, it says so (the CLI refuses), and the broker it names does break it."""
    s, caps, limit = x
    case = s.case
    after, stats = _plan(case, caps, limit)
    ids = [b.id for b in case.brokers]
    now = loads(case.topics, {}, ids)
    got = received_by_hand(case, after)
    peak = {b: max(now[b], caps[b].total - caps[b].usable) + got[b] for b in ids}
    d = stats.disks  # type: ignore[attr-defined]
    assert d.peak.tolist() == [peak[b] for b in ids]
    broken = [b for b in ids if got[b] > 0 and peak[b] > limit * caps[b].total]
    worst = d.worst()
    if worst is None:
        assert broken == []
    else:
        assert ids[worst] in broken
        assert max(peak[b] / caps[b].total for b in broken) == peak[ids[worst]] / caps[ids[worst]].total


@SETTINGS
@given(tight())
def test_deterministic_with_capacities(x: tuple[Sized, dict[int, Capacity], float]) -> None:
    s, caps, limit = x
    a, sa = _plan(s.case, caps, limit)
    b, sb = _plan(s.case, caps, limit)
    assert a == b
    assert np.array_equal(sa.disks.peak, sb.disks.peak)  # type: ignore[attr-defined]


def _dir(total: int, usable: int, error: int = 0) -> dict[str, object]:
    """One log dir of a DescribeLogDirs answer (kafka-python's dicts)."""
    return {"error_code": error, "log_dir": "/x", "topics": [], "total_bytes": total, "usable_bytes": usable}


def test_each_log_dir_is_its_own_disk() -> None:
    """Issue 30, item 20: DescribeLogDirs cannot tell two twin disks from one filesystem holding two log
    dirs, so by default each live log dir counts: a new broker with two empty 1 TB disks has 2 TB (it
    used to be planned as 1 TB); a two-disk broker at 70% reads as 70% (it read as 140%: 1.4 TB used of
    1 TB). An offline dir and a v3 answer (-1) count nothing."""
    from reassign_cli.backends.admin.log_dirs import capacity_of, looks_shared

    tb = 10**12
    assert capacity_of([_dir(tb, tb), _dir(tb, tb)]) == Capacity(2 * tb, 2 * tb)
    seventy = capacity_of([_dir(tb, 3 * tb // 10), _dir(tb, 3 * tb // 10)])
    assert seventy is not None and (seventy.total - seventy.usable) / seventy.total == 0.7
    assert capacity_of([_dir(tb, tb), _dir(tb, tb)]).shared is False  # type: ignore[union-attr]
    assert capacity_of([_dir(10**6, 400_000), _dir(5 * 10**6, 5 * 10**6, error=57)]) == Capacity(
        10**6, 400_000
    )
    assert capacity_of([_dir(-1, -1)]) is None and capacity_of([]) is None
    # They look like one filesystem: same total, usable within 0.1% of it (read a moment apart).
    assert looks_shared([_dir(tb, tb), _dir(tb, tb)])
    assert looks_shared([_dir(10**6, 400_000), _dir(10**6, 400_500)])
    assert not looks_shared([_dir(10**6, 400_000), _dir(10**6, 700_000)])
    assert not looks_shared([_dir(10**6, 400_000)])


def test_shared_log_dirs_count_one_filesystem_once() -> None:
    """--shared-log-dirs: dirs of one total whose usable bytes differ by less than 0.1% of it are one
    filesystem, counted once; a second disk of the same size with other usable bytes still counts."""
    from reassign_cli.backends.admin.log_dirs import capacity_of

    assert capacity_of([_dir(10**6, 400_000), _dir(10**6, 400_500)], shared=True) == Capacity(10**6, 400_000)
    two = capacity_of([_dir(10**6, 400_000), _dir(10**6, 700_000)], shared=True)
    assert two == Capacity(2 * 10**6, 1_100_000) and two.shared is True  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# A plan within the limit is found whenever one is known to exist (issue 30, item 19)
# ---------------------------------------------------------------------------------------------


def _stays_valid(case: Case) -> bool:
    """Whether leaving every selected partition where it is is a valid plan: all its replicas on B, as
    many as its target RF, spanning the racks it must. That plan receives nothing, so it keeps within
    any limit: the planner must find one that does too."""
    ids = {b.id for b in case.brokers}
    rack = {b.id: b.rack for b in case.brokers}
    n_racks = len({b.rack for b in case.brokers}) if case.racks in ("equal", "unequal") else 1
    for t in case.selected:
        for row in case.topics[t].replicas.values():
            rf = case.rf or len(row)
            if len(row) != rf or not set(row) <= ids:
                return False
            if n_racks > 1 and len({rack[b] for b in row}) < min(rf, n_racks):
                return False
    return True


@SETTINGS
@given(tight())
def test_a_plan_within_the_limit_is_found_when_the_current_one_is(
    x: tuple[Sized, dict[int, Capacity], float],
) -> None:
    """Whenever the current placement is a valid plan (it copies nothing, so no broker's peak grows),
    the planner's plan keeps every broker that receives anything within the limit. (The property above
    holds for a planner that always refuses; this one does not.)"""
    s, caps, limit = x
    assume(_stays_valid(s.case))
    after, stats = _plan(s.case, caps, limit)
    ids = [b.id for b in s.case.brokers]
    now = loads(s.case.topics, {}, ids)
    got = received_by_hand(s.case, after)
    over = [
        b
        for b in ids
        if got[b] > 0 and max(now[b], caps[b].total - caps[b].usable) + got[b] > limit * caps[b].total
    ]
    assert over == []
    assert stats.disks.worst() is None  # type: ignore[attr-defined]


G = 10**9


def _crowded(n_small: int, added: int, full: float) -> tuple[Case, dict[int, Capacity]]:
    """Broker 1 holds 100 partitions of 8 GB on a 1 TB disk with `full` of it in use; brokers 2 and 3
    hold `n_small` partitions of 100 MB between them (1 TB disks); `added` empty 1 TB brokers join.
    RF 1, no racks. Broker 1 is far below the mean count: the seeded rounds (more than 1,000 count units
    to move) used to send it small partitions until its peak passed the limit."""
    big = {p: [1] for p in range(100)}
    small = {p: [2 + p % 2] for p in range(n_small)}
    topics = {
        "big": Topic("big", big, sizes=dict.fromkeys(big, 8 * G)),
        "small": Topic("small", small, sizes=dict.fromkeys(small, G // 10)),
    }
    brokers = [Broker(i) for i in range(1, 4 + added)]
    caps = {b.id: Capacity(10**12, 10**12) for b in brokers}
    caps[1] = Capacity(10**12, int(10**12 * (1 - full)))
    for b in (2, 3):
        caps[b] = Capacity(10**12, 10**12 - n_small // 2 * (G // 10))
    return Case(topics, brokers, ["big", "small"], None, "none", 7), caps


@pytest.mark.parametrize(("n_small", "added", "full"), [(6000, 3, 0.8), (4000, 2, 0.8), (8000, 5, 0.84)])
def test_above_1000_count_units_the_rounds_keep_within_the_limit(
    n_small: int, added: int, full: float
) -> None:
    """Brokers added beside one at 80% of its disk, more than 1,000 count units to move: a plan within
    the 85% limit exists (leaving everything in place is one), and the planner finds one, balanced:
    every broker within 5% of its goal (equal disks: the mean)."""
    case, caps = _crowded(n_small, added, full)
    after, stats = _plan(case, caps, 0.85)
    ids = [b.id for b in case.brokers]
    now = loads(case.topics, {}, ids)
    got = received_by_hand(case, after)
    used = {b: max(now[b], caps[b].total - caps[b].usable) for b in ids}
    assert all(used[b] + got[b] <= 0.85 * caps[b].total for b in ids if got[b] > 0), got
    assert stats.disks.worst() is None  # type: ignore[attr-defined]
    held = loads(case.topics, after, ids)
    mean = sum(held.values()) / len(ids)
    assert all(abs(held[b] - mean) <= TOL * mean for b in ids), held


def test_above_1000_holes_the_fill_keeps_within_the_limit() -> None:
    """Broker 9 leaves: its 1,500 partitions of 1 GB (RF 1) are holes to fill. Broker 1 is at 80% of its
    1 TB disk; brokers 2 to 4 are empty 1 TB disks. A plan within the 85% limit exists (brokers 2 to 4
    take 500 each: 50%); the planner must not send broker 1 more than 50 GB."""
    parts = {p: [9] for p in range(1500)}
    filler = {p: [1] for p in range(80)}
    topics = {
        "gone": Topic("gone", parts, sizes=dict.fromkeys(parts, G)),
        "filler": Topic("filler", filler, sizes=dict.fromkeys(filler, 10 * G)),
    }
    brokers = [Broker(i) for i in range(1, 5)]
    caps = {b.id: Capacity(10**12, 10**12) for b in brokers}
    caps[1] = Capacity(10**12, 2 * 10**11)
    case = Case(topics, brokers, ["gone"], None, "none", 3)
    after, stats = _plan(case, caps, 0.85)
    got = received_by_hand(case, after)
    assert got[1] <= 50 * G, got
    assert stats.disks.worst() is None  # type: ignore[attr-defined]
    assert sum(got.values()) == 1500 * G


def test_caps_allow_rules_out_a_topic_forced_onto_a_small_disk() -> None:
    """The case a random seed found: nine 1 MiB partitions of t0 (three on each broker) and two more of
    their own, RF 1, disks 1:2:3. Broker 1's goal is 11/6 MiB +- 1 MiB, but t0's cap of 3 a broker forces
    9 - 3 x 2 = 3 of t0 onto it: 3 MiB, out of reach. With t0 spread 5/2/2 before, the cap is 5 and nothing
    is forced."""
    mib = 1 << 20
    t0 = Topic("t0", {p: [1 + p // 3] for p in range(9)}, sizes=dict.fromkeys(range(9), mib))
    others = {n: Topic(n, {0: [1]}, sizes={0: mib}) for n in ("t1", "t2")}
    brokers = [Broker(b, None) for b in (1, 2, 3)]
    case = Case({"t0": t0, **others}, brokers, ["t0", "t1", "t2"], None, "ignored", 0)
    goal = {b: 11 * mib * b / 6 for b in (1, 2, 3)}
    band = {b: max(TOL * goal[b], mib) for b in (1, 2, 3)}
    assert not caps_allow(case, goal, band)
    spread = Topic(
        "t0", {p: [1 if p < 5 else 2 + p % 2] for p in range(9)}, sizes=dict.fromkeys(range(9), mib)
    )
    assert caps_allow(
        Case({"t0": spread, **others}, brokers, ["t0", "t1", "t2"], None, "ignored", 0), goal, band
    )
