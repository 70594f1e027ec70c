"""Kafka's ZooKeeper znode JSON: decoders for what brokers and the controller write, encoders for what
this tool writes. Pure: bytes in, plain data out (KAFKA-SPEC §1).

Decoders raise `ZnodeFormatError` (an `OperationalError`, exit 1) naming the znode and the problem: a
malformed znode written by someone else is an operational problem of the cluster, not a user input error.
Encoders raise `InvalidInputError` (exit 3, before anything is written) when asked to encode values
Kafka would not accept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeGuard

import orjson

from reassign_cli.core.model import (
    Broker,
    PlanEntry,
    Topic,
    TopicPartition,
    format_plan_entries,
    format_reassignment_json,
)
from reassign_cli.errors import InvalidInputError, OperationalError

# Paths (relative to the chroot). Kept here so every edge module spells them the same way.
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"
ENTITY_TYPES = ("topics", "brokers", "clients", "users", "ips")
DEFAULT_ENTITY = "<default>"  # /config/brokers/<default>: the cluster-wide broker default


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def entity_config_path(entity_type: str, name: str | int) -> str:
    _check_entity_type(entity_type)
    return f"/config/{entity_type}/{name}"


class ZnodeFormatError(OperationalError):
    """A znode's content is not in any format Kafka writes."""


class PartitionState(NamedTuple):
    leader: int  # -1: no leader; -2: being deleted
    isr: list[int]
    leader_epoch: int


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_list(v: object) -> TypeGuard[list[int]]:
    return isinstance(v, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in v)


def _load(data: bytes | str | None, path: str) -> Any:
    if data is None or data == b"" or data == "":
        raise ZnodeFormatError(f"znode {path} is empty; expected Kafka's JSON")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise ZnodeFormatError(f"znode {path} is not valid JSON: {e}") from None


def _object(data: bytes | str | None, path: str) -> dict[str, Any]:
    doc = _load(data, path)
    if not isinstance(doc, dict):
        raise ZnodeFormatError(f"znode {path}: expected a JSON object")
    return doc


# ---------------------------------------------------------------------------------------------
# /brokers/ids/<id>
# ---------------------------------------------------------------------------------------------


def decode_broker(broker_id: int, data: bytes | str | None) -> Broker:
    """A broker registration, any version 1..5 (and later: unknown fields are ignored).

    Only the id (from the znode name) and the rack matter for planning. `rack` is absent before v3 and
    whenever broker.rack is unset; JSON null is accepted as no rack.
    """
    path = broker_path(broker_id)
    doc = _object(data, path)
    version = doc.get("version")
    if not _is_int(version):
        raise ZnodeFormatError(f'znode {path}: "version" must be an integer, got {version!r}')
    if version < 1:
        raise ZnodeFormatError(f"znode {path}: unsupported broker registration version {version}")
    rack = doc.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ZnodeFormatError(f'znode {path}: "rack" must be a string or null, got {rack!r}')
    return Broker(broker_id, rack)


def broker_endpoints(data: bytes | str) -> list[str]:
    """The listener endpoints of a registration ("PLAINTEXT://host:port"); v1 has only host and port."""
    doc = _object(data, "broker registration")
    eps = doc.get("endpoints")
    if isinstance(eps, list) and all(isinstance(e, str) for e in eps):
        return list(eps)
    host, port = doc.get("host"), doc.get("port")
    if isinstance(host, str) and _is_int(port) and port >= 0:
        return [f"PLAINTEXT://{host}:{port}"]
    return []


# ---------------------------------------------------------------------------------------------
# /brokers/topics/<topic>
# ---------------------------------------------------------------------------------------------


