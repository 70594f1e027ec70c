"""`kafka-reassign rebalance` (issue 26): one tick of the autopilot, with no plan stored (a stored plan is
stepped by the caller, cli/rebalance.py, exactly as `verify` steps it).

A tick reads the cluster once (metadata, and the sizes through the brokers), updates the known-broker
ledger kept beside the stored plan (`LedgerStore`), and decides with core/autopilot.decide. On `rebalance`
it plans with the balanced strategy (`--balance bytes` when every size is known, else replicas) at
`--tolerance`, cuts the plan with core/autopilot.limit_plan; on `heal` it keeps only the moves of the
partitions a dead broker held, in core/autopilot.heal_order. The plan is stored and started exactly as
`execute --max-moves-per-broker N --detach` does (ops/stored.detach): one plan at a time, whoever ticks.
The ledger's stores are in ops/ledger.py (LEDGER, LedgerStore, ledger_store).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reassign_cli.core import autopilot as ap
from reassign_cli.core import schedule as sch
from reassign_cli.core.model import Broker, ClusterState
from reassign_cli.errors import ExitCode, OperationalError, UsageError
from reassign_cli.ops.ledger import _read, ledger_store

SEED = 0  # the same cluster gives the same plan
CHUNK = 1 << 30


@dataclass(frozen=True, slots=True)
class TickRequest:
    trigger: float = ap.TRIGGER
    tolerance: float = 0.05
    dead_after: float = ap.DEAD_AFTER
    exclude_brokers: frozenset[int] = frozenset()
    exclude_topics: str | None = None  # a regular expression (re.fullmatch)
    max_moves: int | None = None  # moves per plan
    max_bytes: int | None = None  # bytes copied per plan
    per_broker: int = 2  # --max-moves-per-broker of the stored plan
    throttle: int | None = None
    hours: Any = None
    report_dir: str | None = None
    dry_run: bool = False


@dataclass(slots=True)
class TickOutcome:
    code: int
    decision: ap.Decision
    metrics: ap.TickMetrics
    plan: dict[str, Any] | None = None  # the reassignment JSON planned (None: nothing planned)
    lines: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# The cluster as the decision sees it
# ---------------------------------------------------------------------------------------------


def selected_topics(state: ClusterState, exclude: str | None) -> list[str]:
    """Every topic but those --exclude-topics matches (whole name) and those being deleted."""
    pattern = re.compile(exclude) if exclude else None
    return sorted(
        t for t in state.topics if t not in state.deleting and (pattern is None or not pattern.fullmatch(t))
    )


def all_sizes(state: ClusterState) -> dict[str, dict[int, int]] | None:
    """Every partition's size, or None when any is unknown (then the tick balances replicas)."""
    out: dict[str, dict[int, int]] = {}
    for name, topic in state.topics.items():
        if any(p not in topic.sizes for p in topic.replicas):
            return None
        out[name] = dict(topic.sizes)
    return out


def assignment(state: ClusterState) -> dict[str, dict[int, list[int]]]:
    """Each partition's target replicas (the reassignment's target while one runs)."""
    return {t: {p: list(topic.target(p)) for p in topic.replicas} for t, topic in state.topics.items()}


def broker_states(
    state: ClusterState,
    current: Mapping[str, Mapping[int, Sequence[int]]],
    sizes: Mapping[str, Mapping[int, int]] | None,
    forced: Mapping[int, tuple[int, int]] | None = None,
) -> list[ap.BrokerState]:
    """One BrokerState per broker registered or holding a replica, from `current` (an assignment)."""
    registered = {b.id for b in state.brokers}
    count: dict[int, int] = {}
    lead: dict[int, int] = {}
    held: dict[int, int] = {}
    largest: dict[int, int] = {}
    alone: dict[int, int] = {}
    for t, parts in current.items():
        for p, row in parts.items():
            size = sizes[t][p] if sizes is not None else 0
            for b in set(row):
                count[b] = count.get(b, 0) + 1
                held[b] = held.get(b, 0) + size
                largest[b] = max(largest.get(b, 0), size)
            if row:
                lead[row[0]] = lead.get(row[0], 0) + 1
            if len(set(row)) == 1:
                alone[row[0]] = alone.get(row[0], 0) + 1
    caps = state.capacities
    return [
        ap.BrokerState(
            id=b,
            replicas=count.get(b, 0),
            leaders=lead.get(b, 0),
            registered=b in registered,
            bytes=None if sizes is None else held.get(b, 0),
            capacity=caps[b].total if b in caps and caps[b].total > 0 else None,
            largest=largest.get(b, 0),
            forced_counts=None if forced is None else forced.get(b),
            must_lead=alone.get(b, 0),
        )
        for b in sorted(registered | set(count))
    ]


