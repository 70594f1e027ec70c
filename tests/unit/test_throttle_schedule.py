"""`--throttle-schedule` (issue 28 item 1): the parser, the rate in force and the next boundary. Expected
values worked out by hand, or by the brute-force reference below (minute by minute, from the windows'
minutes as plain numbers, written without core.schedule's windows)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.core.throttle_schedule import (
    ThrottleSchedule,
    ThrottleScheduleError,
    next_boundary,
    parse_throttle_schedule,
    rate_at,
)

DAY0 = datetime(2026, 12, 1, tzinfo=UTC)


def at(hh: int, mm: int, ss: int = 0, day: int = 0) -> datetime:
    return DAY0 + timedelta(days=day, hours=hh, minutes=mm, seconds=ss)


def test_the_issue_example() -> None:
    s = parse_throttle_schedule("22:00-06:00=200MB,*=40MB")
    assert str(s) == "22:00-06:00=200000000,*=40000000"
    assert s.describe() == "22:00-06:00 UTC 200 MB/s, otherwise 40 MB/s"
    assert rate_at(at(21, 59, 59), s) == 40_000_000
    assert rate_at(at(22, 0), s) == 200_000_000
    assert rate_at(at(0, 0), s) == 200_000_000
    assert rate_at(at(5, 59, 59), s) == 200_000_000
    assert rate_at(at(6, 0), s) == 40_000_000
    assert next_boundary(at(12, 0), s) == at(22, 0)
    assert next_boundary(at(22, 0), s) == at(6, 0, day=1)
    assert next_boundary(at(23, 30), s) == at(6, 0, day=1)
    assert next_boundary(at(5, 59, 59), s) == at(6, 0)


def test_units_spaces_default_anywhere_and_binary_units() -> None:
    a = parse_throttle_schedule(" *=40MB , 22:00-06:00 = 1.5GiB ")
    assert a == ThrottleSchedule(a.windows, 40_000_000)
    assert a.windows[0][1] == 1_610_612_736  # 1.5 * 2^30
    assert str(a) == "22:00-06:00=1610612736,*=40000000"


def test_negative_rate_is_no_throttle_and_the_whole_day_needs_no_default() -> None:
    s = parse_throttle_schedule("00:00-08:00=-1,08:00-24:00=10MB")
    assert s.default is None
    assert rate_at(at(7, 59), s) is None
    assert rate_at(at(8, 0), s) == 10_000_000
    assert next_boundary(at(9, 0), s) == at(0, 0, day=1)
    assert s.describe() == "00:00-08:00 UTC none, 08:00-24:00 UTC 10 MB/s"


def test_one_rate_all_day_has_no_boundary() -> None:
    assert next_boundary(at(3, 0), parse_throttle_schedule("*=40MB")) is None
    # touching windows with the rate of the default: no change anywhere
    same = parse_throttle_schedule("22:00-24:00=1MB,00:00-02:00=1MB,*=1MB")
    assert next_boundary(at(3, 0), same) is None
    touching = parse_throttle_schedule("22:00-24:00=1MB,00:00-02:00=1MB,*=2MB")
    assert next_boundary(at(23, 0), touching) == at(2, 0, day=1)  # midnight is no boundary
    assert parse_throttle_schedule("*=40MB").describe() == "always 40 MB/s"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "'': expected WINDOW=RATE items joined by commas"),
        ("22:00-06:00=200MB,", "'22:00-06:00=200MB,': expected WINDOW=RATE items"),
        (
            "22:00-06:00=200MB",
            "'22:00-06:00=200MB': no rate for the hours outside the windows: add *=RATE "
            "(e.g. 22:00-06:00=200MB,*=40MB)",
        ),
        ("*=1MB,*=2MB", "'*=1MB,*=2MB': * is given 2 times; give it once"),
        (
            "01:00-05:00=1MB,04:00-06:00=2MB,*=1MB",
            "'01:00-05:00=1MB,04:00-06:00=2MB,*=1MB': the windows 01:00-05:00 and 04:00-06:00 overlap",
        ),
        ("01:00-05:00=50mb,*=1MB", "'01:00-05:00=50mb': '50mb' is not a rate: give B/s as an integer"),
        ("25:00-05:00=1MB,*=1MB", "'25:00-05:00=1MB': '25:00-05:00': 25:00 is not a time of day"),
        ("05:00-05:00=1MB,*=1MB", "'05:00-05:00=1MB': '05:00-05:00': start and end are equal"),
        ("01:00-05:00,*=1MB", "'01:00-05:00': expected WINDOW=RATE or *=RATE, e.g. 22:00-06:00=200MB"),
        (
            "*=0",
            "'*=0': *=0 would stop the copies, and keep out of the ISR any follower of a moving partition",
        ),
        ("01:00-02:00=0,*=1MB", "'01:00-02:00=0,*=1MB': 01:00-02:00=0 would stop the copies"),
    ],
)
def test_bad_schedules_give_one_line(text: str, message: str) -> None:
    with pytest.raises(ThrottleScheduleError) as e:
        parse_throttle_schedule(text)
    assert str(e.value).startswith(message)
    assert "\n" not in str(e.value)


def test_a_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="naive"):
        rate_at(datetime(2026, 12, 1, 3, 0), parse_throttle_schedule("*=1MB"))


def test_stored_form() -> None:
    s = parse_throttle_schedule("22:00-06:00=200MB,*=40MB")
    assert s.to_dict() == {"windows": [{"hours": "22:00-06:00", "rate": 200_000_000}], "default": 40_000_000}
    with pytest.raises(ThrottleScheduleError, match="does not parse"):
        ThrottleSchedule.from_dict({"windows": [{"hours": "22:00-06:00"}], "default": 1})


# --- the brute-force reference ---------------------------------------------------------------------


@st.composite
def schedules(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, int]], int | None]:
    """A schedule's text, its windows as (start, end, rate) in minutes (end 0 is midnight), and its default."""
    cuts = sorted(draw(st.sets(st.integers(0, 1439), min_size=2, max_size=7)))
    segments = [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)] + [(cuts[-1], cuts[0])]
    rates = st.sampled_from([1, 999, 2_000_000, 40_000_000, -1])
    windows = [(s, e, draw(rates)) for s, e in segments if draw(st.booleans())]
    whole = len(windows) == len(segments)
    default = draw(st.one_of(st.none(), rates) if whole else rates)
    draw(st.randoms()).shuffle(windows)
    items = [f"{s // 60:02d}:{s % 60:02d}-{e // 60:02d}:{e % 60:02d}={r}" for s, e, r in windows]
    if default is not None:
        items.insert(draw(st.integers(0, len(items))), f"*={default}")
    return ",".join(items), windows, default


