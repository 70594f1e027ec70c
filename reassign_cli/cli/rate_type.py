"""The click type of every rate option: B/s or a number with a unit (core.rates.parse_rate)."""

from __future__ import annotations

from typing import Any

import click

from reassign_cli.core.rates import RateError, parse_rate


class Rate(click.ParamType):
    """`--throttle 50MB`: bytes per second as an int. A negative rate is returned as given (no throttle,
    as in Kafka) unless `positive`, which refuses anything below 1."""

    name = "rate"

    def __init__(self, positive: bool = False) -> None:
        self.positive = positive

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            rate = value
        else:
            try:
                rate = parse_rate(str(value))
            except RateError as e:
                self.fail(str(e), param, ctx)
        if self.positive and rate < 1:
            self.fail(f"{value!r} is not a positive rate", param, ctx)
        return rate


RATE = Rate()
POSITIVE_RATE = Rate(positive=True)
RATE_HELP = "B/s, or with a unit: kB, MB, GB (decimal) or KiB, MiB, GiB (binary), e.g. 50MB"
