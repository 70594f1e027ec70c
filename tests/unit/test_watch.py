"""ops/watch.wait_for: the polls of `execute --wait` (and of a batch of a plan not stored) are steps of a plan
kept in this process's memory (issue 25 item 4). The cluster is a fake whose states are written by hand and
change at each poll's sleep; the expected results are worked out from those states."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from reassign_cli.core.model import Topic
from reassign_cli.core.progress import Status
from reassign_cli.errors import BusyError
from reassign_cli.ops import step as st
from reassign_cli.ops.request import ExecuteRequest, WaitInterrupted
from reassign_cli.ops.watch import wait_for
from reassign_cli.render import Output
from reassign_cli.render.progress import ExecuteReport
from tests.fakes import FakeBackend, FakeCluster, make_state

TARGET = {("t", 0): [3, 2]}  # t-0 moves from [1,2] to [3,2]


def moving() -> Any:
    """t-0 mid-move: RS [3,1,2] (target first), adding 3, removing 1; the trigger names it."""
    state = make_state({"t": {0: [1, 2]}})
    state.topics["t"] = Topic(
        "t", {0: [3, 1, 2]}, adding={0: [3]}, removing={0: [1]}, isr={0: [1, 2]}, leader={0: 1}
    )
    state.reassignment = {("t", 0): [3, 2]}
    return state


def done() -> Any:
    return make_state({"t": {0: [3, 2]}})


def cancelled() -> Any:
    """Someone cancelled it: back on [1,2], nothing reassigning."""
    return make_state({"t": {0: [1, 2]}})


@pytest.fixture
def polls(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeCluster, list[Any]]]:
    """(the cluster, the states it shows after each poll's sleep, in order; the last one stays)."""
    c = FakeCluster(moving(), complete_on_create=False)
    later: list[Any] = []

    def sleep(seconds: float) -> None:
        if later:
            c.state = later.pop(0)

    monkeypatch.setattr(time, "sleep", sleep)
    yield c, later


def request(**kw: Any) -> ExecuteRequest:
    return ExecuteRequest("plan.json", b"{}", wait=True, poll_interval=0.01, **kw)


def report() -> ExecuteReport:
    return ExecuteReport(Output(color=False))


def test_it_polls_until_the_move_is_complete(polls: tuple[FakeCluster, list[Any]]) -> None:
    c, later = polls
    later += [moving(), moving(), done()]
    (r,) = wait_for(FakeBackend(c), TARGET, request(), report())
    assert (r.topic, r.partition, r.status) == ("t", 0, Status.COMPLETE)
    assert later == []  # it read every state up to the complete one
    assert c.writes() == []  # waiting writes nothing


def test_a_move_someone_cancelled_ends_not_as_planned_and_is_never_submitted_again(
    polls: tuple[FakeCluster, list[Any]],
) -> None:
    c, later = polls
    later += [cancelled(), cancelled()]
    (r,) = wait_for(FakeBackend(c), TARGET, request(), report())
    assert r.status is Status.NOT_AS_PLANNED
    assert [op for op in c.log if op[0] == "create_reassignment"] == []
    assert later == [cancelled()]  # it ended at the first poll that saw it gone


def test_a_timeout_names_what_still_moves(polls: tuple[FakeCluster, list[Any]]) -> None:
    c, _ = polls
    with pytest.raises(BusyError, match=r"Timed out after 0s; still in progress: t-0"):
        wait_for(FakeBackend(c), TARGET, request(timeout=0), report())


def test_ctrl_c_says_the_reassignment_keeps_running(
    polls: tuple[FakeCluster, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    c, _ = polls

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", interrupted)
    with pytest.raises(WaitInterrupted, match="keeps running in the cluster"):
        wait_for(FakeBackend(c), TARGET, request(), report())


def test_each_poll_is_a_step(polls: tuple[FakeCluster, list[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    c, later = polls
    later += [moving(), done()]
    steps: list[st.StepResult] = []
    real = st.step

    def counted(*a: Any, **kw: Any) -> st.StepResult:
        steps.append(real(*a, **kw))
        return steps[-1]

    monkeypatch.setattr(st, "step", counted)
    wait_for(FakeBackend(c), TARGET, request(), report())
    # three polls (moving, moving, done): the last step saw the move end, and said all was done
    assert [(s.moving, s.done, s.all_done) for s in steps] == [(1, 0, False), (1, 0, False), (0, 1, True)]
