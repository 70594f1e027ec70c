"""ops/logdir_rates.py, the adaptive log-dir throttle (issue 28 item 4): `--replica-alter-log-dirs-throttle
auto` with its own bounds, in execute's paced log-dir run. Every expected rate and line is worked out by hand
from docs/execute-verify.md ("Adaptive throttle"): start at R1, judged once one fetch (1 MiB) of slack per
move is within 40% of the bytes the rate allowed, raised 25% when the copy reached 85% of them, halved (never
below R1) when a follower that is not moving leaves the ISR of a partition led by a broker with log-dir moves."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from reassign_cli.core import autothrottle as at
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.core.throttle import LOG_DIR_RATE
from reassign_cli.errors import OperationalError
from reassign_cli.ops.logdir_rates import LogDirLoop, observe
from reassign_cli.ops.unthrottle import clear_throttles
from tests.fakes import FakeBackend, FakeCluster

KB = 1000
SETTINGS = at.Settings(None, at.Bounds(300 * KB, 1000 * KB, 300 * KB), 20.0)


def test_an_interval_of_log_dir_moves_per_broker() -> None:
    """Broker 1: t-0 grew its future replica by 2 MB and its current one by 200 kB in 2 s; t-1 just started
    (no bytes counted, one more move for the slack). Broker 2: u-0 seen at the end only."""
    last = {("t", 0, 1): (1_000_000, 6_000_000), ("u", 0, 3): (5, 5)}
    now = {("t", 0, 1): (3_000_000, 6_200_000), ("t", 1, 1): (0, 6_000_000), ("u", 0, 2): (70, 80)}
    obs = observe(2.0, last, now, "broker 2 left the ISR of v-0")
    assert obs.seconds == 2.0 and obs.receivers == ()
    assert obs.disks == (at.Receiver(1, 2_000_000, 2), at.Receiver(2, 0, 1))
    # the floor: twice the growth (100 kB/s) per move sharing broker 1's rate (two), one byte over
    assert obs.floors == {(1, "log-dir"): 400_001}
    assert obs.isr_left == "broker 2 left the ISR of v-0"


def state(isr_u: list[int]) -> ClusterState:
    """t-0 on broker 1 (moving between its dirs); u-0 on [1, 2], led by 1, not moving."""
    t = Topic("t", {0: [1]}, isr={0: [1]}, leader={0: 1})
    u = Topic("u", {0: [1, 2]}, isr={0: isr_u}, leader={0: 1})
    return ClusterState([Broker(1), Broker(2)], {"t": t, "u": u})


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.history: list[dict[str, Any]] = []

    def info(self, line: str) -> None:
        self.lines.append(line)

    warn = info

    def throttle_changes(self, history: list[dict[str, Any]], rates: dict[str, int]) -> None:
        self.history = list(history)


def loop(clock: list[float]) -> tuple[LogDirLoop, Report]:
    report = Report()
    wall = datetime(2026, 1, 1, 12, tzinfo=UTC)
    return LogDirLoop(SETTINGS, report, clock=lambda: clock[0], wall=lambda: wall), report


def test_raised_when_throttle_bound_halved_when_a_follower_leaves_the_isr_and_the_prior_restored() -> None:
    c = FakeCluster(state([1, 2]), configs={("brokers", "1"): {LOG_DIR_RATE: "777777"}})
    backend, clock = FakeBackend(c), [0.0]
    runner, report = loop(clock)
    key = ("t", 0, 1)
    runner.poll(backend, {key: (0, 50_000_000)}, ["t", "u"])  # the baseline
    clock[0] = 10.0
    runner.poll(backend, {key: (1, 50_000_000)}, ["t", "u"])  # within the interval: nothing
    assert report.lines == []
    clock[0] = 20.0
    runner.poll(backend, {key: (6_000_000, 50_000_000)}, ["t", "u"])  # first rate: set, not judged
    assert report.lines == ["throttle on broker 1 (log-dir): none -> 300 kB/s (start)"]
    assert c.configs[("brokers", "1")][LOG_DIR_RATE] == "300000"
    # 20 s at 300 kB/s allowed 6 MB; 2 x 1 MiB of slack <= 0.4 x 6 MB: judged; 5.9 MB + 1 MiB >= 0.85 x 6 MB
    clock[0] = 40.0
    runner.poll(backend, {key: (11_900_000, 50_000_000)}, ["t", "u"])
    assert report.lines[1:] == [
        "throttle on broker 1 (log-dir): 300 -> 375 kB/s (throttle-bound, guards green)"
    ]
    assert c.configs[("brokers", "1")][LOG_DIR_RATE] == "375000"
    # broker 2 leaves the ISR of u-0 (led by broker 1, whose disks move): halved, 187.5 kB/s, held at R1
    c.state = state([1])
    clock[0] = 60.0
    runner.poll(backend, {key: (19_400_000, 50_000_000)}, ["t", "u"])
    why = "a follower left the ISR: broker 2 left the ISR of u-0"
    assert report.lines[2:] == [f"throttle on broker 1 (log-dir): 375 -> 300 kB/s ({why})"]
    assert [(h["from"], h["to"]) for h in report.history] == [
        (None, 300_000),
        (300_000, 375_000),
        (375_000, 300_000),
    ]
    assert runner.overrides() == {1: {LOG_DIR_RATE: "300000"}}
    # the operator's own value back exactly at the end (the record kept it before the first write)
    c.state = ClusterState([Broker(1), Broker(2)], {"t": Topic("t", {0: [1]}, isr={0: [1]})})
    clear_throttles(backend, {("t", 0): [1]})
    assert c.configs[("brokers", "1")] == {LOG_DIR_RATE: "777777"}


def test_a_failed_write_keeps_no_rate() -> None:
    class Failing(FakeBackend):
        def commit_throttles(self, *a: Any, **k: Any) -> Any:
            raise OperationalError("broker 1 did not answer")

    clock = [0.0]
    runner, report = loop(clock)
    backend = Failing(FakeCluster(state([1, 2])))
    runner.poll(backend, {("t", 0, 1): (0, 9)}, ["t"])
    clock[0] = 20.0
    runner.poll(backend, {("t", 0, 1): (5, 9)}, ["t"])
    assert report.lines == [
        "broker 1 did not answer; the log-dir throttle rates are decided again at the next interval"
    ]
    assert runner.rates() == {} and runner.overrides() == {}


def test_option_combinations_that_make_no_log_dir_loop_exit_2(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.unit.test_rate_loop import execute_usage

    def cli(*args: str) -> tuple[int, str]:
        return execute_usage(capsys, *args)

    plan = tmp_path / "p.json"
    plan.write_text('{"version":1,"partitions":[]}')
    f = ["--reassignment-json-file", str(plan)]
    auto = ["--replica-alter-log-dirs-throttle", "auto"]
    code, err = cli(*f, *auto, "--min-log-dir-throttle", "300kB", "--max-moves-per-disk", "1")
    assert code == 2 and "--replica-alter-log-dirs-throttle auto needs both --min-log-dir-throttle and" in err
    code, err = cli(*f, *auto, "--min-log-dir-throttle", "300kB", "--max-log-dir-throttle", "1MB", "--wait")
    assert code == 2 and "it needs --max-moves-per-disk or --one-broker-at-a-time" in err
    code, err = cli(*f, "--max-log-dir-throttle", "1MB", "--max-moves-per-disk", "1")
    assert code == 2 and "--max-log-dir-throttle needs --replica-alter-log-dirs-throttle auto or a" in err
    code, err = cli(
        *f,
        *auto,
        "--min-log-dir-throttle",
        "2MB",
        "--max-log-dir-throttle",
        "1MB",
        "--max-moves-per-disk",
        "1",
    )
    assert code == 2 and "--min-log-dir-throttle 2 MB/s is above --max-log-dir-throttle 1 MB/s" in err
    code, err = cli(*f, *auto, "--min-log-dir-throttle", "300kB", "--max-log-dir-throttle", "1MB",
                    "--max-moves-per-broker", "1", "--detach")  # fmt: skip
    # a stored plan carries the loop too (ops/stored_logdir_rates.py), with the same checks
    assert code == 2 and "it needs --max-moves-per-disk or --one-broker-at-a-time" in err
