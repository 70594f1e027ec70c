"""The click types of the adaptive throttle's options (issue 28 items 1 to 3), parsed by core.throttle_schedule
and core.rates: bad input is a usage error (exit 2) with one line naming the problem. execute takes
`--throttle-schedule`, `--throttle auto`, `--min-throttle`, `--max-throttle` and `--throttle-interval`
(cli/execute.py, resolving the bounds with core.autothrottle.bounds_from_options; ops/rate_loop.py runs
them while waiting); the stored plan's execute (issue 25) will take them too."""

from __future__ import annotations

import math
from typing import Any

import click

from reassign_cli.core.autothrottle import AUTO, Throttle
from reassign_cli.core.rates import RateError, parse_rate
from reassign_cli.core.throttle_schedule import (
    ThrottleSchedule,
    ThrottleScheduleError,
    parse_throttle_schedule,
)


class ThrottleScheduleType(click.ParamType):
    """`--throttle-schedule "22:00-06:00=200MB,*=40MB"` (UTC) -> core.throttle_schedule.ThrottleSchedule."""

    name = "WINDOW=RATE,...,*=RATE"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> ThrottleSchedule:
        if isinstance(value, ThrottleSchedule):
            return value
        try:
            return parse_throttle_schedule(str(value))
        except ThrottleScheduleError as e:
            self.fail(str(e), param, ctx)


class RateOrAuto(click.ParamType):
    """`--throttle auto` -> "auto"; otherwise a rate as core.rates.parse_rate takes it (B/s as an int;
    negative: no throttle, as today)."""

    name = "auto|rate"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Throttle:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if str(value).strip() == AUTO:
            return AUTO
        try:
            return parse_rate(str(value))
        except RateError as e:
            # "or auto" ends the list of forms; a rate out of range is said alone
            self.fail(f"{e}, or auto" if " is not a rate" in str(e) else str(e), param, ctx)


class Seconds(click.ParamType):
    """`--throttle-interval 30`: a positive, finite number of seconds."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not (math.isfinite(seconds) and seconds > 0):
            self.fail(f"{value!r} is not a positive number of seconds", param, ctx)
        return seconds


THROTTLE_SCHEDULE = ThrottleScheduleType()
RATE_OR_AUTO = RateOrAuto()
SECONDS = Seconds()
THROTTLE_SCHEDULE_HELP = (
    "the replication rate by UTC hours, WINDOW=RATE joined by commas and *=RATE for the other hours, "
    "e.g. 22:00-06:00=200MB,*=40MB"
)
