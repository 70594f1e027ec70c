"""When new moves of a stored plan may start (issue 25 items 6 and 7): the hours (`--hours HH:MM-HH:MM`, UTC),
the first start (`--not-before 2026-12-01T01:00Z`) and the pause (`pause [--reason TEXT]` / `continue`).
Pure: no I/O, no clock; `now` is passed in, always a timezone-aware datetime.

Built as a building block: the click types in `cli/schedule_types.py` parse the options with it; the stored
plan will keep `Schedule.to_dict()` and `Paused.to_dict()`, and the step (not wired yet) asks `may_start` before
starting any move and prints `wait_line` when it may not. Running moves are never affected: these rules only
say whether a NEW move may start.

Decisions, where the issue is silent:
- Hours are UTC, `HH:MM-HH:MM`, two digits each, minutes the finest step (seconds refused). A window is
  half-open: `01:00-05:00` lets moves start from 01:00:00 up to 04:59:59, not at 05:00. A start later than the
  end crosses midnight (`22:00-06:00`). `24:00` is taken as an end only, so `00:00-24:00` is the whole day
  (which is how `continue --hours 00:00-24:00` lifts a window). Equal start and end is refused: it reads
  as an empty window to some and as the whole day to others, and a guess would either stall the plan or
  run it in business hours.
- Several windows, comma-separated (`01:00-05:00,13:00-14:00`): an operator with a nightly batch job at
  03:00 wants the quiet hours on either side of it, and a lunch lull is a common second window. Windows may
  touch (`22:00-24:00,00:00-02:00`) but not overlap: an overlap is most likely a typo.
- `--not-before` takes ISO 8601 with a zone: `Z` (or `z`), `+00:00`, `+0000`, `+00`, with or without seconds,
  `T` or one space between date and time. Another offset (`+01:00`) is accepted and converted to UTC:
  ISO 8601 makes it exact, and refusing it would make the operator convert by hand, which is where
  mistakes happen; every line printed shows the UTC time, so the conversion is visible. A time with no zone
  is refused (it says to add Z): the tool never guesses the host's zone, since cron and another host may
  disagree. A time in the past is valid and simply does not hold anything back.
- The pause line is `paused since 2026-12-01T01:00:00Z by alice@ops1: REASON`; with no reason it ends after
  USER@HOST (`paused since 2026-12-01T01:00:00Z by alice@ops1`). Whitespace in a reason (newlines included)
  is folded to single spaces so the line stays one line; a reason is at most REASON_MAX characters. Pausing
  a paused plan keeps the first pause (its time is how long new moves have been held).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

DAY = 24 * 60  # minutes
REASON_MAX = 300
HOURS_FORMS = "HH:MM-HH:MM in UTC (e.g. 01:00-05:00 or 22:00-06:00), several joined by commas"
NOT_BEFORE_FORM = "YYYY-MM-DDTHH:MM[:SS] with a zone, e.g. 2026-12-01T01:00Z"

_CLOCK = re.compile(r"(\d\d):(\d\d)", re.ASCII)
_INSTANT = re.compile(
    r"(?P<date>\d{4}-\d\d-\d\d)[T ](?P<h>\d\d):(?P<m>\d\d)(?::(?P<s>\d\d))?"
    r"(?P<zone>[Zz]|[+-]\d\d(?::?\d\d)?)?",
    re.ASCII,
)


class ScheduleError(ValueError):
    """Input that is not one of the forms taken; the message is the whole explanation, one line."""


@dataclass(frozen=True, slots=True)
class Window:
    """Minutes of the UTC day in which a move may start: [start, end). start in 0..1439, end in 0..1440,
    start != end; end < start crosses midnight (an end of 0, `00:00`, is midnight: `23:00-00:00` is the
    last hour of the day)."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not (0 <= self.start < DAY and 0 <= self.end <= DAY and self.start != self.end):
            raise ScheduleError(f"not a window: minutes {self.start}-{self.end}")

    @property
    def wraps(self) -> bool:
        return self.end < self.start

    def minutes(self) -> set[int]:
        """Every minute of the day (0..1439) the window covers."""
        if self.wraps:
            return set(range(self.start, DAY)) | set(range(0, self.end))
        return set(range(self.start, self.end))

    def contains(self, second_of_day: float) -> bool:
        s, e = self.start * 60, self.end * 60
        if self.wraps:
            return second_of_day >= s or second_of_day < e
        return s <= second_of_day < e

    def __str__(self) -> str:
        return f"{_clock(self.start)}-{_clock(self.end)}"


