"""The sequencing rules the admin-API backend brings, against the in-memory fake backend (tests/fakes.py):
a reassignment of another topic blocks execute (Kafka's tool refuses while ListPartitionReassignments lists
any); a broker's config is out of reach while the broker is not registered; a backend without a request
size limit does not split a plan; cancel goes through the backend. Expected values worked out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import reassign_cli.ops.execute as executor
from reassign_cli.core.model import Topic
from reassign_cli.errors import BusyError, ExitCode, InvalidInputError
from reassign_cli.ops.cancel import cancel
from reassign_cli.ops.execute import execute
from reassign_cli.ops.request import ExecuteRequest
from reassign_cli.ops.unthrottle import clear_throttles
from reassign_cli.render import Output
from reassign_cli.render.progress import ExecuteReport
from tests.fakes import FakeBackend, FakeCluster, make_state

LR = "leader.replication.throttled.rate"
FR = "follower.replication.throttled.rate"
LREP = "leader.replication.throttled.replicas"
FREP = "follower.replication.throttled.replicas"
PLAN = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,2]}]}'


@pytest.fixture(autouse=True)
def _no_settle_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "THROTTLE_SETTLE_SECONDS", 0.0)


def request(tmp_path: Path, data: bytes = PLAN, **kw: Any) -> ExecuteRequest:
    return ExecuteRequest("plan.json", data, rollback_file=str(tmp_path / "rollback.json"), **kw)


def run(c: FakeCluster, req: ExecuteRequest) -> int:
    return execute(FakeBackend(c), req, ExecuteReport(Output(color=False)))


def moving_u() -> Topic:
    """Topic u, partition 0 moving from [1] to [2] (RS [2,1], AR [2], RR [1])."""
    return Topic("u", {0: [2, 1]}, adding={0: [2]}, removing={0: [1]})


@pytest.mark.parametrize("lists_all", [True, False])
def test_a_reassignment_of_another_topic_blocks_execute_when_the_backend_lists_it(
    tmp_path: Path, lists_all: bool
) -> None:
    c = FakeCluster(make_state({"t": {0: [1, 2]}}), lists_all_reassignments=lists_all)
    c.state.topics["u"] = moving_u()
    if lists_all:  # the admin API: refused before anything is written, as Kafka's tool refuses
        with pytest.raises(BusyError, match="existing partition assignment"):
            run(c, request(tmp_path, throttle=5000))
        assert c.writes() == []
        assert not (tmp_path / "rollback.json").exists()
    else:  # ZooKeeper reads only the plan's topics: it cannot see u's move, and goes ahead
        assert run(c, request(tmp_path, throttle=5000)) == ExitCode.OK
        assert ("create_reassignment", (("t", 0, (3, 2)),), True) in c.writes()


def test_rate_change_of_the_running_plan_is_refused_while_another_topic_moves(tmp_path: Path) -> None:
    # t-0 moves to [3,2] (this plan); u-0 moves too: the running reassignment is not only this plan's.
    c = FakeCluster(make_state({"t": {0: [1, 2]}}), lists_all_reassignments=True)
    c.state.topics["t"] = Topic("t", {0: [3, 2, 1]}, adding={0: [3]}, removing={0: [1]})
    c.state.topics["u"] = moving_u()
    with pytest.raises(BusyError):
        run(c, request(tmp_path, throttle=7000))
    assert c.writes() == []


def test_a_broker_that_is_down_gets_no_rate_and_no_record_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # t-0 [1,2] -> [3,2] with broker 1 down: sources 1,2, destination 3. Through the admin API broker 1's
    # rates cannot be set; it sends nothing while down. Brokers 2 and 3 and the topic lists as usual.
    c = FakeCluster(make_state({"t": {0: [1, 2]}}, brokers=(2, 3)), offline_broker_configs=False)
    assert run(c, request(tmp_path, throttle=5000)) == ExitCode.OK
    rates = {LR: "5000", FR: "5000"}
    assert c.writes()[:2] == [
        (
            "write_priors",
            {
                "version": 1,
                "brokers": {"2": {LR: None, FR: None}, "3": {LR: None, FR: None}},
                "topics": {"t": {LREP: None, FREP: None}},
            },
        ),
        (
            "write_configs",
            (
                ("topics", "t", {LREP: "0:1,0:2", FREP: "0:3"}),
                ("brokers", "2", rates),
                ("brokers", "3", rates),
            ),
        ),
    ]
    assert "Not throttled: broker 1, not registered" in capsys.readouterr().err


RECORD = {
    "version": 1,
    "brokers": {"2": {LR: None}, "4": {LR: "100"}},
    "topics": {"t": {FREP: None}},
}


@pytest.mark.parametrize("offline_configs", [True, False])
def test_clear_keeps_the_entry_of_a_broker_out_of_reach(offline_configs: bool) -> None:
    # Broker 4 is in our record (its prior rate 100) but not registered.
    c = FakeCluster(make_state({"t": {0: [1, 2]}}), record=RECORD, offline_broker_configs=offline_configs)
    c.configs.update(
        {("brokers", "2"): {LR: "9"}, ("brokers", "4"): {LR: "9"}, ("topics", "t"): {FREP: "0:3"}}
    )
    result = clear_throttles(FakeBackend(c), {("t", 0): [1, 2]})
    assert result is not None
    if offline_configs:  # ZooKeeper: broker 4's config znode is restored like any other
        assert result.pending == []
        assert c.configs[("brokers", "4")] == {LR: "100"}
        assert c.record is None
    else:  # the admin API: broker 4 waits, its entry stays for the verify after it is back
        assert result.pending == [4]
        assert c.configs[("brokers", "4")] == {LR: "9"}
        assert c.record == {"version": 1, "brokers": {"4": {LR: "100"}}, "topics": {}}
    assert c.configs[("brokers", "2")] == {} and c.configs[("topics", "t")] == {}


THREE = (
    b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,2]},'
    b'{"topic":"t","partition":1,"replicas":[1,3]},{"topic":"t","partition":2,"replicas":[2,1]}]}'
)


@pytest.mark.parametrize("limit", [100, None])
def test_only_a_backend_with_a_size_limit_splits_a_plan(tmp_path: Path, limit: int | None) -> None:
    # Each entry is 41 bytes ({"topic":"t","partition":0,"replicas":[3,2]}): 100 bytes hold two, not three.
    c = FakeCluster(make_state({"t": {0: [1, 2], 1: [2, 3], 2: [3, 1]}}), bytes_limit=limit)
    if limit is None:
        assert run(c, request(tmp_path, THREE)) == ExitCode.OK
        creates = [op for op in c.writes() if op[0] == "create_reassignment"]
        assert creates == [
            ("create_reassignment", (("t", 0, (3, 2)), ("t", 1, (1, 3)), ("t", 2, (2, 1))), True)
        ]
    else:
        with pytest.raises(InvalidInputError, match="more than one znode holds"):
            run(c, request(tmp_path, THREE))
        assert c.writes() == []


def test_cancel_goes_through_the_backend_then_clears_the_throttles() -> None:
    # t-0 moves [1,2] -> [3,2] (RS [3,2,1], AR [3], RR [1]); our record has the topic's follower list.
    c = FakeCluster(
        make_state({"t": {0: [1, 2]}}), record={"version": 1, "brokers": {}, "topics": {"t": {FREP: None}}}
    )
    c.state.topics["t"] = Topic(
        "t", {0: [3, 2, 1]}, adding={0: [3]}, removing={0: [1]}, isr={0: [1, 2]}, leader={0: 1}
    )
    c.configs[("topics", "t")] = {FREP: "0:3"}
    outcome = cancel(FakeBackend(c), {("t", 0): [3, 2]}, timeout=5)
    assert outcome.cancelled == [("t", 0)]
    assert c.writes() == [
        ("cancel_reassignments", (("t", 0),)),
        ("write_configs", (("topics", "t", {}),)),
        ("delete_priors",),
    ]
    assert c.state.topics["t"].replicas == {0: [2, 1]}  # RS minus AR, in RS order (the controller's)


class FakeDirs:
    """A LogDirMoves that reports each replica's (current, future) log dirs from a dict."""

    def __init__(self, dirs: dict[tuple[str, int, int], tuple[str | None, str | None]]) -> None:
        self.dirs = dirs
        self.asked: list[list[tuple[str, int, int]]] = []
        self.unanswered: list[int] = []

    def attempt(self, moves: Any) -> Any:
        raise AssertionError("verify starts nothing")

    def describe(self, replicas: Any) -> dict[tuple[str, int, int], tuple[str | None, str | None]]:
        self.asked.append(list(replicas))
        return {k: v for k, v in self.dirs.items() if k in replicas}

    def close(self) -> None:
        pass


