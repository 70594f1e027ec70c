"""Rate options (issue 30 item 9): B/s or a number with a unit, one clear error otherwise (exit 2), and a
warning below 1 MB/s unless the plan's time at that rate is known and short. Values worked by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.core.rates import LONG_MAX, UNITS, RateError, low_rate_warning, parse_rate

PLAN = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,2]}]}'


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("50", 50),
        ("50B", 50),
        ("50B/s", 50),
        ("50kB", 50_000),
        ("50MB", 50_000_000),
        ("50MB/s", 50_000_000),
        ("2GB", 2_000_000_000),
        ("1KiB", 1024),
        ("1.5MiB", 1_572_864),  # 1.5 x 1,048,576
        ("1GiB", 1_073_741_824),
        ("100 MB", 100_000_000),
        ("0.5MB", 500_000),
        ("-1", -1),  # Kafka's "no throttle"
        ("-1MB", -1_000_000),
        ("0", 0),
    ],
)
def test_rates_with_and_without_units(text: str, rate: int) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize(
    "text",
    [
        "50mb",
        "50Mb",
        "50KB",
        "50kb",
        "50mib",
        "1e6",
        "50MBps",
        "1.5",
        "abc",
        "",
        "50/s",
        "MB",
        "9223372036854775808",
    ],
)
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(RateError, match=r"is not a rate|is more than"):
        parse_rate(text)


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(sorted(UNITS)))
def test_a_whole_number_times_its_unit(n: int, unit: str) -> None:
    assert parse_rate(f"{n}{unit}") == n * UNITS[unit]


@given(st.integers(min_value=-(2**63), max_value=LONG_MAX))
def test_plain_integers_are_bytes_per_second(n: int) -> None:
    assert parse_rate(str(n)) == n


def test_low_rate_warning() -> None:
    # 50 B/s with no sizes: warned, with the megabytes spelled out
    line = low_rate_warning("--throttle", 50, None)
    assert line is not None and "50 B/s, below 1 MB/s" in line and "50MB" in line and "not known" in line
    # 50 B/s, a plan whose busiest receiver gets 180,000 bytes: 3,600 s = 1:00:00, not short: warned with it
    line = low_rate_warning("--throttle", 50, 180_000 / 50)
    assert line is not None and "at least 1:00:00" in line
    # 50 B/s and 1,500 bytes to the busiest receiver: 30 s, short: no warning
    assert low_rate_warning("--throttle", 50, 1_500 / 50) is None
    assert low_rate_warning("--throttle", 1_000_000, None) is None  # 1 MB/s: fine
    assert low_rate_warning("--throttle", -1, None) is None  # no throttle


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from reassign_cli.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    return int(exc.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize("option", ["--throttle", "--replica-alter-log-dirs-throttle"])
def test_a_bad_rate_exits_2_with_one_line(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_bytes(PLAN)
    monkeypatch.setenv("KAFKA_REASSIGN_ZOOKEEPER", "127.0.0.1:1")  # never reached: the option fails first
    code, err = _main(["execute", "--reassignment-json-file", str(plan), option, "50mb"], capsys)
    assert code == 2
    assert "'50mb' is not a rate" in err and "KiB" in err


def test_generate_throttle_takes_units_and_refuses_zero(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_REASSIGN_ZOOKEEPER", "127.0.0.1:1")
    code, err = _main(["generate", "--topic", "t", "--broker-list", "1", "--throttle", "0MB"], capsys)
    assert code == 2 and "not a positive rate" in err


def test_execute_warns_below_1_mb_per_s(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--throttle 50 (meant: 50MB) through the fake backend: warned on stderr, and still run as given."""
    from tests.unit.test_sequencing import cluster, request, run

    c = cluster()
    assert run(c, request(tmp_path, throttle=50)) == 0
    err = capsys.readouterr().err
    assert "--throttle is 50 B/s, below 1 MB/s (for megabytes per second write 50MB)" in err


class _Sizes:
    """The brokers' DescribeLogDirs answer: t-0 has 6,000 bytes on its replicas 1 and 2."""

    def replica_sizes(self, keys: Any) -> tuple[dict[Any, int], list[int]]:
        return {k: 6_000 for k in keys if k[:2] == ("t", 0)}, []


def test_execute_tells_the_time_at_a_low_rate_with_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """t-0 moves [1,2] -> [3,2]: broker 3 receives 6,000 bytes. At 5 B/s that is 1,200 s = 0:20:00 (warned
    with the time); at 100 B/s, 60 s (short: no warning)."""
    from reassign_cli.ops.execute import warn_low_rates
    from reassign_cli.ops.throttle_writes import seconds_at
    from reassign_cli.render import Output
    from reassign_cli.render.progress import ExecuteReport
    from tests.unit.test_sequencing import cluster

    c = cluster()
    entries = [executor_entry()]
    assert seconds_at(c.state, entries, 5, _Sizes()) == 1_200
    report = ExecuteReport(Output(color=False))
    warn_low_rates(c.state, entries, request_with(tmp_path, 5), report, _Sizes())
    assert "at that rate the copies take at least 0:20:00" in capsys.readouterr().err
    warn_low_rates(c.state, entries, request_with(tmp_path, 100), report, _Sizes())
    assert "below 1 MB/s" not in capsys.readouterr().err


def executor_entry() -> Any:
    from reassign_cli.core.model import PlanEntry

    return PlanEntry("t", 0, [3, 2])


def request_with(tmp_path: Path, throttle: int) -> Any:
    from tests.unit.test_sequencing import request

    return request(tmp_path, throttle=throttle)
