"""What the sequencing modules (executor, unthrottle, leaders, canceller, verifier) ask of a cluster, as
operations, not znodes: a `Backend`.

Implementations: `zookeeper.backend.ZkBackend` (ZooKeeper mode), `admin.backend.AdminBackend` (the same
operations over kafka-python's KafkaAdminClient: KRaft, Kafka 4.x, and ZooKeeper-mode brokers too), and the
in-memory fake the sequencing unit tests use (tests/fakes.py). Pure: no I/O library is imported here
(tests/unit/test_purity.py).

Contract, for every implementation:
- `read_state` reads; nothing else is implied by it (no locks, no watches).
- Config updates are read-modify-writes: `fn` gets the entity's current config (keys as strings) and
  returns the wanted one; an implementation may call it again on a conflict, so it must be a pure function
  of its argument. Only configs whose content changes are written. The same for the prior-values record.
- `create_reassignment` and `start_election` are create-only: they never change a running one.
- A backend made by `as_dry_run` reads as its parent does, writes nothing, and lists in `planned_writes`
  every write it would have made, in order; its later reads see those writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition
from reassign_cli.core.throttle import Entity
from reassign_cli.errors import BusyError

ConfigFn = Callable[[dict[str, str]], dict[str, str]]
ConfigUpdate = tuple[Entity, str, ConfigFn]  # (entity, name, read-modify-write function)
RecordFn = Callable[[dict[str, Any]], dict[str, Any]]

Guard = Literal["none", "begin", "end", "idle"]
ConfigReader = Callable[[Entity, str], dict[str, str]]
# Given the record as it is now and a reader of current configs: the config updates and the new record, or
# None to change nothing (a precondition no longer holds).
ThrottlePlan = Callable[[dict[str, Any], ConfigReader], tuple[Sequence[ConfigUpdate], dict[str, Any]] | None]

ReplicaKey = tuple[str, int, int]  # (topic, partition, broker)
ReplicaDirs = dict[ReplicaKey, str]  # replica -> the log dir it should move to


class SetupInProgress(BusyError):
    """Another execute is between its throttle writes and its reassignment (its setup mark is held)."""


class SetupLost(BusyError):
    """This execute's setup mark is gone (its ZooKeeper session expired while it was paused): other runs
    may have acted since; it must not create its reassignment, only take back its own writes."""


@dataclass(slots=True)
class ConfigChange:
    """What one config write changed: the keys touched and their values before (None = absent)."""

    entity: Entity
    name: str
    before: dict[str, str | None]
    after: dict[str, str]


@dataclass(slots=True)
class ClearResult:
    """What a clear of our throttles did (verify, cancel, execute --wait): shown by render, kept by ops."""

    brokers: list[int]
    topics: list[str]
    changes: list[ConfigChange] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # throttle keys set by someone else, left alone
    # Brokers whose recorded throttles wait for them to register again (the admin API writes a broker's
    # config through that broker); their record entries stay.
    pending: list[int] = field(default_factory=list)
    # Every broker and topic our record named when the clear read it: the throttles of ours it found.
    recorded_brokers: list[int] = field(default_factory=list)
    recorded_topics: list[str] = field(default_factory=list)
    # The throttle keys kept, by entity: (entity, name) -> {key: value}; `kept` says the same in words.
    kept_keys: dict[tuple[Entity, str], dict[str, str]] = field(default_factory=dict)
    record_name: str = ""  # where this backend keeps its record ("ZooKeeper", "the admin API")

    @property
    def cleared_brokers(self) -> list[int]:
        """The brokers whose throttles of ours were restored (the record named them; not pending)."""
        return [b for b in self.recorded_brokers if b not in self.pending]

    @property
    def cleared_topics(self) -> list[str]:
        return list(self.recorded_topics)


@dataclass(frozen=True, slots=True)
class ZookeeperRecord:
    """The ZooKeeper backend's record as found through the brokers' zookeeper.connect."""

    zookeeper: str  # the brokers' zookeeper.connect (host:port,.../chroot)
    brokers: list[int] = field(default_factory=list)  # entities it holds throttles of ours for
    topics: list[str] = field(default_factory=list)
    unread: str | None = None  # why it could not be read (then brokers and topics are empty)

    @property
    def empty(self) -> bool:
        return not self.brokers and not self.topics


@dataclass(slots=True)
class PlannedWrite:
    """One write, as made (or, in a dry run, as it would be made). A znode write (op create, set or
    delete on a path), or an admin-API request (op the request's name, path what it acts on)."""

    op: str
    path: str
    data: bytes
    version: int | None = None  # expected version for set/delete
    sequential: bool = False
    kind: Literal["znode", "admin"] = "znode"

    def describe(self) -> str:
        if self.kind == "admin":
            return " ".join(x for x in (self.op, self.path, self.data.decode()) if x)
        what: str = self.op
        if self.sequential:
            what += " (sequential)"
        if self.version is not None:
            what += f" (if version {self.version})"
        body = "" if self.op == "delete" else " " + self.data.decode()
        return f"{what} {self.path}{body}"


class Backend(Protocol):
    """The reads and writes of reassignment, throttles and elections, as one cluster answers them."""

    # Whether the config of a broker that is not registered can be read and written: yes in ZooKeeper (a
    # znode); no through the admin API, where a broker's own config is changed through that broker.
    offline_broker_configs: bool
    # Whether the keys this tool recorded on a broker that is not registered can still be put back (written
    # without reading them, as the record says): through a KRaft controller (--bootstrap-controller).
    offline_broker_clear: bool

    # -- dry run ---------------------------------------------------------------------------------
    def as_dry_run(self) -> Backend:
        """The same cluster, with writes recorded instead of made."""
        ...

    def planned_writes(self) -> list[PlannedWrite]:
        """Dry run: every write that would have been made, in order (empty for a real backend)."""
        ...

    # -- reads -----------------------------------------------------------------------------------
    def read_state(
        self, topics: Iterable[str] | None = None, *, partition_state: bool = False
    ) -> ClusterState:
        """Brokers, topics (all, or those named that exist), deletions, the running reassignment; with
        partition_state, leader and ISR per partition."""
        ...

    def expect(self, targets: Mapping[TopicPartition, Sequence[int]]) -> None:
        """The replicas the caller expects these partitions to reach (verify: the plan's). A backend whose
        reads may trail the controller waits, on its next read, a bounded time for a partition that no
        longer moves to show them before reporting another set; one that reads the source of truth
        (ZooKeeper) ignores it."""
        ...

    def ensure_writable(self) -> None:
        """Raise OperationalError when this backend must not write to the cluster (ZooKeeper: a KRaft
        controller has taken over during a migration)."""
        ...

    # -- throttle configs and the record of their prior values -------------------------------------
    def read_config(self, entity: Entity, name: str) -> dict[str, str] | None:
        """An entity's config; None when it has none stored."""
        ...

    def read_priors(self) -> dict[str, Any]:
        """This tool's record of the throttle values that existed before it wrote any (throttle.py's
        record format); empty when there is none."""
        ...

    def zookeeper_record(self) -> ZookeeperRecord | None:
        """The admin API on a ZooKeeper-mode cluster: the ZooKeeper backend's record of the throttles it set
        there (which this backend cannot restore). None for the ZooKeeper backend and on KRaft."""
        ...

    def commit_throttles(
        self, plan: ThrottlePlan, *, guard: Guard = "none", record_last: bool = False, create: bool = True
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        """ONE fenced change of throttle configs and the record: `plan` gets the record and the configs as
        they are now, and the configs and the record it returns are committed together, against the
        record's version (on any conflict: read again, plan again). None when `plan` returned None.

        guard: "begin" also marks an execute as being set up (throttles written, reassignment not yet
        created; SetupInProgress when another holds the mark); "end" also ends this run's mark (undo);
        "idle" commits only while no execute is being set up (SetupInProgress otherwise). A change too large
        for one commit goes record first (record_last: record last), so no prior value is ever lost.
        create=False leaves an entity without a stored config alone."""
        ...

    # -- triggers --------------------------------------------------------------------------------
    def reassignment_bytes_limit(self) -> int | None:
        """The most bytes one `create_reassignment` can carry, as the trigger JSON (ZooKeeper: one znode);
        None when there is no limit worth splitting a plan for."""
        ...

    def create_reassignment(self, entries: Sequence[PlanEntry], *, additional: bool = False) -> bool:
        """Start moving `entries` to their replicas. False, with nothing changed, when another
        reassignment exists already (lost the race to create it). Ends this run's setup mark, if held,
        in the same commit, and moves the record's version on (a clear planned before it then conflicts).

        additional (execute --additional, KIP-455): added beside the reassignments running instead
        (AlterPartitionReassignments; in ZooKeeper mode through the brokers named beside --zookeeper,
        UsageError without them)."""
        ...

    def cancel_reassignments(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        """Revert the reassignment of `partitions` (AlterPartitionReassignments without a target, in both
        modes); returns those cancelled. A partition that is not reassigning is left out."""
        ...

    def start_election(self, partitions: Sequence[TopicPartition]) -> None:
        """Ask the controller to elect the preferred replicas of `partitions`. BusyError while an earlier
        election is still pending."""
        ...


class LogDirMoves(Protocol):
    """Replica moves between the log dirs of one broker (AlterReplicaLogDirs): an admin-API operation in
    both modes (ZooKeeper does not carry them)."""

    # The brokers that did not answer the last `describe`: their replicas' state is unknown (never read it
    # as "not moving": a copy may still run there).
    unanswered: list[int]

    def attempt(self, moves: ReplicaDirs) -> tuple[list[ReplicaKey], dict[ReplicaKey, str]]:
        """One round: (started, {replica: error name})."""
        ...

    def describe(self, moves: ReplicaDirs) -> dict[ReplicaKey, tuple[str | None, str | None]]:
        """DescribeLogDirs on the replicas of `moves` (replica -> its target dir): each one's (current log
        dir, future log dir), as its broker reports them; a replica in no live log dir (or on a broker that
        does not answer) is left out. A broker that names the replica as current in two dirs is swapping a
        finished copy in: reported as (the other dir, the target dir), a move still in progress."""
        ...

    def close(self) -> None: ...


class LogDirScan(LogDirMoves, Protocol):
    """LogDirMoves that can also list every move in flight (cancel --all has no plan to name them)."""

    def futures(self, brokers: Sequence[int]) -> dict[ReplicaKey, str]:
        """Every replica with a future copy (a move between log dirs in flight) on `brokers`: the future
        copy's log dir. The brokers that did not answer are kept in `unanswered`."""
        ...


def adds_moves(backend: object) -> bool:
    """Whether moves can be added beside the running ones (KIP-455's AlterPartitionReassignments): through
    the admin API (a backend with `add_reassignment`), and in ZooKeeper mode given the brokers too (its
    create_reassignment(additional=True) sends them through the brokers once the trigger znode is taken).
    Through ZooKeeper alone the create-only trigger znode takes one batch at a time."""
    if callable(getattr(backend, "add_reassignment", None)):
        return True
    return getattr(backend, "adds_beside", False) is True
