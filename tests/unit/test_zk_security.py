"""The JAAS Client section, Java properties, Kafka's ZooKeeper TLS properties and Kafka's ACL rule
(zk_security, pure), and the refusal line of a transaction ZooKeeper denied (session.refusal)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.core import zk_security as zs
from reassign_cli.errors import UsageError

JAAS = """
// the brokers' file, as Kafka's docs show it
KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required
  username="admin" password="admin-secret";
};
/* ZooKeeper client */
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="kafka"
  password="s3cr\\"et";
};
"""


def test_jaas_client_section() -> None:
    creds = zs.parse_jaas_client(JAAS, "jaas.conf")
    assert creds == zs.Credentials("kafka", 's3cr"et')
    assert "s3cr" not in repr(creds)


def test_jaas_other_section_name_and_unquoted_values() -> None:
    text = "ZkClient{org.apache.zookeeper.server.auth.DigestLoginModule required username=bob password=pw;};"
    assert zs.parse_jaas_client(text, "f", "ZkClient") == zs.Credentials("bob", "pw")
    assert zs.parse_jaas_client(text, "f") is None  # no Client section


def test_jaas_kerberos_refused() -> None:
    text = 'Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="k"; };'
    with pytest.raises(UsageError, match=r"uses com\.sun\.security\.auth\.module\.Krb5LoginModule; only"):
        zs.parse_jaas_client(text, "f")


def test_jaas_missing_password_named_not_shown() -> None:
    text = 'Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="u"; };'
    with pytest.raises(UsageError, match=r"^the Client section of f has no password$"):
        zs.parse_jaas_client(text, "f")


def test_jaas_file_from_kafka_opts() -> None:
    opts = (
        '-Xmx1g -Djava.security.auth.login.config="/etc/kafka/zk jaas.conf" -Dzookeeper.sasl.clientconfig=Zk'
    )
    assert zs.jaas_file_from_kafka_opts(opts) == ("/etc/kafka/zk jaas.conf", "Zk")
    assert zs.jaas_file_from_kafka_opts(None) == (None, "Client")
    assert zs.jaas_file_from_kafka_opts("-Dother=1") == (None, "Client")


def test_properties_java_syntax() -> None:
    text = (
        "# comment\n! also a comment\na=1\n b : 2\nc 3\nd = one \\\n    two\ne\\=f=x\\ty\ng=\\u0041\nempty=\n"
    )
    assert zs.parse_properties(text) == {
        "a": "1", "b": "2", "c": "3", "d": "one two", "e=f": "x\ty", "g": "A", "empty": "",
    }  # fmt: skip


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z.]{0,12}", fullmatch=True),
        st.from_regex(r"[A-Za-z0-9/._-]{0,20}", fullmatch=True),
    )
)
def test_properties_round_trip(props: dict[str, str]) -> None:
    text = "".join(f"{k}={v}\n" for k, v in props.items())
    assert zs.parse_properties(text) == props


PEM_PROPS = {
    "zookeeper.ssl.client.enable": "true",
    "zookeeper.ssl.keystore.location": "/s/client.pem",
    "zookeeper.ssl.keystore.password": "kpw",
    "zookeeper.ssl.keystore.type": "PEM",
    "zookeeper.ssl.truststore.location": "/s/ca.pem",
    "zookeeper.ssl.truststore.type": "PEM",
}


def test_tls_settings_pem() -> None:
    tls = zs.tls_settings(PEM_PROPS, "tls.properties")
    assert tls == zs.TlsSettings(ca="/s/ca.pem", certfile="/s/client.pem", keyfile_password="kpw")
    assert tls is not None and tls.check_hostname and "kpw" not in repr(tls)
    off = {**PEM_PROPS, "zookeeper.ssl.endpoint.identification.algorithm": ""}
    assert zs.tls_settings(off, "f") == zs.TlsSettings(
        "/s/ca.pem", "/s/client.pem", "kpw", check_hostname=False
    )


def test_tls_disabled_unless_client_enable() -> None:
    assert zs.tls_settings({**PEM_PROPS, "zookeeper.ssl.client.enable": "false"}, "f") is None
    assert zs.tls_settings({}, "f") is None


@pytest.mark.parametrize(
    ("key", "value", "kind"),
    [
        ("zookeeper.ssl.keystore.type", "JKS", "JKS"),
        ("zookeeper.ssl.truststore.type", "pkcs12", "PKCS12"),
        ("zookeeper.ssl.keystore.location", "/s/client.jks", "JKS"),  # type inferred from the name
    ],
)
def test_tls_jks_pkcs12_refused(key: str, value: str, kind: str) -> None:
    props = {**PEM_PROPS, key: value}
    if key.endswith("location"):
        del props["zookeeper.ssl.keystore.type"]
    which = "keystore" if "keystore" in key else "truststore"
    with pytest.raises(UsageError) as e:
        zs.tls_settings(props, "tls.properties")
    assert str(e.value) == (
        f"tls.properties: zookeeper.ssl.{which}.type {kind} is not supported; convert the {which} to PEM "
        f"(key and certificate in one file) and set zookeeper.ssl.{which}.type=PEM"
    )


def test_kafka_acl_sensitive_roots() -> None:
    world = (1, "world", "anyone")
    mine = (31, "sasl", "kafka")
    assert zs.kafka_acl("/admin/reassign_partitions", "kafka") == [mine, world]
    assert zs.kafka_acl("/config/changes/config_change_", "kafka") == [mine, world]
    assert zs.kafka_acl("/config/topics/t", "kafka") == [mine, world]
    assert zs.kafka_acl("/reassign_cli/throttles", "kafka") == [mine, world]
    assert zs.kafka_acl("/config/brokers/1", "kafka") == [mine]
    assert zs.kafka_acl("/config/brokers", "kafka") == [mine]
    assert zs.kafka_acl("/config/users/u", "kafka") == [mine]
    assert zs.kafka_acl("/config/brokersx", "kafka") == [mine, world]  # a prefix of a name is not a root


def test_rights_names() -> None:
    assert zs.rights(zs.WRITE) == "WRITE" and zs.rights(zs.CREATE | zs.DELETE) == "CREATE|DELETE"


def test_transaction_refusal_names_the_znode_and_right() -> None:
    from kazoo.exceptions import NoAuthError, RolledBackError
    from kazoo.protocol.serialization import CheckVersion, Create, SetData

    from reassign_cli.backends.zookeeper.security import ZkSecurity
    from reassign_cli.backends.zookeeper.session import ZkOptions, ZkSession

    client = SimpleNamespace(chroot="/kafka")
    session = ZkSession(client, ZkOptions("h:1/kafka"), ZkSecurity(zs.Credentials("kafka", "pw")))  # type: ignore[arg-type]
    ops = [
        CheckVersion("/kafka/reassign_cli/throttles", 3),
        SetData("/kafka/config/brokers/1", b"{}", 2),
        Create("/kafka/config/changes/config_change_", b"{}", None, 2),
    ]
    results = [RolledBackError(), NoAuthError(), RolledBackError()]
    assert str(session.refusal(ops, results)) == (
        "ZooKeeper denied write access to /config/brokers/1 (needs WRITE; authenticated as 'kafka')"
    )
    results = [RolledBackError(), RolledBackError(), NoAuthError()]
    assert str(session.refusal(ops, results)) == (
        "ZooKeeper denied write access to /config/changes/config_change_ (needs CREATE on /config/changes; "
        "authenticated as 'kafka')"
    )
    assert session.refusal(ops, [RolledBackError()] * 3) is None


def test_load_security_from_files(tmp_path: Path) -> None:
    from reassign_cli.backends.zookeeper.security import load_security

    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS)
    sec = load_security(str(jaas), None)
    assert sec.identity == "kafka" and sec.acls == "kafka"
    assert [(a.perms, a.id.scheme, a.id.id) for a in sec.acl("/config/brokers/2") or []] == [
        (31, "sasl", "kafka")
    ]
    kwargs = sec.kazoo_kwargs()
    assert kwargs["sasl_options"] == {"mechanism": "DIGEST-MD5", "username": "kafka", "password": 's3cr"et'}
    # a KAFKA_OPTS file without the section: no SASL, open ACLs; named explicitly: an error
    only_kafka = tmp_path / "kafka.conf"
    only_kafka.write_text(JAAS.split("/*")[0])
    assert load_security(str(only_kafka), None, jaas_required=False).acl("/x") is None
    with pytest.raises(UsageError, match="has no Client section"):
        load_security(str(only_kafka), None)
    with pytest.raises(UsageError, match="need an authenticated connection"):
        load_security(None, None, "kafka")


class RefusingClient:
    """A kazoo client whose SASL login is refused on its connection thread before start() looks at the
    session (a busy machine): the listeners hear LOST in AUTH_FAILED, then start() gives up as kazoo's
    does, with its connection time-out; or, when the main thread wins, start() returns and the first
    request fails with AuthFailedError."""

    def __init__(self, late: bool) -> None:
        from kazoo.protocol.states import KeeperState

        self.late = late
        self.listeners: list[object] = []
        self.client_state = KeeperState.CONNECTING

    def add_listener(self, f: object) -> None:
        self.listeners.append(f)

    def remove_listener(self, f: object) -> None:
        self.listeners.remove(f)

    def _refuse(self) -> None:
        from kazoo.protocol.states import KazooState, KeeperState

        self.client_state = KeeperState.AUTH_FAILED
        for f in list(self.listeners):
            f(KazooState.LOST)  # type: ignore[operator]

    def start(self, timeout: float) -> None:
        from kazoo.handlers.threading import KazooTimeoutError

        if self.late:
            self._refuse()
            raise KazooTimeoutError("Connection time-out")

    def exists_async(self, path: str) -> object:
        from kazoo.exceptions import AuthFailedError

        self._refuse()

        class Failed:
            def get(self, timeout: float) -> None:
                raise AuthFailedError()

        return Failed()


@pytest.mark.parametrize("late", [True, False])
def test_a_refused_sasl_login_is_named_whichever_thread_wins(late: bool) -> None:
    from reassign_cli.backends.zookeeper.security import ZkSecurity
    from reassign_cli.backends.zookeeper.session import _start
    from reassign_cli.errors import OperationalError

    client = RefusingClient(late)
    security = ZkSecurity(zs.Credentials("kafka", "not-the-password"))
    with pytest.raises(OperationalError) as e:
        _start(client, "h:2182", 10, security)
    assert str(e.value) == "ZooKeeper SASL authentication as 'kafka' failed at h:2182"
    assert client.listeners == []


def test_a_connection_time_out_is_still_one() -> None:
    from kazoo.handlers.threading import KazooTimeoutError

    from reassign_cli.backends.zookeeper.security import ZkSecurity
    from reassign_cli.backends.zookeeper.session import _start
    from reassign_cli.errors import OperationalError

    class Silent(RefusingClient):
        def start(self, timeout: float) -> None:
            raise KazooTimeoutError("Connection time-out")

    with pytest.raises(OperationalError) as e:
        _start(Silent(True), "h:2182", 10, ZkSecurity(zs.Credentials("kafka", "pw")))
    assert str(e.value) == "cannot connect to ZooKeeper at h:2182 within 10s"
