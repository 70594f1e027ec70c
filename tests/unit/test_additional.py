"""execute --additional and --disallow-replication-factor-change against the in-memory fake backend; the
expected lines and writes are worked out by hand from Kafka's rules (KAFKA-SPEC §3.6.3, KIP-455, KIP-860)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import reassign_cli.ops.execute as executor
from reassign_cli.core.model import parse_reassignment
from reassign_cli.core.validate import replication_factor_changes
from reassign_cli.errors import BusyError, ExitCode, InvalidInputError
from reassign_cli.ops.execute import execute
from reassign_cli.ops.request import ExecuteRequest
from reassign_cli.render import Output
from reassign_cli.render.progress import ExecuteReport
from tests.fakes import WRITES, FakeBackend, FakeCluster, make_state

LR = "leader.replication.throttled.rate"
FR = "follower.replication.throttled.rate"
LREP = "leader.replication.throttled.replicas"
FREP = "follower.replication.throttled.replicas"

# u-0 moves from [1,2] to [3,2] while o-0's reassignment (someone else's) is running.
PLAN = b'{"version":1,"partitions":[{"topic":"u","partition":0,"replicas":[3,2]}]}'


@pytest.fixture(autouse=True)
def _no_settle_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "THROTTLE_SETTLE_SECONDS", 0.0)


def busy_cluster() -> FakeCluster:
    state = make_state({"o": {0: [1, 2]}, "u": {0: [1, 2], 1: [2, 3]}})
    state.reassignment = {("o", 0): [2, 3]}
    return FakeCluster(state, complete_on_create=False)


def request(tmp_path: Path, data: bytes = PLAN, **kw: Any) -> ExecuteRequest:
    return ExecuteRequest("plan.json", data, rollback_file=str(tmp_path / "rb.json"), **kw)


def test_without_additional_a_running_reassignment_refuses(tmp_path: Path) -> None:
    c = busy_cluster()
    with pytest.raises(BusyError, match="Use --additional"):
        execute(FakeBackend(c), request(tmp_path), ExecuteReport(Output(color=False)))
    assert not [op for op in c.log if op[0] in WRITES]


def test_additional_adds_beside_the_running_reassignment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = busy_cluster()
    req = request(tmp_path, throttle=5000, additional=True)
    assert execute(FakeBackend(c), req, ExecuteReport(Output(color=False))) == ExitCode.OK
    writes = [op for op in c.log if op[0] in WRITES]
    # No setup mark (something reassigns: verify keeps throttles anyway); throttles, then the add.
    assert [op[0] for op in writes] == ["write_priors", "write_configs", "add_reassignment"]
    assert writes[-1] == ("add_reassignment", (("u", 0, (3, 2)),))
    assert c.state.reassignment == {("o", 0): [2, 3], ("u", 0): [3, 2]}
    assert c.configs[("topics", "u")] == {LREP: "0:1,0:2", FREP: "0:3"}
    assert c.configs[("brokers", "3")] == {LR: "5000", FR: "5000"}
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "The inter-broker throttle limit was set to 5000 B/s",
        "Successfully started partition reassignment for u-0",
    ]


def test_additional_on_an_idle_cluster_is_a_plain_execute(tmp_path: Path) -> None:
    c = FakeCluster(make_state({"u": {0: [1, 2]}}), complete_on_create=False)
    req = request(tmp_path, additional=True)
    assert execute(FakeBackend(c), req, ExecuteReport(Output(color=False))) == ExitCode.OK
    assert [op for op in c.log if op[0] in WRITES] == [("create_reassignment", (("u", 0, (3, 2)),), True)]


RF_PLAN = (
    b'{"version":1,"partitions":['
    b'{"topic":"u","partition":0,"replicas":[3]},'  # 2 -> 1
    b'{"topic":"u","partition":1,"replicas":[3,2]},'  # 2 -> 2: fine
    b'{"topic":"o","partition":0,"replicas":[1,2,3]}]}'  # 2 (its running target [2,3]) -> 3
)


def test_rf_changes_in_kafkas_words_sorted() -> None:
    c = busy_cluster()
    # during o-0's reassignment, Kafka's controller counts where it is headed: [2,3] (replicas + adding -
    # removing); here the fake's topic still reads [1,2] with no adding/removing, so 2 either way.
    lines = replication_factor_changes(parse_reassignment(RF_PLAN).entries, c.state)
    assert lines == [
        "o-0: The replication factor is changed from 2 to 3",
        "u-0: The replication factor is changed from 2 to 1",
    ]


def test_rf_change_counts_a_reassigning_partition_by_its_target() -> None:
    state = make_state({"t": {0: [4, 1, 2, 3]}}, brokers=(1, 2, 3, 4))
    state.topics["t"].adding = {0: [4]}
    state.topics["t"].removing = {0: [2, 3]}  # moving [1,2,3] -> [4,1]: heading for 2 replicas
    plan = parse_reassignment(b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}')
    assert replication_factor_changes(plan.entries, state) == [
        "t-0: The replication factor is changed from 2 to 3"
    ]


def test_disallow_rf_change_refuses_the_whole_plan_with_nothing_written(tmp_path: Path) -> None:
    c = busy_cluster()
    req = request(tmp_path, RF_PLAN, additional=True, throttle=5000, disallow_rf_change=True)
    with pytest.raises(InvalidInputError) as e:
        execute(FakeBackend(c), req, ExecuteReport(Output(color=False)))
    assert e.value.exit_code == ExitCode.INVALID
    assert e.value.hint == (
        "o-0: The replication factor is changed from 2 to 3\nu-0: The replication factor is changed from 2 to 1"
    )
    assert not [op for op in c.log if op[0] in WRITES]
    assert not (tmp_path / "rb.json").exists()
