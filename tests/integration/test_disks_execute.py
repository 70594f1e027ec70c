"""Issue 27's main test, with OUR execute: a disk-granular plan (`generate --balance bytes
--max-disk-utilization`, live) executed by `kafka-reassign execute` (inter-broker throttle, log-dir throttle,
--max-moves-per-disk 1, --wait) and checked by `verify`, on a PRIVATE JBOD cluster (`scripts/cluster up
--jbod`, ZooKeeper mode, Kafka 3.9.2: each broker two tmpfs log dirs of 64 and 96 MiB, state in
$CLUSTER_DIR-disks-exec), brought down at the end (its tmpfs unmounted).

Twelve 1 MB partitions (RF 1): six on broker 1, all in its first dir, six on broker 2, all in its second
(placed by Kafka's own kafka-reassign-partitions), broker 3 empty. The judges, none of them reassign_cli
code: a sampler thread polling DescribeLogDirs (raw kafka-python) all through the execute, each disk's used
bytes (total - usable) against the cap; DescribeLogDirs and Kafka's own kafka-log-dirs for every disk's bytes
at the end, against the plan's per-disk prediction (`disk_bytes_after` in --format json); the records read
back; the brokers' own dynamic config (DescribeConfigs) for the log-dir throttle.

With the same skew, broker 3's larger dir is never chosen when it is offline (unmounted under the stopped
broker; Kafka's kafka-log-dirs says it is) or cordoned (Kafka 4.3.1 KRaft, `cordoned.log.dirs` set with
kafka-configs; DescribeLogDirs v5's IsCordoned says it is), each on a private cluster of its own
($CLUSTER_DIR-disks-offline, $CLUSTER_DIR-disks-cordon, one at a time), and generate names it in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import KAFKA4_VERSION
from tests.conftest import cluster_dir
from tests.helpers import consume_all, read_env_file
from tests.integration.kraft_support import Admin, cli
from tests.integration.test_cluster_jbod import configured_log_dirs, described_log_dirs, jbod_script
from tests.integration.test_logdir_pacing import LOG_DIR_RATE, execute, place, verify
from tests.integration.test_snapshot_disks import break_dir, cordon, cordoned_by_kafka, kafka_log_dirs

SIZES = "64M,96M"
TOLERANCE = 0.05
CAP = 0.2
# what Kafka holds of a partition beyond its records: a few index pages (kafka-log-dirs' sizes count the
# segment files only; the plan's sizes are the same sizes, read before the run)
SLACK = 12 * 64 * 1024


class UsedSampler:
    """DescribeLogDirs of every broker, over and over, in a thread of its own: the highest used fraction
    (total - usable) / total of each disk (broker, dir) seen."""

    def __init__(self, bootstrap: str) -> None:
        from kafka.admin import KafkaAdminClient

        self.client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        self.highest: dict[tuple[int, str], float] = {}
        self.samples = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            for r in self.client.describe_log_dirs():
                for d in r["log_dirs"]:
                    total, usable = d.get("total_bytes", -1), d.get("usable_bytes", -1)
                    if total > 0 and usable >= 0:
                        key = (r["broker"], d["log_dir"])
                        self.highest[key] = max(self.highest.get(key, 0.0), (total - usable) / total)
            self.samples += 1
            self.stop.wait(0.2)

    def __enter__(self) -> UsedSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=60)
        self.client.close()


def held(oracle: dict[int, dict[str, dict[str, Any]]], topic: str) -> dict[str, int]:
    """'broker:dir' -> the bytes of topic's current replicas in it, from Kafka's kafka-log-dirs."""
    return {f"{b}:{path}": sum(s for (t, _, fut), s in d["partitions"].items() if t == topic and not fut)
            for b, dirs in oracle.items() for path, d in dirs.items()}  # fmt: skip


def held_described(bootstrap: str, topic: str) -> dict[str, int]:
    """The same from DescribeLogDirs (raw kafka-python)."""
    return {f"{b}:{path}": sum(p["partition_size"] for t in d["topics"] if t["name"] == topic
                               for p in t["partitions"] if not p["is_future_key"])
            for b, dirs in described_log_dirs(bootstrap).items() for path, d in dirs.items()}  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_disk_plan_executed_by_our_execute(tmp_path: Path) -> None:
    d = Path(f"{cluster_dir().resolve()}-disks-exec")
    try:
        up = jbod_script("up", "--jbod", directory=d, sizes=SIZES)
        assert up.returncode == 0, up.stderr
        env = read_env_file(d / "env")
        bootstrap, zookeeper = env["KAFKA_BOOTSTRAP"], env["KAFKA_REASSIGN_ZOOKEEPER"]
        dirs = configured_log_dirs(d)
        a = Admin(bootstrap)
        try:
            run_the_loop(a, bootstrap, zookeeper, dirs, tmp_path)
        finally:
            a.close()
    finally:
        down = jbod_script("down", directory=d)
        assert down.returncode == 0, down.stderr


def run_the_loop(
    a: Admin, bootstrap: str, zookeeper: str, dirs: dict[int, list[str]], tmp_path: Path
) -> None:
    assignment = {p: [1 if p < 6 else 2] for p in range(12)}
    topic, values = a.make_topic("diskexec", assignment, messages=400, size=2500)
    place(
        bootstrap, tmp_path, topic, {p: (r, [dirs[r[0]][0 if p < 6 else 1]]) for p, r in assignment.items()}
    )
    # broker 3's first disk filled by something not Kafka's up to half a partition below the cap: no replica
    # fits there, though its share of the goal is more than one
    full = dirs[3][0]
    st = os.statvfs(full)
    total, used = st.f_blocks * st.f_frsize, (st.f_blocks - st.f_bavail) * st.f_frsize
    (Path(full) / "filler").write_bytes(b"x" * int(CAP * total - used - 500_000))

    gen = cli(bootstrap, "generate", "--topic", topic, "--strategy", "balanced", "--balance", "bytes", "--seed",
              "1", "--format", "json", "--tolerance", str(TOLERANCE), "--max-disk-utilization", str(CAP))  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    doc = json.loads(gen.stdout)
    stats = doc["stats"]
    assert stats["bytes_moved_within_brokers"] > 0 and stats["bytes_copied_between_brokers"] > 0, stats
    predicted: dict[str, int] = stats["disk_bytes_after"]
    plan = tmp_path / "proposed.json"
    plan.write_text(json.dumps(doc["proposed"]))

    a.alter("brokers", 1, {LOG_DIR_RATE: "777777"})  # the operator's own, to be back exactly at the end
    try:
        with UsedSampler(bootstrap) as sampler:
            r = execute(zookeeper, bootstrap, plan, "--throttle", "5000000", "--replica-alter-log-dirs-throttle",
                        "2000000", "--max-moves-per-disk", "1", "--wait")  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        assert sampler.samples > 0 and len(sampler.highest) == 6, sampler.highest
        assert "at most 1 per disk" in r.stderr, r.stderr
        over = {k: u for k, u in sampler.highest.items() if u > CAP}
        assert not over, (over, sampler.highest)

        v, counts = verify(zookeeper, bootstrap, plan, tmp_path / "m.prom")
        assert v.returncode == 0, v.stdout + v.stderr
        # every replica the plan names a dir for is in it (moved within its broker, or placed on arrival)
        named = sum(x != "any" for e in doc["proposed"]["partitions"] for x in e.get("log_dirs", ()))
        assert named > stats["moves_within_brokers"] > 0, (named, stats)
        assert counts["complete"] == named and counts["in_progress"] == counts["not_moving"] == 0, counts

        oracle, described = held(kafka_log_dirs(bootstrap), topic), held_described(bootstrap, topic)
        assert set(oracle) == set(described) == set(predicted), (oracle, described, predicted)
        for name, want in predicted.items():
            assert abs(oracle[name] - want) <= SLACK, (name, oracle[name], want)
            assert abs(described[name] - want) <= SLACK, (name, described[name], want)
        assert consume_all(bootstrap, topic) == values
        assert a.configs("brokers", 1).get(LOG_DIR_RATE) == "777777"
        for b in (2, 3):
            assert LOG_DIR_RATE not in a.configs("brokers", b)
        for b in (1, 2, 3):
            assert not {k for k in a.configs("brokers", b) if "throttled.rate" in k}
    finally:
        a.alter("brokers", 1, {LOG_DIR_RATE: None})


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_an_offline_dir_never_chosen_and_the_plan_says_why(tmp_path: Path) -> None:
    """Broker 3's larger dir (the one the goal weighs most) made offline under the stopped broker (its tmpfs
    replaced by one whose meta.properties Kafka cannot read), then the same skew: the live plan places
    broker 3's arrivals in its first dir only, and one line on stderr names the offline dir and its error."""
    d = Path(f"{cluster_dir().resolve()}-disks-offline")
    try:
        up = jbod_script("up", "--jbod", directory=d, sizes=SIZES)
        assert up.returncode == 0, up.stderr
        bootstrap = read_env_file(d / "env")["KAFKA_BOOTSTRAP"]
        dirs = configured_log_dirs(d)
        gone = dirs[3][1]
        break_dir(d, 3, gone)
        assert kafka_log_dirs(bootstrap)[3][gone]["error"] is not None  # offline, as Kafka's tool says
        a = Admin(bootstrap)
        try:
            check_offline(a, bootstrap, dirs, tmp_path)
        finally:
            a.close()
    finally:
        down = jbod_script("down", directory=d)
        assert down.returncode == 0, down.stderr


