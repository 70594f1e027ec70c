"""The rate loop (ops/rate_loop.py, issue 28) in a stored plan's steps (issue 25): `execute --detach` with
`--throttle auto --min-throttle R1 --max-throttle R2 [--throttle-interval S]`, `--throttle R --max-throttle
R2` or `--throttle-schedule ...`, carried on by cron `verify` steps (ops/step.py).

Kept in the stored plan's `schedule` object under its own key, `throttle_loop` (as ops/isr_cancel.py keeps
`on_under_min_isr` there), not in a new head field: the head's format does not change (heads written before
read as "no loop"), and a step of an older version, which round-trips `schedule` as an opaque object, keeps
the loop's state instead of dropping it. The key holds `{"loop": RateLoop.state(), "meter": {...}}`: the
settings or schedule, the rates held per broker and role and why, the judgements in progress, and the
meter's baseline (the wall time of the last measured tick, the replica sizes then, the followers out of ISR).

Each step (`tick`): a schedule checks the rate in force at every step; the adaptive loop measures when its
interval has passed since the last tick (wall clock: steps run in separate processes, on any host) and
decides (core.autothrottle.decide, a held health check as its tripped guard). The new state goes in the
step's one compare-and-set with its marks; after it, `write` writes the changes through the fenced throttle
commit (ops.rate_loop.write_rates: priors recorded first, so the end restores the operator's own values)
and gives the one-line changes. New moves are throttled at the rate in force, the loop's rates over it
(`for_new_moves`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from reassign_cli.core import autothrottle as at
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import ClusterState
from reassign_cli.errors import OperationalError
from reassign_cli.ops.rate_loop import (
    Meter,
    RateLoop,
    out_of_isr,
    replica_keys,
    running_moves,
    write_rates,
)

if TYPE_CHECKING:
    from reassign_cli.backends.plan_store import PlanStore, Versioned
    from reassign_cli.backends.protocol import Backend, ReplicaKey

KEY = "throttle_loop"


def _rk(k: ReplicaKey) -> str:
    t, p, b = k
    return f"{t}:{p}:{b}"


def _unrk(text: str) -> ReplicaKey:
    t, p, b = text.rsplit(":", 2)
    return (t, int(p), int(b))


def meter_doc(meter: Meter) -> dict[str, Any]:
    return {
        "at": meter.at_time,
        "sizes": {_rk(k): v for k, v in sorted(meter.sizes.items())},
        "out": [list(x) for x in sorted(meter.out)],
    }


def meter_from(doc: Mapping[str, Any]) -> Meter:
    at_time = doc.get("at")
    return Meter(
        None if at_time is None else float(at_time),
        {_unrk(k): int(v) for k, v in doc.get("sizes", {}).items()},
        {(str(t), int(p), int(b)) for t, p, b in doc.get("out", [])},
    )


def with_loop(schedule: Mapping[str, Any], loop: RateLoop, meter: Meter | None = None) -> dict[str, Any]:
    """The plan's schedule object with the loop (and the meter's baseline) kept under KEY."""
    return {**schedule, KEY: {"loop": loop.state(), "meter": meter_doc(meter or Meter())}}


def stored_loop(plan: sp.StoredPlan) -> tuple[RateLoop, Meter] | None:
    """The loop kept with the plan (None: a fixed rate). StoredPlanError on a kept loop that does not parse."""
    doc = plan.schedule.get(KEY)
    if doc is None:
        return None
    try:
        return RateLoop.from_state(doc["loop"]), meter_from(doc.get("meter", {}))
    except (KeyError, TypeError, ValueError) as e:
        raise sp.StoredPlanError(f"{sp.WHAT}'s throttle loop does not parse: {e}") from None


def for_new_moves(plan: sp.StoredPlan, now: float) -> tuple[int | None, dict[int, dict[str, str]] | None]:
    """The rate the moves starting now are throttled at, and the loop's rates written over it per broker."""
    kept = stored_loop(plan)
    if kept is None:
        return plan.pace.throttle, None
    loop, _ = kept
    return loop.start_rate(datetime.fromtimestamp(now, UTC)), loop.overrides()