@pytest.mark.parametrize("moving", [True, False])
def test_verify_keeps_the_throttles_while_a_replica_moves_between_log_dirs(moving: bool) -> None:
    from reassign_cli.core.progress import MoveStatus
    from reassign_cli.ops.verify import verify

    record = {
        "version": 1,
        "brokers": {"1": {"replica.alter.log.dirs.io.max.bytes.per.second": None}},
        "topics": {},
    }
    c = FakeCluster(make_state({"t": {0: [1, 2]}}), record=record)
    c.configs[("brokers", "1")] = {"replica.alter.log.dirs.io.max.bytes.per.second": "1000"}
    dirs = FakeDirs({("t", 0, 1): ("/d0", "/d1") if moving else ("/d1", None)})
    outcome = verify(FakeBackend(c), {("t", 0): [1, 2]}, dirs={("t", 0, 1): "/d1"}, log_dirs=dirs)
    assert dirs.asked == [[("t", 0, 1)]]
    assert [m.status for m in outcome.moves] == [MoveStatus.IN_PROGRESS if moving else MoveStatus.COMPLETE]
    if moving:  # the log-dir rate stays while the future replica copies
        assert outcome.cleared is None and c.writes() == []
    else:
        assert outcome.cleared is not None
        assert c.configs[("brokers", "1")] == {} and c.record is None


