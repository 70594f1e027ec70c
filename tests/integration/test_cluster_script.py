"""scripts/cluster on a PRIVATE second cluster (its own CLUSTER_DIR and ports): the shared one is
never touched. One test, because every start costs a few JVMs."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from tests.helpers import CLUSTER_SCRIPT, PYTHON, REPO, read_env_file


def script(*args: str, directory: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUSTER_")}
    env["CLUSTER_DIR"] = str(directory)
    return subprocess.run(
        [str(CLUSTER_SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        stdin=subprocess.DEVNULL,
    )


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


@pytest.mark.slow
def test_private_cluster_up_twice_status_stop_broker_down(tmp_path: Path) -> None:
    from kazoo.client import KazooClient

    d = tmp_path / "cluster"
    try:
        up = script("up", directory=d)
        assert up.returncode == 0, up.stderr
        env = read_env_file(d / "env")
        assert up.stdout == (d / "env").read_text()
        zk_hosts, _, chroot = env["KAFKA_REASSIGN_ZOOKEEPER"].partition("/")
        assert chroot == "kafka" and zk_hosts == env["CLUSTER_ZK_HOSTS"]
        ports = [int(hp.rpartition(":")[2]) for hp in env["KAFKA_BOOTSTRAP"].split(",")]
        zk_port = int(zk_hosts.rpartition(":")[2])
        assert len(set(ports)) == 3 and zk_port not in ports
        if os.environ.get("KAFKA_BOOTSTRAP"):  # not the shared cluster's ports
            assert env["KAFKA_BOOTSTRAP"] != os.environ["KAFKA_BOOTSTRAP"]

        zk = KazooClient(hosts=env["KAFKA_REASSIGN_ZOOKEEPER"], timeout=10)
        zk.start(timeout=15)
        try:
            regs = {
                int(i): json.loads(zk.get(f"/brokers/ids/{i}")[0]) for i in zk.get_children("/brokers/ids")
            }
            assert zk.exists("/controller") is not None
        finally:
            zk.stop()
            zk.close()
        assert {i: r["rack"] for i, r in regs.items()} == {1: "r1", 2: "r2", 3: "r3"}
        # two log dirs per broker
        for i in (1, 2, 3):
            props = (d / "config" / f"broker-{i}.properties").read_text()
            dirs = ",".join(str(d.resolve() / "data" / f"broker-{i}" / f"d{k}") for k in (0, 1))
            assert f"log.dirs={dirs}\n" in props

        again = script("up", directory=d)
        assert again.returncode == 0 and "already up" in again.stderr, again.stderr
        assert read_env_file(d / "env") == env

        status = script("status", directory=d)
        assert status.returncode == 0, status.stdout
        for i, rack in ((1, "r1"), (2, "r2"), (3, "r3")):
            assert f"registered broker {i} rack={rack}" in status.stdout

        pids = {p.stem: int(p.read_text()) for p in (d / "pids").glob("*.pid")}
        assert set(pids) == {"zookeeper", "broker-1", "broker-2", "broker-3"}
        assert all(pid_alive(p) for p in pids.values())

        stop = script("stop-broker", "2", directory=d)
        assert stop.returncode == 0, stop.stderr
        assert not pid_alive(pids["broker-2"]) and not listening(ports[1])
        partial = script("status", directory=d)
        assert partial.returncode == 1 and re.search(r"^broker-2\s+stopped", partial.stdout, re.M)
    finally:
        down = script("down", directory=d)
    assert down.returncode == 0, down.stderr
    assert not [name for name, pid in pids.items() if pid_alive(pid)]
    assert not [p for p in [zk_port, *ports] if listening(p)]
    assert not (d / "env").exists()
    assert script("status", directory=d).returncode == 3
    # down again is harmless
    assert script("down", directory=d).returncode == 0


def test_cluster_fixture_fails_rather_than_skips_when_the_cluster_cannot_start(tmp_path: Path) -> None:
    test_file = tmp_path / "test_needs_cluster.py"
    test_file.write_text("def test_uses_cluster(cluster):\n    assert cluster.broker_ids\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLUSTER_", "KAFKA_"))}
    env.update(CLUSTER_DIR=str(tmp_path / "cluster"), JAVA="/bin/false")  # every JVM exits at once
    r = subprocess.run(
        [
            PYTHON,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            str(test_file),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "could not start the cluster" in r.stdout and "1 error" in r.stdout
    assert "skipped" not in r.stdout and "passed" not in r.stdout
    assert not (tmp_path / "cluster" / "env").exists()
