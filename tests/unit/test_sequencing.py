"""The order of reads and writes in execute, clear_throttles and elect-leaders, against the in-memory fake
backend (tests/fakes.py). Expected configs, records and operation sequences are worked out by hand from
Kafka 3.9's throttle rules (KAFKA-SPEC §1.8, §3.6): these pin the sequencing, the real-cluster tests in
tests/integration pin what ZooKeeper and the brokers make of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import reassign_cli.ops.execute as executor
from reassign_cli.backends.protocol import Backend
from reassign_cli.errors import BusyError, ExitCode, InvalidInputError, OperationalError, ReassignError
from reassign_cli.ops.elect import ElectRequest, elect_leaders
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

# t-0 moves from [1,2] to [3,2]: sources 1,2; destination 3.
PLAN = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,2]}]}'
ROLLBACK = (
    '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}'
)


class LoggingReport(ExecuteReport):
    """The real report, which also notes in the cluster's log when the rollback file was saved."""

    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(Output(color=False))
        self.cluster = cluster

    def rollback_saved(self, path: str) -> None:
        self.cluster.log.append(("rollback_saved", Path(path).read_text()))
        super().rollback_saved(path)


@pytest.fixture(autouse=True)
def _no_settle_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "THROTTLE_SETTLE_SECONDS", 0.0)


def cluster(**kw: Any) -> FakeCluster:
    """Brokers 1-3; t-0 on [1,2], t-1 on [2,3]; the operator's leader rate 777 on broker 1 and a retention
    on t; no record of ours yet."""
    return FakeCluster(
        make_state({"t": {0: [1, 2], 1: [2, 3]}}),
        configs={("brokers", "1"): {LR: "777"}, ("topics", "t"): {"retention.ms": "1000"}},
        **kw,
    )


def request(tmp_path: Path, data: bytes = PLAN, **kw: Any) -> ExecuteRequest:
    return ExecuteRequest("plan.json", data, rollback_file=str(tmp_path / "rollback.json"), **kw)


def run(c: FakeCluster, req: ExecuteRequest) -> int:
    backend: Backend = FakeBackend(c)
    return execute(backend, req, LoggingReport(c))


# What execute --throttle 5000 writes for PLAN, by hand:
RECORD: dict[str, Any] = {
    "version": 1,
    "brokers": {"1": {LR: "777", FR: None}, "2": {LR: None, FR: None}, "3": {LR: None, FR: None}},
    "topics": {"t": {LREP: None, FREP: None}},
}
RATES = {LR: "5000", FR: "5000"}
THROTTLES = (
    ("topics", "t", {"retention.ms": "1000", LREP: "0:1,0:2", FREP: "0:3"}),
    ("brokers", "1", RATES),
    ("brokers", "2", RATES),
    ("brokers", "3", RATES),
)
TRIGGER = (("t", 0, (3, 2)),)


def test_execute_writes_rollback_then_record_then_throttles_then_trigger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = cluster()
    assert run(c, request(tmp_path, throttle=5000)) == ExitCode.OK
    writes = [
        op
        for op in c.log
        if op[0] in ("rollback_saved", "write_priors", "write_configs", "create_reassignment")
    ]
    assert writes == [
        ("rollback_saved", ROLLBACK + "\n"),
        ("write_priors", RECORD),
        ("write_configs", THROTTLES),  # topic lists and broker rates in one commit
        ("create_reassignment", TRIGGER, True),
    ]
    # The migration guard ran before the first write; the prior values were read before anything changed.
    first_write = c.log.index(("write_priors", RECORD))
    assert ("ensure_writable",) in c.log[:first_write]
    assert {("read_config", "brokers", "1"), ("read_config", "topics", "t")} <= set(c.log[:first_write])
    assert c.configs[("brokers", "1")] == RATES  # the operator's 777 is in the record, to be put back
    assert c.record == RECORD
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        "Warning: You must run verify periodically, until the reassignment completes, to ensure the "
        "throttle is removed.",
        "The inter-broker throttle limit was set to 5000 B/s",
        "Successfully started partition reassignment for t-0",
    ]


