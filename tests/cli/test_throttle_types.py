"""The click types of the adaptive throttle's options (issue 28 items 1 to 3) on a tiny command of the test's
own (no subcommand takes them yet): bad input exits 2 with one line naming the problem; good input reaches
the command parsed."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from reassign_cli.cli.throttle_types import RATE_OR_AUTO, SECONDS, THROTTLE_SCHEDULE
from reassign_cli.core.autothrottle import Throttle
from reassign_cli.core.throttle_schedule import ThrottleSchedule


@click.command()
@click.option("--throttle-schedule", "schedule", type=THROTTLE_SCHEDULE)
@click.option("--throttle", type=RATE_OR_AUTO)
@click.option("--throttle-interval", "interval", type=SECONDS, default=30.0)
def tiny(schedule: ThrottleSchedule | None, throttle: Throttle, interval: float) -> None:
    click.echo(f"schedule={schedule} throttle={throttle!r} interval={interval}")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(tiny, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_good_values_reach_the_command() -> None:
    code, out, _ = run("--throttle-schedule", "22:00-06:00=200MB,*=40MB", "--throttle", "auto")
    assert code == 0
    assert out == "schedule=22:00-06:00=200000000,*=40000000 throttle='auto' interval=30.0\n"
    code, out, _ = run("--throttle", "50MB", "--throttle-interval", "5")
    assert (code, out) == (0, "schedule=None throttle=50000000 interval=5.0\n")
    assert run("--throttle", "-1")[1] == "schedule=None throttle=-1 interval=30.0\n"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("--throttle-schedule", "22:00-06:00=200MB"),
            "Error: Invalid value for '--throttle-schedule': '22:00-06:00=200MB': no rate for the hours outside "
            "the windows: add *=RATE (e.g. 22:00-06:00=200MB,*=40MB)",
        ),
        (
            ("--throttle-schedule", "01:00-05:00=1MB,04:00-06:00=2MB,*=1MB"),
            "Error: Invalid value for '--throttle-schedule': '01:00-05:00=1MB,04:00-06:00=2MB,*=1MB': "
            "the windows 01:00-05:00 and 04:00-06:00 overlap",
        ),
        (
            ("--throttle", "fast"),
            "Error: Invalid value for '--throttle': 'fast' is not a rate: give B/s as an integer, or a number "
            "with kB, MB, GB (10^3, 10^6, 10^9) or KiB, MiB, GiB (2^10, 2^20, 2^30), e.g. 50MB, or auto",
        ),
        (
            ("--throttle-interval", "0"),
            "Error: Invalid value for '--throttle-interval': '0' is not a positive number of seconds",
        ),
        (
            ("--throttle-interval", "soon"),
            "Error: Invalid value for '--throttle-interval': 'soon' is not a number of seconds",
        ),
    ],
)
def test_bad_values_exit_2_with_one_line(args: tuple[str, ...], line: str) -> None:
    code, out, err = run(*args)
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == line
    assert sum(1 for x in err.splitlines() if x.startswith("Error")) == 1
