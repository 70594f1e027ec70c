"""`verify --metrics-file`: verify's outcome in node_exporter's textfile format, written atomically.

Every series carries `plan` (the --reassignment-json-file's absolute path) and `plan_sha256` (the first 12
hex digits of the SHA-256 of its bytes), then the operator's own `--metrics-label NAME=VALUE` labels, so the
verifies of several plans, even of files with the same name (generate --output-dir always writes
proposed.json), write distinct series beside each other in the collector's directory. The names are stable
(docs/execute-verify.md):

- kafka_reassign_verify_partitions{status}: complete, in_progress, not_as_planned (all three, 0 included)
- kafka_reassign_verify_bytes_remaining: bytes still to copy, only when every moving partition's size is
  known (the admin API is at hand); 0 when nothing moves
- kafka_reassign_verify_throttle_rate_bytes{broker,kind}: the throttle rates this tool set and that are
  still in place (kind leader, follower or log_dir)
- kafka_reassign_verify_log_dir_moves{status}: the plan's replica moves between log dirs by status (complete,
  in_progress, elsewhere, not_moving, missing, unknown, queued: core.progress.MoveStatus; all seven, 0
  included), only when the plan has some and they were checked (the admin API at hand); queued: the plan
  stored in the cluster starts it later
- kafka_reassign_verify_exit_code: verify's exit code (also 1, 3, 130... when it failed)
- kafka_reassign_verify_last_run_timestamp_seconds: when this verify ended
- kafka_reassign_plan_*: the plan stored in the cluster by a paced execute, when one is (render/plan_metrics.py;
  labelled as verify's series when it is the file's plan, else plan="stored" and its own plan_sha256)

verify with no plan file (a step of the stored plan: cli/stored.verify_stored) writes the exit code, the
timestamp and the stored plan's gauges after the step (`held`: the health checks it applied), all labelled
plan="stored" and the stored plan's plan_sha256 ("" when none is stored).

A failed verify writes only the exit code and the timestamp: no stale partition counts.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

from reassign_cli.core.copied import moving_bytes
from reassign_cli.core.progress import MoveStatus, PartitionProgress, ReplicaMoveProgress, Status
from reassign_cli.core.stored_plan import StoredPlan
from reassign_cli.core.throttle import FOLLOWER_RATE, LEADER_RATE, LOG_DIR_RATE
from reassign_cli.errors import OperationalError, UsageError
from reassign_cli.render.plan_metrics import SHA_DIGITS, add_plan_gauges, summary

PREFIX = "kafka_reassign_verify_"
RATE_KINDS = {LEADER_RATE: "leader", FOLLOWER_RATE: "follower", LOG_DIR_RATE: "log_dir"}
ReplicaKey = tuple[str, int, int]
RESERVED_LABELS = ("plan", "plan_sha256", "status", "broker", "kind", "state", "reason", "role")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def plan_labels(path: str, data: bytes | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The labels every series carries: the plan's absolute path, the first SHA_DIGITS hex digits of the
    SHA-256 of its bytes ("" when it could not be read), then the operator's `extra` labels."""
    sha = hashlib.sha256(data).hexdigest()[:SHA_DIGITS] if data is not None else ""
    return {"plan": os.path.abspath(path), "plan_sha256": sha, **(extra or {})}


def parse_metrics_labels(items: Sequence[str]) -> dict[str, str]:
    """`--metrics-label NAME=VALUE` (repeatable): a Prometheus label name, not one of ours, each at most once."""
    out: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not LABEL_NAME.fullmatch(name) or name.startswith("__"):
            raise UsageError(
                f"--metrics-label {item!r}: expected NAME=VALUE, NAME a Prometheus label name "
                "([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)"
            )
        if name in RESERVED_LABELS:
            raise UsageError(
                f"--metrics-label {name}: this label is verify's own ({', '.join(RESERVED_LABELS)})"
            )
        if name in out:
            raise UsageError(f"--metrics-label {name} given twice")
        out[name] = value
    return out


@dataclass(slots=True)
class VerifyMetrics:
    """What one verify run reports; `results` None when it failed before classifying."""

    labels: Mapping[str, str]  # plan_labels(): on every series
    exit_code: int
    timestamp: float
    results: Sequence[PartitionProgress] | None = None
    bytes_remaining: int | None = None
    rates: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    stored_plan: StoredPlan | None = None  # the plan stored in the cluster, when one is
    moves: Sequence[ReplicaMoveProgress] | None = None  # the plan's log-dir moves, when checked
    held: Mapping[str, bool] | None = None  # a stored step's health checks -> holding (ops/verify_metrics)