def test_execute_wait_puts_back_exactly_what_was_recorded(tmp_path: Path) -> None:
    c = cluster()  # the fake controller completes the move as soon as it is created
    assert run(c, request(tmp_path, throttle=5000, wait=True, poll_interval=0.1)) == ExitCode.OK
    after_trigger = c.log[c.log.index(("create_reassignment", TRIGGER, True)) + 1 :]
    assert [op for op in after_trigger if op[0] in ("read_state", "write_configs", "delete_priors")] == [
        ("read_state", ("t",), True),  # wait: t-0 is complete
        ("read_state", None, False),  # clear: nothing reassigns anywhere
        (
            "write_configs",
            (
                ("topics", "t", {"retention.ms": "1000"}),
                ("brokers", "1", {LR: "777"}),
                ("brokers", "2", {}),
                ("brokers", "3", {}),
            ),
        ),
        ("delete_priors",),
    ]
    assert c.configs == {
        ("brokers", "1"): {LR: "777"},
        ("brokers", "2"): {},
        ("brokers", "3"): {},
        ("topics", "t"): {"retention.ms": "1000"},
    }
    assert c.record is None
    assert c.state.topics["t"].replicas == {0: [3, 2], 1: [2, 3]}


INVALID = {
    "bad plan": (dict(data=b'{"version":1,"partitions":[{"topic":"t"'), {}, InvalidInputError),
    "unknown broker": (
        dict(data=b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,2]}]}'),
        {},
        InvalidInputError,
    ),
    "unknown partition": (
        dict(data=b'{"version":1,"partitions":[{"topic":"t","partition":7,"replicas":[1,2]}]}'),
        {},
        InvalidInputError,
    ),
    "busy cluster": ({}, {"running": {("u", 0): [1]}}, BusyError),
    "migrating cluster": ({}, {"migrating": True}, OperationalError),
}


@pytest.mark.parametrize(("req_kw", "cluster_kw", "error"), INVALID.values(), ids=INVALID.keys())
def test_nothing_written_on_invalid_input(
    tmp_path: Path, req_kw: dict[str, Any], cluster_kw: dict[str, Any], error: type[ReassignError]
) -> None:
    running = cluster_kw.pop("running", None)
    c = cluster(**cluster_kw)
    c.state.reassignment = running
    configs_before = json.dumps(sorted(c.configs.items()))
    with pytest.raises(error):
        run(c, request(tmp_path, throttle=5000, **req_kw))
    assert c.writes() == []
    assert not any(op[0] == "rollback_saved" for op in c.log)
    assert not (tmp_path / "rollback.json").exists()
    assert json.dumps(sorted(c.configs.items())) == configs_before
    assert c.record is None


def test_lost_create_race_undoes_exactly_this_runs_throttle_writes(tmp_path: Path) -> None:
    # An earlier run's record entry (topic u) must survive the undo untouched.
    earlier = {"version": 1, "brokers": {}, "topics": {"u": {FREP: None}}}
    c = cluster(lose_create_race=True, record=earlier)
    with pytest.raises(BusyError, match="this run's throttle changes were undone"):
        run(c, request(tmp_path, throttle=5000))
    recorded = {**RECORD, "topics": {"t": {LREP: None, FREP: None}, "u": {FREP: None}}}
    assert c.writes() == [
        ("write_priors", recorded),
        ("write_configs", THROTTLES),
        ("create_reassignment", TRIGGER, False),
        # undone in one fenced commit, configs in reverse order (each key back to its prior value or
        # removed), the record last (only this run's entries taken out)
        (
            "write_configs",
            (
                ("brokers", "3", {}),
                ("brokers", "2", {}),
                ("brokers", "1", {LR: "777"}),
                ("topics", "t", {"retention.ms": "1000"}),
            ),
        ),
        ("write_priors", earlier),
    ]
    assert c.record == earlier


