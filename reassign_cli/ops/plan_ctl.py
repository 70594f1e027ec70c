"""The stored plan (issue 25 items 6 and 8; docs/stored-plan.md) seen and changed by the operator: `pause`,
`continue [--hours]`, `list`'s part on it, `cancel` with no plan file, and the gauges verify's metrics file
adds. Each change is one fenced update of the store (backends/plan_store.update: read, change, compare-and-
set, again on a lost race), so it composes with any number of steppers on any host.

The rules themselves are pure and live in core/: core.schedule (pause, continue_plan, holds, wait_line),
core.stored_plan (progress), render/plan_metrics (PlanSummary). The store comes from
backends/plan_stores.open_store (ZooKeeper mode: znodes; admin API alone: the topic).
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reassign_cli.backends import plan_store as ps
from reassign_cli.backends.plan_store import PlanStore, Versioned
from reassign_cli.backends.protocol import Backend, LogDirMoves
from reassign_cli.core import plan_view as pv
from reassign_cli.core import schedule as sch
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import ReassignmentFile
from reassign_cli.errors import OperationalError

CANCELLING = "cancel in progress"  # the reason of the pause `cancel` stores before it cancels anything
KEEP: Any = object()  # continue_stored: the hours stay as stored


def who() -> tuple[str, str]:
    """(user, host) of this process, as a pause records them."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return user, socket.gethostname() or "unknown"


# -- pause and continue -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PauseOutcome:
    paused: sch.Paused  # the pause now stored
    already: bool  # it was paused before (the first pause is kept)


def pause_stored(
    store: PlanStore, now: datetime, user: str, host: str, reason: str | None = None
) -> PauseOutcome | None:
    """`pause`: the stored plan paused (fenced). None: no plan is stored."""
    found: list[PauseOutcome] = []

    def fn(plan: sp.StoredPlan) -> sp.StoredPlan | None:
        current = pv.paused_of(plan)
        new = sch.pause(current, now, user, host, reason)
        found[:] = [PauseOutcome(new, current is not None)]
        if current is not None:
            return None
        return dataclasses.replace(plan, paused=new.to_dict(), updated=now.timestamp())

    _, seen = ps.update(store, fn)
    return None if seen is None else found[0]


def continue_stored(store: PlanStore, now: datetime, hours: Any = KEEP) -> sch.Continued | None:
    """`continue [--hours H]`: the pause cleared and, when `hours` is given (an Hours, or None: any time),
    the stored hours replaced (fenced). None: no plan is stored. `changes` empty: nothing changed."""
    found: list[sch.Continued] = []

    def fn(plan: sp.StoredPlan) -> sp.StoredPlan | None:
        given = {} if hours is KEEP else {"hours": hours}
        c = sch.continue_plan(pv.schedule_of(plan), pv.paused_of(plan), **given)
        found[:] = [c]
        if not c.changes:
            return None
        # the hours and not_before replaced; other keys of the schedule object (the --on-under-min-isr
        # policy, ops/isr_cancel.py) kept
        schedule = {**plan.schedule, **c.schedule.to_dict()}
        return dataclasses.replace(plan, schedule=schedule, paused={}, updated=now.timestamp())

    _, seen = ps.update(store, fn)
    return None if seen is None else found[0]


# -- what the plan reports: list and the metrics ----------------------------------------------------
def report(seen: Versioned, now: datetime, recorded: pv.Entities | None = None) -> dict[str, Any]:
    """`list --format json`'s `stored_plan`: the plan's state, moves, bytes, ETA, origin, driver, last step;
    with `recorded` (the brokers and topics our throttle record holds), `throttles`: those it keeps for its
    moves (core.plan_view.throttles_held)."""
    from reassign_cli.ops.stored_health import stored_ignore

    plan = seen.plan
    pr = sp.progress(plan)
    from reassign_cli.ops.stored_log_dirs import counts

    dirs = counts(plan)
    state, why = pv.state_line(plan, now, None if dirs is None else (dirs.moving, dirs.queued))
    lease = plan.lease
    held = None if recorded is None else pv.throttles_held({e.topic for e in plan.entries}, recorded)[0]
    return {
        **({} if dirs is None else {"log_dir_moves": dirs.doc()}),  # only a plan that names log dirs
        **({} if held is None else {"throttles": {"brokers": held[0], "topics": held[1]}}),
        "plan_sha256": plan.plan_sha256,
        "partitions": pr.total,
        "state": state,
        "state_line": why,
        "paused": dict(plan.paused) or None,
        "schedule": pv.schedule_of(plan).to_dict(),
        "moves": {"running": pr.moving, "queued": pr.queued, "done": pr.done},
        "bytes": {"total": pr.bytes_total, "done": pr.bytes_done, "remaining": pv.bytes_remaining(pr)},
        "eta_seconds": pv.eta_seconds(plan, pr),
        "stored_by": {"user": plan.origin.user, "host": plan.origin.host, "at": sch.iso(_at(plan.origin.at))},
        "updated": sch.iso(_at(plan.updated)),
        "updated_age_seconds": max(0.0, round(now.timestamp() - plan.updated, 1)),
        "driver": None if lease is None else lease.doc(),
        "last_step": None
        if plan.last_step is None
        else {"at": sch.iso(_at(plan.last_step.at)), "controller_epoch": plan.last_step.controller_epoch},
        "cap": plan.pace.cap,
        "batch_size": plan.pace.batch_size,
        "ignore_health": sorted(stored_ignore(plan.schedule)),
    }


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def read_stored(backend: Backend) -> sp.StoredPlan | None:
    """The stored plan, read without writing anything (verify --metrics-file); None: none stored."""
    from reassign_cli.backends.plan_stores import open_store

    with open_store(backend) as store:
        seen = store.read()
    return None if seen is None else seen.plan


