"""The stored plan's gauges (issue 25 item 8), without a cluster: read back with prometheus_client's own text
parser, the HELP and TYPE lines as written by hand, label values with a quote, a backslash and a newline
escaped, and the gauges written into verify's registry beside its own series. Nothing calls them yet."""

from __future__ import annotations

import hashlib

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from reassign_cli.render.metrics import VerifyMetrics, registry
from reassign_cli.render.plan_metrics import (
    PlanSummary,
    add_plan_gauges,
    plan_sha256,
    render_plan_metrics,
    stored_plan_labels,
)

Key = tuple[tuple[str, str], ...]
LABELS = {"plan": "/srv/reassign/plan.json", "plan_sha256": "0123456789ab"}
FULL = PlanSummary(
    running=2,
    queued=5,
    done=3,
    paused=True,
    held={"hours": True, "broker_unregistered": False, "min_isr": True},
    bytes_remaining=7_340_032,
    eta_seconds=734.5,
    last_step_timestamp=1_796_086_800.0,
)


def parse(text: str) -> dict[str, dict[Key, float]]:
    out: dict[str, dict[Key, float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def key(labels: dict[str, str], **more: str) -> Key:
    return tuple(sorted({**labels, **more}.items()))


def test_every_gauge_of_a_full_summary() -> None:
    got = parse(render_plan_metrics(LABELS, FULL))
    assert got == {
        "kafka_reassign_plan_moves": {
            key(LABELS, state="running"): 2,
            key(LABELS, state="queued"): 5,
            key(LABELS, state="done"): 3,
        },
        "kafka_reassign_plan_bytes_remaining": {key(LABELS): 7_340_032},
        "kafka_reassign_plan_eta_seconds": {key(LABELS): 734.5},
        "kafka_reassign_plan_paused": {key(LABELS): 1},
        "kafka_reassign_plan_held": {
            key(LABELS, reason="hours"): 1,
            key(LABELS, reason="broker_unregistered"): 0,
            key(LABELS, reason="min_isr"): 1,
        },
        "kafka_reassign_plan_last_step_timestamp_seconds": {key(LABELS): 1_796_086_800},
    }


def test_help_and_type_lines() -> None:
    comments = [line for line in render_plan_metrics(LABELS, FULL).splitlines() if line.startswith("#")]
    assert comments == [
        "# HELP kafka_reassign_plan_moves Moves of the stored plan by state: running, queued, done.",
        "# TYPE kafka_reassign_plan_moves gauge",
        "# HELP kafka_reassign_plan_bytes_remaining Bytes the stored plan still has to copy.",
        "# TYPE kafka_reassign_plan_bytes_remaining gauge",
        "# HELP kafka_reassign_plan_eta_seconds Seconds to the stored plan's end at the measured rate.",
        "# TYPE kafka_reassign_plan_eta_seconds gauge",
        "# HELP kafka_reassign_plan_paused 1 while the stored plan is paused (kafka-reassign pause), else 0.",
        "# TYPE kafka_reassign_plan_paused gauge",
        "# HELP kafka_reassign_plan_held 1 for each reason that holds the stored plan's new moves back now, "
        "0 for the others checked.",
        "# TYPE kafka_reassign_plan_held gauge",
        "# HELP kafka_reassign_plan_last_step_timestamp_seconds Unix time of the stored plan's last step.",
        "# TYPE kafka_reassign_plan_last_step_timestamp_seconds gauge",
    ]


def test_unknowns_are_left_out_and_the_counts_written_at_zero() -> None:
    got = parse(render_plan_metrics(LABELS, PlanSummary(0, 0, 0)))
    assert got == {
        "kafka_reassign_plan_moves": {
            key(LABELS, state="running"): 0,
            key(LABELS, state="queued"): 0,
            key(LABELS, state="done"): 0,
        },
        "kafka_reassign_plan_paused": {key(LABELS): 0},
    }


def test_label_values_are_escaped() -> None:
    labels = {"plan": 'C:\\plans\\"night"\nrun.json', "plan_sha256": "abc", "ticket": 'OPS-42 "x"'}
    text = render_plan_metrics(labels, PlanSummary(1, 0, 0, held={'odd "reason"\\': True}))
    # the exposition format escapes \ as \\, " as \" and a newline as \n: one sample per line
    assert 'plan="C:\\\\plans\\\\\\"night\\"\\nrun.json"' in text
    assert all(line.startswith(("#", "kafka_reassign_plan_")) for line in text.splitlines())
    got = parse(text)
    assert got["kafka_reassign_plan_held"] == {key(labels, reason='odd "reason"\\'): 1}
    assert got["kafka_reassign_plan_paused"] == {key(labels): 0}


def test_stored_plan_labels_match_verify_shape() -> None:
    data = b'{"version":1,"partitions":[]}'
    digest = plan_sha256(data)
    assert digest == hashlib.sha256(data).hexdigest()
    assert stored_plan_labels("/srv/p.json", digest, {"cluster": "eu1"}) == {
        "plan": "/srv/p.json",
        "plan_sha256": digest[:12],
        "cluster": "eu1",
    }


def test_own_labels_are_refused_as_plan_labels() -> None:
    with pytest.raises(ValueError, match="the labels reason, state are the plan gauges' own"):
        render_plan_metrics({**LABELS, "state": "x", "reason": "y"}, PlanSummary(0, 0, 0))


def test_negative_counts_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="negative"):
        PlanSummary(-1, 0, 0)
    with pytest.raises(ValueError, match="negative"):
        PlanSummary(0, 0, 0, bytes_remaining=-5)


def test_beside_verify_series_in_one_registry() -> None:
    reg: CollectorRegistry = registry(VerifyMetrics(LABELS, exit_code=4, timestamp=1_796_086_800.0))
    add_plan_gauges(reg, LABELS, FULL)
    got = parse(generate_latest(reg).decode())
    assert got["kafka_reassign_verify_exit_code"] == {key(LABELS): 4}
    assert got["kafka_reassign_plan_moves"][key(LABELS, state="queued")] == 5