def _ldr_cluster() -> FakeCluster:
    record = {"version": 1, "brokers": {"1": {"replica.alter.log.dirs.io.max.bytes.per.second": None}}}
    c = FakeCluster(make_state({"t": {0: [1, 2]}}), record={**record, "topics": {}})
    c.configs[("brokers", "1")] = {"replica.alter.log.dirs.io.max.bytes.per.second": "1000"}
    return c


@pytest.mark.parametrize("mover", ["none", "silent"])
def test_verify_keeps_the_throttles_when_it_cannot_see_the_log_dir_moves(mover: str) -> None:
    from reassign_cli.core.progress import MoveStatus
    from reassign_cli.ops.verify import verify

    c = _ldr_cluster()
    dirs = FakeDirs({})
    dirs.unanswered = [1]  # broker 1 did not answer DescribeLogDirs
    outcome = verify(
        FakeBackend(c),
        {("t", 0): [1, 2]},
        dirs={("t", 0, 1): "/d1"},
        log_dirs=dirs if mover == "silent" else None,
    )
    assert outcome.cleared is None and c.writes() == []
    assert outcome.blind is not None
    if mover == "silent":
        assert [m.status for m in outcome.moves] == [MoveStatus.UNKNOWN]
        assert outcome.blind.startswith("Throttles kept: broker 1 did not answer DescribeLogDirs")
    else:
        assert "without the admin API" in outcome.blind


class StoppableDirs(FakeDirs):
    """A copy into /d1 that stops (its future replica dropped) when asked to stay in /d0."""

    def __init__(self) -> None:
        super().__init__({("t", 0, 1): ("/d0", "/d1")})
        self.altered: list[dict[tuple[str, int, int], str]] = []

    def attempt(self, moves: Any) -> Any:
        self.altered.append(dict(moves))
        for key, d in moves.items():
            self.dirs[key] = (d, None)
        return sorted(moves), {}


def test_cancel_stops_the_log_dir_copy_then_clears() -> None:
    c = _ldr_cluster()
    dirs = StoppableDirs()
    outcome = cancel(FakeBackend(c), {("t", 0): [1, 2]}, dirs={("t", 0, 1): "/d1"}, log_dirs=dirs)
    assert dirs.altered == [{("t", 0, 1): "/d0"}]  # back to its current dir, as Kafka's --cancel
    assert outcome.stopped == {("t", 0, 1): "/d0"}
    assert outcome.kept is None and outcome.cleared is not None
    assert c.configs[("brokers", "1")] == {} and c.record is None


def test_cancel_keeps_the_throttles_while_a_copy_it_did_not_stop_runs() -> None:
    c = _ldr_cluster()
    dirs = FakeDirs({("t", 0, 1): ("/d0", "/d2")})  # copying elsewhere: not the plan's move, not stopped
    outcome = cancel(FakeBackend(c), {("t", 0): [1, 2]}, dirs={("t", 0, 1): "/d1"}, log_dirs=dirs)
    assert outcome.stopped == {} and outcome.cleared is None
    assert outcome.kept == "Throttles kept: these replicas still copy between log dirs: t-0 on broker 1."
    assert c.writes() == []


class ScannedDirs(StoppableDirs):
    """StoppableDirs that also lists every future copy (cancel --all's scan); `silent` brokers do not answer."""

    def __init__(self, silent: list[int] | None = None) -> None:
        super().__init__()
        self.silent = silent or []

    def futures(self, brokers: Any) -> dict[tuple[str, int, int], str]:
        self.unanswered = [b for b in brokers if b in self.silent]
        return {k: f for k, (_, f) in self.dirs.items() if f is not None and k[2] not in self.silent}


def test_cancel_all_stops_the_log_dir_moves_in_flight_then_clears() -> None:
    from reassign_cli.ops.cancel_all import cancel_all

    c = _ldr_cluster()
    dirs = ScannedDirs()
    done = cancel_all(FakeBackend(c), log_dirs=dirs, timeout=5)
    # No partition reassignment: nothing cancelled, no rollback file; the copy into /d1 stopped.
    assert (done.in_flight, done.rollback_file) == ([], None)
    assert done.outcome is not None and done.outcome.cancelled == []
    assert dirs.altered == [{("t", 0, 1): "/d0"}]
    assert done.outcome.stopped == {("t", 0, 1): "/d0"}
    assert done.outcome.kept is None and done.outcome.cleared is not None
    assert c.configs[("brokers", "1")] == {} and c.record is None


def test_cancel_all_keeps_the_throttles_when_a_broker_cannot_be_seen() -> None:
    from reassign_cli.ops.cancel_all import cancel_all

    c = _ldr_cluster()
    dirs = ScannedDirs(silent=[2])
    done = cancel_all(FakeBackend(c), log_dirs=dirs, timeout=5)
    assert done.outcome is not None and done.outcome.stopped == {("t", 0, 1): "/d0"}
    assert done.outcome.cleared is None
    assert done.outcome.kept == (
        "Throttles kept: broker 2 did not answer DescribeLogDirs, so whether its replicas still move "
        "between log dirs is unknown."
    )
    assert c.configs[("brokers", "1")] == {"replica.alter.log.dirs.io.max.bytes.per.second": "1000"}