# -- cancel ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class StoredCancel:
    plan: sp.StoredPlan  # as it was when the cancel paused it
    outcome: Any  # ops.cancel.CancelOutcome
    rollback_file: str | None = None  # None: nothing was moving, nothing written
    deleted: bool = False


def cancel_stored(
    backend: Backend,
    store: PlanStore,
    who_now: tuple[str, str, datetime],
    *,
    rollback_file: str | None = None,
    preserve_throttles: bool = False,
    timeout: float = 60.0,
    log_dirs: LogDirMoves | None = None,
) -> StoredCancel | None:
    """`cancel` with no plan file: the stored plan paused first (so no step starts a move meanwhile), then
    cancelled as `cancel --reassignment-json-file` cancels its file (ops.cancel: the plan's partitions that
    reassign go back, its log-dir moves stop, throttles off as verify takes them off), the targets given up
    saved to the rollback file before the cancel (as cancel --all), then the plan deleted. None: nothing
    stored. A cancel that fails (exit 3, or 4 on its wait) leaves the plan stored and paused."""
    from reassign_cli.ops.cancel import cancel
    from reassign_cli.ops.cancel_all import rollback_saver

    user, host, now = who_now
    paused = pause_stored(store, now, user, host, CANCELLING)
    seen = store.read() if paused is not None else None
    if seen is None:
        return None
    entries = ReassignmentFile(list(seen.plan.entries))
    targets = entries.targets()
    dirs = entries.log_dir_targets()
    result = StoredCancel(seen.plan, None)

    save = rollback_saver(targets, rollback_file, result)
    result.outcome = cancel(
        backend,
        targets,
        preserve_throttles=preserve_throttles,
        timeout=timeout,
        dirs=dirs,
        log_dirs=log_dirs,
        before=save,
        hint="Check with kafka-reassign list; then run cancel again: the stored plan stays, paused.",
    )
    result.deleted = _delete(store, seen.plan.plan_sha256)
    return result


def _delete(store: PlanStore, sha256: str) -> bool:
    """Delete the stored plan of `sha256` (fenced at the version read; read again when a step wrote
    meanwhile). False: it was gone already (or another plan is stored)."""
    for _ in range(ps.MAX_ATTEMPTS):
        seen = store.read()
        if seen is None or seen.plan.plan_sha256 != sha256:
            return False
        if store.delete(seen):
            return True
    raise OperationalError("the stored plan kept changing while it was deleted; run cancel again")


@contextlib.contextmanager
def stored_plan_of_file(backend: Backend, data: bytes) -> Iterator[list[str]]:
    """cancel --reassignment-json-file: when the stored plan is that file's (the SHA-256 of `data`), pause it
    before the cancel (no step starts a move meanwhile) and delete it once the cancel ended well; the list
    yielded then holds its SHA-256 (empty: no plan stored, or another one, left alone)."""
    from reassign_cli.backends.plan_stores import open_store
    from reassign_cli.core.pacing import plan_digest

    sha, found = plan_digest(data), list[str]()
    with open_store(backend) as store:
        seen = store.read()
        if seen is not None and seen.plan.plan_sha256 == sha:
            user, host = who()
            pause_stored(store, datetime.now(UTC), user, host, CANCELLING)
        yield found
        if seen is not None and seen.plan.plan_sha256 == sha and _delete(store, sha):
            found.append(sha)
