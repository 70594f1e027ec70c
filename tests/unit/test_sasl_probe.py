"""The SASL/PLAIN credentials check against a fake broker on a local socket: the request bytes worked out by
hand from Kafka's protocol (request header v1; SaslHandshake v1 = api key 17; SaslAuthenticate v1 = api key
36), the broker's answer followed at once by the end of the connection, as a Kafka broker refuses."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from reassign_cli.backends.admin.sasl_probe import check_plain_credentials
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.errors import OperationalError

# size 31 (2+2+4 + 2+14 + 2+5), api key 17, version 1, correlation id 1, client id "kafka-reassign",
# mechanism "PLAIN"
HANDSHAKE = bytes.fromhex("0000001f 0011 0001 00000001 000e") + b"kafka-reassign" + b"\x00\x05PLAIN"
# size 38 (24 + 4+10), api key 36, version 1, correlation id 1, client id, auth bytes (int32 length 10):
# PLAIN's token "\0alice\0pw1"
AUTHENTICATE = (
    bytes.fromhex("00000026 0024 0001 00000001 000e")
    + b"kafka-reassign"
    + b"\x00\x00\x00\x0a\x00alice\x00pw1"
)
# correlation id 1, error 0, mechanisms ["PLAIN"]
HANDSHAKE_OK = bytes.fromhex("00000001 0000 00000001 0005") + b"PLAIN"
REFUSAL = "Authentication failed: Invalid username or password"


def authenticate_answer(error: int, message: str | None) -> bytes:
    """correlation id 1, error code, nullable error message, empty auth bytes, session lifetime 0."""
    text = b"\xff\xff" if message is None else struct.pack(">h", len(message)) + message.encode()
    return struct.pack(">ih", 1, error) + text + struct.pack(">iq", 0, 0)


def options(port: int, mechanism: str = "PLAIN") -> AdminOptions:
    settings = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "pw1",
    }
    return AdminOptions(f"127.0.0.1:{port}", settings)


def serve_once(answers: list[bytes]) -> tuple[int, list[bytes], threading.Thread]:
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                for answer in answers:
                    size = conn.recv(4, socket.MSG_WAITALL)
                    received.append(size + conn.recv(struct.unpack(">i", size)[0], socket.MSG_WAITALL))
                    conn.sendall(struct.pack(">i", len(answer)) + answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server.getsockname()[1], received, thread


def test_a_refused_password_is_one_line_without_the_password() -> None:
    port, received, thread = serve_once([HANDSHAKE_OK, authenticate_answer(58, REFUSAL)])
    with pytest.raises(OperationalError) as e:
        check_plain_credentials(options(port))
    thread.join(timeout=10)
    assert received == [HANDSHAKE, AUTHENTICATE]
    assert (
        str(e.value) == f"Kafka SASL authentication as 'alice' failed at 127.0.0.1:{port} (PLAIN): {REFUSAL}"
    )
    assert "pw1" not in str(e.value) and "pw1" not in (e.value.hint or "")


def test_accepted_credentials_pass() -> None:
    port, received, thread = serve_once([HANDSHAKE_OK, authenticate_answer(0, None)])
    check_plain_credentials(options(port))
    thread.join(timeout=10)
    assert received == [HANDSHAKE, AUTHENTICATE]


def test_anything_else_is_left_to_kafka_python() -> None:
    # another error than SASL_AUTHENTICATION_FAILED (58): no verdict here
    port, _, thread = serve_once([HANDSHAKE_OK, authenticate_answer(34, "illegal state")])
    check_plain_credentials(options(port))
    thread.join(timeout=10)
    # the mechanism refused by the handshake (33, UNSUPPORTED_SASL_MECHANISM): no verdict either
    port, received, thread = serve_once([bytes.fromhex("00000001 0021 00000000")])
    check_plain_credentials(options(port))
    thread.join(timeout=10)
    assert received == [HANDSHAKE]
    # nothing listening
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    check_plain_credentials(options(port))


def test_only_plain_is_checked() -> None:
    # SCRAM, or no SASL: no connection is made (the server sees none)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        check_plain_credentials(options(port, "SCRAM-SHA-256"))
        check_plain_credentials(AdminOptions(f"127.0.0.1:{port}", {"security_protocol": "PLAINTEXT"}))
        server.settimeout(0.2)
        with pytest.raises(TimeoutError):
            server.accept()