def foreign_line(state: ClusterState) -> str | None:
    """The reassignments in progress (no plan is stored, so none is ours), or None."""
    found = {(t, p) for t, topic in state.topics.items() for p in topic.replicas if topic.is_reassigning(p)}
    found |= set(state.reassigning_elsewhere) | set(state.reassignment or {})
    moving = sorted(found)
    if not moving:
        return None
    shown = ",".join(f"{t}-{p}" for t, p in moving[:10])
    more = f" and {len(moving) - 10} more" if len(moving) > 10 else ""
    return (
        f"{len(moving)} partition(s) reassigning with no plan stored by kafka-reassign (an operator's or "
        f"another tool's): {shown}{more}"
    )


# ---------------------------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------------------------


def plan_brokers(state: ClusterState, exclude: frozenset[int]) -> list[Broker]:
    from reassign_cli.planning import plan

    wanted = [b.id for b in state.brokers if b.id not in exclude]
    brokers, _ = plan.select_brokers(state, wanted, True)
    return brokers


def proposed(
    state: ClusterState, topics: list[str], brokers: list[Broker], sized: bool, tolerance: float
) -> dict[str, dict[int, list[int]]]:
    """The balanced strategy's whole plan for `topics` over `brokers` (bytes when `sized`), seed SEED."""
    from reassign_cli.ops.generate import BalancedStrategy
    from reassign_cli.planning import plan

    specs = plan.topic_specs(state, topics)
    strategy = BalancedStrategy(SEED, state, bytes_tolerance=tolerance if sized else None)
    strategy.check(specs, brokers)
    out: dict[str, dict[int, list[int]]] = {}
    for chunk in strategy.proposals(specs, brokers):
        for t, parts in chunk.items():
            out[t] = {int(p): [int(b) for b in row] for p, row in parts.items()}
    return out


def forced_counts(
    state: ClusterState, topics: list[str], brokers: list[Broker]
) -> dict[int, tuple[int, int]]:
    from reassign_cli.planning import plan
    from reassign_cli.planning.balanced.planner import count_range

    if not topics or not brokers:
        return {}
    return count_range(state.topics, brokers, plan.topic_specs(state, topics))


def heal_limited(
    state: ClusterState,
    current: dict[str, dict[int, list[int]]],
    whole: dict[str, dict[int, list[int]]],
    sizes: dict[str, dict[int, int]] | None,
    dead: frozenset[int],
    req: TickRequest,
) -> ap.Limited:
    """The heal: only the partitions a dead broker holds, most under-replicated first, within the limits."""
    isr = {t: dict(topic.isr) for t, topic in state.topics.items() if topic.isr}
    order = ap.heal_order(current, dead, sizes, isr)
    picked: dict[str, dict[int, list[int]]] = {}
    for t, p in order:
        row = whole.get(t, {}).get(p)
        if row is not None:
            picked.setdefault(t, {})[p] = row
    limited = ap.limit_plan(current, picked, sizes, max_moves=None, max_bytes=req.max_bytes)
    rank = {tp: i for i, tp in enumerate(order)}
    taken = sorted(limited.taken, key=lambda m: rank[(m.topic, m.partition)])
    if req.max_moves is not None:
        taken = taken[: req.max_moves]
    out: dict[str, dict[int, list[int]]] = {}
    for m in taken:
        out.setdefault(m.topic, {})[m.partition] = list(m.after)
    return ap.Limited(out, tuple(taken), (), limited.too_large, sum(m.bytes for m in taken))


def reassignment_json(limited: ap.Limited) -> dict[str, Any]:
    """The moves taken as Kafka's reassignment JSON, in the order they should start (as planned)."""
    return {
        "version": 1,
        "partitions": [
            {
                "topic": m.topic,
                "partition": m.partition,
                "replicas": list(m.after),
                "log_dirs": ["any"] * len(m.after),
            }
            for m in limited.taken
        ],
    }


def applied(
    current: Mapping[str, Mapping[int, list[int]]], limited: ap.Limited
) -> dict[str, dict[int, list[int]]]:
    out = {t: dict(parts) for t, parts in current.items()}
    for m in limited.taken:
        out.setdefault(m.topic, {})[m.partition] = list(m.after)
    return out


# ---------------------------------------------------------------------------------------------
# The tick
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Look:
    """What one read of the cluster gives the tick: `full`, and `state` with the selected topics only."""

    full: ClusterState
    state: ClusterState
    current: dict[str, dict[int, list[int]]]
    sizes: dict[str, dict[int, int]] | None
    topics: list[str]
    brokers: list[Broker]
    forced: dict[int, tuple[int, int]]


