"""Issue 25's faults of a stored plan's step, on the fault suite's own ZooKeeper-mode cluster (Kafka 3.9, the
brokers given too; the plan stored in znodes): a stepper killed -9 right after each write of a step, ten
steppers at once, the target broker stopped mid-plan. Each ends with the check of tests/integration/
test_step_zk.py: nothing reassigning, no throttle of ours, the operator's own broker rate back exactly,
replicas as planned, the stored plan gone, every message read back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from typing import Any

import pytest

from tests.helpers import PYTHON, REPO, wait_until
from tests.integration.reassign_support import Mover, reassigning
from tests.integration.test_step_zk import (
    _as_planned_and_clean,
    _detach,
    _steps_until_done,
    operator_rate,  # noqa: F401  (a fixture)
)

pytestmark = pytest.mark.usefixtures("operator_rate")  # broker 3's own rate, which must come back exactly

ENV = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}


def _moving(zk: Any, topic: str) -> int:
    from tests.integration.reassign_support import get_json

    doc = get_json(zk, f"/brokers/topics/{topic}") or {}
    return sum(1 for v in doc.get("adding_replicas", {}).values() if v)


def _killing(words: list[str], n: int | str, cwd: Any) -> subprocess.CompletedProcess[str]:
    """The verify step, killed -9 by itself right after its nth write (n = 0: not killed)."""
    env = dict(ENV, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), ENV.get("PYTHONPATH")])))
    return subprocess.run(
        [PYTHON, "-m", "tests.faults.step_kill", str(n), "--", *words],
        env=env, cwd=cwd, text=True, capture_output=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_stepper_killed_9_after_each_write_of_a_step(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, consume_all: Any, run_cli: Any
) -> None:
    """Each step is killed one write later than the one before (lease taken, moves marked, throttles, submit,
    lease released), until a step runs whole; then again from its first write. Once only the last move is
    left and it has ended, the final step is killed after each of its writes (lease, clear, delete)."""
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    submitted: list[str] = [f"{topic}-0"]  # the detach's first step started partition 0
    killed_at: list[tuple[int, str]] = []

    def run(n: int) -> subprocess.CompletedProcess[str]:
        r = _killing(words, n, mover.tmp)
        for m in re.finditer(r"^SUBMITTED (\S+)", r.stderr, re.M):
            submitted.extend(m.group(1).split(","))
        assert _moving(zk, topic) <= 1, r.stderr  # the cap: one move to broker 3 at a time
        if r.returncode == -signal.SIGKILL:
            k, name = re.findall(r"^KILLED (\d+) (\S+)", r.stderr, re.M)[-1]
            killed_at.append((int(k), name))
        else:
            assert r.returncode == 4, r.stderr
            assert "2 moving" not in r.stderr and "3 moving" not in r.stderr, r.stderr
        return r

    every = sorted(f"{topic}-{p}" for p in range(3))
    n = 1
    for _ in range(40):
        r = run(n)
        if sorted(set(submitted)) == every:
            break  # every move submitted: on to the final step
        n = n + 1 if r.returncode == -signal.SIGKILL else 1  # dies one write later, or again from the first
    assert sorted(set(submitted)) == every, r.stderr
    wait_until(lambda: not reassigning(zk, topic), timeout=300, message="the last move ended")
    final = [run(n).stderr for n in (1, 2, 3)]
    assert killed_at[-3:] == [(1, "replace"), (2, "clear"), (3, "delete")], final
    last = run_cli(
        *words, env={k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}, cwd=mover.tmp
    )
    assert last.returncode == 0 and "No plan is stored in the cluster" in last.stderr, last.stderr
    # each move submitted exactly once (a kill between the mark and the submit: the next step submits it)
    assert sorted(submitted) == every, submitted
    names = [name for _, name in killed_at]
    assert {(1, "replace"), (2, "replace")} <= set(killed_at) and {"throttles", "submit"} <= set(names)
    _as_planned_and_clean(zk, topic, sent, consume_all)


def ten_steppers_until_done(words: list[str], cwd: Any, started: list[str], one_at_most: Any) -> None:
    """Ten `verify` steppers at once, again and again until one ends the plan: each exits 0 or 4, none says
    two moves run (the cap or the batch size is one), `one_at_most()` holds after each round; the moves each
    said it started (or submitted again) are added to `started`."""

    def ten() -> bool:
        procs = [
            subprocess.Popen([PYTHON, "-m", "reassign_cli", *words], env=ENV, cwd=cwd, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
            for _ in range(10)
        ]  # fmt: skip
        codes = []
        for p in procs:
            _, err = p.communicate(timeout=500)
            assert p.returncode in (0, 4), err
            assert not re.search(r"\b[2-9] moving", err), err
            for m in re.finditer(r"^(?:Started|Submitted again) .*?\d+ moves?: (\S+)", err, re.M):
                started.extend(m.group(1).split(","))
            codes.append(p.returncode)
        assert one_at_most()
        return 0 in codes

    wait_until(ten, timeout=1000, interval=1, message="the stored plan done")


def test_ten_verify_steppers_at_once(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any
) -> None:
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    started: list[str] = [f"{topic}-0"]
    ten_steppers_until_done(words, mover.tmp, started, lambda: _moving(zk, topic) <= 1)
    assert sorted(started) == sorted(f"{topic}-{p}" for p in range(3))  # each started once, none lost
    _as_planned_and_clean(zk, topic, sent, consume_all)


def test_the_target_broker_stopped_mid_plan_holds_then_carries_on(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any
) -> None:
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    env = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    with cluster.broker_stopped(3):
        for _ in range(2):  # twice: the hold is said again by every step, and nothing starts
            held = run_cli(*words, env=env, cwd=mover.tmp)
            assert held.returncode == 4, held.stderr
            lines = [line for line in held.stderr.splitlines() if line.startswith("held: ")]
            assert len(lines) == 1 and "broker 3 is not registered" in lines[0], held.stderr
            assert "Started" not in held.stderr, held.stderr
    _steps_until_done(run_cli, words, mover.tmp)
    assert not reassigning(zk, topic)
    _as_planned_and_clean(zk, topic, sent, consume_all)


def test_a_zookeeper_session_expiry_mid_step(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any
) -> None:
    """Steps whose ZooKeeper session is expired right after each of their writes (lease, mark, throttles,
    submit, release; at the end clear and delete): kazoo opens a new session and the step goes on; then
    plain steps until done."""
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    submitted: list[str] = [f"{topic}-0"]
    expired: set[str] = set()
    for _ in range(3):
        r = _killing(words, "expire:1,2,3,4,5,6", mover.tmp)
        assert r.returncode in (0, 4) and "Traceback" not in r.stderr, r.stderr
        expired.update(re.findall(r"^EXPIRED \d+ (\S+)", r.stderr, re.M))
        for m in re.finditer(r"^SUBMITTED (\S+)", r.stderr, re.M):
            submitted.extend(m.group(1).split(","))
        assert _moving(zk, topic) <= 1, r.stderr
    assert {"replace", "throttles", "submit"} <= expired, expired
    plain = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}

    def step() -> bool:
        r = run_cli(*words, env=plain, cwd=mover.tmp)
        assert r.returncode in (0, 4) and "2 moving" not in r.stderr, r.stderr
        for m in re.finditer(r"^(?:Started|Submitted again) .*?\d+ moves?: (\S+)", r.stderr, re.M):
            submitted.extend(m.group(1).split(","))
        return r.returncode == 0

    wait_until(step, timeout=600, interval=1, message="the stored plan done")
    _as_planned_and_clean(zk, topic, sent, consume_all)


def _broker_pid(cluster: Any, broker_id: int) -> int:
    from tests import clusters

    status = clusters.script("status", directory=cluster.directory).stdout
    return int(re.search(rf"^broker-{broker_id}\s+running pid (\d+)", status, re.M).group(1))  # type: ignore[union-attr]


def _held_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("held: ")]


def test_the_controller_killed_9_mid_move(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any, monkeypatch: Any
) -> None:
    """The controller broker killed -9 while the detached plan's first move copies (throttled slowly): the next
    step holds (the controller changed, and the dead broker's partitions), one line; with the broker back,
    the plan ends done."""
    from tests.integration import test_step_zk
    from tests.integration.reassign_support import get_json

    monkeypatch.setattr(test_step_zk, "RATE", "20000")  # partition 0's ~1 MB: about a minute
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    plain = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    controller = get_json(zk, "/controller")["brokerid"]
    assert _moving(zk, topic) == 1
    cluster.stopped.add(controller)  # restarted by the session's end if this test fails before it does
    os.kill(_broker_pid(cluster, controller), signal.SIGKILL)
    try:
        wait_until(
            lambda: (get_json(zk, "/controller") or {}).get("brokerid", controller) != controller,
            timeout=120,
            message="another broker became the controller (the killed one's session expired)",
        )
        held = run_cli(*words, env=plain, cwd=mover.tmp)
        assert held.returncode == 4 and "Started" not in held.stderr, held.stderr
        lines = _held_lines(held.stderr)
        assert len(lines) == 1 and "controller" in lines[0], held.stderr
    finally:
        cluster.start_broker(controller)
    wait_until(lambda: controller in cluster.registered_brokers(), timeout=120, message="the broker back")
    _steps_until_done(run_cli, words, mover.tmp)
    _as_planned_and_clean(zk, topic, sent, consume_all)


def test_a_partition_under_min_isr_outside_the_plan_holds_then_carries_on(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any
) -> None:
    """A topic outside the plan (replication 3, min.insync.replicas 3) loses broker 2 from its ISR: broker 2,
    not one of the plan's target brokers, is stopped. Its replicas are then offline too: the step is run
    with `--ignore-health offline-replicas`, deliberately, so that the line names the min ISR hold first.
    While it holds, no queued move starts; with broker 2 back, plain steps end the plan."""
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    outside = make_topic({0: [1, 2, 3]}, messages=5, configs={"min.insync.replicas": "3"})
    plain = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    wait_until(lambda: not reassigning(zk, topic), timeout=300, message="the first move ended")
    with cluster.broker_stopped(2):
        held = run_cli(*words, "--ignore-health", "offline-replicas", env=plain, cwd=mover.tmp)
        assert held.returncode == 4 and "Started" not in held.stderr, held.stderr
        lines = _held_lines(held.stderr)
        assert len(lines) == 1, held.stderr
        assert lines[0].startswith(
            f"held: partition {outside}-0 is under min.insync.replicas (2 in sync of 3)"
        )
        assert "0 moving, 2 queued" in lines[0], held.stderr
        assert not reassigning(zk, topic)
    _steps_until_done(run_cli, words, mover.tmp)
    _as_planned_and_clean(zk, topic, sent, consume_all)
    assert sorted(consume_all(outside)) == sorted(f"{outside}-value-{i}".encode() for i in range(5))


def test_a_rolling_restart_of_every_broker_during_a_detached_plan(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any, monkeypatch: Any
) -> None:
    """Brokers 1, 2 and 3 stopped and started one by one while verify processes step the detached plan
    (its first move throttled slowly, so the restarts fall in the middle of it): the plan ends done, nothing
    lost. A step while a broker is down holds or exits with an error line (the next one goes on); never a
    traceback, never two moves at once."""
    import threading

    from tests.integration import test_step_zk

    monkeypatch.setattr(test_step_zk, "RATE", "20000")  # partition 0's ~1 MB: about a minute
    topic, sent, words = _detach(cluster, zk, make_topic, mover, run_cli)
    plain = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    seen: list[subprocess.CompletedProcess[str]] = []
    moving: list[int] = []
    done = threading.Event()

    def stepping() -> None:
        while not done.is_set():
            r = run_cli(*words, env=plain, cwd=mover.tmp)
            seen.append(r)
            moving.append(_moving(zk, topic))
            if r.returncode == 0:
                return
            done.wait(1)

    stepper = threading.Thread(target=stepping, daemon=True)
    stepper.start()
    try:
        for b in cluster.broker_ids:
            with cluster.broker_stopped(b):
                pass
    finally:
        done.set()
        stepper.join(timeout=400)
    assert not stepper.is_alive()
    for r in seen:
        assert "Traceback" not in r.stderr and "2 moving" not in r.stderr, r.stderr
        assert r.returncode in (0, 4) or r.stderr.startswith("Error: "), r.stderr
    assert max(moving, default=0) <= 1
    if not any(r.returncode == 0 for r in seen):
        _steps_until_done(run_cli, words, mover.tmp)
    _as_planned_and_clean(zk, topic, sent, consume_all)


def test_on_under_min_isr_cancel_cancels_only_that_move(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any, consume_all: Any
) -> None:
    """`execute --detach --on-under-min-isr cancel`: a topic of replication 2 with min.insync.replicas 2,
    both partitions moving from [1, 2] to [1, 3] one at a time (partition 0 with about 3 MB, slowly). Broker
    2 (not a target) stopped while partition 0 moves puts both under min ISR: the next step cancels that
    running move alone (it
    reverts to [1, 2]), saves its target to a rollback file and starts nothing. With broker 2 back the
    other move runs; the last step clears the throttles, deletes the stored plan and exits 5 (the cancelled
    partition is not as planned)."""
    import json

    from tests.integration.reassign_support import (
        FOLLOWER_RATE,
        FOLLOWER_REPLICAS,
        LEADER_RATE,
        LEADER_REPLICAS,
        await_idle,
        config,
        get_json,
        produce,
    )
    from tests.integration.test_step_zk import HEAD, OPERATOR_RATE, _flags, _forget, _pasted

    topic = make_topic({0: [1, 2], 1: [1, 2]}, configs={"min.insync.replicas": "2"})
    sent = produce(cluster.bootstrap, topic, 0, 3000) + produce(cluster.bootstrap, topic, 1, 10)
    plan = mover.plan("isr.json", {(topic, p): [1, 3] for p in range(2)})
    mover.plans.append((plan, [topic]))
    mover.finally_do.append(lambda: _forget(zk))
    await_idle(zk)
    plain = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    first = run_cli(
        "execute", "--reassignment-json-file", plan, *_flags(cluster), "--max-moves-per-broker", "1",
        "--throttle", "10000", "--detach", "--on-under-min-isr", "cancel",
        "--rollback-file", str(mover.tmp / "rb.json"), env=plain, cwd=mover.tmp,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    words = _pasted(first.stdout)
    p = 0

    def big_moving() -> bool:
        doc = get_json(zk, f"/brokers/topics/{topic}")
        if doc.get("adding_replicas", {}).get("0"):
            return True
        s = run_cli(*words, env=plain, cwd=mover.tmp)  # partition 1 (small) went first: one more step
        assert s.returncode == 4, s.stderr
        return False

    wait_until(big_moving, timeout=300, interval=1, message="partition 0 moving")
    with cluster.broker_stopped(2):
        r = run_cli(*words, env=plain, cwd=mover.tmp)
        assert r.returncode == 4 and "Started" not in r.stderr, r.stderr
        line = re.findall(rf"^Cancelled \(under min.insync.replicas\) 1 move: {topic}-{p}; their targets saved to (\S+)$",
                          r.stderr, re.M)  # fmt: skip
        assert len(line) == 1, r.stderr
        saved = json.loads((mover.tmp / line[0]).read_text())
        assert saved == {
            "version": 1,
            "partitions": [{"topic": topic, "partition": p, "replicas": [1, 3], "log_dirs": ["any", "any"]}],
        }
        doc = get_json(zk, f"/brokers/topics/{topic}")
        assert doc["partitions"][str(p)] == [1, 2] and not doc.get("adding_replicas", {}).get(str(p)), doc
    last: list[Any] = []

    def step() -> bool:
        s = run_cli(*words, env=plain, cwd=mover.tmp)
        last[:] = [s]
        assert s.returncode in (4, 5) and "Cancelled" not in s.stderr and "2 moving" not in s.stderr, s.stderr
        return s.returncode == 5

    wait_until(step, timeout=600, interval=1, message=lambda: f"the stored plan's end: {last[0].stderr}")
    assert "The stored plan is done" in last[0].stderr, last[0].stderr
    assert not reassigning(zk, topic) and not zk.exists(HEAD)
    doc = get_json(zk, f"/brokers/topics/{topic}")
    assert doc["partitions"] == {str(p): [1, 2], str(1 - p): [1, 3]}
    tcfg = config(zk, "topics", topic) or {}
    assert (
        LEADER_REPLICAS not in tcfg
        and FOLLOWER_REPLICAS not in tcfg
        and tcfg.get("min.insync.replicas") == "2"
    )
    for b in (1, 2):
        assert not {LEADER_RATE, FOLLOWER_RATE} & set(config(zk, "brokers", b) or {})
    assert (config(zk, "brokers", 3) or {}).get(FOLLOWER_RATE) == OPERATOR_RATE
    assert LEADER_RATE not in (config(zk, "brokers", 3) or {})
    assert sorted(consume_all(topic)) == sorted(sent)
