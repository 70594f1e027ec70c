"""What `verify --metrics-file` reports beyond verify's own outcome, read from the cluster after it: the
throttle rates this tool has set (the brokers and keys its record names, at their current values), and the
sizes of the replicas of the partitions still moving (`ask`: DescribeLogDirs, when the admin API is at hand),
and the plan stored in the cluster by a paced execute (its gauges: render/plan_metrics.py). `step_facts`: the
same for `verify --metrics-file` with no plan file, after its step of the stored plan (cli/stored.verify_stored)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reassign_cli.backends.protocol import Backend, ReplicaKey
from reassign_cli.core.health import CHECKS, Verdict
from reassign_cli.core.progress import PartitionProgress, Status
from reassign_cli.core.stored_plan import StoredPlan
from reassign_cli.core.throttle import BROKER_KEYS, record_entry, recorded_entities
from reassign_cli.planning.sizes import AskSizes


def our_throttle_rates(backend: Backend) -> dict[int, dict[str, int]]:
    """broker -> {rate key: bytes/s} for each rate key our record says this tool set and that is still
    set (a broker whose keys were all removed is left out)."""
    record = backend.read_priors()
    brokers, _ = recorded_entities(record)
    out: dict[int, dict[str, int]] = {}
    for b in brokers:
        ours = [k for k in (record_entry(record, "brokers", b) or {}) if k in BROKER_KEYS]
        if not ours:
            continue
        cfg = backend.read_config("brokers", str(b)) or {}
        rates = {k: int(cfg[k]) for k in ours if cfg.get(k, "").isdigit()}
        if rates:
            out[b] = rates
    return out


def moving_replica_sizes(
    results: Sequence[PartitionProgress], ask: AskSizes | None
) -> dict[ReplicaKey, int] | None:
    """The size of every replica, current or wanted, of the partitions in progress (none in progress: {});
    None when the sizes cannot be asked (no admin API)."""
    replicas = sorted(
        {
            (r.topic, r.partition, b)
            for r in results
            if r.status == Status.IN_PROGRESS
            for b in (*r.current, *r.target)
        }
    )
    if not replicas:
        return {}
    if ask is None:
        return None
    sizes, _ = ask(replicas)
    return sizes


def stored_plan(backend: Backend) -> StoredPlan | None:
    """The plan stored in the cluster, read without writing anything; None: none stored."""
    from reassign_cli.ops.plan_ctl import read_stored

    return read_stored(backend)


def held_checks(verdict: Verdict | None) -> dict[str, bool]:
    """Each health check a step applied -> whether it holds new moves back ({}: the step checked none;
    a check silenced by --ignore-health does not hold)."""
    if verdict is None:
        return {}
    holding = {h.check for h in verdict.holds}
    return {check: check in holding for check in CHECKS}


def step_facts(backend: Backend, verdict: Verdict | None) -> dict[str, Any]:
    """What a stored step's metrics file reports beyond the exit code: the plan as stored after the step
    (None once it finished and was deleted) and the health checks the step applied."""
    return {"stored_plan": stored_plan(backend), "held": held_checks(verdict)}
