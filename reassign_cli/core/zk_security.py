"""Secured ZooKeeper, the pure part: the JAAS `Client` section (SASL DIGEST-MD5 credentials), Kafka's
--zk-tls-config-file properties, and the ACLs Kafka gives the znodes it creates with
zookeeper.set.acl=true (KAFKA-SPEC §1: `ZkData.defaultAcls`).

Text in, plain data out; the files are read by the caller. A password is kept out of every repr and
message: only `Credentials.password` and `TlsSettings.keyfile_password` hold it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Literal

from reassign_cli.core import properties
from reassign_cli.errors import UsageError

JAAS_PROPERTY = "java.security.auth.login.config"
JAAS_SECTION_PROPERTY = "zookeeper.sasl.clientconfig"  # ZooKeeper's name of the section ("Client")
DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"

# ZooKeeper's permission bits (ZooDefs.Perms).
READ, WRITE, CREATE, DELETE, ADMIN = 1, 2, 4, 8, 16
ALL = READ | WRITE | CREATE | DELETE | ADMIN
RIGHT_NAMES = {READ: "READ", WRITE: "WRITE", CREATE: "CREATE", DELETE: "DELETE", ADMIN: "ADMIN"}

# Kafka's "sensitive" config roots: their znodes get no world-read (ZkData.SensitiveRootPaths).
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token")

# Which ACLs the znodes we create get: "open" (world: all, as Kafka with zookeeper.set.acl=false);
# "kafka" (as brokers with zookeeper.set.acl=true: the authenticated identity all, world read).
AclPolicy = Literal["open", "kafka"]

# (perms, scheme, id), as ZooKeeper's ACL; the edge turns it into kazoo's ACL.
AclEntry = tuple[int, str, str]


@dataclass(frozen=True, slots=True)
class Credentials:
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """kazoo's TLS arguments from Kafka's zookeeper.ssl.* properties."""

    ca: str | None  # the PEM truststore; None: the system's CAs
    certfile: str | None  # the PEM keystore (key and certificate in one file), or no client certificate
    keyfile_password: str | None = field(repr=False, default=None)
    check_hostname: bool = True  # zookeeper.ssl.endpoint.identification.algorithm=HTTPS (Kafka's default)


# --------------------------------------------------------------------------- JAAS


def jaas_file_from_kafka_opts(kafka_opts: str | None) -> tuple[str | None, str]:
    """(the JAAS file, the Client section's name) from KAFKA_OPTS' -D flags, as Kafka's tools take them."""
    path, section = None, "Client"
    try:
        words = shlex.split(kafka_opts or "")
    except ValueError:
        words = (kafka_opts or "").split()
    for w in words:
        key, sep, value = w.partition("=")
        if not sep:
            continue
        if key == f"-D{JAAS_PROPERTY}":
            path = value
        elif key == f"-D{JAAS_SECTION_PROPERTY}":
            section = value
    return path, section


def _strip_comments(text: str) -> str:
    out = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r'//[^\n"]*(?=\n|$)', " ", out)


_SECTION = re.compile(r"([A-Za-z_][\w.\-]*)\s*\{(.*?)\}\s*;", re.S)
_MODULE = re.compile(r"([\w.$]+)\s+(required|requisite|sufficient|optional)\b(.*?);", re.S)
_OPTION = re.compile(r'([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))', re.S)


def jaas_sections(text: str) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Every section of a JAAS file: name -> [(login module class, options)]."""
    sections: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for name, body in _SECTION.findall(_strip_comments(text)):
        modules = []
        for cls, _flag, opts in _MODULE.findall(body):
            options = {
                k: (quoted if quoted or not bare else bare) for k, quoted, bare in _OPTION.findall(opts)
            }
            modules.append((cls, {k: re.sub(r"\\(.)", r"\1", v) for k, v in options.items()}))
        sections[name] = modules
    return sections


def parse_jaas_client(text: str, source: str, section: str = "Client") -> Credentials | None:
    """The DigestLoginModule username/password of the `section`; None when the file has no such section.
    Any other login module (Kerberos) is refused: only DIGEST-MD5 is supported."""
    sections = jaas_sections(text)
    if section not in sections:
        return None
    modules = sections[section]
    for cls, options in modules:
        if cls == DIGEST_MODULE:
            missing = [k for k in ("username", "password") if k not in options]
            if missing:
                raise UsageError(f"the {section} section of {source} has no {' or '.join(missing)}")
            return Credentials(options["username"], options["password"])
    found = ", ".join(cls for cls, _ in modules) or "no login module"
    raise UsageError(
        f"the {section} section of {source} uses {found}; only {DIGEST_MODULE} (SASL DIGEST-MD5) is supported"
    )


# --------------------------------------------------------------------------- Java properties


def parse_properties(text: str) -> dict[str, str]:
    """A Java .properties file as java.util.Properties reads it (`core.properties`); a later key wins."""
    return properties.parse_properties(text, "ZooKeeper TLS config file", UsageError)


# --------------------------------------------------------------------------- TLS

_TRUE = ("true",)


def _store_type(props: dict[str, str], which: str, source: str) -> None:
    """Only PEM stores: Python's ssl reads PEM; JKS/PKCS12 are refused with what to do."""
    location = props.get(f"zookeeper.ssl.{which}.location", "")
    kind = props.get(f"zookeeper.ssl.{which}.type", "").strip().upper()
    if not kind:  # ZooKeeper infers the type from the file name when it is not set
        lower = location.lower()
        kind = "JKS" if lower.endswith(".jks") else "PKCS12" if lower.endswith((".p12", ".pfx")) else "PEM"
    if kind != "PEM":
        raise UsageError(
            f"{source}: zookeeper.ssl.{which}.type {kind} is not supported; convert the {which} to PEM "
            f"(key and certificate in one file) and set zookeeper.ssl.{which}.type=PEM"
        )


def tls_settings(props: dict[str, str], source: str) -> TlsSettings | None:
    """kazoo's TLS settings from Kafka's ZooKeeper TLS properties; None unless zookeeper.ssl.client.enable
    is true (as in Kafka)."""
    if props.get("zookeeper.ssl.client.enable", "").strip().lower() not in _TRUE:
        return None
    keystore = props.get("zookeeper.ssl.keystore.location", "").strip() or None
    truststore = props.get("zookeeper.ssl.truststore.location", "").strip() or None
    if keystore:
        _store_type(props, "keystore", source)
    if truststore:
        _store_type(props, "truststore", source)
    algorithm = props.get("zookeeper.ssl.endpoint.identification.algorithm", "HTTPS").strip()
    hostname = props.get("zookeeper.ssl.hostnameVerification", "true").strip().lower() in _TRUE
    return TlsSettings(
        ca=truststore,
        certfile=keystore,
        keyfile_password=props.get("zookeeper.ssl.keystore.password") or None,
        check_hostname=algorithm.upper() == "HTTPS" and hostname,
    )


# --------------------------------------------------------------------------- ACLs


def sensitive(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS)


def kafka_acl(path: str, username: str) -> list[AclEntry]:
    """What a broker with zookeeper.set.acl=true gives a znode it creates at `path` (chroot-relative),
    authenticated as `username`: the identity all rights, plus world read outside the sensitive roots."""
    acl: list[AclEntry] = [(ALL, "sasl", username)]
    if not sensitive(path):
        acl.append((READ, "world", "anyone"))
    return acl


def rights(perms: int) -> str:
    """'WRITE', 'CREATE|DELETE', ... for messages."""
    return "|".join(name for bit, name in RIGHT_NAMES.items() if perms & bit)
