"""Opening kafka-python's admin client with one-line failures, and the calls both backends share."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.model import TopicPartition, tp_str
from reassign_cli.errors import OperationalError


def connect(options: AdminOptions) -> Any:
    """A connected KafkaAdminClient; OperationalError (one line, no settings shown) when it cannot be."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    from reassign_cli.backends.admin.sasl_probe import check_plain_credentials

    check_plain_credentials(options)  # a wrong password: one line now, not "Unable to bootstrap" in 30 s
    try:
        return KafkaAdminClient(**options.client_settings())
    except KafkaError as e:
        raise OperationalError(f"cannot connect to Kafka at {options.bootstrap}: {e}") from None
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


def cancel_reassignments(admin: Any, tps: Sequence[TopicPartition]) -> list[TopicPartition]:
    """AlterPartitionReassignments with no target for each partition; returns those cancelled. A partition
    the controller reports as not reassigning is simply not cancelled; any other error fails."""
    from kafka import TopicPartition as KafkaTP
    from kafka.errors import KafkaError, NoReassignmentInProgressError

    try:
        results = admin.alter_partition_reassignments({KafkaTP(t, p): None for t, p in tps})
    except KafkaError as e:
        raise OperationalError(f"AlterPartitionReassignments failed: {e}") from None
    done: list[TopicPartition] = []
    for tp, err in sorted(results.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
        key = (tp.topic, tp.partition)
        if err is None:
            done.append(key)
        elif err is not NoReassignmentInProgressError:
            name = getattr(err, "__name__", str(err))
            raise OperationalError(f"cancelling the reassignment of {tp_str(key)} failed: {name}")
    return done
