"""Opening kafka-python's admin client with one-line failures, and the calls that have no ZooKeeper form."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from reassign_cli.errors import OperationalError
from reassign_cli.model import TopicPartition, tp_str


@contextlib.contextmanager
def admin_client(
    bootstrap: str, timeout: float = 30.0, config: Mapping[str, Any] | None = None
) -> Iterator[Any]:
    """kafka-python's admin client; `config`: --command-config's KafkaAdminClient arguments."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    kwargs = {"client_id": "kafka-reassign", "request_timeout_ms": int(timeout * 1000), **(config or {})}
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), **kwargs)
    except KafkaError as e:
        raise OperationalError(f"cannot connect to Kafka at {bootstrap}: {e}") from None
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
