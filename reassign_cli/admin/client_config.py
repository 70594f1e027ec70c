"""--command-config: Kafka's client properties (what kafka-reassign-partitions' --command-config takes)
mapped onto kafka-python's KafkaAdminClient keyword arguments. Pure: text and dicts in and out; the file
is read by `read_client_properties`, and nothing here imports kafka-python.

Supported: security.protocol; sasl.mechanism PLAIN, SCRAM-SHA-256/512 (sasl.jaas.config's username and
password) and GSSAPI (sasl.kerberos.service.name); PEM trust and key stores; hostname verification;
client.id and request.timeout.ms. JKS/PKCS12 stores and OAUTHBEARER are refused with what to do.
Properties kafka-python has no use for are ignored, as Kafka's clients ignore unknown ones. Values never
appear in messages (passwords live in several of them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reassign_cli.errors import UsageError
from reassign_cli.zk_security import jaas_sections, parse_properties

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI")
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def read_client_properties(path: str) -> dict[str, str]:
    try:
        return parse_properties(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise UsageError(f"cannot read the --command-config file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise UsageError(f"the --command-config file {path} is not UTF-8 text") from None


def admin_client_kwargs(props: dict[str, str]) -> dict[str, Any]:
    """KafkaAdminClient keyword arguments for Kafka client properties (empty for an empty file)."""
    out: dict[str, Any] = {}
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise UsageError(
            f"--command-config: security.protocol {protocol} is not one of {', '.join(PROTOCOLS)}"
        )
    if protocol != "PLAINTEXT":
        out["security_protocol"] = protocol
    if protocol.startswith("SASL_"):
        out.update(_sasl(props))
    if protocol.endswith("SSL"):
        out.update(_ssl(props))
    if props.get("client.id"):
        out["client_id"] = props["client.id"]
    if props.get("request.timeout.ms", "").strip().isdigit():
        out["request_timeout_ms"] = int(props["request.timeout.ms"])
    return out


def _sasl(props: dict[str, str]) -> dict[str, Any]:
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()  # Kafka's default mechanism
    if mechanism not in MECHANISMS:
        raise UsageError(
            f"--command-config: sasl.mechanism {mechanism} is not supported (use one of {', '.join(MECHANISMS)})"
        )
    if mechanism == "GSSAPI":
        return {
            "sasl_mechanism": mechanism,
            "sasl_kerberos_service_name": props.get("sasl.kerberos.service.name", "kafka"),
        }
    username, password = _jaas_login(props.get("sasl.jaas.config", ""), mechanism)
    return {"sasl_mechanism": mechanism, "sasl_plain_username": username, "sasl_plain_password": password}


def _jaas_login(config: str, mechanism: str) -> tuple[str, str]:
    """username/password of sasl.jaas.config ('<LoginModule> required username="u" password="p";')."""
    if not config.strip():
        raise UsageError(f"--command-config: sasl.mechanism {mechanism} needs sasl.jaas.config")
    sections = jaas_sections("X {" + config.strip().rstrip(";") + "; };")
    modules = sections.get("X", [])
    expected = LOGIN_MODULES[mechanism]
    for cls, options in modules:
        if cls == expected and "username" in options and "password" in options:
            return options["username"], options["password"]
    found = ", ".join(cls for cls, _ in modules) or "no login module"
    raise UsageError(
        f"--command-config: sasl.jaas.config for {mechanism} must be {expected} with username and password "
        f"(found {found})"
    )


def _pem_only(props: dict[str, str], store: str) -> None:
    kind = props.get(f"ssl.{store}.type", "").strip().upper()
    location = props.get(f"ssl.{store}.location", "").strip().lower()
    if not kind:  # Kafka's default type is JKS; a .pem/.crt file is taken as PEM
        kind = "PEM" if location.endswith((".pem", ".crt", ".cer")) else "JKS"
    if kind != "PEM":
        raise UsageError(
            f"--command-config: ssl.{store}.type {kind} is not supported; convert the {store} to PEM and set "
            f"ssl.{store}.type=PEM"
        )


def _ssl(props: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if props.get("ssl.truststore.location", "").strip():
        _pem_only(props, "truststore")
        out["ssl_cafile"] = props["ssl.truststore.location"].strip()
    if props.get("ssl.keystore.location", "").strip():
        _pem_only(props, "keystore")
        keystore = props["ssl.keystore.location"].strip()
        out["ssl_certfile"] = out["ssl_keyfile"] = keystore  # key and certificate in one PEM file
        password = props.get("ssl.key.password") or props.get("ssl.keystore.password")
        if password:
            out["ssl_password"] = password
    for inline in ("ssl.truststore.certificates", "ssl.keystore.key", "ssl.keystore.certificate.chain"):
        if props.get(inline):
            raise UsageError(
                f"--command-config: {inline} (inline PEM) is not supported; give a file location"
            )
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    out["ssl_check_hostname"] = algorithm == "https"
    return out