def look(full: ClusterState, req: TickRequest) -> Look:
    """The selected topics only (--exclude-topics): an excluded topic is neither moved nor judged, so a
    plan can always reach what the tick judges by. Reassignments in progress are looked for in `full`."""
    import dataclasses

    topics = selected_topics(full, req.exclude_topics)
    state = dataclasses.replace(full, topics={t: full.topics[t] for t in topics})
    current = assignment(state)
    sizes = all_sizes(state)
    brokers = plan_brokers(state, req.exclude_brokers)
    return Look(full, state, current, sizes, topics, brokers, forced_counts(state, topics, brokers))


def decide(lk: Look, req: TickRequest, ledger: ap.Ledger, now: float) -> ap.Decision:
    """The tick's decision; the standing pause (ops/standing_pause.py) comes first: `skipped: paused ...`."""
    states = broker_states(lk.state, lk.current, lk.sizes, lk.forced)
    return ap.decide(
        states,
        paused=None if ledger.paused is None else sch.Paused.from_dict(ledger.paused).line(),
        trigger=req.trigger,
        exclude=req.exclude_brokers,
        ledger=ledger,
        now=now,
        dead_after=req.dead_after,
        foreign=foreign_line(lk.full),
    )


def make_plan(lk: Look, req: TickRequest, decision: ap.Decision) -> ap.Limited:
    """The plan of a rebalance or heal, cut to one tick's limits."""
    if not lk.topics:
        raise UsageError("--exclude-topics leaves no topic to balance")
    whole = proposed(lk.state, lk.topics, lk.brokers, lk.sizes is not None, req.tolerance)
    if decision.kind == "heal":
        return heal_limited(lk.state, lk.current, whole, lk.sizes, decision.dead, req)
    loads = ap.current_loads(lk.current, lk.sizes)
    b_ids = {b.id for b in lk.brokers}
    return ap.limit_plan(
        lk.current,
        whole,
        lk.sizes,
        max_moves=req.max_moves,
        max_bytes=req.max_bytes,
        loads=loads,
        goals=_goals(loads, b_ids),
    )


def _goals(loads: Mapping[int, float], b_ids: set[int]) -> dict[int, float]:
    """The even goal over B (a broker off B aims at 0): every load ends on B."""
    mean = sum(loads.values()) / len(b_ids) if b_ids else 0.0
    return {b: (mean if b in b_ids else 0.0) for b in set(loads) | b_ids}


def worst_after(lk: Look, req: TickRequest, limited: ap.Limited) -> float | None:
    states = broker_states(lk.state, applied(lk.current, limited), lk.sizes, lk.forced)
    b_set = [b for b in states if b.registered and b.id not in req.exclude_brokers]
    _, worst = ap.judge(states, b_set, req.trigger)
    return None if worst is None else worst.fraction


def now_s() -> float:
    return time.time()


BUSY = int(ExitCode.BUSY)


def read_cluster(backend: Any, mover: Any, warn: Callable[[str], None]) -> ClusterState:
    """Metadata (with the partitions' ISR), then every replica's size and each broker's capacity through
    the brokers when they are at hand (a failure there: warned, the tick balances replicas)."""
    from reassign_cli.planning import sizes

    state: ClusterState = backend.read_state(None, partition_state=True)
    if mover is None:
        return state
    try:
        survey = mover.survey(state.broker_ids)
        sizes.record(state, survey.replica_sizes)
        state.capacities = survey.capacities
    except OperationalError as e:
        warn(f"partition sizes not read from the brokers ({e}): balancing replicas")
    return state


def keep_ledger(backend: Any, state: ClusterState, now: float, dry_run: bool) -> ap.Ledger:
    """The ledger after this look, kept in its store (read only on a dry run). Registered means live: in
    ZooKeeper mode a broker's znode; through the admin API a broker DescribeCluster lists unfenced (a
    stopped broker of KRaft stays registered, fenced, until its registration is removed)."""
    registered = [b.id for b in state.brokers]
    holding = {b for topic in state.topics.values() for row in topic.replicas.values() for b in row}

    def fn(ledger: ap.Ledger) -> ap.Ledger:
        return ap.update(ledger, registered, holding, now)

    with ledger_store(backend) as store:
        if dry_run:
            return fn(_read(store))
        return store.update(fn)


def dead_now(backend: Any, dead_after: float, now: float) -> frozenset[int]:
    """The brokers the ledger says are dead now."""
    with ledger_store(backend) as store:
        ledger = _read(store)
    return ap.dead(ledger, now, dead_after)


