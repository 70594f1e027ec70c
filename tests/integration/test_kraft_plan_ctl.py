"""pause, continue, list and cancel of a stored plan, and its gauges in verify --metrics-file, on a KRaft 4.x
cluster through the admin API alone (the stored plan in the topic __reassign_cli_plan). The plan is stored
directly (core.stored_plan.new_plan and the store's create); cancel's move is a real throttled reassignment
started by execute. Every test deletes the stored plan in a finalizer."""

from __future__ import annotations

import getpass
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from reassign_cli.backends.admin.plan_topic import TopicPlanStore
from tests.clusters import ExtraCluster
from tests.helpers import consume_all
from tests.integration.kraft_support import (
    EMPTY,
    LR,
    Admin,
    admin,
    cli,
    eventually,
    plan,
    record_messages,
    replayed_record,
)
from tests.integration.stored_plan_worker import topic_store
from tests.integration.test_plan_ctl_zk import stored

USER, HOST = getpass.getuser(), socket.gethostname()


@pytest.fixture
def store(kc: ExtraCluster) -> Iterator[TopicPlanStore]:
    with topic_store(kc.bootstrap) as s:
        s.delete()  # a plan left by an earlier failed run
        try:
            yield s
        finally:
            s.delete()


@pytest.fixture
def ledger_topic(kc: ExtraCluster) -> Iterator[None]:
    """pause records the standing pause in the autopilot's topic: deleted after the test, whatever its end
    (a pause left standing would store every later detached plan paused)."""
    try:
        yield
    finally:
        with admin(kc.bootstrap) as a:
            if "__reassign_cli_autopilot" in a.client.list_topics():
                a.client.delete_topics(["__reassign_cli_autopilot"])


def test_pause_list_continue_and_metrics(
    kc: ExtraCluster, ka: Admin, store: TopicPlanStore, tmp_path: Path, ledger_topic: None
) -> None:
    for command in ("continue", "cancel"):  # pause with nothing stored: test_autopilot_pause.py
        r = cli(kc.bootstrap, command, cwd=tmp_path)
        assert r.returncode == 0 and r.stdout.startswith(f"No stored plan: nothing to {command}."), r
    r = cli(kc.bootstrap, "list")
    assert (r.returncode, r.stdout, r.stderr) == (
        0,
        "No partition reassignments found.\n",
        "No stored plan.\n",
    )

    topic, _ = ka.make_topic("ctl", {0: [1, 2]})
    p = stored(plan(tmp_path / "p.json", {(topic, 0): [2, 3]}), sizes=[1000])
    store.create(p)
    r = cli(kc.bootstrap, "pause", "--reason", "quiet please")
    assert r.returncode == 0, r.stderr
    seen = store.read()
    assert seen is not None
    since = seen.plan.paused["since"]
    assert seen.plan.paused == {"since": since, "user": USER, "host": HOST, "reason": "quiet please"}
    line = f"paused since {since} by {USER}@{HOST}: quiet please"
    doc = json.loads(cli(kc.bootstrap, "list", "--format", "json").stdout)["stored_plan"]
    assert (doc["state"], doc["state_line"], doc["bytes"]) == (
        "paused",
        line,
        {"total": 1000, "done": 0, "remaining": 1000},
    )

    metrics = tmp_path / "m.prom"
    other = plan(tmp_path / "other.json", {(topic, 0): [1, 2]})  # another plan, complete already
    r = cli(kc.bootstrap, "verify", "--reassignment-json-file", other, "--metrics-file", metrics)
    assert r.returncode == 0, r.stderr
    samples = {
        (s.name, s.labels.get("state") or s.labels.get("reason")): (
            s.value,
            s.labels["plan"],
            s.labels["plan_sha256"],
        )
        for fam in text_string_to_metric_families(metrics.read_text())
        for s in fam.samples
        if s.name.startswith("kafka_reassign_plan_")
    }
    sha = ("stored", p.plan_sha256[:12])  # not the file's plan: labelled as the stored one
    assert samples == {
        ("kafka_reassign_plan_moves", "running"): (0, *sha),
        ("kafka_reassign_plan_moves", "queued"): (1, *sha),
        ("kafka_reassign_plan_moves", "done"): (0, *sha),
        ("kafka_reassign_plan_bytes_remaining", None): (1000, *sha),
        ("kafka_reassign_plan_paused", None): (1, *sha),
        ("kafka_reassign_plan_held", "hours"): (0, *sha),
        ("kafka_reassign_plan_held", "not_before"): (0, *sha),
    }

    r = cli(kc.bootstrap, "continue", "--hours", "22:00-06:00")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"Standing pause removed (was: {line}).",  # pause paused the autopilot too
        f"Pause cleared (was: {line}).",
        "Hours: any time -> 22:00-06:00 UTC.",
    ]
    seen = store.read()
    assert seen is not None and seen.plan.paused == {}
    assert seen.plan.schedule == {"hours": "22:00-06:00", "not_before": None}