def check_offline(a: Admin, bootstrap: str, dirs: dict[int, list[str]], tmp_path: Path) -> None:
    gone = dirs[3][1]
    assignment = {p: [1 if p < 6 else 2] for p in range(12)}
    topic, _ = a.make_topic("offline", assignment, messages=400, size=2500)
    place(
        bootstrap, tmp_path, topic, {p: (r, [dirs[r[0]][0 if p < 6 else 1]]) for p, r in assignment.items()}
    )
    gen = cli(bootstrap, "generate", "--topic", topic, "--strategy", "balanced", "--balance", "bytes",
              "--seed", "1", "--format", "json", "--tolerance", str(TOLERANCE))  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    proposed = json.loads(gen.stdout)["proposed"]["partitions"]
    to3 = [x for e in proposed for b, x in zip(e["replicas"], e["log_dirs"], strict=True) if b == 3]
    assert to3 and set(to3) == {dirs[3][0]}, proposed
    lines = [x for x in gen.stderr.splitlines() if "no replica placed in" in x]
    assert lines == [
        f"Warning: --balance bytes: no replica placed in 1 log dir(s): broker 3's {gone} "
        "(offline: KAFKA_STORAGE_ERROR)"
    ], gen.stderr


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_cordoned_dir_never_chosen_kraft(tmp_path: Path) -> None:
    """Kafka 4.3.1 in KRaft mode: broker 3's larger dir cordoned (`cordoned.log.dirs`, KIP-1066, set with
    Kafka's own kafka-configs; DescribeLogDirs v5 says IsCordoned), then the same skew: the live plan places
    broker 3's arrivals in its first dir only, and one line on stderr names the cordoned dir."""
    d = Path(f"{cluster_dir().resolve()}-disks-cordon")
    try:
        up = jbod_script(
            "up", "--jbod", "--kraft", "--kafka-version", KAFKA4_VERSION, directory=d, sizes=SIZES
        )
        assert up.returncode == 0, up.stderr
        bootstrap = read_env_file(d / "env")["KAFKA_BOOTSTRAP"]
        dirs = configured_log_dirs(d)
        shut = dirs[3][1]
        a = Admin(bootstrap)
        try:
            assignment = {p: [1 if p < 6 else 2] for p in range(12)}
            topic, _ = a.make_topic("cordon", assignment, messages=400, size=2500)
            where = {p: (r, [dirs[r[0]][0 if p < 6 else 1]]) for p, r in assignment.items()}
            place(bootstrap, tmp_path, topic, where)
            # not cordoned, the plan places some of broker 3's arrivals in that dir
            assert shut in arrivals_on_3(bootstrap, topic)[0]
            cordon(bootstrap, 3, shut)
            assert cordoned_by_kafka(bootstrap)[3] == {dirs[3][0]: False, shut: True}
            to3, gen = arrivals_on_3(bootstrap, topic)
            assert to3 == {dirs[3][0]}, to3
            lines = [x for x in gen.stderr.splitlines() if "no replica placed in" in x]
            assert lines == [
                f"Warning: --balance bytes: no replica placed in 1 log dir(s): broker 3's {shut} "
                "(cordoned.log.dirs)"
            ], gen.stderr
        finally:
            a.close()
            cordon(bootstrap, 3, None)
    finally:
        down = jbod_script("down", directory=d)
        assert down.returncode == 0, down.stderr


def arrivals_on_3(bootstrap: str, topic: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The dirs a live generate names for broker 3's replicas (and the run)."""
    gen = cli(bootstrap, "generate", "--topic", topic, "--strategy", "balanced", "--balance", "bytes", "--seed",
              "1", "--format", "json", "--tolerance", str(TOLERANCE))  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    proposed = json.loads(gen.stdout)["proposed"]["partitions"]
    return {x for e in proposed for b, x in zip(e["replicas"], e["log_dirs"], strict=True) if b == 3}, gen
