"""A first look at the bootstrap servers, before kafka-python's own connection.

kafka-python retries every failure of its bootstrap until its timeout (30 s by default) and then says only
`KafkaTimeoutError: Unable to bootstrap`, whatever went wrong: a refused port, a host name that does not
resolve, or a ZooKeeper port given as a broker all look the same. Here each server is resolved and
connected to (within --connect-timeout); on a listener without TLS, one ApiVersions request (allowed before
SASL) tells a Kafka broker from something else, and ZooKeeper's `srvr` command tells a ZooKeeper server.
As soon as one server answers as a broker (or, with TLS, accepts the connection) kafka-python takes over;
when none does, one error names what each server did.
"""

from __future__ import annotations

import contextlib
import socket
import struct

from reassign_cli.core.client_config import CLIENT_ID, AdminOptions
from reassign_cli.errors import OperationalError

API_VERSIONS = 18
CORRELATION = 0x52414931  # an id ZooKeeper's answer (a ConnectResponse or nothing) cannot echo
HINT = (
    "Check --bootstrap-server (or KAFKA_REASSIGN_BOOTSTRAP): HOST:PORT of the brokers' listeners, "
    "--command-config, and that the brokers are running and reachable from here."
)


def check_reachable(options: AdminOptions) -> None:
    """OperationalError, at once, when no bootstrap server can be a Kafka broker; the message names what
    each server did (a name that does not resolve, a refused port, no answer, a ZooKeeper server)."""
    plain = options.settings.get("security_protocol", "PLAINTEXT") in ("PLAINTEXT", "SASL_PLAINTEXT")
    found: list[tuple[str, str]] = []
    for server in options.servers:
        what = _look(server, options.connect_timeout, plain)
        if what is None:
            return
        found.append((server, what))
    if not found:
        return
    zookeeper = [s for s, what in found if what.startswith("a ZooKeeper server")]
    text = "; ".join(what if len(found) == 1 else f"{s}: {what}" for s, what in found)
    hint = HINT
    if zookeeper:
        hint = (
            f"Give ZooKeeper as --zookeeper {zookeeper[0]}/CHROOT (the brokers' zookeeper.connect), and "
            "the brokers' listeners as --bootstrap-server."
        )
    raise OperationalError(f"cannot connect to Kafka at {options.bootstrap}: {text}", hint=hint)


def _look(server: str, timeout: float, plain: bool) -> str | None:
    """None when `server` may be a Kafka broker; else what it is."""
    host, _, port_text = server.rpartition(":")
    host = host.strip("[]")
    if not host or not port_text.isdigit():
        return f"{server} is not HOST:PORT"
    port = int(port_text)
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        return f"the host name {host!r} does not resolve ({e.strerror})"
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except ConnectionRefusedError:
        return "connection refused (nothing listens on that port)"
    except TimeoutError:
        return f"no answer within {timeout:g}s (--connect-timeout)"
    except OSError as e:
        return e.strerror or str(e)
    with contextlib.closing(sock):
        if not plain:
            return None  # TLS: kafka-python's handshake tells the rest
        try:
            if _answers_api_versions(sock):
                return None
        except OSError:
            pass
    version = _zookeeper_version(host, port, timeout)
    if version is not None:
        return f"a ZooKeeper server ({version}), not a Kafka broker"
    return "it accepts connections but does not answer as a Kafka broker"


def _answers_api_versions(sock: socket.socket) -> bool:
    name = CLIENT_ID.encode()
    request = struct.pack(">hhih", API_VERSIONS, 0, CORRELATION, len(name)) + name
    sock.sendall(struct.pack(">i", len(request)) + request)
    head = _read(sock, 8)
    return len(head) == 8 and struct.unpack(">ii", head)[1] == CORRELATION


def _zookeeper_version(host: str, port: int, timeout: float) -> str | None:
    """ZooKeeper's answer to `srvr` (its first line), or None when it is not ZooKeeper."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"srvr")
            answer = _read(sock, 4096)
    except OSError:
        return None
    text = answer.decode(errors="replace")
    if text.startswith("Zookeeper version:"):
        return text.splitlines()[0].split("-")[0].replace("Zookeeper", "ZooKeeper")
    if "is not executed because it is not in the whitelist" in text:
        return "srvr not allowed"
    return None


def _read(sock: socket.socket, n: int) -> bytes:
    """Up to n bytes, until the peer closes (an empty result: closed at once)."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf
