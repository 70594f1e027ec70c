"""An in-memory `backend.Backend` for unit tests of the sequencing modules.

`FakeCluster` holds what a cluster would: the state, the entity configs, this tool's prior-values record,
and a few switches for what the cluster does (refuse writes during a migration, lose the create race,
finish a reassignment at once). `FakeBackend` answers the Backend operations from it and appends every
operation, reads included, to `cluster.log`, in the order they were asked for:

    ("read_state", topics or None, partition_state)   ("ensure_writable",)
    ("read_config", entity, name)                      ("read_priors",)
    ("write_configs", ((entity, name, new config), ...))   one commit, configs in the order given
    ("write_priors", record)   ("delete_priors",)
    ("create_reassignment", ((topic, partition, (replicas...)), ...), created: bool)
    ("add_reassignment", ((topic, partition, (replicas...)), ...))   --additional beside a running one
    ("cancel_reassignments", ((topic, partition), ...))
    ("start_election", ((topic, partition), ...))

A dry-run copy (`as_dry_run`) logs its reads the same way and its writes as ("planned", op, what): it
writes to copies of the configs and record (its later reads see them) and to `planned_writes`, never to the
cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from reassign_cli.backends.protocol import (
    ConfigChange,
    ConfigUpdate,
    Guard,
    PlannedWrite,
    RecordFn,
    SetupInProgress,
    ThrottlePlan,
)
from reassign_cli.core import throttle as th
from reassign_cli.core.model import Broker, ClusterState, PlanEntry, Topic, TopicPartition
from reassign_cli.core.throttle import Entity
from reassign_cli.core.validate import max_trigger_bytes
from reassign_cli.errors import BusyError, OperationalError

WRITES = (
    "write_configs",
    "write_priors",
    "delete_priors",
    "create_reassignment",
    "add_reassignment",
    "cancel_reassignments",
    "start_election",
)


def make_state(
    partitions: Mapping[str, Mapping[int, list[int]]], brokers: Iterable[int] = (1, 2, 3)
) -> ClusterState:
    """Topics with every replica in the ISR and the first one leading; no reassignment."""
    topics = {
        name: Topic(
            name,
            {p: list(r) for p, r in parts.items()},
            isr={p: list(r) for p, r in parts.items()},
            leader={p: r[0] for p, r in parts.items()},
        )
        for name, parts in partitions.items()
    }
    return ClusterState(brokers=[Broker(b) for b in sorted(brokers)], topics=topics)


@dataclass
class FakeCluster:
    state: ClusterState
    configs: dict[tuple[Entity, str], dict[str, str]] = field(default_factory=dict)
    record: dict[str, Any] | None = None  # None: no record stored
    migrating: bool = False  # a KRaft controller has taken over: ensure_writable refuses
    lose_create_race: bool = False  # someone else's reassignment appears just before our create
    complete_on_create: bool = True  # the controller finishes a created reassignment at once
    election_pending: bool = False
    # False, as through the admin API: a broker's config is out of reach while it is not registered.
    offline_broker_configs: bool = True
    bytes_limit: int | None = field(default_factory=max_trigger_bytes)  # one create's limit (ZooKeeper's)
    # As the admin API: a read of some topics also names the reassigning partitions of the others.
    lists_all_reassignments: bool = False
    setup_held: bool = False  # an execute's setup mark (backend.commit_throttles guard)
    log: list[tuple[Any, ...]] = field(default_factory=list)

    def writes(self) -> list[tuple[Any, ...]]:
        return [op for op in self.log if op[0] in WRITES]


class FakeBackend:
    def __init__(self, cluster: FakeCluster, *, dry_run: bool = False) -> None:
        self.cluster = cluster
        self.dry_run = dry_run
        self.planned: list[PlannedWrite] = []
        # A dry run writes to its own copies, so that its later reads see what it would have written.
        self._configs = copy.deepcopy(cluster.configs) if dry_run else cluster.configs
        self._record = copy.deepcopy(cluster.record) if dry_run else None

    def _log(self, *op: Any) -> None:
        self.cluster.log.append(op)

    @property
    def offline_broker_configs(self) -> bool:
        return self.cluster.offline_broker_configs

    def zookeeper_record(self) -> None:
        return None

    offline_broker_clear = False  # no controller to write through

    # -- dry run -------------------------------------------------------------------------------
    def as_dry_run(self) -> FakeBackend:
        return FakeBackend(self.cluster, dry_run=True)

    def planned_writes(self) -> list[PlannedWrite]:
        return self.planned

    def _plan(self, op: str, path: str, data: bytes) -> None:
        self._log("planned", op, path)
        self.planned.append(PlannedWrite("delete" if op == "delete" else "set", path, data))

    # -- reads ---------------------------------------------------------------------------------
    def expect(self, targets: Any) -> None:
        self._log("expect", len(targets))

    def read_state(
        self, topics: Iterable[str] | None = None, *, partition_state: bool = False
    ) -> ClusterState:
        wanted = None if topics is None else tuple(topics)
        self._log("read_state", wanted, partition_state)
        state = copy.deepcopy(self.cluster.state)
        if wanted is not None:
            if self.cluster.lists_all_reassignments:
                state.reassigning_elsewhere = frozenset(
                    (name, p)
                    for name, topic in state.topics.items()
                    if name not in wanted
                    for p in topic.replicas
                    if topic.is_reassigning(p)
                )
            state.topics = {t: state.topics[t] for t in wanted if t in state.topics}
        return state

    def ensure_writable(self) -> None:
        self._log("ensure_writable")
        if self.cluster.migrating:
            raise OperationalError("refusing to write: a KRaft controller has taken over")

    def read_config(self, entity: Entity, name: str) -> dict[str, str] | None:
        self._log("read_config", entity, name)
        cfg = self._configs.get((entity, name))
        return None if cfg is None else dict(cfg)

    def read_priors(self) -> dict[str, Any]:
        self._log("read_priors")
        return self._current_record()

    def _current_record(self) -> dict[str, Any]:
        rec = self._record if self.dry_run else self.cluster.record
        return th.load_record(None if rec is None else th.dump_record(rec))

    # -- writes --------------------------------------------------------------------------------
    def update_configs(self, updates: Sequence[ConfigUpdate], *, create: bool = True) -> list[ConfigChange]:
        written: list[tuple[Entity, str, dict[str, str]]] = []
        changes: list[ConfigChange] = []
        for entity, name, fn in updates:
            stored = self._configs.get((entity, name))
            if stored is None and not create:
                continue
            current = dict(stored or {})
            new = fn(dict(current))
            if (stored is not None and new == current) or (stored is None and not new):
                continue
            keys = [k for k in new if current.get(k) != new[k]] + [k for k in current if k not in new]
            changes.append(
                ConfigChange(
                    entity, name, {k: current.get(k) for k in keys}, {k: new[k] for k in keys if k in new}
                )
            )
            written.append((entity, name, new))
        for entity, name, new in written:
            self._configs[(entity, name)] = dict(new)
            if self.dry_run:
                self._plan("set", f"config {entity}/{name}", orjson.dumps(new, option=orjson.OPT_SORT_KEYS))
        if written and not self.dry_run:
            self._log("write_configs", tuple((e, n, dict(c)) for e, n, c in written))
        return changes

    def update_priors(self, fn: RecordFn) -> dict[str, Any]:
        before = self._record if self.dry_run else self.cluster.record
        new = fn(self._current_record())
        if th.record_is_empty(new):
            if before is not None:
                self._store_record(None)
            return new
        if before is None or th.dump_record(new) != th.dump_record(before):
            self._store_record(th.load_record(th.dump_record(new)))
        return new

    def commit_throttles(
        self, plan: ThrottlePlan, *, guard: Guard = "none", record_last: bool = False, create: bool = True
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        """As the ZooKeeper backend's one transaction, without concurrency: the setup mark checked and
        moved, then the record and the configs (the record last with record_last)."""
        if guard in ("begin", "idle") and self.cluster.setup_held:
            raise SetupInProgress("another execute is being set up")
        planned = plan(self.read_priors(), lambda e, n: self.read_config(e, n) or {})
        if planned is None:
            return None
        updates, record = planned
        if guard in ("begin", "end") and not self.dry_run:
            self.cluster.setup_held = guard == "begin"
            self._log("setup", guard)
        if record_last:
            changes = self.update_configs(updates, create=create)
            self.update_priors(lambda _r: record)
        else:
            self.update_priors(lambda _r: record)
            changes = self.update_configs(updates, create=create)
        return changes, record

    def _store_record(self, record: dict[str, Any] | None) -> None:
        if self.dry_run:
            self._record = record
            data = b"" if record is None else th.dump_record(record)
            self._plan("delete" if record is None else "set", "record", data)
            return
        self.cluster.record = record
        self._log(*(("delete_priors",) if record is None else ("write_priors", copy.deepcopy(record))))

    def create_reassignment(self, entries: Sequence[PlanEntry], *, additional: bool = False) -> bool:
        entry_ops = tuple((e.topic, e.partition, tuple(e.replicas)) for e in entries)
        if self.dry_run:
            self._plan("create", "reassignment", repr(entry_ops).encode())
            return True
        state = self.cluster.state
        if self.cluster.lose_create_race:
            state.reassignment = {("other", 0): [1]}  # someone else's, created just before ours
        if state.reassignment is not None and additional:
            self._log("add_reassignment", entry_ops)
            state.reassignment.update({(e.topic, e.partition): list(e.replicas) for e in entries})
            return True
        if state.reassignment is not None:
            self._log("create_reassignment", entry_ops, False)
            return False
        self._log("create_reassignment", entry_ops, True)
        self.cluster.setup_held = False
        if not self.cluster.complete_on_create:
            state.reassignment = {(e.topic, e.partition): list(e.replicas) for e in entries}
            return True
        for e in entries:
            topic = state.topics[e.topic]
            topic.replicas[e.partition] = list(e.replicas)
            topic.isr[e.partition] = list(e.replicas)
            topic.leader[e.partition] = e.replicas[0]
        return True

    def reassignment_bytes_limit(self) -> int | None:
        return self.cluster.bytes_limit

    def cancel_reassignments(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        """Every partition that reassigns goes back to its origin replicas at once."""
        self._log("cancel_reassignments", tuple(partitions))
        done: list[TopicPartition] = []
        for t, p in partitions:
            topic = self.cluster.state.topics.get(t)
            if topic is None or not topic.is_reassigning(p):
                continue
            origin = topic.origin(p)
            topic.replicas[p] = list(origin)  # type: ignore[index]
            topic.adding.pop(p, None)
            topic.removing.pop(p, None)
            done.append((t, p))
        if self.cluster.state.reassignment is not None:
            for tp in done:
                self.cluster.state.reassignment.pop(tp, None)
            if not self.cluster.state.reassignment:
                self.cluster.state.reassignment = None
        return done

    def start_election(self, partitions: Sequence[TopicPartition]) -> None:
        if self.dry_run:
            self._plan("create", "election", repr(tuple(partitions)).encode())
            return
        if self.cluster.election_pending:
            raise BusyError("A preferred leader election is already in progress")
        self._log("start_election", tuple(partitions))
        for t, p in partitions:
            topic = self.cluster.state.topics[t]
            topic.leader[p] = topic.replicas[p][0]
