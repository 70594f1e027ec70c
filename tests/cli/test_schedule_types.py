"""The click types of `--hours` and `--not-before` (issue 25 item 7) on a tiny command of the test's own (no
subcommand takes them yet): bad input exits 2 with one line naming the problem; good input reaches the
command parsed, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import click
import pytest
from click.testing import CliRunner

from reassign_cli.cli.schedule_types import HOURS, NOT_BEFORE, REASON
from reassign_cli.core.schedule import REASON_MAX, Hours


@click.command()
@click.option("--hours", type=HOURS)
@click.option("--not-before", "not_before", type=NOT_BEFORE)
@click.option("--reason", type=REASON)
def tiny(hours: Hours | None, not_before: datetime | None, reason: str | None) -> None:
    nb = None if not_before is None else not_before.isoformat()
    click.echo(f"hours={hours} not_before={nb} reason={reason!r}")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(tiny, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_good_values_reach_the_command_in_utc() -> None:
    code, out, _ = run("--hours", "22:00-06:00", "--not-before", "2026-12-01T02:00+01:00")
    assert code == 0
    assert out == "hours=22:00-06:00 not_before=2026-12-01T01:00:00+00:00 reason=None\n"
    assert NOT_BEFORE.convert(datetime(2026, 1, 1, tzinfo=UTC), None, None) == datetime(
        2026, 1, 1, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("--hours", "25:00-05:00"),
            "Error: Invalid value for '--hours': '25:00-05:00': 25:00 is not a time of day (00:00 to 23:59)",
        ),
        (
            ("--hours", "01:00"),
            "Error: Invalid value for '--hours': '01:00': expected START-END, e.g. 01:00-05:00 (no dash found)",
        ),
        (
            ("--hours", "01:00:00-05:00"),
            "Error: Invalid value for '--hours': '01:00:00-05:00': seconds are not taken, give HH:MM (01:00)",
        ),
        (
            ("--hours", "05:00-05:00"),
            "Error: Invalid value for '--hours': '05:00-05:00': start and end are equal; "
            "for the whole day give 00:00-24:00 (or leave --hours out)",
        ),
        (
            ("--not-before", "2026-12-01T01:00"),
            "Error: Invalid value for '--not-before': '2026-12-01T01:00' has no time zone: "
            "add Z for UTC (e.g. 2026-12-01T01:00Z), or an offset",
        ),
        (
            ("--not-before", "next week"),
            "Error: Invalid value for '--not-before': 'next week': "
            "expected YYYY-MM-DDTHH:MM[:SS] with a zone, e.g. 2026-12-01T01:00Z",
        ),
    ],
)
def test_bad_values_exit_2_with_one_line(args: tuple[str, ...], line: str) -> None:
    code, out, err = run(*args)
    assert code == 2
    assert out == ""
    errors = [x for x in err.splitlines() if x.startswith("Error:")]
    assert errors == [line]


def test_reason_is_folded_to_one_line_and_a_long_one_refused() -> None:
    code, out, _ = run("--reason", "  disk on\nbroker 3  ")
    assert (code, out) == (0, "hours=None not_before=None reason='disk on broker 3'\n")
    assert run("--reason", "   ")[1] == "hours=None not_before=None reason=None\n"
    code, out, err = run("--reason", "x" * (REASON_MAX + 1))
    assert (code, out) == (2, "")
    assert [x for x in err.splitlines() if x.startswith("Error:")] == [
        f"Error: Invalid value for '--reason': the reason is {REASON_MAX + 1} characters; "
        f"at most {REASON_MAX} are kept"
    ]
