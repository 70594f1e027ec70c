"""cancel --all's pure parts and its AlterPartitionReassignments chunks and retries, worked out by hand
(the real cancel is tested in tests/integration/test_cancel_all.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka.errors import KafkaTimeoutError, NoReassignmentInProgressError, RequestTimedOutError

from reassign_cli.backends.admin import client
from reassign_cli.core.in_flight import in_flight_rollback_json, in_flight_targets
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.errors import OperationalError
from tests.helpers import run_cli


def _state() -> ClusterState:
    t = Topic(
        "t",
        # p0: moving 1,2 -> 2,3 (RS 2,3,1; AR 3; RR 1). p1: not moving. p2: pure addition 1 -> 1,2.
        {0: [2, 3, 1], 1: [1, 2], 2: [1, 2]},
        adding={0: [3], 2: [2]},
        removing={0: [1]},
    )
    u = Topic("u", {0: [1, 2]})
    # u-0 only in the trigger znode (the controller has not acted yet): 1,2 -> 3,1.
    return ClusterState([Broker(1), Broker(2), Broker(3)], {"t": t, "u": u}, reassignment={("u", 0): [3, 1]})


def test_in_flight_targets_are_where_each_partition_is_moving() -> None:
    assert in_flight_targets(_state()) == {("t", 0): [2, 3], ("t", 2): [1, 2], ("u", 0): [3, 1]}


def test_nothing_in_flight() -> None:
    assert in_flight_targets(ClusterState([Broker(1)], {"t": Topic("t", {0: [1]})})) == {}


def test_rollback_json_holds_the_targets_of_what_is_cancelled() -> None:
    targets = in_flight_targets(_state())
    assert in_flight_rollback_json(targets, [("u", 0), ("t", 0)]) == (
        '{"version":1,"partitions":['
        '{"topic":"t","partition":0,"replicas":[2,3],"log_dirs":["any","any"]},'
        '{"topic":"u","partition":0,"replicas":[3,1],"log_dirs":["any","any"]}]}'
    )


class FakeAdmin:
    """AlterPartitionReassignments answering from a script: one entry per call, an exception to raise
    or {partition: error} (missing partitions: accepted)."""

    def __init__(self, script: list[Any]) -> None:
        self.script, self.calls = script, []  # type: ignore[var-annotated]

    def alter_partition_reassignments(self, req: dict[Any, None]) -> dict[Any, Any]:
        self.calls.append(sorted((tp.topic, tp.partition) for tp in req))
        step = self.script.pop(0) if self.script else {}
        if isinstance(step, Exception):
            raise step
        return {tp: step.get((tp.topic, tp.partition)) for tp in req}


def test_cancel_is_sent_in_chunks() -> None:
    admin, slept = FakeAdmin([{}, {}, {("t", 4): NoReassignmentInProgressError}]), []
    tps = [("t", p) for p in range(5)]
    done = client.cancel_reassignments(admin, tps, chunk=2, sleep=slept.append)
    assert admin.calls == [[("t", 0), ("t", 1)], [("t", 2), ("t", 3)], [("t", 4)]]
    assert (done, slept) == (tps[:4], [])


def test_timeouts_are_retried_with_a_doubling_backoff() -> None:
    admin, slept = FakeAdmin([KafkaTimeoutError(), {("t", 1): RequestTimedOutError}, {}]), []
    done = client.cancel_reassignments(admin, [("t", 0), ("t", 1)], sleep=slept.append)
    # Third call: only the partition that timed out; its earlier request may have gone through.
    assert admin.calls == [[("t", 0), ("t", 1)], [("t", 0), ("t", 1)], [("t", 1)]]
    assert (done, slept) == ([("t", 0), ("t", 1)], [0.5, 1.0])


def test_not_reassigning_after_a_timeout_counts_as_cancelled() -> None:
    admin = FakeAdmin([KafkaTimeoutError(), {("t", 0): NoReassignmentInProgressError}])
    assert client.cancel_reassignments(admin, [("t", 0)], sleep=lambda s: None) == [("t", 0)]


def test_the_retries_are_bounded() -> None:
    admin, slept = FakeAdmin([KafkaTimeoutError()] * 10), []
    with pytest.raises(OperationalError, match="timed out 6 times; 1 partitions may still reassign"):
        client.cancel_reassignments(admin, [("t", 0)], sleep=slept.append)
    assert slept == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert len(admin.calls) == 6


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (  # neither a file nor --all: the stored plan (issue 25), whose cancel needs the brokers too
            ["--zookeeper", "127.0.0.1:1"],
            "Error: the cancel goes through the brokers (AlterPartitionReassignments): give "
            "--bootstrap-server beside --zookeeper (ZooKeeper mode keeps its throttle record in ZooKeeper)\n"
            "Run: kafka-reassign cancel --zookeeper 127.0.0.1:1 --bootstrap-server HOST:PORT",
        ),
        (
            ["--all", "--reassignment-json-file", "p.json", "--bootstrap-server", "127.0.0.1:1"],
            "Error: give one of --reassignment-json-file and --all (neither: the stored plan)",
        ),
        (
            ["--rollback-file", "r.json", "--reassignment-json-file", "p.json", "--bootstrap-server", "x:1"],
            "Error: --rollback-file goes with --all or the stored plan (execute saved the rollback of a "
            "plan file)",
        ),
        (
            ["--all", "--zookeeper", "127.0.0.1:1"],
            "Error: the cancel goes through the brokers (AlterPartitionReassignments): give "
            "--bootstrap-server beside --zookeeper (ZooKeeper mode keeps its throttle record in ZooKeeper)\n"
            # the brokers registered in ZooKeeper; none known here (nothing listens on port 1)
            "Run: kafka-reassign cancel --all --zookeeper 127.0.0.1:1 --bootstrap-server HOST:PORT",
        ),
    ],
    ids=["stored-zookeeper-alone", "both", "rollback-with-file", "zookeeper-alone"],
)
def test_usage_errors_are_exit_2_and_write_nothing(tmp_path: Path, args: list[str], line: str) -> None:
    r = run_cli("cancel", *args, cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr.splitlines()) == (2, "", line.splitlines())
    assert list(tmp_path.iterdir()) == []


def _moving_cluster(live: list[int]) -> Any:
    from tests.fakes import FakeBackend, FakeCluster, make_state

    # t-0 moves [1,2] -> [3,2] (RS [3,2,1], AR [3], RR [1]); u-0 is still.
    c = FakeCluster(make_state({"t": {0: [1, 2]}, "u": {0: [1, 2]}}))
    c.state.topics["t"] = Topic(
        "t", {0: [3, 2, 1]}, adding={0: [3]}, removing={0: [1]}, isr={0: [1, 2]}, leader={0: 1}
    )
    c.state.brokers = [Broker(b) for b in live]
    return c, FakeBackend(c)


def test_cancel_all_saves_the_rollback_before_the_cancel(tmp_path: Path) -> None:
    from reassign_cli.ops.cancel_all import cancel_all

    c, backend = _moving_cluster([1, 2, 3])
    rollback = tmp_path / "rb.json"
    seen: list[bool] = []
    real = backend.cancel_reassignments

    def cancel_spy(tps: Any) -> Any:
        seen.append(rollback.exists())
        return real(tps)

    backend.cancel_reassignments = cancel_spy  # type: ignore[method-assign]
    done = cancel_all(backend, rollback_file=str(rollback), timeout=5)
    assert (done.in_flight, done.rollback_file, seen) == ([("t", 0)], str(rollback), [True])
    assert done.outcome is not None and done.outcome.cancelled == [("t", 0)]
    assert rollback.read_text() == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,2],"log_dirs":["any","any"]}]}\n'
    )
    assert c.state.topics["t"].replicas == {0: [2, 1]}


def test_cancel_all_refuses_what_would_leave_a_partition_leaderless(tmp_path: Path) -> None:
    from reassign_cli.errors import InvalidInputError
    from reassign_cli.ops.cancel_all import cancel_all

    c, backend = _moving_cluster([3])  # the original replicas 2,1 are both down
    with pytest.raises(InvalidInputError, match="cannot cancel the reassignment of t-0"):
        cancel_all(backend, rollback_file=str(tmp_path / "rb.json"), timeout=5)
    assert list(tmp_path.iterdir()) == []
    assert c.writes() == []


def test_cancel_all_with_nothing_in_flight_writes_nothing(tmp_path: Path) -> None:
    from reassign_cli.ops.cancel_all import cancel_all
    from tests.fakes import FakeBackend, FakeCluster, make_state

    c = FakeCluster(make_state({"t": {0: [1, 2]}}))
    done = cancel_all(FakeBackend(c), rollback_file=str(tmp_path / "rb.json"))
    assert (done.in_flight, done.rollback_file, done.outcome) == ([], None, None)
    assert list(tmp_path.iterdir()) == [] and c.writes() == []


def test_what_was_listed_but_not_cancelled_is_named(tmp_path: Path) -> None:
    from reassign_cli.core.in_flight import not_cancelled_line
    from reassign_cli.ops.cancel_all import cancel_all

    c, backend = _moving_cluster([1, 2, 3])
    c.state.reassignment = {("u", 0): [3, 1]}  # in the trigger znode; the controller has not acted yet
    done = cancel_all(backend, rollback_file=str(tmp_path / "rb.json"), timeout=5)
    assert done.in_flight == [("t", 0), ("u", 0)]
    assert done.outcome is not None and done.outcome.cancelled == [("t", 0)]
    assert not_cancelled_line(done.in_flight, done.outcome.cancelled) == (
        "1 of the 2 partitions listed in flight were not cancelled (not started by the controller yet, or "
        "finished meanwhile): u-0; see kafka-reassign list, and run cancel --all again if they still move"
    )
    assert not_cancelled_line([("t", 0)], [("t", 0)]) is None


def test_retriable_errors_are_retried_too_and_others_fail_at_once() -> None:
    from kafka.errors import ClusterAuthorizationFailedError, NotControllerError

    admin, slept = FakeAdmin([NotControllerError(), {("t", 0): NotControllerError}, {}]), []
    assert client.cancel_reassignments(admin, [("t", 0)], sleep=slept.append) == [("t", 0)]
    assert (len(admin.calls), slept) == (3, [0.5, 1.0])
    with pytest.raises(OperationalError, match="AlterPartitionReassignments failed"):
        client.cancel_reassignments(
            FakeAdmin([ClusterAuthorizationFailedError()]), [("t", 0)], sleep=slept.append
        )


class FakeLister:
    """ListPartitionReassignments answering from a script: an exception to raise, or the answer."""

    def __init__(self, script: list[Any]) -> None:
        self.script, self.calls = script, 0

    def list_partition_reassignments(self) -> Any:
        self.calls += 1
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def test_listing_is_retried_with_a_bounded_backoff() -> None:
    from kafka.errors import ClusterAuthorizationFailedError, KafkaConnectionError, NotControllerError

    slept: list[float] = []
    lister = FakeLister([KafkaTimeoutError(), NotControllerError(), KafkaConnectionError(), {"x": 1}])
    assert client.list_reassignments(lister, sleep=slept.append) == {"x": 1}
    assert (lister.calls, slept) == (4, [0.5, 1.0, 2.0])
    slept.clear()
    with pytest.raises(OperationalError, match="ListPartitionReassignments failed 6 times"):
        client.list_reassignments(FakeLister([KafkaTimeoutError()] * 10), sleep=slept.append)
    assert slept == [0.5, 1.0, 2.0, 4.0, 8.0]
    with pytest.raises(OperationalError, match="ListPartitionReassignments failed: "):
        client.list_reassignments(FakeLister([ClusterAuthorizationFailedError()]), sleep=slept.append)
