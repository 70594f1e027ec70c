"""cancel --all on the real ZooKeeper-mode cluster: one throttled move started by Kafka's own
kafka-reassign-partitions (through the admin API), one by ours, no plan file given: both are cancelled,
their replicas go back, the rollback file holds the targets they were moving to, our throttles come off and
the values the other tool set stay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.clusters import kafka_tool
from tests.helpers import wait_until
from tests.integration.reassign_support import (
    FOLLOWER_REPLICAS,
    LEADER_REPLICAS,
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

RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def _moving(zk: Any, topic: str) -> bool:
    return bool((get_json(zk, f"/brokers/topics/{topic}") or {}).get("adding_replicas", {}).get("0"))


def _cancel_all(mover: Mover, cluster: Any, *args: str) -> Any:
    return mover.cli(
        "cancel", "--all", "--bootstrap-server", cluster.bootstrap, "--zookeeper", cluster.zookeeper, *args
    )


def test_cancel_all_stops_kafkas_move_and_ours(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover, tmp_path: Path
) -> None:
    theirs_topic, ours_topic = make_topic({0: [1, 2]}, messages=10), make_topic({0: [1, 2]}, messages=10)
    values = {t: produce(cluster.bootstrap, t, 0, 3000) for t in (theirs_topic, ours_topic)}
    await_idle(zk)
    before = {b: config(zk, "brokers", b) for b in (1, 2, 3)}
    theirs = write_plan(tmp_path / "theirs.json", {(theirs_topic, 0): [3, 1]})
    started = kafka_tool(
        "--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", str(theirs),
        "--throttle", "10000",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        wait_until(lambda: _moving(zk, theirs_topic), timeout=30, message="Kafka's move started")
        kafka_brokers = {b: config(zk, "brokers", b) for b in (1, 2, 3)}
        kafka_topic = config(zk, "topics", theirs_topic)
        assert kafka_brokers[3] is not None and all(k in kafka_brokers[3] for k in RATE_KEYS)

        ours = mover.plan("ours.json", {(ours_topic, 0): [2, 3]})
        r = mover.execute(ours, "--throttle", "20000")
        assert r.returncode == 0, r.stderr
        wait_until(lambda: _moving(zk, ours_topic), timeout=30, message="our move started")
        assert config(zk, "topics", ours_topic)[FOLLOWER_REPLICAS] == "0:3"
        ours_path = tmp_path / "ours.json"
        ours_path.unlink()  # the operator is gone and the plan with them
        (tmp_path / "theirs.json").unlink()

        c = _cancel_all(mover, cluster, "--rollback-file", "pre-cancel.json")
        assert c.returncode == 0, c.stderr
        first, second = sorted([theirs_topic, ours_topic])
        assert c.stdout.splitlines() == [
            "Saved the targets of the reassignments cancelled to pre-cancel.json",
            f"Successfully cancelled partition reassignments for: {first}-0,{second}-0",
            # Ours: the rates of brokers 1,2,3 (back to Kafka's values, recorded as priors) and our topic's
            # lists; Kafka's topic's lists are not ours (kept, below).
            "Clearing broker-level throttles on brokers 1,2,3",
            f"Clearing topic-level throttles on topic {ours_topic}",
        ]
        # The rollback file: where each partition was heading, worked out by hand (RS minus RR).
        heading = {theirs_topic: [3, 1], ours_topic: [2, 3]}
        assert json.loads((tmp_path / "pre-cancel.json").read_text()) == {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": 0, "replicas": heading[t], "log_dirs": ["any", "any"]}
                for t in (first, second)
            ],
        }
        # Both reverted: RS minus the adding replicas (the controller's order, as Kafka's --cancel leaves it).
        assert get_json(zk, f"/brokers/topics/{theirs_topic}")["partitions"]["0"] == [1, 2]
        assert get_json(zk, f"/brokers/topics/{ours_topic}")["partitions"]["0"] == [2, 1]
        assert not reassigning(zk, theirs_topic) and not reassigning(zk, ours_topic)
        # Ours off; the values Kafka's tool set (the operator's, as far as we know) exactly as they were.
        assert FOLLOWER_REPLICAS not in (config(zk, "topics", ours_topic) or {})
        assert config(zk, "topics", theirs_topic) == kafka_topic
        assert {b: config(zk, "brokers", b) for b in (1, 2, 3)} == kafka_brokers
        assert get_json(zk, RECORD) is None
        kept = c.stderr.splitlines()
        assert len(kept) == 2 and kept[0].startswith("Kept throttles that are not in this tool's record"), (
            kept
        )
        keys = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
        kafka_values = ", ".join(f"{k}={kafka_topic[k]}" for k in keys)
        assert kept[1] == (
            f"  topic {theirs_topic}: {kafka_values}; to remove: kafka-configs --bootstrap-server {cluster.bootstrap} "
            f"--entity-type topics --entity-name {theirs_topic} --alter --delete-config {','.join(keys)}"
        )

        again = _cancel_all(mover, cluster, "--rollback-file", "again.json")
        assert (again.returncode, again.stdout, again.stderr) == (
            0,
            "No partition reassignments in flight: nothing to cancel.\n",
            "",
        )
        assert not (tmp_path / "again.json").exists()
        for t in (theirs_topic, ours_topic):
            got = consume_all(t)
            assert len(got) == 10 + 3000 and set(values[t]) <= set(got)
    finally:
        for b in (1, 2, 3):  # Kafka's throttles: its --verify would not take them off a cancelled move
            set_config(zk, "brokers", b, before[b])
        set_config(zk, "topics", theirs_topic, None)
        wait_until(lambda: not reassigning(zk, theirs_topic), timeout=60, message="nothing moving")
