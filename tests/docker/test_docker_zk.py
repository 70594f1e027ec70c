"""The compose cluster in ZooKeeper mode (docker-compose.yml through scripts/docker): the env file,
the network rules, a throttled move with a broker container stopped mid-move, the tool's own image, and
scripts/ci-dry-run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import Cluster
from tests.docker import support
from tests.docker.conftest import docker_checked
from tests.helpers import PYTHON, REPO, read_env_file

# The names scripts/cluster writes in ZooKeeper mode (scripts/_cluster.py write_env), read by hand.
ZK_ENV_NAMES = {
    "KAFKA_REASSIGN_ZOOKEEPER", "KAFKA_BOOTSTRAP", "CLUSTER_ZK_HOSTS", "CLUSTER_ZK_CHROOT", "CLUSTER_ZK_PORT",
    "CLUSTER_BROKER_IDS", "CLUSTER_BROKER_PORTS", "CLUSTER_BROKER_1", "CLUSTER_BROKER_2", "CLUSTER_BROKER_3",
    "CLUSTER_RACKS", "CLUSTER_DIR", "CLUSTER_KAFKA_VERSION", "CLUSTER_MODE", "KAFKA_TOOLS_CLASSPATH", "CLUSTER_LOG_DIRS",
}  # fmt: skip


LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, and ::ffff:127.0.0.1 (Java)


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp and tcp6 write them) of the listening sockets on port."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, _, hexport = local.rpartition(":")
            if state == "0A" and int(hexport, 16) == port:
                out.add(addr)
    return out


def test_env_file_has_the_names_of_scripts_cluster(docker_up: tuple[Path, dict[str, str]]) -> None:
    directory, env = docker_up
    assert set(env) == ZK_ENV_NAMES
    assert env["CLUSTER_MODE"] == "zk" and env["CLUSTER_KAFKA_VERSION"] == "3.9.2"
    assert env["CLUSTER_RACKS"] == "r1,r2,r3" and env["CLUSTER_ZK_CHROOT"] == "/kafka"
    assert env["KAFKA_REASSIGN_ZOOKEEPER"] == f"127.0.0.1:{env['CLUSTER_ZK_PORT']}/kafka"
    assert env["CLUSTER_DIR"] == str(directory)
    # the brokers' log.dirs as they name them, inside their containers (docker-compose.yml)
    dirs = "/var/lib/kafka/d0,/var/lib/kafka/d1"
    assert env["CLUSTER_LOG_DIRS"] == f"1:{dirs};2:{dirs};3:{dirs}"


def test_brokers_racks_and_loopback_only(cluster: Cluster, zk: Any) -> None:
    ids = sorted(int(i) for i in zk.get_children("/brokers/ids"))
    assert ids == [1, 2, 3]
    regs = {i: json.loads(zk.get(f"/brokers/ids/{i}")[0]) for i in ids}
    assert {i: r["rack"] for i, r in regs.items()} == {1: "r1", 2: "r2", 3: "r3"}
    assert {i: r["endpoints"] for i, r in regs.items()} == {
        i: [f"PLAINTEXT://{cluster.bootstrap_for(i)}"] for i in ids
    }
    # every listener binds 127.0.0.1 only (0100007F in /proc/net/tcp), and docker made no bridge
    zk_port = int(cluster.zk_hosts.rpartition(":")[2])
    for port in [zk_port, *cluster.broker_ports.values()]:
        found = listening_addresses(port)
        assert found and found <= LOOPBACK, (port, found)
    assert not Path("/sys/class/net/docker0").exists()


def test_throttled_move_with_a_broker_container_stopped_mid_move(
    cluster: Cluster, make_topic: Any, tmp_path: Path
) -> None:
    topic = make_topic({0: [1, 2]})
    conn = {"KAFKA_REASSIGN_ZOOKEEPER": cluster.zookeeper}
    support.move_with_broker_stopped(
        topic,
        cluster.bootstrap,
        conn,
        tmp_path,
        lambda: cluster.stop_broker(3),
        lambda: cluster.start_broker(3),
    )


def test_the_tools_image_generates_what_the_venv_generates(cluster: Cluster, make_topic: Any) -> None:
    docker_checked("images", directory=cluster.directory)
    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]})
    args = ["generate", "--topic", topic, "--broker-list", "1,2,3", "--seed", "7", "--format", "json"]
    conn = {"KAFKA_REASSIGN_ZOOKEEPER": cluster.zookeeper}
    image = support.in_image(*args, env=conn)
    venv = support.run_cli(*args, env=conn)
    assert image.returncode == venv.returncode == 0, image.stderr + venv.stderr
    assert image.stdout == venv.stdout
    doc = json.loads(image.stdout)
    assert {p["partition"] for p in doc["proposed"]["partitions"]} == {0, 1, 2, 3}


def test_the_spark_image_plans_byte_for_byte_what_the_venvs_local_engine_plans(
    cluster: Cluster, make_topic: Any
) -> None:
    docker_checked("images", "--spark", directory=cluster.directory)
    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3], 4: [2, 1], 5: [3, 2]})
    args = ["generate", "--topic", topic, "--broker-list", "1,2,3", "--seed", "11"]
    conn = {"KAFKA_REASSIGN_ZOOKEEPER": cluster.zookeeper}
    for fmt in ("text", "json"):
        spark = support.in_image(
            *args, "--format", fmt, "--engine", "spark", "--spark-master", "local[2]",
            env=conn, image=support.TOOL_SPARK_IMAGE,
        )  # fmt: skip
        local = support.run_cli(*args, "--format", fmt, "--engine", "local", env=conn)
        assert spark.returncode == local.returncode == 0, spark.stderr + local.stderr
        assert spark.stdout == local.stdout
        assert spark.stderr == local.stderr  # the summary too
    doc = json.loads(spark.stdout)
    assert {p["partition"] for p in doc["proposed"]["partitions"]} == set(range(6))
    # the image's Python (minor), pyspark and Java (major) are the venv's
    probe = "import sys, pyspark; print(sys.version_info[:2], pyspark.__version__)"
    image = subprocess.run(
        [support.DOCKER, "run", "--rm", "--network", "host", "--entrypoint", "python3",
         support.TOOL_SPARK_IMAGE, "-c", probe],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    venv = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, timeout=300)
    assert image.returncode == 0 and image.stdout == venv.stdout, image.stderr
    java = [support.DOCKER, "run", "--rm", "--network", "host", "--entrypoint", "java"]
    in_image = subprocess.run([*java, support.TOOL_SPARK_IMAGE, "-version"], capture_output=True, text=True)
    on_host = subprocess.run(["java", "-version"], capture_output=True, text=True)
    assert java_major(in_image.stderr) == java_major(on_host.stderr) >= 17


def java_major(version_output: str) -> int:
    """17 from `openjdk version "17.0.15" 2025-04-15`."""
    return int(version_output.split('"')[1].split(".")[0])


def ci_dry_run(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in read_env_file(cluster.directory / "env").items() if k == "CLUSTER_DIR"}
    return subprocess.run(
        [str(REPO / "scripts" / "ci-dry-run"), *args],
        env={**os.environ, **env, "CI_DRY_RUN_PYTHON": PYTHON},
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def test_ci_dry_run_writes_the_report_and_fails_on_a_broken_limit(cluster: Cluster, tmp_path: Path) -> None:
    topic = f"ci-{tmp_path.name}"[:60]
    # six partitions on brokers 1 and 2 only: a balanced plan over 1,2,3 must copy replicas to broker 3
    desc = {"topics": [{"name": topic, "assignment": {str(p): [1, 2] for p in range(6)}, "messages": 300}]}
    (tmp_path / "topics.json").write_text(json.dumps(desc))
    art = tmp_path / "artifacts"
    common = ["--topics", str(tmp_path / "topics.json"), "--artifacts", str(art), "--broker-list", "1,2,3"]
    ok = ci_dry_run(cluster, *common, "--max-copies", "1000", "--seed", "3")
    assert ok.returncode == 0, ok.stderr
    for name in ("snapshot.json", "report.md", "report.html", "proposed.json", "execute-dry-run.txt"):
        assert (art / name).stat().st_size > 0, name
    limits = json.loads((art / "limits.json").read_text())
    assert limits["ok"] is True
    copies = limits["figures"]["copies"]["value"]
    assert copies >= 1 and limits["figures"]["bytes_copied"]["value"] > 0
    broken = ci_dry_run(cluster, *common, "--max-copies", str(copies - 1), "--seed", "3")
    assert broken.returncode == 3, broken.stderr
    assert json.loads((art / "limits.json").read_text())["broken"] == [
        f"copies: {copies} > limit {copies - 1}"
    ]
