"""The whole workflow on the secured cluster (scripts/cluster up --secure: ZooKeeper on a TLS-only port
with SASL DIGEST-MD5, brokers with zookeeper.set.acl=true), through the CLI with only the cluster's env
file in the environment; an unauthenticated client refused with nothing written; the ACLs of every
znode we create (read back with raw kazoo); no password in any output."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import ExtraCluster, read_jaas_client, read_properties
from tests.helpers import PYTHON, consume_all, unique_name, wait_until, zk_dump

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SASL_ALL = ("sasl", "kafka", 31)  # the cluster's SASL user (CLUSTER_ZK_SASL_USER), every right
WORLD_READ = ("world", "anyone", 1)
# What a broker with zookeeper.set.acl=true gives a znode (KAFKA-SPEC §1, ZkData.defaultAcls): no world
# read under the sensitive roots (/config/brokers holds dynamic broker configs, passwords among them).
KAFKA_ACL = {SASL_ALL, WORLD_READ}
SENSITIVE_ACL = {SASL_ALL}


def only_env_file(c: ExtraCluster, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of an operator who sourced the cluster's env file: no other KAFKA_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "CLUSTER_"))}
    env.update({k: v for k, v in c.env.items() if k not in drop})
    return env


def cli(
    c: ExtraCluster, *args: str, cwd: Path, drop: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "reassign_cli", *args],
        env=only_env_file(c, drop),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def kazoo_acl(entries: set[tuple[str, str, int]]) -> list[Any]:
    from kazoo.security import ACL, Id

    return [ACL(perms, Id(scheme, ident)) for scheme, ident, perms in sorted(entries)]


def acl_set(zk: Any, path: str) -> set[tuple[str, str, int]]:
    return {(a.id.scheme, a.id.id, a.perms) for a in zk.get_acls(path)[0]}


def secrets(c: ExtraCluster) -> list[str]:
    assert c.jaas_file and c.tls_config_file
    _, sasl_password = read_jaas_client(c.jaas_file)
    key_password = read_properties(c.tls_config_file)["zookeeper.ssl.keystore.password"]
    assert len(sasl_password) >= 16 and len(key_password) >= 16  # random, so a hit is a real leak
    return [sasl_password, key_password]


@pytest.fixture
def szk(secure_cluster: ExtraCluster) -> Iterator[Any]:
    """A raw authenticated kazoo client (TLS + SASL) on the secure cluster's chroot."""
    zk = secure_cluster.kazoo()
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def make_secure_topic(c: ExtraCluster, zk: Any, assignment: dict[int, list[int]], messages: int) -> str:
    from kafka import KafkaAdminClient, KafkaProducer

    topic = unique_name("t-secure-flow")
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics({topic: {"assignments": assignment}}, timeout_ms=30000)
    finally:
        admin.close()

    def ready() -> bool:
        for p, replicas in assignment.items():
            state = zk.exists(f"/brokers/topics/{topic}/partitions/{p}/state")
            if state is None:
                return False
            doc = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
            if doc["leader"] < 0 or sorted(doc["isr"]) != sorted(replicas):
                return False
        return True

    wait_until(ready, timeout=60, message=f"{topic} led and in sync")
    producer = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all")
    try:
        for i in range(messages):
            producer.send(
                topic, key=f"key-{i}".encode(), value=f"{topic}-value-{i}".encode().ljust(1024, b".")
            )
        producer.flush(timeout=60)
    finally:
        producer.close()
    return topic


def drop_empty_broker_configs(zk: Any) -> None:
    """Remove /config/brokers/1..3 where they hold no config (what an earlier run leaves): same meaning."""
    for b in ("1", "2", "3"):
        path = f"/config/brokers/{b}"
        if zk.exists(path) and json.loads(zk.get(path)[0])["config"] == {}:
            zk.delete(path)


