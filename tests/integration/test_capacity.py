"""`snapshot --bootstrap-server` records each broker's disk capacity (DescribeLogDirs v4+, KIP-827) on the
default cluster (Kafka 3.9, ZooKeeper mode, the brokers beside ZooKeeper) and on KRaft (Kafka 4.x, the
admin API alone); the numbers are what the brokers' filesystems report.

The expected values come from the filesystem, not from Kafka or our code: each broker's log dirs are read
from its own server properties, and each one's total and usable bytes taken from os.statvfs (f_blocks
and f_bavail times f_frsize, what the JVM's FileStore.getTotalSpace / getUsableSpace read). By default
each log dir counts as its own disk (issue 30, item 20); with --shared-log-dirs the log dirs on one
volume (os.stat's st_dev) count it once. scripts/cluster puts both log dirs of a broker on one
filesystem: by default the tool counts it twice and says so, naming --shared-log-dirs. Total bytes must
match to 0.1%; usable bytes move with whatever else writes to the disk (other clusters share it), so
within 2% of the total. Then `generate --balance bytes` plans by utilization from that snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import KAFKA4_VERSION
from tests.conftest import Cluster
from tests.integration.kraft_support import cli


def _log_dirs(directory: Path, broker: int) -> list[str]:
    """The broker's log.dirs, from its own properties file (scripts/cluster writes config/broker-N)."""
    for line in (directory / "config" / f"broker-{broker}.properties").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("log.dirs", "log.dir"):
            return [d.strip() for d in value.split(",") if d.strip()]
    raise AssertionError(f"no log.dirs for broker {broker} in {directory}")


def _filesystem(dirs: list[str], shared: bool = True) -> tuple[int, int]:
    """(total, usable) bytes over the distinct volumes of `dirs` (`shared`), or over the dirs each."""
    volumes: dict[object, tuple[int, int]] = {}
    for d in dirs:
        st = os.statvfs(d)
        volumes[os.stat(d).st_dev if shared else d] = (st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize)
    return sum(t for t, _ in volumes.values()), sum(u for _, u in volumes.values())


def _one_filesystem(directory: Path, broker: int) -> None:
    """The premise: the cluster's log dirs of a broker are two, on one filesystem."""
    dirs = _log_dirs(directory, broker)
    assert len(dirs) == 2 and len({os.stat(d).st_dev for d in dirs}) == 1, dirs


def _check(
    snap: Path, directory: Path, brokers: list[int], shared: bool = True
) -> dict[int, tuple[int, int]]:
    doc = json.loads(snap.read_text())
    got = {b["id"]: (b["disk_total_bytes"], b["disk_usable_bytes"]) for b in doc["brokers"]}
    assert sorted(got) == brokers, doc["brokers"]
    assert all(b["disk_shared_log_dirs"] is shared for b in doc["brokers"]), doc["brokers"]
    for b in brokers:
        total, usable = _filesystem(_log_dirs(directory, b), shared)
        assert abs(got[b][0] - total) <= 0.001 * total, (b, got[b], total)
        assert abs(got[b][1] - usable) <= 0.02 * total, (b, got[b], usable)
        assert 0 <= got[b][1] <= got[b][0]
    return got


def _plan_by_utilization(run: Any, snap: Path, topic: str) -> None:
    g = run("generate", "--snapshot", snap, "--topic", topic, "--strategy", "balanced", "--balance", "bytes",
            "--seed", "1", "--format", "json")  # fmt: skip
    assert g.returncode == 0, g.stderr
    stats = json.loads(g.stdout)["stats"]
    assert stats["bytes_balanced_by"] == "utilization" and "no disk capacity" not in g.stderr
    assert sorted(stats["disk_capacity_per_broker"]) == ["1", "2", "3"]


