"""The health signals of a step (core/health.py) from ZooKeeper, the truth of a ZooKeeper-mode cluster, in
pipelined multiReads (read.py), never one round trip per partition:

- read_state with partition_state=True: /brokers/ids (the registered brokers), every topic znode (replicas
  and the in-flight moves' adding_replicas) and every partition's state znode (leader, ISR);
- one more wave: /controller_epoch, /config/brokers/<default>, and /config/topics/<t> of the topics whose
  min.insync.replicas is not cached yet.

What ZooKeeper cannot say:
- fenced: ZooKeeper mode has no fencing (a broker is registered or not): always None.
- offline replicas: a failed log dir is reported to the controller, not written to ZooKeeper, so offline
  here means on a broker that is not registered (as the controller counts it for a dead broker).
- a broker's static default of min.insync.replicas (server.properties) is not in ZooKeeper: a topic with
  no value of its own takes the cluster-wide dynamic default (/config/brokers/<default>) if set, else
  `broker_default` (a step with the brokers asks one with admin/health.py's broker_default_min_isr), else
  Kafka's default 1, with a note. (A step may also prefill `min_isr_cache` through the brokers with
  admin/health.py's fill_min_isr.)

Will be used by the step of a stored plan (DESIGN.md §5a); nothing calls it yet but tests.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from reassign_cli.backends.zookeeper.read import Request, fetch, read_state
from reassign_cli.backends.zookeeper.session import ZkSession
from reassign_cli.core.health import DEFAULT_MIN_ISR, PartitionHealth, Signals
from reassign_cli.core.model import ClusterState, TopicPartition
from reassign_cli.core.znodes import decode_entity_config, entity_config_path

CONTROLLER_EPOCH = "/controller_epoch"
MIN_ISR = "min.insync.replicas"
DEFAULT_ENTITY = "<default>"


def gather(
    session: ZkSession,
    *,
    min_isr_cache: MutableMapping[str, int] | None = None,
    broker_default: int | None = None,
) -> Signals:
    """The cluster's health signals from ZooKeeper: 3 waves of read_state and one more (see above).
    broker_default: the brokers' own min.insync.replicas default when they are given (admin/health.py
    broker_default_min_isr), used after /config/brokers/<default>; without it, Kafka's default 1."""
    state = read_state(session, partition_state=True)
    cache = min_isr_cache if min_isr_cache is not None else {}
    todo = sorted(t for t in state.topics if t not in cache)
    wave: list[Request] = [("get", CONTROLLER_EPOCH), ("get", entity_config_path("brokers", DEFAULT_ENTITY))]
    wave += [("get", entity_config_path("topics", t)) for t in todo]
    answers: list[Any] = [None] * len(wave)

    def keep(i: int, data: Any) -> None:
        answers[i] = data

    session.reading(lambda: fetch(session, wave, keep))
    notes: list[str] = []
    epoch = _epoch(answers[0], notes)
    dynamic_default = _min_isr(decode_entity_config(wave[1][1], answers[1]))
    default = dynamic_default if dynamic_default is not None else broker_default
    unknown = 0
    for t, data in zip(todo, answers[2:], strict=True):
        own = _min_isr(decode_entity_config(entity_config_path("topics", t), data))
        value = own if own is not None else default
        if value is None:
            unknown += 1
            value = DEFAULT_MIN_ISR
        cache[t] = value
    if unknown:
        notes.append(
            f"min.insync.replicas of {unknown} topics not in ZooKeeper (a broker's static default is not): "
            f"taken as Kafka's default {DEFAULT_MIN_ISR}"
        )
    return Signals(
        registered=frozenset(b.id for b in state.brokers),
        fenced=None,
        partitions=partitions(state),
        min_isr={t: cache[t] for t in state.topics},
        controller_epoch=epoch,
        notes=tuple(notes),
    )


def partitions(state: ClusterState) -> dict[TopicPartition, PartitionHealth]:
    """Every partition of a read_state(partition_state=True): offline replicas are those on brokers not
    registered; a partition without a state znode (being created) reads as leaderless with an empty ISR;
    topics being deleted are left out."""
    live = {b.id for b in state.brokers}
    out: dict[TopicPartition, PartitionHealth] = {}
    for name, topic in state.topics.items():
        if name in state.deleting:
            continue  # its partitions lose their leaders on purpose
        for p, replicas in topic.replicas.items():
            out[(name, p)] = PartitionHealth(
                leader=topic.leader.get(p, -1),
                replicas=tuple(replicas),
                isr=tuple(topic.isr.get(p, ())),
                offline=tuple(b for b in replicas if b not in live),
                adding=tuple(topic.adding.get(p, ())),
            )
    return out


def controller_epoch(session: ZkSession) -> int | None:
    """/controller_epoch alone (for an admin-API step on a ZooKeeper-mode cluster with --zookeeper given):
    the epoch, or None when the znode is missing or unreadable."""
    data, _ = session.get(CONTROLLER_EPOCH)
    return _epoch(data, [])


def _epoch(data: bytes | None, notes: list[str]) -> int | None:
    if data is None:
        notes.append(f"controller epoch unknown: no {CONTROLLER_EPOCH}")
        return None
    try:
        return int(data.decode().strip())
    except (UnicodeDecodeError, ValueError):
        notes.append(f"controller epoch unknown: {CONTROLLER_EPOCH} holds {data[:40]!r}")
        return None


def _min_isr(config: dict[str, str]) -> int | None:
    try:
        return int(config[MIN_ISR])
    except (KeyError, ValueError):
        return None
