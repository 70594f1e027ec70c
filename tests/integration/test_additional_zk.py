"""execute --additional in ZooKeeper mode (Kafka 3.9.2 brokers): the running move is the trigger znode's; the
added one goes through the brokers (AlterPartitionReassignments), as Kafka 2.8's tool did with --additional
and --bootstrap-server. Without brokers it is refused before anything is written: our execute (exit 2) and
the drop-in (Kafka 2.8's message, exit 1)."""

from __future__ import annotations

import subprocess
from typing import Any

from tests.helpers import run_dropin, wait_until
from tests.integration.kraft_support import any_dirs, kafka_tool
from tests.integration.reassign_support import (
    REASSIGN,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
    reassigning,
)


def dropin(*args: str, cwd: Any) -> subprocess.CompletedProcess[str]:
    return run_dropin(*args, cwd=cwd)


def test_additional_beside_a_znode_reassignment(cluster: Any, make_topic: Any, zk: Any, mover: Mover) -> None:
    slow = make_topic({0: [1, 2]}, messages=10)
    produce(cluster.bootstrap, slow, 0, 5000)
    added = make_topic({0: [1, 2]})
    running = mover.plan("slow.json", {(slow, 0): [2, 3]})
    more = mover.plan("more.json", {(added, 0): [3, 2]})
    await_idle(zk)
    r = mover.execute(running, "--throttle", "10000")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: reassigning(zk, slow), timeout=30, message="the slow move runs")

    r = mover.execute(more)
    assert r.returncode == 4 and "Use --additional" in r.stderr
    before = config(zk, "topics", added)
    r = mover.execute(more, "--additional", "--throttle", "10000")
    assert r.returncode == 2 and "--additional needs --bootstrap-server" in r.stderr, r.stderr
    zk_only = ("--zookeeper", cluster.zookeeper, "--reassignment-json-file", str(more))
    d = dropin("--execute", "--additional", *zk_only, cwd=mover.tmp)
    assert (d.returncode, d.stderr.splitlines()[0], d.stdout) == (
        1,
        'You must specify --bootstrap-server when using "[additional]"',
        "",
    )
    assert config(zk, "topics", added) == before and get_json(zk, REASSIGN) == {
        "version": 1,
        "partitions": [{"topic": slow, "partition": 0, "replicas": [2, 3]}],
    }  # nothing written by the refusals

    d = dropin("--execute", "--additional", "--bootstrap-server", cluster.bootstrap, *zk_only, cwd=mover.tmp)
    assert d.returncode == 0, d.stderr
    assert d.stdout.splitlines()[-1] == f"Successfully started partition reassignment for {added}-0"
    wait_until(
        lambda: (get_json(zk, f"/brokers/topics/{added}") or {}).get("partitions", {}).get("0") == [3, 2],
        timeout=60,
        message="the added move done (no data)",
    )
    assert reassigning(zk, slow)  # the znode's move goes on beside it
    v = mover.verify(more, "--preserve-throttles")
    assert v.returncode == 0, v.stdout  # this file's partition is at its target (DESIGN §2)
    assert f"Reassignment of partition {added}-0 is completed." in v.stdout


def test_dropin_with_zookeeper_beside_kafkas_tool(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover
) -> None:
    """The drop-in's --zookeeper (Kafka 2.8's path) against Kafka 4.3.1's tool through the brokers, on the
    same ZooKeeper-mode cluster and plan: execute and verify print the same lines, exit 0."""
    topic = make_topic({0: [1, 2], 1: [2, 3]})
    target = mover.plan("p.json", {(topic, 0): [2, 3], (topic, 1): [3, 1]})
    back = mover.plan("back.json", {(topic, 0): [1, 2], (topic, 1): [2, 3]})
    mover.plans.append((target, [topic]))  # cleanup: waits for it and verifies
    await_idle(zk)
    k_exec = kafka_tool(
        cluster.bootstrap, "--execute", "--reassignment-json-file", target, "--throttle", "50000000"
    )
    await_idle(zk)
    k_verify = kafka_tool(cluster.bootstrap, "--verify", "--reassignment-json-file", target)
    assert kafka_tool(cluster.bootstrap, "--execute", "--reassignment-json-file", back).returncode == 0
    await_idle(zk)
    assert kafka_tool(cluster.bootstrap, "--verify", "--reassignment-json-file", back).returncode == 0
    zk_args = ("--zookeeper", cluster.zookeeper, "--reassignment-json-file", str(target))
    o_exec = dropin("--execute", *zk_args, "--throttle", "50000000", cwd=mover.tmp)
    await_idle(zk)
    o_verify = dropin("--verify", *zk_args, cwd=mover.tmp)
    assert (o_exec.returncode, o_exec.stdout.replace("run verify", "run --verify")) == (
        k_exec.returncode,
        any_dirs(k_exec.stdout),
    )
    assert k_exec.returncode == 0 and "Successfully started partition reassignments" in k_exec.stdout
    assert (o_verify.returncode, o_verify.stdout) == (k_verify.returncode, k_verify.stdout)
    assert f"Reassignment of partition {topic}-1 is completed." in k_verify.stdout
