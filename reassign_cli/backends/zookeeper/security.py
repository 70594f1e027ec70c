"""Secured ZooKeeper, the edge: read the JAAS and TLS files `ZkOptions` names, check the TLS material
once (a wrong key password is one line, not a connection retried for ever or a terminal prompt), and
turn them into kazoo's arguments; the ACLs of the znodes we create as kazoo ACLs.

Parsing and the ACL rule are pure (reassign_cli/core/zk_security.py). No password reaches a message, a log
line or a repr: `Credentials` and `TlsSettings` keep it out of theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reassign_cli.core import zk_security as zs
from reassign_cli.core.zk_security import AclPolicy
from reassign_cli.errors import OperationalError, UsageError


@dataclass(frozen=True, slots=True)
class ZkSecurity:
    credentials: zs.Credentials | None = None  # SASL DIGEST-MD5
    tls: zs.TlsSettings | None = None
    acls: AclPolicy = "open"  # "kafka": zookeeper.set.acl=true ACLs on the znodes we create

    @property
    def identity(self) -> str | None:
        return self.credentials.username if self.credentials else None

    def acl(self, path: str) -> list[Any] | None:
        """kazoo ACLs for a znode we create at `path` (chroot-relative); None: kazoo's default (open)."""
        if self.acls != "kafka" or self.credentials is None:
            return None
        from kazoo.security import ACL, Id

        return [
            ACL(perms, Id(scheme, ident)) for perms, scheme, ident in zs.kafka_acl(path, self.identity or "")
        ]

    def kazoo_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.credentials:
            kwargs["sasl_options"] = {
                "mechanism": "DIGEST-MD5",
                "username": self.credentials.username,
                "password": self.credentials.password,
            }
        if self.tls:
            kwargs.update(
                use_ssl=True,
                ca=self.tls.ca,
                certfile=self.tls.certfile,
                keyfile=self.tls.certfile,
                keyfile_password=self.tls.keyfile_password,
                verify_certs=True,
                check_hostname=self.tls.check_hostname,
            )
        if self.acl("/") is not None:
            kwargs["default_acl"] = self.acl("/")  # anything created without an explicit acl
        return kwargs


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read the {what} {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise UsageError(f"the {what} {path} is not UTF-8 text") from None


def load_security(
    jaas_file: str | None,
    tls_config_file: str | None,
    acls: AclPolicy | None = None,
    *,
    jaas_section: str = "Client",
    jaas_required: bool = True,
) -> ZkSecurity:
    """The credentials, TLS settings and ACL policy asked for (the files are read here). ACLs by default:
    Kafka's when authenticated, open otherwise."""
    credentials = None
    if jaas_file:
        credentials = zs.parse_jaas_client(_read(jaas_file, "JAAS file"), jaas_file, jaas_section)
        if credentials is None and jaas_required:
            raise UsageError(f"the JAAS file {jaas_file} has no {jaas_section} section")
    tls = None
    if tls_config_file:
        props = zs.parse_properties(_read(tls_config_file, "ZooKeeper TLS config file"))
        tls = zs.tls_settings(props, tls_config_file)
        if tls:
            check_tls(tls)
    acls = acls or ("kafka" if credentials else "open")
    if acls == "kafka" and credentials is None:
        raise UsageError("Kafka's ZooKeeper ACLs need an authenticated connection: give --zk-jaas-file")
    return ZkSecurity(credentials, tls, acls)


def check_tls(tls: zs.TlsSettings) -> None:
    """Load the truststore and keystore as kazoo will, so that a bad file or key password is one line now."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    where = tls.ca
    try:
        if tls.ca:
            context.load_verify_locations(tls.ca)
        if tls.certfile:
            where = tls.certfile
            # A password of "" rather than None: OpenSSL would otherwise prompt on the terminal.
            context.load_cert_chain(tls.certfile, tls.certfile, password=tls.keyfile_password or "")
    except FileNotFoundError:
        raise UsageError(f"the ZooKeeper TLS file {where} does not exist") from None
    except (ssl.SSLError, OSError) as e:
        reason = getattr(e, "reason", None) or type(e).__name__
        raise UsageError(
            f"cannot load the ZooKeeper TLS file {where} ({reason}); check it is PEM and, for the keystore, "
            "zookeeper.ssl.keystore.password"
        ) from None


def denied(path: str, perms: int, identity: str | None, on: str | None = None) -> OperationalError:
    """The one line for a NoAuth: the znode, the right it needed (and where), and who we are."""
    who = f"authenticated as {identity!r}" if identity else "not authenticated: give --zk-jaas-file"
    need = zs.rights(perms) + (f" on {on}" if on and on != path else "")
    kind = "read" if perms == zs.READ else "write"
    return OperationalError(f"ZooKeeper denied {kind} access to {path} (needs {need}; {who})")


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"
