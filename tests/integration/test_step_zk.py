"""Issue 25 on the ZooKeeper-mode cluster (Kafka 3.9, the brokers given too): `execute --detach` stores the plan
in ZooKeeper and starts the first move; then only separate `verify` processes, from another directory with no
plan file, carry it on (one step each) until exit 0. At the end: nothing reassigning, no throttle of ours
left, the operator's own broker rate back exactly, replicas as planned, the stored plan gone, every message
read back. And a second detach of other plan bytes exits 4 and writes nothing."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from typing import Any

import pytest

from tests.faults.support import Child
from tests.helpers import PYTHON, wait_until
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
def operator_rate(zk: Any, mover: Mover) -> Any:
    before = config(zk, "brokers", 3)
    set_config(zk, "brokers", 3, {**(before or {}), FOLLOWER_RATE: OPERATOR_RATE})
    yield
    set_config(zk, "brokers", 3, before)


def three_to_broker_3(
    cluster: Any, zk: Any, make_topic: Any, mover: Mover, name: str
) -> tuple[str, list[bytes], Any]:
    """A topic of 3 partitions on broker 1 (partition 0 with ~1 MB) and a plan `name` moving each to broker
    3, undone and forgotten at the end: (the topic, the values sent, the plan)."""
    topic = make_topic({0: [1], 1: [1], 2: [1]}, messages=30)
    sent = produce(cluster.bootstrap, topic, 0, 1000)
    plan = mover.plan(name, {(topic, p): [3] for p in range(3)})
    mover.plans.append((plan, [topic]))
    mover.finally_do.append(lambda: _forget(zk))
    await_idle(zk)
    return topic, sent, plan


def _detach(
    cluster: Any, zk: Any, make_topic: Any, mover: Mover, run_cli: Any
) -> tuple[str, list[bytes], list[str]]:
    """A topic of 3 partitions on broker 1 (partition 0 with ~1 MB), a plan moving each to broker 3, detached
    with one move per broker: (the topic, the values sent, the pasted verify command's words)."""
    topic, sent, plan = three_to_broker_3(cluster, zk, make_topic, mover, "detach.json")
    first = run_cli(
        "execute", "--reassignment-json-file", plan, *_flags(cluster), "--max-moves-per-broker", "1",
        "--throttle", RATE, "--detach", "--rollback-file", str(mover.tmp / "rb.json"),
        env=ENV, cwd=mover.tmp,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert "Started 1 move" in first.stderr and "Stored plan: 1 moving, 2 queued, 0 done of 3" in first.stderr
    assert zk.exists(HEAD)
    return topic, sent, _pasted(first.stdout)


ENV: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}


def _steps_until_done(run_cli: Any, words: list[str], cwd: Any) -> Any:
    last: list[Any] = []

    def step() -> bool:
        r = run_cli(*words, env=ENV, cwd=cwd)
        last[:] = [r]
        assert r.returncode in (0, 4), r.stderr
        assert "2 moving" not in r.stderr and "3 moving" not in r.stderr  # the cap: one move at a time
        return r.returncode == 0

    wait_until(step, timeout=600, interval=1, message=lambda: f"the stored plan done: {last[0].stderr}")
    assert "The stored plan is done: 3 moves" in last[0].stderr
    return last[0]


def _as_planned_and_clean(
    zk: Any, topic: str, sent: list[bytes], consume_all: Any, planned: dict[str, list[int]] | None = None
) -> None:
    """Nothing reassigning, no throttle of ours (on brokers 1 and 2), the operator's rate back (broker 3),
    replicas as `planned` (by default three_to_broker_3's: every partition on broker 3), the stored plan gone,
    every message read back (the topic's 30 and `sent`)."""
    assert not reassigning(zk, topic) and not zk.exists("/admin/reassign_partitions")
    assert not zk.exists(HEAD)
    doc = get_json(zk, f"/brokers/topics/{topic}")
    assert dict(doc["partitions"].items()) == (planned or {"0": [3], "1": [3], "2": [3]})
    tcfg = config(zk, "topics", topic) or {}
    assert LEADER_REPLICAS not in tcfg and FOLLOWER_REPLICAS not in tcfg
    for b in (1, 2):
        bcfg = config(zk, "brokers", b) or {}
        assert LEADER_RATE not in bcfg and FOLLOWER_RATE not in bcfg
    assert (config(zk, "brokers", 3) or {}).get(FOLLOWER_RATE) == OPERATOR_RATE
    assert LEADER_RATE not in (config(zk, "brokers", 3) or {})
    values = consume_all(topic)
    assert len(values) == 30 + len(sent) and set(sent) <= set(values)


@pytest.mark.timeout(900)
def test_detach_then_cron_verifies_from_elsewhere_until_done(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any, operator_rate: Any
) -> None:
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    # another plan's bytes while this one is stored: exit 4, nothing written
    other = mover.plan("other.json", {(topic, 0): [2]})
    head = zk.get(HEAD)
    again = run_cli(
        "execute", "--reassignment-json-file", other, *_flags(cluster), "--max-moves-per-broker", "1",
        "--detach", env=ENV, cwd=mover.tmp,
    )  # fmt: skip
    assert again.returncode == 4, again.stderr
    assert "another plan is stored in the cluster" in again.stderr and "kafka-reassign cancel" in again.stderr
    assert zk.get(HEAD) == head
    # a verify of that other file reports on it, names the stored plan and keeps the throttles
    throttled = config(zk, "topics", topic)
    mine = run_cli("verify", "--reassignment-json-file", other, *_flags(cluster), env=ENV, cwd=mover.tmp)
    assert "Another plan is stored in the cluster" in mine.stderr, mine.stderr
    assert config(zk, "topics", topic) == throttled and LEADER_REPLICAS in (throttled or {})
    # a verify of the stored plan's own file is a step of it
    own = run_cli(
        "verify",
        "--reassignment-json-file",
        mover.tmp / "detach.json",
        *_flags(cluster),
        env=ENV,
        cwd=mover.tmp,
    )
    assert own.returncode in (0, 4) and "tored plan" in own.stderr, own.stderr
    elsewhere = mover.tmp / "elsewhere"
    elsewhere.mkdir()
    _steps_until_done(run_cli, words, elsewhere)
    _as_planned_and_clean(zk, topic, sent, consume_all)
    # nothing stored any more: verify says so, exit 0
    none = run_cli(*words, env=ENV, cwd=elsewhere)
    assert none.returncode == 0 and "No plan is stored in the cluster" in none.stderr


@pytest.mark.timeout(900)
def test_kill_9_of_a_foreground_driver_then_verify_carries_on(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any, operator_rate: Any
) -> None:
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    child = Child(None, mover.tmp, "execute", "--resume", *_flags(cluster), "--poll-interval", "0.5")
    child.wait_for_line("Stored plan:")  # it drives: holds the lease and steps
    child.kill9()
    # its lease is not renewed any more: the next verify watches it go stale and takes over
    _steps_until_done(run_cli, words, mover.tmp)
    _as_planned_and_clean(zk, topic, sent, consume_all)


@pytest.mark.timeout(900)
def test_a_foreground_paced_execute_given_the_brokers_runs_the_window_and_a_kill_9_is_carried_on(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any, operator_rate: Any
) -> None:
    """Issue 25 item 9: ZooKeeper mode with the brokers (--zookeeper and --bootstrap-server) runs a
    foreground `--max-moves-per-broker 1` as the window through the brokers, the plan stored in znodes (it
    ran as batches, with the note meant for ZooKeeper alone); killed -9 while its first move copies, verify
    (both options, another directory, no file) carries it on to the end."""
    topic, sent, plan = three_to_broker_3(cluster, zk, make_topic, mover, "window.json")
    child = Child(
        None, mover.tmp, "execute", "--reassignment-json-file", plan, *_flags(cluster), "--max-moves-per-broker",
        "1", "--order", "as-planned", "--throttle", RATE, "--poll-interval", "0.5",
        "--rollback-file", str(mover.tmp / "rb.json"),
    )  # fmt: skip
    try:
        child.wait_for_line("1 moving, 2 queued")  # the window's progress line, not "Batch 1/3"
        assert zk.exists(HEAD)  # stored before its first move
        said = "".join(child.err)
        assert "Batch " not in said and "window runs as batches" not in said, said
    finally:
        child.kill9()
    elsewhere = mover.tmp / "elsewhere"
    elsewhere.mkdir()
    _steps_until_done(run_cli, ["verify", *_flags(cluster)], elsewhere)
    _as_planned_and_clean(zk, topic, sent, consume_all)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("n", [2, 10])
def test_verify_steppers_at_once_never_start_a_move_twice(
    cluster: Any,
    make_topic: Any,
    zk: Any,
    mover: Mover,
    run_cli: Any,
    consume_all: Any,
    operator_rate: Any,
    n: int,
) -> None:
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    started: list[str] = [f"{topic}-0"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}

    def both() -> bool:
        procs = [
            subprocess.Popen([PYTHON, "-m", "reassign_cli", *words], env=env, cwd=mover.tmp, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(n)
        ]  # fmt: skip
        codes = []
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode in (0, 4), err
            assert "2 moving" not in err and "3 moving" not in err
            for m in re.finditer(r"^Started \d+ moves?: (\S+)", err, re.M):
                started.extend(m.group(1).split(","))
            codes.append(p.returncode)
        return 0 in codes

    wait_until(both, timeout=600, interval=1, message="the stored plan done")
    assert sorted(started) == sorted(f"{topic}-{p}" for p in range(3))  # each started once, none lost
    _as_planned_and_clean(zk, topic, sent, consume_all)


@pytest.mark.timeout(600)
def test_detach_outside_its_hours_starts_nothing_and_verify_says_when(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any
) -> None:
    import datetime

    topic = make_topic({0: [1], 1: [1]}, messages=10)
    plan = mover.plan("hours.json", {(topic, p): [3] for p in range(2)})
    mover.finally_do.append(lambda: _forget(zk))
    await_idle(zk)
    h = (datetime.datetime.now(datetime.UTC).hour + 2) % 24
    hours = f"{h:02d}:00-{(h + 1) % 24:02d}:00"
    r = run_cli(
        "execute", "--reassignment-json-file", plan, *_flags(cluster), "--max-moves-per-broker", "1",
        "--throttle", RATE, "--detach", "--hours", hours, "--rollback-file", str(mover.tmp / "rb.json"),
        env=ENV, cwd=mover.tmp,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert f"outside hours {hours} UTC; next start" in r.stderr and "0 moving, 2 queued" in r.stderr
    assert "Started" not in r.stderr and not reassigning(zk, topic)
    assert FOLLOWER_REPLICAS not in (config(zk, "topics", topic) or {})  # nothing throttled: nothing started
    v = run_cli("verify", *_flags(cluster), env=ENV, cwd=mover.tmp)
    assert v.returncode == 4 and f"outside hours {hours} UTC; next start" in v.stderr, v.stderr
