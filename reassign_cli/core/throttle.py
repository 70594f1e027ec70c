"""Replication throttles: what to write and what to put back. Pure: no I/O.

KAFKA-SPEC §1.8 (config keys, value format, how brokers apply them), §3.6.2/§3.6.3 (how Kafka builds
the move map and the throttled-replica lists), §6.5/§6.6 (throttles left behind, KAFKA-10779).

The I/O side (zookeeper/configs.py, executor.py) reads the config znodes, calls these functions to
compute the new content, and writes it back with a change notification.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition, tp_str
from reassign_cli.errors import InvalidInputError, OperationalError, UsageError

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_KEYS = (LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE)
TOPIC_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

LONG_MAX = 2**63 - 1  # Kafka's rate keys are Java longs; Long.MAX_VALUE means unthrottled

Entity = Literal["brokers", "topics"]
RECORD_VERSION = 1


@dataclass(slots=True)
class Move:
    sources: list[int]  # replicas the data comes from: the current (origin) replicas
    destinations: list[int]  # replicas to create: target minus sources, in target order


def move_map(targets: dict[TopicPartition, list[int]], state: ClusterState) -> dict[TopicPartition, Move]:
    """Kafka 3.9's move map for the planned partitions.

    sources = the partition's replicas, or its origin replicas (replicas minus adding) when it is already
    reassigning, so a resubmission does not count half-created replicas as sources (KAFKA-10779);
    destinations = target minus sources. A partition that does not exist is an input error (validation
    rejects those first).
    """
    moves: dict[TopicPartition, Move] = {}
    topics = state.topics
    for tp, target in targets.items():
        topic = topics.get(tp[0])
        reps = topic.replicas.get(tp[1]) if topic is not None else None
        if topic is None or reps is None:
            raise InvalidInputError(f"Cannot compute throttles for partition {tp_str(tp)}: it does not exist")
        adding = topic.adding.get(tp[1]) if topic.adding else None
        sources = [b for b in reps if b not in adding] if adding else list(reps)
        if len(set(sources)) != len(sources):
            sources = list(dict.fromkeys(sources))
        destinations = [b for b in target if b not in sources]
        if len(set(destinations)) != len(destinations):
            destinations = list(dict.fromkeys(destinations))
        moves[tp] = Move(sources, destinations)
    return moves


def topic_throttles(moves: Mapping[TopicPartition, Move]) -> dict[str, dict[str, str]]:
    """topic -> both throttled-replica lists, exactly as Kafka 3.9 formats them.

    leader list: "p:s" for every planned partition and each of its sources (moving or not);
    follower list: "p:d" for each destination. Each is a set sorted as strings and joined with ","
    (Java's TreeSet<String>: "10:1" sorts before "2:1"). A topic with nothing to copy gets "".
    """
    leaders: dict[str, set[str]] = {}
    followers: dict[str, set[str]] = {}
    for (topic, p), move in moves.items():
        leaders.setdefault(topic, set()).update(f"{p}:{b}" for b in move.sources)
        followers.setdefault(topic, set()).update(f"{p}:{b}" for b in move.destinations)
    return {
        topic: {
            LEADER_REPLICAS: ",".join(sorted(leaders[topic])),
            FOLLOWER_REPLICAS: ",".join(sorted(followers[topic])),
        }
        for topic in sorted(leaders)
    }


# Kafka's request parser refuses a string field longer than 0x7fff bytes, in every request version
# (flexible ones too: "string field value had invalid length", and the connection is closed).
MAX_REQUEST_STRING = 0x7FFF


def fit_replica_lists(config: Mapping[str, str]) -> dict[str, str]:
    """Over the admin API: a throttled-replica list longer than a request's string field can carry (about
    2,400 partitions of RF 2 in one topic) becomes "*", every replica of the topic throttled, the one value
    that says at least as much and fits. Kafka's own tool fails there; ZooKeeper has no such limit."""
    out = dict(config)
    for key in (LEADER_REPLICAS, FOLLOWER_REPLICAS):
        value = out.get(key)
        if value is not None and len(value.encode()) > MAX_REQUEST_STRING:
            out[key] = "*"
    return out


