"""Taking the throttles off once nothing is reassigning: verify, cancel and `execute --wait` use it.

Only keys this tool set (those in its prior-values record, `/reassign_cli/throttles`) are touched: a recorded
prior value is put back, a recorded absence removes the key. Throttle keys someone else set are left alone
and reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reassign_cli import throttle as th
from reassign_cli.backend import Backend, ConfigChange, ConfigFn, ConfigUpdate
from reassign_cli.model import TopicPartition
from reassign_cli.progress import anything_reassigning


@dataclass(slots=True)
class ClearResult:
    brokers: list[int]
    topics: list[str]
    changes: list[ConfigChange] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # throttle keys set by someone else, left alone
    # Brokers whose recorded throttles wait for them to register again (the admin API writes a broker's
    # config through that broker); their record entries stay.
    pending: list[int] = field(default_factory=list)


def _restorer(keys: Sequence[str], priors: dict[str, str | None] | None) -> ConfigFn:
    return lambda cur: th.restore_config(cur, keys, priors)


def clear_throttles(backend: Backend, targets: dict[TopicPartition, list[int]]) -> ClearResult | None:
    """Remove this tool's throttles once nothing is reassigning anywhere; None (nothing touched) otherwise.

    Entities looked at: Kafka's (registered brokers ∪ the file's target brokers; the file's topics) and
    every entity in our prior-values record. Only keys this tool set (those in the record) are touched:
    a recorded prior value is put back, a recorded absence removes the key. Throttle keys that someone
    else set (not in the record) are left alone and reported in `kept`; that keeps an operator's
    standing throttle and makes a second verify write nothing. A znode is written (with its
    notification) only when its content changes.
    """
    full = backend.read_state()
    if anything_reassigning(full):
        return None
    record = backend.read_priors()
    kafka_brokers = set(full.broker_ids) | {b for reps in targets.values() for b in reps}
    kafka_topics = {t for t, _ in targets}
    brokers = kafka_brokers | {int(b) for b in record.get("brokers", {}) if str(b).lstrip("-").isdigit()}
    topics = kafka_topics | set(record.get("topics", {}))
    result = ClearResult(sorted(kafka_brokers), sorted(kafka_topics))
    if not backend.offline_broker_configs:
        offline = brokers - set(full.broker_ids)
        result.pending = sorted(b for b in offline if th.record_entry(record, "brokers", b))
        brokers -= offline
    done_b: list[int] = []
    done_t: list[str] = []
    updates: list[ConfigUpdate] = []
    for t in sorted(topics):
        priors = th.record_entry(record, "topics", t)
        if priors:
            if t in full.topics:  # a deleted topic's config went with it
                updates.append(("topics", t, _restorer(list(priors), priors)))
            done_t.append(t)
        elif t in full.topics:
            cur = backend.read_config("topics", t) or {}
            result.kept += [f"topic {t}: {k}={cur[k]}" for k in th.TOPIC_KEYS if k in cur]
    for b in sorted(brokers):
        priors = th.record_entry(record, "brokers", b)
        if priors:
            updates.append(("brokers", str(b), _restorer(list(priors), priors)))
            done_b.append(b)
        else:
            cur = backend.read_config("brokers", str(b)) or {}
            result.kept += [f"broker {b}: {k}={cur[k]}" for k in th.BROKER_KEYS if k in cur]
    result.changes = backend.update_configs(updates, create=False)

    def forget(rec: dict[str, Any]) -> dict[str, Any]:
        for b in done_b:
            rec = th.record_forget(rec, "brokers", b)
        for t in done_t:
            rec = th.record_forget(rec, "topics", t)
        return rec

    if done_b or done_t:
        backend.update_priors(forget)
    return result
