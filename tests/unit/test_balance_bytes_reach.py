"""`--balance bytes` when the tolerance cannot be reached (issue 30, item 7): the bound on the worst
deviation any plan of the selected topics reaches, and the copies bound a bytes plan is measured
against (never beaten). Expected values from the definitions, worked by hand or computed here
independently of the code under test."""

from __future__ import annotations

from hypothesis import given

from reassign_cli.core.model import Broker, Topic
from reassign_cli.planning.balanced.bytes import plan_bytes
from tests.unit.test_balance import Case, specs_of
from tests.unit.test_balance_bytes import SETTINGS, TOL, Sized, loads, mean_bytes, plan, sized


def subset_case() -> Case:
    """Topic o (not selected): six 100-byte partitions on broker 1. Topic s (selected): twelve 10-byte
    partitions, four on each of brokers 1-3. RF 1 throughout."""
    other = {p: [1] for p in range(6)}
    sel = {p: [1 + p % 3] for p in range(12)}
    topics = {
        "o": Topic("o", other, sizes=dict.fromkeys(other, 100)),
        "s": Topic("s", sel, sizes=dict.fromkeys(sel, 10)),
    }
    return Case(topics, [Broker(1), Broker(2), Broker(3)], ["s"], None, "none", 1)


def test_a_subset_that_cannot_reach_the_tolerance() -> None:
    """Mean (600 + 120) / 3 = 240 bytes. Broker 1 keeps topic o's 600 bytes whatever the plan does:
    it ends at least (600 - 240) / 240 = 150% from the mean. Topic s is spread evenly (4, 4, 4: its cap
    of 12 / 3 on every broker), so nothing of it can move: the plan copies nothing, broker 1 ends at
    640, 166.7% from the mean, and the copies bound is 0 (the even-count bound of --balance replicas
    said 4: broker 1 holds 10 replicas against a mean of 6)."""
    result, stats = plan_bytes(
        subset_case().topics, subset_case().brokers, specs_of(subset_case().topics, ["s"]), 1, TOL
    )
    d = stats.as_dict()
    assert d["bytes_per_broker_after"] == {"1": 640, "2": 40, "3": 40}
    assert d["bytes_within_tolerance"] is False
    assert d["bytes_max_dev_after"] == round(400 / 240, 4) and d["bytes_max_dev_after_broker"] == 1
    assert d["bytes_best_reachable_dev"] == 1.5 and stats.reachable == (1.5, 1)
    assert result.stats.copies == 0 and result.stats.lower_bound == 0


def reachable_by_hand(case: Case) -> float:
    """Broker b ends between the unselected topics' bytes on it and that plus every selected partition's
    size (one replica of each at most): its distance to the mean from that range, over the mean."""
    ids = [b.id for b in case.brokers]
    mean = mean_bytes(case.topics, case.selected, case.rf, ids)
    fixed = loads({t: x for t, x in case.topics.items() if t not in case.selected}, {}, ids)
    total = sum(sum(case.topics[t].sizes.values()) for t in case.selected)
    if mean <= 0:
        return 0.0
    return max(max(0.0, fixed[b] - mean, mean - fixed[b] - total) / mean for b in ids)


@SETTINGS
@given(sized())
def test_the_reachable_bound_is_a_bound(s: Sized) -> None:
    """The stats' bound is the one worked out here, and no plan (this one included) beats it."""
    _, stats, _ = plan(s.case)
    bound = reachable_by_hand(s.case)
    assert abs(stats.reachable[0] - bound) <= 1e-9
    assert stats.max_dev(stats.after) >= bound - 1e-9
    assert stats.within() == (stats.max_dev(stats.after) <= TOL + 1e-9)


@SETTINGS
@given(sized())
def test_the_copies_bound_is_never_beaten(s: Sized) -> None:
    """A bytes plan copies at least its copies bound (the ratio the summary and the report show is
    never below 1)."""
    result, _, _ = plan(s.case)
    assert result.stats.copies >= result.stats.lower_bound
