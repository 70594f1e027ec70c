"""The adaptive log-dir throttle (ops/logdir_rates.py, issue 28 item 4) in a stored plan's steps (issue 25):
`execute --detach --max-moves-per-disk N --replica-alter-log-dirs-throttle auto --min-log-dir-throttle R1
--max-log-dir-throttle R2 [--throttle-interval S]`, carried on by cron `verify` steps.

Kept in the stored plan's `schedule` object under its own key, `log_dir_loop` (beside `throttle_loop`,
`log_dir_moves` and the others, which are kept as they are): `{"loop": RateLoop.state(), "meter": {"at":
wall time of the last measure, "sizes": {"topic:partition:broker": [future bytes, current bytes]}}}`.

The step's log-dir phase (ops/stored_log_dirs.phase) hands `tick` the DescribeLogDirs reading it makes
anyway: once the interval has passed since the last measure (wall clock: steps run in separate processes),
the bytes each broker's future replicas grew by are measured (logdir_rates.observe) and the same decision
as the foreground's is taken (RateLoop.tick, role "log-dir"; the step passes no guard or ISR signal yet:
the halving on a follower leaving the ISR is the foreground's only).
The new state rides in the phase's one compare-and-set; after it, `write` writes the changes through the
fenced throttle commit (ops.rate_loop.write_rates: the operator's prior values recorded first, so verify's
clear at the end restores them) and gives one line per change. A failed write puts the loop back as it
was (`unwritten`): the next step decides again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from reassign_cli.core import autothrottle as at
from reassign_cli.core import stored_plan as sp
from reassign_cli.ops.logdir_rates import observe
from reassign_cli.ops.rate_loop import RateLoop, write_rates
from reassign_cli.ops.stored_rates import _rk, _unrk

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend, ReplicaKey

KEY = "log_dir_loop"


@dataclass(frozen=True, slots=True)
class DirMeter:
    """The last measure: its wall time (None: none yet) and each running move's (future, current) bytes."""

    at_time: float | None = None
    sizes: Mapping[ReplicaKey, tuple[int, int]] = field(default_factory=dict)

    def doc(self) -> dict[str, Any]:
        return {"at": self.at_time, "sizes": {_rk(k): list(v) for k, v in sorted(self.sizes.items())}}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> DirMeter:
        at_time = doc.get("at")
        sizes = {_unrk(k): (int(v[0]), int(v[1])) for k, v in doc.get("sizes", {}).items()}
        return cls(None if at_time is None else float(at_time), sizes)


def with_loop(schedule: Mapping[str, Any], loop: RateLoop, meter: DirMeter | None = None) -> dict[str, Any]:
    """The plan's schedule object with the log-dir loop kept under KEY (its other keys kept)."""
    return {**schedule, KEY: {"loop": loop.state(), "meter": (meter or DirMeter()).doc()}}


def stored_loop(plan: sp.StoredPlan) -> tuple[RateLoop, DirMeter] | None:
    """The log-dir loop kept with the plan (None: a fixed rate). StoredPlanError when it does not parse."""
    doc = plan.schedule.get(KEY)
    if doc is None:
        return None
    try:
        loop = RateLoop.from_state(doc["loop"])
        if loop.settings is None or loop.settings.log_dirs is None:
            raise ValueError("no log-dir bounds")
        return loop, DirMeter.from_doc(doc.get("meter", {}))
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise sp.StoredPlanError(f"{sp.WHAT}'s log-dir throttle loop does not parse: {e}") from None


def overrides(plan: sp.StoredPlan) -> dict[int, dict[str, str]] | None:
    """The log-dir rates the loop holds per broker, written over the start rate when moves start."""
    kept = stored_loop(plan)
    return None if kept is None else kept[0].overrides()


@dataclass(slots=True)
class Ticked:
    """A phase's tick: the plan with the new state kept, the changes to write after the compare-and-set."""

    plan: sp.StoredPlan
    changes: list[at.Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def tick(
    plan: sp.StoredPlan, sizes: Mapping[ReplicaKey, tuple[int, int]], now: float, tripped: str | None = None
) -> Ticked:
    """The loop's tick at a step's log-dir phase (`sizes`: the running moves' (future, current) bytes as
    DescribeLogDirs showed them now). No loop kept, or its interval not passed: no change. The first
    measure only sets the baseline."""
    kept = stored_loop(plan)
    if kept is None:
        return Ticked(plan)
    loop, meter = kept
    if meter.at_time is not None and now - meter.at_time < loop.interval:
        return Ticked(plan)
    changes: list[at.Change] = []
    if meter.at_time is not None and now > meter.at_time:
        obs = replace(observe(now - meter.at_time, meter.sizes, sizes), tripped=tripped)
        changes = loop.tick(datetime.fromtimestamp(now, UTC), obs)
    kept_plan = replace(plan, schedule=with_loop(plan.schedule, loop, DirMeter(now, dict(sizes))))
    return Ticked(kept_plan, changes, list(loop.warnings))


def write(backend: Backend, changes: Sequence[at.Change]) -> list[str]:
    """The changes written through the fenced throttle commit; their lines. OperationalError when it fails."""
    if not changes:
        return []
    write_rates(backend, {(c.broker, c.role): c.new for c in changes})
    return [c.line() for c in changes]


def unwritten(plan: sp.StoredPlan, before: sp.StoredPlan) -> sp.StoredPlan:
    """`plan` with the log-dir loop kept as in `before` (a write that did not land: the rates held are not
    the brokers'; the meter goes back too, so the next step judges the longer span)."""
    schedule = {k: v for k, v in plan.schedule.items() if k != KEY}
    if KEY in before.schedule:
        schedule[KEY] = before.schedule[KEY]
    return replace(plan, schedule=schedule)
