"""scripts/cluster on PRIVATE clusters (their own CLUSTER_DIR and ports): the shared one is never
touched. The ZooKeeper-mode script test starts its own cluster; the secure and KRaft tests use the
session's extra clusters (tests/conftest.py: secure_cluster, kraft_cluster), checked with raw clients
(kazoo, kafka-python, Kafka 4.x's own kafka-reassign-partitions), no reassign_cli code."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.clusters import (
    KAFKA4_VERSION,
    KRAFT_VERSIONS,
    ExtraCluster,
    kafka_tool,
    read_jaas_client,
    read_properties,
    script,
)
from tests.conftest import Cluster
from tests.helpers import PYTHON, REPO, load_cluster_script, read_env_file, unique_name, wait_until


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

        # ZooKeeper down for a while, brokers kept running; back on the same data, every broker
        # registered again (same session or a new one) and a controller elected.
        c = Cluster.from_env(d, env)
        with c.zookeeper_stopped():
            assert not listening(zk_port) and not pid_alive(pids["zookeeper"])
            assert all(pid_alive(pids[f"broker-{i}"]) for i in (1, 2, 3))
            assert script("status", directory=d).returncode == 1
            assert script("stop-zookeeper", directory=d).returncode == 0  # harmless when stopped
            wait_until(lambda: broker_logs_mention_zk_loss(d), timeout=60, message="brokers noticing")
        assert script("start-zookeeper", directory=d).returncode == 0  # harmless when running
        assert registered(env["KAFKA_REASSIGN_ZOOKEEPER"]) == {1: "r1", 2: "r2", 3: "r3"}
        assert topic_works(env["KAFKA_BOOTSTRAP"], env["KAFKA_REASSIGN_ZOOKEEPER"])

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


HOLDER = """
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=30)
zk.start(timeout=15)
zk.create(sys.argv[2], b"", ephemeral=True)
sid, passwd = zk.client_id
print(sid, passwd.hex(), flush=True)
time.sleep(600)
"""


def test_a_registration_no_client_holds_the_session_of_is_not_taken_as_back(cluster: Cluster) -> None:
    """start-zookeeper's wait (scripts/_cluster.sessions_resumed), on the real ZooKeeper: an ephemeral znode
    whose session lives on in the server with no client holding it (its holder killed -9: as a broker
    that has not yet resumed, or never will, after a ZooKeeper restart) is not back; once a new connection
    resumes that session it is."""
    cl = load_cluster_script()
    port = int(cluster.zk_hosts.rpartition(":")[2])
    path = "/" + unique_name("t-owner")
    holder = subprocess.Popen(
        [PYTHON, "-c", HOLDER, cluster.zk_hosts, path],
        stdout=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    resumed = None
    try:
        assert holder.stdout is not None
        sid_text, passwd = holder.stdout.readline().split()
        sid = int(sid_text)
        assert cl.sessions_resumed(port, [path]) is True
        assert cl.sessions_resumed(port, [path + "-none"]) is False  # no znode
        holder.kill()
        holder.wait(timeout=30)
        wait_until(lambda: not cl.sessions_resumed(port, [path]), timeout=30, message="the connection gone")
        with cl.zk_session(port) as mini:
            assert mini.owner(path) == sid  # the session, and its znode, still there
        resumed = KazooClient(hosts=cluster.zk_hosts, client_id=(sid, bytes.fromhex(passwd)), timeout=30)
        resumed.start(timeout=15)
        assert resumed.client_id[0] == sid
        assert cl.sessions_resumed(port, [path]) is True
    finally:
        holder.kill()
        holder.wait(timeout=30)
        if resumed is not None:
            resumed.stop()  # closes the session: its znode goes with it
            resumed.close()


def test_cluster_fixture_fails_rather_than_skips_when_the_cluster_cannot_start(tmp_path: Path) -> None:
    test_file = tmp_path / "test_needs_cluster.py"
    test_file.write_text("def test_uses_cluster(cluster):\n    assert cluster.broker_ids\n")
    # (not REASSIGN_TEST_HALF either: scripts/test's private half would deselect this shared-cluster test)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CLUSTER_", "KAFKA_", "REASSIGN_TEST_HALF"))
    }
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


def registered(zookeeper: str, client: Any = None) -> dict[int, str]:
    """{broker id: rack} from /brokers/ids (a new plain kazoo client unless one is given)."""
    zk = client or KazooClient(hosts=zookeeper, timeout=10)
    if client is None:
        zk.start(timeout=15)
    try:
        return {
            int(i): json.loads(zk.get(f"/brokers/ids/{i}")[0])["rack"]
            for i in zk.get_children("/brokers/ids")
        }
    finally:
        if client is None:
            zk.stop()
            zk.close()


def broker_logs_mention_zk_loss(d: Path) -> bool:
    """Every broker's ZooKeeper client logged the lost connection (ZooKeeper's ClientCnxn warning)."""
    return all(
        "Closing socket connection. Attempting reconnect" in text
        for text in (
            (d / "logs" / f"broker-{i}" / "server.log").read_text(errors="replace") for i in (1, 2, 3)
        )
    )


def topic_works(bootstrap: str, zookeeper: str | None = None) -> bool:
    """Create a 2-partition RF 2 topic with an explicit assignment, produce 10 records (acks=all) and
    read them all back; deleted afterwards. With `zookeeper`, its partitions' state znodes are checked."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

    topic = unique_name("t-cluster")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics({topic: {"assignments": {0: [1, 2], 1: [2, 3]}}}, timeout_ms=30000)
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=30000)
        try:
            sent = [producer.send(topic, f"v{i}".encode(), partition=i % 2) for i in range(10)]
            producer.flush(timeout=60)
            for f in sent:
                f.get(timeout=60)
        finally:
            producer.close(timeout=10)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        try:
            tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            records: list[Any] = []

            def all_read() -> bool:
                for batch in consumer.poll(timeout_ms=500).values():
                    records.extend(batch)
                return len(records) >= 10

            wait_until(all_read, timeout=60, message=lambda: f"10 records in {topic}, got {len(records)}")
            values = sorted(r.value for r in records)
        finally:
            consumer.close()
        assert values == sorted(f"v{i}".encode() for i in range(10))
        if zookeeper:
            # Every replica comes into the ISR. Not at once: a replica the controller does not count as
            # live when the topic is made (a broker re-registering after a ZooKeeper restart) starts
            # outside it and joins once it has caught up (CI run of stop 39 read [2] for [2, 3]).
            zk = KazooClient(hosts=zookeeper, timeout=10)
            zk.start(timeout=15)
            states: list[Any] = []

            def in_sync() -> bool:
                states[:] = [
                    json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0]) for p in (0, 1)
                ]
                return [sorted(s["isr"]) for s in states] == [[1, 2], [2, 3]]

            try:
                wait_until(
                    in_sync, timeout=60, message=lambda: f"both replicas of each partition in sync: {states}"
                )
            finally:
                zk.stop()
                zk.close()
        return True
    finally:
        with contextlib.suppress(Exception):  # clean-up only: best effort
            admin.delete_topics([topic], timeout_ms=30000)
        admin.close()


