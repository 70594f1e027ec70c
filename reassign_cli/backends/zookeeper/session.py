"""One ZooKeeper session: the kazoo client and the connection policy every ZooKeeper read and write goes
through.

The policy:
- connect: `ZkOptions.timeout` to connect (and the session timeout); a missing chroot is an error.
- reconnect: kazoo retries the connection for ever (`KazooRetry(max_tries=-1)`), so a dropped connection
  or a ZooKeeper leader change does not close the client; the session survives if the connection is back
  within the session timeout, and kazoo opens a new one otherwise.
- deadline: every request waits at most `ZkOptions.timeout` for its answer. kazoo's own synchronous calls
  wait for ever: a request queued while the connection is down would hang the command.
- reads are idempotent: one that meets a dropped connection (or no answer while disconnected) waits for
  the connection and is made again, for up to `ZkOptions.read_retry` seconds (`reading`).
- writes are not blindly repeated: a write whose answer was lost with the connection raises `InDoubt` once
  the connection is back, and the caller looks whether it landed (a versioned read-modify-write re-reads
  and recomputes; a create-only znode compares its bytes, `create_once`). Without a reconnect within
  `ZkOptions.write_reconnect` seconds: "may or may not have been applied; run verify".

Secured ZooKeeper (zookeeper/security.py): SASL DIGEST-MD5 from a JAAS file's Client section, TLS from
Kafka's --zk-tls-config-file properties, and on an authenticated connection every znode we create gets
the ACLs a broker with zookeeper.set.acl=true would give it (`ZkSession.acl`). A write ZooKeeper refuses
(NoAuth) is one line naming the znode, the right it needed and who we are (`ZkSession.denied`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from reassign_cli.backends.zookeeper.security import ZkSecurity, denied, load_security, parent
from reassign_cli.core import zk_security as zs
from reassign_cli.core.zk_security import AclPolicy
from reassign_cli.errors import OperationalError, UsageError

if TYPE_CHECKING:
    from kazoo.client import KazooClient

T = TypeVar("T")

READ_RETRY_SECONDS = 60.0  # how long a read waits for a dropped connection to come back
WRITE_RECONNECT_SECONDS = 30.0  # how long a write in doubt waits for it before "may or may not"


@dataclass(frozen=True, slots=True)
class ZkOptions:
    """How to reach ZooKeeper and how patient to be with it."""

    connect: str  # Kafka's zookeeper.connect form: host:port[,host:port][/chroot]
    timeout: float = 10.0  # connect, session, and the deadline of every request
    require_chroot: bool = True  # a missing chroot is an error (a typo would look like an empty cluster)
    read_retry: float = READ_RETRY_SECONDS
    write_reconnect: float = WRITE_RECONNECT_SECONDS
    jaas_file: str | None = None  # the JAAS file's Client section: SASL DIGEST-MD5 credentials
    jaas_section: str = "Client"  # ZooKeeper's zookeeper.sasl.clientconfig
    jaas_required: bool = True  # False for a file found in KAFKA_OPTS: no Client section, no SASL
    tls_config_file: str | None = None  # Kafka's --zk-tls-config-file properties
    acls: AclPolicy | None = None


class Disconnected(OperationalError):
    """The connection dropped under a read: worth waiting for and reading again (reads are idempotent)."""


class InDoubt(Exception):
    """A write's answer was lost with the connection, which is back now: look whether the write landed."""


def split_connect_string(connect: str) -> tuple[str, str]:
    """'h1:2181,h2:2181/kafka' -> ('h1:2181,h2:2181', '/kafka'); no chroot -> '' ."""
    hosts, sep, chroot = connect.partition("/")
    if not hosts:
        raise UsageError(f"invalid ZooKeeper connect string {connect!r}: no host")
    for hp in hosts.split(","):
        host, _, port = hp.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError(f"invalid ZooKeeper connect string {connect!r}: expected HOST:PORT, got {hp!r}")
    chroot = ("/" + chroot.rstrip("/")) if sep and chroot.strip("/") else ""
    return hosts, chroot


