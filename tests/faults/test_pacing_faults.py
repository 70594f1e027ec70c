"""Faults of a paced execute (--max-moves-per-broker, through the admin API), on the fault suite's own
cluster: kill -9 in mid-window then --resume; a target broker down while its move is in the window (the
move is reported stuck, the window holds: issue 25's health guards apply to the foreground window, a loop
over ops/step.step; everything completes once it returns); a partition under min ISR outside the plan
(held, nothing starts, then carried on). Each ends in assert_recovered: no throttle key of ours, replicas as
planned, nothing lost."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from tests.faults.support import FAST, RECORDS, SLOW, Child, assert_recovered
from tests.helpers import wait_until
from tests.integration.reassign_support import Mover, await_idle, produce
from tests.integration.test_pacing import watch_moves

RESUMED = "1000000"  # B/s: each 3 MB move takes seconds, long enough for the watcher to see the window


def _child(cluster: Any, mover: Mover, plan: Any, *args: str) -> Child:
    if not any(p == plan for p, _ in mover.plans):
        mover.plans.append((plan, sorted({t for t, _ in _targets(plan)})))
    return Child(
        "",  # the admin API alone (KAFKA_REASSIGN_ZOOKEEPER empty: not set)
        mover.tmp,
        *("execute", "--reassignment-json-file", plan, "--bootstrap-server", cluster.bootstrap),
        *("--poll-interval", "0.5", *args),
    )


def _targets(plan: Any) -> list[tuple[str, int]]:
    return [(e["topic"], e["partition"]) for e in json.loads(plan.read_text())["partitions"]]


def test_11_paced_run_killed_in_mid_window_resumes(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({p: [1] for p in range(3)})
    values = [v for p in range(3) for v in produce(cluster.bootstrap, topic, p, RECORDS)]
    targets = {(topic, p): [3] for p in range(3)}
    plan = mover.plan("move.json", targets)
    await_idle(zk)
    child = _child(cluster, mover, plan, "--max-moves-per-broker", "1", "--throttle", SLOW)
    child.wait_for_line("1 moving, 2 queued")  # one move in the window (broker 1 leads all three)
    kept = plan.with_name(plan.name + ".pacing.json")
    assert json.loads(kept.read_text())["max_moves_per_broker"] == 1
    child.kill9()

    # The same plan again with --resume and no cap: the cap kept beside the plan holds (polled all along:
    # never more than one move on a broker). It waits for the move that runs, then starts the rest one at
    # a time, and removes every throttle at the end.
    stop, peaks, samples = threading.Event(), Counter[int](), list[int]()
    watcher = threading.Thread(
        target=watch_moves, args=(cluster.bootstrap, stop, peaks, samples), daemon=True
    )
    watcher.start()
    try:
        child = _child(cluster, mover, plan, "--resume", "--throttle", RESUMED)
        assert child.finish() == 0, child.stderr
    finally:
        stop.set()
        watcher.join(timeout=30)
    assert f"Resuming with --max-moves-per-broker 1, as kept in {kept}" in child.stderr
    assert "Waiting for the batch already running" in child.stderr
    started = [line for line in child.out.splitlines() if line.startswith("Successfully started")]
    assert len(started) == 2, child.out  # one line per move added, never the running one again
    assert samples and max(peaks.values()) == 1, (peaks, child.stderr)
    assert not kept.exists()  # the plan ran to its end: nothing left to resume
    assert_recovered(zk, cluster.broker_ids, targets, {topic: values}, consume_all)


def test_12_target_broker_down_in_the_window_is_stuck_while_others_proceed(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    # The target broker stopped is not the controller (a controller change is another fault, test_5).
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    target = max(b for b in (1, 2, 3) if b != controller)
    x, y = sorted(b for b in (1, 2, 3) if b != target)
    big = make_topic({0: [x]})
    small = make_topic({p: [y] for p in range(3)})
    values = {big: produce(cluster.bootstrap, big, 0, RECORDS)}
    values[small] = [v for p in range(3) for v in produce(cluster.bootstrap, small, p, 20)]
    targets = {(big, 0): [target], **{(small, p): [x] for p in range(3)}}
    plan = mover.plan("move.json", targets)
    await_idle(zk)
    # cap 2: big-0 (x -> target) and one small move (y -> x) at a time share broker x
    child = _child(
        cluster, mover, plan, "--max-moves-per-broker", "2", "--throttle", SLOW, "--stuck-after", "3"
    )
    child.wait_for_line(
        "moving,"
    )  # the first moves are in: big-0 and small-0 (as the stdout says at the end)
    with cluster.broker_stopped(target):
        child.wait_for_line("is stuck", timeout=90)
        line = next(x for x in child.err if "is stuck" in x)
        assert f"{big}-0" in line and f"broker {target}" in line and "kafka-reassign cancel" in line, line
        # issue 25 item 5: a broker of the plan not registered holds the window (it used to keep serving
        # broker x's other moves: only stored steps held); said once, in the step's words
        child.wait_for_line(f"held: broker {target} is not registered", timeout=120)
    # the target broker is back: speed the stuck move up (same file, --throttle: only the rates change); all ends
    r = mover.cli(
        "execute",
        "--reassignment-json-file",
        plan,
        "--bootstrap-server",
        cluster.bootstrap,
        "--zookeeper",
        "",
        "--throttle",
        FAST,
    )
    assert r.returncode == 0, r.stderr
    assert child.finish() == 0, child.stderr
    first = next(x for x in child.out.splitlines() if x.startswith("Successfully started"))
    assert first.endswith(",".join(sorted([f"{big}-0", f"{small}-0"]))), child.out
    assert sum(f"held: broker {target} is not registered" in x for x in child.err) == 1, child.stderr
    assert_recovered(zk, cluster.broker_ids, targets, values, consume_all)


def test_a_foreground_window_holds_while_a_partition_is_under_min_isr_then_carries_on(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    """Issue 25 items 4-5: the foreground `execute --max-moves-per-broker` steps its plan with ops/step.step,
    so a partition at or under min.insync.replicas holds it as it holds a detached plan. A topic outside
    the plan (replicas 1,2,3; min.insync.replicas 3) loses broker 2, which the plan (broker 1 -> 3) does not
    name: the run starts nothing while it holds (several steps, one held line), and carries the plan to its
    end once broker 2 is back."""
    from tests.integration.reassign_support import reassigning

    topic = make_topic({p: [1] for p in range(3)})
    values = {topic: [v for p in range(3) for v in produce(cluster.bootstrap, topic, p, 20)]}
    outside = make_topic({0: [1, 2, 3]}, configs={"min.insync.replicas": "3"})
    values[outside] = produce(cluster.bootstrap, outside, 0, 5)
    targets = {(topic, p): [3] for p in range(3)}
    plan = mover.plan("move.json", targets)
    await_idle(zk)
    with cluster.broker_stopped(2):
        # offline replicas (broker 2's) are ignored deliberately: the line names the min ISR hold first
        child = _child(
            cluster, mover, plan, "--max-moves-per-broker", "1", "--throttle", FAST,
            "--ignore-health", "offline-replicas",
        )  # fmt: skip
        child.wait_for_line(f"held: partition {outside}-0 is under min.insync.replicas")
        # a progress line again PLAIN_EVERY later (steps every 0.5 s meanwhile, each held): none started a move
        wait_until(
            lambda: sum("0 moving, 3 queued" in x for x in child.err) >= 2 or child.proc.poll() is not None,
            timeout=120,
            interval=0.1,
            message=lambda: child.stderr,
        )
        assert child.proc.poll() is None, child.stderr
        assert not reassigning(zk, topic)
        assert not any("Successfully started" in x for x in child.err)
    assert child.finish() == 0, child.stderr
    assert sum("held: " in x for x in child.err) == 1, child.stderr
    assert child.out.count("Successfully started") == 3, child.out  # one move at a time, each once
    gone = mover.cli("verify", "--bootstrap-server", cluster.bootstrap, "--zookeeper", "")
    assert gone.returncode == 0 and "No plan is stored in the cluster" in gone.stderr, gone.stderr
    assert_recovered(zk, cluster.broker_ids, targets, values, consume_all)
