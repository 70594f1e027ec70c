"""Kafka client properties (`--command-config FILE`, as Kafka's own tools take them) mapped onto kafka-python's
settings, and `AdminOptions`, the admin-API connection a command asks for. Pure: text in, settings out.

Supported: `security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); `sasl.mechanism` PLAIN,
SCRAM-SHA-256 or SCRAM-SHA-512 with `sasl.jaas.config` (username and password of the PlainLoginModule or the
ScramLoginModule); TLS from PEM files (`ssl.truststore.location` with `ssl.truststore.type=PEM` or no type,
`ssl.keystore.location` holding the certificate and the key, `ssl.key.password` or
`ssl.keystore.password`, `ssl.endpoint.identification.algorithm` empty to skip the host name check);
`client.id`, `request.timeout.ms`. What kafka-python cannot do the way the file asks (JKS or PKCS12 stores,
GSSAPI, OAUTHBEARER, PEM given inline) is refused rather than ignored: a silently weaker connection is
worse than none. Other keys (producer or consumer tuning, `bootstrap.servers`) are ignored and listed.
Values never appear in messages: the file holds passwords.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from reassign_cli.core import properties
from reassign_cli.errors import InvalidInputError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
UNSUPPORTED = {
    "ssl.truststore.certificates": "PEM given inline; put it in a file and name it in ssl.truststore.location",
    "ssl.keystore.certificate.chain": "PEM given inline; put the certificate and the key in one file and name "
    "it in ssl.keystore.location",
    "ssl.keystore.key": "PEM given inline; put the certificate and the key in one file and name it in "
    "ssl.keystore.location",
}
# Keys that change nothing for kafka-python or are taken care of otherwise (no warning for these).
QUIET = {
    "ssl.truststore.password",  # a PEM truststore has no password
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.truststore.type",
    "ssl.keystore.type",
}
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
CLIENT_ID = "kafka-reassign"


@dataclass(frozen=True, slots=True)
class AdminOptions:
    """The brokers to talk to and kafka-python's connection settings (never printed: passwords)."""

    bootstrap: str
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    ignored: tuple[str, ...] = ()  # keys of the command config that were ignored
    connect_timeout: float = 10.0  # seconds to reach a bootstrap broker (admin/reach.py's probe)

    @property
    def servers(self) -> list[str]:
        return [s.strip() for s in self.bootstrap.split(",") if s.strip()]

    def client_settings(self) -> dict[str, Any]:
        """Keyword arguments for KafkaAdminClient, KafkaProducer and KafkaConsumer alike."""
        out: dict[str, Any] = {
            "client_id": CLIENT_ID,
            "request_timeout_ms": DEFAULT_REQUEST_TIMEOUT_MS,
            "bootstrap_timeout_ms": DEFAULT_REQUEST_TIMEOUT_MS,
        }
        out.update(self.settings)
        out["bootstrap_servers"] = self.servers
        return out


# ---------------------------------------------------------------------------------------------
# Java .properties
# ---------------------------------------------------------------------------------------------


def parse_properties(text: str) -> dict[str, str]:
    """A Java .properties file as java.util.Properties reads it (`core.properties`); a later key wins."""
    return properties.parse_properties(text, "command config", InvalidInputError)


# ---------------------------------------------------------------------------------------------
# JAAS
# ---------------------------------------------------------------------------------------------

_JAAS = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;\s*$", re.S | re.I)
_JAAS_OPTION = re.compile(r'\s*([\w.-]+)\s*=\s*(?:"((?:\\.|[^"\\])*)"|([^\s";]+))')


def parse_jaas(value: str) -> tuple[str, dict[str, str]]:
    """`sasl.jaas.config`: (login module class, options). One module, options key="value" or key=value."""
    m = _JAAS.fullmatch(value)
    if m is None:
        raise InvalidInputError(
            'command config: sasl.jaas.config must be one login module: "<class> required username=... '
            'password=...;"'
        )
    module, rest = m.group(1), m.group(3)
    options: dict[str, str] = {}
    pos = 0
    while pos < len(rest):
        if rest[pos:].strip() == "":
            break
        o = _JAAS_OPTION.match(rest, pos)
        if o is None:
            raise InvalidInputError(
                f"command config: sasl.jaas.config: cannot read the options of {module} "
                '(expected key="value" pairs)'
            )
        quoted = o.group(2)
        options[o.group(1)] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else o.group(3)
        pos = o.end()
    return module, options


