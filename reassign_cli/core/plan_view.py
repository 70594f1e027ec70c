"""What a stored plan (core/stored_plan.py) says to an operator: its state, the pause and hours it keeps
(core/schedule.py), and its ETA. Pure: `list` (ops/plan_ctl.py, render/stored_plan.py) and the gauges of
verify's metrics file (render/plan_metrics.summary) read a plan through these."""

from __future__ import annotations

from datetime import datetime

from reassign_cli.core import schedule as sch
from reassign_cli.core import stored_plan as sp


def paused_of(plan: sp.StoredPlan) -> sch.Paused | None:
    return sch.Paused.from_dict(plan.paused) if plan.paused else None


def schedule_of(plan: sp.StoredPlan) -> sch.Schedule:
    return sch.Schedule.from_dict(plan.schedule)


def bytes_remaining(progress: sp.Progress) -> int | None:
    """Bytes of the moves not done yet (the moves running counted whole: what they copied so far is the
    brokers' to tell); None when a size is not known."""
    if progress.bytes_total is None or progress.bytes_done is None:
        return None
    return progress.bytes_total - progress.bytes_done


def eta_seconds(plan: sp.StoredPlan, progress: sp.Progress) -> float | None:
    """Seconds to the end at the mean rate of the moves done, from the plan's storing to its last step
    (both times written by the plan's writers: no clock of the reader is compared). None: not known
    (sizes unknown, no step yet, or nothing done yet); 0 when nothing is left."""
    left = bytes_remaining(progress)
    if left is None or progress.bytes_done is None:
        return None
    if left <= 0:
        return 0.0
    if plan.last_step is None or progress.bytes_done <= 0 or plan.last_step.at <= plan.created:
        return None
    return left / (progress.bytes_done / (plan.last_step.at - plan.created))


def state_line(plan: sp.StoredPlan, now: datetime) -> tuple[str, str | None]:
    """(state, the line that explains it): running; paused or waiting (outside hours, not before), with
    core.schedule.wait_line's line; draining (nothing queued, the last moves run) and finished (nothing
    left: the next step ends it), where a pause or hours change nothing any more."""
    pr = sp.progress(plan)
    if pr.queued == 0:
        return ("draining", None) if pr.moving else ("finished", None)
    wait = sch.wait_line(now, schedule_of(plan), paused_of(plan))
    if wait is None:
        return "running", None
    return ("paused" if plan.paused else "waiting"), wait
