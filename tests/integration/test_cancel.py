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


def test_a_cancel_while_execute_waits_ends_the_wait_and_the_move_is_never_submitted_again(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    """execute --wait's polls are steps of a plan in its own memory (ops/watch.py): a move an operator
    cancels from another shell ended, not as planned (exit 5); the waiting run never re-submits it."""
    from tests.faults.support import Child

    topic = make_topic({0: [1, 2]}, messages=10)
    values = produce(cluster.bootstrap, topic, 0, 5000)
    plan = mover.plan("move.json", {(topic, 0): [2, 3]})
    await_idle(zk)
    child = Child(
        cluster.zookeeper,
        mover.tmp,
        *(
            "execute",
            "--reassignment-json-file",
            plan,
            "--throttle",
            "10000",
            "--wait",
            "--poll-interval",
            "0.5",
        ),
    )
    try:
        wait_until(
            lambda: bool(
                (get_json(zk, f"/brokers/topics/{topic}") or {}).get("adding_replicas", {}).get("0")
            ),
            timeout=30,
            message="the controller started the move",
        )
        c = mover.cli(
            "cancel", "--reassignment-json-file", plan, "--bootstrap-server", cluster.bootstrap,
            "--zookeeper", cluster.zookeeper,
        )  # fmt: skip
        assert c.returncode == 0, c.stderr
        assert child.finish(timeout=120) == 5, child.stderr
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
            child.finish(timeout=30)
    # said as verify says it, on stdout; the throttles cleared once, by whichever of the two came first
    line = f"There is no active reassignment of partition {topic}-0, but replica set is 2,1 rather than 2,3."
    assert line in child.out.splitlines(), child.out
    assert sum("Clearing broker-level throttles on brokers 1,2,3" in o for o in (child.out, c.stdout)) == 1
    assert "0/1 partitions done, 1 not as planned" in child.stderr, child.stderr  # never "1/1 done"
    assert "0 partitions in" in child.stderr, child.stderr
    # nothing submitted again: the set is back where the cancel left it, nothing moving, no trigger
    doc = get_json(zk, f"/brokers/topics/{topic}")
    assert sorted(doc["partitions"]["0"]) == [1, 2], doc
    assert not doc.get("adding_replicas", {}).get("0") and not doc.get("removing_replicas", {}).get("0")
    assert zk.exists(REASSIGN) is None and get_json(zk, RECORD) is None
    assert FOLLOWER_REPLICAS not in (config(zk, "topics", topic) or {})
    got = consume_all(topic)
    assert len(got) == 10 + len(values) and set(values) <= set(got)
