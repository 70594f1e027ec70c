"""The fault table of docs/faults.md, each row on the real cluster: the fault, what the operator sees
(one line, an exit code, what to run next), the documented recovery, and the end state it must reach
(assert_recovered: no trigger, no record, no throttle key of ours, replicas as planned, nothing lost)."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.faults.support import FAST, RECORDS, SLOW, Child, assert_recovered, error_lines
from tests.helpers import wait_until
from tests.integration.reassign_support import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    REASSIGN,
    RECORD,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
    reassigning,
    relevant_diff,
)

SETUP = "/reassign_cli/executing"  # an execute's setup mark


def _moving_topic(
    cluster: Any, make_topic: Any, replicas: list[int], records: int = RECORDS
) -> tuple[str, list[bytes]]:
    topic = make_topic({0: replicas})
    return topic, produce(cluster.bootstrap, topic, 0, records)


def _child(cluster: Any, mover: Mover, *args: Any, module: str = "reassign_cli") -> Child:
    """The CLI in the background; the plan it runs is handed to the mover, whose teardown speeds up,
    waits for and verifies whatever is left moving if the test fails half-way."""
    plan = args[args.index("--reassignment-json-file") + 1]
    if not any(p == plan for p, _ in mover.plans):
        topics = sorted({e["topic"] for e in json.loads(plan.read_text())["partitions"]})
        mover.plans.append((plan, topics))
    return Child(cluster.zookeeper, mover.tmp, *args, module=module)


def _reconnected(zk: Any) -> None:
    """The test's own raw client after an outage longer than its session: kazoo opens a new session;
    wait until it answers again."""
    wait_until(lambda: zk.exists("/") is not None, timeout=60, ignore=(Exception,), message="zk back")


def _finish(mover: Mover, plan: Any) -> None:
    """The recovery's last step for a move left running: the same execute again with --resume at a higher
    rate (it speeds the move up and waits for it, or, if it has finished meanwhile, skips it: never a
    second move), then verify (throttles off)."""
    r = mover.execute(plan, "--throttle", FAST, "--resume", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    mover.wait_complete(plan)
    v = mover.verify(plan)
    assert v.returncode == 0, v.stdout + v.stderr


def test_1_kill9_after_the_throttles_before_the_trigger(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic, values = _moving_topic(cluster, make_topic, [1, 2], records=200)
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    child = _child(cluster, mover, "execute", "--reassignment-json-file", plan, "--throttle", SLOW)
    # The throttles are written, then execute pauses (1 s) before it creates the trigger: kill it there.
    wait_until(
        lambda: zk.exists(RECORD) and FOLLOWER_REPLICAS in (config(zk, "topics", topic) or {}),
        timeout=60,
        interval=0.01,
        message="the throttles written",
    )
    child.kill9()
    assert not zk.exists(REASSIGN), "killed too late: the trigger exists"

    # What the operator sees: list names the orphaned throttles and says what removes them.
    ls = mover.cli("list")
    assert ls.returncode == 0 and ls.stdout == "No partition reassignments found.\n"
    assert (
        f"throttles set by kafka-reassign are still in place on brokers 1,2,3 and topics {topic}" in ls.stderr
    )
    assert "kafka-reassign verify with the plan removes them" in ls.stderr
    # Recovery, step 1: verify with the plan names the partition as not moved and the orphaned throttles,
    # and removes them.
    v = mover.verify(plan)
    assert v.returncode == 5, v.stdout + v.stderr
    assert (
        f"Warning: throttles set by kafka-reassign were left in place on brokers 1,2,3 and topics {topic} "
        "with nothing reassigning (an interrupted execute?); removing them"
    ) in v.stderr.splitlines()
    assert (
        f"There is no active reassignment of partition {topic}-0, but replica set is 1,2 rather than 3,2."
        in v.stdout
    )
    assert "Clearing broker-level throttles on brokers 1,2,3" in v.stdout
    assert f"Clearing topic-level throttles on topic {topic}" in v.stdout
    assert not zk.exists(RECORD)
    # Step 2: execute again.
    r = mover.execute(plan, "--throttle", FAST, "--wait", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert_recovered(zk, cluster.broker_ids, {(topic, 0): [3, 2]}, {topic: values}, consume_all)


def test_2_kill9_of_execute_wait_in_mid_move(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic, values = _moving_topic(cluster, make_topic, [1, 2])
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    child = _child(
        cluster,
        mover,
        "execute",
        "--reassignment-json-file",
        plan,
        "--throttle",
        SLOW,
        "--wait",
    )
    child.wait_for_line("partitions done")  # the wait loop runs: the move is under way
    assert reassigning(zk, topic)
    child.kill9()

    # The move goes on in the cluster; verify says so (exit 4) and keeps the throttles.
    v = mover.verify(plan)
    assert v.returncode == 4, v.stdout + v.stderr
    assert f"Reassignment of partition {topic}-0 is still in progress." in v.stdout
    assert config(zk, "topics", topic)[FOLLOWER_REPLICAS] == "0:3"
    _finish(mover, plan)
    assert_recovered(zk, cluster.broker_ids, {(topic, 0): [3, 2]}, {topic: values}, consume_all)


def test_3_two_executes_at_once_on_different_plans(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    t1, v1 = _moving_topic(cluster, make_topic, [1, 2])
    t2, v2 = _moving_topic(cluster, make_topic, [2, 3])
    plans = {
        t1: (mover.plan("a.json", {(t1, 0): [3, 2]}), "11111"),
        t2: (mover.plan("b.json", {(t2, 0): [1, 3]}), "22222"),
    }
    await_idle(zk)
    children = {
        t: _child(cluster, mover, "execute", "--reassignment-json-file", p, "--throttle", rate)
        for t, (p, rate) in plans.items()
    }
    codes = {t: c.finish() for t, c in children.items()}
    assert sorted(codes.values()) == [0, 4], {t: c.stderr for t, c in children.items()}
    winner = next(t for t, code in codes.items() if code == 0)
    loser = t2 if winner == t1 else t1
    errors = error_lines(children[loser].stderr)
    assert len(errors) == 1 and "existing partition assignment" in errors[0], children[loser].stderr

    # The loser left nothing of its own, and took nothing of the winner's: the winner's rate is on every
    # broker, its topic is throttled, and the record still holds the winner's prior values.
    wait_until(lambda: reassigning(zk, winner), timeout=30, message="the winner's move started")
    rate = plans[winner][1]
    for b in cluster.broker_ids:
        assert config(zk, "brokers", b)[FOLLOWER_RATE] == rate, (b, config(zk, "brokers", b))
    assert FOLLOWER_REPLICAS in config(zk, "topics", winner)
    assert FOLLOWER_REPLICAS not in (config(zk, "topics", loser) or {})
    record = get_json(zk, RECORD)
    assert winner in record["topics"] and loser not in record["topics"], record

    _finish(mover, plans[winner][0])
    # Recovery for the loser: run it again once the cluster is idle.
    r = mover.execute(plans[loser][0], "--throttle", FAST, "--wait", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    planned = {(t1, 0): [3, 2], (t2, 0): [1, 3]}
    assert_recovered(zk, cluster.broker_ids, planned, {t1: v1, t2: v2}, consume_all)


def test_4_zookeeper_down_during_execute_wait(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic, values = _moving_topic(cluster, make_topic, [1, 2])
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    child = _child(
        cluster,
        mover,
        *("execute", "--reassignment-json-file", plan, "--throttle", SLOW, "--wait", "--poll-interval", "1"),
    )
    child.wait_for_line("partitions done")
    with cluster.zookeeper_stopped():
        time.sleep(15)  # the outage itself: 15 s, longer than the ZooKeeper session timeout of 10 s
        assert child.proc.poll() is None, child.stderr  # --wait rides it out
    _reconnected(zk)
    # speed the move up (or, if it finished meanwhile, skip it) and wait with it
    r = mover.execute(plan, "--throttle", FAST, "--resume", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert child.finish() == 0, child.stderr
    # Both waited for the same move: whichever cleared first names what it cleared, the other finds
    # nothing of ours left and says so (a clear prints only what it really took off).
    outs = [child.out, r.stdout]
    assert sum("Clearing broker-level throttles on brokers 1,2,3" in o for o in outs) == 1, outs
    assert sum("nothing cleared" in o for o in outs) == 1, outs
    assert_recovered(zk, cluster.broker_ids, {(topic, 0): [3, 2]}, {topic: values}, consume_all)


def test_5_controller_stopped_in_mid_move(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    controller = get_json(zk, "/controller")["brokerid"]
    a, b = (x for x in cluster.broker_ids if x != controller)
    topic, values = _moving_topic(cluster, make_topic, [a])
    plan = mover.plan("move.json", {(topic, 0): [b]})
    await_idle(zk)
    child = _child(
        cluster,
        mover,
        *("execute", "--reassignment-json-file", plan, "--throttle", SLOW, "--wait", "--poll-interval", "1"),
    )
    child.wait_for_line("partitions done")
    with cluster.broker_stopped(controller):
        wait_until(
            lambda: (get_json(zk, "/controller") or {}).get("brokerid", controller) != controller,
            timeout=60,
            message="another broker became the controller",
        )
        assert child.proc.poll() is None, child.stderr
    r = mover.execute(plan, "--throttle", FAST, "--resume", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert child.finish() == 0, child.stderr
    assert_recovered(zk, cluster.broker_ids, {(topic, 0): [b]}, {topic: values}, consume_all)


def test_6_verify_while_zookeeper_is_down(cluster: Any, make_topic: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2]})
    plan = mover.plan("move.json", {(topic, 0): [1, 2]})
    with cluster.zookeeper_stopped():
        v = mover.verify(plan, "--zk-timeout", "3")
    _reconnected(zk)
    assert v.returncode == 1, v.stdout + v.stderr
    assert v.stdout == ""
    assert error_lines(v.stderr) == [f"Error: cannot connect to ZooKeeper at {cluster.zk_hosts} within 3s"]
    # Recovery: verify again once ZooKeeper is back.
    v = mover.verify(plan)
    assert v.returncode == 0, v.stdout + v.stderr
    assert f"Reassignment of partition {topic}-0 is completed." in v.stdout


def test_7_a_target_broker_down_before_execute(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, zk_dump: Any, mover: Mover
) -> None:
    topic, values = _moving_topic(cluster, make_topic, [1, 2], records=200)
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    with cluster.broker_stopped(3):
        before = zk_dump(zk)
        r = mover.execute(plan, "--throttle", FAST)
        after = zk_dump(zk)
    assert r.returncode == 3, r.stderr
    assert error_lines(r.stderr) == [
        f"Error: The proposed assignment contains non-existent brokerIDs: 3 (in {topic}-0)"
    ]
    assert relevant_diff(before, after, [topic]) == {}  # nothing written
    assert not list(mover.tmp.glob("rollback-*.json"))
    # Recovery: start the broker, execute again.
    r = mover.execute(plan, "--throttle", FAST, "--wait", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert_recovered(zk, cluster.broker_ids, {(topic, 0): [3, 2]}, {topic: values}, consume_all)


def test_8_batch_run_killed_between_batches_resumes(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2], 1: [1, 2], 2: [1, 2]})
    values = [v for p in range(3) for v in produce(cluster.bootstrap, topic, p, 100)]
    targets = {(topic, 0): [3, 2], (topic, 1): [3, 1], (topic, 2): [2, 3]}
    plan = mover.plan("move.json", targets)
    await_idle(zk)
    args = ("execute", "--reassignment-json-file", plan, "--throttle", FAST, "--batch-size", "1")
    child = _child(cluster, mover, *args, "--poll-interval", "0.5")
    # "Batch 2/3" is printed once batch 1 is complete; batch 2's throttles are then written and execute
    # pauses before its trigger: a kill here lands between batches.
    child.wait_for_line("Batch 2/3")
    child.kill9()
    assert get_json(zk, f"/brokers/topics/{topic}")["partitions"]["0"] == [3, 2]
    wait_until(lambda: not zk.exists(REASSIGN), timeout=60, message="nothing running")

    # Recovery: the same command again; the finished batch is not submitted again.
    r = mover.cli(*args, "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert f"Skipping 1 partition already at its target ({topic}-0)" in r.stderr
    assert "Batch 1/2: 1 partition" in r.stderr and "Batch 2/2: 1 partition" in r.stderr
    started = [line for line in r.stdout.splitlines() if line.startswith("Successfully started")]
    assert started == [  # Kafka's singular for one partition
        f"Successfully started partition reassignment for {topic}-1",
        f"Successfully started partition reassignment for {topic}-2",
    ]
    assert_recovered(zk, cluster.broker_ids, targets, {topic: values}, consume_all)


def test_9_batch_run_killed_in_mid_batch_resumes(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2], 1: [1, 2]})
    values = produce(cluster.bootstrap, topic, 0, RECORDS) + produce(cluster.bootstrap, topic, 1, 100)
    targets = {(topic, 0): [3, 2], (topic, 1): [3, 1]}
    plan = mover.plan("move.json", targets)
    await_idle(zk)
    args = ("execute", "--reassignment-json-file", plan, "--batch-size", "1", "--poll-interval", "0.5")
    child = _child(cluster, mover, *args, "--throttle", SLOW)
    child.wait_for_line("partitions done")  # batch 1 (partition 0, slow) is moving
    child.kill9()
    assert reassigning(zk, topic)

    # Re-running the same command (here faster) waits for the batch still moving, then does the rest.
    child = _child(cluster, mover, *args, "--throttle", FAST)
    child.wait_for_line(f"Waiting for the batch already running ({topic}-0)")
    assert child.finish() == 0, child.stderr
    assert f"Successfully started partition reassignment for {topic}-1" in child.out
    assert_recovered(zk, cluster.broker_ids, targets, {topic: values}, consume_all)


def test_10_a_stuck_move_is_reported(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic, values = _moving_topic(cluster, make_topic, [1, 2])
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    child = _child(
        cluster,
        mover,
        *(
            "execute",
            "--reassignment-json-file",
            plan,
            "--throttle",
            SLOW,
            "--wait",
            "--poll-interval",
            "0.5",
        ),
        *("--stuck-after", "3"),
    )
    child.wait_for_line("partitions done")
    with cluster.broker_stopped(3):
        child.wait_for_line("is stuck", timeout=60)
        v = mover.verify(plan)
        assert v.returncode == 4
        assert f"{topic}-0: broker 3 is not registered" in v.stderr
    line = next(x for x in child.err if "is stuck" in x)
    assert f"{topic}-0" in line and "broker 3" in line and "kafka-reassign cancel" in line, line
    _finish(mover, plan)
    assert child.finish() == 0, child.stderr
    assert_recovered(zk, cluster.broker_ids, {(topic, 0): [3, 2]}, {topic: values}, consume_all)


def test_12_execute_paused_past_its_session(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    """B is paused (SIGSTOP: a GC pause, a suspended laptop) between its throttle writes and its trigger,
    longer than its ZooKeeper session: its setup mark goes with the session, and A runs meanwhile. B,
    resumed, finds it lost the mark: exit 4 with one line, only its own writes taken back, A intact."""
    import signal

    import psutil

    ta, va = _moving_topic(cluster, make_topic, [1, 2])
    tb, vb = _moving_topic(cluster, make_topic, [2, 3])
    plan_a = mover.plan("a.json", {(ta, 0): [3, 2]})
    plan_b = mover.plan("b.json", {(tb, 0): [1, 3]})
    await_idle(zk)
    b = _child(
        cluster,
        mover,
        "execute",
        "--reassignment-json-file",
        plan_b,
        "--throttle",
        "22222",
        "--zk-timeout",
        "4",
        module="tests.faults.stop_before_trigger",  # B stops itself right before its trigger
    )
    try:
        stopped = lambda: psutil.Process(b.proc.pid).status() == psutil.STATUS_STOPPED  # noqa: E731
        wait_until(stopped, timeout=120, interval=0.05, message="B stopped before its trigger")
        assert zk.exists(SETUP) is not None  # B's throttle transaction created its mark
        assert zk.exists(REASSIGN) is None
        wait_until(lambda: zk.exists(SETUP) is None, timeout=60, message="B's session expired")
        a = mover.execute(plan_a, "--throttle", "11111")
        assert a.returncode == 0, a.stderr
    finally:
        b.proc.send_signal(signal.SIGCONT)
    assert b.finish() == 4, b.stderr
    errors = error_lines(b.stderr)
    assert len(errors) == 1 and "lost its setup mark" in errors[0], b.stderr
    # A intact: its rate on every broker, its topic throttled, its priors recorded; B's topic left clean.
    wait_until(lambda: reassigning(zk, ta), timeout=30, message="A's move started")
    for broker in cluster.broker_ids:
        assert config(zk, "brokers", broker)[FOLLOWER_RATE] == "11111", (
            broker,
            config(zk, "brokers", broker),
        )
    assert FOLLOWER_REPLICAS in config(zk, "topics", ta)
    assert FOLLOWER_REPLICAS not in (config(zk, "topics", tb) or {})
    record = get_json(zk, RECORD)
    assert ta in record["topics"] and tb not in record["topics"], record
    assert get_json(zk, REASSIGN) is None or all(
        e["topic"] == ta for e in get_json(zk, REASSIGN)["partitions"]
    )

    _finish(mover, plan_a)  # A's verify ends clean
    r = mover.execute(plan_b, "--throttle", FAST, "--wait", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    planned = {(ta, 0): [3, 2], (tb, 0): [1, 3]}
    assert_recovered(zk, cluster.broker_ids, planned, {ta: va, tb: vb}, consume_all)


def test_13_leader_broker_down_when_execute_wait_clears_over_the_admin_api(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    """Issue 30 item 26 on a ZooKeeper-mode cluster driven through the admin API only
    (KAFKA_REASSIGN_BOOTSTRAP): the leader broker of the moving partition, which leaves it, is stopped in
    mid-move, so it is down when `execute --wait` clears (a broker's config goes through that broker). --wait
    waits for it and clears it once it is back: exit 0 and nothing of ours left. (--zookeeper writes the
    broker's config znode whether it runs or not: no wait there.)"""
    topic, values = _moving_topic(cluster, make_topic, [1, 2])
    planned = {(topic, 0): [3, 2]}
    plan = mover.plan("gone.json", planned)
    mover.plans.append((plan, [topic]))
    child = Child(
        None, mover.tmp, "execute", "--reassignment-json-file", plan, "--throttle", "300000", "--wait",
        "--poll-interval", "0.5", bootstrap=cluster.bootstrap_for(2),
    )  # fmt: skip
    try:
        child.wait_for_line("partitions done")
        cluster.stop_broker(1)
        child.wait_for_line("Waiting for broker 1 to register again", timeout=300)
        assert LEADER_RATE in (config(zk, "brokers", 1) or {})  # still set while it is down
        cluster.start_broker(1)
        assert child.finish() == 0, child.stderr
    finally:
        if 1 in cluster.stopped:
            cluster.start_broker(1)
    assert_recovered(zk, cluster.broker_ids, planned, {topic: values}, consume_all)
