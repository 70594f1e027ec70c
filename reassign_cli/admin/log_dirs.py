"""Replica moves between log dirs (AlterReplicaLogDirs) through kafka-python's admin client: the
`backend.LogDirMoves` of both modes, since ZooKeeper does not carry them."""

from __future__ import annotations

import contextlib
from typing import Any

from reassign_cli.backend import ReplicaDirs, ReplicaKey
from reassign_cli.client_config import AdminOptions
from reassign_cli.errors import OperationalError


class LogDirMover:
    """Starts replica log-dir moves with KafkaAdminClient.alter_replica_log_dirs; connects on first use."""

    def __init__(self, options: AdminOptions | str, admin: Any = None) -> None:
        """`admin`: an admin client to use (and not close); by default one is opened on first use."""
        self.options = AdminOptions(options) if isinstance(options, str) else options
        self._admin: Any = admin
        self._own = admin is None

    def _client(self) -> Any:
        if self._admin is None:
            from reassign_cli.admin.client import connect

            self._admin = connect(self.options)
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
        if self._admin is not None and self._own:
            with contextlib.suppress(Exception):
                self._admin.close()