def test_clear_throttles_restores_recorded_keys_and_keeps_the_operators() -> None:
    # Our record names t and brokers 1, 2; broker 3's rates are not in it: someone else's, kept and reported.
    record = {
        "version": 1,
        "brokers": {"1": {LR: "777", FR: None}, "2": {LR: None, FR: None}},
        "topics": {"t": {LREP: None, FREP: None}},
    }
    c = cluster(record=record)
    c.configs.update({("topics", "t"): dict(THROTTLES[0][2]), ("brokers", "1"): dict(RATES)})
    c.configs.update({("brokers", "2"): {**RATES, "x": "y"}, ("brokers", "3"): dict(RATES)})
    result = clear_throttles(FakeBackend(c), {("t", 0): [3, 2]})
    assert result is not None
    assert (result.brokers, result.topics) == ([1, 2, 3], ["t"])
    assert result.kept == [f"broker 3: {LR}=5000", f"broker 3: {FR}=5000"]
    assert c.writes() == [
        (
            "write_configs",
            (
                ("topics", "t", {"retention.ms": "1000"}),
                ("brokers", "1", {LR: "777"}),
                ("brokers", "2", {"x": "y"}),
            ),
        ),
        ("delete_priors",),
    ]
    assert c.configs[("brokers", "3")] == RATES


RUNNING = {
    "trigger znode": lambda c: setattr(c.state, "reassignment", {("t", 1): [3, 2]}),
    "adding replicas": lambda c: c.state.topics["t"].adding.update({1: [1]}),
}


@pytest.mark.parametrize("start", RUNNING.values(), ids=RUNNING.keys())
def test_clear_throttles_touches_nothing_while_anything_reassigns(start: Any) -> None:
    c = cluster(record=RECORD)
    start(c)
    assert clear_throttles(FakeBackend(c), {("t", 0): [3, 2]}) is None
    assert c.writes() == []
    # the record is read (the commit is fenced on it), then the state: nothing is planned or written
    assert c.log == [("read_priors",), ("read_state", None, False)]
    assert c.record == RECORD


def test_dry_run_writes_nothing_and_lists_every_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = cluster()
    before = json.dumps(sorted(c.configs.items()))
    assert run(c, request(tmp_path, throttle=5000, dry_run=True)) == ExitCode.OK
    assert c.writes() == []
    assert json.dumps(sorted(c.configs.items())) == before and c.record is None
    assert not (tmp_path / "rollback.json").exists()
    assert [op for op in c.log if op[0] == "planned"] == [
        ("planned", "set", "record"),
        ("planned", "set", "config topics/t"),
        ("planned", "set", "config brokers/1"),
        ("planned", "set", "config brokers/2"),
        ("planned", "set", "config brokers/3"),
        ("planned", "create", "reassignment"),
    ]
    out = capsys.readouterr().out
    assert "Dry run: nothing was written. 6 znode writes would be made:" in out
    assert "Successfully started" not in out


def test_elect_leaders_busy_writes_nothing() -> None:
    c = FakeCluster(make_state({"t": {0: [1, 2]}}), election_pending=True)
    c.state.topics["t"].leader[0] = 2  # the preferred replica 1 is in the ISR but does not lead
    with pytest.raises(BusyError):
        elect_leaders(FakeBackend(c), ElectRequest(partitions=[("t", 0)], timeout=0))
    assert c.writes() == []


def test_elect_leaders_starts_one_election_for_what_is_not_led_by_its_preferred_replica() -> None:
    c = FakeCluster(make_state({"t": {0: [1, 2], 1: [2, 3]}}))
    c.state.topics["t"].leader[0] = 2
    outcome = elect_leaders(FakeBackend(c), ElectRequest(topics=["t"], timeout=5, poll_interval=0.1))
    assert c.writes() == [("start_election", (("t", 0),))]
    assert outcome.submitted == [("t", 0)]
    assert outcome.exit_code == ExitCode.OK


def test_clear_keeps_off_while_an_execute_is_being_set_up() -> None:
    # Another execute has written its throttles and holds the setup mark: the clear waits, then keeps them.
    c = cluster(record=RECORD)
    c.setup_held = True
    assert clear_throttles(FakeBackend(c), {("t", 0): [3, 2]}, setup_wait=0) is None
    assert c.writes() == []
    assert c.record == RECORD