class AclCatcher:
    """Watches znodes that live only for a while (the trigger, our record, the setup mark) and asks for
    their ACL the moment they appear."""

    def __init__(self, zk: Any, paths: list[str]) -> None:
        from kazoo.recipe.watchers import DataWatch

        self.zk = zk
        self.pending: dict[str, Any] = {}
        self.watches = [DataWatch(zk, p, self._seen(p)) for p in paths]

    def _seen(self, path: str) -> Any:
        def on_change(data: bytes | None, stat: Any, *_: Any) -> bool:
            if stat is not None and path not in self.pending:
                self.pending[path] = self.zk.get_acls_async(path)
            return True

        return on_change

    def caught(self) -> dict[str, set[tuple[str, str, int]]]:
        out = {}
        for path, ar in self.pending.items():
            try:
                acls, _ = ar.get(timeout=20)
            except Exception:  # gone before the answer (NoNode): not caught
                continue
            out[path] = {(a.id.scheme, a.id.id, a.perms) for a in acls}
        return out


def test_whole_workflow_on_the_secure_cluster(secure_cluster: ExtraCluster, szk: Any, tmp_path: Path) -> None:
    c = secure_cluster
    hidden = secrets(c)
    topic = make_secure_topic(c, szk, {0: [1, 2], 1: [2, 1]}, messages=600)
    drop_empty_broker_configs(szk)  # so that execute creates them (an earlier run's are empty)
    brokers_before = set(szk.get_children("/config/brokers"))
    changes_before = set(szk.get_children("/config/changes"))
    outputs: list[str] = []

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        r = cli(c, *args, cwd=tmp_path)
        outputs.extend([r.stdout, r.stderr])
        return r

    r = run("snapshot", "-o", "snap.json", "--topic", topic)
    assert r.returncode == 0, r.stderr
    r = run(
        "generate",
        "--snapshot",
        "snap.json",
        "--topic",
        topic,
        "--broker-list",
        "2,3",
        "--output-dir",
        "plan",
    )
    assert r.returncode == 0, r.stderr
    proposed = json.loads((tmp_path / "plan" / "proposed.json").read_text())
    targets = {p["partition"]: p["replicas"] for p in proposed["partitions"]}
    assert {p: sorted(rs) for p, rs in targets.items()} == {0: [2, 3], 1: [2, 3]}  # off broker 1

    dry = run(
        "execute", "--reassignment-json-file", "plan/proposed.json", "--throttle", "300000", "--dry-run", "-v"
    )
    assert dry.returncode == 0, dry.stderr
    assert "/admin/reassign_partitions" in dry.stdout + dry.stderr

    catcher = AclCatcher(
        szk, ["/admin/reassign_partitions", "/reassign_cli/throttles", "/reassign_cli/executing"]
    )
    r = run(
        "execute", "--reassignment-json-file", "plan/proposed.json", "--throttle", "300000", "--wait",
        "--poll-interval", "0.5", "-v",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    caught = catcher.caught()
    # The trigger and the record live for the whole throttled move (~2 s at 300 kB/s), the setup mark
    # for execute's 1 s pause between the throttles and the trigger: each is seen and asked at once.
    assert caught == {
        "/admin/reassign_partitions": KAFKA_ACL,
        "/reassign_cli/throttles": KAFKA_ACL,
        "/reassign_cli/executing": KAFKA_ACL,
    }

    r = run("verify", "--reassignment-json-file", "plan/proposed.json")
    assert r.returncode == 0, r.stderr
    assert "Reassignment of partition" in r.stdout and "is completed" in r.stdout
    r = run("list")
    assert r.returncode == 0, r.stderr

    # Replicas as planned, every message there, no trigger, no record, no throttle left.
    for p, replicas in targets.items():
        doc = json.loads(szk.get(f"/brokers/topics/{topic}")[0])
        assert doc["partitions"][str(p)] == replicas
    assert len(consume_all(c.bootstrap, topic)) == 600
    assert szk.exists("/admin/reassign_partitions") is None and szk.exists("/reassign_cli/throttles") is None
    topic_config = json.loads(szk.get(f"/config/topics/{topic}")[0])["config"]
    assert not any("throttled" in k for k in topic_config), topic_config

    # Every znode we created: the broker config znodes (sensitive), the change notifications, our root.
    created_brokers = set(szk.get_children("/config/brokers")) - brokers_before
    assert created_brokers == {"1", "2", "3"}  # leaders' and followers' rates on each moving broker
    for b in created_brokers:
        assert acl_set(szk, f"/config/brokers/{b}") == SENSITIVE_ACL, b
    notifications = set(szk.get_children("/config/changes")) - changes_before
    assert len(notifications) >= 5  # the topic and three brokers set, then cleared
    for n in notifications:
        assert acl_set(szk, f"/config/changes/{n}") == KAFKA_ACL, n
    assert acl_set(szk, "/reassign_cli") == KAFKA_ACL

    for text in outputs:
        for secret in hidden:
            assert secret not in text


def test_unauthenticated_client_refused_nothing_written(
    secure_cluster: ExtraCluster, szk: Any, tmp_path: Path
) -> None:
    c = secure_cluster
    hidden = secrets(c)
    topic = make_secure_topic(c, szk, {0: [1, 2]}, messages=5)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 3]}]})
    )
    no_jaas = ("KAFKA_REASSIGN_ZK_JAAS_FILE",)
    # The state of a cluster where an authenticated run has been: our root (Kafka's ACLs), and no broker
    # config of the brokers in the plan (an earlier run's emptied ones are removed: same meaning).
    if szk.exists("/reassign_cli") is None:
        szk.create("/reassign_cli", b"", acl=kazoo_acl(KAFKA_ACL))
    drop_empty_broker_configs(szk)
    before = zk_dump(szk, roots=("/admin", "/config", "/brokers/topics", "/reassign_cli"))

    # the trigger's create: refused on /admin
    r = cli(c, "execute", "--reassignment-json-file", str(plan), "-q", cwd=tmp_path, drop=no_jaas)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "Error: ZooKeeper denied write access to /admin/reassign_partitions (needs CREATE on /admin; "
        "not authenticated: give --zk-jaas-file)"
    ]
    # the throttles' transaction: refused on its first operation, the setup mark; none of it applied
    r = cli(
        c,
        "execute",
        "--reassignment-json-file",
        str(plan),
        "--throttle",
        "1000000",
        cwd=tmp_path,
        drop=no_jaas,
    )
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (
        "Error: ZooKeeper denied write access to /reassign_cli/executing (needs CREATE on /reassign_cli; "
        "not authenticated: give --zk-jaas-file)"
    )
    assert [line for line in r.stderr.splitlines() if line.startswith("Error")] == r.stderr.splitlines()[-1:]
    assert zk_dump(szk, roots=("/admin", "/config", "/brokers/topics", "/reassign_cli")) == before

    # reads of world-readable znodes need no identity ...
    r = cli(c, "list", cwd=tmp_path, drop=no_jaas)
    assert r.returncode == 0, r.stderr
    # ... but broker configs are readable by their owner only (as a broker or kafka-configs makes them)
    if szk.exists("/config/brokers/1") is None:
        szk.create("/config/brokers/1", b'{"version":1,"config":{}}', acl=kazoo_acl(SENSITIVE_ACL))
    before = zk_dump(szk, roots=("/admin", "/config", "/brokers/topics", "/reassign_cli"))
    r = cli(c, "verify", "--reassignment-json-file", str(plan), cwd=tmp_path, drop=no_jaas)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (
        "Error: ZooKeeper denied read access to /config/brokers/1 (needs READ; not authenticated: give "
        "--zk-jaas-file)"
    )
    assert zk_dump(szk, roots=("/admin", "/config", "/brokers/topics", "/reassign_cli")) == before
    for text in (r.stdout, r.stderr):
        for secret in hidden:
            assert secret not in text


