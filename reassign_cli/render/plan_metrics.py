"""The gauges of a stored plan (issue 25 item 8), in node_exporter's textfile format, beside verify's own
(render/metrics.py). `verify --metrics-file` adds these to its registry (render/metrics.registry: `add_plan_gauges` of
`summary(the stored plan)`) whenever a plan is stored.

Every series carries the labels verify's series carry (`plan`, `plan_sha256`, then the operator's
`--metrics-label`s), so one plan's series join on(plan, plan_sha256) with verify's. Names and labels:

- kafka_reassign_plan_moves{state}: running, queued, done (all three, 0 included)
- kafka_reassign_plan_bytes_remaining: bytes the plan still has to copy (only when known)
- kafka_reassign_plan_eta_seconds: seconds to the end at the measured rate (only when known)
- kafka_reassign_plan_paused: 1 while paused (`kafka-reassign pause`), else 0
- kafka_reassign_plan_held{reason}: 1 for each reason that holds new moves back now, 0 for the others (every
  reason the step checked is written, so a series does not vanish when its hold ends)
- kafka_reassign_plan_last_step_timestamp_seconds: Unix time of the plan's last step (only once one ran)
- kafka_reassign_plan_throttle_rate_bytes{broker,role}: the rate the plan's adaptive throttle or schedule
  holds per broker and role (leader, follower, log_dir), B/s, as kept with the plan (issue 28: a detached
  plan's steps and a foreground paced execute both keep it there); none without such a loop

Label values are escaped by prometheus_client's exposition (backslash, double quote, newline).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from reassign_cli.core import autothrottle as at
from reassign_cli.core import plan_view as pv
from reassign_cli.core import schedule as sch
from reassign_cli.core import stored_plan as sp

PREFIX = "kafka_reassign_plan_"
SHA_DIGITS = 12  # hex digits of a plan's SHA-256 in the plan_sha256 label (render/metrics.py's too)
MOVE_STATES = ("running", "queued", "done")
OWN_LABELS = ("state", "reason", "broker", "role")  # the labels these gauges add: not for --metrics-label


@dataclass(frozen=True, slots=True)
class PlanSummary:
    """What a stored plan reports after a step. `held`: every reason the step checked (health checks by
    their names, `hours` and `not_before` from core.schedule.holds), True where it holds new moves now."""

    running: int
    queued: int
    done: int
    paused: bool = False
    held: Mapping[str, bool] = field(default_factory=dict)
    bytes_remaining: int | None = None  # None: not known (sizes not at hand)
    eta_seconds: float | None = None  # None: not known (no rate measured yet)
    last_step_timestamp: float | None = None  # None: no step has run
    rates: Mapping[tuple[int, str], int] = field(default_factory=dict)  # (broker, role) -> B/s, the loop's

    def __post_init__(self) -> None:
        counts = {"running": self.running, "queued": self.queued, "done": self.done}
        negative = [k for k, v in counts.items() if v < 0]
        if negative or (self.bytes_remaining or 0) < 0 or (self.eta_seconds or 0) < 0:
            raise ValueError(f"a negative count, byte total or ETA in {self!r}")


def stored_plan_labels(name: str, sha256_hex: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The labels of a stored plan's series when verify has no file: `plan` the name the stored plan keeps,
    `plan_sha256` the first SHA_DIGITS hex digits of its SHA-256, then the operator's labels (the same
    shape as render.metrics.plan_labels gives for a file)."""
    return {"plan": name, "plan_sha256": sha256_hex[:SHA_DIGITS], **(extra or {})}


def plan_sha256(data: bytes) -> str:
    """The full hex SHA-256 of a plan's bytes (the stored plan keeps it; the label takes the first digits)."""
    return hashlib.sha256(data).hexdigest()


def _gauge(reg: CollectorRegistry, name: str, doc: str, labels: Mapping[str, str], value: float) -> None:
    Gauge(PREFIX + name, doc, [*labels], registry=reg).labels(**labels).set(value)


