"""pause, continue, list and cancel of a stored plan, and its gauges in verify --metrics-file, on the real
ZooKeeper-mode cluster (Kafka 3.9). The plan is stored directly (core.stored_plan.new_plan and the store's
create), as a paced execute stores it; cancel's move is a real throttled reassignment started by execute.
Every test deletes the stored plan in a finalizer."""

from __future__ import annotations

import functools
import getpass
import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from reassign_cli.backends.zookeeper.session import ZkOptions, open_session
from reassign_cli.backends.zookeeper.stored_plan import ZkPlanStore
from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import TopicPartition, parse_reassignment
from tests.helpers import wait_until
from tests.integration.reassign_support import (
    LEADER_RATE,
    RECORD,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
    reassigning,
    set_config,
    write_plan,
)

USER, HOST = getpass.getuser(), socket.gethostname()
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


@pytest.fixture
def store(cluster: Any) -> Iterator[ZkPlanStore]:
    with open_session(ZkOptions(cluster.zookeeper)) as session:
        s = ZkPlanStore(session)
        s.delete()  # a plan left by an earlier failed run
        try:
            yield s
        finally:
            s.delete()


def stored(path: Path, started: list[TopicPartition] = (), sizes: list[int] | None = None, **kw: Any) -> Any:
    data = path.read_bytes()
    entries = parse_reassignment(data).entries
    origin = sp.Origin("ops1", "alice", time.time())
    plan = sp.new_plan(data, entries, pc.Pace(1, None, throttle=20000), origin, sizes, **kw)
    return sp.mark_started(plan, started, origin.at) if started else plan


LEDGER = "/reassign_cli/autopilot-brokers"  # the autopilot's ledger: the standing pause is kept there


@pytest.fixture
def ledger(zk: Any) -> Iterator[None]:
    """pause records the standing pause in the ledger: removed after the test, whatever its end (a pause
    left standing would store every later detached plan paused)."""
    try:
        yield
    finally:
        if zk.exists(LEDGER):
            zk.delete(LEDGER, recursive=True)


def test_pause_list_continue(
    cluster: Any, make_topic: Any, store: ZkPlanStore, run_cli: Any, tmp_path: Path, zk: Any, ledger: None
) -> None:
    topic = make_topic({0: [1, 2]})
    plan = stored(write_plan(tmp_path / "p.json", {(topic, 0): [2, 3]}))
    store.create(plan)
    zk_alone = ("--zookeeper", cluster.zookeeper)
    both = (*zk_alone, "--bootstrap-server", cluster.bootstrap)

    p = run_cli("pause", "--reason", "disk  91%\non broker 3", *zk_alone)
    seen = store.read()
    assert seen is not None
    since = seen.plan.paused["since"]
    assert re.fullmatch(ISO, since)
    assert seen.plan.paused == {"since": since, "user": USER, "host": HOST, "reason": "disk 91% on broker 3"}
    line = f"paused since {since} by {USER}@{HOST}: disk 91% on broker 3"
    hint = f"kafka-reassign continue --zookeeper {cluster.zookeeper}"
    assert (p.returncode, p.stdout) == (
        0,
        f"The stored plan is {line}; the autopilot too (no rebalance tick starts a plan after it ends). "
        f"Resume both with: {hint}\n",
    )
    assert get_json(zk, LEDGER)["paused"] == seen.plan.paused  # the standing pause, the same pause

    again = run_cli("pause", "--reason", "other", *both)
    assert (again.returncode, again.stdout) == (0, f"Already {line}; nothing changed.\n")

    listed = run_cli("list", *both)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == "No partition reassignments found."
    assert lines[1] == (
        f"Stored plan: 1 partition(s), SHA-256 {plan.plan_sha256[:12]}, stored by alice@ops1 at "
        f"{sp.utc(plan.origin.at)}"
    )
    assert lines[2:5] == [
        f"  state: {line}",
        "  moves: 0 moving, 1 queued, 0 done",
        "  bytes: not known (some sizes were not known when it was stored); ETA unknown",
    ]
    doc = json.loads(run_cli("list", "--format", "json", *zk_alone).stdout)["stored_plan"]
    assert (doc["state"], doc["state_line"], doc["moves"]) == (
        "paused",
        line,
        {"running": 0, "queued": 1, "done": 0},
    )
    assert doc["stored_by"]["user"] == "alice" and doc["driver"] is None and doc["last_step"] is None

    c = run_cli("continue", "--hours", "01:00-05:00", *both)
    assert c.returncode == 0, c.stderr
    assert c.stdout.splitlines() == [
        f"Standing pause removed (was: {line}).",
        f"Pause cleared (was: {line}).",
        "Hours: any time -> 01:00-05:00 UTC.",
    ]
    assert get_json(zk, LEDGER).get("paused") is None
    seen = store.read()
    assert seen is not None and seen.plan.paused == {}
    assert seen.plan.schedule == {"hours": "01:00-05:00", "not_before": None}

    c = run_cli("continue", "--hours", "none", *zk_alone)
    assert (c.returncode, c.stdout) == (0, "Hours: 01:00-05:00 UTC -> any time.\n")
    seen = store.read()
    assert seen is not None and seen.plan.schedule == {"hours": None, "not_before": None}
    c = run_cli("continue", *zk_alone)
    assert (c.returncode, c.stdout) == (0, "Not paused, hours as given: nothing changed.\n")