def _partition_map(raw: object, path: str, key: str) -> dict[int, list[int]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ZnodeFormatError(f'znode {path}: "{key}" must be an object')
    try:
        out = {int(p): reps for p, reps in raw.items()}
    except ValueError:
        bad = next(p for p in raw if not p.lstrip("-").isdigit())
        raise ZnodeFormatError(f'znode {path}: "{key}" has a non-integer partition key {bad!r}') from None
    for p, reps in out.items():
        if not _int_list(reps):
            raise ZnodeFormatError(f'znode {path}: {key}["{p}"] must be a list of integers')
    return out


def decode_topic(topic: str, data: bytes | str | None) -> Topic:
    """A topic's replica assignment, v1/v2/v3.

    Partition keys are strings in the znode. `adding_replicas`/`removing_replicas` (v2+) may be absent or
    hold only some partitions; empty lists are dropped so `Topic.adding`/`removing` hold only partitions
    that are really reassigning. `topic_id` (v3) is optional.
    """
    path = topic_path(topic)
    doc = _object(data, path)
    version = doc.get("version", 1)
    if not _is_int(version) or version < 1:
        raise ZnodeFormatError(f"znode {path}: unsupported topic znode version {version!r}")
    if "partitions" not in doc:
        raise ZnodeFormatError(f'znode {path}: no "partitions" field')
    replicas = _partition_map(doc["partitions"], path, "partitions")
    adding = {
        p: r for p, r in _partition_map(doc.get("adding_replicas"), path, "adding_replicas").items() if r
    }
    removing = {
        p: r for p, r in _partition_map(doc.get("removing_replicas"), path, "removing_replicas").items() if r
    }
    topic_id = doc.get("topic_id")
    if topic_id is not None and not isinstance(topic_id, str):
        raise ZnodeFormatError(f'znode {path}: "topic_id" must be a string')
    return Topic(topic, replicas, adding, removing, topic_id=topic_id)


# ---------------------------------------------------------------------------------------------
# /brokers/topics/<topic>/partitions/<p>/state
# ---------------------------------------------------------------------------------------------


def decode_partition_state(topic: str, partition: int, data: bytes | str | None) -> PartitionState:
    """Leader, ISR and leader epoch of one partition."""
    path = partition_state_path(topic, partition)
    doc = _object(data, path)
    leader, isr, epoch = doc.get("leader"), doc.get("isr"), doc.get("leader_epoch", -1)
    if not _is_int(leader):
        raise ZnodeFormatError(f'znode {path}: "leader" must be an integer')
    if not _int_list(isr):
        raise ZnodeFormatError(f'znode {path}: "isr" must be a list of integers')
    if not _is_int(epoch):
        raise ZnodeFormatError(f'znode {path}: "leader_epoch" must be an integer')
    return PartitionState(leader, isr, epoch)


# ---------------------------------------------------------------------------------------------
# /admin/reassign_partitions
# ---------------------------------------------------------------------------------------------

_REASSIGNMENT_KEYS = frozenset(("topic", "partition", "replicas"))


def decode_reassignment(data: bytes | str | None) -> dict[TopicPartition, list[int]]:
    """The legacy reassignment trigger (v1), leniently: what is asked, per partition.

    Like Kafka, a string partition number ("0") is accepted and a missing version reads as fine.
    A later entry for the same partition wins (Kafka builds a map from the list). Use
    `reassignment_problem` to learn whether the controller would ignore the znode altogether.
    """
    path = REASSIGN_PARTITIONS
    doc = _object(data, path)
    raw = doc.get("partitions")
    if not isinstance(raw, list):
        raise ZnodeFormatError(f'znode {path}: "partitions" must be a list')
    out: dict[TopicPartition, list[int]] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ZnodeFormatError(f"znode {path}: partitions[{i}] must be an object")
        topic, part, reps = item.get("topic"), item.get("partition"), item.get("replicas")
        if isinstance(part, str) and part.lstrip("-").isdigit():
            part = int(part)
        if not isinstance(topic, str) or not _is_int(part) or not _int_list(reps):
            raise ZnodeFormatError(
                f'znode {path}: partitions[{i}] needs "topic" (string), "partition" (integer) '
                'and "replicas" (list of integers)'
            )
        out[(topic, part)] = reps
    return out


def reassignment_problem(data: bytes | str | None) -> str | None:
    """Why the ZooKeeper-mode controller would ignore this znode ("invalid json"), or None if it would not.

    The controller decodes strictly: unknown fields (e.g. log_dirs) make it drop the whole znode, which then
    blocks every later reassignment (KAFKA-SPEC §1.5, §6 item 4).
    """
    try:
        doc = _object(data, REASSIGN_PARTITIONS)
        decode_reassignment(data)
    except ZnodeFormatError as e:
        return str(e)
    extra = set(doc) - {"version", "partitions"}
    if extra:
        return f"unknown top-level field {sorted(extra)[0]!r}"
    for i, item in enumerate(doc["partitions"]):
        extra = set(item) - _REASSIGNMENT_KEYS
        if extra:
            return f"partitions[{i}] has unknown field {sorted(extra)[0]!r}"
        missing = _REASSIGNMENT_KEYS - set(item)
        if missing:
            return f"partitions[{i}] lacks field {sorted(missing)[0]!r}"
    return None


def encode_reassignment(entries: Iterable[PlanEntry]) -> bytes:
    """The trigger `{"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]}`, entries in
    the order given. Never carries log_dirs: the controller would ignore the whole znode."""
    return format_plan_entries(entries, log_dirs=False).encode()


def encode_reassignment_assignment(assignment: Mapping[str, Mapping[int, Sequence[int]]]) -> bytes:
    """The same trigger from a topic -> partition -> replicas mapping, sorted by (topic, partition)."""
    return format_reassignment_json(assignment, log_dirs=False).encode()


# ---------------------------------------------------------------------------------------------
# /config/<type>/<name> and /config/changes/config_change_NNNNNNNNNN
# ---------------------------------------------------------------------------------------------


def _check_entity_type(entity_type: str) -> None:
    if entity_type not in ENTITY_TYPES:
        raise InvalidInputError(f"unknown config entity type {entity_type!r}; expected one of {ENTITY_TYPES}")


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """`{"version":1,"config":{...}}`. Every value must be a string: Kafka's decoder rejects numbers."""
    for k, v in config.items():
        if not isinstance(k, str):
            raise InvalidInputError(f"config key {k!r} is not a string")
        if not isinstance(v, str):
            raise InvalidInputError(f"config value of {k} must be a string, got {type(v).__name__} {v!r}")
    return orjson.dumps({"version": 1, "config": dict(config)})


def decode_entity_config(path: str, data: bytes | str | None) -> dict[str, str]:
    """The config map of an entity config znode. An empty or null znode reads as no config."""
    if data is None or data == b"" or data == "":
        return {}
    doc = _object(data, path)
    cfg = doc.get("config", {})
    if cfg is None:
        return {}
    if not isinstance(cfg, dict):
        raise ZnodeFormatError(f'znode {path}: "config" must be an object')
    for k, v in cfg.items():
        if not isinstance(v, str):
            raise ZnodeFormatError(f"znode {path}: config value of {k} must be a string, got {v!r}")
    return cfg


def encode_config_change(entity_type: str, name: str | int) -> bytes:
    """A v2 change notification: `{"version":2,"entity_path":"topics/foo"}` (or `brokers/1`,
    `brokers/<default>`). Brokers re-read `/config/<entity_path>` when they see it."""
    _check_entity_type(entity_type)
    name = str(name)
    if not name or "/" in name:
        raise InvalidInputError(f"invalid config entity name {name!r}")
    return orjson.dumps({"version": 2, "entity_path": f"{entity_type}/{name}"})


def decode_config_change(data: bytes | str | None) -> tuple[str, str]:
    """(entity_type, entity_name) of a notification, v1 or v2."""
    path = CONFIG_CHANGES
    doc = _object(data, path)
    version = doc.get("version")
    if version == 2:
        ep = doc.get("entity_path")
        if not isinstance(ep, str) or "/" not in ep:
            raise ZnodeFormatError(f'config change notification: bad "entity_path" {ep!r}')
        etype, _, ename = ep.partition("/")
        return etype, ename
    if version == 1:
        t1, n1 = doc.get("entity_type"), doc.get("entity_name")
        if isinstance(t1, str) and isinstance(n1, str):
            return t1, n1
        raise ZnodeFormatError('config change notification v1 needs "entity_type" and "entity_name"')
    raise ZnodeFormatError(f"config change notification: unsupported version {version!r}")
