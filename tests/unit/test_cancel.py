"""cancel's pure selection, worked out by hand."""

from __future__ import annotations

from reassign_cli.core.cancel_rules import cancel_plan, cancelled_line
from reassign_cli.core.model import Broker, ClusterState, Topic


def _state(live: list[int]) -> ClusterState:
    t = Topic(
        "t",
        # p0: moving 1,2 -> 2,3 (RS 2,3,1; AR 3; RR 1). p1: not moving. p2: pure addition 1 -> 1,2.
        {0: [2, 3, 1], 1: [1, 2], 2: [1, 2]},
        adding={0: [3], 2: [2]},
        removing={0: [1]},
        isr={0: [1, 2], 1: [1, 2], 2: [1]},
    )
    return ClusterState([Broker(b) for b in live], {"t": t})


def test_active_partitions_include_pure_additions() -> None:
    plan = cancel_plan([("t", 2), ("t", 1), ("t", 0), ("u", 0)], _state([1, 2, 3]))
    assert plan.active == [("t", 0), ("t", 2)]
    assert plan.unsafe == []


def test_refused_when_the_original_replicas_are_offline() -> None:
    # p0's original replicas are 2,1 (RS minus AR): broker 2 down, 1 down -> no leader after revert.
    plan = cancel_plan([("t", 0)], _state([3]))
    assert plan.unsafe == [
        "cannot cancel the reassignment of t-0: none of its original replicas 2,1 is online and in the ISR, "
        "so it would be left without a leader"
    ]
    # One original replica alive and in the ISR is enough.
    assert cancel_plan([("t", 0)], _state([2, 3])).unsafe == []


def test_lines() -> None:
    assert cancelled_line([]) == "None of the specified partition reassignments are active."
    assert cancelled_line([("t", 0)]) == "Successfully cancelled partition reassignment for: t-0"
    assert (
        cancelled_line([("t", 0), ("u", 1)]) == "Successfully cancelled partition reassignments for: t-0,u-1"
    )


def test_stopped_moves_lines_are_kafkas() -> None:
    from reassign_cli.core.cancel_rules import stopped_moves_lines

    assert stopped_moves_lines({}) == ["None of the specified partition moves are active."]
    assert stopped_moves_lines({("t", 1, 3): "/d0", ("t", 0, 2): "/d1"}) == [
        "Successfully started moving log directory to /d1 for replica t-0 with broker 2 ",
        "Successfully started moving log directory to /d0 for replica t-1 with broker 3 ",
    ]
