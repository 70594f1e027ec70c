"""Rates on the command line (`--throttle`, `--replica-alter-log-dirs-throttle`, generate's `--throttle`):
bytes per second as a plain integer, or a number with a unit. Pure: no I/O.

Units, case as written: kB, MB, GB (decimal: 10^3, 10^6, 10^9) and KiB, MiB, GiB (binary: 2^10, 2^20,
2^30), optionally followed by "/s" (`50MB`, `50MB/s`, `1.5GiB`). A plain number is B/s (`B` and `B/s` may
follow it). Anything else (`50mb`, `50Mb`, `50 MBps`, `1e6`) is refused with one line naming the forms
taken: a megabit, a megabyte and a mebibyte differ, and a guess would set a rate nobody asked for.

A negative rate means no throttle, as in Kafka's tools (the caller maps it to None). Below LOW_RATE a
rate is most likely a unit left out (`--throttle 50` is 50 B/s): `low_rate_warning` says so, unless the
plan's bytes are known and take less than SHORT_SECONDS at that rate.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

LONG_MAX = 2**63 - 1
UNITS: dict[str, int] = {
    "": 1,
    "B": 1,
    "kB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
}
LOW_RATE = 1_000_000  # 1 MB/s
SHORT_SECONDS = 600.0  # a plan this quick at a low rate needs no warning
FORMS = (
    "B/s as an integer, or a number with kB, MB, GB (10^3, 10^6, 10^9) or KiB, MiB, GiB (2^10, 2^20, 2^30)"
)
_RATE = re.compile(r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?P<unit>[A-Za-z]*)(?P<per>/s)?")


class RateError(ValueError):
    """A rate that is not one of the forms taken; the message is the whole explanation."""


def parse_rate(text: str) -> int:
    """Bytes per second, rounded to a whole byte; negative stays negative (no throttle). RateError on
    anything that is not an integer, or a number with one of UNITS (and "/s")."""
    m = _RATE.fullmatch(text.strip())
    unit = m.group("unit") if m else ""
    if m is None or unit not in UNITS or (m.group("per") and unit == ""):
        raise RateError(f"{text!r} is not a rate: give {FORMS}, e.g. 50MB")
    num = m.group("num")
    if unit in ("", "B") and not re.fullmatch(r"[+-]?\d+", num):
        raise RateError(
            f"{text!r} is not a rate: a rate in B/s is a whole number; or give a unit, e.g. 1.5MB"
        )
    try:
        value = Decimal(num) * UNITS[unit]
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        raise RateError(f"{text!r} is not a rate: give {FORMS}") from None
    out = int(value.to_integral_value())
    if out > LONG_MAX:
        raise RateError(f"{text!r} is more than {LONG_MAX} bytes/s")
    return out


def human_rate(rate: int) -> str:
    """50 B/s, 1.5 MB/s, 100 MB/s (decimal units, as rates are usually written)."""
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if rate >= size:
            return f"{rate / size:.3g} {unit}/s"
    return f"{rate} B/s"


def clock(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def low_rate_warning(option: str, rate: int, seconds: float | None) -> str | None:
    """The warning for a rate below LOW_RATE (None: no warning). `seconds`: the plan's time at that rate
    when its bytes are known (None: unknown). A short time needs no warning; a known one is told."""
    if rate < 0 or rate >= LOW_RATE:
        return None
    if seconds is not None and seconds < SHORT_SECONDS:
        return None
    hint = f" (for megabytes per second write {rate}MB)" if 0 < rate < 10_000 else ""
    head = f"{option} is {human_rate(rate)}, below 1 MB/s{hint}"
    if seconds is None:
        return f"{head}; the time at that rate is not known (no partition sizes)"
    return f"{head}; at that rate the copies take at least {clock(seconds)}"