def test_undo_leaves_what_someone_else_wrote_since() -> None:
    # This run set broker 1's leader rate 5000 over nothing (recorded: absent); since then someone set it to
    # 9999. The undo takes back only broker 2's key and the record entry of broker 2; broker 1's value and
    # its record entry stay, for a later verify to restore.
    from reassign_cli.backends.protocol import ConfigChange
    from reassign_cli.ops.throttle_writes import ThrottleWrites, undo_throttles

    after = {"version": 1, "brokers": {"1": {LR: None}, "2": {LR: None}}, "topics": {}}
    c = cluster(record=after)
    c.configs[("brokers", "1")] = {LR: "9999"}
    c.configs[("brokers", "2")] = {LR: "5000"}
    changes = [
        ConfigChange("brokers", "1", {LR: None}, {LR: "5000"}),
        ConfigChange("brokers", "2", {LR: None}, {LR: "5000"}),
    ]
    writes = ThrottleWrites(changes, {"version": 1, "brokers": {}, "topics": {}}, [1, 2], [], after, True)
    undo_throttles(FakeBackend(c), writes)
    assert c.configs[("brokers", "1")] == {LR: "9999"}
    assert c.configs[("brokers", "2")] == {}
    assert c.record == {"version": 1, "brokers": {"1": {LR: None}}, "topics": {}}


# ------------------------------------------------------------------ execute --wait and log-dir moves

LDR = "replica.alter.log.dirs.io.max.bytes.per.second"
# t-0 stays on [1,2]; broker 1's replica moves to its log dir /d1.
DIR_PLAN = (
    b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/d1","any"]}]}'
)


class CopyingDirs:
    """A LogDirMoves that starts every move at once; each replica keeps a future copy in its target dir
    for `polls` DescribeLogDirs answers, then is in the target dir (the calls go to the cluster's log)."""

    def __init__(self, c: FakeCluster, polls: int, stop_in: str | None = None) -> None:
        self.c = c
        self.polls = polls
        self.stop_in = stop_in  # the copy ends up in this dir instead (a move that did not happen)
        self.unanswered: list[int] = []

    def attempt(self, moves: Any) -> Any:
        self.c.log.append(("alter_replica_log_dirs", tuple(sorted(moves.items()))))
        return sorted(moves), {}

    def describe(self, replicas: Any) -> dict[tuple[str, int, int], tuple[str | None, str | None]]:
        self.c.log.append(("describe_log_dirs", tuple(replicas)))
        self.polls -= 1
        if self.polls > 0:
            return {k: ("/d0", "/d1") for k in replicas}
        return {k: (self.stop_in or "/d1", None) for k in replicas}

    def close(self) -> None:
        pass


def run_dirs(c: FakeCluster, mover: CopyingDirs, req: ExecuteRequest, report: ExecuteReport) -> int:
    return execute(FakeBackend(c), req, report, log_dirs=mover)


