"""Opening a kazoo client from a Kafka-style connect string, with clear one-line failures."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from reassign_cli.errors import OperationalError, UsageError


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


@contextlib.contextmanager
def connect(connect_string: str, timeout: float = 10.0, *, require_chroot: bool = True) -> Iterator[Any]:
    """Yield a started KazooClient rooted at the chroot; always stopped and closed afterwards.

    A missing chroot is an error (exit 1) unless require_chroot=False: a typo in the chroot would
    otherwise look like an empty cluster.
    """
    from kazoo.client import KazooClient
    from kazoo.exceptions import AuthFailedError, NoAuthError
    from kazoo.handlers.threading import KazooTimeoutError
    from kazoo.retry import KazooRetry

    hosts, chroot = split_connect_string(connect_string)
    # Reconnect after a dropped connection or a ZooKeeper leader change (the session survives if it
    # comes back within its timeout); reads retry across it (zookeeper.read), writes check what landed.
    retry = KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0)
    client = KazooClient(hosts=hosts, timeout=timeout, connection_retry=retry)
    try:
        try:
            client.start(timeout=timeout)
        except KazooTimeoutError:
            raise OperationalError(
                f"cannot connect to ZooKeeper at {hosts} within {timeout:g}s",
                hint="Check --zookeeper (or KAFKA_REASSIGN_ZOOKEEPER) and that ZooKeeper is running.",
            ) from None
        except AuthFailedError:
            raise OperationalError(f"ZooKeeper authentication failed at {hosts}") from None
        if chroot:
            try:
                exists = client.exists(chroot)
            except NoAuthError:
                raise OperationalError(f"ZooKeeper denied access to chroot {chroot}") from None
            if exists is None and require_chroot:
                raise OperationalError(
                    f"ZooKeeper chroot {chroot} does not exist at {hosts}",
                    hint="Use the same chroot as the brokers' zookeeper.connect.",
                )
            client.chroot = chroot
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.stop()
        with contextlib.suppress(Exception):
            client.close()
