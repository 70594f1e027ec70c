"""Chains of moves in the balanced strategy (reassign_cli.planning.balanced.replicas), at any size.

A chain is needed when no single move evens two brokers out: the fullest broker's replicas are all
blocked from the emptiest one (topic cap, racks) and must pass through a broker whose count stays. The
search expands a broker CHAIN_CHUNK replicas at a time and stops once every broker is reached; at the
default size a small cluster's broker fits in one chunk, so the property tests here run with one replica
per chunk, which takes the path large clusters take (issue 18: it used to be switched off above 20M
brokers x slots, breaking the contract there). Expected values are worked out by hand in each docstring.
"""

from __future__ import annotations

from collections import Counter
from unittest import mock

from hypothesis import given

import tests.unit.test_balance as tb
import tests.unit.test_balance_bytes as tbb
from reassign_cli.core.model import Broker, Topic
from reassign_cli.planning.balanced import replicas as balance_replicas

ONE = mock.patch.object(balance_replicas, "CHAIN_CHUNK", 1)


def gadget(padding: int) -> tuple[dict[str, Topic], list[Broker]]:
    """Brokers 1 (X), 2 (M), 3 (Y) and `padding` more; topics, RF 1:
    - u (not selected): 3 replicas on X, 2 on M, 1 on Y, so X = 4, M = 3, Y = 2 with a and b below;
    - a: partition 0 on X, 1 on Y (its cap is 1 a broker: ceil(2 / brokers) and the most held before);
    - b: partition 0 on M;
    - p: 3 partitions on each padding broker (their counts are 3, the mean).
    The only replica X may give is a-0, and Y, at a's cap, may not take it: no single move evens X and Y
    out. A chain does: a-0 to a broker with no `a` (M or a padding broker), which passes one of its
    own replicas (not of `a`) to Y. Two copies, every broker at 3."""
    u = {i: [b] for i, b in enumerate([1, 1, 1, 2, 2, 3])}
    extra = list(range(4, 4 + padding))
    topics = {
        "u": Topic("u", u),
        "a": Topic("a", {0: [1], 1: [3]}),
        "b": Topic("b", {0: [2]}),
    }
    if extra:
        topics["p"] = Topic("p", {i: [b] for i, b in enumerate(b for b in extra for _ in range(3))})
    return topics, [Broker(b) for b in [1, 2, 3, *extra]]


def _check_gadget(padding: int) -> None:
    topics, brokers = gadget(padding)
    selected = sorted(set(topics) - {"u"})
    result = balance_replicas_plan(topics, brokers, selected)
    after = tb.assignment(result)
    reps, _ = tb.broker_counts(topics, after, [b.id for b in brokers])
    assert set(reps.values()) == {3}
    assert result.stats.copies == 2
    for t in selected:  # no broker above a topic's cap: 1 for a and b, 3 for p
        held = Counter(b for row in after[t].values() for b in row)
        assert max(held.values()) <= (3 if t == "p" else 1), (t, held)


def balance_replicas_plan(
    topics: dict[str, Topic], brokers: list[Broker], selected: list[str]
) -> tb.Balanced:
    return tb.plan_balanced(topics, brokers, tb.specs_of(topics, selected), 0)


def test_a_chain_through_a_broker_at_its_target() -> None:
    """Three brokers: X gives a-0 to M, M gives b-0 to Y (the only plan of two copies)."""
    topics, brokers = gadget(0)
    after = tb.assignment(balance_replicas_plan(topics, brokers, ["a", "b"]))
    assert after == {"a": {0: [2], 1: [3]}, "b": {0: [3]}}


def test_a_chain_above_the_old_cutoff() -> None:
    """3,003 brokers x 9,003 slots = 27M, above the 20M where the search used to be switched off (the
    spread then stayed at 2): the chain is still found, every broker ends at 3 after two copies."""
    _check_gadget(3000)


def test_a_chain_one_replica_per_chunk() -> None:
    with ONE:
        _check_gadget(0)
        _check_gadget(40)


@tb.SETTINGS
@given(tb.cases())
def test_replicas_contract_one_replica_per_chunk(case: tb.Case) -> None:
    """Points 1, 2 (spread, best (max, min) by max-flow), 4 and 6 of --balance replicas, with the chain
    search expanding one replica at a time."""
    with ONE:
        tb.test_valid_sets_over_b_spanning_the_racks.hypothesis.inner_test(case)  # type: ignore[attr-defined]
        tb.test_replicas_as_even_as_possible.hypothesis.inner_test(case)  # type: ignore[attr-defined]
        tb.test_no_concentration.hypothesis.inner_test(case)  # type: ignore[attr-defined]
        tb.test_idempotent_and_deterministic.hypothesis.inner_test(case)  # type: ignore[attr-defined]


@tbb.SETTINGS
@given(tbb.sized())
def test_bytes_contract_one_replica_per_chunk(s: tbb.Sized) -> None:
    """Points 1, 2, 4 and 6 of --balance bytes, with the chain search expanding one replica at a time."""
    with ONE:
        tbb.test_valid_and_rack_aware.hypothesis.inner_test(s)  # type: ignore[attr-defined]
        tbb.test_bytes_within_the_band.hypothesis.inner_test(s)  # type: ignore[attr-defined]
        tbb.test_no_concentration.hypothesis.inner_test(s)  # type: ignore[attr-defined]
        tbb.test_idempotent_and_deterministic.hypothesis.inner_test(s)  # type: ignore[attr-defined]
