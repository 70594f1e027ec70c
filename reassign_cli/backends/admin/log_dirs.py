"""Replica moves between log dirs (AlterReplicaLogDirs) through kafka-python's admin client: the
`backend.LogDirMoves` of both modes, since ZooKeeper does not carry them."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from reassign_cli.backends.protocol import ReplicaDirs, ReplicaKey
from reassign_cli.core import disks
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.model import Capacity, LogDir
from reassign_cli.errors import OperationalError


class LogDirMover:
    """Starts replica log-dir moves with KafkaAdminClient.alter_replica_log_dirs; connects on first use."""

    def __init__(self, options: AdminOptions | str, admin: Any = None) -> None:
        """`admin`: an admin client to use (and not close); by default one is opened on first use."""
        self.options = AdminOptions(options) if isinstance(options, str) else options
        self._admin: Any = admin
        self._own = admin is None
        self.unanswered: list[int] = []  # the brokers that did not answer the last describe
        self.looks_shared: list[int] = []  # set by `survey`

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

    def describe(self, moves: ReplicaDirs) -> dict[ReplicaKey, tuple[str | None, str | None]]:
        """DescribeLogDirs on each broker concerned: each replica's (current, future) log dir; log dirs
        that are offline (an error) are skipped. A replica named as current in two dirs is being swapped
        (see `replica_dirs`). The brokers that did not answer are kept in `unanswered`."""
        seen: dict[ReplicaKey, list[tuple[str, bool]]] = {}
        answered, self.unanswered = self._log_dirs(list(moves))
        for broker, dirs in answered:
            _note_dirs(seen, broker, dirs)
        return {k: replica_dirs(seen[k], target) for k, target in moves.items() if k in seen}

    def futures(self, brokers: Sequence[int]) -> dict[ReplicaKey, str]:
        """DescribeLogDirs of every partition on each of `brokers`: each replica with a future copy (a
        move between log dirs in flight) and that copy's log dir; the brokers that did not answer are kept
        in `unanswered`."""
        from kafka.errors import KafkaError

        out: dict[ReplicaKey, str] = {}
        self.unanswered = []
        for broker in sorted(brokers):
            try:
                answers = self._client().describe_log_dirs(None, brokers=[broker])
            except KafkaError:
                self.unanswered.append(broker)
                continue
            seen: dict[ReplicaKey, list[tuple[str, bool]]] = {}
            for answer in answers:
                _note_dirs(seen, broker, answer["log_dirs"])
            out.update({k: d for k, copies in seen.items() for d, future in copies if future})
        return dict(sorted(out.items()))

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

    def copies(self, replicas: Sequence[ReplicaKey]) -> dict[ReplicaKey, list[tuple[str, bool, int]]]:
        """Each replica's copies in its broker's live log dirs: (log dir, is future, size in bytes), as
        DescribeLogDirs reports them (ops/log_dirs.py: a log-dir move's bytes). A replica in no live dir,
        or on a broker that did not answer, is left out; those brokers are kept in `unanswered`."""
        out: dict[ReplicaKey, list[tuple[str, bool, int]]] = {}
        answered, self.unanswered = self._log_dirs(replicas)
        wanted = set(replicas)
        for broker, dirs in answered:
            for d in dirs:
                if d.get("error_code"):
                    continue
                for topic in d["topics"]:
                    for part in topic["partitions"]:
                        key = (topic["name"], part["partition_index"], broker)
                        if key in wanted:
                            copy = (
                                str(d["log_dir"]),
                                bool(part["is_future_key"]),
                                int(part["partition_size"]),
                            )
                            out.setdefault(key, []).append(copy)
        return out

    def survey(self, brokers: Sequence[int], shared: bool = False) -> Survey:
        """Each broker's disks, in one DescribeLogDirs of all its partitions and one DescribeConfigs of its
        `cordoned.log.dirs`: its log dirs (core/disks.py), where its replicas are and their sizes, its
        capacity (`capacity_of`; `shared`: --shared-log-dirs; Kafka before 3.3, whose DescribeLogDirs
        stops at v3, gives none); `looks_shared` then lists the brokers whose log dirs look like one
        filesystem although `shared` was not given.
        A broker whose DescribeLogDirs fails is in `silent` and nowhere else; a DescribeConfigs that
        fails leaves its dirs' `cordoned` unknown unless DescribeLogDirs v5 says so.

        kafka-python (3.0+) speaks DescribeLogDirs v1-v5 and negotiates the newest the broker knows, so
        `total_bytes`/`usable_bytes` (v4+, KIP-827) and `is_cordoned` (v5) come through its own request
        class; below those versions it fills in the schema's defaults, -1 and false."""
        from kafka.errors import KafkaError

        out = Survey()
        self.looks_shared = []
        for broker in sorted(brokers):
            try:
                answers = self._client().describe_log_dirs(None, brokers=[broker])
            except KafkaError:
                out.silent.append(broker)
                continue
            dirs = [d for answer in answers for d in answer["log_dirs"]]
            out.dirs[broker], out.located[broker] = disks.broker_dirs(
                dirs, disks.cordoned_paths(self.cordoned_config(broker)), _error_name
            )
            cap = capacity_of(dirs, shared)
            if cap is not None:
                out.capacities[broker] = cap
                if not shared and looks_shared(dirs):
                    self.looks_shared.append(broker)
            del answers, dirs
        return out

    def cordoned_config(self, broker: int) -> str | None:
        """The broker's `cordoned.log.dirs` (KIP-1066, Kafka 4.3+), from DescribeConfigs; None when it
        has no such config (older Kafka) or the call failed."""
        from kafka.admin import ConfigResource
        from kafka.errors import KafkaError

        resource = ConfigResource("BROKER", str(broker), configs={CORDONED: None})
        try:
            answer = self._client().describe_configs([resource], config_filter="all")
        except KafkaError:
            return None
        entry = answer.get("broker", {}).get(str(broker), {}).get(CORDONED)
        if entry is None:
            return None
        value = entry.get("value")
        return "" if value is None else str(value)

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


CORDONED = "cordoned.log.dirs"


class Survey:
    """What `LogDirMover.survey` read: per broker that answered, its log dirs, where its replicas are
    (core/disks.py) and its capacity; the brokers that did not answer."""

    def __init__(self) -> None:
        self.dirs: dict[int, tuple[LogDir, ...]] = {}
        self.located: dict[int, disks.ReplicaLocations] = {}
        self.capacities: dict[int, Capacity] = {}
        self.silent: list[int] = []

    def replica_sizes(self, replicas: Sequence[ReplicaKey]) -> tuple[dict[ReplicaKey, int], list[int]]:
        """LogDirMover.replica_sizes from what was read: the sizes, and the brokers that did not answer."""
        return disks.replica_sizes(self.located, replicas), list(self.silent)


def _error_name(code: int) -> str:
    """Kafka's name of a DescribeLogDirs error code, e.g. KAFKA_STORAGE_ERROR."""
    from kafka.errors import for_code

    err = for_code(code)
    return str(getattr(err, "message", None) or err.__name__)


SAME_VOLUME = 0.001  # two log dirs of one total size whose usable bytes differ by less (x total): one volume


def _live(dirs: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """(total, usable) of each live log dir that reports them (v4+), sorted."""
    return sorted(
        (int(d["total_bytes"]), int(d["usable_bytes"]))
        for d in dirs
        if not d.get("error_code") and d.get("total_bytes", -1) >= 0 and d.get("usable_bytes", -1) >= 0
    )


def _volumes(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The sorted pairs with those of one volume counted once: dirs of equal total whose usable bytes
    differ by less than SAME_VOLUME of it (read a moment apart, a write may land in between)."""
    volumes = pairs[:1]
    for total, usable in pairs[1:]:
        last_total, last_usable = volumes[-1]
        if total != last_total or usable - last_usable > SAME_VOLUME * total:
            volumes.append((total, usable))
    return volumes


def capacity_of(dirs: Sequence[dict[str, Any]], shared: bool = False) -> Capacity | None:
    """A broker's capacity from its DescribeLogDirs answer: the sums of the total and usable bytes that
    its live log dirs report. Kafka reports, for each log dir, the filesystem it is on, and cannot say
    whether two log dirs share one: two disks of one size, equally full, look the same as one disk
    holding two dirs. So each log dir counts as its own disk; with `shared` (--shared-log-dirs), dirs
    that look like one filesystem (see `_volumes`) count once. None when no live log dir reports them."""
    pairs = _live(dirs)
    if not pairs:
        return None
    counted = _volumes(pairs) if shared else pairs
    return Capacity(sum(t for t, _ in counted), sum(u for _, u in counted), shared)


def looks_shared(dirs: Sequence[dict[str, Any]]) -> bool:
    """Whether two live log dirs report the same total bytes and usable bytes within SAME_VOLUME of it:
    one filesystem, most likely (or twin disks equally full; DescribeLogDirs cannot tell)."""
    pairs = _live(dirs)
    return len(_volumes(pairs)) < len(pairs)


def shared_note(brokers: Sequence[int]) -> str:
    """The warning for brokers whose log dirs look like one filesystem, counted as one disk each."""
    from reassign_cli.core.names import shorten

    return (
        f"broker(s) {shorten(list(brokers), sep=', ')}: two or more log dirs report the same total and "
        "usable bytes, as log dirs on one filesystem do; each counts as its own disk, so the capacity "
        "counts that filesystem once per log dir. If they share one, give --shared-log-dirs"
    )


def _note_dirs(
    seen: dict[ReplicaKey, list[tuple[str, bool]]], broker: int, dirs: list[dict[str, Any]]
) -> None:
    """Each replica's copies in the broker's live log dirs: (log dir, is future), in the answer's order."""
    for d in dirs:
        if d.get("error_code"):
            continue
        for topic in d["topics"]:
            for part in topic["partitions"]:
                key = (topic["name"], part["partition_index"], broker)
                seen.setdefault(key, []).append((d["log_dir"], bool(part["is_future_key"])))


def replica_dirs(copies: Sequence[tuple[str, bool]], target: str) -> tuple[str | None, str | None]:
    """(current, future) log dir of a replica from its copies as one broker reported them.

    A broker finishes a move by renaming the future copy's directory to the current name, and only then
    moves it from its future logs to its current logs and renames the old copy for deletion (Kafka's
    LogManager.replaceCurrentWithFutureLog, under the partition's lock; DescribeLogDirs takes no lock). An
    answer given in between names the replica as current in two dirs, neither of them future. That is a
    copy being swapped in, not two replicas: the copy in the target dir is the future one (a move to the
    target was asked for) and the move is still in progress; the next answer shows it done. (Neither in
    the target: someone else's move, being swapped in elsewhere.) Reading the second current copy as the
    replica's dir made `execute --wait` report "not being moved" and exit 5."""
    current = [d for d, future in copies if not future]
    future = [d for d, is_future in copies if is_future]
    if len(current) > 1:
        return next(d for d in current if d != target), (target if target in current else current[-1])
    return (current[0] if current else None), (future[0] if future else None)