def _clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


@dataclass(frozen=True, slots=True)
class Hours:
    """One or more windows, as given (their order kept for printing)."""

    windows: tuple[Window, ...]

    def __post_init__(self) -> None:
        if not self.windows:
            raise ScheduleError("no window given")

    def contains(self, when: datetime) -> bool:
        t = _utc(when)
        second = t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6
        return any(w.contains(second) for w in self.windows)

    def __str__(self) -> str:
        return ",".join(str(w) for w in self.windows)


def _minute(text: str, item: str, *, end: bool) -> int:
    m = _CLOCK.fullmatch(text)
    if m is None:
        if re.fullmatch(r"\d\d:\d\d:\d\d", text, re.ASCII):
            raise ScheduleError(f"{item!r}: seconds are not taken, give HH:MM ({text[:5]})")
        raise ScheduleError(f"{item!r}: {text!r} is not a time, expected HH:MM (two digits each)")
    h, mi = int(m[1]), int(m[2])
    if end and (h, mi) == (24, 0):
        return DAY
    if h > 23 or mi > 59:
        limit = "00:00 to 24:00" if end else "00:00 to 23:59"
        raise ScheduleError(f"{item!r}: {text} is not a time of day ({limit})")
    return h * 60 + mi


def _window(item: str) -> Window:
    if "-" not in item:
        raise ScheduleError(f"{item!r}: expected START-END, e.g. 01:00-05:00 (no dash found)")
    first, _, second = item.partition("-")
    start = _minute(first.strip(), item, end=False)
    end = _minute(second.strip(), item, end=True)
    if start == end:
        raise ScheduleError(
            f"{item!r}: start and end are equal; for the whole day give 00:00-24:00 (or leave --hours out)"
        )
    return Window(start, end)


def parse_hours(text: str) -> Hours:
    """`01:00-05:00`, `22:00-06:00`, `01:00-05:00,13:00-14:00`. ScheduleError (one line) otherwise."""
    items = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in items):
        raise ScheduleError(f"{text!r}: expected {HOURS_FORMS}")
    windows = tuple(_window(p) for p in items)
    for i, a in enumerate(windows):
        for b in windows[i + 1 :]:
            if a.minutes() & b.minutes():
                raise ScheduleError(f"{text!r}: the windows {a} and {b} overlap")
    return Hours(windows)


def _offset(zone: str, text: str) -> timedelta:
    if zone in ("Z", "z"):
        return timedelta(0)
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise ScheduleError(f"{text!r}: {zone} is not a UTC offset")
    sign = -1 if zone[0] == "-" else 1
    return sign * timedelta(hours=hours, minutes=minutes)


def parse_not_before(text: str) -> datetime:
    """An instant, returned in UTC (second precision). ScheduleError (one line) otherwise."""
    m = _INSTANT.fullmatch(text.strip())
    if m is None:
        raise ScheduleError(f"{text!r}: expected {NOT_BEFORE_FORM}")
    if m["zone"] is None:
        raise ScheduleError(f"{text!r} has no time zone: add Z for UTC (e.g. {text.strip()}Z), or an offset")
    try:
        local = datetime.fromisoformat(f"{m['date']}T{m['h']}:{m['m']}:{m['s'] or '00'}")
    except ValueError as e:
        raise ScheduleError(f"{text!r}: {e}") from None
    return (local - _offset(m["zone"], text)).replace(tzinfo=UTC)


def _utc(when: datetime) -> datetime:
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"a naive datetime: {when!r} (pass a timezone-aware one)")
    return when.astimezone(UTC)