def reference(minute: int, windows: list[tuple[int, int, int]], default: int | None) -> int | None:
    for s, e, r in windows:
        inside = s <= minute < e if s < e else (minute >= s or minute < e)
        if inside:
            return None if r < 0 else r
    assert default is not None
    return None if default < 0 else default


@given(schedules(), st.integers(0, 59))
def test_rate_at_every_minute_matches_the_reference(
    case: tuple[str, list[tuple[int, int, int]], int | None], second: int
) -> None:
    text, windows, default = case
    s = parse_throttle_schedule(text)
    for minute in range(1440):
        assert rate_at(at(0, minute, second), s) == reference(minute, windows, default), (text, minute)


@given(schedules(), st.integers(0, 1439), st.integers(0, 59))
def test_next_boundary_matches_a_minute_by_minute_search(
    case: tuple[str, list[tuple[int, int, int]], int | None], minute: int, second: int
) -> None:
    text, windows, default = case
    s = parse_throttle_schedule(text)
    now = at(0, minute, second)
    here = reference(minute, windows, default)
    expected = None
    for m in range(minute + 1, minute + 1 + 1440):
        if reference(m % 1440, windows, default) != here:
            expected = at(0, m)
            break
    assert next_boundary(now, s) == expected


@given(schedules())
def test_round_trips_through_json_and_text(case: tuple[str, list[tuple[int, int, int]], int | None]) -> None:
    s = parse_throttle_schedule(case[0])
    assert ThrottleSchedule.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert parse_throttle_schedule(str(s)) == s
