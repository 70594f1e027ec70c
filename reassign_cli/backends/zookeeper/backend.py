"""`ZkBackend`: the `backend.Backend` operations over one ZooKeeper session, as ZooKeeper-mode Kafka reads
and writes them (pipelined state reads, versioned config writes with change notifications, our record at
/reassign_cli/throttles, create-only triggers)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reassign_cli.backends.protocol import ConfigChange, Guard, PlannedWrite, ThrottlePlan
from reassign_cli.backends.zookeeper.configs import ConfigStore
from reassign_cli.backends.zookeeper.election import election_batches, start_elections
from reassign_cli.backends.zookeeper.fenced import TRIGGER_COMPANIONS, FencedThrottles
from reassign_cli.backends.zookeeper.read import read_state
from reassign_cli.backends.zookeeper.session import ZkSession
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.elect_rules import ELECTION_PATH, encode_election
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition
from reassign_cli.core.throttle import Entity
from reassign_cli.core.validate import max_trigger_bytes
from reassign_cli.core.znodes import REASSIGN_PARTITIONS, encode_reassignment
from reassign_cli.errors import UsageError

ADDITIONAL_NEEDS_BROKERS = (
    "--additional needs --bootstrap-server beside --zookeeper: a running reassignment is added to through "
    "the brokers (AlterPartitionReassignments), as Kafka 2.8's tool required"
)


class ZkBackend:
    """Reads and writes through `session`; with dry_run, writes are recorded (`planned_writes`) and later
    reads see them, nothing is written. `admin`: the brokers for what ZooKeeper does not carry (cancel)."""

    offline_broker_configs = True  # /config/brokers/<id> is a znode, whether the broker runs or not
    record_name = "ZooKeeper"  # where the record of our throttles is: /reassign_cli/throttles
    offline_broker_clear = False  # not needed: offline_broker_configs

    def __init__(
        self, session: ZkSession, *, dry_run: bool = False, admin: AdminOptions | None = None
    ) -> None:
        self.session = session
        self.dry_run = dry_run
        self.admin = admin
        self.store = ConfigStore(session, dry_run=dry_run)
        self.fenced = FencedThrottles(self.store)

    @property
    def adds_beside(self) -> bool:
        """Moves can be added beside running ones (backends.protocol.adds_moves): with the brokers given."""
        return self.admin is not None

    def as_dry_run(self) -> ZkBackend:
        return ZkBackend(self.session, dry_run=True, admin=self.admin)

    def planned_writes(self) -> list[PlannedWrite]:
        return self.store.planned

    def read_state(
        self, topics: Iterable[str] | None = None, *, partition_state: bool = False
    ) -> ClusterState:
        return read_state(self.session, topics=topics, partition_state=partition_state)

    def expect(self, targets: Mapping[TopicPartition, Sequence[int]]) -> None:
        """ZooKeeper is what the controller writes: nothing trails it."""

    def ensure_writable(self) -> None:
        self.store.ensure_zk_controller()

    def read_config(self, entity: Entity, name: str) -> dict[str, str] | None:
        return self.store.get_config(entity, name)

    def read_priors(self) -> dict[str, Any]:
        return self.store.read_priors()

    def zookeeper_record(self) -> None:
        return None  # this backend's own record: read_priors

    def commit_throttles(
        self, plan: ThrottlePlan, *, guard: Guard = "none", record_last: bool = False, create: bool = True
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        return self.fenced.commit(plan, guard, record_last, create)

    def reassignment_bytes_limit(self) -> int | None:
        """One znode's worth, less the room for what goes with the trigger's create in its transaction
        (the setup mark's delete, the record's head rewritten: zookeeper/fenced.create_trigger)."""
        return max_trigger_bytes() - TRIGGER_COMPANIONS

    def cancel_reassignments(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        """Through the admin API (ZooKeeper-mode controllers take AlterPartitionReassignments since 2.4)."""
        from reassign_cli.backends.admin.client import admin_client, cancel_reassignments

        if self.admin is None:
            raise UsageError(
                "--bootstrap-server is required: the cancel goes through the admin API "
                "(or set KAFKA_REASSIGN_BOOTSTRAP)"
            )
        with admin_client(self.admin) as client:
            return cancel_reassignments(client, partitions)

    def create_reassignment(self, entries: Sequence[PlanEntry], *, additional: bool = False) -> bool:
        """The create-only trigger znode; with `additional` and the znode taken (and no setup mark held:
        --additional takes none beside a running reassignment), AlterPartitionReassignments through the
        brokers, as Kafka 2.8's tool did with --additional (it needed --bootstrap-server; the controller
        lets the newest request win over the znode's entry for a partition)."""
        data = encode_reassignment(entries)
        if additional and self.admin is None:
            raise UsageError(ADDITIONAL_NEEDS_BROKERS)
        if self.dry_run:
            self.store.planned.append(PlannedWrite("create", REASSIGN_PARTITIONS, data))
            return True
        if self.fenced.create_trigger(data):
            return True
        if not additional or self.fenced.holding:
            return False
        from reassign_cli.backends.admin.client import add_reassignments, admin_client

        assert self.admin is not None
        with admin_client(self.admin) as client:
            add_reassignments(client, entries)
        return True

    def start_election(self, partitions: Sequence[TopicPartition]) -> None:
        """One election znode per batch that fits one (zookeeper/election.py)."""
        if self.dry_run:
            for batch in election_batches(partitions, max_trigger_bytes()):
                self.store.planned.append(PlannedWrite("create", ELECTION_PATH, encode_election(batch)))
            return
        start_elections(self.session, partitions)
