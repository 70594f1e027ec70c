"""generate --balance bytes disk by disk (issue 27, items 2 and 5) on a real JBOD cluster (`scripts/cluster
up --jbod`: each broker's two log dirs tmpfs mounts of their own, 64 MiB and 96 MiB; ZooKeeper mode, Kafka
3.9.2), a private cluster ($CLUSTER_DIR-plan-disks) brought down at the end (its tmpfs unmounted).

Twelve 1 MB partitions (RF 1): six on broker 1, all in its first dir, six on broker 2, all in its second
(placed by Kafka's own kafka-reassign-partitions), broker 3 empty. Live generate plans disk by disk: every
replica of a changed partition has a log dir (never "any"), broker 1's full first dir gets moves within the
broker. Kafka's own kafka-reassign-partitions executes the plan's log_dirs (the oracle), and Kafka's
kafka-log-dirs then says every replica is in the dir the plan named, and every dir's bytes are within the
band the plan stated around its goal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cluster_dir
from tests.helpers import read_env_file, wait_until
from tests.integration.kraft_support import cli
from tests.integration.test_cluster_jbod import configured_log_dirs, jbod_script
from tests.integration.test_snapshot_disks import client, kafka_log_dirs, kafka_tool

SIZES = "64M,96M"
TOLERANCE = 0.05


def run_plan(bootstrap: str, plan: Path, timeout: int = 240) -> None:
    """Kafka's own tool executes `plan` (replicas and log_dirs) and verifies it done."""
    args = ("--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan))
    run = kafka_tool("reassign-partitions", *args, "--execute", "--timeout", "60000")
    assert run.returncode == 0, run.stdout + run.stderr

    def done() -> bool:
        verify = kafka_tool("reassign-partitions", *args, "--verify")
        return (
            verify.returncode == 0
            and "is still in progress" not in verify.stdout
            and ("is complete" in verify.stdout)
        )

    wait_until(done, timeout=timeout, message="kafka-reassign-partitions --verify: every move done")


def where(oracle: dict[int, dict[str, dict[str, Any]]], topic: str) -> dict[tuple[int, int], str]:
    """(partition, broker) -> the dir holding the current replica, as kafka-log-dirs says."""
    return {(p, b): path for b, dirs in oracle.items() for path, d in dirs.items()
            for (t, p, future) in d["partitions"] if t == topic and not future}  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_disk_plan_executed_by_kafkas_tool(tmp_path: Path) -> None:
    d = Path(f"{cluster_dir().resolve()}-plan-disks")
    try:
        up = jbod_script("up", "--jbod", directory=d, sizes=SIZES)
        assert up.returncode == 0, up.stderr
        bootstrap = read_env_file(d / "env")["KAFKA_BOOTSTRAP"]
        dirs = configured_log_dirs(d)
        with client(bootstrap) as a:
            assignment = {p: [1 if p < 6 else 2] for p in range(12)}
            topic, _ = a.make_topic("plan", assignment, messages=400, size=2500)
            skew = tmp_path / "skew.json"
            skew.write_text(json.dumps({"version": 1, "partitions": [
                {"topic": topic, "partition": p, "replicas": r, "log_dirs": [dirs[r[0]][0 if p < 6 else 1]]}
                for p, r in assignment.items()]}))  # fmt: skip
            run_plan(bootstrap, skew)
            before = where(kafka_log_dirs(bootstrap), topic)
            assert all(before[(p, 1)] == dirs[1][0] for p in range(6)), before
            assert all(before[(p, 2)] == dirs[2][1] for p in range(6, 12)), before

            gen = cli(bootstrap, "generate", "--topic", topic, "--strategy", "balanced", "--balance", "bytes",
                      "--seed", "1", "--format", "json", "--tolerance", str(TOLERANCE))  # fmt: skip
            assert gen.returncode == 0, gen.stderr
            doc = json.loads(gen.stdout)
            stats, proposed = doc["stats"], doc["proposed"]["partitions"]
            old = {p: r for p, r in assignment.items()}
            changed = [e for e in proposed if sorted(e["replicas"]) != sorted(old[e["partition"]])]
            assert changed and any(3 in e["replicas"] for e in changed)
            for e in changed:  # a dir for every replica, one of its broker's (never "any")
                assert all(x in dirs[b] for b, x in zip(e["replicas"], e["log_dirs"], strict=True)), e
            assert stats["bytes_moved_within_brokers"] > 0 and stats["moves_within_brokers"] > 0
            assert stats["bytes_copied_between_brokers"] == stats["bytes_copied"] > 0

            plan = tmp_path / "proposed.json"
            plan.write_text(json.dumps(doc["proposed"]))
            run_plan(bootstrap, plan)

            oracle = kafka_log_dirs(bootstrap)
            after = where(oracle, topic)
            for e in proposed:  # each replica where the plan put it
                for b, x in zip(e["replicas"], e["log_dirs"], strict=True):
                    if x != "any":
                        assert after[(e["partition"], b)] == x, (e, after)
            sizes = {p: s for dirs_ in oracle.values() for dd in dirs_.values()
                     for (t, p, fut), s in dd["partitions"].items() if t == topic and not fut}  # fmt: skip
            largest = max(sizes.values())
            util_goal = stats["disks_goal"]
            for b, paths in dirs.items():
                for path in paths:
                    held = sum(
                        s
                        for (t, _, fut), s in oracle[b][path]["partitions"].items()
                        if t == topic and not fut
                    )
                    name = f"{b}:{path}"
                    st = os.statvfs(path)
                    goal = util_goal * st.f_blocks * st.f_frsize
                    predicted = stats["disk_bytes_after"][name]
                    # what Kafka holds is what the plan predicted, within a few index pages per partition
                    assert abs(held - predicted) <= 12 * 64 * 1024, (name, held, predicted)
                    slack = max(TOLERANCE * goal, largest) + 12 * 64 * 1024
                    assert abs(held - goal) <= slack, (name, held, goal)
            assert stats["disks_within_tolerance"] is True
    finally:
        down = jbod_script("down", directory=d)
        assert down.returncode == 0, down.stderr
