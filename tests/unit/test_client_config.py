"""--command-config: Kafka client properties as Java reads them, mapped onto kafka-python's settings; what
cannot be honoured is refused; passwords never appear in messages or reprs. Expected values by hand from
java.util.Properties' rules and Kafka's client property names."""

from __future__ import annotations

import pytest

from reassign_cli.core.client_config import (
    AdminOptions,
    admin_options,
    client_settings,
    parse_jaas,
    parse_properties,
)
from reassign_cli.errors import InvalidInputError

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr;et";'
)
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required username=bob password=pw;"


def test_properties_syntax() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "security.protocol=SASL_SSL\n"
        "  client.id : reassigner \n"
        "request.timeout.ms 5000\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="alice" \\\n'
        '    password="a\\\\b";\n'
        "path=C\\:\\\\certs\\\\ca.pem\n"
        "unicode=caf\\u00e9\n"
        "empty=\n"
        "security.protocol=SSL\n"
    )
    assert parse_properties(text) == {
        "security.protocol": "SSL",  # the later one wins
        "client.id": "reassigner ",  # trailing blanks are part of the value, as in Java
        "request.timeout.ms": "5000",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
        'password="a\\b";',
        "path": "C:\\certs\\ca.pem",
        "unicode": "café",
        "empty": "",
    }


def test_properties_continuations_and_escapes() -> None:
    # Expected values by hand from java.util.Properties.load's rules.
    text = (
        "a = one \\\n"  # odd trailing backslashes: the line goes on...
        "      # two\n"  # ...its leading blanks dropped, and a '#' there is not a comment
        "even=C:\\\\\\\\\n"  # an even number: two literal backslashes... (file text: even=C:\\\\)
        "next=line\n"  # ...and no continuation
        "key\\ with\\ spaces : v\n"  # escaped blanks belong to the key
        "k2 = = v\n"  # only the first separator separates
        "lonely\n"  # a key alone: an empty value
        "tabs=a\\tb\\nc\\rd\\fe\n"
        "other=\\q\\z\\\\\n"  # another escaped character is itself; the backslash goes
        "emoji=\\uD83D\\uDE00\n"  # a surrogate pair of escapes is one character
        "crlf=1\r\n"  # \r\n ends a line too
        "   \n"  # a blank line
        "last=end\\"  # a continuation at the end of the file ends the value
    )
    assert parse_properties(text) == {
        "a": "one # two",
        "even": "C:\\\\",
        "next": "line",
        "key with spaces": "v",
        "k2": "= v",
        "lonely": "",
        "tabs": "a\tb\nc\rd\fe",
        "other": "qz\\",
        "emoji": "\U0001f600",
        "crlf": "1",
        "last": "end",
    }


def test_properties_malformed_unicode_escape_one_line_without_the_value() -> None:
    with pytest.raises(InvalidInputError) as e:
        parse_properties("sasl.jaas.config=secret\\u00zz\n")
    assert str(e.value) == "command config: a malformed \\uXXXX escape (Java refuses it too)"
    assert "secret" not in str(e.value)


def test_jaas() -> None:
    assert parse_jaas(PLAIN_JAAS) == (
        "org.apache.kafka.common.security.plain.PlainLoginModule",
        {"username": "alice", "password": "s3cr;et"},
    )
    assert parse_jaas(SCRAM_JAAS) == (
        "org.apache.kafka.common.security.scram.ScramLoginModule",
        {"username": "bob", "password": "pw"},
    )
    assert parse_jaas('x.Y required a="q\\"uote";')[1] == {"a": 'q"uote'}
    with pytest.raises(InvalidInputError, match="one login module"):
        parse_jaas("username=a password=b")


def test_plaintext_by_default() -> None:
    assert client_settings({}) == ({"security_protocol": "PLAINTEXT"}, [])
    assert AdminOptions("h1:9092, h2:9092").client_settings() == {
        "client_id": "kafka-reassign",
        "request_timeout_ms": 30000,
        "bootstrap_timeout_ms": 30000,
        "bootstrap_servers": ["h1:9092", "h2:9092"],
    }


def test_sasl_ssl_with_plain() -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": PLAIN_JAAS,
        "ssl.truststore.location": "/etc/kafka/ca.pem",
        "ssl.truststore.type": "PEM",
        "ssl.endpoint.identification.algorithm": "",
        "client.id": "ops",
        "request.timeout.ms": "12000",
        "linger.ms": "5",
        "bootstrap.servers": "ignored:9092",
    }
    assert client_settings(props) == (
        {
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "alice",
            "sasl_plain_password": "s3cr;et",
            "ssl_cafile": "/etc/kafka/ca.pem",
            "ssl_check_hostname": False,
            "client_id": "ops",
            "request_timeout_ms": 12000,
            "bootstrap_timeout_ms": 12000,
        },
        ["bootstrap.servers", "linger.ms"],
    )


def test_scram_over_plaintext_and_mutual_tls() -> None:
    settings, _ = client_settings(
        {
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": SCRAM_JAAS,
        }
    )
    assert settings == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "bob",
        "sasl_plain_password": "pw",
    }
    settings, ignored = client_settings(
        {
            "security.protocol": "SSL",
            "ssl.keystore.location": "/k.pem",
            "ssl.keystore.type": "PEM",
            "ssl.key.password": "kp",
            "ssl.truststore.location": "/t.pem",
            "sasl.mechanism": "PLAIN",  # not used without SASL: listed as ignored
        }
    )
    assert settings == {
        "security_protocol": "SSL",
        "ssl_cafile": "/t.pem",
        "ssl_certfile": "/k.pem",
        "ssl_keyfile": "/k.pem",
        "ssl_password": "kp",
    }
    assert ignored == ["sasl.mechanism"]


REFUSED = {
    "unknown protocol": ({"security.protocol": "TLS"}, "security.protocol TLS is not one of"),
    "GSSAPI (Kafka's default mechanism)": (
        {"security.protocol": "SASL_SSL", "sasl.jaas.config": PLAIN_JAAS},
        "sasl.mechanism GSSAPI is not supported",
    ),
    "OAUTHBEARER": (
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
        "sasl.mechanism OAUTHBEARER is not supported",
    ),
    "no JAAS": ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "needs sasl.jaas.config"),
    "wrong login module": (
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": PLAIN_JAAS},
        "needs org.apache.kafka.common.security.scram.ScramLoginModule",
    ),
    "no password": (
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username=a;",
        },
        "has no password",
    ),
    "JKS truststore (Kafka's default type)": (
        {"security.protocol": "SSL", "ssl.truststore.location": "/t.jks", "ssl.truststore.type": "JKS"},
        "ssl.truststore.type JKS is not supported",
    ),
    "inline PEM": (
        {"security.protocol": "SSL", "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----..."},
        "ssl.truststore.certificates is not supported",
    ),
    "bad timeout": ({"request.timeout.ms": "soon"}, "request.timeout.ms must be a positive number"),
}


@pytest.mark.parametrize(("props", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_refused_with_a_message_that_shows_no_secret(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInputError) as e:
        client_settings(props)
    assert message in str(e.value)
    for secret in ("s3cr;et", "-----BEGIN"):
        assert secret not in str(e.value)


def test_admin_options_never_show_the_password() -> None:
    text = f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={PLAIN_JAAS}\n"
    options = admin_options("k1:9092", text)
    assert options.client_settings()["sasl_plain_password"] == "s3cr;et"
    assert "s3cr" not in repr(options) and "s3cr" not in str(options)
    with pytest.raises(InvalidInputError, match="at least one HOST:PORT"):
        admin_options(" , ")