def test_nothing_stored(cluster: Any, store: ZkPlanStore, run_cli: Any, tmp_path: Path) -> None:
    both = ("--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap)
    # (pause with nothing stored records the standing pause: tests/integration/test_autopilot_pause.py)
    r = run_cli("continue", *both)
    assert (r.returncode, r.stdout) == (0, "No stored plan: nothing to continue.\n")
    r = run_cli("list", *both)
    assert (r.returncode, r.stdout, r.stderr) == (
        0,
        "No partition reassignments found.\n",
        "No stored plan.\n",
    )
    r = run_cli("cancel", *both, cwd=tmp_path)
    assert (r.returncode, r.stdout) == (
        0,
        "No stored plan: nothing to cancel. (a plan file: --reassignment-json-file; every move in flight: --all)\n",
    )
    assert list(tmp_path.iterdir()) == []
    assert store.read() is None


def _moving(zk: Any, topic: str) -> bool:
    return bool((get_json(zk, f"/brokers/topics/{topic}") or {}).get("adding_replicas", {}).get("0"))


def test_cancel_of_the_stored_plan(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover, store: ZkPlanStore, tmp_path: Path
) -> None:
    topic = make_topic({0: [1, 2]}, messages=10)
    values = produce(cluster.bootstrap, topic, 0, 3000)  # 3 MB at 20 kB/s: minutes of copying
    before = {b: config(zk, "brokers", b) for b in (1, 2, 3)}
    set_config(zk, "brokers", 3, {**(before[3] or {}), LEADER_RATE: "77777"})  # the operator's own rate
    try:
        path = mover.plan("p.json", {(topic, 0): [2, 3]})
        r = mover.execute(path, "--throttle", "20000")
        assert r.returncode == 0, r.stderr
        wait_until(lambda: _moving(zk, topic), timeout=30, message="the move started")
        assert config(zk, "brokers", 3)[LEADER_RATE] == "20000"
        plan = stored(path, started=[(topic, 0)])
        store.create(plan)
        path.unlink()  # the operator is gone and the plan file with them

        c = mover.cli("cancel", "--bootstrap-server", cluster.bootstrap, "--rollback-file", "pre.json")
        assert c.returncode == 0, c.stderr
        assert c.stdout.splitlines() == [
            "Saved the targets of the reassignments cancelled to pre.json",
            f"Successfully cancelled partition reassignment for: {topic}-0",
            "Clearing broker-level throttles on brokers 1,2,3",
            f"Clearing topic-level throttles on topic {topic}",
            f"Deleted the stored plan (SHA-256 {plan.plan_sha256[:12]}).",
        ]
        assert json.loads((tmp_path / "pre.json").read_text()) == {
            "version": 1,
            "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 3], "log_dirs": ["any", "any"]}],
        }
        assert not reassigning(zk, topic)
        assert sorted(get_json(zk, f"/brokers/topics/{topic}")["partitions"]["0"]) == [1, 2]
        assert config(zk, "brokers", 3) == {**(before[3] or {}), LEADER_RATE: "77777"}  # exactly as it was
        # no config znode before (a fresh cluster) and an empty one after are the same configs to Kafka
        assert {b: config(zk, "brokers", b) or {} for b in (1, 2)} == {b: before[b] or {} for b in (1, 2)}
        assert get_json(zk, RECORD) is None
        assert store.read() is None
        got = consume_all(topic)
        assert len(got) == 10 + 3000 and set(values) <= set(got)
    finally:
        set_config(zk, "brokers", 3, before[3])


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_verify_metrics_file_carries_the_stored_plan(
    cluster: Any, make_topic: Any, store: ZkPlanStore, run_cli: Any, tmp_path: Path
) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]})
    path = write_plan(tmp_path / "stored.json", {(topic, p): [3, 2] for p in range(4)})
    plan = stored(
        path, sizes=[100, 200, 300, 400], schedule={"hours": None, "not_before": "2099-01-01T00:00:00Z"}
    )
    plan = sp.mark_started(plan, [(topic, 0), (topic, 1), (topic, 2)], plan.created)
    plan = sp.mark_done(plan, [(topic, 0)], plan.created)
    plan = sp.stepped(plan, plan.created + 100, 1)  # 100 B done in 100 s: 1 B/s, 900 B left: ETA 900 s
    store.create(plan)
    other = write_plan(tmp_path / "other.json", {(topic, 0): [1, 2]})  # complete already
    metrics = tmp_path / "m.prom"
    r = run_cli(
        "verify", "--reassignment-json-file", other, "--metrics-file", metrics, "--metrics-label", "cluster=eu1",
        "--bootstrap-server", cluster.bootstrap,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    got = _samples(metrics.read_text())
    own = (("cluster", "eu1"), ("plan", "stored"), ("plan_sha256", plan.plan_sha256[:12]))

    def at(name: str, *extra: tuple[str, str]) -> float:
        return got[(f"kafka_reassign_plan_{name}", tuple(sorted(own + extra)))]

    assert [at("moves", ("state", s)) for s in ("running", "queued", "done")] == [2, 1, 1]
    assert (at("bytes_remaining"), at("eta_seconds"), at("paused")) == (900, 900, 0)
    assert (at("held", ("reason", "not_before")), at("held", ("reason", "hours"))) == (1, 0)
    assert at("last_step_timestamp_seconds") == plan.created + 100
    store.delete()
    r = run_cli("verify", "--reassignment-json-file", other, "--metrics-file", metrics)
    assert r.returncode == 0, r.stderr
    assert "kafka_reassign_plan_" not in metrics.read_text()  # nothing stored: no plan gauges


def _plan_gauge(
    got: dict[Any, float], own: tuple[tuple[str, str], ...], name: str, *more: tuple[str, str]
) -> float:
    return got[(f"kafka_reassign_plan_{name}", tuple(sorted(own + more)))]


def test_cron_verify_without_a_file_writes_the_steps_metrics(
    cluster: Any, make_topic: Any, zk: Any, store: ZkPlanStore, run_cli: Any, tmp_path: Path
) -> None:
    """Issue 25 item 8: the cron job's `verify --metrics-file` with no plan file steps the stored plan and
    writes its gauges after the step; --no-advance reports; nothing stored: the exit code alone. The plan
    waits for a not_before in 2099, so the steps start no move (and set no throttle)."""
    topic = make_topic({0: [1, 2], 1: [2, 3]})
    path = write_plan(tmp_path / "stored.json", {(topic, 0): [2, 3], (topic, 1): [3, 1]})
    plan = stored(path, sizes=[100, 200], schedule={"hours": None, "not_before": "2099-01-01T00:00:00Z"})
    store.create(plan)
    metrics = tmp_path / "m.prom"
    connect = ("--bootstrap-server", cluster.bootstrap)  # beside KAFKA_REASSIGN_ZOOKEEPER (run_cli's)
    own = (("cluster", "eu1"), ("plan", "stored"), ("plan_sha256", plan.plan_sha256[:12]))
    stepped_at = 0.0
    for extra in ((), ("--no-advance",)):
        before = time.time()
        r = run_cli("verify", *extra, "--metrics-file", metrics, "--metrics-label", "cluster=eu1", *connect)
        after = time.time()
        assert r.returncode == 4, r.stderr
        got = _samples(metrics.read_text())
        at = functools.partial(_plan_gauge, got, own)
        assert got[("kafka_reassign_verify_exit_code", own)] == 4
        assert before <= got[("kafka_reassign_verify_last_run_timestamp_seconds", own)] <= after
        assert [at("moves", ("state", s)) for s in ("running", "queued", "done")] == [0, 2, 0]
        assert (at("bytes_remaining"), at("paused")) == (300, 0)
        assert (at("held", ("reason", "not_before")), at("held", ("reason", "hours"))) == (1, 0)
        seen = store.read()
        assert seen is not None and seen.plan.started == frozenset()  # held: nothing started
        if not extra:  # the step wrote its time; the healthy cluster holds nothing
            assert seen.plan.last_step is not None and before <= seen.plan.last_step.at <= after
            assert at("last_step_timestamp_seconds") == seen.plan.last_step.at
            assert [at("held", ("reason", c)) for c in ("broker-missing", "min-isr", "under-replicated")] == [
                0
            ] * 3
            stepped_at = seen.plan.last_step.at
        else:  # --no-advance wrote nothing: the first step's time still
            assert seen.plan.last_step is not None and seen.plan.last_step.at == stepped_at
            assert at("last_step_timestamp_seconds") == stepped_at
    assert not reassigning(zk, topic)
    store.delete()
    r = run_cli("verify", "--metrics-file", metrics, *connect)
    assert r.returncode == 0, r.stderr
    none = (("plan", "stored"), ("plan_sha256", ""))
    got = _samples(metrics.read_text())
    assert {name for name, _ in got} == {
        "kafka_reassign_verify_exit_code",
        "kafka_reassign_verify_last_run_timestamp_seconds",
    }
    assert got[("kafka_reassign_verify_exit_code", none)] == 0


def test_cancel_with_the_stored_plans_file_deletes_it(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, store: ZkPlanStore, tmp_path: Path
) -> None:
    topic = make_topic({0: [1, 2]}, messages=10)
    produce(cluster.bootstrap, topic, 0, 3000)
    path = mover.plan("p.json", {(topic, 0): [2, 3]})
    other = write_plan(tmp_path / "other.json", {(topic, 0): [1, 3]})
    store.create(stored(other))
    c = mover.cli("cancel", "--reassignment-json-file", path, "--bootstrap-server", cluster.bootstrap)
    assert c.returncode == 0, c.stderr
    seen = store.read()  # another plan's file: the stored plan is left as it was, not paused
    assert seen is not None and seen.plan.plan_sha256 == stored(other).plan_sha256 and seen.plan.paused == {}
    store.delete()

    r = mover.execute(path, "--throttle", "20000")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: _moving(zk, topic), timeout=30, message="the move started")
    plan = stored(path, started=[(topic, 0)])
    store.create(plan)
    c = mover.cli("cancel", "--reassignment-json-file", path, "--bootstrap-server", cluster.bootstrap)
    assert c.returncode == 0, c.stderr
    lines = c.stdout.splitlines()
    assert lines[0] == f"Successfully cancelled partition reassignment for: {topic}-0"
    assert lines[-1] == f"Deleted the stored plan (SHA-256 {plan.plan_sha256[:12]}): it was this file's."
    assert store.read() is None and not reassigning(zk, topic)
    assert get_json(zk, RECORD) is None


