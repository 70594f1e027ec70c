"""ops/rate_loop.py, the throttle that follows the cluster while execute waits (issue 28 items 1 to 3 and 5):
the loop's sequencing with fakes. Every expected rate and line is worked out by hand from the rules in
docs/execute-verify.md ("Adaptive throttle"): start at R1, raise by 25% a throttle-bound receiver and its
source, halve when a follower that is not moving leaves the ISR, the schedule's rate at a boundary."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from reassign_cli.cli import main
from reassign_cli.core import autothrottle as at
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.core.throttle import FOLLOWER_RATE, LEADER_RATE
from reassign_cli.core.throttle_schedule import parse_throttle_schedule
from reassign_cli.ops.rate_loop import RateLoop, Runner, resumed_state
from reassign_cli.ops.throttle_writes import apply_throttles
from reassign_cli.ops.unthrottle import clear_throttles
from tests.fakes import FakeBackend, FakeCluster

MB = 1_000_000
TARGETS = {("t", 0): [3]}


def moving(isr_u: list[int] | None = None) -> ClusterState:
    """t-0 moving from broker 1 to broker 3 (1 leads); u-0 on [1, 2], led by 1, not moving."""
    t = Topic("t", {0: [3, 1]}, adding={0: [3]}, removing={0: [1]}, isr={0: [1]}, leader={0: 1})
    u = Topic("u", {0: [1, 2]}, isr={0: isr_u or [1, 2]}, leader={0: 1})
    return ClusterState([Broker(1), Broker(2), Broker(3)], {"t": t, "u": u})


class Sizes:
    def __init__(self) -> None:
        self.now: dict[tuple[str, int, int], int] = {("t", 0, 1): 500 * MB}

    def replica_sizes(self, keys: Any) -> tuple[dict[Any, int], list[int]]:
        return {k: v for k, v in self.now.items() if k in set(keys)}, []


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.history: list[dict[str, Any]] = []
        self.rates: dict[str, int] = {}

    def info(self, line: str) -> None:
        self.lines.append(line)

    warn = info

    def throttle_changes(self, history: list[dict[str, Any]], rates: dict[str, int]) -> None:
        self.history, self.rates = list(history), dict(rates)


def auto_runner(clock: list[float]) -> tuple[Runner, Sizes, Report]:
    settings = at.Settings(at.Bounds(2 * MB, 16 * MB, 2 * MB), None, 5.0)
    sizes, report = Sizes(), Report()
    wall = datetime(2026, 1, 1, 12, tzinfo=UTC)
    return (
        Runner(RateLoop(settings=settings), sizes, report, clock=lambda: clock[0], wall=lambda: wall),
        sizes,
        report,
    )


def test_a_bound_receiver_and_its_source_are_raised_then_halved_when_a_follower_leaves_the_isr() -> None:
    c = FakeCluster(moving(), configs={("brokers", "3"): {FOLLOWER_RATE: "777"}})
    backend, clock = FakeBackend(c), [0.0]
    runner, sizes, report = auto_runner(clock)
    sizes.now[("t", 0, 3)] = 0
    runner.poll(backend, moving(), TARGETS)  # the baseline: nothing decided
    assert report.lines == []
    clock[0], sizes.now[("t", 0, 3)] = 5.0, 10 * MB
    runner.poll(backend, moving(), TARGETS)  # first interval of new rates: set, not judged
    assert report.lines == [
        "throttle on broker 3 (follower): none -> 2.0 MB/s (start)",
        "throttle on broker 1 (leader): none -> 2.0 MB/s (start)",
    ]
    clock[0] = 7.0
    runner.poll(backend, moving(), TARGETS)  # within the interval: nothing measured
    assert len(report.lines) == 2
    # 10 MB copied in 5 s at 2 MB/s: 10 MB + 1 MiB slack >= 0.85 x 10 MB, and 2 MiB <= 0.4 x 10 MB: bound
    clock[0], sizes.now[("t", 0, 3)] = 10.0, 20 * MB
    runner.poll(backend, moving(), TARGETS)
    assert report.lines[2:] == [
        "throttle on broker 1 (leader): 2.0 -> 2.5 MB/s (feeds broker 3, throttle-bound, guards green)",
        "throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)",
    ]
    assert c.configs[("brokers", "3")][FOLLOWER_RATE] == "2500000"
    assert c.configs[("brokers", "1")][LEADER_RATE] == "2500000"
    assert runner.rates() == {"1/leader": 2_500_000, "3/follower": 2_500_000}
    # broker 2, a follower of u-0 that is not moving, leaves the ISR of u-0 (led by our source 1):
    # halved, 2.5 -> 1.25, never below R1: 2.0 (a change of 20%, written)
    clock[0], sizes.now[("t", 0, 3)] = 15.0, 30 * MB
    runner.poll(backend, moving(isr_u=[1]), TARGETS)
    why = "a follower left the ISR: broker 2 left the ISR of u-0"
    assert report.lines[4:] == [
        f"throttle on broker 1 (leader): 2.5 -> 2.0 MB/s ({why})",
        f"throttle on broker 3 (follower): 2.5 -> 2.0 MB/s ({why})",
    ]
    assert [h["to"] for h in report.history] == [2 * MB, 2 * MB, 2_500_000, 2_500_000, 2 * MB, 2 * MB]
    # item 5: the operator's own prior value comes back exactly, the key the loop added goes
    c.state = ClusterState([Broker(1), Broker(2), Broker(3)], {"t": Topic("t", {0: [3]}, isr={0: [3]})})
    clear_throttles(backend, {("t", 0): [3]})
    assert c.configs[("brokers", "3")] == {FOLLOWER_RATE: "777"}
    assert LEADER_RATE not in c.configs.get(("brokers", "1"), {})


def test_no_raise_above_the_maximum() -> None:
    c = FakeCluster(moving())
    backend, clock = FakeBackend(c), [0.0]
    runner, sizes, report = auto_runner(clock)
    copied = 0
    sizes.now[("t", 0, 3)] = 0
    for tick in range(1, 40):
        clock[0] = 5.0 * tick
        copied += 100 * MB  # always far more than allowed: bound at every interval
        sizes.now[("t", 0, 3)] = copied
        runner.poll(backend, moving(), TARGETS)
    follower = [h["to"] for h in report.history if h["role"] == "follower"]
    # 2.0, 2.5, 3.125, 3.906, 4.882, 6.103, 7.629, 9.536, 11.920, 14.9 -> 16 (within 10% of the maximum)
    assert follower == [
        2_000_000,
        2_500_000,
        3_125_000,
        3_906_250,
        4_882_812,
        6_103_515,
        7_629_393,
        9_536_741,
        11_920_926,
        16_000_000,
    ]
    assert max(int(v) for v in (c.configs[("brokers", "3")][FOLLOWER_RATE],)) == 16 * MB


def test_the_schedule_writes_the_rate_in_force_when_a_poll_crosses_a_boundary() -> None:
    c = FakeCluster(moving())
    backend = FakeBackend(c)
    wall = [datetime(2026, 1, 1, 21, 59, 30, tzinfo=UTC)]
    loop = RateLoop(schedule=parse_throttle_schedule("22:00-06:00=200MB,*=40MB"))
    report = Report()

    class Req:
        throttle = 40 * MB

    req = Req()
    runner = Runner(loop, None, report, req, clock=lambda: 0.0, wall=lambda: wall[0])
    assert runner.start_rate(wall[0]) == 40 * MB
    assert runner.schedule_line(wall[0]) == (
        "Throttle schedule: 22:00-06:00 UTC 200 MB/s, otherwise 40 MB/s; 40 MB/s now, until 22:00 UTC"
    )
    runner.poll(backend, moving(), TARGETS)
    assert report.lines == [
        "throttle on broker 3 (follower): none -> 40.0 MB/s (throttle schedule)",
        "throttle on broker 1 (leader): none -> 40.0 MB/s (throttle schedule)",
    ]
    runner.poll(backend, moving(), TARGETS)  # same minute: nothing written again
    assert len(report.lines) == 2
    wall[0] = datetime(2026, 1, 1, 22, 0, 1, tzinfo=UTC)
    runner.poll(backend, moving(), TARGETS)
    assert report.lines[2:] == [
        "throttle on broker 3 (follower): 40.0 -> 200 MB/s (throttle schedule)",
        "throttle on broker 1 (leader): 40.0 -> 200 MB/s (throttle schedule)",
    ]
    assert c.configs[("brokers", "3")][FOLLOWER_RATE] == "200000000"
    assert req.throttle == 200 * MB  # the moves started next


def test_state_round_trips_and_a_start_writes_the_rates_the_loop_holds() -> None:
    loop = RateLoop(settings=at.Settings(at.Bounds(2 * MB, 16 * MB, 2 * MB), None, 5.0))
    loop.auto = at.State(
        {(3, "follower"): 5 * MB, (1, "leader"): 5 * MB}, {(3, "follower"): "x", (1, "leader"): "x"}
    )
    again = RateLoop.from_state(loop.state())
    assert again.auto == loop.auto and again.settings == loop.settings
    c = FakeCluster(moving())
    backend = FakeBackend(c)
    from reassign_cli.core.model import PlanEntry

    # a new move's throttles (apply_throttles) keep the loop's rates on the brokers it holds, the start
    # rate elsewhere
    entry = PlanEntry("t", 0, [3])
    apply_throttles(backend, moving(), [entry], 2 * MB, None, overrides=loop.overrides())
    assert c.configs[("brokers", "3")][FOLLOWER_RATE] == "5000000"
    assert c.configs[("brokers", "3")][LEADER_RATE] == "2000000"
    assert c.configs[("brokers", "1")][LEADER_RATE] == "5000000"
    # a resumed run starts at what the brokers hold where the record names the keys as ours
    got = resumed_state(backend, [1, 3], at.Bounds(2 * MB, 16 * MB, 2 * MB))
    assert got.rates == {
        (1, "leader"): 5 * MB,
        (1, "follower"): 2 * MB,
        (3, "leader"): 2 * MB,
        (3, "follower"): 5 * MB,
    }


def execute_usage(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """`execute --zookeeper localhost:1 ARGS` in this process, refused before any connection: (exit, stderr)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["execute", "--zookeeper", "localhost:1", *args])
    return int(e.value.code or 0), capsys.readouterr().err