def test_cron_verify_without_a_file_writes_the_steps_metrics(
    kc: ExtraCluster, ka: Admin, store: TopicPlanStore, tmp_path: Path
) -> None:
    """Issue 25 item 8 through the admin API alone: `verify --metrics-file` with no plan file steps the
    stored plan (held by a not_before in 2099: nothing starts) and writes its gauges after the step;
    nothing stored: the exit code alone."""
    topic, _ = ka.make_topic("cron", {0: [1, 2]})
    p = stored(
        plan(tmp_path / "p.json", {(topic, 0): [2, 3]}),
        sizes=[1000],
        schedule={"hours": None, "not_before": "2099-01-01T00:00:00Z"},
    )
    store.create(p)
    metrics = tmp_path / "m.prom"
    r = cli(kc.bootstrap, "verify", "--metrics-file", metrics, "--metrics-label", "cluster=eu1")
    assert r.returncode == 4, r.stderr
    samples = {
        (s.name, s.labels.get("state") or s.labels.get("reason")): s.value
        for fam in text_string_to_metric_families(metrics.read_text())
        for s in fam.samples
        if s.labels
        == {"plan": "stored", "plan_sha256": p.plan_sha256[:12], "cluster": "eu1"}
        | ({k: s.labels[k] for k in ("state", "reason") if k in s.labels})
    }
    seen = store.read()
    assert seen is not None and seen.plan.started == frozenset() and seen.plan.last_step is not None
    assert samples.pop(("kafka_reassign_verify_last_run_timestamp_seconds", None)) >= seen.plan.last_step.at
    healthy = {("kafka_reassign_plan_held", c): 0 for c in ("broker-missing", "broker-fenced", "leaderless")}
    assert {k: v for k, v in samples.items() if k[0] != "kafka_reassign_plan_held"} == {
        ("kafka_reassign_verify_exit_code", None): 4,
        ("kafka_reassign_plan_moves", "running"): 0,
        ("kafka_reassign_plan_moves", "queued"): 1,
        ("kafka_reassign_plan_moves", "done"): 0,
        ("kafka_reassign_plan_bytes_remaining", None): 1000,
        ("kafka_reassign_plan_paused", None): 0,
        ("kafka_reassign_plan_last_step_timestamp_seconds", None): seen.plan.last_step.at,
    }
    assert samples[("kafka_reassign_plan_held", "not_before")] == 1
    assert samples[("kafka_reassign_plan_held", "hours")] == 0
    assert {k: samples[k] for k in healthy} == healthy
    assert ka.reassignments() == {}
    store.delete()
    r = cli(kc.bootstrap, "verify", "--metrics-file", metrics)
    assert r.returncode == 0, r.stderr
    names = {
        s.name: s.labels for fam in text_string_to_metric_families(metrics.read_text()) for s in fam.samples
    }
    assert names == {
        "kafka_reassign_verify_exit_code": {"plan": "stored", "plan_sha256": ""},
        "kafka_reassign_verify_last_run_timestamp_seconds": {"plan": "stored", "plan_sha256": ""},
    }


def test_cancel_of_the_stored_plan(
    kc: ExtraCluster, ka: Admin, store: TopicPlanStore, tmp_path: Path
) -> None:
    topic, values = ka.make_topic("cancel", {0: [1, 2]}, messages=2500)  # 2.5 MB at 20 kB/s: minutes
    ka.alter("brokers", 3, {LR: "77777"})  # the operator's own rate
    try:
        path = plan(tmp_path / "p.json", {(topic, 0): [2, 3]})
        r = cli(
            kc.bootstrap, "execute", "--reassignment-json-file", path, "--throttle", "20000", cwd=tmp_path
        )
        assert r.returncode == 0, r.stderr
        assert set(ka.reassignments()) == {(topic, 0)}
        p = stored(path, started=[(topic, 0)])
        store.create(p)
        path.unlink()

        c = cli(kc.bootstrap, "cancel", "--rollback-file", "pre.json", cwd=tmp_path)
        assert c.returncode == 0, c.stderr
        assert c.stdout.splitlines() == [
            "Saved the targets of the reassignments cancelled to pre.json",
            f"Successfully cancelled partition reassignment for: {topic}-0",
            "Clearing broker-level throttles on brokers 1,2,3",
            f"Clearing topic-level throttles on topic {topic}",
            f"Deleted the stored plan (SHA-256 {p.plan_sha256[:12]}).",
        ]
        assert json.loads((tmp_path / "pre.json").read_text())["partitions"] == [
            {"topic": topic, "partition": 0, "replicas": [2, 3], "log_dirs": ["any", "any"]}
        ]
        assert ka.reassignments() == {}
        eventually(lambda: sorted(ka.partitions(topic)[0][0]), [1, 2], "reverted")
        eventually(
            lambda: ka.throttles([1, 2, 3], [topic]),
            {"broker 1": {}, "broker 2": {}, "broker 3": {LR: "77777"}, f"topic {topic}": {}},
            "our throttles off, the operator's rate exactly as it was",
        )
        assert replayed_record(record_messages(kc.bootstrap)) == EMPTY
        assert store.read() is None
    finally:
        ka.alter("brokers", 3, {LR: None})
    assert consume_all(kc.bootstrap, topic) == values
