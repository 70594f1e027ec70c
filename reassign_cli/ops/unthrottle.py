"""Taking the throttles off once nothing is reassigning: verify, cancel and `execute --wait` use it.

Only keys this tool set (those in its prior-values record, `/reassign_cli/throttles`) are touched: a recorded
prior value is put back, a recorded absence removes the key. Throttle keys someone else set are left alone
and reported.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from reassign_cli.backends.protocol import (
    Backend,
    ClearResult,
    ConfigReader,
    ConfigUpdate,
    SetupInProgress,
)
from reassign_cli.core import throttle as th
from reassign_cli.core.model import TopicPartition
from reassign_cli.core.names import shorten
from reassign_cli.core.progress import anything_reassigning
from reassign_cli.errors import OtherRecordError

# An execute's setup takes a second or two; a killed one's mark lasts a ZooKeeper session, its lease on the
# admin API until seen unrenewed for record_log.LEASE_SECONDS (30 s).
SETUP_WAIT_SECONDS = 45.0


def clear_throttles(
    backend: Backend, targets: dict[TopicPartition, list[int]], setup_wait: float = SETUP_WAIT_SECONDS
) -> ClearResult | None:
    """Remove this tool's throttles once nothing is reassigning anywhere; None (nothing touched) otherwise.

    Entities looked at: Kafka's (registered brokers ∪ the file's target brokers; the file's topics) and
    every entity in our prior-values record. Only keys this tool set (those in the record) are touched:
    a recorded prior value is put back, a recorded absence removes the key. Throttle keys that someone
    else set (not in the record) are left alone and reported in `kept`; that keeps an operator's
    standing throttle and makes a second verify write nothing. A znode is written (with its
    notification) only when its content changes.

    The check "nothing reassigning" and the writes are one fenced commit (backend.commit_throttles): an
    execute that wrote its throttles but has not created its reassignment yet holds the setup mark, and
    the clear waits for it (up to setup_wait seconds, then keeps the throttles: None).
    """
    deadline = time.monotonic() + setup_wait
    result: list[ClearResult] = []
    while True:
        try:
            done = backend.commit_throttles(
                lambda rec, read: _plan_clear(backend, targets, rec, read, result),
                guard="idle",
                record_last=True,
                create=False,
            )
        except SetupInProgress:
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.5)
            continue
        if done is None:
            return None
        result[0].changes = done[0]
        return result[0]


def _keep(
    result: ClearResult, entity: th.Entity, name: str, cur: dict[str, str], keys: Sequence[str]
) -> None:
    """Throttle keys found on an entity our record does not name: left alone, and reported."""
    found = {k: cur[k] for k in keys if k in cur}
    if found:
        result.kept_keys[(entity, name)] = found
        result.kept += [f"{entity[:-1]} {name}: {k}={v}" for k, v in found.items()]


def refuse_other_record(backend: Backend) -> None:
    """OtherRecordError (nothing changed) when the cluster is in ZooKeeper mode and the ZooKeeper backend's
    record names throttles of ours: the admin API cannot restore them (their prior values are in that
    record), and a clear through it would report them as someone else's. A record that cannot be read
    (ZooKeeper out of reach from here) is not a reason to refuse."""
    other = backend.zookeeper_record()
    if other is None or other.empty:
        return
    parts = [f"brokers {shorten(other.brokers)}" if other.brokers else "", f"topics {shorten(other.topics)}"]
    where = " and ".join(p for p in parts if p and p != "topics ")
    raise OtherRecordError(
        f"kafka-reassign set throttles on {where} through ZooKeeper ({other.zookeeper}); their prior "
        "values are recorded there, and only --zookeeper can restore them: nothing was changed",
        zookeeper=other.zookeeper,
    )


def _plan_clear(
    backend: Backend,
    targets: dict[TopicPartition, list[int]],
    record: dict[str, Any],
    read: ConfigReader,
    out: list[ClearResult],
) -> tuple[list[ConfigUpdate], dict[str, Any]] | None:
    """The restores and the record without the entities restored; None while anything reassigns."""
    full = backend.read_state()
    if anything_reassigning(full):
        return None  # nothing is cleared: a verify of a move in progress reports it, through either backend
    refuse_other_record(backend)
    kafka_brokers = set(full.broker_ids) | {b for reps in targets.values() for b in reps}
    kafka_topics = {t for t, _ in targets}
    brokers = kafka_brokers | {int(b) for b in record.get("brokers", {}) if str(b).lstrip("-").isdigit()}
    topics = kafka_topics | set(record.get("topics", {}))
    result = ClearResult(sorted(kafka_brokers), sorted(kafka_topics))
    result.record_name = getattr(backend, "record_name", "")
    result.recorded_brokers, result.recorded_topics = th.recorded_entities(record)
    out[:] = [result]
    if not backend.offline_broker_configs and not backend.offline_broker_clear:
        offline = brokers - set(full.broker_ids)
        result.pending = sorted(b for b in offline if th.record_entry(record, "brokers", b))
        brokers -= offline
    updates: list[ConfigUpdate] = []
    forget: list[tuple[th.Entity, str | int]] = []
    looked: list[tuple[th.Entity, str]] = [
        ("topics", t) for t in sorted(topics) if not th.record_entry(record, "topics", t) and t in full.topics
    ]
    looked += [("brokers", str(b)) for b in sorted(brokers) if not th.record_entry(record, "brokers", b)]
    read = _read_ahead(backend, looked, read)
    for t in sorted(topics):
        priors = th.record_entry(record, "topics", t)
        if priors:
            # Restored even when the read shows no such topic: a broker's metadata may trail the controller's
            # (a topic made a moment ago missing from it; seen on KRaft under load, the entry was forgotten
            # and the topic's throttle left behind). A deleted topic's config went with it: the write finds
            # no config znode (skipped), or the controller answers it as unknown (ignored, as create=False).
            updates.append(("topics", t, th.Restorer(priors, priors)))
            forget.append(("topics", t))
        elif t in full.topics:
            _keep(result, "topics", t, read("topics", t), th.TOPIC_KEYS)
    for b in sorted(brokers):
        priors = th.record_entry(record, "brokers", b)
        if priors:
            updates.append(("brokers", str(b), th.Restorer(priors, priors)))
            forget.append(("brokers", b))
        else:
            _keep(result, "brokers", str(b), read("brokers", str(b)), th.BROKER_KEYS)
    return updates, th.record_forget_all(record, forget)


def _read_ahead(backend: Backend, keys: list[tuple[th.Entity, str]], read: ConfigReader) -> ConfigReader:
    """The entities a clear only looks at (for throttle keys someone else set), read in few requests where
    the backend can (the admin API's DescribeConfigs takes many resources: one request per topic was 4,000
    round trips for a 20,000-partition verify, scripts/bench_ops --stored-real); elsewhere `read` itself
    (a ZooKeeper read is part of the fenced commit's versions)."""
    many = getattr(backend, "read_configs", None)
    if not callable(many) or len(keys) < 2:
        return read
    seen = many(keys)
    return lambda e, n: (seen.get((e, n)) or {}) if (e, n) in seen else read(e, n)
