"""--command-config: Kafka client properties onto KafkaAdminClient arguments (admin.client_config, pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reassign_cli.admin.client_config import admin_client_kwargs, read_client_properties
from reassign_cli.errors import UsageError

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="a-secret";'
)
SCRAM_JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="b\\"pw";'
)


def test_plaintext_and_empty() -> None:
    assert admin_client_kwargs({}) == {}
    assert admin_client_kwargs({"security.protocol": "plaintext", "client.id": "ops"}) == {"client_id": "ops"}


def test_sasl_ssl_plain_with_pem_stores() -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": PLAIN_JAAS,
        "ssl.truststore.location": "/s/ca.pem",
        "ssl.truststore.type": "PEM",
        "ssl.keystore.location": "/s/client.pem",
        "ssl.keystore.type": "PEM",
        "ssl.key.password": "k-secret",
        "request.timeout.ms": "45000",
        "linger.ms": "5",  # a producer setting: ignored, as Kafka's admin client ignores it
    }
    assert admin_client_kwargs(props) == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "a-secret",
        "ssl_cafile": "/s/ca.pem",
        "ssl_certfile": "/s/client.pem",
        "ssl_keyfile": "/s/client.pem",
        "ssl_password": "k-secret",
        "ssl_check_hostname": True,
        "request_timeout_ms": 45000,
    }


def test_sasl_plaintext_scram() -> None:
    props = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS,
    }
    assert admin_client_kwargs(props) == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "bob",
        "sasl_plain_password": 'b"pw',
    }


def test_gssapi_default_mechanism() -> None:
    assert admin_client_kwargs({"security.protocol": "SASL_PLAINTEXT"}) == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_service_name": "kafka",
    }


def test_ssl_hostname_verification_off_and_truststore_only() -> None:
    props = {
        "security.protocol": "SSL",
        "ssl.truststore.location": "/s/ca.pem",  # type from the name
        "ssl.endpoint.identification.algorithm": "",
    }
    assert admin_client_kwargs(props) == {
        "security_protocol": "SSL",
        "ssl_cafile": "/s/ca.pem",
        "ssl_check_hostname": False,
    }


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {
                "security.protocol": "SSL",
                "ssl.truststore.location": "/s/trust.jks",
                "ssl.truststore.password": "x",
            },
            "--command-config: ssl.truststore.type JKS is not supported; convert the truststore to PEM and set "
            "ssl.truststore.type=PEM",
        ),
        (
            {"security.protocol": "SSL", "ssl.keystore.location": "/s/k.p12", "ssl.keystore.type": "PKCS12"},
            "--command-config: ssl.keystore.type PKCS12 is not supported; convert the keystore to PEM and set "
            "ssl.keystore.type=PEM",
        ),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
            "--command-config: sasl.mechanism OAUTHBEARER is not supported (use one of PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512, GSSAPI)",
        ),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
            "--command-config: sasl.mechanism PLAIN needs sasl.jaas.config",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.jaas.config": PLAIN_JAAS,
            },
            "--command-config: sasl.jaas.config for SCRAM-SHA-256 must be "
            "org.apache.kafka.common.security.scram.ScramLoginModule with username and password (found "
            "org.apache.kafka.common.security.plain.PlainLoginModule)",
        ),
        (
            {"security.protocol": "TLS"},
            "--command-config: security.protocol TLS is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
        ),
    ],
)
def test_refusals_name_the_property_never_a_password(props: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError) as e:
        admin_client_kwargs(props)
    assert str(e.value) == message
    assert "a-secret" not in str(e.value)


def test_read_client_properties(tmp_path: Path) -> None:
    f = tmp_path / "client.properties"
    f.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config={PLAIN_JAAS}\n")
    assert admin_client_kwargs(read_client_properties(str(f)))["sasl_plain_username"] == "alice"
    with pytest.raises(UsageError, match="cannot read the --command-config file"):
        read_client_properties(str(tmp_path / "missing"))
