"""Issue 25 on the fault suite's own ZooKeeper-mode cluster (Kafka 3.9) through ZooKeeper ALONE (no
--bootstrap-server): a stored plan runs as batches, one trigger znode at a time (item 9).
- Ten `verify` steppers at once, again and again until the plan is done: never two batches at once, every
  move created exactly once, none lost (item 3's fence, on the batch path).
- A queued move whose partition is at min.insync.replicas (a broker of its replica set stopped, the
  partition short of a replica and at its min ISR) stays out of the batches: the next queued move takes
  its place, and it starts once the partition is whole again (item 5).
Each ends with nothing reassigning, no throttle of ours, the operator's own broker rate back exactly,
replicas as planned, the stored plan gone, every message read back."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from tests.faults.test_step_faults import ten_steppers_until_done
from tests.helpers import unique_name, wait_until
from tests.integration.reassign_support import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_REPLICAS,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
    reassigning,
)
from tests.integration.test_step_zk import (
    HEAD,
    OPERATOR_RATE,
    RATE,
    _as_planned_and_clean,
    _forget,
    operator_rate,  # noqa: F401  (a fixture)
)
from tests.integration.test_stored_batches_zk import TRIGGER, _detach, _pasted

pytestmark = pytest.mark.usefixtures("operator_rate")  # broker 3's own rate, which must come back exactly

PLAIN: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}


def _in_trigger(zk: Any) -> list[str]:
    doc = get_json(zk, TRIGGER) or {}
    return [f"{p['topic']}-{p['partition']}" for p in doc.get("partitions", [])]


def _started(stderr: str) -> list[str]:
    found = re.findall(r"^(?:Started|Submitted again) \d+ moves?: (\S+)", stderr, re.M)
    return [tp for m in found for tp in m.split(",")]


def test_ten_zookeeper_alone_steppers_at_once(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any
) -> None:
    topic, sent, words, _ = _detach(cluster, zk, make_topic, mover, run_cli, "--batch-size", "1")
    started = [f"{topic}-0"]  # the detach created the first batch
    ten_steppers_until_done(words, mover.tmp, started, lambda: len(_in_trigger(zk)) <= 1)
    assert sorted(started) == sorted(f"{topic}-{p}" for p in range(3)), started  # each once, none lost
    _as_planned_and_clean(zk, topic, sent, consume_all)


@pytest.mark.timeout(900)
def test_a_partition_at_min_isr_waits_out_of_the_batches_then_starts(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any
) -> None:
    """Three topics in the plan's order (execute sorts by topic): `a` and `c` (one partition on broker 1)
    move to broker 3; `b` (one partition on [1, 2], min.insync.replicas 1) moves to [1, 3]. Batches of one,
    through ZooKeeper alone. Once `a`'s batch ended, broker 2 (in no target replica set) is stopped: `b` is
    short of broker 2 and at its min ISR (ISR [1] of min 1). The plan was stored ignoring the
    under-replicated and offline-replicas holds (so the step is not held as a whole): `b` waits, `c` takes
    its place in the next batch, and with `c` done nothing starts. With broker 2 back in sync, `b` starts
    and the plan ends."""
    base = unique_name("t", "min_isr_batch")
    a = make_topic({0: [1]}, messages=10, name=f"{base}-a")
    b = make_topic({0: [1, 2]}, messages=10, name=f"{base}-b", configs={"min.insync.replicas": "1"})
    c = make_topic({0: [1]}, messages=10, name=f"{base}-c")
    sent = produce(cluster.bootstrap, a, 0, 1000)
    targets = {(a, 0): [3], (b, 0): [1, 3], (c, 0): [3]}
    plan = mover.plan("isr.json", targets)
    mover.plans.append((plan, [a, b, c]))
    mover.finally_do.append(lambda: _forget(zk))
    await_idle(zk)
    first = run_cli(
        "execute", "--reassignment-json-file", plan, "--zookeeper", cluster.zookeeper, "--batch-size", "1",
        "--throttle", RATE, "--ignore-health", "under-replicated", "--ignore-health", "offline-replicas",
        "--detach", "--rollback-file", str(mover.tmp / "rb.json"), env=PLAIN, cwd=mover.tmp,
    )  # fmt: skip
    assert first.returncode == 0 and f"Started 1 move: {a}-0" in first.stderr, first.stderr
    words = _pasted(first.stdout)
    wait_until(lambda: not zk.exists(TRIGGER), timeout=300, message="a's batch ended")

    def isr() -> list[int]:
        return list((get_json(zk, f"/brokers/topics/{b}/partitions/0/state") or {}).get("isr", []))

    with cluster.broker_stopped(2):
        wait_until(lambda: isr() == [1], timeout=120, message="b short of broker 2")
        step = run_cli(*words, env=PLAIN, cwd=mover.tmp)
        if "held: the controller changed" in step.stderr:  # broker 2 was the controller: held one step
            assert step.returncode == 4 and not _started(step.stderr), step.stderr
            step = run_cli(*words, env=PLAIN, cwd=mover.tmp)
        assert step.returncode == 4 and _started(step.stderr) == [f"{c}-0"], step.stderr
        assert _in_trigger(zk) in ([f"{c}-0"], [])  # [] once it ended
        wait_until(lambda: not zk.exists(TRIGGER), timeout=300, message="c's batch ended")
        waits = run_cli(*words, env=PLAIN, cwd=mover.tmp)
        assert waits.returncode == 4 and not _started(waits.stderr), waits.stderr
        assert f"waiting: partition {b}-0 is at min.insync.replicas, a queued move waits" in waits.stderr
        assert not zk.exists(TRIGGER) and not reassigning(zk, b)
    wait_until(lambda: sorted(isr()) == [1, 2], timeout=120, message="broker 2 back in sync")
    last: list[Any] = []

    def carried_on() -> bool:
        r = run_cli(*words, env=PLAIN, cwd=mover.tmp)
        last[:] = [r]
        assert r.returncode in (0, 4), r.stderr
        return r.returncode == 0

    wait_until(carried_on, timeout=600, interval=1, message=lambda: f"the plan done: {last[0].stderr}")
    assert "The stored plan is done: 3 moves" in last[0].stderr
    assert not zk.exists(TRIGGER) and not zk.exists(HEAD)
    for topic, replicas in ((a, [3]), (b, [1, 3]), (c, [3])):
        assert not reassigning(zk, topic)
        assert get_json(zk, f"/brokers/topics/{topic}")["partitions"] == {"0": replicas}
        tcfg = config(zk, "topics", topic) or {}
        assert LEADER_REPLICAS not in tcfg and FOLLOWER_REPLICAS not in tcfg
        values = consume_all(topic)
        assert len(values) == 10 + (len(sent) if topic == a else 0) and set(
            sent if topic == a else []
        ) <= set(values)
    assert (config(zk, "brokers", 3) or {}).get(FOLLOWER_RATE) == OPERATOR_RATE
    for broker in (1, 2):
        assert FOLLOWER_RATE not in (config(zk, "brokers", broker) or {})