def bytes_remaining(
    results: Sequence[PartitionProgress], sizes: Mapping[ReplicaKey, int] | None
) -> int | None:
    """Bytes the partitions in progress still have to copy: for each replica being added, the partition's
    size (its largest origin replica) less what that replica holds already (0 when not created yet).
    None when the sizes are unknown, or when a moving partition has no origin replica with a size."""
    moving = sum(1 for r in results if r.status == Status.IN_PROGRESS)
    if not moving:
        return 0
    if sizes is None:
        return None
    found = moving_bytes(results, sizes)
    if len(found) < moving:
        return None
    return sum(total - copied for copied, total in found.values())


def registry(m: VerifyMetrics) -> CollectorRegistry:
    reg = CollectorRegistry()
    plan = dict(m.labels)
    if m.results is not None:
        g = Gauge(
            PREFIX + "partitions",
            "Partitions of the plan by status: complete, in_progress, not_as_planned.",
            [*plan, "status"],
            registry=reg,
        )
        for status in Status:
            g.labels(**plan, status=status.value).set(sum(1 for r in m.results if r.status == status))
    if m.bytes_remaining is not None:
        Gauge(
            PREFIX + "bytes_remaining",
            "Bytes the partitions in progress still have to copy (DescribeLogDirs sizes).",
            [*plan],
            registry=reg,
        ).labels(**plan).set(m.bytes_remaining)
    if m.results is not None:
        rates = Gauge(
            PREFIX + "throttle_rate_bytes",
            "Replication throttle rates set by kafka-reassign and still in place, in bytes per second.",
            [*plan, "broker", "kind"],
            registry=reg,
        )
        for broker in sorted(m.rates):
            for key, value in sorted(m.rates[broker].items()):
                rates.labels(**plan, broker=str(broker), kind=RATE_KINDS[key]).set(value)
    if m.moves is not None:
        _log_dir_moves(reg, plan, m.moves)
    Gauge(PREFIX + "exit_code", "Exit code of the last verify run.", [*plan], registry=reg).labels(
        **plan
    ).set(m.exit_code)
    Gauge(
        PREFIX + "last_run_timestamp_seconds",
        "Unix time at which the last verify run ended.",
        [*plan],
        registry=reg,
    ).labels(**plan).set(m.timestamp)
    if m.stored_plan is not None:
        now = datetime.fromtimestamp(m.timestamp, UTC)
        add_plan_gauges(
            reg, stored_labels(plan, m.stored_plan.plan_sha256), summary(m.stored_plan, now, m.held)
        )
    return reg


def stored_labels(labels: Mapping[str, str], sha256_hex: str) -> dict[str, str]:
    """The stored plan's series' labels: verify's own when the stored plan is the file's (same SHA-256),
    else plan="stored" and the stored plan's SHA-256 (the operator's labels kept)."""
    if labels.get("plan_sha256") == sha256_hex[:SHA_DIGITS]:
        return dict(labels)
    return {**labels, "plan": "stored", "plan_sha256": sha256_hex[:SHA_DIGITS]}


def _log_dir_moves(
    reg: CollectorRegistry, plan: dict[str, str], moves: Sequence[ReplicaMoveProgress]
) -> None:
    g = Gauge(
        PREFIX + "log_dir_moves",
        "Replica moves between log dirs of the plan by status (DescribeLogDirs).",
        [*plan, "status"],
        registry=reg,
    )
    for status in MoveStatus:
        g.labels(**plan, status=status.value).set(sum(1 for x in moves if x.status == status))


def write_metrics(path: str, m: VerifyMetrics) -> None:
    """Write the file atomically: a temporary file in the same directory, renamed into place (its name,
    PATH.<pid>.<thread>, does not end in .prom, so the collector never reads it half-written)."""
    try:
        write_to_textfile(path, registry(m))
    except OSError as e:
        raise OperationalError(f"Cannot write the metrics file {path}: {e.strerror or e}") from None


def check_metrics_path(path: str) -> None:
    """Before verify connects: the directory must exist (a usage error otherwise, nothing written)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"--metrics-file {path}: the directory {directory} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"--metrics-file {path} is a directory")
