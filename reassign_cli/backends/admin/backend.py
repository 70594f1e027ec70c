"""`AdminBackend`: the `backend.Backend` operations over Kafka's admin API (kafka-python's KafkaAdminClient),
as Kafka's own kafka-reassign-partitions does them since 3.0: for KRaft clusters, Kafka 4.x, and
ZooKeeper-mode brokers from 2.4 alike.

- read_state: DescribeCluster (live, unfenced brokers and racks), Metadata (replicas, leader, ISR, topic ids)
  and ListPartitionReassignments (every reassignment of the cluster: AR/RR, and the controller's RS).
- configs: DescribeConfigs (the entity's own dynamic keys) and IncrementalAlterConfigs (SET/DELETE of the
  keys that change only: nothing else of the entity is touched). A broker's config goes through that
  broker, so brokers that are not registered are out of reach (`offline_broker_configs` False), except for
  the clear: with `--bootstrap-controller` (KRaft), the keys this tool recorded on a broker that is down
  are put back through the active controller (controller.py; `offline_broker_clear`).
- the prior-values record: the topic `__reassign_cli_throttles` (record_topic.py, core/record_log.py).
- create_reassignment: AlterPartitionReassignments, refused (False) while ListPartitionReassignments lists
  any, as Kafka's tool refuses; start_election: ElectLeaders (PREFERRED); cancel: AlterPartitionReassignments
  without targets. ensure_writable: nothing to guard (no ZooKeeper to go stale).
- a dry run (`as_dry_run`) shares the connection, reads through an overlay of what it would have written,
  and lists each request in `planned_writes`.
"""

from __future__ import annotations

import base64
import contextlib
import secrets
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from reassign_cli.backends.admin.client import cancel_reassignments, connect, list_reassignments
from reassign_cli.backends.admin.controller import ControllerClient
from reassign_cli.backends.admin.record_topic import RecordLog
from reassign_cli.backends.protocol import (
    ConfigChange,
    ConfigReader,
    ConfigUpdate,
    Guard,
    PlannedWrite,
    RecordFn,
    SetupInProgress,
    SetupLost,
    ThrottlePlan,
    ZookeeperRecord,
)
from reassign_cli.core import throttle as th
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.elect_rules import encode_election
from reassign_cli.core.model import Broker, ClusterState, PlanEntry, Topic, TopicPartition, tp_str
from reassign_cli.core.progress import passing_through
from reassign_cli.core.record_log import RENEW_SECONDS, TOPIC, Lease, LeaseWatch, topic_spec
from reassign_cli.core.throttle import Entity
from reassign_cli.core.znodes import encode_reassignment
from reassign_cli.errors import OperationalError

NO_SUCH_TOPIC = (3, 17)  # UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION (a name no topic can have)
OWN_SOURCE = {"topics": "DYNAMIC_TOPIC_CONFIG", "brokers": "DYNAMIC_BROKER_CONFIG"}
RESOURCE = {"topics": "TOPIC", "brokers": "BROKER"}
SETTLE_SECONDS = 10.0  # how long a broker's metadata may trail the controller's after a move ended
SETTLE_POLL = 0.1
NODE_GONE_SECONDS = 30.0  # how long a call retries while the node it was sent to is down
NODE_GONE_POLL = 0.5
MAX_RECORD_ROUNDS = 25
READ_BATCH = 500  # entities per DescribeConfigs request (each broker's own go to that broker)
SETUP_BUSY = (
    "another kafka-reassign run holds the record's lease right now (an execute between its throttle writes "
    "and its reassignment, or a clear taking throttles off)"
)


LEASE_LOST = (
    "this execute lost its setup lease (it was stalled past the lease, and another run took the record "
    "over): nothing was started, and the throttle writes it had not made yet were not made"
)


class _Conflict(Exception):
    """The record changed since a clear planned from it."""


def kafka_uuid(value: Any) -> str | None:
    """A topic id as Kafka writes it (URL-safe base64 of the 16 bytes, no padding; as in ZooKeeper)."""
    if value is None:
        return None
    u = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    if u.int == 0:
        return None
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