def unknown_outcome(path: str) -> OperationalError:
    return OperationalError(
        f"the connection to ZooKeeper dropped while writing {path}; the write may or may not have been "
        "applied",
        hint="Run kafka-reassign verify (or list) once ZooKeeper is reachable to see where things stand.",
    )


def _is_connection_error(e: BaseException) -> bool:
    from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, SessionExpiredError

    return isinstance(e, ConnectionLoss | ConnectionClosedError | SessionExpiredError)


class ZkSession:
    """A started kazoo client rooted at the chroot, with the policy above. Paths are chroot-relative."""

    def __init__(self, client: KazooClient, options: ZkOptions, security: ZkSecurity | None = None) -> None:
        self.client = client
        self.options = options
        self.security = security or ZkSecurity()

    # -- security ---------------------------------------------------------------------------------
    def acl(self, path: str) -> list[Any] | None:
        """The ACL of a znode we create at `path`; None: kazoo's default (world: all, as unsecured Kafka)."""
        return self.security.acl(path)

    def denied(self, path: str, perms: int, on: str | None = None) -> OperationalError:
        return denied(path, perms, self.security.identity, on)

    def refusal(self, operations: Sequence[Any], results: Sequence[Any]) -> OperationalError | None:
        """The one line for a transaction ZooKeeper refused with NoAuth (None: it was not refused so)."""
        from kazoo.exceptions import NoAuthError
        from kazoo.protocol.serialization import CheckVersion, Create, Delete

        for op, result in zip(operations, results, strict=False):
            if isinstance(result, NoAuthError):
                path = op.path[len(self.chroot) :] if self.chroot else op.path
                if isinstance(op, Create | Delete):
                    return self.denied(path, zs.CREATE if isinstance(op, Create) else zs.DELETE, parent(path))
                return self.denied(path, zs.READ if isinstance(op, CheckVersion) else zs.WRITE)
        return None

    # -- state ----------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return bool(getattr(self.client, "connected", True))

    @property
    def chroot(self) -> str:
        return getattr(self.client, "chroot", "") or ""

    def where(self) -> str:
        """' (chroot /kafka)' for messages, or ''."""
        return f" (chroot {self.chroot})" if self.chroot else ""

    def await_connection(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.connected:
                return True
            time.sleep(0.2)
        return False

    # -- answers --------------------------------------------------------------------------------
    def answer(self, ar: Any, what: str) -> Any:
        """The answer of one request, within the deadline. No answer while disconnected is a Disconnected
        (a read retries it); no answer on a live connection is a plain failure. kazoo's own errors pass."""
        try:
            return ar.get(timeout=self.options.timeout)
        except self.client.handler.timeout_exception:
            msg = f"ZooKeeper did not answer {what} within {self.options.timeout:g}s"
            raise (OperationalError(msg) if self.connected else Disconnected(msg)) from None

    def failed(self, what: str, e: Exception) -> OperationalError:
        """A kazoo error as one line; connection errors become Disconnected (a read retries them)."""
        msg = f"{what} failed: {type(e).__name__} {e}".rstrip()
        return Disconnected(msg) if _is_connection_error(e) else OperationalError(msg)

    # -- reads ----------------------------------------------------------------------------------
    def reading(self, read: Callable[[], T], retry_for: float | None = None) -> T:
        """Run an idempotent read; a dropped connection on the way is waited out and the whole read made
        again, for up to `retry_for` seconds (default: the options' read_retry)."""
        limit = self.options.read_retry if retry_for is None else retry_for
        deadline = time.monotonic() + limit
        while True:
            try:
                return read()
            except Disconnected as e:
                time.sleep(0.2)
                left = deadline - time.monotonic()
                if left <= 0 or not self.await_connection(left):
                    raise OperationalError(
                        f"lost the connection to ZooKeeper and could not get it back within {limit:g}s ({e})"
                    ) from None

    def get(self, path: str) -> tuple[bytes | None, int | None]:
        """(data, version) of one znode; (None, None) when it does not exist. Retried across drops."""
        from kazoo.exceptions import KazooException, NoAuthError, NoNodeError

        def once() -> tuple[bytes | None, int | None]:
            try:
                data, stat = self.answer(self.client.get_async(path), f"a read of {path}")
            except NoNodeError:
                return None, None
            except NoAuthError:
                raise self.denied(path, zs.READ) from None
            except KazooException as e:
                raise self.failed(f"reading {path} from ZooKeeper", e) from None
            return data, stat.version

        return self.reading(once)

    def owned(self, path: str) -> bool:
        """Whether `path` exists as an ephemeral node of this client's current session."""
        from kazoo.exceptions import KazooException, NoAuthError

        def once() -> bool:
            try:
                stat = self.answer(self.client.exists_async(path), f"a read of {path}")
            except NoAuthError:
                raise self.denied(path, zs.READ) from None
            except KazooException as e:
                raise self.failed(f"reading {path} from ZooKeeper", e) from None
            session = getattr(self.client, "client_id", None)
            return stat is not None and session is not None and stat.ephemeralOwner == session[0]

        return self.reading(once)

    def children(self, path: str) -> list[str]:
        """The names of `path`'s children; [] when it does not exist. Retried across drops."""
        from kazoo.exceptions import KazooException, NoAuthError, NoNodeError

        def once() -> list[str]:
            try:
                return list(self.answer(self.client.get_children_async(path), f"a read of {path}'s children"))
            except NoNodeError:
                return []
            except NoAuthError:
                raise self.denied(path, zs.READ) from None
            except KazooException as e:
                raise self.failed(f"reading {path}'s children from ZooKeeper", e) from None

        return self.reading(once)

    def ensure_path(self, path: str) -> None:
        """Create `path` and its parents where missing (idempotent, so retried like a read)."""
        from kazoo.exceptions import KazooException, NoAuthError

        def once() -> None:
            try:
                self.answer(self.client.ensure_path_async(path, self.acl(path)), f"creating {path}")
            except NoAuthError:
                raise self.denied(path, zs.CREATE, parent(path)) from None
            except KazooException as e:
                raise self.failed(f"creating {path}", e) from None

        self.reading(once)

    # -- writes ---------------------------------------------------------------------------------
    def write(self, path: str, start: Callable[[], Any]) -> Any:
        """One write (`start` sends it and returns kazoo's async result) and its answer. kazoo's errors
        (NodeExists, BadVersion, ...) pass to the caller. A lost answer: InDoubt once the connection is
        back, "may or may not have been applied" if it does not come back."""
        from kazoo.exceptions import KazooException

        try:
            return self.answer(start(), f"a write of {path}")
        except Disconnected:
            pass  # no answer while the connection is down
        except OperationalError:
            raise unknown_outcome(path) from None  # no answer on a live connection: cannot tell
        except KazooException as e:
            if not _is_connection_error(e):
                raise
        if not self.await_connection(self.options.write_reconnect):
            raise unknown_outcome(path) from None
        raise InDoubt(path)

    def create_once(self, path: str, data: bytes) -> bool:
        """Create `path` (parents too) holding `data`, never overwriting. False: it already exists.

        After a lost answer the znode holding exactly our bytes means our create landed; a missing znode
        means it did not (it is created now); anything else is someone else's."""
        from kazoo.exceptions import NoAuthError, NodeExistsError, ZookeeperError

        acl = self.acl(path)
        for _ in range(3):
            try:
                self.write(path, lambda: self.client.create_async(path, data, acl=acl, makepath=True))
            except NodeExistsError:
                return False
            except NoAuthError:
                raise self.denied(path, zs.CREATE, parent(path)) from None
            except InDoubt:
                try:
                    found, version = self.get(path)
                except OperationalError:
                    raise unknown_outcome(path) from None
                if version is not None:
                    return found == data
                continue  # it did not land: create it now
            except ZookeeperError as e:
                raise OperationalError(f"cannot create {path}: {type(e).__name__}") from None
            return True
        raise unknown_outcome(path)


@contextlib.contextmanager
def open_session(options: ZkOptions) -> Iterator[ZkSession]:
    """A started session rooted at the chroot; the client is always stopped and closed afterwards."""
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    hosts, chroot = split_connect_string(options.connect)
    security = load_security(
        options.jaas_file,
        options.tls_config_file,
        options.acls,
        jaas_section=options.jaas_section,
        jaas_required=options.jaas_required,
    )
    # Reconnect after a dropped connection or a ZooKeeper leader change; never give up on the client.
    retry = KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0)
    client = KazooClient(
        hosts=hosts, timeout=options.timeout, connection_retry=retry, **security.kazoo_kwargs()
    )
    try:
        _start(client, hosts, options.timeout, security)
        if chroot:
            _enter_chroot(client, hosts, chroot, options.require_chroot, options.timeout)
        yield ZkSession(client, options, security)
    finally:
        with contextlib.suppress(Exception):
            client.stop()
        with contextlib.suppress(Exception):
            client.close()


