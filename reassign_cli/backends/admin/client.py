"""Opening kafka-python's admin client with one-line failures, and the calls both backends share."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.model import TopicPartition, tp_str
from reassign_cli.errors import OperationalError


def connect(options: AdminOptions) -> Any:
    """A connected KafkaAdminClient; OperationalError (one line, no settings shown) when it cannot be."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    from reassign_cli.backends.admin.reach import HINT, check_reachable
    from reassign_cli.backends.admin.sasl_probe import check_plain_credentials

    check_reachable(options)  # a refused port, a bad name, ZooKeeper's port: one line now, not in 30 s
    check_plain_credentials(options)  # a wrong password: one line now, not "Unable to bootstrap" in 30 s
    try:
        return KafkaAdminClient(**options.client_settings())
    except KafkaError as e:
        raise OperationalError(f"cannot connect to Kafka at {options.bootstrap}: {e}", hint=HINT) from None
    except (OSError, ValueError) as e:  # e.g. an unreadable PEM file, a bad setting
        raise OperationalError(f"cannot connect to Kafka at {options.bootstrap}: {e}") from None


@contextlib.contextmanager
def admin_client(options: AdminOptions) -> Iterator[Any]:
    admin = connect(options)
    try:
        yield admin
    finally:
        with contextlib.suppress(Exception):
            admin.close()


CANCEL_CHUNK = 1000  # partitions per AlterPartitionReassignments request (cancel --all may hold thousands)
TIMEOUT_TRIES = 6  # per request: a controller busy with thousands of partitions may time out for a while
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 8.0  # seconds, doubled after each timeout


def _backoff(attempt: int) -> float:
    return min(BACKOFF_FIRST * 2 ** (attempt - 1), BACKOFF_MAX)


def _retriable(error: Any) -> bool:
    """A timeout, or an error Kafka marks retriable (NotController, a connection lost, ...), or the node
    kafka-python meant to send to no longer in its metadata (nothing was sent): the request may be sent
    again."""
    from kafka.errors import UnknownBrokerIdError

    return bool(getattr(error, "retriable", False)) or isinstance(error, UnknownBrokerIdError)


def _forget_controller(admin: Any, error: Exception) -> None:
    """kafka-python sends the controller's requests to the node a Metadata answer once named and asks again
    only on NOT_CONTROLLER: when that node is gone (down, or no longer in the client's metadata), forget it
    so that the retry asks a live node (as AdminBackend._call does; docs/faults.md, KRaft)."""
    from kafka.errors import KafkaConnectionError, NodeNotReadyError, UnknownBrokerIdError

    gone = (KafkaConnectionError, NodeNotReadyError, UnknownBrokerIdError)
    if isinstance(error, gone) and hasattr(admin, "_controller_id"):
        admin._controller_id = None


def list_reassignments(admin: Any, *, sleep: Callable[[float], None] = time.sleep) -> Any:
    """ListPartitionReassignments (every reassignment of the cluster, in one response: the request has no
    paging), retried on timeouts and retriable errors with a bounded backoff (TIMEOUT_TRIES times)."""
    from kafka.errors import KafkaError

    last: Exception | None = None
    for attempt in range(TIMEOUT_TRIES):
        if attempt:
            sleep(_backoff(attempt))
        try:
            return admin.list_partition_reassignments()
        except KafkaError as e:
            if not _retriable(e):
                raise OperationalError(f"ListPartitionReassignments failed: {e}") from None
            _forget_controller(admin, e)
            last = e
    raise OperationalError(f"ListPartitionReassignments failed {TIMEOUT_TRIES} times, the last with: {last}")


def cancel_reassignments(
    admin: Any,
    tps: Sequence[TopicPartition],
    *,
    chunk: int = CANCEL_CHUNK,
    sleep: Callable[[float], None] = time.sleep,
) -> list[TopicPartition]:
    """AlterPartitionReassignments with no target for each partition, `chunk` partitions per request;
    returns those cancelled. A partition the controller reports as not reassigning is simply not cancelled;
    a timeout or a retriable error (the whole request's or a partition's) is retried with a bounded backoff;
    any other error fails."""
    done: list[TopicPartition] = []
    ordered = sorted(set(tps))
    for i in range(0, len(ordered), chunk):
        done += _cancel_chunk(admin, ordered[i : i + chunk], sleep)
    return sorted(done)


def _cancel_chunk(
    admin: Any, tps: list[TopicPartition], sleep: Callable[[float], None]
) -> list[TopicPartition]:
    from kafka import TopicPartition as KafkaTP
    from kafka.errors import KafkaError, NoReassignmentInProgressError

    pending, done, retried = list(tps), [], set()
    for attempt in range(TIMEOUT_TRIES):
        if attempt:
            sleep(_backoff(attempt))
        try:
            results = admin.alter_partition_reassignments({KafkaTP(t, p): None for t, p in pending})
        except KafkaError as e:
            if not _retriable(e):
                raise OperationalError(f"AlterPartitionReassignments failed: {e}") from None
            _forget_controller(admin, e)
            retried |= set(pending)
            continue
        again: list[TopicPartition] = []
        for tp, err in sorted(results.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            key = (tp.topic, tp.partition)
            if err is None or (err is NoReassignmentInProgressError and key in retried):
                done.append(key)  # after a timeout, "not reassigning" may be our own earlier cancel
            elif _retriable(err):
                again.append(key)
            elif err is not NoReassignmentInProgressError:
                name = getattr(err, "__name__", str(err))
                raise OperationalError(f"cancelling the reassignment of {tp_str(key)} failed: {name}")
        retried |= set(again)
        pending = again
        if not pending:
            return done
    raise OperationalError(
        f"AlterPartitionReassignments timed out {TIMEOUT_TRIES} times; {len(pending)} partitions may still "
        f"reassign, e.g. {tp_str(pending[0])}",
        hint="Check with kafka-reassign list and run cancel --all again.",
    )


def add_reassignments(admin: Any, entries: Sequence[Any]) -> None:
    """AlterPartitionReassignments for `entries` (PlanEntry) beside whatever is reassigning (KIP-455); the
    ZooKeeper backend's --additional. A partition the controller refuses fails the command (the others
    were started)."""
    from kafka import TopicPartition as KafkaTP
    from kafka.errors import KafkaError

    asked = {KafkaTP(e.topic, e.partition): list(e.replicas) for e in entries}
    try:
        results = admin.alter_partition_reassignments(asked)
    except KafkaError as e:
        raise OperationalError(f"AlterPartitionReassignments failed: {e}") from None
    failed = sorted((tp.topic, tp.partition, err) for tp, err in results.items() if err is not None)
    if failed:
        t, p, err = failed[0]
        raise OperationalError(
            f"AlterPartitionReassignments refused {tp_str((t, p))}: {getattr(err, '__name__', err)}"
            + (f" ({len(failed) - 1} more refused)" if len(failed) > 1 else ""),
            hint="See kafka-reassign list for what was started.",
        )
