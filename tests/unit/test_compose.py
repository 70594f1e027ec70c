"""docker-compose.yml describes the same cluster as scripts/cluster.

Both take the shared broker settings from docker/kafka-broker.env; this checks the per-broker rest
(ids, racks, chroot, log dirs, heaps, listeners) and the health checks. PyYAML is not a dependency:
the compose file is kept in a regular shape that the small reader below understands (and rejects
anything else, so the file stays in that shape).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"


def load_cluster_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_cluster", REPO / "scripts" / "_cluster.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cl = load_cluster_module()


def _scalar(text: str) -> Any:
    text = text.strip()
    if text.startswith(("[", '"')):
        return json.loads(text)
    if text[:1] in "{&*|>'!":
        raise ValueError(f"unsupported YAML construct: {text!r}")
    return text


def read_yaml_subset(text: str) -> Any:
    """Block mappings and lists, double-quoted or plain scalars, JSON-style inline lists."""
    lines = [
        (len(raw) - len(raw.lstrip(" ")), raw.strip())
        for raw in text.splitlines()
        if raw.strip() and not raw.lstrip().startswith("#")
    ]

    def block(i: int, indent: int) -> tuple[Any, int]:
        if lines[i][1].startswith("- "):
            items = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
                items.append(_scalar(lines[i][1][2:]))
                i += 1
            return items, i
        mapping: dict[str, Any] = {}
        while i < len(lines) and lines[i][0] == indent:
            key, sep, rest = lines[i][1].partition(":")
            if not sep or key in mapping:
                raise ValueError(f"bad or duplicate mapping line: {lines[i][1]!r}")
            if rest.strip():
                mapping[key] = _scalar(rest)
                i += 1
            else:
                if i + 1 >= len(lines) or lines[i + 1][0] <= indent:
                    raise ValueError(f"empty value for {key!r}")
                mapping[key], i = block(i + 1, lines[i + 1][0])
        if i < len(lines) and lines[i][0] > indent:
            raise ValueError(f"unexpected indentation: {lines[i][1]!r}")
        return mapping, i

    value, end = block(0, 0)
    if end != len(lines):
        raise ValueError(f"unparsed line: {lines[end][1]!r}")
    return value


def test_reader_reads_the_shapes_it_claims_and_rejects_others() -> None:
    doc = 'a:\n  b: "1"\n  c:\n    - "x"\n    - y\n  d: ["CMD", "z"]\ne: plain\n'
    assert read_yaml_subset(doc) == {"a": {"b": "1", "c": ["x", "y"], "d": ["CMD", "z"]}, "e": "plain"}
    with pytest.raises(ValueError):
        read_yaml_subset("a: {b: 1}\n")
    with pytest.raises(ValueError):
        read_yaml_subset("a: 1\na: 2\n")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    doc = read_yaml_subset(COMPOSE.read_text())
    assert isinstance(doc, dict)
    return doc


def brokers(compose: dict[str, Any]) -> dict[int, dict[str, Any]]:
    services = compose["services"]
    return {int(name.split("-")[1]): svc for name, svc in services.items() if name.startswith("kafka-")}


def test_services_and_images(compose: dict[str, Any]) -> None:
    services = {n: svc for n, svc in compose["services"].items() if "profiles" not in svc}
    assert set(services) == {"zookeeper"} | {f"kafka-{i}" for i in cl.BROKER_IDS}
    # Confluent Platform 7.9.x ships Kafka 3.9: the last line with ZooKeeper mode
    assert re.fullmatch(r"confluentinc/cp-zookeeper:7\.9\.\d+", services["zookeeper"]["image"])
    images = {svc["image"] for svc in brokers(compose).values()}
    assert len(images) == 1 and re.fullmatch(r"confluentinc/cp-kafka:7\.9\.\d+", images.pop())


def test_broker_ids_racks_chroot_log_dirs_heap(compose: dict[str, Any]) -> None:
    for broker_id, svc in brokers(compose).items():
        env = svc["environment"]
        assert env["KAFKA_BROKER_ID"] == str(broker_id)
        assert env["KAFKA_BROKER_RACK"] == cl.RACKS[broker_id]
        assert env["KAFKA_ZOOKEEPER_CONNECT"] == f"zookeeper:2181{cl.CHROOT}"
        assert len(env["KAFKA_LOG_DIRS"].split(",")) == cl.LOG_DIRS_PER_BROKER
        assert env["KAFKA_HEAP_OPTS"] == cl.BROKER_HEAP
        assert "kafka.controller=INFO" in env["KAFKA_LOG4J_LOGGERS"].split(",")
    zk_env = compose["services"]["zookeeper"]["environment"]
    assert zk_env["ZOOKEEPER_ADMIN_ENABLE_SERVER"] == "false"
    assert zk_env["KAFKA_HEAP_OPTS"] == cl.ZK_HEAP


def test_shared_settings_come_from_the_one_env_file(compose: dict[str, Any]) -> None:
    shared = cl.read_env_file(cl.BROKER_ENV_FILE)
    for svc in brokers(compose).values():
        assert svc["env_file"] == [str(cl.BROKER_ENV_FILE.relative_to(REPO))]
        overridden = set(shared) & set(svc["environment"])
        assert not overridden, f"compose overrides shared settings {overridden}"
    # and scripts/cluster writes exactly those into every server.properties
    props = cl.broker_properties(2, 19092, 2181, ["/d0", "/d1"])
    for name, value in shared.items():
        assert props[cl.env_name_to_property(name)] == value


def test_settings_the_tests_rely_on() -> None:
    props = cl.broker_properties(1, 19092, 2181, ["/a/d0", "/a/d1"])
    assert props["broker.id"] == "1" and props["broker.rack"] == "r1"
    assert props["zookeeper.connect"] == "127.0.0.1:2181/kafka"
    assert props["log.dirs"] == "/a/d0,/a/d1"
    assert props["listeners"] == props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert props["auto.create.topics.enable"] == "false"
    assert props["auto.leader.rebalance.enable"] == "false"
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert int(props["offsets.topic.replication.factor"]) <= len(cl.BROKER_IDS)
    assert int(props["transaction.state.log.replication.factor"]) <= len(cl.BROKER_IDS)
    assert int(props["transaction.state.log.min.isr"]) <= int(
        props["transaction.state.log.replication.factor"]
    )
    assert "process.roles" not in props  # ZooKeeper mode


def test_env_name_conversion() -> None:
    assert cl.env_name_to_property("KAFKA_AUTO_CREATE_TOPICS_ENABLE") == "auto.create.topics.enable"
    assert cl.env_name_to_property("KAFKA_FOO__BAR") == "foo-bar"
    assert cl.env_name_to_property("KAFKA_FOO___BAR") == "foo_bar"
    with pytest.raises(cl.ClusterError):
        cl.env_name_to_property("AUTO_CREATE")


def test_ports_published_on_localhost_and_advertised(compose: dict[str, Any]) -> None:
    published = []
    for broker_id, svc in brokers(compose).items():
        env = svc["environment"]
        (mapping,) = svc["ports"]
        host_ip, host_port, container_port = mapping.split(":")
        assert host_ip == "127.0.0.1" and host_port == container_port
        assert f"PLAINTEXT_HOST://127.0.0.1:{host_port}" in env["KAFKA_ADVERTISED_LISTENERS"].split(",")
        assert f"PLAINTEXT://kafka-{broker_id}:29092" in env["KAFKA_ADVERTISED_LISTENERS"].split(",")
        assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "PLAINTEXT"
        published.append(int(host_port))
    assert len(set(published)) == len(cl.BROKER_IDS)
    assert compose["services"]["zookeeper"]["ports"] == ["127.0.0.1:2181:2181"]


def test_healthchecks_and_start_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, svc in services.items():  # the kraft profile's nodes too
        test = svc["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL") and len(test) >= 2, name
    assert "srvr" in " ".join(services["zookeeper"]["healthcheck"]["test"])
    for svc in brokers(compose).values():
        assert svc["depends_on"] == {"zookeeper": {"condition": "service_healthy"}}
        assert "kafka-broker-api-versions" in " ".join(svc["healthcheck"]["test"])


# ----------------------------------------------------------------------- the other scripts/cluster modes


def test_kraft_nodes_take_the_shared_settings_except_zookeeper_ones() -> None:
    ctrl = {1: 29001, 2: 29002, 3: 29003}
    props = cl.kraft_properties(2, 19092, ctrl, ["/a/d0", "/a/d1"], "/a/meta")
    assert props["process.roles"] == "broker,controller" and props["node.id"] == "2"
    assert props["broker.rack"] == "r2" and "broker.id" not in props
    assert props["controller.quorum.voters"] == "1@127.0.0.1:29001,2@127.0.0.1:29002,3@127.0.0.1:29003"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:29002"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert props["log.dirs"] == "/a/d0,/a/d1" and props["metadata.log.dir"] == "/a/meta"
    shared = {cl.env_name_to_property(k): v for k, v in cl.read_env_file(cl.BROKER_ENV_FILE).items()}
    for key, value in shared.items():
        if key.startswith("zookeeper."):
            assert key not in props  # no ZooKeeper in KRaft
        else:
            assert props[key] == value
    assert props["auto.create.topics.enable"] == props["auto.leader.rebalance.enable"] == "false"


def test_secure_mode_configs(tmp_path: Path) -> None:
    zk = cl.secure_zk_config(tmp_path / "zk", 2182, tmp_path, "pw")
    assert "clientPort" not in zk and zk["secureClientPort"] == "2182"  # TLS only
    assert zk["ssl.keyStore.type"] == zk["ssl.trustStore.type"] == "PEM"
    assert zk["authProvider.sasl"] == "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
    assert zk["ssl.clientAuth"] == "none"  # ACLs name the SASL user only
    pw = {"key_password": "pw", "kafka_password": "kpw"}
    props = cl.secure_broker_properties(1, (19092, 19095), 2182, ["/d0", "/d1"], tmp_path, pw)
    assert props["zookeeper.set.acl"] == "true" and props["zookeeper.connect"] == "127.0.0.1:2182/kafka"
    # a SASL_SSL listener (SASL/PLAIN over TLS, the server certificate in PEM) beside PLAINTEXT, which the
    # brokers keep for themselves
    listeners = "PLAINTEXT://127.0.0.1:19092,SASL_SSL://127.0.0.1:19095"
    assert props["listeners"] == props["advertised.listeners"] == listeners
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    sasl_ssl = {
        k[len("listener.name.sasl_ssl.") :]: v
        for k, v in props.items()
        if k.startswith("listener.name.sasl_ssl.")
    }
    assert sasl_ssl == {
        "sasl.enabled.mechanisms": "PLAIN",
        "plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="kpw" user_admin="kpw";',
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tmp_path / "server.pem"),
        "ssl.key.password": "pw",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tmp_path / "ca.pem"),
    }
    # its client side: Kafka's client property names, as --command-config takes them
    assert cl.kafka_client_properties(tmp_path, "kpw") == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="kpw";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tmp_path / "ca.pem"),
    }
    # the TLS file of Kafka's --zk-tls-config-file: exactly these property names
    assert set(cl.zk_tls_client_properties(tmp_path, "pw")) == {
        "zookeeper.ssl.client.enable",
        "zookeeper.clientCnxnSocket",
        "zookeeper.ssl.keystore.location",
        "zookeeper.ssl.keystore.password",
        "zookeeper.ssl.keystore.type",
        "zookeeper.ssl.truststore.location",
        "zookeeper.ssl.truststore.type",
    }
    for key, value in cl.zk_tls_client_properties(tmp_path, "pw").items():
        assert props[key] == value
    client = cl.jaas_text("Client", "kafka", "s3cret")
    assert client.startswith("Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n")
    assert 'username="kafka"' in client and 'password="s3cret";' in client
    assert 'user_kafka="s3cret";' in cl.jaas_text("Server", "kafka", "s3cret")


def test_up_options() -> None:
    assert cl.parse_up([]) == ("zk", None, False)
    assert cl.parse_up(["--secure"]) == ("secure", None, False)
    assert cl.parse_up(["--kraft", "--kafka-version", "4.3.1"]) == ("kraft", "4.3.1", False)
    assert cl.parse_up(["--kraft", "--kafka-version=3.9.2"]) == ("kraft", "3.9.2", False)
    assert cl.parse_up(["--jbod"]) == ("zk", None, True)
    assert cl.parse_up(["--kraft", "--jbod", "--kafka-version", "4.3.1"]) == ("kraft", "4.3.1", True)
    for bad in (["--secure", "--kraft"], ["--kraft", "--kafka-version"], ["--kafka-version", "4"], ["-x"]):
        with pytest.raises(cl.ClusterError):
            cl.parse_up(bad)


def test_jbod_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLUSTER_JBOD_SIZES", raising=False)
    assert cl.jbod_sizes() == [268435456, 536870912]  # 256 MiB, 512 MiB
    monkeypatch.setenv("CLUSTER_JBOD_SIZES", "64M,1G")
    assert cl.jbod_sizes() == [67108864, 1073741824]
    monkeypatch.setenv("CLUSTER_JBOD_SIZES", "4096,512k")
    assert cl.jbod_sizes() == [4096, 524288]
    for bad in ("256M", "256M,512M,1G", "0,1M", "12X,1M", "-1M,2M"):
        monkeypatch.setenv("CLUSTER_JBOD_SIZES", bad)
        with pytest.raises(cl.ClusterError):
            cl.jbod_sizes()


def kraft_nodes(compose: dict[str, Any]) -> dict[int, dict[str, Any]]:
    services = compose["services"]
    return {int(name.split("-")[1]): svc for name, svc in services.items() if name.startswith("kraft-")}


def test_kraft_profile_matches_scripts_cluster_kraft(compose: dict[str, Any]) -> None:
    nodes = kraft_nodes(compose)
    assert sorted(nodes) == list(cl.BROKER_IDS)
    shared = cl.read_env_file(cl.BROKER_ENV_FILE)
    ctrl = {i: 29093 for i in cl.BROKER_IDS}
    script_props = cl.kraft_properties(1, 29092, ctrl, ["/d0", "/d1"], "/meta")
    images, cluster_ids, published = set(), set(), []
    for i, svc in nodes.items():
        env = svc["environment"]
        assert svc["profiles"] == ["kraft"] and svc["env_file"] == [str(cl.BROKER_ENV_FILE.relative_to(REPO))]
        assert not set(shared) & set(env), "the kraft nodes override shared settings"
        images.add(svc["image"])
        cluster_ids.add(env["CLUSTER_ID"])
        assert env["KAFKA_NODE_ID"] == str(i) and env["KAFKA_BROKER_RACK"] == cl.RACKS[i]
        assert env["KAFKA_PROCESS_ROLES"] == script_props["process.roles"]
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == ",".join(
            f"{n}@kraft-{n}:29093" for n in cl.BROKER_IDS
        )
        assert len(env["KAFKA_LOG_DIRS"].split(",")) == cl.LOG_DIRS_PER_BROKER
        assert env["KAFKA_METADATA_LOG_DIR"] not in env["KAFKA_LOG_DIRS"].split(",")
        assert env["KAFKA_HEAP_OPTS"] == cl.EXTRA_BROKER_HEAP
        (mapping,) = svc["ports"]
        host_ip, host_port, container_port = mapping.split(":")
        assert host_ip == "127.0.0.1" and host_port == container_port
        assert f"PLAINTEXT_HOST://127.0.0.1:{host_port}" in env["KAFKA_ADVERTISED_LISTENERS"].split(",")
        published.append(int(host_port))
    # the newest 4.x of scripts/maven/kafka4-pom.xml, one cluster id (22 characters: a 16-byte Uuid)
    assert images == {f"apache/kafka:{cl.pom_version(cl.POM4)}"}
    assert len(cluster_ids) == 1 and len(cluster_ids.pop()) == 22
    zk_mode_ports = {int(svc["ports"][0].split(":")[1]) for svc in brokers(compose).values()}
    assert len(set(published)) == 3 and not set(published) & zk_mode_ports