def tick(
    backend: Any, mover: Any, req: TickRequest, warn: Callable[[str], None], now: float | None = None
) -> tuple[TickOutcome, Look | None, ap.Limited | None]:
    """Read, keep the ledger, decide and (rebalance, heal) plan: nothing is started here (see `start`)."""
    at = now_s() if now is None else now
    state = read_cluster(backend, mover, warn)
    lk = look(state, req)
    ledger = keep_ledger(backend, state, at, req.dry_run)
    decision = decide(lk, req, ledger, at)
    if decision.kind == "balanced":
        return TickOutcome(0, decision, ap.tick_metrics(decision), lines=[decision.line()]), lk, None
    if decision.kind in ("skipped", "wait"):
        return TickOutcome(BUSY, decision, ap.tick_metrics(decision), lines=[decision.line()]), lk, None
    limited = make_plan(lk, req, decision)
    lines = [decision.line(), plan_line(limited, lk.sizes is not None)]
    metrics = ap.tick_metrics(decision, worst_after(lk, req, limited), limited.bytes)
    if not limited.taken:
        return TickOutcome(0, decision, metrics, lines=lines), lk, limited
    return TickOutcome(BUSY, decision, metrics, reassignment_json(limited), lines), lk, limited


def plan_line(limited: ap.Limited, sized: bool) -> str:
    from reassign_cli.core.pacing import human_bytes

    copies = f", {human_bytes(limited.bytes)} to copy" if sized else " (sizes unknown: replicas balanced)"
    left = f"; {len(limited.left)} more left for later ticks" if limited.left else ""
    large = (
        f"; {len(limited.too_large)} move(s) larger than --max-bytes alone are never started by the autopilot"
        if limited.too_large
        else ""
    )
    if not limited.taken:
        return f"plan: nothing to move within the limits{large}"
    return f"plan: {len(limited.taken)} move(s){copies}{left}{large}"


def plan_bytes(doc: Mapping[str, Any]) -> bytes:
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


def start(
    env: Any,
    mover: Any,
    req: TickRequest,
    data: bytes,
    connection: Any,
    report: Any,
    heal: bool,
    rollback_file: str | None,
    dead: frozenset[int] = frozenset(),
) -> int:
    """Store the plan and start it exactly as `execute --max-moves-per-broker N --detach` does (a heal in
    its order of damage: as-planned; a rebalance largest-first when sizes are known). Exit 4: work left."""
    from reassign_cli.core.schedule import Schedule
    from reassign_cli.ops import stored
    from reassign_cli.ops.request import ExecuteRequest

    ereq = ExecuteRequest(
        file_name="rebalance",
        data=data,
        throttle=req.throttle,
        max_moves=req.per_broker,
        connection=connection,
        rollback_file=rollback_file,
    )
    from reassign_cli.ops.autopilot_end import marker

    # marked as the autopilot's (ops/autopilot_end.py): a broker dying while it runs ends it early
    schedule = {
        **Schedule(hours=req.hours, not_before=None).to_dict(),
        **marker("heal" if heal else "rebalance", dead),
    }
    stored.detach(env, ereq, report, "as-planned" if heal else None, mover, schedule)
    return BUSY


def forget_dead_configs(
    backend: Any,
    dead_after: float,
    now: float,
    say: Callable[[str], None],
    connection: Sequence[str] = ("--bootstrap-server", "HOST:PORT"),
) -> list[int]:
    """A dead broker's entry in our prior-values record, where only that broker could take its keys off
    (the admin API alone, no --bootstrap-controller: a broker's config is changed through that broker):
    named once through `say` (with the command that removes the keys should it ever come back) and
    dropped from the record, so the clear at a plan's end has nothing pending on it and the heal ends
    with exit 0. In ZooKeeper mode, or with the controller at hand, the clear takes the keys off itself:
    nothing is dropped. Returns the brokers dropped."""
    from reassign_cli.core import throttle as th

    if backend.offline_broker_configs or getattr(backend, "offline_broker_clear", False):
        return []
    dead = dead_now(backend, dead_after, now)
    gone = sorted(dead - set(backend.read_state([]).broker_ids)) if dead else []
    record = backend.read_priors() if gone else {}
    entries = {b: e for b in gone if (e := th.record_entry(record, "brokers", b))}
    if not entries:
        return []
    backend.update_priors(lambda rec: th.record_forget_all(rec, [("brokers", b) for b in entries]))
    for b, priors in entries.items():
        say(dead_config_line(b, list(priors), connection))
    return sorted(entries)


def dead_config_line(broker: int, keys: list[str], connection: Sequence[str]) -> str:
    """`connection`: kafka-configs' connection options for the command shown (the CLI gives its own)."""
    import shlex

    target = ["--entity-type", "brokers", "--entity-name", str(broker)]
    command = shlex.join(
        [
            "kafka-configs",
            *connection,
            *target,
            "--alter",
            "--delete-config",
            ",".join(sorted(keys)),
        ]
    )
    return (
        f"broker {broker} is dead: the throttle keys this tool set on it ({', '.join(sorted(keys))}) can be "
        "taken off only through that broker (or --bootstrap-controller), so they are dropped from our record "
        f"and left set; if it ever comes back, remove them with: {command}"
    )