def throttled_brokers(moves: Mapping[TopicPartition, Move]) -> list[int]:
    """Brokers that get the rate keys: every source and every destination, sorted."""
    ids: set[int] = set()
    for move in moves.values():
        ids.update(move.sources)
        ids.update(move.destinations)
    return sorted(ids)


def log_dir_move_brokers(entries: Iterable[PlanEntry]) -> list[int]:
    """Brokers with a replica to move to a named log dir (the ones that get LOG_DIR_RATE, as 3.9)."""
    ids: set[int] = set()
    for e in entries:
        if e.log_dirs:
            ids.update(b for b, d in zip(e.replicas, e.log_dirs, strict=False) if d != "any")
    return sorted(ids)


def _check_rate(option: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > LONG_MAX:
        raise UsageError(f"{option} must be an integer between 0 and {LONG_MAX} bytes/s, got {value}")


def broker_rate_config(rate: int | None, log_dir_rate: int | None) -> dict[str, str]:
    """The broker keys to set, values as decimal strings (config values must be JSON strings, §1.8).

    rate sets both the leader and follower rates; log_dir_rate sets the log-dir move rate. None: not set.
    """
    out: dict[str, str] = {}
    if rate is not None:
        _check_rate("--throttle", rate)
        out[LEADER_RATE] = str(rate)
        out[FOLLOWER_RATE] = str(rate)
    if log_dir_rate is not None:
        _check_rate("--replica-alter-log-dirs-throttle", log_dir_rate)
        out[LOG_DIR_RATE] = str(log_dir_rate)
    return out


# ---------------------------------------------------------------------------------------------
# Config merges
# ---------------------------------------------------------------------------------------------


def apply_config(existing: Mapping[str, str], updates: Mapping[str, str]) -> dict[str, str]:
    """The new complete config: `existing` with `updates` set; every other key kept."""
    merged = dict(existing)
    merged.update(updates)
    return merged


def restore_config(
    existing: Mapping[str, str], keys: Iterable[str], priors: Mapping[str, str | None] | None
) -> dict[str, str]:
    """The config with `keys` removed, except keys whose recorded prior value is not null: those get it back.

    priors None (nothing recorded for this entity) removes the keys, as Kafka's verify does.
    """
    out = dict(existing)
    for key in keys:
        prior = priors.get(key) if priors is not None else None
        if prior is None:
            out.pop(key, None)
        else:
            out[key] = prior
    return out


class Restorer:
    """A clear's restore of one entity, as a config update's function: `keys` back at their recorded prior
    values (restore_config). `exact` names the keys a backend sends even when its read shows them so already:
    through the admin API a broker's view of the configs trails the controller's, so another run's write of
    a moment ago may not show (seen on KRaft under load: a clear that had lost its record race to another
    run read that run's topic without the throttle lists it had just written, sent nothing, forgot its record
    entry and left the lists behind). ZooKeeper's reads are consistent; its backend ignores `exact`."""

    __slots__ = ("keys", "priors")

    def __init__(self, keys: Iterable[str], priors: Mapping[str, str | None] | None) -> None:
        self.keys, self.priors = list(keys), priors

    @property
    def exact(self) -> list[str]:
        return self.keys

    def __call__(self, existing: Mapping[str, str]) -> dict[str, str]:
        return restore_config(existing, self.keys, self.priors)


_REPLICA = re.compile(r"[0-9]+:[0-9]+")


def parse_throttled_replicas(
    value: str, name: str = "throttled replicas"
) -> list[tuple[int, int]] | Literal["*"]:
    """A throttled-replica list as Kafka's validator reads it (§1.8): "*" or [(partition, broker), ...].

    Split on ",", trim each element; each must be empty or "P:B" with decimal digits, or all of it "*".
    Anything else raises InvalidInputError with the validator's wording. Checked against a Kafka 3.9.2
    broker's own validation (AlterConfigs) on 17 values, accepted and refused alike.
    """
    parts = [s.strip() for s in value.split(",")]
    if "".join(parts) == "*":
        return "*"
    out: list[tuple[int, int]] = []
    for s in parts:
        if not s:
            continue
        if not _REPLICA.fullmatch(s):
            # Kafka's ConfigException text; the value printed as the parsed Java list.
            raise InvalidInputError(
                f"Invalid value [{', '.join(parts)}] for configuration {name}: {name} must be the literal '*' "
                "or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
            )
        p, b = s.split(":")
        out.append((int(p), int(b)))
    return out


# ---------------------------------------------------------------------------------------------
# The prior-values record
# ---------------------------------------------------------------------------------------------
# {"version":1,"brokers":{"1":{"leader.replication.throttled.rate":"500"|null,...}},"topics":{"t":{...}}}
# A value is what the key held before this tool first wrote it; null = the key was absent.


def empty_record() -> dict[str, Any]:
    return {"version": RECORD_VERSION, "brokers": {}, "topics": {}}


def record_priors(
    record: Mapping[str, Any],
    entity: Entity,
    name: str | int,
    existing: Mapping[str, str],
    keys: Iterable[str],
) -> dict[str, Any]:
    """A new record noting, for each of `keys` not yet recorded for (entity, name), its value in `existing`.

    Only the first write of a key records its prior: a later execute (e.g. changing the rate) finds our
    own value in `existing` and must not take it for the operator's.
    """
    new = _copy_record(record)
    slot = new[entity].setdefault(str(name), {})
    for key in keys:
        if key not in slot:
            slot[key] = existing.get(key)
    return new


def record_priors_all(
    record: Mapping[str, Any], items: Iterable[tuple[Entity, str | int, Mapping[str, str], Iterable[str]]]
) -> dict[str, Any]:
    """`record_priors` for many (entity, name, existing, keys) at once: one copy of the record, not one
    per entity (a plan of thousands of topics)."""
    new = _copy_record(record)
    for entity, name, existing, keys in items:
        slot = new[entity].setdefault(str(name), {})
        for key in keys:
            if key not in slot:
                slot[key] = existing.get(key)
    return new


def record_forget(record: Mapping[str, Any], entity: Entity, name: str | int) -> dict[str, Any]:
    """A new record without (entity, name): call once its keys are restored."""
    return record_forget_all(record, [(entity, name)])


def record_forget_all(record: Mapping[str, Any], names: Iterable[tuple[Entity, str | int]]) -> dict[str, Any]:
    """A new record without any of (entity, name): one copy of the record for all of them."""
    new = _copy_record(record)
    for entity, name in names:
        new[entity].pop(str(name), None)
    return new


def record_entry(record: Mapping[str, Any], entity: Entity, name: str | int) -> dict[str, str | None] | None:
    """The priors recorded for (entity, name), or None: the `priors` argument of restore_config."""
    entry = record.get(entity, {}).get(str(name))
    return dict(entry) if entry is not None else None


def recorded_entities(record: Mapping[str, Any]) -> tuple[list[int], list[str]]:
    """The brokers and topics that carry throttle keys this tool set (those in its record)."""
    brokers = sorted(
        int(b) for b, keys in record.get("brokers", {}).items() if keys and b.lstrip("-").isdigit()
    )
    topics = sorted(t for t, keys in record.get("topics", {}).items() if keys)
    return brokers, topics


def record_is_empty(record: Mapping[str, Any]) -> bool:
    return not record.get("brokers") and not record.get("topics")


def _copy_record(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "version": RECORD_VERSION,
        "brokers": {k: dict(v) for k, v in record.get("brokers", {}).items()},
        "topics": {k: dict(v) for k, v in record.get("topics", {}).items()},
    }


def load_record(data: bytes | str | None, path: str = "the throttle record") -> dict[str, Any]:
    """Decode the record znode (None or empty data: an empty record); a malformed one is an OperationalError."""
    if data is None or len(data) == 0:
        return empty_record()
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise OperationalError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("version") != RECORD_VERSION:
        raise OperationalError(f'{path}: expected a JSON object with "version":{RECORD_VERSION}')
    for entity in ("brokers", "topics"):
        entries = doc.get(entity, {})
        if not isinstance(entries, dict) or not all(
            isinstance(v, dict) and all(isinstance(x, str) or x is None for x in v.values())
            for v in entries.values()
        ):
            raise OperationalError(f'{path}: "{entity}" must map names to {{key: string or null}}')
    return _copy_record(doc)


def dump_record(record: Mapping[str, Any]) -> bytes:
    """The record znode's bytes: compact JSON, names and keys sorted."""
    return orjson.dumps(_copy_record(record), option=orjson.OPT_SORT_KEYS)
