"""Replica moves between log dirs (AlterReplicaLogDirs) through kafka-python's admin client: the
`backend.LogDirMoves` of both modes, since ZooKeeper does not carry them."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from reassign_cli.backends.protocol import ReplicaDirs, ReplicaKey
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.errors import OperationalError


class LogDirMover:
    """Starts replica log-dir moves with KafkaAdminClient.alter_replica_log_dirs; connects on first use."""

    def __init__(self, options: AdminOptions | str, admin: Any = None) -> None:
        """`admin`: an admin client to use (and not close); by default one is opened on first use."""
        self.options = AdminOptions(options) if isinstance(options, str) else options
        self._admin: Any = admin
        self._own = admin is None
        self.unanswered: list[int] = []  # the brokers that did not answer the last describe

    def _client(self) -> Any:
        if self._admin is None:
            from reassign_cli.backends.admin.client import connect

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

    def describe(self, replicas: Sequence[ReplicaKey]) -> dict[ReplicaKey, tuple[str | None, str | None]]:
        """DescribeLogDirs on each broker concerned; log dirs that are offline (an error) are skipped, and the
        brokers that did not answer are kept in `unanswered`."""
        out: dict[ReplicaKey, tuple[str | None, str | None]] = {}
        answered, self.unanswered = self._log_dirs(replicas)
        for broker, dirs in answered:
            _note_dirs(out, broker, dirs)
        return {k: v for k, v in out.items() if k in set(replicas)}

    def replica_sizes(self, replicas: Sequence[ReplicaKey]) -> tuple[dict[ReplicaKey, int], list[int]]:
        """The size in bytes of each replica (its current log, not a future one being moved between log
        dirs), as its broker reports it to DescribeLogDirs; and the brokers that did not answer. Replicas
        in an offline log dir, or on a broker that does not answer, are left out."""
        out: dict[ReplicaKey, int] = {}
        answered, silent = self._log_dirs(replicas)
        for broker, dirs in answered:
            for d in dirs:
                if d.get("error_code"):
                    continue
                for topic in d["topics"]:
                    for part in topic["partitions"]:
                        if not part["is_future_key"]:
                            out[(topic["name"], part["partition_index"], broker)] = int(
                                part["partition_size"]
                            )
        wanted = set(replicas)
        return {k: v for k, v in out.items() if k in wanted}, silent

    def _log_dirs(
        self, replicas: Sequence[ReplicaKey]
    ) -> tuple[list[tuple[int, list[dict[str, Any]]]], list[int]]:
        """DescribeLogDirs on each broker holding one of `replicas`, for its partitions: (broker, its log
        dirs) for each broker that answered, and the brokers that did not."""
        from kafka.errors import KafkaError

        by_broker: dict[int, dict[str, list[int]]] = {}
        for t, p, b in replicas:
            by_broker.setdefault(b, {}).setdefault(t, []).append(p)
        answered: list[tuple[int, list[dict[str, Any]]]] = []
        silent: list[int] = []
        for broker, tps in sorted(by_broker.items()):
            try:
                answers = self._client().describe_log_dirs(tps, brokers=[broker])
            except KafkaError:
                silent.append(broker)  # its replicas are in no live log dir we know
                continue
            answered.extend((broker, answer["log_dirs"]) for answer in answers)
        return answered, silent

    def close(self) -> None:
        if self._admin is not None and self._own:
            with contextlib.suppress(Exception):
                self._admin.close()


def _note_dirs(
    out: dict[ReplicaKey, tuple[str | None, str | None]], broker: int, dirs: list[dict[str, Any]]
) -> None:
    for d in dirs:
        if d.get("error_code"):
            continue
        for topic in d["topics"]:
            for part in topic["partitions"]:
                key = (topic["name"], part["partition_index"], broker)
                current, future = out.get(key, (None, None))
                if part["is_future_key"]:
                    future = d["log_dir"]
                else:
                    current = d["log_dir"]
                out[key] = (current, future)