def test_list_names_the_stored_plans_throttles(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, store: ZkPlanStore, run_cli: Any
) -> None:
    """A stored plan between two moves (the first done, the second queued: one move per broker) keeps its
    throttles: `list` says they are the stored plan's, not "nothing is reassigning (an interrupted
    execute?)". The store fixture deletes the plan before the mover's cleanup verifies the file (which
    takes the throttles off)."""
    topic = make_topic({0: [1], 1: [1]})
    path = mover.plan("p.json", {(topic, 0): [3], (topic, 1): [3]})
    await_idle(zk)
    both = ("--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap)
    r = mover.execute(path, *both, "--max-moves-per-broker", "1", "--throttle", "20000", "--detach",
                      "--rollback-file", str(mover.tmp / "rb.json"))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Stored plan: 1 moving, 1 queued, 0 done of 2" in r.stderr
    wait_until(lambda: not reassigning(zk, topic), timeout=120, message="the first (empty) move done")
    record = get_json(zk, RECORD)
    brokers = sorted(int(b) for b, keys in record["brokers"].items() if keys)
    assert brokers and sorted(t for t, keys in record["topics"].items() if keys) == [topic]

    listed = run_cli("list", *both)
    assert listed.returncode == 0, listed.stderr
    where = f"brokers {','.join(map(str, brokers))} and topics {topic}"
    assert f"  throttles: on {where}, kept for its moves (cleared when it ends)" in listed.stdout.splitlines()
    assert "interrupted execute" not in listed.stderr, listed.stderr
    doc = json.loads(run_cli("list", "--format", "json", *both).stdout)
    assert doc["orphaned_throttles"] is None
    assert doc["stored_plan"]["throttles"] == {"brokers": brokers, "topics": [topic]}
    assert doc["stored_plan"]["moves"] == {"running": 1, "queued": 1, "done": 0}  # no step since: as marked

    store.delete()  # no stored plan: the same throttles are orphans, and list says so as before
    listed = run_cli("list", *both)
    assert f"throttles set by kafka-reassign are still in place on {where}, and nothing" in listed.stderr
