"""`execute --detach --on-under-min-isr cancel` (issue 25, item 5): opt-in, stored with the plan (the
schedule's `on_under_min_isr` key) and honoured by every step (ops/step.py). When a step's health check
finds a partition under its min.insync.replicas whose move the plan has started and not seen done, that
move alone is cancelled: the step first marks it done in the stored plan (through the fence: it is never
started again), then saves its target to a rollback file (Kafka's reassignment JSON: the command to run
it again later), cancels it as `cancel` does (the replicas revert; the throttles are restored once
nothing reassigns anywhere, else by the plan's last step) and says so. The plan's other moves go on by
the holds' rules; at its end the step reports the cancelled moves as not as planned (exit 5).

A kill between the mark and the cancel leaves the move running: it completes, and the end finds it as
planned. Nothing is cancelled without this option.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from reassign_cli.core import health as hc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import TopicPartition, format_reassignment_json

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend

POLICY = "on_under_min_isr"
CANCEL = "cancel"


def wants_cancel(plan: sp.StoredPlan) -> bool:
    return plan.schedule.get(POLICY) == CANCEL


def touched(plan: sp.StoredPlan, verdict: hc.Verdict) -> list[TopicPartition]:
    """The plan's running moves (started, not done) whose partition is under min.insync.replicas, as the
    verdict found (held or ignored alike: the operator asked for the cancel)."""
    running = plan.started - plan.done
    found = {
        h.partition
        for h in (*verdict.holds, *verdict.ignored)
        if h.check == "min-isr" and h.partition is not None and h.partition in running
    }
    return sorted(found)


def save_targets(plan: sp.StoredPlan, tps: Iterable[TopicPartition], path: Path | None = None) -> Path:
    """The cancelled moves' targets, as a plan file to execute again later; returns where."""
    from reassign_cli.ops.request import default_rollback_path

    wanted = set(tps)
    targets: dict[str, dict[int, list[int]]] = {}
    for e in plan.entries:
        if (e.topic, e.partition) in wanted:
            targets.setdefault(e.topic, {})[e.partition] = list(e.replicas)
    where = path or Path(default_rollback_path())
    where.write_text(format_reassignment_json(targets, log_dirs=True) + "\n")
    return where


def cancel_moves(backend: Backend, plan: sp.StoredPlan, tps: list[TopicPartition]) -> Path:
    """Save the targets, then cancel those moves (waiting until they reverted) and restore the throttles
    if nothing else reassigns. Returns the rollback file."""
    from reassign_cli.ops.cancel import cancel

    path = save_targets(plan, tps)
    by_tp = {(e.topic, e.partition): list(e.replicas) for e in plan.entries}
    cancel(backend, {tp: by_tp[tp] for tp in tps})
    return path
