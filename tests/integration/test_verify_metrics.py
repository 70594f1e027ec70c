"""verify --metrics-file on the real cluster: a throttled move read in progress (partitions, bytes still to
copy, our throttle rates, exit code 4), then complete (exit 0, nothing left to copy, throttles gone); the
file parsed with prometheus_client's text parser. The bytes are bracketed by the replicas' sizes that the
brokers report to DescribeLogDirs, asked here through kafka-python directly."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.helpers import wait_until
from tests.integration.kraft_support import replica_sizes
from tests.integration.reassign_support import FAST, Mover, await_idle, produce, reassigning, write_plan
from tests.unit.test_metrics import assert_complete, parse, plan_key, rates, statuses

SLOW = "10000"  # B/s: the 5 MB below take minutes, so the move is seen in progress
RECORDS = 5000


def test_metrics_in_progress_then_complete(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any
) -> None:
    topic = make_topic({0: [1, 2]})
    produce(cluster.bootstrap, topic, 0, RECORDS)
    plan = mover.plan("move.json", {(topic, 0): [2, 3]})
    prom = mover.tmp / "verify.prom"
    await_idle(zk)
    assert mover.execute(plan, "--throttle", SLOW).returncode == 0

    def verify() -> Any:
        # ZooKeeper mode, with the brokers' admin API for the sizes
        return run_cli(
            "verify", "--reassignment-json-file", str(plan), "--metrics-file", str(prom),
            env={"KAFKA_REASSIGN_BOOTSTRAP": cluster.bootstrap}, cwd=str(mover.tmp),
        )  # fmt: skip

    wait_until(lambda: reassigning(zk, topic), timeout=30, message="the controller started the move")
    before = time.time()
    v = verify()
    after_sizes = replica_sizes(cluster.bootstrap, topic)
    assert v.returncode == 4, v.stdout + v.stderr
    got = parse(prom.read_text())
    key = plan_key(plan)
    status = statuses(got)
    assert status == {"complete": 0, "in_progress": 1, "not_as_planned": 0, "queued": 0}
    # Still to copy: the leader's log less what broker 3 held when verify looked (it only grows since).
    remaining = got["kafka_reassign_verify_bytes_remaining"][key]
    full = max(after_sizes[1], after_sizes[2])
    assert full - after_sizes.get(3, 0) <= remaining <= full and remaining > 0
    rate = rates(got)
    assert rate == {(str(b), kind): int(SLOW) for b in (1, 2, 3) for kind in ("leader", "follower")}
    assert got["kafka_reassign_verify_exit_code"] == {key: 4}
    assert before <= got["kafka_reassign_verify_last_run_timestamp_seconds"][key] <= time.time()
    assert [p.name for p in mover.tmp.glob("verify.prom*")] == ["verify.prom"]

    # Faster, then complete: verify clears the throttles and says so in the file.
    assert mover.execute(plan, "--throttle", FAST).returncode == 0
    wait_until(lambda: not reassigning(zk, topic), timeout=240, interval=1, message="the move finished")
    v = verify()
    assert v.returncode == 0, v.stdout + v.stderr
    assert_complete(prom.read_text(), key)


def test_two_plans_named_alike_write_distinct_series(
    cluster: Any, make_topic: Any, tmp_path: Path, run_cli: Any
) -> None:
    """generate --output-dir names every plan proposed.json: two such plans (here both already in place, so
    verify changes nothing) verified into two files give two distinct sets of series."""
    topic = make_topic({0: [1, 2], 1: [2, 3]})
    seen = []
    for d, p, reps in (("one", 0, [1, 2]), ("two", 1, [2, 3])):
        (tmp_path / d).mkdir()
        plan = write_plan(tmp_path / d / "proposed.json", {(topic, p): reps})
        prom = tmp_path / f"{d}.prom"
        v = run_cli(
            "verify", "--reassignment-json-file", str(plan), "--metrics-file", str(prom),
            "--metrics-label", "cluster=zk",
        )  # fmt: skip
        assert v.returncode == 0, v.stdout + v.stderr
        got = parse(prom.read_text())
        key = plan_key(plan, cluster="zk")
        assert got["kafka_reassign_verify_exit_code"] == {key: 0}
        assert statuses(got) == {"complete": 1, "in_progress": 0, "not_as_planned": 0, "queued": 0}
        seen.append(key)
    assert seen[0] != seen[1]