class AdminBackend:
    offline_broker_configs = False
    record_name = "the admin API"  # where the record of our throttles is: its record topic

    def __init__(
        self,
        options: AdminOptions,
        admin: Any,
        record: RecordLog,
        *,
        dry_run: bool = False,
        controller: ControllerClient | None = None,
    ) -> None:
        self.options = options
        self.controller = controller  # --bootstrap-controller: a down broker's recorded keys go through it
        self.offline_broker_clear = controller is not None
        self.admin = admin
        self.record = record
        self.dry_run = dry_run
        self.planned: list[PlannedWrite] = []
        self._configs: dict[tuple[Entity, str], dict[str, str]] = {}  # dry run: what it would have written
        self._record: dict[str, Any] | None = None  # dry run: the record it would have written
        self._live: set[int] | None = None
        # Moves this backend saw or started: partition -> the replica lists it can end with (target; origin
        # if cancelled), to tell its end from a broker's metadata that has not caught up yet.
        self._moving: dict[TopicPartition, list[list[int]]] = {}
        # The targets a fresh verify expects (`expect`): waited for only where the metadata may be trailing.
        self._expected: dict[TopicPartition, list[int]] = {}
        # Config keys this backend wrote and has not read back since: entity -> (when, {key: value, None:
        # deleted}).
        self._wrote: dict[tuple[Entity, str], tuple[float, dict[str, str | None]]] = {}
        self.run = secrets.token_hex(8)  # this run's name in the record's lease
        self.holding = False  # this run holds the setup lease
        self.watch = LeaseWatch()  # how long other runs' leases have been seen unrenewed
        self._renewed = 0.0  # when this run last wrote its lease (monotonic)
        self._renewer: _Renewer | None = None

    def as_dry_run(self) -> AdminBackend:
        return AdminBackend(self.options, self.admin, self.record, dry_run=True, controller=self.controller)

    def planned_writes(self) -> list[PlannedWrite]:
        return self.planned

    def _plan(self, op: str, what: str, data: bytes) -> None:
        self.planned.append(PlannedWrite(op, what, data, kind="admin"))

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from kafka.errors import KafkaConnectionError, KafkaError, NodeNotReadyError, UnknownBrokerIdError

        deadline = time.monotonic() + SETTLE_SECONDS
        node_deadline = time.monotonic() + NODE_GONE_SECONDS
        while True:
            try:
                return fn(*args, **kwargs)
            except (KafkaConnectionError, NodeNotReadyError) as e:
                # kafka-python sends the controller's requests to the node a Metadata answer named once (in
                # KRaft any live broker) and asks again only on NOT_CONTROLLER: when that node is down, every
                # later call fails. Forget it, so the next call asks a live node (docs/faults.md, KRaft).
                if time.monotonic() >= node_deadline:
                    raise OperationalError(f"{what} failed: {e}") from None
                self.admin._controller_id = None
                time.sleep(NODE_GONE_POLL)
            except UnknownBrokerIdError as e:
                # A broker that has just registered again, before the client's metadata names it: nothing
                # was sent; ask for fresh metadata and try again for a moment.
                if time.monotonic() >= deadline:
                    raise OperationalError(f"{what} failed: {e}") from None
                cluster = getattr(getattr(self.admin, "_client", None), "cluster", None)
                if cluster is not None:
                    cluster.request_update()
                time.sleep(SETTLE_POLL)
            except KafkaError as e:
                raise OperationalError(f"{what} failed: {e}") from None

    # -- reads -----------------------------------------------------------------------------------
    def read_state(
        self, topics: Iterable[str] | None = None, *, partition_state: bool = False
    ) -> ClusterState:
        cluster = self._call("DescribeCluster", self.admin.describe_cluster)
        brokers = sorted(
            (
                Broker(int(b["broker_id"]), b.get("rack"))
                for b in cluster["brokers"]
                if not b.get("is_fenced")
            ),
            key=lambda b: b.id,
        )
        self._live = {b.id for b in brokers}
        wanted = None if topics is None else sorted(set(topics))
        moving = list_reassignments(self.admin)
        topic_map = self._describe(wanted, partition_state)
        self._settle(topic_map, {(tp.topic, tp.partition) for tp in moving}, partition_state)
        elsewhere: set[TopicPartition] = set()
        for tp, r in moving.items():
            topic = topic_map.get(tp.topic)
            if topic is None:
                elsewhere.add((tp.topic, tp.partition))
                continue
            # The controller's answer (RS, AR, RR) over the broker's metadata, which may lag behind it.
            topic.replicas[tp.partition] = list(r["replicas"])  # type: ignore[index]
            if r["adding_replicas"]:
                topic.adding[tp.partition] = list(r["adding_replicas"])
            if r["removing_replicas"]:
                topic.removing[tp.partition] = list(r["removing_replicas"])
        # Moves that ended in topics this read left out are kept, to be waited for when they are read.
        unread = {tp: ends for tp, ends in self._moving.items() if tp[0] not in topic_map}
        self._moving = unread | {
            (tp.topic, tp.partition): [
                [b for b in r["replicas"] if b not in r["removing_replicas"]],
                [b for b in r["replicas"] if b not in r["adding_replicas"]],
            ]
            for tp, r in moving.items()
        }
        return ClusterState(brokers=brokers, topics=topic_map, reassigning_elsewhere=frozenset(elsewhere))

    def _describe(self, topics: list[str] | None, partition_state: bool) -> dict[str, Topic]:
        meta = [] if topics == [] else self._call("Metadata", self.admin.describe_topics, topics)
        return {t.name: t for t in (_topic(m, partition_state) for m in meta) if t is not None}

    def _settle(
        self, topic_map: dict[str, Topic], moving: set[TopicPartition], partition_state: bool
    ) -> None:
        """A move the last read saw (or this backend started), and the controller no longer lists, has ended
        at its target (or, if cancelled, its origin). A broker's metadata follows the controller's on its
        own, a moment later: until it shows one of those, read the topic again (for up to SETTLE_SECONDS)."""
        ended = {tp: ends for tp, ends in self._moving.items() if tp not in moving and tp[0] in topic_map}
        for (t, p), target in self._expected.items():
            shown = topic_map[t].replicas.get(p, []) if t in topic_map else []
            if (t, p) not in moving and passing_through(target, shown):
                ended.setdefault((t, p), [target])
        self._expected = {tp: r for tp, r in self._expected.items() if tp[0] not in topic_map}
        deadline = time.monotonic() + SETTLE_SECONDS
        while ended:
            lagging = {
                t
                for (t, p), ends in ended.items()
                if t in topic_map and list(topic_map[t].replicas.get(p, [])) not in ends
            }
            if not lagging or time.monotonic() >= deadline:
                return
            time.sleep(SETTLE_POLL)
            topic_map.update(self._describe(sorted(lagging), partition_state))

    def expect(self, targets: Mapping[TopicPartition, Sequence[int]]) -> None:
        """A fresh verify after a big move may read a broker's metadata that still shows the old replicas
        though the controller lists nothing (seen at 3,000 partitions under load): wait for the plan's
        targets as for a move this backend saw end (_settle), then report what the brokers show. Only where
        the metadata shows the replica set of a move to the target (core.progress.passing_through): a
        partition at its origin (a plan not run yet, a paced run's queued moves, a cancelled plan) is
        reported at once, without a wait."""
        self._expected.update({tp: list(r) for tp, r in targets.items()})

    def ensure_writable(self) -> None:
        """Nothing to guard: the admin API is how a KRaft cluster (and a migrating one) is written."""

    def _live_brokers(self) -> set[int]:
        if self._live is None:
            cluster = self._call("DescribeCluster", self.admin.describe_cluster)
            self._live = {int(b["broker_id"]) for b in cluster["brokers"] if not b.get("is_fenced")}
        return self._live

    def zookeeper_record(self) -> ZookeeperRecord | None:
        """On a ZooKeeper-mode cluster, the ZooKeeper backend's record of its throttles (admin/
        zookeeper_side.py); None on a KRaft cluster."""
        from reassign_cli.backends.admin.zookeeper_side import read_zookeeper_record, zookeeper_connect

        live = sorted(self._live_brokers())
        if not live:
            return None
        connect = self._call(
            "DescribeConfigs of a broker", zookeeper_connect, self.admin.describe_configs, live[0]
        )
        if connect is None:
            return None
        return read_zookeeper_record(connect, self.options.connect_timeout)

    # -- configs ---------------------------------------------------------------------------------
    def read_config(self, entity: Entity, name: str) -> dict[str, str] | None:
        if (entity, name) in self._configs:
            return dict(self._configs[(entity, name)])
        if entity == "brokers" and int(name) not in self._live_brokers():
            return None  # out of reach (see offline_broker_configs)
        own = self._describe_config(entity, name)
        # After our own write, a broker's view may trail the controller's for a moment: until it shows
        # what we wrote, ask again (until SETTLE_SECONDS after the write: past that, a difference is someone
        # else's change since, e.g. a faster rate set by another run while this one waited for the move).
        wrote_at, wrote = self._wrote.pop((entity, name), (0.0, None))
        deadline = wrote_at + SETTLE_SECONDS
        while wrote and any(own.get(k) != v for k, v in wrote.items()) and time.monotonic() < deadline:
            time.sleep(SETTLE_POLL)
            own = self._describe_config(entity, name)
        return own or None

    def _describe_config(self, entity: Entity, name: str) -> dict[str, str]:
        """The entity's own dynamic keys (not defaults, static or cluster-wide ones; no secrets)."""
        from kafka.admin import ConfigResource

        res = ConfigResource(RESOURCE[entity], name)
        answer = self._call(f"DescribeConfigs of {entity[:-1]} {name}", self.admin.describe_configs, [res])
        return _own(answer, entity, name)

    def read_configs(
        self, keys: Iterable[tuple[Entity, str]]
    ) -> dict[tuple[Entity, str], dict[str, str] | None]:
        """read_config of many entities in few requests: one DescribeConfigs per READ_BATCH topics, and one
        per broker for the brokers' own (kafka-python sends each to its broker). An entity this backend
        wrote and has not read back, or one of a dry run's overlay, is read alone (read_config)."""
        from kafka.admin import ConfigResource

        out: dict[tuple[Entity, str], dict[str, str] | None] = {}
        batch: list[tuple[Entity, str]] = []
        for key in dict.fromkeys(keys):
            if key in self._configs or key in self._wrote:
                out[key] = self.read_config(*key)
            elif key[0] == "brokers" and int(key[1]) not in self._live_brokers():
                out[key] = None
            else:
                batch.append(key)
        for i in range(0, len(batch), READ_BATCH):
            chunk = batch[i : i + READ_BATCH]
            resources = [ConfigResource(RESOURCE[e], n) for e, n in chunk]
            answer = self._call(
                f"DescribeConfigs of {len(chunk)} entities", self.admin.describe_configs, resources
            )
            out.update({(e, n): _own(answer, e, n) or None for e, n in chunk})
        return out

    def update_configs(self, updates: Sequence[ConfigUpdate], *, create: bool = True) -> list[ConfigChange]:
        """Each entity read, its function applied, and only the keys that change sent (SET or DELETE) in
        IncrementalAlterConfigs: keys nobody here touches are never part of the request. Unlike a znode
        there is no version to check: a change to one of the same keys between the read and the write is
        overwritten, as with Kafka's own tool."""
        changes: list[ConfigChange] = []
        sent: list[ConfigChange] = []  # the changes, and a restore's keys a read shows restored already
        stored_now = self.read_configs((e, n) for e, n, _ in updates)
        for entity, name, fn in updates:
            if entity == "brokers" and int(name) not in self._live_brokers():
                blind = _blind_change(name, fn) if self.controller is not None else None
                changes += [blind] if blind is not None else []
                sent += [blind] if blind is not None else []
                continue  # else out of reach (see offline_broker_configs)
            stored = stored_now[(entity, name)]
            exact = [] if self.dry_run else list(getattr(fn, "exact", ()))  # core.throttle.Restorer
            if stored is None and not create and not exact:
                continue
            current = stored or {}
            new = fn(dict(current))
            if entity == "topics":
                new = th.fit_replica_lists(new)
            keys = [k for k in new if current.get(k) != new[k]] + [k for k in current if k not in new]
            if keys:
                changes.append(_change(entity, name, keys, current, new))
            if keys or exact:  # one resource an entity: a request may not name one twice
                sent.append(
                    _change(entity, name, [*keys, *(k for k in exact if k not in keys)], current, new)
                )
        if sent:
            self.fence()
            self._alter(sent, create)
        return changes

    def _alter(self, changes: list[ConfigChange], create: bool) -> None:
        from kafka.admin import AlterConfigOp, ConfigResource

        down = [ch for ch in changes if ch.entity == "brokers" and int(ch.name) not in self._live_brokers()]
        changes = [ch for ch in changes if ch not in down]
        self._alter_through_controller(down)
        if self.dry_run:
            for ch in changes:
                ops = {k: ch.after.get(k) for k in ch.before}
                self._plan("IncrementalAlterConfigs", f"{ch.entity[:-1]} {ch.name}", _json(ops))
                cfg = dict(self.read_config(ch.entity, ch.name) or {})
                cfg.update(ch.after)
                for k in ch.before:
                    if k not in ch.after:
                        cfg.pop(k, None)
                self._configs[(ch.entity, ch.name)] = cfg
            return
        resources = [
            ConfigResource(
                RESOURCE[ch.entity],
                ch.name,
                {
                    k: (AlterConfigOp.SET, ch.after[k]) if k in ch.after else (AlterConfigOp.DELETE, None)
                    for k in ch.before
                },
            )
            for ch in changes
        ]
        result = self._call(
            "IncrementalAlterConfigs",
            self.admin.alter_configs,
            resources,
            raise_on_unknown=False,
            incremental=True,
        )
        for ch in changes:
            outcome = result.get(RESOURCE[ch.entity].lower(), {}).get(ch.name, "no answer")
            if outcome != "OK" and not (not create and ch.entity == "topics" and "UnknownTopic" in outcome):
                raise OperationalError(
                    f"IncrementalAlterConfigs on {ch.entity[:-1]} {ch.name} failed: {outcome}"
                )
            self._wrote[(ch.entity, ch.name)] = (time.monotonic(), {k: ch.after.get(k) for k in ch.before})

    def _alter_through_controller(self, changes: list[ConfigChange]) -> None:
        """The keys of brokers that are down, through the active KRaft controller (--bootstrap-controller);
        the broker applies them from the metadata log when it is registered again."""
        for ch in changes:
            ops = {k: ch.after.get(k) for k in ch.before}
            if self.dry_run:
                self._plan(
                    "IncrementalAlterConfigs", f"broker {ch.name} (through the controller)", _json(ops)
                )
                continue
            assert self.controller is not None
            self.controller.alter_broker(int(ch.name), ops)

    # -- the record of prior values --------------------------------------------------------------
    def read_priors(self) -> dict[str, Any]:
        if self._record is not None:
            return th.load_record(th.dump_record(self._record))
        return self.record.read()

    def update_priors(self, fn: RecordFn) -> dict[str, Any]:
        if not self.dry_run:
            return self.record.update(fn)
        current = self.read_priors()
        new = fn(th.load_record(th.dump_record(current)))
        if th.dump_record(new) != th.dump_record(current):
            data, create = self.record.planned(new)
            if create:
                rf, configs = topic_spec(len(self._live_brokers()))
                spec = {"partitions": 1, "replication_factor": rf, "configs": configs}
                self._plan("CreateTopics", TOPIC, _json(spec))
            for message in data:
                self._plan("Produce", f"{TOPIC}-0", message)
            self._record = th.load_record(th.dump_record(new))
        return new

    def commit_throttles(
        self, plan: ThrottlePlan, *, guard: Guard = "none", record_last: bool = False, create: bool = True
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        """The admin API has no multi-key transaction and no ephemeral node: the record (a log with an
        optimistic check, record_topic.py) is written FIRST when throttles are set and LAST when they are
        taken off, so no prior value is ever lost; the record's lease (core/record_log.py) stands in for the
        setup mark. guard "begin" takes the "setup" lease with the record write (SetupInProgress while
        another run holds a lease); "idle" (a clear) first takes a "clear" lease, so no execute writes the
        same throttles between its restores and its record write, and ends it with the record; "end" ends
        this run's setup lease with the record (docs/kraft.md)."""
        read = lambda e, n: self.read_config(e, n) or {}  # noqa: E731
        if self.dry_run:
            return self._commit_dry(plan, read, record_last, create)
        if not record_last:
            return self._commit_record_first(plan, read, guard, create)
        if guard == "idle":
            if self._holder(self.record.lease()) == "other":
                raise SetupInProgress(SETUP_BUSY)
            if plan(self.read_priors(), read) is None:
                return None  # something reassigns: nothing to take off, no lease to take
            self.record.transact(lambda rec, lease: (rec, self._take(lease, "clear")))
        try:
            return self._commit_record_last(plan, read, guard, create)
        finally:
            if guard in ("idle", "end"):
                self._release()

    def _holder(self, lease: Lease | None) -> str:
        return self.watch.holder(lease, self.run, time.monotonic())

    def _take(self, lease: Lease | None, kind: str) -> Lease:
        """This run's lease of `kind`; SetupInProgress while another run holds one."""
        if self._holder(lease) == "other":
            raise SetupInProgress(SETUP_BUSY)
        self._renewed = time.monotonic()
        return {"kind": kind, "run": self.run, "since": time.time()}

    def renew(self) -> None:
        """Write this run's setup lease again (a new `since`): fenced on the log, a renewal counts only if no
        other write ended after the one it read; SetupLost when the lease is no longer this run's."""

        def step(rec: dict[str, Any], lease: Lease | None) -> tuple[dict[str, Any], Lease | None]:
            if lease is None or self._holder(lease) != "mine":
                raise SetupLost(LEASE_LOST, hint="Run execute again once verify shows where things stand.")
            return rec, {**lease, "since": time.time()}

        self.record.transact(step)
        self._renewed = time.monotonic()

    def fence(self) -> None:
        """Before a throttle write or the reassignment of a setup: the lease renewed if RENEW_SECONDS have
        passed since it was last written (another run takes it only after seeing it unrenewed for
        LEASE_SECONDS), and SetupLost if the background renewal found it taken over."""
        if not self.holding:
            return
        if self._renewer is not None and self._renewer.lost is not None:
            self.holding = False
            raise self._renewer.lost
        if time.monotonic() - self._renewed >= RENEW_SECONDS:
            try:
                self.renew()
            except SetupLost:
                self.holding = False
                raise

    def _release(self) -> None:
        """End this run's lease, if it still holds it (best effort: a lease also ends by itself)."""
        if self._renewer is not None:
            self._renewer.stop()
            self._renewer = None
        with contextlib.suppress(OperationalError):
            self.record.transact(lambda rec, lease: (rec, None) if self._holder(lease) == "mine" else None)
        self.holding = False

    def _commit_record_first(
        self, plan: ThrottlePlan, read: ConfigReader, guard: Guard, create: bool
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        got: list[tuple[Sequence[ConfigUpdate], dict[str, Any]] | None] = []

        def step(rec: dict[str, Any], lease: Lease | None) -> tuple[dict[str, Any], Lease | None] | None:
            if guard == "begin":
                lease = self._take(lease, "setup")
            # The entities the plan reads, read in one go (DescribeConfigs of many), then the plan on them.
            asked: list[tuple[Entity, str]] = []

            def note(e: Entity, n: str) -> dict[str, str]:
                asked.append((e, n))
                return {}

            plan(rec, note)
            known = self.read_configs(asked)
            got[:] = [plan(rec, lambda e, n: dict(known[(e, n)] or {}) if (e, n) in known else read(e, n))]
            return None if got[0] is None else (got[0][1], lease)

        done = self.record.transact(step)
        if done is None or not got or got[0] is None:
            return None
        if guard == "begin" and not self.holding:
            self.holding = True
            self._renewer = _Renewer(self)
        return self.update_configs(got[0][0], create=create), done[0]

    def _commit_record_last(
        self, plan: ThrottlePlan, read: ConfigReader, guard: Guard, create: bool
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        """Restores first, then the record, written only if it is still the one planned from; if another
        run wrote it meanwhile, plan again from what it wrote (its restores applied too) and repeat."""
        changes: list[ConfigChange] = []
        for _ in range(MAX_RECORD_ROUNDS):
            first = self.read_priors()
            planned = plan(first, read)
            if planned is None:
                return None
            updates, new = planned
            changes += self.update_configs(updates, create=create)
            with contextlib.suppress(_Conflict):
                self.record.transact(_if_unchanged(first, new))
                return changes, new
        raise OperationalError(f"{TOPIC} kept changing under us; gave up after {MAX_RECORD_ROUNDS} rounds")

    def _commit_dry(
        self, plan: ThrottlePlan, read: ConfigReader, record_last: bool, create: bool
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        planned = plan(self.read_priors(), read)
        if planned is None:
            return None
        updates, new = planned
        if record_last:
            changes = self.update_configs(updates, create=create)
            return changes, self.update_priors(lambda _: new)
        self.update_priors(lambda _: new)
        return self.update_configs(updates, create=create), new

    # -- reassignments and elections -------------------------------------------------------------
    def reassignment_bytes_limit(self) -> int | None:
        return None  # one request of up to socket.request.max.bytes (100 MiB by default)

    def create_reassignment(self, entries: Sequence[PlanEntry], *, additional: bool = False) -> bool:
        if self.dry_run:
            self._plan("AlterPartitionReassignments", "", encode_reassignment(entries))
            return True
        try:
            created = self._create(entries, additional)
        except BaseException:
            if self.holding:  # refused, or killed: the setup is over (an undo may follow, unguarded)
                self._release()
            raise
        if created and self.holding:  # the reassignment exists: the setup is over
            self._release()
        return created

    def _create(self, entries: Sequence[PlanEntry], additional: bool) -> bool:
        self.fence()
        if not additional and list_reassignments(self.admin):
            return False
        self.add_reassignment(entries)
        return True

    def add_reassignment(self, entries: Sequence[PlanEntry]) -> None:
        """AlterPartitionReassignments for `entries` beside the moves already running (KIP-455): execute
        --max-moves-per-broker adds to its window this way."""
        from kafka import TopicPartition as KafkaTP

        if self.dry_run:
            self._plan("AlterPartitionReassignments", "", encode_reassignment(entries))
            return
        asked = {KafkaTP(e.topic, e.partition): list(e.replicas) for e in entries}
        result = self._call("AlterPartitionReassignments", self.admin.alter_partition_reassignments, asked)
        self._moving.update({(e.topic, e.partition): [list(e.replicas)] for e in entries})
        failed = {(tp.topic, tp.partition): err for tp, err in result.items() if err is not None}
        failed.update({(tp.topic, tp.partition): "no answer" for tp in asked if tp not in result})
        if failed:
            (tp, err), started = sorted(failed.items())[0], len(asked) - len(failed)
            name = getattr(err, "__name__", str(err))
            raise OperationalError(
                f"AlterPartitionReassignments refused {tp_str(tp)}: {name}"
                + (f" ({len(failed) - 1} more refused)" if len(failed) > 1 else ""),
                hint=f"{started} partitions were started; see kafka-reassign list" if started else None,
            )

    def cancel_reassignments(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        return cancel_reassignments(self.admin, partitions)

    def start_election(self, partitions: Sequence[TopicPartition]) -> None:
        if self.dry_run:
            self._plan("ElectLeaders", "PREFERRED", encode_election(partitions))
            return
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        response = self._call("ElectLeaders", self.admin.elect_leaders, 0, by_topic, raise_errors=False)
        _check_election(response)


def _if_unchanged(first: dict[str, Any], new: dict[str, Any]) -> Any:
    """A record transaction writing `new` only while the record is still `first` (_Conflict otherwise)."""
    planned_from = th.dump_record(first)

    def step(rec: dict[str, Any], lease: Lease | None) -> tuple[dict[str, Any], Lease | None]:
        if th.dump_record(rec) != planned_from:
            raise _Conflict
        return new, lease

    return step


def _check_election(response: Any) -> None:
    """Fail on errors other than "not needed" (already led) and "preferred replica not available" (it
    left the ISR since the read: the wait reports it)."""
    from kafka.errors import ElectionNotNeededError, NoError, PreferredLeaderNotAvailableError, for_code

    fine = (NoError, ElectionNotNeededError, PreferredLeaderNotAvailableError)
    top = for_code(getattr(response, "error_code", 0))
    if top not in fine:
        raise OperationalError(f"ElectLeaders failed: {top.__name__}")
    for result in response.replica_election_results:
        for part in result.partition_result:
            err = for_code(part.error_code)
            if err not in fine:
                raise OperationalError(
                    f"ElectLeaders failed for {result.topic}-{part.partition_id}: {err.__name__}"
                    + (f" ({part.error_message})" if part.error_message else "")
                )


def _topic(meta: dict[str, Any], partition_state: bool) -> Topic | None:
    if meta.get("error_code") in NO_SUCH_TOPIC:
        return None
    if meta.get("error_code"):
        raise OperationalError(
            f"Metadata of topic {meta.get('name')} failed: error code {meta['error_code']}"
        )
    parts = sorted(meta["partitions"], key=lambda p: p["partition_index"])
    topic = Topic(
        meta["name"],
        {p["partition_index"]: list(p["replica_nodes"]) for p in parts},
        topic_id=kafka_uuid(meta.get("topic_id")),
    )
    if partition_state:
        for p in parts:
            topic.leader[p["partition_index"]] = int(p["leader_id"])
            topic.isr[p["partition_index"]] = list(p["isr_nodes"])
    return topic


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@contextlib.contextmanager
def open_admin_backend(
    options: AdminOptions, controller: AdminOptions | None = None
) -> Iterator[AdminBackend]:
    """An AdminBackend on one admin client (and, when the record is used, one producer and consumer);
    `controller`: the KRaft controllers of --bootstrap-controller (connected to only when used)."""
    admin = connect(options)
    record = RecordLog(options, admin)
    backend = None
    try:
        client = ControllerClient(controller) if controller is not None else None
        backend = AdminBackend(options, admin, record, controller=client)
        yield backend
    finally:
        if backend is not None and backend._renewer is not None:
            backend._renewer.stop()
        record.close()
        with contextlib.suppress(Exception):
            admin.close()


_UNREAD = "\0unread"  # the value of a key of a broker that is down (its config cannot be read)


def _change(
    entity: Entity, name: str, keys: Sequence[str], current: Mapping[str, str], new: Mapping[str, str]
) -> ConfigChange:
    """The change of `keys` from `current` to `new` (a key not in `new` is deleted)."""
    return ConfigChange(
        entity, name, {k: current.get(k) for k in keys}, {k: new[k] for k in keys if k in new}
    )


def _blind_change(name: str, fn: Any) -> ConfigChange | None:
    """What `fn` does to broker `name`'s throttle keys, found without reading them (the broker is down): fn
    applied to every key set to a value no config has; a key it removes is deleted, a key it sets is set,
    a key it leaves alone is not touched. For a clear's restore this is exact (core.throttle
    restore_config). The values before are unknown and given as None."""
    probe = {k: _UNREAD for k in th.BROKER_KEYS}
    new = fn(dict(probe))
    after = {k: v for k, v in new.items() if v != _UNREAD}
    keys = sorted(set(after) | {k for k in probe if k not in new})
    return ConfigChange("brokers", name, dict.fromkeys(keys), after) if keys else None


def _own(answer: Mapping[str, Any], entity: Entity, name: str) -> dict[str, str]:
    """The entity's own dynamic keys in a DescribeConfigs answer (not defaults, static or cluster-wide
    ones; no secrets); {} for an entity it does not name (a topic that does not exist)."""
    configs = answer.get(RESOURCE[entity].lower(), {}).get(name, {})
    return {
        k: v["value"]
        for k, v in configs.items()
        if v.get("config_source") == OWN_SOURCE[entity] and v.get("value") is not None
    }


class _Renewer:
    """Renews a setup lease in the background while its execute works (a slow read, a stalled request), so
    that the lease stays with a run that is alive. A renewal that finds the lease taken over is kept in
    `lost` for the next fence (the execute then writes nothing more and starts nothing)."""

    def __init__(self, backend: AdminBackend) -> None:
        self.backend = backend
        self.lost: SetupLost | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reassign-lease", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(RENEW_SECONDS / 2):
            if time.monotonic() - self.backend._renewed < RENEW_SECONDS / 2:
                continue
            try:
                self.backend.renew()
            except SetupLost as e:
                self.lost = e
                return
            except OperationalError:
                continue  # the record unreachable for a moment: try again at the next tick

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
