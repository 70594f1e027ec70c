"""What a stored plan (core/stored_plan.py) says to an operator: its state, the pause and hours it keeps
(core/schedule.py), and its ETA. Pure: `list` (ops/plan_ctl.py, render/stored_plan.py) and the gauges of
verify's metrics file (render/plan_metrics.summary) read a plan through these."""

from __future__ import annotations

from collections.abc import Collection
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


def state_line(
    plan: sp.StoredPlan, now: datetime, dirs: tuple[int, int] | None = None
) -> tuple[str, str | None]:
    """(state, the line that explains it): running; paused or waiting (outside hours, not before), with
    core.schedule.wait_line's line; draining (nothing queued, the last moves run) and finished (nothing
    left: the next step ends it), where a pause or hours change nothing any more.

    `dirs`: the plan's log-dir moves (moving, queued; ops/stored_log_dirs.counts), None for a plan that
    names no log dir. They come after the partition moves, and a pause or hours hold their starts too: while
    any is queued the plan is not draining; once every partition move is done and some log-dir move is not,
    it is "moving log dirs" (or paused or waiting while one is queued), never finished."""
    pr = sp.progress(plan)
    dir_moving, dir_queued = dirs or (0, 0)
    partitions_done = pr.queued == 0 and pr.moving == 0
    if pr.queued == 0 and dir_queued == 0:
        if pr.moving:
            return "draining", None
        return ("moving log dirs", None) if dir_moving else ("finished", None)
    wait = sch.wait_line(now, schedule_of(plan), paused_of(plan))
    if wait is None:
        return ("moving log dirs" if partitions_done else "running"), None
    return ("paused" if plan.paused else "waiting"), wait


Entities = tuple[list[int], list[str]]  # (brokers, topics), as core.throttle.recorded_entities gives them


def throttles_held(plan_topics: Collection[str], recorded: Entities) -> tuple[Entities, Entities]:
    """(the recorded throttles a stored plan keeps for its moves, the rest). A topic's lists are the plan's
    when the topic is one of the plan's. Broker rates are shared by every move and cannot be told apart
    once the moves are done (verify's rule, docs/faults.md): they are the plan's when every recorded topic
    is, otherwise they go with the rest (another execute's topics may be theirs)."""
    brokers, topics = recorded
    mine = [t for t in topics if t in plan_topics]
    others = [t for t in topics if t not in plan_topics]
    if others:
        return ([], mine), (list(brokers), others)
    return (list(brokers), mine), ([], [])
