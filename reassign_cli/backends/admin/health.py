"""The health signals of a step (core/health.py) through the admin API, in a few batched requests:

- DescribeCluster (one request): the registered brokers; with version 2 (Kafka 4.0+, KIP-1073,
  IncludeFencedBrokers, which kafka-python 3 sets) fenced brokers too, each marked. An older cluster
  (ZooKeeper mode, KRaft before 4.0) lists only its live, unfenced brokers: `fenced` is then None.
- Metadata of every topic (one request, v5+): leader, replicas, ISR and OfflineReplicas per partition.
- ListPartitionReassignments (one request, no paging): the adding replicas of every in-flight move.
- DescribeConfigs of the topics, min.insync.replicas only, READ_BATCH topics per request, with
  config_filter "all": a topic without its own value reports the brokers' default (static or dynamic),
  so the fallback is the broker's own. Values are cached in `min_isr_cache` across the steps of a run.
- DescribeQuorum of __cluster_metadata (one request, KRaft; a broker forwards it to the controllers): the
  quorum leader's epoch, which changes with every election of a new active controller. A ZooKeeper-mode
  cluster does not answer it (IncompatibleBrokerVersion): the epoch is then None with a note, and
  ZooKeeper's /controller_epoch is the truth (backends/zookeeper/health.py: controller_epoch).

Will be used by the step of a stored plan (DESIGN.md §5a); nothing calls it yet but tests.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from reassign_cli.backends.admin.client import list_reassignments
from reassign_cli.core.health import PartitionHealth, Signals
from reassign_cli.core.model import TopicPartition
from reassign_cli.errors import OperationalError

READ_BATCH = 500  # topics per DescribeConfigs request
MIN_ISR = "min.insync.replicas"
NO_SUCH_TOPIC = (3, 17)


def gather(admin: Any, *, min_isr_cache: MutableMapping[str, int] | None = None) -> Signals:
    """The cluster's health signals through kafka-python's KafkaAdminClient `admin`: 4 requests plus one
    DescribeConfigs per READ_BATCH topics not in `min_isr_cache` (filled here). OperationalError (one line)
    when a request fails; what only could not be read becomes a note."""
    notes: list[str] = []
    registered, fenced = _brokers(_ask("DescribeCluster", admin.describe_cluster))
    partitions = _partitions(_ask("Metadata", admin.describe_topics), _adding(admin), notes)
    cache = min_isr_cache if min_isr_cache is not None else {}
    fill_min_isr(admin, sorted({t for t, _ in partitions}), cache, notes)
    epoch = quorum_epoch(admin, notes)
    return Signals(
        registered=registered,
        fenced=fenced,
        partitions=partitions,
        min_isr={t: cache[t] for t, _ in partitions if t in cache},
        controller_epoch=epoch,
        notes=tuple(notes),
    )


def _ask(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    from kafka.errors import KafkaError

    try:
        return fn(*args, **kwargs)
    except KafkaError as e:
        raise OperationalError(f"{what} failed: {e}") from None


def _brokers(cluster: dict[str, Any]) -> tuple[frozenset[int], frozenset[int] | None]:
    """Registered brokers, and the fenced ones (None when the answer cannot say: DescribeCluster < v2)."""
    brokers = cluster.get("brokers") or []
    registered = frozenset(int(b["broker_id"]) for b in brokers)
    if brokers and all("is_fenced" in b for b in brokers):
        return registered, frozenset(int(b["broker_id"]) for b in brokers if b["is_fenced"])
    return registered, None


def _adding(admin: Any) -> dict[TopicPartition, tuple[int, ...]]:
    moving = list_reassignments(admin)
    return {(tp.topic, tp.partition): tuple(r["adding_replicas"]) for tp, r in moving.items()}


def _partitions(
    meta: list[dict[str, Any]], adding: dict[TopicPartition, tuple[int, ...]], notes: list[str]
) -> dict[TopicPartition, PartitionHealth]:
    """Every partition of the Metadata answer. A partition's own error code (LEADER_NOT_AVAILABLE,
    REPLICA_NOT_AVAILABLE) still comes with its leader, replicas and ISR, which are what counts here."""
    out: dict[TopicPartition, PartitionHealth] = {}
    failed = []
    for topic in meta:
        code = topic.get("error_code")
        if code in NO_SUCH_TOPIC:
            continue  # deleted meanwhile
        if code:
            failed.append(f"{topic.get('name')} (error {code})")
            continue
        for p in topic["partitions"]:
            tp = (topic["name"], int(p["partition_index"]))
            out[tp] = PartitionHealth(
                leader=int(p["leader_id"]),
                replicas=tuple(p["replica_nodes"]),
                isr=tuple(p["isr_nodes"]),
                offline=tuple(p.get("offline_replicas") or ()),
                adding=adding.get(tp, ()),
            )
    if failed:
        notes.append(f"Metadata of {len(failed)} topics failed, not checked: {', '.join(sorted(failed)[:5])}")
    return out


def fill_min_isr(admin: Any, topics: list[str], cache: MutableMapping[str, int], notes: list[str]) -> None:
    """`cache[t]`: topic t's effective min.insync.replicas (its own, else the brokers' default), for the
    topics not in `cache` yet, READ_BATCH per DescribeConfigs. A topic the answer leaves out gets a note
    (and Kafka's default 1 in core/health.py). Also how a ZooKeeper-mode step with the brokers learns the
    brokers' static default, which ZooKeeper does not hold."""
    from kafka.admin import ConfigResource

    todo = [t for t in topics if t not in cache]
    unknown: list[str] = []
    for i in range(0, len(todo), READ_BATCH):
        chunk = todo[i : i + READ_BATCH]
        resources = [ConfigResource("TOPIC", t, configs={MIN_ISR: None}) for t in chunk]
        answer = _ask(
            f"DescribeConfigs of {len(chunk)} topics", admin.describe_configs, resources, config_filter="all"
        )
        got = answer.get("topic", {})
        for t in chunk:
            value = (got.get(t) or {}).get(MIN_ISR, {}).get("value")
            try:
                cache[t] = int(value)
            except (TypeError, ValueError):
                unknown.append(t)
    if unknown:
        notes.append(
            f"min.insync.replicas of {len(unknown)} topics unknown (e.g. {unknown[0]}): taken as Kafka's default 1"
        )


def broker_default_min_isr(admin: Any, broker: int) -> int | None:
    """The min.insync.replicas broker `broker` applies to topics without their own value (its static
    server.properties value, or a dynamic default): one DescribeConfigs, sent to that broker. For a
    ZooKeeper-mode step with the brokers given (zookeeper/health.py gather's `broker_default`); None when
    the broker does not answer it."""
    from kafka.admin import ConfigResource
    from kafka.errors import KafkaError

    resource = ConfigResource("BROKER", str(broker), configs={MIN_ISR: None})
    try:
        answer = admin.describe_configs([resource], config_filter="all")
    except KafkaError:
        return None
    value = (answer.get("broker", {}).get(str(broker)) or {}).get(MIN_ISR, {}).get("value")
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def quorum_epoch(admin: Any, notes: list[str]) -> int | None:
    """The KRaft quorum leader's epoch (DescribeQuorum of __cluster_metadata-0), or None with a note."""
    from kafka.errors import IncompatibleBrokerVersion, KafkaError

    try:
        answer = admin.describe_metadata_quorum()
    except IncompatibleBrokerVersion:
        notes.append("controller epoch unknown through the admin API on a ZooKeeper-mode cluster")
        return None
    except KafkaError as e:
        notes.append(f"controller epoch unknown: DescribeQuorum failed: {e}")
        return None
    for topic in answer.get("topics", []):
        for p in topic.get("partitions", []):
            if p.get("error"):
                notes.append(f"controller epoch unknown: DescribeQuorum: {p['error']}")
                return None
            return int(p["leader_epoch"])
    notes.append("controller epoch unknown: DescribeQuorum answered no partition")
    return None
