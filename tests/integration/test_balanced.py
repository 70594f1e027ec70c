"""generate --strategy balanced on the real 3-broker cluster (racks r1, r2, r3), executed and verified:
topics on brokers 1 and 2 balanced onto 1, 2, 3 with a throttle and leaders elected; a topic drained off
broker 3; an RF 2 -> 3 change. After each, the cluster's actual replicas and leaders are read back from
ZooKeeper and every message is consumed.

The balanced strategy counts every topic of the cluster (other tests' topics too), so the expected counts
are worked out here from what the cluster holds besides our topics, read just before planning."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.reassign_support import Mover, get_json

BROKERS = [1, 2, 3]


def _assignment(zk: Any, topic: str) -> dict[int, list[int]]:
    doc = get_json(zk, f"/brokers/topics/{topic}")
    return {int(p): r for p, r in doc["partitions"].items()}


def _others(zk: Any, ours: set[str]) -> tuple[Counter[int], Counter[int]]:
    """Replicas and preferred leaders per broker of every other topic (after pending deletions end)."""
    wait_until(lambda: not zk.exists("/admin/delete_topics") or not zk.get_children("/admin/delete_topics"),
               timeout=120, message="no topic deletion pending")  # fmt: skip
    reps: Counter[int] = Counter(dict.fromkeys(BROKERS, 0))
    leads: Counter[int] = Counter(dict.fromkeys(BROKERS, 0))
    for t in zk.get_children("/brokers/topics"):
        if t in ours:
            continue
        doc = get_json(zk, f"/brokers/topics/{t}") or {"partitions": {}}
        for row in doc["partitions"].values():
            reps.update(b for b in row if b in BROKERS)
            if row and row[0] in BROKERS:
                leads[row[0]] += 1
    return reps, leads


def _greedy(start: Counter[int], units: int, cap: int) -> list[int]:
    """The most even counts: one unit at a time to the least loaded broker that can take one more."""
    loads, extra = dict(start), dict.fromkeys(start, 0)
    for _ in range(units):
        b = min((b for b in loads if extra[b] < cap), key=lambda b: (loads[b], b))
        loads[b] += 1
        extra[b] += 1
    return sorted(loads.values())


def _plan(mover: Mover, *args: str) -> tuple[Path, dict[str, Any]]:
    r = mover.cli("generate", "--strategy", "balanced", "--seed", "7", "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    plan = mover.tmp / "proposed.json"
    plan.write_text(json.dumps(doc["proposed"]))
    return plan, doc


def _leaders(zk: Any, topic: str, n: int) -> list[int]:
    return [get_json(zk, f"/brokers/topics/{topic}/partitions/{p}/state")["leader"] for p in range(n)]


def test_topics_on_two_brokers_balanced_onto_three(
    make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    a = make_topic({p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(6)}, messages=60)
    b = make_topic({p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(3)}, messages=30)
    other_reps, other_leads = _others(zk, {a, b})
    plan, doc = _plan(mover, "--topic", a, "--topic", b)
    proposed = {(e["topic"], e["partition"]): e["replicas"] for e in doc["proposed"]["partitions"]}
    # 9 partitions x RF 2 = 18 replicas, at most 9 per broker (one per partition), spread over what
    # the other topics hold: the most even counts, and as even for the 9 preferred leaders.
    reps = other_reps + Counter(x for r in proposed.values() for x in r)
    assert sorted(reps[x] for x in BROKERS) == _greedy(other_reps, 18, 9)
    leads = other_leads + Counter(r[0] for r in proposed.values())
    assert sorted(leads[x] for x in BROKERS) == _greedy(other_leads, 9, 9)
    # With nothing else on the brokers: 6 replicas and 3 leaders each; broker 3 receives 6 copies (the
    # lower bound: brokers 1 and 2 hold 9 each and must shed 3 each).
    if not sum(other_reps.values()):
        assert doc["stats"]["copies"] == doc["stats"]["lower_bound"] == 6

    r = mover.execute(plan, "--throttle", "10000000", "--wait", "--elect-leaders", "--timeout", "180",
                      "--poll-interval", "0.5")  # fmt: skip
    assert r.returncode == 0, r.stderr
    v = mover.verify(plan)
    assert v.returncode == 0, v.stdout + v.stderr
    # The cluster as planned: replica lists, and each partition led by its preferred (first) replica.
    for topic, n in ((a, 6), (b, 3)):
        actual = _assignment(zk, topic)
        assert actual == {p: proposed[topic, p] for p in range(n)}
        assert _leaders(zk, topic, n) == [actual[p][0] for p in range(n)]
    assert sorted(consume_all(a)) == sorted(f"{a}-value-{i}".encode() for i in range(60))
    assert sorted(consume_all(b)) == sorted(f"{b}-value-{i}".encode() for i in range(30))


def test_drain_broker_3(make_topic: Any, consume_all: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 3], 1: [3, 2], 2: [2, 1], 3: [3, 1]}, messages=40)
    plan, doc = _plan(mover, "--topic", topic, "--broker-list", "1,2")
    # Only brokers 1 and 2 are left and RF is 2: every partition holds both. Broker 3's three replicas
    # are replaced: 3 copies (the lower bound: 3 replicas off the broker list).
    proposed = {e["partition"]: e["replicas"] for e in doc["proposed"]["partitions"]}
    assert all(sorted(r) == [1, 2] for r in proposed.values())
    assert proposed[2] == [2, 1]  # unchanged partitions keep their order
    assert doc["stats"]["copies"] == doc["stats"]["lower_bound"] == 3
    r = mover.execute(plan, "--throttle", "10000000", "--wait", "--elect-leaders", "--timeout", "180",
                      "--poll-interval", "0.5")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert mover.verify(plan).returncode == 0
    actual = _assignment(zk, topic)
    assert actual == proposed and not any(3 in row for row in actual.values())
    assert _leaders(zk, topic, 4) == [actual[p][0] for p in range(4)]
    assert sorted(consume_all(topic)) == sorted(f"{topic}-value-{i}".encode() for i in range(40))


def test_replication_factor_2_to_3(make_topic: Any, consume_all: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1]}, messages=30)
    plan, doc = _plan(mover, "--topic", topic, "--replication-factor", "3")
    # Each partition gains the one broker it lacks: 3 copies; its leader stays (one per broker already).
    proposed = {e["partition"]: e["replicas"] for e in doc["proposed"]["partitions"]}
    assert proposed == {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    assert doc["stats"]["copies"] == 3 and doc["stats"]["leader_changes"] == 0
    r = mover.execute(plan, "--wait", "--timeout", "180", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert mover.verify(plan).returncode == 0
    assert _assignment(zk, topic) == proposed
    wait_until(lambda: all(
        sorted(get_json(zk, f"/brokers/topics/{topic}/partitions/{p}/state")["isr"]) == BROKERS for p in range(3)
    ), timeout=60, message="every replica in sync")  # fmt: skip
    assert sorted(consume_all(topic)) == sorted(f"{topic}-value-{i}".encode() for i in range(30))


@pytest.mark.spark
def test_spark_engine_plans_the_same_from_zookeeper(make_topic: Any, zk: Any, mover: Mover) -> None:
    """--engine spark --strategy balanced reading ZooKeeper (every topic of the cluster, as the local
    engine reads it): the same stdout and stderr as the local engine. Other topics come and go on a
    shared cluster, so the local engine runs before and after; their agreement shows nothing changed."""
    a = make_topic({p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(6)})
    b = make_topic({p: [3, 1] for p in range(3)})
    args = [
        "generate",
        "--strategy",
        "balanced",
        "--topic",
        a,
        "--topic",
        b,
        "--seed",
        "5",
        "--format",
        "json",
    ]
    for _ in range(3):
        _others(zk, {a, b})  # no deletion pending
        before = mover.cli(*args)
        spark = mover.cli(*args, "--engine", "spark", "--spark-master", "local[2]")
        after = mover.cli(*args)
        assert before.returncode == 0, before.stderr
        if (before.stdout, before.stderr) == (after.stdout, after.stderr):
            break
    assert (before.stdout, before.stderr) == (after.stdout, after.stderr), "the cluster kept changing"
    assert spark.returncode == 0, spark.stderr
    assert (spark.stdout, spark.stderr) == (before.stdout, before.stderr)
    assert Counter(e["topic"] for e in json.loads(spark.stdout)["proposed"]["partitions"]) == {a: 6, b: 3}