def test_option_combinations_that_make_no_loop_exit_2(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def cli(*args: str) -> tuple[int, str]:
        return execute_usage(capsys, *args)

    plan = tmp_path / "p.json"
    plan.write_text('{"version":1,"partitions":[]}')
    f = ["--reassignment-json-file", str(plan)]
    code, err = cli(*f, "--wait", "--throttle-schedule", "22:00-06:00=200MB")
    assert code == 2 and "no rate for the hours outside the windows" in err
    code, err = cli(*f, "--wait", "--throttle-schedule", "22:00-06:00=200MB,*=40MB", "--throttle", "5MB")
    assert code == 2 and "--throttle-schedule sets the rate itself" in err
    code, err = cli(*f, "--wait", "--throttle", "auto", "--min-throttle", "2MB")
    assert code == 2 and "--throttle auto needs both --min-throttle and --max-throttle" in err
    code, err = cli(*f, "--throttle", "auto", "--min-throttle", "2MB", "--max-throttle", "16MB")
    assert code == 2 and "need --wait" in err
    code, err = cli(*f, "--wait", "--throttle", "fast")
    assert code == 2 and "or auto" in err


def test_the_changes_and_the_rates_held_are_in_the_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from reassign_cli.render import Output
    from reassign_cli.render.progress import ExecuteReport

    report = ExecuteReport(Output(color=False, quiet=False, verbose=False), json=True)
    c = FakeCluster(moving())
    loop = RateLoop(schedule=parse_throttle_schedule("22:00-06:00=200MB,*=40MB"))
    wall = datetime(2026, 1, 1, 22, 0, 1, tzinfo=UTC)
    Runner(loop, None, report, clock=lambda: 0.0, wall=lambda: wall).poll(FakeBackend(c), moving(), TARGETS)
    report.finished(None)
    doc = json.loads(capsys.readouterr().out)
    assert doc["throttle_changes"] == [
        {
            "time": "2026-01-01T22:00:01+00:00",
            "broker": 3,
            "role": "follower",
            "from": None,
            "to": 200 * MB,
            "reason": "throttle schedule",
        },
        {
            "time": "2026-01-01T22:00:01+00:00",
            "broker": 1,
            "role": "leader",
            "from": None,
            "to": 200 * MB,
            "reason": "throttle schedule",
        },
    ]
    assert doc["throttle_rates"] == {"1/leader": 200 * MB, "3/follower": 200 * MB}


def test_a_write_that_fails_is_warned_and_decided_again_and_the_resume_line_names_the_loop() -> None:
    from reassign_cli.errors import OperationalError
    from reassign_cli.ops.request import ExecuteRequest, request_resume_command

    class Failing(FakeBackend):
        def commit_throttles(self, *a: Any, **k: Any) -> Any:
            raise OperationalError("broker 3 did not answer")

    clock = [0.0]
    runner, sizes, report = auto_runner(clock)
    sizes.now[("t", 0, 3)] = 0
    backend = Failing(FakeCluster(moving()))
    runner.poll(backend, moving(), TARGETS)
    clock[0] = 5.0
    runner.poll(backend, moving(), TARGETS)
    assert report.lines == [
        "broker 3 did not answer; the throttle rates are decided again at the next interval"
    ]
    assert runner.rates() == {}  # nothing taken as written
    req = ExecuteRequest("p.json", b"", throttle=2 * MB, max_moves=1, rate_loop=runner)
    assert request_resume_command(req) == (
        "kafka-reassign execute --resume --reassignment-json-file p.json --max-moves-per-broker 1 "
        "--throttle auto --min-throttle 2000000 --max-throttle 16000000 --throttle-interval 5"
    )
