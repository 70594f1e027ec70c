"""Issue 25 item 9 on the ZooKeeper-mode cluster (Kafka 3.9) through ZooKeeper ALONE (no --bootstrap-server):
a stored plan runs as batches, the state in znodes under /reassign_cli/. `execute --detach --batch-size 1`
stores the plan and creates the first batch's trigger znode; then only separate `verify` processes (ZooKeeper
alone, another directory, no plan file) carry it on, one batch after the trigger znode is gone, until exit 0.
One of them is killed -9 right after its mark (the compare-and-set that records the batch) and before its
trigger: the next step creates that batch, and no batch is created twice. Each ends with test_step_zk's
check: nothing reassigning, no throttle of ours, the operator's own rate back exactly, replicas as planned,
the stored plan gone, every message read back."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from typing import Any

import pytest

from reassign_cli.backends.zookeeper.session import ZkOptions, open_session
from reassign_cli.backends.zookeeper.stored_plan import ZkPlanStore
from tests.faults.test_step_faults import _killing
from tests.helpers import PYTHON, wait_until
from tests.integration.reassign_support import Mover
from tests.integration.test_step_zk import (
    HEAD,
    RATE,
    _as_planned_and_clean,
    operator_rate,  # noqa: F401  (a fixture)
    three_to_broker_3,
)

pytestmark = pytest.mark.usefixtures("operator_rate")
ENV: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
TRIGGER = "/admin/reassign_partitions"


def _pasted(stdout: str) -> list[str]:
    line = next(line for line in stdout.splitlines() if "Carry it on" in line)
    words = shlex.split(line.split("with: ", 1)[1])
    assert words[:2] == ["kafka-reassign", "verify"] and "--bootstrap-server" not in words, line
    return words[1:]


def _detach(cluster: Any, zk: Any, make_topic: Any, mover: Mover, run_cli: Any, *pace: str) -> Any:
    """3 partitions on broker 1 (partition 0 with ~1 MB), each planned to broker 3, detached through
    ZooKeeper alone with `pace`: (the topic, the values sent, the pasted verify's words, its stderr)."""
    topic, sent, plan = three_to_broker_3(cluster, zk, make_topic, mover, "batches.json")
    first = run_cli(
        "execute", "--reassignment-json-file", plan, "--zookeeper", cluster.zookeeper, *pace,
        "--throttle", RATE, "--detach", "--rollback-file", str(mover.tmp / "rb.json"), env=ENV, cwd=mover.tmp,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert f"Started 1 move: {topic}-0" in first.stderr, first.stderr
    assert zk.exists(HEAD) and zk.exists(TRIGGER)
    return topic, sent, _pasted(first.stdout), first.stderr


@pytest.mark.timeout(900)
def test_detach_batches_through_zookeeper_alone_then_verify_only_with_a_kill_between_mark_and_trigger(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any
) -> None:
    topic, sent, words, first = _detach(
        cluster, zk, make_topic, mover, run_cli, "--batch-size", "1", "--ignore-health", "under-replicated"
    )
    assert "batches of 1" in first
    # --ignore-health is stored with the plan: list shows it (and every step reads it from there)
    listed = run_cli("list", "--zookeeper", cluster.zookeeper, env=ENV, cwd=mover.tmp)
    assert "  ignores health checks: under-replicated" in listed.stdout, listed.stdout + listed.stderr
    elsewhere = mover.tmp / "elsewhere"
    elsewhere.mkdir()
    submitted = [f"{topic}-0"]  # the detach created the first batch
    every = sorted(f"{topic}-{p}" for p in range(3))

    def step(n: int) -> Any:
        r = _killing(words, n, elsewhere)
        found = re.findall(r"^SUBMITTED (\S+)", r.stderr, re.M)
        for m in found:
            submitted.extend(m.split(","))
        assert len(found) <= 1 and all("," not in m for m in found), r.stderr  # one batch of one at most
        return r

    # the first batch ends; then a step killed -9 right after its mark, before its trigger
    wait_until(lambda: not zk.exists(TRIGGER), timeout=300, message="the first batch ended")
    killed = step(2)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "KILLED 2 replace" in killed.stderr and "SUBMITTED" not in killed.stderr, killed.stderr
    assert not zk.exists(TRIGGER)  # marked, not created
    last: list[Any] = []

    def carried_on() -> bool:
        r = step(0)
        last[:] = [r]
        assert r.returncode in (0, 4), r.stderr
        assert not re.search(r"[2-9] moving", r.stderr), r.stderr
        return r.returncode == 0

    wait_until(carried_on, timeout=600, interval=1, message=lambda: f"the stored plan done: {last[0].stderr}")
    assert "The stored plan is done: 3 moves" in last[0].stderr
    assert sorted(submitted) == every, submitted  # each batch created once; the killed step's by the next
    _as_planned_and_clean(zk, topic, sent, consume_all)


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "pace", [["--batch-size", "1"], ["--max-moves-per-broker", "1"]], ids=["batch", "paced"]
)
def test_kill_9_of_a_foreground_zookeeper_execute_then_verify_carries_on(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any, pace: list[str]
) -> None:
    """A foreground `execute --batch-size 1` (and `--max-moves-per-broker 1`, batches in ZooKeeper mode)
    through ZooKeeper alone stores its plan before its first batch; killed -9 once that batch is marked
    started in it (it may have completed already), the plan is left stored (its lease unrenewed), and `verify` alone (no file) carries it on to the end."""
    topic, sent, plan = three_to_broker_3(cluster, zk, make_topic, mover, "fg.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    args = ["--reassignment-json-file", plan, "--zookeeper", cluster.zookeeper, *pace, "--throttle", RATE]
    child = subprocess.Popen(
        [PYTHON, "-m", "reassign_cli", "execute", *args, "--rollback-file", str(mover.tmp / "rb.json")],
        env=env, cwd=mover.tmp, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # Killed once the stored plan records its first batch started: a state that lasts until the run's
        # next poll. (The trigger znode did not: on an idle machine a 1 MB copy is one fetch, and the
        # controller deleted the znode between two looks 0.2 s apart; the test then waited in vain.)
        with open_session(ZkOptions(cluster.zookeeper)) as session:
            store = ZkPlanStore(session)

            def first_batch_marked() -> bool:
                seen = store.read()
                return seen is not None and bool(seen.plan.started)

            wait_until(first_batch_marked, timeout=120, message="the first batch marked started")
    finally:
        child.kill()  # SIGKILL
        child.wait()
    elsewhere = mover.tmp / "elsewhere"
    elsewhere.mkdir()
    words = ["verify", "--zookeeper", cluster.zookeeper]
    last: list[Any] = []

    def carried_on() -> bool:
        r = run_cli(*words, env=ENV, cwd=elsewhere)
        last[:] = [r]
        assert r.returncode in (0, 4), r.stderr
        assert not re.search(r"[2-9] moving", r.stderr), r.stderr
        return r.returncode == 0

    wait_until(carried_on, timeout=600, interval=1, message=lambda: f"the stored plan done: {last[0].stderr}")
    assert "The stored plan is done: 3 moves" in last[0].stderr
    _as_planned_and_clean(zk, topic, sent, consume_all)