# ---------------------------------------------------------------------------------------------
# The mapping
# ---------------------------------------------------------------------------------------------


def _sasl(props: dict[str, str], protocol: str) -> dict[str, Any]:
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()  # Kafka's default is GSSAPI
    if mechanism not in MECHANISMS:
        raise InvalidInputError(
            f"command config: sasl.mechanism {mechanism} is not supported (PLAIN, SCRAM-SHA-256 and "
            f"SCRAM-SHA-512 are; security.protocol {protocol} needs one of them)"
        )
    jaas = props.get("sasl.jaas.config")
    if not jaas:
        raise InvalidInputError(f"command config: sasl.mechanism {mechanism} needs sasl.jaas.config")
    module, options = parse_jaas(jaas)
    if module != MECHANISMS[mechanism]:
        raise InvalidInputError(
            f"command config: sasl.jaas.config names {module}; sasl.mechanism {mechanism} needs "
            f"{MECHANISMS[mechanism]}"
        )
    missing = [k for k in ("username", "password") if k not in options]
    if missing:
        raise InvalidInputError(f"command config: sasl.jaas.config has no {' or '.join(missing)}")
    return {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": options["username"],
        "sasl_plain_password": options["password"],
    }


def _pem_store(props: dict[str, str], which: str) -> str | None:
    location = props.get(f"ssl.{which}.location", "").strip()
    kind = props.get(f"ssl.{which}.type", "PEM").strip().upper()
    if location and kind != "PEM":
        raise InvalidInputError(
            f"command config: ssl.{which}.type {kind} is not supported: kafka-python reads PEM files "
            f"(convert the {which} with keytool/openssl and set ssl.{which}.type=PEM)"
        )
    return location or None


def _ssl(props: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    truststore = _pem_store(props, "truststore")
    if truststore:
        out["ssl_cafile"] = truststore
    keystore = _pem_store(props, "keystore")
    if keystore:
        out["ssl_certfile"] = keystore
        out["ssl_keyfile"] = keystore
    password = props.get("ssl.key.password") or props.get("ssl.keystore.password")
    if password:
        out["ssl_password"] = password
    if props.get("ssl.endpoint.identification.algorithm", "https").strip() == "":
        out["ssl_check_hostname"] = False
    return out


def _int_ms(props: dict[str, str], key: str) -> int:
    raw = props[key].strip()
    if not raw.isdigit() or int(raw) == 0:
        raise InvalidInputError(f"command config: {key} must be a positive number of milliseconds")
    return int(raw)


HANDLED_PREFIXES = ("sasl.", "ssl.")
HANDLED = {"security.protocol", "client.id", "request.timeout.ms"}


def client_settings(props: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """kafka-python settings for Kafka client properties, and the keys that were ignored (sorted)."""
    for key, why in UNSUPPORTED.items():
        if props.get(key, "").strip():
            raise InvalidInputError(f"command config: {key} is not supported ({why})")
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise InvalidInputError(
            f"command config: security.protocol {protocol} is not one of {', '.join(PROTOCOLS)}"
        )
    out: dict[str, Any] = {"security_protocol": protocol}
    if protocol.startswith("SASL_"):
        out.update(_sasl(props, protocol))
    if protocol.endswith("SSL"):
        out.update(_ssl(props))
    if props.get("client.id", "").strip():
        out["client_id"] = props["client.id"].strip()
    if "request.timeout.ms" in props:
        out["request_timeout_ms"] = _int_ms(props, "request.timeout.ms")
        out["bootstrap_timeout_ms"] = out["request_timeout_ms"]
    used_sasl = protocol.startswith("SASL_")
    used_ssl = protocol.endswith("SSL")
    ignored = sorted(
        k
        for k in props
        if k not in HANDLED
        and k not in QUIET
        and not (k.startswith("sasl.") and used_sasl)
        and not (k.startswith("ssl.") and used_ssl)
    )
    return out, ignored


def admin_options(bootstrap: str, command_config: str | None = None) -> AdminOptions:
    """The connection for `--bootstrap-server` and the text of `--command-config` (None: plaintext)."""
    if not [s for s in bootstrap.split(",") if s.strip()]:
        raise InvalidInputError("--bootstrap-server needs at least one HOST:PORT")
    if command_config is None:
        return AdminOptions(bootstrap)
    settings, ignored = client_settings(parse_properties(command_config))
    return AdminOptions(bootstrap, settings, tuple(ignored))