def test_zookeeper_mode_records_capacities(
    cluster: Cluster, make_topic: Any, run_cli: Any, tmp_path: Path
) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3]})
    _one_filesystem(cluster.directory, 1)
    snap = tmp_path / "snap.json"
    r = run_cli("snapshot", "-o", str(snap), "--topic", topic, "--bootstrap-server", cluster.bootstrap,
                "--shared-log-dirs")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "3 brokers with disk capacity" in r.stderr and "--shared-log-dirs" not in r.stderr
    _check(snap, cluster.directory, cluster.broker_ids)
    _plan_by_utilization(lambda *a: run_cli(*map(str, a)), snap, topic)


def test_each_log_dir_counts_by_default_and_is_flagged(
    cluster: Cluster, make_topic: Any, run_cli: Any, tmp_path: Path
) -> None:
    """Without --shared-log-dirs each log dir is its own disk: the cluster's one filesystem per broker
    counts twice (what twin disks would give), and stderr names the flag for each broker."""
    topic = make_topic({0: [1, 2]})
    _one_filesystem(cluster.directory, 1)
    snap = tmp_path / "snap.json"
    r = run_cli("snapshot", "-o", str(snap), "--topic", topic, "--bootstrap-server", cluster.bootstrap)
    assert r.returncode == 0, r.stderr
    assert "broker(s) 1, 2, 3: two or more log dirs report the same total and usable bytes" in r.stderr
    assert "give --shared-log-dirs" in r.stderr
    got = _check(snap, cluster.directory, cluster.broker_ids, shared=False)
    one, _ = _filesystem(_log_dirs(cluster.directory, 1))
    assert abs(got[1][0] - 2 * one) <= 0.001 * one


def test_live_generate_reads_capacities(cluster: Cluster, make_topic: Any, run_cli: Any) -> None:
    """generate --balance bytes against the live cluster (ZooKeeper, the brokers beside it) reads the
    capacities as `snapshot` does, and they match the filesystem the same way."""
    topic = make_topic({0: [1, 2], 1: [2, 3]})
    g = run_cli("generate", "--topic", topic, "--strategy", "balanced", "--balance", "bytes", "--seed", "1",
                "--bootstrap-server", cluster.bootstrap, "--format", "json", "--shared-log-dirs")  # fmt: skip
    assert g.returncode == 0, g.stderr
    assert "--shared-log-dirs" not in g.stderr
    stats = json.loads(g.stdout)["stats"]
    assert stats["bytes_balanced_by"] == "utilization"
    for b in cluster.broker_ids:
        total, _ = _filesystem(_log_dirs(cluster.directory, b))
        assert abs(stats["disk_capacity_per_broker"][str(b)] - total) <= 0.001 * total


def test_zookeeper_alone_records_none(
    cluster: Cluster, make_topic: Any, run_cli: Any, tmp_path: Path
) -> None:
    """Without the brokers, no capacity (and no key in the file): generate then balances raw bytes."""
    topic = make_topic({0: [1, 2]})
    snap = tmp_path / "snap.json"
    r = run_cli("snapshot", "-o", str(snap), "--topic", topic)
    assert r.returncode == 0, r.stderr
    assert "disk_total_bytes" not in snap.read_text()


@pytest.mark.slow
def test_kraft_records_capacities(kraft_cluster: Any, tmp_path: Path) -> None:
    from tests.integration.kraft_support import Admin

    c = kraft_cluster(KAFKA4_VERSION)
    a = Admin(c.bootstrap)
    try:
        topic, _ = a.make_topic("cap", {0: [1, 2], 1: [2, 3]}, messages=5)
        snap = tmp_path / "snap.json"
        r = cli(c.bootstrap, "snapshot", "-o", snap, "--topic", topic, "--shared-log-dirs")
        assert r.returncode == 0, r.stderr
        assert "3 brokers with disk capacity" in r.stderr
        _check(snap, c.directory, [1, 2, 3])
        r = cli(c.bootstrap, "snapshot", "-o", snap, "--topic", topic)  # each log dir its own disk
        assert r.returncode == 0 and "give --shared-log-dirs" in r.stderr, r.stderr
        _check(snap, c.directory, [1, 2, 3], shared=False)
        _plan_by_utilization(lambda *args: cli(c.bootstrap, *args), snap, topic)
    finally:
        a.close()