@dataclass(slots=True)
class Ticked:
    """A step's tick: the plan with the new state kept, the changes to write after the compare-and-set."""

    plan: sp.StoredPlan
    changes: list[at.Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    before: Mapping[str, Any] | None = None  # the loop as kept before the tick (None: no loop kept)


def tick(
    plan: sp.StoredPlan,
    state: ClusterState,
    now: float,
    sizer: Any,
    tripped: str | None,
    everything: Callable[[], ClusterState] | None = None,
) -> Ticked:
    """The loop's tick at a step (`state`: the plan's topics read with partition state; `sizer`: replica
    sizes through the brokers, for the adaptive loop; `everything`: every topic read with partition state,
    for the ISR signal, called only when the loop measures). No loop kept, or its interval not passed: no
    change."""
    kept = stored_loop(plan)
    if kept is None:
        return Ticked(plan)
    loop, meter = kept
    targets = {(e.topic, e.partition): list(e.replicas) for e in plan.entries}
    moves = running_moves(state, targets)
    when = datetime.fromtimestamp(now, UTC)
    changes: list[at.Change] = []
    if loop.schedule is not None:
        receivers = tuple(
            at.Receiver(b, 0, 1, (m.source,) if m.source >= 0 else ()) for m in moves for b in m.receivers
        )
        changes = loop.tick(when, at.Observation(1.0, receivers))
    else:
        if meter.at_time is not None and now - meter.at_time < loop.interval:
            return Ticked(plan)
        if sizer is None:
            raise OperationalError("the adaptive throttle measures the copies through the brokers")
        sizes = sizer.replica_sizes(replica_keys(moves))[0] if moves else {}
        ours = {b for m in moves for b in (m.source, *m.receivers)}
        out = out_of_isr(everything() if everything is not None and ours else state, ours)
        obs = meter.observe(now, moves, sizes, out)
        if obs is not None:
            obs = replace(obs, tripped=tripped)
            changes = loop.tick(when, obs)
    kept_plan = replace(plan, schedule=with_loop(plan.schedule, loop, meter))
    return Ticked(kept_plan, changes, list(loop.warnings), plan.schedule.get(KEY))


def write(backend: Backend, state: ClusterState, changes: Sequence[at.Change]) -> list[str]:
    """The changes written through the fenced throttle commit (brokers that are up); their lines. A write
    that fails is an OperationalError for the caller to report (the next step decides again)."""
    if not changes:
        return []
    live = None if backend.offline_broker_configs else set(state.broker_ids)
    write_rates(backend, {(c.broker, c.role): c.new for c in changes if live is None or c.broker in live})
    return [c.line() for c in changes]


def unwritten(plan: sp.StoredPlan, ticked: Ticked) -> sp.StoredPlan:
    """`plan` with the loop kept as it was before the tick: the rates of a write that did not land are not
    the rates the brokers hold (the meter's baseline goes back too: the next step judges the longer span)."""
    schedule = {k: v for k, v in plan.schedule.items() if k != KEY}
    if ticked.before is not None:
        schedule[KEY] = ticked.before
    return replace(plan, schedule=schedule)


def settle(
    store: PlanStore, written: Versioned, backend: Backend, state: ClusterState, ticked: Ticked
) -> tuple[sp.StoredPlan, list[str], bool]:
    """After the step's compare-and-set (`written`, the tick's state in it): the changes written; on a write
    that fails, the loop as it was put back through one more compare-and-set, so the stored rates are the
    rates the brokers hold (lost to another writer: that writer's state stands). (The plan as now kept, the
    lines, whether the changes were written.)"""
    try:
        return written.plan, write(backend, state, ticked.changes), True
    except OperationalError as e:
        line = f"{e}; the throttle rates were not written, the next step decides again"
        back = store.replace(written, unwritten(written.plan, ticked))
        return (written.plan if back is None else back.plan), [line], False


def kept_from(plan: sp.StoredPlan, runner: Any) -> sp.StoredPlan:
    """A foreground paced execute's stored plan with its rate loop (`runner`: ops.rate_loop.Runner) kept
    under KEY, as a detached plan keeps it: settings or schedule, the rates held and why, the open
    judgements. The meter's baseline is not kept (the foreground's clock is its own process's): a step
    taking over measures from its own first reading."""
    return replace(plan, schedule=with_loop(plan.schedule, runner.loop))


def resume_from(plan: sp.StoredPlan, runner: Any) -> None:
    """A foreground `--resume` of a stored plan that kept a loop of the same mode: its state, reasons and
    open judgements included, instead of the rates read back from the brokers."""
    kept = stored_loop(plan)
    if kept is None:
        return
    loop = kept[0]
    if (loop.settings is None) == (runner.loop.settings is None):
        runner.loop.auto = loop.auto
