"""`rebalance --metrics-file`: the tick's core/autopilot.TickMetrics in node_exporter's textfile format,
written atomically (a temporary file renamed into place), as `verify --metrics-file` writes its own:

- kafka_reassign_autopilot_decision{decision}: 1 for the tick's decision (balanced, planned, stepping,
  held, skipped), 0 for the others
- kafka_reassign_autopilot_worst_deviation_before / _after: the broker farthest from its goal, as a
  fraction of the goal (absent when not measured)
- kafka_reassign_autopilot_bytes_planned: bytes the plan started by this tick copies (0 when none)
- kafka_reassign_autopilot_exit_code, kafka_reassign_autopilot_last_run_timestamp_seconds
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

from reassign_cli.core.autopilot import METRIC_DECISIONS, TickMetrics
from reassign_cli.errors import OperationalError

PREFIX = "kafka_reassign_autopilot_"


def registry(m: TickMetrics | None, code: int, at: float) -> CollectorRegistry:
    reg = CollectorRegistry()
    if m is not None:
        g = Gauge(
            PREFIX + "decision", "The tick's decision (1 for the one taken).", ["decision"], registry=reg
        )
        for d in METRIC_DECISIONS:
            g.labels(decision=d).set(1 if d == m.decision else 0)
        for name, value in (("before", m.worst_before), ("after", m.worst_after)):
            if value is not None:
                Gauge(
                    PREFIX + f"worst_deviation_{name}",
                    f"The worst broker's deviation from its goal {name} the tick's plan (a fraction).",
                    registry=reg,
                ).set(value)
        Gauge(PREFIX + "bytes_planned", "Bytes the plan started by this tick copies.", registry=reg).set(
            m.bytes_planned
        )
    Gauge(PREFIX + "exit_code", "The tick's exit code.", registry=reg).set(code)
    Gauge(PREFIX + "last_run_timestamp_seconds", "When the tick ended.", registry=reg).set(at)
    return reg


def write(path: str, m: TickMetrics | None, code: int, at: float) -> None:
    try:
        write_to_textfile(path, registry(m, code, at))
    except OSError as e:
        raise OperationalError(f"Cannot write the metrics file {path}: {e.strerror or e}") from None