def iso(when: datetime) -> str:
    """`2026-12-01T01:00:00Z`: the stored and printed form of an instant (UTC, whole seconds)."""
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def human_time(when: datetime) -> str:
    """`2026-12-01 01:00 UTC` (seconds shown only when not zero)."""
    t = _utc(when)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC" if t.second else "%Y-%m-%d %H:%M UTC")


def human_wait(delta: timedelta) -> str:
    """`in 3 h 12 min`, `in 2 d 4 h`, `in 5 min`: the two largest units, minutes rounded up (a wait of a
    few seconds reads `in 1 min`), days and hours cut down; `now` for nothing to wait."""
    seconds = delta.total_seconds()
    if seconds <= 0:
        return "now"
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, DAY)
    hours, mins = divmod(rest, 60)
    if days:
        return f"in {days} d {hours} h" if hours else f"in {days} d"
    if hours:
        return f"in {hours} h {mins} min" if mins else f"in {hours} h"
    return f"in {mins} min"


@dataclass(frozen=True, slots=True)
class Schedule:
    """The stored rules for new moves: hours (None: any time) and the first start (None: at once)."""

    hours: Hours | None = None
    not_before: datetime | None = None

    def __post_init__(self) -> None:
        if self.not_before is not None:
            object.__setattr__(self, "not_before", _utc(self.not_before).replace(microsecond=0))

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form the stored plan keeps: `{"hours": "01:00-05:00" | null, "not_before":
        "2026-12-01T01:00:00Z" | null}`."""
        return {
            "hours": None if self.hours is None else str(self.hours),
            "not_before": None if self.not_before is None else iso(self.not_before),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schedule:
        """The inverse of to_dict; ScheduleError on a stored value that does not parse."""
        hours, not_before = data.get("hours"), data.get("not_before")
        return cls(
            None if hours is None else parse_hours(str(hours)),
            None if not_before is None else parse_not_before(str(not_before)),
        )


def _next_window_start(t: datetime, hours: Hours) -> datetime:
    """The first instant >= t inside `hours`."""
    if hours.contains(t):
        return t
    midnight = t.replace(hour=0, minute=0, second=0, microsecond=0)
    starts = (midnight + timedelta(days=d, minutes=w.start) for d in (0, 1) for w in hours.windows)
    return min(s for s in starts if s > t)


def may_start(now: datetime, schedule: Schedule, paused: Paused | None = None) -> bool:
    """Whether a new move may start at `now`: not paused, not before the first start, within the hours."""
    if paused is not None:
        return False
    t = _utc(now)
    if schedule.not_before is not None and t < schedule.not_before:
        return False
    return schedule.hours is None or schedule.hours.contains(t)


def next_start(now: datetime, schedule: Schedule, paused: Paused | None = None) -> datetime | None:
    """The first instant >= now at which a new move may start (`now` itself when one may start now), in
    UTC; None while paused (only `continue` ends a pause, so no time can be given)."""
    if paused is not None:
        return None
    t = _utc(now)
    if schedule.not_before is not None and t < schedule.not_before:
        t = schedule.not_before
    return t if schedule.hours is None else _next_window_start(t, schedule.hours)


def wait_line(now: datetime, schedule: Schedule, paused: Paused | None = None) -> str | None:
    """The one line verify prints when no new move may start (None when one may):
    `paused since 2026-12-01T01:00:00Z by alice@ops1: REASON`,
    `not before 2026-12-01 01:00 UTC (in 2 d 4 h)`,
    `outside hours 01:00-05:00 UTC; next start 2026-12-01 01:00 UTC (in 3 h 12 min)`, or, when the first
    start itself falls outside the hours,
    `not before 2026-12-01 00:00 UTC (in 2 d 4 h), hours 01:00-05:00 UTC; next start 2026-12-01 01:00 UTC
    (in 2 d 5 h)`."""
    if paused is not None:
        return paused.line()
    if may_start(now, schedule):
        return None
    t = _utc(now)
    nxt = next_start(t, schedule)
    assert nxt is not None
    then = f"next start {human_time(nxt)} ({human_wait(nxt - t)})"
    nb = schedule.not_before
    if nb is not None and t < nb:
        first = f"not before {human_time(nb)} ({human_wait(nb - t)})"
        return first if nxt == nb else f"{first}, hours {schedule.hours} UTC; {then}"
    return f"outside hours {schedule.hours} UTC; {then}"


def holds(now: datetime, schedule: Schedule) -> dict[str, bool]:
    """Which schedule rule holds new moves back now: {"hours": ..., "not_before": ...} (the reasons of the
    `kafka_reassign_plan_held` gauge that come from the schedule)."""
    t = _utc(now)
    early = schedule.not_before is not None and t < schedule.not_before
    outside = schedule.hours is not None and not schedule.hours.contains(t)
    return {"hours": outside, "not_before": early}


def fold_reason(reason: str | None) -> str | None:
    """A reason as stored: whitespace folded to single spaces, None when empty; ScheduleError when longer
    than REASON_MAX characters."""
    if reason is None:
        return None
    folded = " ".join(reason.split())
    if len(folded) > REASON_MAX:
        raise ScheduleError(f"the reason is {len(folded)} characters; at most {REASON_MAX} are kept")
    return folded or None


@dataclass(frozen=True, slots=True)
class Paused:
    """A pause of the stored plan: when (UTC, whole seconds), by whom, and why (None: no reason given)."""

    since: datetime
    user: str
    host: str
    reason: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "since", _utc(self.since).replace(microsecond=0))
        object.__setattr__(self, "reason", fold_reason(self.reason))

    def line(self) -> str:
        """`paused since 2026-12-01T01:00:00Z by alice@ops1: REASON` (no `: REASON` without one)."""
        head = f"paused since {iso(self.since)} by {self.user}@{self.host}"
        return f"{head}: {self.reason}" if self.reason else head

    def to_dict(self) -> dict[str, Any]:
        return {"since": iso(self.since), "user": self.user, "host": self.host, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Paused:
        """The inverse of to_dict; ScheduleError on a stored value that does not parse."""
        try:
            since, user, host = str(data["since"]), str(data["user"]), str(data["host"])
        except KeyError as e:
            raise ScheduleError(f"a stored pause without {e.args[0]!r}") from None
        reason = data.get("reason")
        return cls(parse_not_before(since), user, host, None if reason is None else str(reason))


def pause(current: Paused | None, now: datetime, user: str, host: str, reason: str | None = None) -> Paused:
    """`kafka-reassign pause`: the pause to store. Pausing a paused plan keeps the first pause as it is (the
    caller says `already paused since ...` with its line)."""
    return current if current is not None else Paused(now, user, host, reason)


_KEEP: Any = object()  # continue_plan: leave this rule as it is


@dataclass(frozen=True, slots=True)
class Continued:
    """What `continue` stores (no pause, the schedule) and the lines it prints, one per change."""

    schedule: Schedule
    changes: tuple[str, ...]


def continue_plan(
    schedule: Schedule,
    paused: Paused | None,
    *,
    hours: Hours | None = _KEEP,
    not_before: datetime | None = _KEEP,
) -> Continued:
    """`kafka-reassign continue [--hours ...]`: the pause cleared, and the hours (or the first start)
    replaced when given (None removes the rule). The pause is always None afterwards; `changes` names what
    changed, empty when nothing did (the caller says `not paused; nothing changed`)."""
    changes: list[str] = []
    if paused is not None:
        changes.append(f"pause cleared (was: {paused.line()})")
    new_hours = schedule.hours if hours is _KEEP else hours
    new_nb = schedule.not_before if not_before is _KEEP else not_before
    new = Schedule(new_hours, new_nb)
    if new.hours != schedule.hours:
        changes.append(f"hours: {_rule(schedule.hours)} -> {_rule(new.hours)}")
    if new.not_before != schedule.not_before:
        before = "none" if schedule.not_before is None else human_time(schedule.not_before)
        after = "none" if new.not_before is None else human_time(new.not_before)
        changes.append(f"not before: {before} -> {after}")
    return Continued(new, tuple(changes))


def _rule(hours: Hours | None) -> str:
    return "any time" if hours is None else f"{hours} UTC"
