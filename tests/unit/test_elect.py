"""Preferred-leader election, pure parts: statuses, the trigger bytes and the result lines, worked out by
hand."""

from __future__ import annotations

import pytest

from reassign_cli.core.elect_rules import (
    Election,
    check_partitions,
    encode_election,
    leader_status,
    partitions_of,
    result_lines,
)
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.errors import InvalidInputError


def _state() -> ClusterState:
    t = Topic(
        "t",
        {0: [2, 1], 1: [1, 2], 2: [3, 1], 3: [3, 4, 1, 2]},
        adding={3: [3, 4]},
        removing={3: [1, 2]},
        isr={0: [1, 2], 1: [1, 2], 2: [1], 3: [1, 2, 3]},
        leader={0: 1, 1: 1, 2: 1, 3: 1},
    )
    return ClusterState([Broker(1), Broker(2), Broker(3)], {"t": t, "u": Topic("u", {0: [1]})})


def test_statuses() -> None:
    s = leader_status(_state(), [("t", 0), ("t", 1), ("t", 2), ("t", 3)])
    # t-0: preferred 2 in the ISR, leader 1: pending. t-1: 1 leads: elected. t-2: preferred 3 not in the
    # ISR [1]. t-3 is being reassigned: its preferred replica is the target's first, 3, in the ISR.
    assert [x.status for x in s] == [
        Election.PENDING,
        Election.ELECTED,
        Election.NOT_IN_ISR,
        Election.PENDING,
    ]
    assert [x.preferred for x in s] == [2, 1, 3, 3]


def test_partition_without_state_cannot_be_elected() -> None:
    (s,) = leader_status(_state(), [("u", 0)])
    assert (s.leader, s.status) == (-1, Election.NOT_IN_ISR)


def test_trigger_bytes_are_kafkas_format_sorted() -> None:
    assert encode_election([("t", 1), ("a", 0), ("t", 0)]) == (
        b'{"version":1,"partitions":[{"topic":"a","partition":0},'
        b'{"topic":"t","partition":0},{"topic":"t","partition":1}]}'
    )


def test_selection_and_missing_partitions() -> None:
    st = _state()
    assert partitions_of(st, ["u"]) == [("u", 0)]
    assert partitions_of(st, None)[:2] == [("t", 0), ("t", 1)]
    with pytest.raises(InvalidInputError, match=r"^Topic not found: x$"):
        partitions_of(st, ["x"])
    with pytest.raises(InvalidInputError, match=r"^Partition not found: t-9$"):
        check_partitions(st, [("t", 9), ("t", 0)])
    assert check_partitions(st, [("t", 1), ("t", 0), ("t", 1)]) == [("t", 0), ("t", 1)]


def test_result_lines() -> None:
    st = _state()
    tps = [("t", 0), ("t", 1), ("t", 2)]
    before = leader_status(st, tps)
    st.topics["t"].leader[0] = 2
    after = leader_status(st, tps)
    assert result_lines(before, after) == [
        "Successfully completed leader election (PREFERRED) for partitions t-0",
        "Valid replica already elected for partitions t-1",
        "Election failed for partition t-2: preferred replica 3 is not in the ISR [1]",
    ]
