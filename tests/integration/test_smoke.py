"""The test cluster itself: brokers and racks as documented, a topic round trip, a broker restart."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Cluster
from tests.helpers import unique_name, wait_until


def test_three_brokers_registered_with_racks(cluster: Cluster, zk: Any) -> None:
    ids = sorted(int(i) for i in zk.get_children("/brokers/ids"))
    assert ids == [1, 2, 3] == cluster.broker_ids
    racks = {i: json.loads(zk.get(f"/brokers/ids/{i}")[0]).get("rack") for i in ids}
    assert racks == {1: "r1", 2: "r2", 3: "r3"}
    endpoints = {i: json.loads(zk.get(f"/brokers/ids/{i}")[0])["endpoints"] for i in ids}
    assert endpoints == {i: [f"PLAINTEXT://{cluster.bootstrap_for(i)}"] for i in ids}
    assert zk.exists("/controller") is not None
    assert cluster.zookeeper == f"{cluster.zk_hosts}/kafka" and cluster.chroot == "/kafka"


def test_topic_with_explicit_assignment_round_trip(
    make_topic: Any, consume_all: Any, zk: Any, zk_dump: Any
) -> None:
    assignment = {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    topic = make_topic(assignment, messages=30, configs={"retention.ms": "3600000"})
    stored = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
    assert {int(p): r for p, r in stored["partitions"].items()} == assignment
    assert json.loads(zk.get(f"/config/topics/{topic}")[0])["config"] == {"retention.ms": "3600000"}
    values = consume_all(topic)
    assert sorted(values) == sorted(f"{topic}-value-{i}".encode() for i in range(30))
    dump = zk_dump(zk)
    assert f"/brokers/topics/{topic}/partitions/2/state" in dump
    assert f"/config/topics/{topic}" in dump


def test_stop_and_start_broker(cluster: Cluster, make_topic: Any, consume_all: Any, zk: Any) -> None:
    topic = make_topic({0: [3, 1]}, messages=5, name=unique_name("smoke-restart"))
    with cluster.broker_stopped(3):
        assert sorted(int(i) for i in zk.get_children("/brokers/ids")) == [1, 2]
        state = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/0/state")[0])
        assert state["leader"] == 1 and state["isr"] == [1]
    assert sorted(int(i) for i in zk.get_children("/brokers/ids")) == [1, 2, 3]
    # broker 3 catches up and rejoins the ISR; no message was lost
    wait_until(
        lambda: sorted(json.loads(zk.get(f"/brokers/topics/{topic}/partitions/0/state")[0])["isr"]) == [1, 3],
        timeout=60,
        message="broker 3 back in the ISR",
    )
    assert sorted(consume_all(topic)) == sorted(f"{topic}-value-{i}".encode() for i in range(5))