# --------------------------------------------------------------------------- secure ZooKeeper


def test_secure_cluster_tls_sasl_acls(secure_cluster: ExtraCluster) -> None:
    from kafka import KafkaAdminClient
    from kazoo.exceptions import NoAuthError
    from kazoo.handlers.threading import KazooTimeoutError

    c = secure_cluster
    env = c.env
    assert env["CLUSTER_MODE"] == "secure"
    assert c.jaas_file and c.tls_config_file and c.zookeeper and c.zk_hosts
    assert env["KAFKA_REASSIGN_ZOOKEEPER"] == f"{env['CLUSTER_ZK_HOSTS']}/kafka"
    tls = read_properties(c.tls_config_file)
    assert tls["zookeeper.ssl.client.enable"] == "true"
    assert tls["zookeeper.clientCnxnSocket"] == "org.apache.zookeeper.ClientCnxnSocketNetty"
    assert tls["zookeeper.ssl.keystore.type"] == tls["zookeeper.ssl.truststore.type"] == "PEM"
    keystore = Path(tls["zookeeper.ssl.keystore.location"]).read_text()
    assert "BEGIN ENCRYPTED PRIVATE KEY" in keystore and "BEGIN CERTIFICATE" in keystore
    user, _ = read_jaas_client(c.jaas_file)
    assert user == env["CLUSTER_ZK_SASL_USER"]

    # a plain (non-TLS) client gets no session on the ZooKeeper port
    plain = KazooClient(hosts=c.zookeeper, timeout=3)
    with pytest.raises(KazooTimeoutError):
        plain.start(timeout=5)
    plain.close()

    # a topic made through the brokers, so that its znodes are broker-created too
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
    topic = unique_name("t-secure")
    admin.create_topics({topic: {"assignments": {0: [1, 2]}}}, timeout_ms=30000)
    try:
        zk = c.kazoo()  # TLS + SASL DIGEST-MD5 from the JAAS / TLS files
        try:
            assert registered(c.zookeeper, zk) == {1: "r1", 2: "r2", 3: "r3"}
            wait_until(lambda: zk.exists(f"/brokers/topics/{topic}/partitions/0/state"), timeout=60)
            paths = [
                "/", "/brokers", "/brokers/ids", "/brokers/ids/1", "/brokers/topics", "/controller",
                "/controller_epoch", "/admin", "/admin/delete_topics", "/config", "/config/topics",
                "/config/changes", "/config/brokers", "/isr_change_notification", "/cluster/id",
                f"/brokers/topics/{topic}", f"/brokers/topics/{topic}/partitions/0/state", f"/config/topics/{topic}",
            ]  # fmt: skip
            sasl_all = ("sasl", user, 31)
            world_read = ("world", "anyone", 1)
            for path in paths:
                acls = {(a.id.scheme, a.id.id, a.perms) for a in zk.get_acls(path)[0]}
                assert sasl_all in acls and acls <= {sasl_all, world_read}, (path, acls)
        finally:
            zk.stop()
            zk.close()

        # TLS without SASL: a session, world-readable znodes, and no write anywhere Kafka created
        anon = c.kazoo(authenticated=False)
        try:
            assert sorted(anon.get_children("/brokers/ids")) == ["1", "2", "3"]
            data, _ = anon.get(f"/config/topics/{topic}")
            with pytest.raises(NoAuthError):
                anon.set(f"/config/topics/{topic}", data)
            with pytest.raises(NoAuthError):
                anon.create("/admin/noauth-probe", ephemeral=True)
            with pytest.raises(NoAuthError):
                anon.delete(f"/brokers/topics/{topic}/partitions/0/state")
        finally:
            anon.stop()
            anon.close()
    finally:
        with contextlib.suppress(Exception):  # clean-up only: best effort
            admin.delete_topics([topic], timeout_ms=30000)
        admin.close()

    status = script("status", directory=c.directory)
    assert status.returncode == 0 and status.stdout.startswith("mode: secure"), status.stdout
    # each broker also listens with SASL_SSL; the env file names those listeners and their client config
    sasl = dict(zip(c.broker_ids, env["CLUSTER_SASL_SSL_BOOTSTRAP"].split(","), strict=True))
    assert env["KAFKA_REASSIGN_BOOTSTRAP"] == env["CLUSTER_SASL_SSL_BOOTSTRAP"]
    assert Path(env["KAFKA_REASSIGN_COMMAND_CONFIG"]).parent == c.tls_config_file.parent  # secrets/
    for b, hostport in sasl.items():
        plain = c.bootstrap_for(b)
        assert hostport != plain
        assert f"endpoints=PLAINTEXT://{plain},SASL_SSL://{hostport}" in status.stdout


