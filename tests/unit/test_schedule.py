"""When new moves of a stored plan may start (issue 25 items 6 and 7): `--hours`, `--not-before`, the pause,
`continue`. Expected values worked out by hand, or by the brute-force reference below (minute by minute, from
the option's text, written without core.schedule's windows)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reassign_cli.core.schedule import (
    REASON_MAX,
    Paused,
    Schedule,
    ScheduleError,
    continue_plan,
    holds,
    human_wait,
    iso,
    may_start,
    next_start,
    parse_hours,
    parse_not_before,
    pause,
    wait_line,
)

DAY = 1440


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# ---- the reference: the minutes of the day a window text lets moves start in, counted one by one --------
def reference_minutes(text: str) -> set[int]:
    allowed: set[int] = set()
    for item in text.split(","):
        a, b = (int(x[:2]) * 60 + int(x[3:]) for x in item.split("-"))
        m = a
        while True:  # from the start, one minute at a time, up to (not including) the end, mod a day
            allowed.add(m)
            m = (m + 1) % DAY
            if m == b % DAY:
                break
    return allowed


def reference_next(now: datetime, text: str | None, not_before: datetime | None) -> datetime:
    """now on a whole minute: the first whole minute from now that is not early and is an allowed minute."""
    allowed = reference_minutes(text) if text else set(range(DAY))
    t = now
    while (not_before is not None and t < not_before) or (t.hour * 60 + t.minute) not in allowed:
        t += timedelta(minutes=1)
    return t


def clock(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


@st.composite
def hours_texts(draw: st.DrawFn) -> str:
    """1 to 3 windows that do not overlap (they may touch), some crossing midnight, some ending at 24:00,
    in any order; or the whole day."""
    if draw(st.integers(0, 19)) == 0:
        return "00:00-24:00"
    n = draw(st.integers(1, 3))
    points = sorted(draw(st.lists(st.integers(0, DAY - 1), min_size=2 * n, max_size=2 * n)))
    rotate = draw(st.integers(0, DAY - 1))
    items = []
    for i in range(n):
        a, b = ((p + rotate) % DAY for p in points[2 * i : 2 * i + 2])
        if a == b:  # an empty window is not a form: leave it out
            continue
        end = "24:00" if b == 0 and draw(st.booleans()) else clock(b)
        items.append(f"{clock(a)}-{end}")
    assume(items)
    items = draw(st.permutations(items))
    sets = [reference_minutes(i) for i in items]
    assume(sum(len(s) for s in sets) == len(set().union(*sets)))  # equal points: overlap
    return ",".join(items)


minutes_2026 = st.integers(0, 365 * DAY).map(
    lambda m: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=m)
)
instants = st.builds(lambda t, s: t + timedelta(microseconds=s), minutes_2026, st.integers(0, 60 * 10**6 - 1))


# ---- --hours ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("25:00-05:00", "'25:00-05:00': 25:00 is not a time of day (00:00 to 23:59)"),
        ("01:00-24:30", "'01:00-24:30': 24:30 is not a time of day (00:00 to 24:00)"),
        ("24:00-05:00", "'24:00-05:00': 24:00 is not a time of day (00:00 to 23:59)"),
        ("01:60-05:00", "'01:60-05:00': 01:60 is not a time of day (00:00 to 23:59)"),
        ("01:00", "'01:00': expected START-END, e.g. 01:00-05:00 (no dash found)"),
        ("01:00 05:00", "'01:00 05:00': expected START-END, e.g. 01:00-05:00 (no dash found)"),
        ("01:00:00-05:00", "'01:00:00-05:00': seconds are not taken, give HH:MM (01:00)"),
        ("01:00-05:00:30", "'01:00-05:00:30': seconds are not taken, give HH:MM (05:00)"),
        ("1:00-5:00", "'1:00-5:00': '1:00' is not a time, expected HH:MM (two digits each)"),
        ("0100-0500", "'0100-0500': '0100' is not a time, expected HH:MM (two digits each)"),
        (
            "01:00-05:00-07:00",
            "'01:00-05:00-07:00': '05:00-07:00' is not a time, expected HH:MM (two digits each)",
        ),
        (
            "03:00-03:00",
            "'03:00-03:00': start and end are equal; for the whole day give 00:00-24:00 (or leave --hours out)",
        ),
        ("", "'': expected HH:MM-HH:MM in UTC (e.g. 01:00-05:00 or 22:00-06:00), several joined by commas"),
        (
            "01:00-02:00,",
            "'01:00-02:00,': expected HH:MM-HH:MM in UTC (e.g. 01:00-05:00 or 22:00-06:00), several joined by commas",
        ),
        (
            "22:00-06:00,05:00-07:00",
            "'22:00-06:00,05:00-07:00': the windows 22:00-06:00 and 05:00-07:00 overlap",
        ),
    ],
)
def test_bad_hours_give_one_line_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(ScheduleError) as e:
        parse_hours(text)
    assert str(e.value) == message
    assert "\n" not in str(e.value)


def test_hours_window_is_half_open_and_crosses_midnight() -> None:
    night = Schedule(parse_hours("22:00-06:00"))
    assert may_start(at("2026-12-01T22:00:00"), night)
    assert may_start(at("2026-12-01T23:59:59"), night)
    assert may_start(at("2026-12-02T00:00:00"), night)
    assert may_start(at("2026-12-02T05:59:59"), night)
    assert not may_start(at("2026-12-02T06:00:00"), night)
    assert not may_start(at("2026-12-02T21:59:59"), night)
    # at 06:00 the next start is 22:00 the same day; at 21:59:30 it is 30 s later
    assert next_start(at("2026-12-02T06:00:00"), night) == at("2026-12-02T22:00:00")
    assert next_start(at("2026-12-02T21:59:30"), night) == at("2026-12-02T22:00:00")


def test_whole_day_and_touching_windows() -> None:
    whole = Schedule(parse_hours("00:00-24:00"))
    assert all(may_start(at("2026-12-01T00:00") + timedelta(minutes=m), whole) for m in range(DAY))
    touching = parse_hours("22:00-24:00, 00:00-02:00")
    assert str(touching) == "22:00-24:00,00:00-02:00"
    assert may_start(at("2026-12-01T23:59:59"), Schedule(touching))
    assert may_start(at("2026-12-02T00:00:00"), Schedule(touching))
    assert not may_start(at("2026-12-02T02:00:00"), Schedule(touching))


def test_an_end_at_00_00_is_midnight() -> None:
    # found by the properties below: 23:59-00:00 is the day's last minute, as 23:59-24:00
    for text in ("23:59-00:00", "23:59-24:00"):
        last = Schedule(parse_hours(text))
        assert str(last.hours) == text
        assert may_start(at("2026-12-01T23:59:30"), last)
        assert not may_start(at("2026-12-02T00:00:00"), last)
        assert not may_start(at("2026-12-01T23:58:59"), last)
        assert next_start(at("2026-12-02T00:00"), last) == at("2026-12-02T23:59")


def test_spaces_around_the_dash_are_taken() -> None:
    assert str(parse_hours(" 01:00 - 05:00 ")) == "01:00-05:00"


@given(hours_texts())
def test_every_minute_of_a_day_matches_the_reference(text: str) -> None:
    schedule = Schedule(parse_hours(text))
    allowed = reference_minutes(text)
    midnight = at("2026-12-01T00:00")
    for m in range(DAY):
        t = midnight + timedelta(minutes=m)
        assert may_start(t, schedule) == (m in allowed), (text, m)
        assert may_start(t + timedelta(seconds=59), schedule) == (m in allowed), (text, m)


@given(hours_texts())
def test_hours_text_round_trips(text: str) -> None:
    hours = parse_hours(text)
    assert str(hours) == text
    assert parse_hours(str(hours)) == hours


# ---- --not-before -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-12-01T01:00Z", "2026-12-01T01:00:00"),
        ("2026-12-01T01:00z", "2026-12-01T01:00:00"),
        ("2026-12-01T01:00:30Z", "2026-12-01T01:00:30"),
        ("2026-12-01 01:00Z", "2026-12-01T01:00:00"),
        ("2026-12-01T01:00+00:00", "2026-12-01T01:00:00"),
        ("2026-12-01T01:00:00+0000", "2026-12-01T01:00:00"),
        ("2026-12-01T01:00-00:00", "2026-12-01T01:00:00"),
        ("2026-12-01T01:00+00", "2026-12-01T01:00:00"),
        # other offsets are converted: 01:00 at +01:00 is 00:00 UTC; 01:00 at -05:30 is 06:30 UTC
        ("2026-12-01T01:00+01:00", "2026-12-01T00:00:00"),
        ("2026-12-01T01:00-05:30", "2026-12-01T06:30:00"),
        ("2026-12-01T00:30+02:00", "2026-11-30T22:30:00"),
    ],
)
def test_not_before_forms(text: str, utc: str) -> None:
    got = parse_not_before(text)
    assert got == at(utc)
    assert got.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "2026-12-01T01:00",
            "'2026-12-01T01:00' has no time zone: add Z for UTC (e.g. 2026-12-01T01:00Z), or an offset",
        ),
        (
            "2026-12-01 01:00:00",
            "'2026-12-01 01:00:00' has no time zone: add Z for UTC (e.g. 2026-12-01 01:00:00Z), or an offset",
        ),
        ("2026-12-01", "'2026-12-01': expected YYYY-MM-DDTHH:MM[:SS] with a zone, e.g. 2026-12-01T01:00Z"),
        ("tomorrow", "'tomorrow': expected YYYY-MM-DDTHH:MM[:SS] with a zone, e.g. 2026-12-01T01:00Z"),
        (
            "2026-12-01T01:00:00.5Z",
            "'2026-12-01T01:00:00.5Z': expected YYYY-MM-DDTHH:MM[:SS] with a zone, e.g. 2026-12-01T01:00Z",
        ),
        ("2026-02-30T01:00Z", "'2026-02-30T01:00Z': day is out of range for month"),
        ("2026-12-01T25:00Z", "'2026-12-01T25:00Z': hour must be in 0..23"),
        ("2026-12-01T01:00+24:00", "'2026-12-01T01:00+24:00': +24:00 is not a UTC offset"),
    ],
)
def test_bad_not_before_gives_one_line(text: str, message: str) -> None:
    with pytest.raises(ScheduleError) as e:
        parse_not_before(text)
    assert str(e.value) == message


def test_not_before_holds_until_then_and_a_past_one_holds_nothing() -> None:
    s = Schedule(not_before=parse_not_before("2026-12-01T01:00Z"))
    assert not may_start(at("2026-12-01T00:59:59"), s)
    assert may_start(at("2026-12-01T01:00:00"), s)
    assert next_start(at("2026-11-29T00:00"), s) == at("2026-12-01T01:00")
    assert next_start(at("2026-12-05T00:00"), s) == at("2026-12-05T00:00")


@given(instants)
def test_not_before_iso_round_trips(t: datetime) -> None:
    whole = t.replace(microsecond=0)
    assert parse_not_before(iso(t)) == whole


# ---- both together --------------------------------------------------------------------------------------
@given(
    st.one_of(st.none(), hours_texts()),
    st.one_of(st.none(), minutes_2026),
    st.integers(-3 * DAY, 3 * DAY),
)
def test_next_start_matches_a_minute_by_minute_search(
    text: str | None, not_before: datetime | None, offset: int
) -> None:
    now = (not_before or at("2026-06-01T00:00")) + timedelta(minutes=offset)
    schedule = Schedule(parse_hours(text) if text else None, not_before)
    assert next_start(now, schedule) == reference_next(now, text, not_before)


@given(st.one_of(st.none(), hours_texts()), st.one_of(st.none(), minutes_2026), instants)
def test_next_start_is_never_before_now_and_may_start_then(
    text: str | None, not_before: datetime | None, now: datetime
) -> None:
    schedule = Schedule(parse_hours(text) if text else None, not_before)
    nxt = next_start(now, schedule)
    assert nxt is not None
    assert nxt >= now
    assert may_start(nxt, schedule)
    assert (nxt == now) == may_start(now, schedule)
    assert (wait_line(now, schedule) is None) == may_start(now, schedule)
    assert holds(now, schedule) == {
        "hours": text is not None and not schedule.hours.contains(now),  # type: ignore[union-attr]
        "not_before": not_before is not None and now < not_before,
    }


@given(st.one_of(st.none(), hours_texts()), st.one_of(st.none(), instants))
def test_schedule_round_trips_through_json(text: str | None, not_before: datetime | None) -> None:
    schedule = Schedule(parse_hours(text) if text else None, not_before)
    back = Schedule.from_dict(json.loads(json.dumps(schedule.to_dict())))
    assert back == schedule


def test_schedule_dict_form() -> None:
    s = Schedule(parse_hours("22:00-06:00,12:00-13:00"), parse_not_before("2026-12-01T02:00+01:00"))
    assert s.to_dict() == {"hours": "22:00-06:00,12:00-13:00", "not_before": "2026-12-01T01:00:00Z"}
    assert Schedule().to_dict() == {"hours": None, "not_before": None}
    with pytest.raises(ScheduleError):
        Schedule.from_dict({"hours": "25:00-01:00"})


def test_a_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="naive"):
        may_start(datetime(2026, 12, 1), Schedule(parse_hours("01:00-05:00")))


def test_an_aware_now_in_another_zone_is_read_in_utc() -> None:
    # 03:30 at +05:00 is 22:30 UTC the day before: inside 22:00-06:00
    now = datetime(2026, 12, 2, 3, 30, tzinfo=timezone(timedelta(hours=5)))
    assert may_start(now, Schedule(parse_hours("22:00-06:00")))
    assert not may_start(now, Schedule(parse_hours("01:00-05:00")))


# ---- the line verify prints -------------------------------------------------------------------------------
def test_wait_lines() -> None:
    hours = parse_hours("01:00-05:00")
    # 21:48 to 01:00 the next day: 3 h 12 min
    assert wait_line(at("2026-11-30T21:48"), Schedule(hours)) == (
        "outside hours 01:00-05:00 UTC; next start 2026-12-01 01:00 UTC (in 3 h 12 min)"
    )
    # 2026-11-28 20:48 to 2026-12-01 01:00: 2 d 4 h 12 min, shown as the two largest units
    nb = Schedule(not_before=parse_not_before("2026-12-01T01:00Z"))
    assert wait_line(at("2026-11-28T20:48"), nb) == "not before 2026-12-01 01:00 UTC (in 2 d 4 h)"
    # the first start inside the hours: only the not-before line
    both = Schedule(hours, parse_not_before("2026-12-01T01:00Z"))
    assert wait_line(at("2026-11-28T20:48"), both) == "not before 2026-12-01 01:00 UTC (in 2 d 4 h)"
    # the first start outside them: both, then the real next start (2026-12-01 01:00 to 12-02 01:00)
    late = Schedule(hours, parse_not_before("2026-12-01T06:00:30Z"))
    assert wait_line(at("2026-11-28T20:48"), late) == (
        "not before 2026-12-01 06:00:30 UTC (in 2 d 9 h), hours 01:00-05:00 UTC; "
        "next start 2026-12-02 01:00 UTC (in 3 d 4 h)"
    )
    assert wait_line(at("2026-12-01T02:00"), both) is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "now"),
        (1, "in 1 min"),
        (60, "in 1 min"),
        (61, "in 2 min"),
        (59 * 60 + 1, "in 1 h"),
        (3 * 3600 + 12 * 60, "in 3 h 12 min"),
        (24 * 3600, "in 1 d"),
        (2 * 86400 + 4 * 3600 + 59 * 60, "in 2 d 4 h"),
    ],
)
def test_human_wait(seconds: int, text: str) -> None:
    assert human_wait(timedelta(seconds=seconds)) == text


# ---- the pause and continue -------------------------------------------------------------------------------
def test_paused_line_with_and_without_reason() -> None:
    since = datetime(2026, 12, 1, 2, 30, 15, 999, tzinfo=UTC)
    p = Paused(since, "alice", "ops1", "  disk on broker 3\n  at 91% ")
    assert p.line() == "paused since 2026-12-01T02:30:15Z by alice@ops1: disk on broker 3 at 91%"
    assert Paused(since, "alice", "ops1").line() == "paused since 2026-12-01T02:30:15Z by alice@ops1"
    assert Paused(since, "alice", "ops1", "   ").line() == "paused since 2026-12-01T02:30:15Z by alice@ops1"


def test_paused_holds_every_start_and_has_no_next_start() -> None:
    p = Paused(at("2026-12-01T00:00"), "bob", "cron1", "freeze")
    s = Schedule()
    assert not may_start(at("2026-12-01T02:00"), s, p)
    assert next_start(at("2026-12-01T02:00"), s, p) is None
    assert wait_line(at("2026-12-01T02:00"), s, p) == "paused since 2026-12-01T00:00:00Z by bob@cron1: freeze"


def test_reason_too_long_is_refused() -> None:
    Paused(at("2026-12-01T00:00"), "a", "h", "x" * REASON_MAX)
    with pytest.raises(
        ScheduleError, match=f"the reason is {REASON_MAX + 1} characters; at most {REASON_MAX}"
    ):
        Paused(at("2026-12-01T00:00"), "a", "h", "x" * (REASON_MAX + 1))


@given(
    instants,
    st.text(min_size=1, max_size=20),
    st.text(min_size=1, max_size=20),
    st.one_of(st.none(), st.text(max_size=50)),
)
def test_paused_round_trips_through_json(since: datetime, user: str, host: str, reason: str | None) -> None:
    p = Paused(since, user, host, reason)
    back = Paused.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back == p
    assert back.line() == p.line()


def test_pausing_twice_keeps_the_first() -> None:
    first = pause(None, at("2026-12-01T00:00"), "alice", "ops1", "freeze")
    assert pause(first, at("2026-12-01T05:00"), "bob", "ops2", "other") is first


def test_continue_clears_the_pause_and_changes_the_hours() -> None:
    s = Schedule(parse_hours("01:00-05:00"))
    p = Paused(at("2026-12-01T00:00"), "alice", "ops1", "freeze")
    done = continue_plan(s, p)
    assert done.schedule == s
    assert done.changes == ("pause cleared (was: paused since 2026-12-01T00:00:00Z by alice@ops1: freeze)",)
    wider = continue_plan(s, None, hours=parse_hours("22:00-06:00"))
    assert wider.schedule == Schedule(parse_hours("22:00-06:00"))
    assert wider.changes == ("hours: 01:00-05:00 UTC -> 22:00-06:00 UTC",)
    lifted = continue_plan(s, None, hours=None, not_before=parse_not_before("2026-12-03T00:00Z"))
    assert lifted.schedule == Schedule(None, at("2026-12-03T00:00"))
    assert lifted.changes == (
        "hours: 01:00-05:00 UTC -> any time",
        "not before: none -> 2026-12-03 00:00 UTC",
    )
    assert continue_plan(s, None).changes == ()
    assert continue_plan(s, None, hours=parse_hours("01:00-05:00")).changes == ()


@pytest.mark.parametrize(
    "digits", ["\u0660\u0661:\u0660\u0660-\u0660\u0665:\u0660\u0660", "０１:００-０５:００"]
)
def test_hours_take_ascii_digits_only(digits: str) -> None:
    # Arabic-Indic and full-width digits are digits to Python's \d and int(): refused here all the same
    with pytest.raises(ScheduleError, match="is not a time, expected HH:MM"):
        parse_hours(digits)


def test_not_before_takes_ascii_digits_only() -> None:
    with pytest.raises(ScheduleError, match="expected YYYY-MM-DDTHH:MM"):
        parse_not_before("２０２６-12-01T01:00Z")
