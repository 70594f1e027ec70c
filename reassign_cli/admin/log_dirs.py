"""Replica moves between log dirs (AlterReplicaLogDirs) through kafka-python's admin client: the
`backend.LogDirMoves` of both modes, since ZooKeeper does not carry them."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from reassign_cli.backend import ReplicaDirs, ReplicaKey
from reassign_cli.errors import OperationalError


class LogDirMover:
    """Starts replica log-dir moves with KafkaAdminClient.alter_replica_log_dirs; connects on first use."""

    def __init__(self, bootstrap: str, config: Mapping[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.config = dict(config or {})  # --command-config's KafkaAdminClient arguments
        self._admin: Any = None

    def _client(self) -> Any:
        if self._admin is None:
            from kafka.admin import KafkaAdminClient
            from kafka.errors import KafkaError

            try:
                kwargs = {"client_id": "kafka-reassign", **self.config}
                self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","), **kwargs)
            except KafkaError as e:
                raise OperationalError(f"cannot connect to Kafka at {self.bootstrap}: {e}") from None
        return self._admin

    def attempt(self, moves: ReplicaDirs) -> tuple[list[ReplicaKey], dict[ReplicaKey, str]]:
        """One AlterReplicaLogDirs round: (started, {replica: error name}) ."""
        from kafka.errors import KafkaError, NoError

        try:
            res = self._client().alter_replica_log_dirs(dict(moves))
        except KafkaError as e:
            raise OperationalError(f"AlterReplicaLogDirs failed: {e}") from None
        started: list[ReplicaKey] = []
        failed: dict[ReplicaKey, str] = {}
        for tpr, err in res.items():
            key = (tpr.topic, tpr.partition, tpr.broker_id)
            if err is NoError:
                started.append(key)
            else:
                failed[key] = getattr(err, "__name__", str(err))
        for key in moves:
            if key not in started and key not in failed:
                failed[key] = "NoResponse"
        return started, failed

    def close(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
