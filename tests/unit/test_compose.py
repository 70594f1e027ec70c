"""docker-compose.yml describes the same cluster as scripts/cluster.

Both take the shared broker settings from docker/kafka-broker.env; this checks the per-broker rest
(ids, racks, chroot, log dirs, heaps, listeners) and the health checks. PyYAML is not a dependency:
the compose file is kept in a regular shape that the small reader below understands (and rejects
anything else, so the file stays in that shape).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import load_cluster_script

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"


cl = load_cluster_script()


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
    # one image, built from docker/ (no registry image: the jars are Maven Central's, as scripts/cluster's)
    for svc in compose["services"].values():
        assert svc["image"] == "${RC_KAFKA_IMAGE:-reassign-cli/kafka:local}"
        assert svc["build"] == {
            "context": "docker",
            "dockerfile": "kafka.Dockerfile",
            "network": "host",
            "args": {"BASE": "${RC_BASE_IMAGE:-eclipse-temurin:17-jre}"},
        }
    versions = {svc["environment"]["RC_KAFKA_VERSION"] for svc in brokers(compose).values()}
    assert versions == {cl.kafka_version()}


def test_host_network_only_and_listeners_on_loopback(compose: dict[str, Any]) -> None:
    """No bridge network, no published port: every service shares the host's network namespace and
    binds 127.0.0.1 (the machine's rule; also what makes the env file's addresses the same as
    scripts/cluster's)."""
    assert set(compose) == {"services"}  # no networks: or volumes: section
    for name, svc in compose["services"].items():
        assert svc["network_mode"] == "host", name
        assert "ports" not in svc and "networks" not in svc, name
        for key in ("KAFKA_LISTENERS", "KAFKA_ADVERTISED_LISTENERS", "KAFKA_CONTROLLER_QUORUM_VOTERS"):
            for endpoint in svc["environment"].get(key, "").split(","):
                assert not endpoint or re.search(r"(//|@)127\.0\.0\.1:\$\{RC_[A-Z0-9_]+:-\d+\}$", endpoint), (
                    name,
                    endpoint,
                )
    defaults = [
        int(m) for m in re.findall(r"\$\{RC_[A-Z0-9_]+PORT:-(\d+)\}", COMPOSE.read_text())
    ]  # every port comes from the environment, with a default
    assert 2181 in defaults and {19092, 19093, 19094} <= set(defaults)


def test_broker_ids_racks_chroot_log_dirs_heap(compose: dict[str, Any]) -> None:
    for broker_id, svc in brokers(compose).items():
        env = svc["environment"]
        assert env["KAFKA_BROKER_ID"] == str(broker_id)
        assert env["KAFKA_BROKER_RACK"] == cl.RACKS[broker_id]
        assert env["KAFKA_ZOOKEEPER_CONNECT"] == f"127.0.0.1:${{RC_ZK_PORT:-2181}}{cl.CHROOT}"
        assert len(env["KAFKA_LOG_DIRS"].split(",")) == cl.LOG_DIRS_PER_BROKER
        assert env["KAFKA_HEAP_OPTS"] == cl.BROKER_HEAP
        assert "kafka.controller=INFO" in env["KAFKA_LOG4J_LOGGERS"].split(",")
    zk_env = compose["services"]["zookeeper"]["environment"]
    assert zk_env["RC_ROLE"] == "zookeeper" and zk_env["KAFKA_HEAP_OPTS"] == cl.ZK_HEAP


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


def test_healthchecks_and_start_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, svc in services.items():  # the kraft profile's nodes too
        test = svc["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL") and len(test) >= 2, name
        assert test == ["CMD", "kafka-run", "health"], name  # docker/kafka-run: by RC_ROLE, no JVM per check
    for svc in brokers(compose).values():
        assert svc["depends_on"] == {"zookeeper": {"condition": "service_healthy"}}
    roles = {name: svc["environment"]["RC_ROLE"] for name, svc in services.items()}
    assert roles == {"zookeeper": "zookeeper"} | {f"kafka-{i}": "broker" for i in cl.BROKER_IDS} | {
        f"kraft-{i}": "kraft" for i in cl.BROKER_IDS
    }


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
    script_props = cl.kraft_properties(1, 29092, {i: 29093 for i in cl.BROKER_IDS}, ["/d0", "/d1"], "/meta")
    cluster_ids, ports = set(), []
    for i, svc in nodes.items():
        env = svc["environment"]
        assert svc["profiles"] == ["kraft"] and svc["env_file"] == [str(cl.BROKER_ENV_FILE.relative_to(REPO))]
        assert not set(shared) & set(env), "the kraft nodes override shared settings"
        cluster_ids.add(env["RC_CLUSTER_ID"])
        assert env["RC_KAFKA_VERSION"] == cl.pom_version(cl.POM4)  # the newest 4.x of kafka4-pom.xml
        assert env["KAFKA_NODE_ID"] == str(i) and env["KAFKA_BROKER_RACK"] == cl.RACKS[i]
        assert env["KAFKA_PROCESS_ROLES"] == script_props["process.roles"]
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == ",".join(
            f"{n}@127.0.0.1:${{RC_CONTROLLER_{n}_PORT:-{19291 + n}}}" for n in cl.BROKER_IDS
        )
        port = f"${{RC_KRAFT_{i}_PORT:-{19191 + i}}}"
        assert env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://127.0.0.1:{port}" and env["RC_PORT"] == port
        assert len(env["KAFKA_LOG_DIRS"].split(",")) == cl.LOG_DIRS_PER_BROKER
        assert env["KAFKA_METADATA_LOG_DIR"] not in env["KAFKA_LOG_DIRS"].split(",")
        assert env["KAFKA_HEAP_OPTS"] == cl.EXTRA_BROKER_HEAP
        ports.append(port)
    # one cluster id (22 characters: a 16-byte Uuid); ports apart from the ZooKeeper-mode brokers'
    assert len(cluster_ids) == 1 and len(cluster_ids.pop().split(":-")[1].rstrip("}")) == 22
    zk_mode = {svc["environment"]["KAFKA_LISTENERS"] for svc in brokers(compose).values()}
    assert len(set(ports)) == 3 and not any(p in listener for p in ports for listener in zk_mode)
