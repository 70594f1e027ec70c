"""The health checks a stored plan ignores (issue 25 item 5): `execute --ignore-health CHECK` (repeatable,
"all") kept in the plan's schedule object under `ignore_health` (a sorted list of core.health.CHECKS names),
beside its other keys (hours, not_before, on_under_min_isr, throttle_loop), so that every later step
(cron `verify`, `execute --resume`) honours it as a `verify --ignore-health` would; a step's own
`--ignore-health` adds to it. Used by cli/stored.py (detach, the foreground's stored plan), ops/step.py's
health check and ops/plan_ctl.report (`list`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

KEY = "ignore_health"


def with_ignore(schedule: Mapping[str, Any] | None, ignore: Iterable[str]) -> dict[str, Any]:
    """The schedule object with `ignore` kept (its other keys as they are); nothing to ignore: unchanged."""
    out = dict(schedule or {})
    names = sorted(set(ignore))
    if names:
        out[KEY] = names
    return out


def stored_ignore(schedule: Mapping[str, Any]) -> frozenset[str]:
    """The checks the stored plan ignores (a value that is not a list of names: none)."""
    value = schedule.get(KEY)
    if not isinstance(value, list):
        return frozenset()
    return frozenset(str(v) for v in value)
