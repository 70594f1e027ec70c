"""Throttling a move that runs without one, and a trigger that no controller has read yet, on a synthetic
cluster in a fresh chroot of the real ZooKeeper (no controller acts on it: the window of a controller
failover, held open)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reassign_cli.core import throttle as th
from tests.integration.reassign_support import fake_cluster


def config(zk: Any, path: str) -> dict[str, str]:
    return json.loads(zk.get(path)[0])["config"] if zk.exists(path) else {}


def setup(zk: Any, tmp_path: Path) -> Path:
    fake_cluster(zk, {1: None, 2: None, 3: None}, {"r": {"partitions": {0: [1, 2], 1: [2, 3]}}})
    plan = tmp_path / "plan.json"
    entries = [
        {"topic": "r", "partition": 0, "replicas": [3, 2]},
        {"topic": "r", "partition": 1, "replicas": [2, 1]},
    ]
    plan.write_text(json.dumps({"version": 1, "partitions": entries}))
    return plan


def complete(zk: Any) -> None:
    """The controller's part, by hand: the partitions at their targets, the trigger gone."""
    zk.set("/brokers/topics/r", json.dumps({"version": 1, "partitions": {"0": [3, 2], "1": [2, 1]}}).encode())
    zk.delete("/admin/reassign_partitions")


def test_rethrottling_a_move_started_without_throttle_writes_the_topic_lists(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path
) -> None:
    plan = setup(fake, tmp_path)
    env = {"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot}
    r = run_cli("execute", "--reassignment-json-file", plan, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert config(fake, "/config/topics/r") == {}
    r = run_cli("execute", "--reassignment-json-file", plan, "--throttle", "1000", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "The inter-broker throttle limit was set to 1000 B/s" in r.stdout
    # Kafka's lists for r-0 [1,2] -> [3,2] and r-1 [2,3] -> [2,1], worked out by hand.
    assert config(fake, "/config/topics/r") == {
        th.LEADER_REPLICAS: "0:1,0:2,1:2,1:3",
        th.FOLLOWER_REPLICAS: "0:3,1:1",
    }
    for b in (1, 2, 3):
        assert config(fake, f"/config/brokers/{b}") == {th.LEADER_RATE: "1000", th.FOLLOWER_RATE: "1000"}
    complete(fake)
    r = run_cli("verify", "--reassignment-json-file", plan, env=env)
    assert r.returncode == 0, r.stderr
    assert config(fake, "/config/topics/r") == {} and fake.exists("/reassign_cli/throttles") is None


def test_a_trigger_no_controller_has_read_keeps_the_throttles(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path
) -> None:
    """Right after execute, before any controller acted on the trigger (a controller failover): verify
    says in progress and keeps every throttle; once the move is done, it takes them off."""
    plan = setup(fake, tmp_path)
    env = {"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot}
    r = run_cli("execute", "--reassignment-json-file", plan, "--throttle", "1000", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    before = {p: config(fake, p) for p in ("/config/topics/r", "/config/brokers/1", "/config/brokers/3")}
    r = run_cli("verify", "--reassignment-json-file", plan, env=env)
    assert r.returncode == 4, r.stderr
    assert "orphan" not in r.stderr and "Clearing" not in r.stdout
    assert {p: config(fake, p) for p in before} == before
    assert fake.exists("/reassign_cli/throttles") is not None
    complete(fake)
    r = run_cli("verify", "--reassignment-json-file", plan, env=env)
    assert r.returncode == 0, r.stderr
    assert "Clearing topic-level throttles on topic r" in r.stdout
    assert fake.exists("/reassign_cli/throttles") is None