def told(stderr: str) -> list[str]:
    """stderr's lines without the note naming the connection used: the secure cluster's env file sets both
    KAFKA_REASSIGN_ZOOKEEPER and KAFKA_REASSIGN_BOOTSTRAP, and every command says which mode that gives."""
    return [line for line in stderr.splitlines() if not line.startswith("Using ZooKeeper mode: ")]


def test_wrong_password_one_line_without_the_password(secure_cluster: ExtraCluster, tmp_path: Path) -> None:
    c = secure_cluster
    assert c.jaas_file
    hidden = secrets(c)
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(c.jaas_file.read_text().replace(hidden[0], "not-the-password-x"))
    r = subprocess.run(
        [PYTHON, "-m", "reassign_cli", "list", "--zk-jaas-file", str(jaas)],
        env=only_env_file(c),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 1, r.stderr  # the whole stderr on failure: it once failed here unexplained
    assert told(r.stderr)[0] == f"Error: ZooKeeper SASL authentication as 'kafka' failed at {c.zk_hosts}", (
        r.stderr
    )
    assert "not-the-password-x" not in r.stderr and hidden[0] not in r.stderr

    # the key's password wrong: one line naming the keystore, no password, no terminal prompt
    assert c.tls_config_file
    tls = tmp_path / "tls.properties"
    tls.write_text(c.tls_config_file.read_text().replace(hidden[1], "not-the-key-password"))
    r = subprocess.run(
        [PYTHON, "-m", "reassign_cli", "list", "--zk-tls-config-file", str(tls)],
        env=only_env_file(c),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    keystore = read_properties(c.tls_config_file)["zookeeper.ssl.keystore.location"]
    assert r.returncode == 2
    assert told(r.stderr) == [
        f"Error: cannot load the ZooKeeper TLS file {keystore} (SSLError); check it is PEM and, for the "
        "keystore, zookeeper.ssl.keystore.password"
    ]


# --------------------------------------------------------------------------- the SASL_SSL listener


def assert_hidden(outputs: list[str], hidden: list[str]) -> None:
    for text in outputs:
        for secret in hidden:
            assert secret not in text


def kafka_client_config(c: ExtraCluster) -> tuple[Path, str]:
    """The cluster's --command-config (Kafka's client properties for its SASL_SSL listener) and the
    SASL/PLAIN password in it."""
    path = Path(c.env["KAFKA_REASSIGN_COMMAND_CONFIG"])
    props = read_properties(path)
    assert props["security.protocol"] == "SASL_SSL" and props["sasl.mechanism"] == "PLAIN"
    assert props["ssl.truststore.type"] == "PEM" and Path(props["ssl.truststore.location"]).is_file()
    m = re.fullmatch(
        r'org\.apache\.kafka\.common\.security\.plain\.PlainLoginModule required username="(\w+)" '
        r'password="([^"]+)";',
        props["sasl.jaas.config"],
    )
    assert m and m.group(1) == c.env["CLUSTER_KAFKA_SASL_USER"], props["sasl.jaas.config"]
    assert len(m.group(2)) >= 16  # random, so a hit in an output is a real leak
    return path, m.group(2)


def log_dir_plan(c: ExtraCluster, topic: str, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A plan keeping topic-0 on brokers 1,2 and moving broker 1's replica to its other log dir:
    (plan, the dir it is in, the target dir)."""
    base = c.directory / "data" / "broker-1"
    (src,) = [base / d for d in ("d0", "d1") if (base / d / f"{topic}-0").is_dir()]
    target = base / ("d1" if src.name == "d0" else "d0")
    entry = {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": [str(target), "any"]}
    plan = tmp_path / "dirs.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [entry]}))
    return plan, src, target


def test_log_dir_move_through_the_sasl_ssl_listener(
    secure_cluster: ExtraCluster, szk: Any, tmp_path: Path
) -> None:
    # Only the env file: ZooKeeper over TLS with SASL, and the admin calls ZooKeeper does not carry
    # (AlterReplicaLogDirs, DescribeLogDirs) through the brokers' SASL_SSL listener with the
    # cluster's --command-config (KAFKA_REASSIGN_BOOTSTRAP, KAFKA_REASSIGN_COMMAND_CONFIG).
    c = secure_cluster
    _, kafka_password = kafka_client_config(c)
    hidden = [*secrets(c), kafka_password]
    sasl_ports = {int(hp.rpartition(":")[2]) for hp in c.env["KAFKA_REASSIGN_BOOTSTRAP"].split(",")}
    assert len(sasl_ports) == 3 and not sasl_ports & set(c.broker_ports.values())  # not PLAINTEXT
    topic = make_secure_topic(c, szk, {0: [1, 2]}, messages=300)
    plan, src, target = log_dir_plan(c, topic, tmp_path)

    r = cli(
        c, "execute", "--reassignment-json-file", str(plan), "--replica-alter-log-dirs-throttle", "100000000",
        "--wait", "--poll-interval", "0.5", "--timeout", "120", cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (
        f"Successfully started moving log directory to {target} for replica {topic}-0 with broker 1 "
        in r.stdout.splitlines()
    )
    assert "1/1 replica log-dir moves done" in r.stderr
    assert (target / f"{topic}-0").is_dir() and not (src / f"{topic}-0").is_dir()

    # the same file named on the command line this time
    config_file = c.env["KAFKA_REASSIGN_COMMAND_CONFIG"]
    v = cli(
        c, "verify", "--reassignment-json-file", str(plan), "--command-config", config_file, cwd=tmp_path,
        drop=("KAFKA_REASSIGN_COMMAND_CONFIG",),
    )  # fmt: skip
    assert v.returncode == 0, v.stderr
    assert v.stdout.splitlines()[:3] == [
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is completed.",
        f"Reassignment of replica {topic}-0-1 completed successfully.",
    ]
    assert szk.exists("/reassign_cli/throttles") is None
    assert len(consume_all(c.bootstrap, topic)) == 300
    assert_hidden([r.stdout, r.stderr, v.stdout, v.stderr], hidden)


def test_wrong_kafka_password_refused_in_one_line(
    secure_cluster: ExtraCluster, szk: Any, tmp_path: Path
) -> None:
    c = secure_cluster
    path, kafka_password = kafka_client_config(c)
    bad = tmp_path / "bad.properties"
    bad.write_text(path.read_text().replace(kafka_password, "not-the-kafka-password"))
    topic = make_secure_topic(c, szk, {0: [1, 2]}, messages=5)
    plan, src, _ = log_dir_plan(c, topic, tmp_path)
    first = c.env["KAFKA_REASSIGN_BOOTSTRAP"].split(",")[0]
    refused = (
        f"Error: Kafka SASL authentication as '{c.env['CLUSTER_KAFKA_SASL_USER']}' failed at {first} (PLAIN): "
        "Authentication failed: Invalid username or password"
    )

    # verify: the first admin call (DescribeLogDirs) refused at once, exit 1
    v = cli(c, "verify", "--reassignment-json-file", str(plan), "--command-config", str(bad), cwd=tmp_path)
    assert v.returncode == 1
    assert [line for line in v.stderr.splitlines() if line.startswith("Error")] == [refused]
    # execute: refused when it first asks the brokers (DescribeLogDirs), before it writes anything
    roots = ("/admin", "/config", "/brokers/topics", "/reassign_cli")
    before = zk_dump(szk, roots=roots)
    r = cli(
        c, "execute", "--reassignment-json-file", str(plan), "--command-config", str(bad),
        "--replica-alter-log-dirs-throttle", "1000000", "--rollback-file", "rb.json", cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 1
    assert [line for line in r.stderr.splitlines() if line.startswith("Error")] == [refused]
    assert "Successfully started" not in r.stdout
    assert zk_dump(szk, roots=roots) == before
    assert not (tmp_path / "rb.json").exists()
    assert (src / f"{topic}-0").is_dir()  # not moved
    assert_hidden([v.stdout, v.stderr, r.stdout, r.stderr], ["not-the-kafka-password", kafka_password])