# --------------------------------------------------------------------------- KRaft


@pytest.mark.parametrize("version", KRAFT_VERSIONS)
def test_kraft_cluster(kraft_cluster: Any, version: str) -> None:
    from kafka import KafkaAdminClient

    c = kraft_cluster(version)
    env = c.env
    assert env["CLUSTER_MODE"] == "kraft" and env["CLUSTER_KAFKA_VERSION"] == version
    assert "KAFKA_REASSIGN_ZOOKEEPER" not in env
    assert env["KAFKA_REASSIGN_BOOTSTRAP"] == env["KAFKA_BOOTSTRAP"] == c.bootstrap

    def described() -> dict[int, str]:
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
        try:
            brokers = admin.describe_cluster()["brokers"]  # DescribeCluster, fenced brokers flagged
            return {int(b["broker_id"]): b["rack"] for b in brokers if not b.get("is_fenced")}
        finally:
            admin.close()

    assert described() == {1: "r1", 2: "r2", 3: "r3"}
    assert topic_works(c.bootstrap)
    # two log dirs per broker, the metadata log apart
    props = (c.directory / "config" / "broker-1.properties").read_text()
    dirs = [str(c.directory / "data" / "broker-1" / f"d{k}") for k in (0, 1)]
    assert f"log.dirs={','.join(dirs)}\n" in props and "process.roles=broker,controller\n" in props

    # Kafka 4.x's own tool, the tests' judge, against this cluster
    listed = kafka_tool("--bootstrap-server", c.bootstrap, "--list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == "No partition reassignments found."

    status = script("status", directory=c.directory)
    assert status.returncode == 0 and f"mode: kraft, Kafka {version}" in status.stdout, status.stdout
    with c.broker_stopped(3):
        assert script("status", directory=c.directory).returncode == 1
        wait_until(lambda: set(described()) == {1, 2}, timeout=60, message="broker 3 gone from the metadata")
    assert described() == {1: "r1", 2: "r2", 3: "r3"}


def test_kafka_tools_classpath_runs_the_kafka4_tool(kraft_cluster: Any) -> None:
    c = kraft_cluster(KAFKA4_VERSION)
    cp = c.env["KAFKA_TOOLS_CLASSPATH"]
    assert cp.endswith("/*") and Path(cp[:-2], f"kafka-tools-{KAFKA4_VERSION}.jar").is_file()
    usage = subprocess.run(
        ["java", "-cp", cp, "org.apache.kafka.tools.reassign.ReassignPartitionsCommand", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert usage.returncode == 0 and KAFKA4_VERSION in usage.stdout, usage.stdout + usage.stderr


def test_up_refuses_a_mode_other_than_the_running_one(kraft_cluster: Any) -> None:
    c = kraft_cluster(KAFKA4_VERSION)
    r = script("up", directory=c.directory)  # ZooKeeper mode asked, KRaft running
    assert r.returncode == 1 and "a kraft cluster (Kafka" in r.stderr, r.stderr
    r = script("up", "--secure", "--kafka-version", KAFKA4_VERSION, directory=c.directory)
    assert r.returncode == 1 and "has no ZooKeeper mode" in r.stderr, r.stderr
    assert script("stop-zookeeper", directory=c.directory).returncode == 1


def _sourced(env_file: Path) -> subprocess.CompletedProcess[str]:
    """What bash makes of the env file: `source` it, then print each variable it names."""
    names = list(read_env_file(env_file))
    script = f"set -e; source {env_file}; " + "; ".join(f'printf "%s=%s\\n" {n} "${n}"' for n in names)
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env={"PATH": os.environ["PATH"]}
    )


def test_env_file_sources_in_bash_to_the_values_it_names(cluster: Cluster, kraft_cluster: Any) -> None:
    # docs/cluster.md says `source .cluster/env`: every value (CLUSTER_LOG_DIRS's ';', the tools
    # classpath's '*') must reach the shell whole, with nothing run and nothing said on stderr.
    for env_file in (cluster.directory / "env", kraft_cluster().directory / "env"):
        expected = read_env_file(env_file)
        assert ";" in expected["CLUSTER_LOG_DIRS"]
        got = _sourced(env_file)
        assert got.returncode == 0 and got.stderr == "", got.stderr
        assert dict(line.split("=", 1) for line in got.stdout.splitlines()) == expected
