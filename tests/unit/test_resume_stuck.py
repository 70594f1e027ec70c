"""A plan run again after an interruption (resume_split) and moves that cannot finish (StuckWatch), on
states written by hand."""

from __future__ import annotations

from reassign_cli.core.model import Broker, ClusterState, PlanEntry, Topic, TopicPartition
from reassign_cli.core.progress import PartitionProgress, Status, StuckWatch, classify, resume_split


def _state(topic: Topic, reassignment: dict[TopicPartition, list[int]] | None = None) -> ClusterState:
    return ClusterState([Broker(b) for b in (1, 2, 3)], {topic.name: topic}, reassignment=reassignment)


def test_resume_split_done_running_todo() -> None:
    # t-0 moved to [3,2] already; t-1 is moving to [3,1] right now (RS [3,1,2]: AR [3], RR [2]);
    # t-2 has not started; t-3 moves elsewhere ([2,1] rather than the plan's [1,3]): todo.
    t = Topic(
        "t",
        {0: [3, 2], 1: [3, 1, 2], 2: [1, 2], 3: [2, 1, 3]},
        adding={1: [3], 3: [2]},
        removing={1: [2], 3: [3]},
    )
    plan = [
        PlanEntry("t", 0, [3, 2]),
        PlanEntry("t", 1, [3, 1]),
        PlanEntry("t", 2, [2, 3]),
        PlanEntry("t", 3, [1, 3]),
    ]
    r = resume_split(plan, _state(t, reassignment={("t", 1): [3, 1]}))
    assert [e.partition for e in r.done] == [0]
    assert [e.partition for e in r.running] == [1]
    assert [e.partition for e in r.todo] == [2, 3]


def test_resume_split_same_set_in_another_order_is_todo() -> None:
    t = Topic("t", {0: [2, 3]})
    r = resume_split([PlanEntry("t", 0, [3, 2])], _state(t))
    assert (r.done, r.running, [e.partition for e in r.todo]) == ([], [], [0])


def test_resume_split_missing_topic_is_todo() -> None:
    r = resume_split([PlanEntry("gone", 0, [1])], _state(Topic("t", {0: [1]})))
    assert [e.topic for e in r.todo] == ["gone"]


def _moving(target: list[int]) -> PartitionProgress:
    return PartitionProgress("t", 0, target, [1, 2, *target], Status.IN_PROGRESS, None, target, [1], None)


def test_stuck_reported_once_after_the_limit() -> None:
    w = StuckWatch(limit=10)
    p = _moving([3, 2])
    assert w.update([p], registered=[1, 2], now=100.0) == []  # broker 3 missing since 100
    assert w.update([p], registered=[1, 2], now=109.9) == []
    (report,) = w.update([p], registered=[1, 2], now=110.0)
    assert report == (p, 3, 10.0)
    assert w.update([p], registered=[1, 2], now=200.0) == []  # told once


def test_stuck_clock_restarts_when_the_broker_returns() -> None:
    w = StuckWatch(limit=10)
    p = _moving([3, 2])
    w.update([p], registered=[1, 2], now=0.0)
    assert w.update([p], registered=[1, 2], now=10.0) != []
    w.update([p], registered=[1, 2, 3], now=11.0)  # back
    assert w.update([p], registered=[1, 2], now=12.0) == []  # gone again at 12
    assert [b for _, b, _ in w.update([p], registered=[1, 2], now=22.0)] == [3]


def test_stuck_ignores_complete_partitions_and_registered_brokers() -> None:
    w = StuckWatch(limit=0)
    state = ClusterState([Broker(1), Broker(2)], {"t": Topic("t", {0: [1, 2]})})
    done = classify({("t", 0): [1, 2]}, state)
    assert w.update(done, registered=[1], now=5.0) == []  # complete: nothing to finish
    assert w.update([_moving([1, 2])], registered=[1, 2], now=5.0) == []
