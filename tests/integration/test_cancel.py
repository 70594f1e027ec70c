"""cancel on the real cluster, in mid-move: the replicas go back to where they were, the throttles come
off, and every record is still there."""

from __future__ import annotations

from typing import Any

from tests.helpers import wait_until
from tests.integration.reassign_support import (
    FOLLOWER_REPLICAS,
    REASSIGN,
    RECORD,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
    reassigning,
)


def test_cancel_in_mid_move(cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2]}, messages=10)
    values = produce(cluster.bootstrap, topic, 0, 5000)
    plan = mover.plan("move.json", {(topic, 0): [2, 3]})
    await_idle(zk)
    r = mover.execute(plan, "--throttle", "10000")
    assert r.returncode == 0, r.stderr
    wait_until(
        lambda: bool((get_json(zk, f"/brokers/topics/{topic}") or {}).get("adding_replicas", {}).get("0")),
        timeout=30,
        message="the controller started the move",
    )
    assert config(zk, "topics", topic)[FOLLOWER_REPLICAS] == "0:3"

    c = mover.cli(
        "cancel",
        "--reassignment-json-file",
        plan,
        "--bootstrap-server",
        cluster.bootstrap,
        "--zookeeper",
        cluster.zookeeper,
    )
    assert c.returncode == 0, c.stderr
    assert c.stdout.splitlines() == [
        f"Successfully cancelled partition reassignment for: {topic}-0",
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    doc = get_json(zk, f"/brokers/topics/{topic}")
    # The set is back; the order is the controller's: RS was target+origin = [2,3,1], and the reverted
    # replicas are RS minus the adding ones, [2,1], not the original [1,2] (Kafka's own --cancel does the
    # same). The rollback file restores the order without moving data.
    assert doc["partitions"]["0"] == [2, 1]
    assert not doc.get("adding_replicas", {}).get("0") and not doc.get("removing_replicas", {}).get("0")
    assert FOLLOWER_REPLICAS not in (config(zk, "topics", topic) or {})
    assert get_json(zk, RECORD) is None
    wait_until(lambda: not reassigning(zk, topic), timeout=30, message="trigger entry gone")
    assert zk.exists(REASSIGN) is None

    again = mover.cli(
        "cancel",
        "--reassignment-json-file",
        plan,
        "--bootstrap-server",
        cluster.bootstrap,
        "--zookeeper",
        cluster.zookeeper,
    )
    assert (again.returncode, again.stdout.splitlines()[0]) == (
        0,
        "None of the specified partition reassignments are active.",
    )
    got = consume_all(topic)
    assert len(got) == 10 + len(values) and set(values) <= set(got)
