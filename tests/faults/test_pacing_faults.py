"""Faults of a paced execute (--max-moves-per-broker, through the admin API), on the fault suite's own
cluster: kill -9 in mid-window then --resume; a target broker down while its move is in the window (the
move is reported stuck, the window keeps serving the other brokers, everything completes once it returns).
Each ends in assert_recovered: no throttle key of ours, replicas as planned, nothing lost."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from tests.faults.support import FAST, RECORDS, SLOW, Child, assert_recovered
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
        # the window keeps serving broker x's other moves
        child.wait_for_line("1 moving, 0 queued, 3 done", timeout=120)
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
    assert_recovered(zk, cluster.broker_ids, targets, values, consume_all)