def add_plan_gauges(reg: CollectorRegistry, labels: Mapping[str, str], s: PlanSummary) -> None:
    """Register the stored plan's gauges in `reg` (verify's registry, or a new one)."""
    clash = sorted(set(labels) & set(OWN_LABELS))
    if clash:
        raise ValueError(f"the labels {', '.join(clash)} are the plan gauges' own")
    plan = dict(labels)
    moves = Gauge(
        PREFIX + "moves",
        "Moves of the stored plan by state: running, queued, done.",
        [*plan, "state"],
        registry=reg,
    )
    for state, n in zip(MOVE_STATES, (s.running, s.queued, s.done), strict=True):
        moves.labels(**plan, state=state).set(n)
    if s.bytes_remaining is not None:
        _gauge(reg, "bytes_remaining", "Bytes the stored plan still has to copy.", plan, s.bytes_remaining)
    if s.eta_seconds is not None:
        _gauge(
            reg, "eta_seconds", "Seconds to the stored plan's end at the measured rate.", plan, s.eta_seconds
        )
    _gauge(
        reg,
        "paused",
        "1 while the stored plan is paused (kafka-reassign pause), else 0.",
        plan,
        int(s.paused),
    )
    if s.held:
        held = Gauge(
            PREFIX + "held",
            "1 for each reason that holds the stored plan's new moves back now, 0 for the others checked.",
            [*plan, "reason"],
            registry=reg,
        )
        for reason in sorted(s.held):
            held.labels(**plan, reason=reason).set(int(s.held[reason]))
    if s.rates:
        rates = Gauge(
            PREFIX + "throttle_rate_bytes",
            "The throttle rate the stored plan's rate loop holds per broker and role, in bytes per second.",
            [*plan, "broker", "role"],
            registry=reg,
        )
        for (broker, role), rate in sorted(s.rates.items()):
            rates.labels(**plan, broker=str(broker), role=role.replace("-", "_")).set(rate)
    if s.last_step_timestamp is not None:
        _gauge(
            reg,
            "last_step_timestamp_seconds",
            "Unix time of the stored plan's last step.",
            plan,
            s.last_step_timestamp,
        )


def render_plan_metrics(labels: Mapping[str, str], s: PlanSummary) -> str:
    """The gauges alone as textfile text (HELP and TYPE lines, escaped label values)."""
    reg = CollectorRegistry()
    add_plan_gauges(reg, labels, s)
    return generate_latest(reg).decode()


def summary(plan: sp.StoredPlan, now: datetime, held: Mapping[str, bool] | None = None) -> PlanSummary:
    """The gauges' view of a stored plan at `now`: `held` the health reasons a step checked (when it
    recorded them), joined by the schedule's own (`hours`, `not_before`: core.schedule.holds)."""
    pr = sp.progress(plan)
    return PlanSummary(
        running=pr.moving,
        queued=pr.queued,
        done=pr.done,
        paused=bool(plan.paused),
        held={**sch.holds(now, pv.schedule_of(plan)), **(held or {})},
        bytes_remaining=pv.bytes_remaining(pr),
        eta_seconds=pv.eta_seconds(plan, pr),
        last_step_timestamp=None if plan.last_step is None else plan.last_step.at,
        rates=loop_rates(plan),
    )


LOOP_KEY = "throttle_loop"  # where the plan's schedule keeps its rate loop (ops/stored_rates.KEY)


def loop_rates(plan: sp.StoredPlan) -> dict[tuple[int, str], int]:
    """The rates the plan's rate loop holds, per (broker, role); none without a loop, or with one that
    does not parse (the step reports that; the gauges leave it out)."""
    doc = plan.schedule.get(LOOP_KEY)
    try:
        rates = at.State.from_dict(doc["loop"]["state"]).rates if doc is not None else {}
    except (KeyError, TypeError, ValueError):
        return {}
    return {(b, str(role)): v for (b, role), v in rates.items()}