def _start(client: Any, hosts: str, timeout: float, security: ZkSecurity) -> None:
    """Connect, and with SASL credentials make one request, so that a refused login shows here.

    kazoo reports the session CONNECTED before its SASL exchange, which runs on its connection thread.
    A refused login moves the session to AUTH_FAILED (and on to CLOSED) there; if that happens before
    start() looks at the session (a busy machine), start() raises its connection time-out instead. The
    listener sees AUTH_FAILED on the connection thread itself, before start() can give up or the request
    fail, so whichever way the error comes out, the refusal is the message."""
    from kazoo.exceptions import AuthFailedError, KazooException
    from kazoo.handlers.threading import KazooTimeoutError
    from kazoo.protocol.states import KazooState, KeeperState

    refused: list[bool] = []

    def on_state(state: Any) -> None:
        if state == KazooState.LOST and client.client_state == KeeperState.AUTH_FAILED:
            refused.append(True)

    client.add_listener(on_state)
    try:
        client.start(timeout=timeout)
        if security.credentials:  # SASL fails on the first request after the handshake: make it now
            client.exists_async("/").get(timeout=timeout)
    except (KazooTimeoutError, KazooException) as e:
        if refused or isinstance(e, AuthFailedError):
            _refused(hosts, security)
        if not isinstance(e, KazooTimeoutError):
            raise
        tls = " (over TLS)" if security.tls else ""
        raise OperationalError(
            f"cannot connect to ZooKeeper at {hosts}{tls} within {timeout:g}s",
            hint="Check --zookeeper (or KAFKA_REASSIGN_ZOOKEEPER), --zk-tls-config-file and that ZooKeeper "
            "is running.",
        ) from None
    finally:
        client.remove_listener(on_state)


def _refused(hosts: str, security: ZkSecurity) -> NoReturn:
    who = f" as {security.identity!r}" if security.identity else ""
    raise OperationalError(
        f"ZooKeeper SASL authentication{who} failed at {hosts}",
        hint="Check the username and password of the JAAS file's Client section.",
    ) from None


def _enter_chroot(client: Any, hosts: str, chroot: str, required: bool, timeout: float) -> None:
    from kazoo.exceptions import NoAuthError

    try:
        exists = client.exists_async(chroot).get(timeout=timeout)
    except NoAuthError:
        raise OperationalError(f"ZooKeeper denied access to chroot {chroot}") from None
    except client.handler.timeout_exception:
        raise OperationalError(f"ZooKeeper at {hosts} did not answer within {timeout:g}s") from None
    if exists is None and required:
        raise OperationalError(
            f"ZooKeeper chroot {chroot} does not exist at {hosts}",
            hint="Use the same chroot as the brokers' zookeeper.connect.",
        )
    client.chroot = chroot
