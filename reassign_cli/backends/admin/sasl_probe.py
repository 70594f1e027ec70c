"""A SASL/PLAIN credentials check on one bootstrap broker, made before kafka-python connects.

Why it exists: kafka-python reads a socket's last data and its end-of-file in one pass and drops the data
when it sees the end (kafka/net/transport.py: `_read` aborts on the error `_sock_recv` returns before the
bytes of the same pass reach the protocol). The broker's SaslAuthenticate answer to a wrong password, sent
just before it closes the connection, is lost; the client sees "socket disconnected", retries until its
bootstrap timeout (30 s) and reports only "Unable to bootstrap". Checked on 3.0.12, the newest release
(2026-11-24), against the secure test cluster: 30.0 s, KafkaTimeoutError. Its SaslAuthenticationFailedError
(raised when the answer does arrive) never comes. Here the same two requests are made on a socket of our
own (SaslHandshake v1, then SaslAuthenticate v1 with the PLAIN token, over TLS for SASL_SSL), and a
refusal becomes one line at once.

When it can go: when a kafka-python release hands the bytes read with the end-of-file to the protocol
before it aborts. To check a new release: pin it, make `check_plain_credentials` return at once, map
kafka-python's SaslAuthenticationFailedError onto the same line in admin/client.connect, and run
tests/integration/test_secure.py::test_wrong_kafka_password_refused_in_one_line; it must pass, in
seconds. Then delete this module and tests/unit/test_sasl_probe.py.

Only a definite refusal counts: a broker that cannot be reached, or any other surprise, is left to
kafka-python's own connection and its errors. SCRAM needs a conversation of its own and is not checked here.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
from typing import Any

from reassign_cli.core.client_config import CLIENT_ID, AdminOptions
from reassign_cli.errors import OperationalError

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
SASL_AUTHENTICATION_FAILED = 58
PROBE_TIMEOUT = 10.0


def check_plain_credentials(options: AdminOptions) -> None:
    """OperationalError when the first reachable bootstrap broker refuses the SASL/PLAIN credentials; the
    message names the user and the broker, never the password."""
    settings = options.settings
    if settings.get("sasl_mechanism") != "PLAIN":
        return
    for server in options.servers:
        host, _, port = server.rpartition(":")
        try:
            refusal = _authenticate(host.strip("[]"), int(port), settings)
        except (OSError, ValueError, struct.error):
            continue  # not reachable, or not answering as expected: the next one, else kafka-python
        if refusal is not None:
            user = settings["sasl_plain_username"]
            raise OperationalError(
                f"Kafka SASL authentication as '{user}' failed at {server} (PLAIN): {refusal}",
                hint="Check sasl.jaas.config in --command-config (KAFKA_REASSIGN_COMMAND_CONFIG).",
            )
        return


def _authenticate(host: str, port: int, settings: dict[str, Any]) -> str | None:
    """The broker's error message if it refuses the credentials; None if it accepts them."""
    with socket.create_connection((host, port), timeout=PROBE_TIMEOUT) as raw:
        sock: socket.socket = raw
        if settings.get("security_protocol") == "SASL_SSL":
            sock = _tls(settings).wrap_socket(raw, server_hostname=host)
        with contextlib.closing(sock):
            answer = _call(sock, SASL_HANDSHAKE, 1, _string("PLAIN"))
            if struct.unpack_from(">h", answer)[0] != 0:
                raise ValueError("SaslHandshake refused PLAIN")
            token = b"\0" + settings["sasl_plain_username"].encode() + b"\0"
            token += settings["sasl_plain_password"].encode()
            answer = _call(sock, SASL_AUTHENTICATE, 1, struct.pack(">i", len(token)) + token)
    code, length = struct.unpack_from(">hh", answer)
    if code == 0:
        return None
    message = answer[4 : 4 + length].decode(errors="replace") if length >= 0 else ""
    if code != SASL_AUTHENTICATION_FAILED:
        raise ValueError(f"error {code}")
    return message or "SaslAuthenticationFailed"


def _tls(settings: dict[str, Any]) -> ssl.SSLContext:
    """The TLS settings kafka-python would use (client_config maps Kafka's ssl.* onto them)."""
    ctx = ssl.create_default_context(cafile=settings.get("ssl_cafile"))
    if settings.get("ssl_certfile"):
        ctx.load_cert_chain(
            settings["ssl_certfile"], settings.get("ssl_keyfile"), password=settings.get("ssl_password")
        )
    if settings.get("ssl_check_hostname") is False:
        ctx.check_hostname = False
    return ctx


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def _call(sock: socket.socket, api_key: int, version: int, body: bytes) -> bytes:
    """One request (header v1: key, version, correlation id, client id) and its answer's body."""
    request = struct.pack(">hhi", api_key, version, 1) + _string(CLIENT_ID) + body
    sock.sendall(struct.pack(">i", len(request)) + request)
    (size,) = struct.unpack(">i", _read(sock, 4))
    return _read(sock, size)[4:]  # after the correlation id


def _read(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("the broker closed the connection")
        buf += chunk
    return buf
