"""`--throttle-schedule "22:00-06:00=200MB,*=40MB"` (issue 28 item 1): a replication rate by time of day,
in UTC. Pure: no I/O, no clock; `now` is passed in, always a timezone-aware datetime.

`cli/throttle_types.py` parses the option with it. ops/rate_loop.py runs it while execute waits (the rate
in force written at each poll that crosses a boundary). The stored plan's step (issue 25) will keep
`ThrottleSchedule.to_dict()` with the plan, write `rate_at(now)` at each poll or step that crosses a
boundary (`next_boundary`), and show it in progress and metrics.

The windows are core.schedule's (`HH:MM-HH:MM`, UTC, half-open, crossing midnight when the start is later
than the end, `24:00` as an end only) and the rates core.rates' (B/s, or a number with kB, MB, GB, KiB, MiB,
GiB). Decisions, where the issue is silent:
- Items are joined by commas, each `WINDOW=RATE` or `*=RATE`; spaces around them are taken.
- `*`, the rate outside every window, is required unless the windows cover the whole day: without it the
  hours outside would have no rate, and the tool will not guess between "no throttle" and "the last rate".
  At most one `*`; it may stand anywhere (it is kept, and printed, last).
- Windows may touch (`22:00-24:00=1MB,00:00-02:00=2MB`) but not overlap: an overlap is most likely a typo,
  and which rate it meant cannot be told (as `--hours`).
- A negative rate means no throttle in those hours, as `--throttle -1` does (`rate_at` gives None).
- A rate of 0 is refused: Kafka throttles only replicas out of the ISR, so 0 stops the copies dead (they
  stay in flight for the hours), and a follower of a moving partition that drops out of the ISR then cannot
  catch up until the rate changes. Holding new moves back is `--hours`' job.
- Every bad input is a ThrottleScheduleError with one line naming the item and the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from reassign_cli.core.rates import RateError, human_rate, parse_rate
from reassign_cli.core.schedule import DAY, ScheduleError, Window, parse_hours

FORMS = "WINDOW=RATE items joined by commas, WINDOW as HH:MM-HH:MM in UTC, and *=RATE for the other hours"
EXAMPLE = "22:00-06:00=200MB,*=40MB"


class ThrottleScheduleError(ValueError):
    """A schedule that is not one of the forms taken; the message is the whole explanation, one line."""


@dataclass(frozen=True, slots=True)
class ThrottleSchedule:
    """Rates by UTC window (B/s; negative: no throttle), and the rate outside them (None: the windows cover
    the whole day)."""

    windows: tuple[tuple[Window, int], ...]
    default: int | None

    def __post_init__(self) -> None:
        _check(self.windows, self.default, str(self))

    def rate_at(self, now: datetime) -> int | None:
        return rate_at(now, self)

    def __str__(self) -> str:
        """The canonical text (rates in B/s, `*` last); parse_throttle_schedule reads it back as equal."""
        items = [f"{w}={r}" for w, r in self.windows]
        if self.default is not None:
            items.append(f"*={self.default}")
        return ",".join(items)

    def describe(self) -> str:
        """`22:00-06:00 UTC 200 MB/s, otherwise 40 MB/s` (no throttle: `none`)."""
        parts = [f"{w} UTC {_human(r)}" for w, r in self.windows]
        if self.default is not None:
            parts.append(f"otherwise {_human(self.default)}" if parts else f"always {_human(self.default)}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form stored with a plan:
        `{"windows": [{"hours": "22:00-06:00", "rate": 200000000}], "default": 40000000 | null}`."""
        return {
            "windows": [{"hours": str(w), "rate": r} for w, r in self.windows],
            "default": self.default,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThrottleSchedule:
        """The inverse of to_dict; ThrottleScheduleError on a stored value that does not parse."""
        try:
            items = [f"{w['hours']}={int(w['rate'])}" for w in data["windows"]]
            default = data["default"]
        except (KeyError, TypeError, ValueError) as e:
            raise ThrottleScheduleError(f"a stored throttle schedule that does not parse: {e}") from None
        if default is not None:
            items.append(f"*={int(default)}")
        return parse_throttle_schedule(",".join(items))


def _human(rate: int) -> str:
    return "none" if rate < 0 else human_rate(rate)


def _check(windows: tuple[tuple[Window, int], ...], default: int | None, text: str) -> None:
    if not windows and default is None:
        raise ThrottleScheduleError(f"{text!r}: expected {FORMS}, e.g. {EXAMPLE}")
    for i, (a, _) in enumerate(windows):
        for b, _ in windows[i + 1 :]:
            if a.minutes() & b.minutes():
                raise ThrottleScheduleError(f"{text!r}: the windows {a} and {b} overlap")
    if default is None and sum(len(w.minutes()) for w, _ in windows) < DAY:
        raise ThrottleScheduleError(
            f"{text!r}: no rate for the hours outside the windows: add *=RATE (e.g. {text},*=40MB)"
        )
    zero = [str(w) for w, r in windows if r == 0] + (["*"] if default == 0 else [])
    if zero:
        raise ThrottleScheduleError(
            f"{text!r}: {zero[0]}=0 would stop the copies, and keep out of the ISR any follower of a moving "
            "partition that drops out; give at least 1 B/s, a negative rate for no throttle, or use --hours"
        )


def _rate(value: str, item: str) -> int:
    try:
        return parse_rate(value)
    except RateError as e:
        raise ThrottleScheduleError(f"{item!r}: {e}") from None


def _item(item: str) -> tuple[Window | None, int]:
    if "=" not in item:
        raise ThrottleScheduleError(f"{item!r}: expected WINDOW=RATE or *=RATE, e.g. 22:00-06:00=200MB")
    when, _, value = item.partition("=")
    when = when.strip()
    rate = _rate(value.strip(), item)
    if when == "*":
        return None, rate
    try:
        hours = parse_hours(when)
    except ScheduleError as e:
        raise ThrottleScheduleError(f"{item!r}: {e}") from None
    return hours.windows[0], rate


def parse_throttle_schedule(text: str) -> ThrottleSchedule:
    """`22:00-06:00=200MB,*=40MB` -> ThrottleSchedule. ThrottleScheduleError (one line) otherwise."""
    items = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in items):
        raise ThrottleScheduleError(f"{text!r}: expected {FORMS}, e.g. {EXAMPLE}")
    windows: list[tuple[Window, int]] = []
    defaults: list[int] = []
    for item in items:
        window, rate = _item(item)
        if window is None:
            defaults.append(rate)
        else:
            windows.append((window, rate))
    if len(defaults) > 1:
        raise ThrottleScheduleError(f"{text!r}: * is given {len(defaults)} times; give it once")
    default = defaults[0] if defaults else None
    _check(tuple(windows), default, text)
    return ThrottleSchedule(tuple(windows), default)


def _utc(when: datetime) -> datetime:
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"a naive datetime: {when!r} (pass a timezone-aware one)")
    return when.astimezone(UTC)


def _raw_at(t: datetime, schedule: ThrottleSchedule) -> int:
    second = t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6
    for w, r in schedule.windows:
        if w.contains(second):
            return r
    assert schedule.default is not None  # the windows cover the whole day otherwise (checked)
    return schedule.default


def rate_at(now: datetime, schedule: ThrottleSchedule) -> int | None:
    """The rate in force at `now` in B/s: its window's, else the `*` rate; None: no throttle then."""
    raw = _raw_at(_utc(now), schedule)
    return None if raw < 0 else raw


def next_boundary(now: datetime, schedule: ThrottleSchedule) -> datetime | None:
    """The first instant after `now` (UTC) at which the rate in force changes; None when it never does
    (one rate all day). Touching windows with equal rates are no boundary."""
    t = _utc(now)
    here = _raw_at(t, schedule)
    midnight = t.replace(hour=0, minute=0, second=0, microsecond=0)
    edges = sorted(
        {
            midnight + timedelta(days=d, minutes=m)
            for d in (0, 1, 2)
            for w, _ in schedule.windows
            for m in (w.start, w.end)
        }
    )
    for edge in edges:
        if edge > t and _raw_at(edge, schedule) != here:
            return edge
    return None
