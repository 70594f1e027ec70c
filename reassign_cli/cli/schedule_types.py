"""The click types of `--hours` and `--not-before` (issue 25 item 7), parsed by core.schedule: bad input is
a usage error (exit 2) with one line naming the problem. Not used by any subcommand yet: the stored plan's
`execute --detach` and `continue --hours` will take them, and `pause` its `--reason`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from reassign_cli.core.schedule import Hours, ScheduleError, fold_reason, parse_hours, parse_not_before


class HoursType(click.ParamType):
    """`--hours 01:00-05:00` (UTC; several windows joined by commas) -> core.schedule.Hours."""

    name = "HH:MM-HH:MM"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Hours:
        if isinstance(value, Hours):
            return value
        try:
            return parse_hours(str(value))
        except ScheduleError as e:
            self.fail(str(e), param, ctx)


class NotBeforeType(click.ParamType):
    """`--not-before 2026-12-01T01:00Z` (any UTC offset, converted) -> an aware datetime in UTC."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime) and value.tzinfo is not None:
            return value
        try:
            return parse_not_before(str(value))
        except ScheduleError as e:
            self.fail(str(e), param, ctx)


class ReasonType(click.ParamType):
    """`pause --reason TEXT`: whitespace folded to single spaces (one line), None when blank; exit 2 when
    longer than core.schedule.REASON_MAX characters."""

    name = "TEXT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str | None:
        try:
            return fold_reason(str(value))
        except ScheduleError as e:
            self.fail(str(e), param, ctx)


HOURS = HoursType()
NOT_BEFORE = NotBeforeType()
REASON = ReasonType()
HOURS_HELP = (
    "start new moves only within these UTC hours, HH:MM-HH:MM (22:00-06:00 crosses midnight; "
    "several joined by commas; 00:00-24:00 is the whole day); running moves always finish"
)
NOT_BEFORE_HELP = "start no new move before this time, ISO 8601 with a zone, e.g. 2026-12-01T01:00Z"
