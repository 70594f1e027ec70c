"""Issue 25 on the ZooKeeper-mode cluster (Kafka 3.9, the brokers given too): `execute --detach` stores the plan
in ZooKeeper and starts the first move; then only separate `verify` processes, from another directory with no
plan file, carry it on (one step each) until exit 0. At the end: nothing reassigning, no throttle of ours
left, the operator's own broker rate back exactly, replicas as planned, the stored plan gone, every message
read back. And a second detach of other plan bytes exits 4 and writes nothing."""

from __future__ import annotations

import os
import shlex
from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.reassign_support import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
    reassigning,
    set_config,
)

RATE = "400000"  # B/s: partition 0's ~1 MB takes a few seconds
OPERATOR_RATE = "123456789"  # broker 3's own follower rate, set before the test: it must come back exactly
HEAD = "/reassign_cli/plan"


def _flags(cluster: Any) -> list[str]:
    return ["--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap]


def _pasted(stderr: str) -> list[str]:
    line = next(line for line in stderr.splitlines() if "Carry it on" in line)
    words = shlex.split(line.split("with: ", 1)[1])
    assert words[:2] == ["kafka-reassign", "verify"], line
    return words[1:]


def _forget(zk: Any) -> None:
    """A failed test's stored plan is not left for the next test."""
    for path in (HEAD, "/reassign_cli/plan-content"):
        if zk.exists(path):
            zk.delete(path, recursive=True)


@pytest.fixture
def operator_rate(zk: Any) -> Any:
    before = config(zk, "brokers", 3)
    set_config(zk, "brokers", 3, {**(before or {}), FOLLOWER_RATE: OPERATOR_RATE})
    yield
    set_config(zk, "brokers", 3, before)


@pytest.mark.timeout(900)
def test_detach_then_cron_verifies_from_elsewhere_until_done(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any, operator_rate: Any
) -> None:
    topic = make_topic({0: [1], 1: [1], 2: [1]}, messages=30)
    sent = produce(cluster.bootstrap, topic, 0, 1000)
    plan = mover.plan("detach.json", {(topic, p): [3] for p in range(3)})
    mover.plans.append((plan, [topic]))
    mover.finally_do.append(lambda: _forget(zk))
    await_idle(zk)
    env = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    first = run_cli(
        "execute", "--reassignment-json-file", plan, *_flags(cluster), "--max-moves-per-broker", "1",
        "--throttle", RATE, "--detach", "--rollback-file", str(mover.tmp / "rb.json"),
        env=env, cwd=mover.tmp,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert "Started 1 move" in first.stderr and "Stored plan: 1 moving, 2 queued, 0 done of 3" in first.stderr
    assert zk.exists(HEAD)
    # another plan's bytes while this one is stored: exit 4, nothing written
    other = mover.plan("other.json", {(topic, 0): [2]})
    head = zk.get(HEAD)
    again = run_cli(
        "execute", "--reassignment-json-file", other, *_flags(cluster), "--max-moves-per-broker", "1",
        "--detach", env=env, cwd=mover.tmp,
    )  # fmt: skip
    assert again.returncode == 4, again.stderr
    assert "another plan is stored in the cluster" in again.stderr and "kafka-reassign cancel" in again.stderr
    assert zk.get(HEAD) == head
    words = _pasted(first.stdout)
    elsewhere = mover.tmp / "elsewhere"
    elsewhere.mkdir()
    last: list[Any] = []

    def step() -> bool:
        r = run_cli(*words, env=env, cwd=elsewhere)
        last[:] = [r]
        assert r.returncode in (0, 4), r.stderr
        assert "2 moving" not in r.stderr and "3 moving" not in r.stderr  # the cap: one move at a time
        return r.returncode == 0

    wait_until(step, timeout=600, interval=1, message=lambda: f"the stored plan done: {last[0].stderr}")
    assert "The stored plan is done: 3 moves" in last[0].stderr
    assert not reassigning(zk, topic) and not zk.exists("/admin/reassign_partitions")
    assert not zk.exists(HEAD)
    doc = get_json(zk, f"/brokers/topics/{topic}")
    assert {p: r for p, r in doc["partitions"].items()} == {"0": [3], "1": [3], "2": [3]}
    tcfg = config(zk, "topics", topic) or {}
    assert LEADER_REPLICAS not in tcfg and FOLLOWER_REPLICAS not in tcfg
    for b in (1, 2):
        bcfg = config(zk, "brokers", b) or {}
        assert LEADER_RATE not in bcfg and FOLLOWER_RATE not in bcfg
    assert (config(zk, "brokers", 3) or {}).get(FOLLOWER_RATE) == OPERATOR_RATE
    assert LEADER_RATE not in (config(zk, "brokers", 3) or {})
    values = consume_all(topic)
    assert len(values) == 30 + len(sent) and set(sent) <= set(values)
    # nothing stored any more: verify says so, exit 0
    none = run_cli(*words, env=env, cwd=elsewhere)
    assert none.returncode == 0 and "No plan is stored in the cluster" in none.stderr