def test_execute_wait_keeps_the_log_dir_throttle_until_the_copies_are_done(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = FakeCluster(make_state({"t": {0: [1, 2]}}))
    mover = CopyingDirs(c, polls=4)  # three answers with a future replica in /d1, then moved
    req = request(
        tmp_path, DIR_PLAN, log_dir_throttle=1000, wait=True, poll_interval=0.1, bootstrap_server="b:9092"
    )
    assert run_dirs(c, mover, req, LoggingReport(c)) == ExitCode.OK
    ops = [op for op in c.log if op[0] in ("write_configs", "describe_log_dirs", "delete_priors")]
    assert ops == [
        ("describe_log_dirs", (("t", 0, 1),)),  # the brokers answer before anything is written
        ("write_configs", (("brokers", "1", {LDR: "1000"}),)),
        ("describe_log_dirs", (("t", 0, 1),)),
        ("describe_log_dirs", (("t", 0, 1),)),
        ("describe_log_dirs", (("t", 0, 1),)),
        ("write_configs", (("brokers", "1", {}),)),  # only once no future replica is left
        ("delete_priors",),
    ]
    started = c.log.index(("alter_replica_log_dirs", ((("t", 0, 1), "/d1"),)))
    assert ("describe_log_dirs", (("t", 0, 1),)) in c.log[started:]
    err = capsys.readouterr().err
    assert "0/1 replica log-dir moves done; copying t-0 on broker 1 to /d1" in err
    assert "1/1 replica log-dir moves done" in err


def test_execute_wait_times_out_on_a_log_dir_copy_and_keeps_its_throttle(tmp_path: Path) -> None:
    c = FakeCluster(make_state({"t": {0: [1, 2]}}))
    mover = CopyingDirs(c, polls=10**9)  # never done
    req = request(
        tmp_path,
        DIR_PLAN,
        log_dir_throttle=1000,
        wait=True,
        poll_interval=0.1,
        timeout=0.3,
        bootstrap_server="b:9092",
    )
    with pytest.raises(BusyError) as e:
        run_dirs(c, mover, req, LoggingReport(c))
    assert str(e.value) == (
        "Timed out after 0.3s; replicas still moving between log dirs: t-0 on broker 1 (to /d1)"
    )
    assert c.configs[("brokers", "1")] == {LDR: "1000"}  # kept for verify to remove
    assert c.record == {"version": 1, "brokers": {"1": {LDR: None}}, "topics": {}}


def test_execute_wait_reports_and_exits_5_for_a_replica_left_in_another_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = FakeCluster(make_state({"t": {0: [1, 2]}}))
    mover = CopyingDirs(c, polls=2, stop_in="/d0")  # then no copy ever made: not where the plan says
    req = request(tmp_path, DIR_PLAN, log_dir_throttle=1000, wait=True, bootstrap_server="b:9092")
    report = ExecuteReport(Output(color=False))
    assert run_dirs(c, mover, req, report) == ExitCode.NOT_AS_PLANNED
    captured = capsys.readouterr()
    assert report.doc["replica_moves"] == [  # what --format json prints
        {
            "topic": "t",
            "partition": 0,
            "broker": 1,
            "status": "not_moving",
            "target": "/d1",
            "current": "/d0",
            "future": None,
        }
    ]
    assert "Partition t-0 on broker 1 is not being moved from log dir /d0 to /d1." in captured.err
    assert c.record is None  # nothing copies any more: the throttle is off


def test_verify_names_the_orphaned_throttles_it_removes() -> None:
    # An execute wrote RECORD's throttles and was killed before its trigger: t-0 is still on [1,2].
    from reassign_cli.ops.verify import verify

    c = cluster(record=RECORD)
    c.configs.update({("topics", "t"): dict(THROTTLES[0][2]), ("brokers", "1"): dict(RATES)})
    c.configs.update({("brokers", "2"): dict(RATES), ("brokers", "3"): dict(RATES)})
    outcome = verify(FakeBackend(c), {("t", 0): [3, 2]})
    assert outcome.orphans == ([1, 2, 3], ["t"])
    assert outcome.cleared is not None and c.record is None
    # Once the plan is done, the same record is its own finished reassignment's: nothing orphaned.
    c = cluster(record=RECORD)
    c.state.topics["t"].replicas[0] = [3, 2]
    c.state.topics["t"].isr[0] = [3, 2]
    outcome = verify(FakeBackend(c), {("t", 0): [3, 2]})
    assert outcome.orphans is None and outcome.cleared is not None


class _BatchReads(FakeBackend):
    """A backend that reads many entities' configs in one request (the admin API's DescribeConfigs)."""

    def read_configs(self, keys: Any) -> dict[Any, Any]:
        keys = list(keys)
        self._log("read_configs", tuple(keys))
        return {k: (None if (c := self._configs.get(k)) is None else dict(c)) for k in keys}


def test_a_clear_reads_the_entities_it_only_looks_at_in_one_batch_where_the_backend_can() -> None:
    """Topic t and broker 3 are not in our record: the clear only looks at them for throttle keys someone
    else set (broker 3's rates: kept and reported). Through a backend that reads many configs at once,
    that is one batched read, not one read each; what is kept and written is the same as read one by one."""
    record = {"version": 1, "brokers": {"1": {LR: "777", FR: None}, "2": {LR: None, FR: None}}}
    c = cluster(record=record)
    c.configs.update({("topics", "t"): {"retention.ms": "1000"}, ("brokers", "1"): dict(RATES)})
    c.configs.update({("brokers", "2"): dict(RATES), ("brokers", "3"): dict(RATES)})
    result = clear_throttles(_BatchReads(c), {("t", 0): [3, 2]})
    assert result is not None
    assert result.kept == [f"broker 3: {LR}=5000", f"broker 3: {FR}=5000"]
    assert ("read_configs", (("topics", "t"), ("brokers", "3"))) in c.log
    assert not [
        op for op in c.log if op[0] == "read_config" and op[1:] in (("topics", "t"), ("brokers", "3"))
    ]
    assert c.writes() == [
        ("write_configs", (("brokers", "1", {LR: "777"}), ("brokers", "2", {}))),
        ("delete_priors",),
    ]
    assert c.configs[("brokers", "3")] == RATES
