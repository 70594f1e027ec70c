"""The throttle writes of an execute or a step: the prior values recorded and the topic lists and broker
rates written in one fenced commit (backend.commit_throttles), taken back exactly when a run's create
loses, and the lines they cause. ops/execute.py, ops/step.py and the stored plan's steps call them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reassign_cli.backends.protocol import Backend, ConfigChange, ConfigFn, ConfigReader, ConfigUpdate
from reassign_cli.core import throttle as th
from reassign_cli.core.model import ClusterState, PlanEntry
from reassign_cli.core.names import listed, shorten
from reassign_cli.core.progress import anything_reassigning
from reassign_cli.errors import OperationalError

if TYPE_CHECKING:
    from reassign_cli.ops.request import ExecuteReport

THROTTLE_SETTLE_SECONDS = (
    1.0  # pause between the throttle writes and the trigger: brokers apply configs asynchronously
)


@dataclass(slots=True)
class ThrottleWrites:
    changes: list[ConfigChange]
    record_before: dict[str, Any]
    brokers: list[int]
    topics: list[str]
    record_after: dict[str, Any] = field(default_factory=dict)
    setup: bool = False  # this run holds the setup mark (backend.commit_throttles guard)
    offline: list[int] = dataclasses.field(default_factory=list)  # brokers not throttled: not registered


def throttle_configs(
    state: ClusterState,
    entries: Sequence[PlanEntry],
    rate: int | None,
    log_dir_rate: int | None,
    topics_too: bool = True,
    overrides: Mapping[int, Mapping[str, str]] | None = None,
) -> tuple[dict[int, dict[str, str]], dict[str, dict[str, str]]]:
    """The throttle keys to set: per broker (rates) and per topic (replica lists, only with a rate)."""
    targets = {(e.topic, e.partition): e.replicas for e in entries}
    broker_cfgs: dict[int, dict[str, str]] = {}
    topic_cfgs: dict[str, dict[str, str]] = {}
    if rate is not None:
        moves = th.move_map(targets, state)
        if topics_too:
            topic_cfgs = th.topic_throttles(moves)
        for b in th.throttled_brokers(moves):
            broker_cfgs.setdefault(b, {}).update(th.broker_rate_config(rate, None))
    if log_dir_rate is not None:
        for b in th.log_dir_move_brokers(entries):
            broker_cfgs.setdefault(b, {}).update(th.broker_rate_config(None, log_dir_rate))
    for b, cfg in broker_cfgs.items():  # the rates an adaptive loop holds (ops.rate_loop) over `rate`
        cfg.update({k: v for k, v in (overrides or {}).get(b, {}).items() if k in cfg})
    return broker_cfgs, topic_cfgs


def concerns(
    changes: Sequence[ConfigChange], state: ClusterState, batch: Sequence[PlanEntry], rate: int | None
) -> bool:
    """Whether a throttle write changed what throttles `batch` (so the brokers are given time to apply it
    before the batch starts): a broker's rate, or a topic list that lacked one of its replicas. A write that
    only listed the moves next in line ahead (a step or a window start) needs no wait."""
    if any(ch.entity == "brokers" for ch in changes):
        return True
    _, wanted = throttle_configs(state, batch, rate, None)
    for ch in changes:
        for key, value in wanted.get(ch.name, {}).items() if ch.entity == "topics" else ():
            before = ch.before.get(key, value) or ""
            if before != "*" and not set(value.split(",")) <= set(before.split(",")):
                return True
    return False


def apply_throttles(
    backend: Backend,
    state: ClusterState,
    entries: Sequence[PlanEntry],
    rate: int | None,
    log_dir_rate: int | None,
    *,
    topics_too: bool = True,
    begin_setup: bool = False,
    overrides: Mapping[int, Mapping[str, str]] | None = None,
) -> ThrottleWrites:
    """The prior values recorded and the topic lists (rate only) and broker rates written, in ONE fenced
    commit (backend.commit_throttles): the priors are the configs as that commit found them.

    topics_too=False: only the broker rates (changing the speed of a running move). begin_setup: also
    mark this execute as being set up until its reassignment is created (verify keeps off meanwhile).
    overrides: per broker, the rate keys an adaptive loop holds, written instead of `rate`.
    """
    broker_cfgs, topic_cfgs = throttle_configs(state, entries, rate, log_dir_rate, topics_too, overrides)
    offline: list[int] = []
    if not backend.offline_broker_configs:
        # A source replica on a broker that is down: its rate can only be set through it. It sends
        # nothing while down; Kafka's tool would fail here instead.
        offline = sorted(b for b in broker_cfgs if b not in set(state.broker_ids))
        broker_cfgs = {b: c for b, c in broker_cfgs.items() if b not in offline}
    if not broker_cfgs and not topic_cfgs:
        return ThrottleWrites([], backend.read_priors(), [], [], offline=offline)
    backend.ensure_writable()
    updates: list[ConfigUpdate] = [("topics", t, _setter(cfg)) for t, cfg in topic_cfgs.items()]
    updates += [("brokers", str(b), _setter(cfg)) for b, cfg in sorted(broker_cfgs.items())]
    before: list[dict[str, Any]] = []

    def plan(rec: dict[str, Any], read: ConfigReader) -> tuple[list[ConfigUpdate], dict[str, Any]]:
        # The record as this run first found it: a later attempt (after a conflict) may find the entries
        # of this run's own transactions that had landed, which the undo must still take for this run's.
        before.append(th.load_record(th.dump_record(rec)))
        items: list[tuple[th.Entity, str | int, dict[str, str], Any]]
        items = [("topics", t, read("topics", t), cfg.keys()) for t, cfg in topic_cfgs.items()]
        items += [("brokers", b, read("brokers", str(b)), cfg.keys()) for b, cfg in broker_cfgs.items()]
        return updates, th.record_priors_all(rec, items)

    done = backend.commit_throttles(plan, guard="begin" if begin_setup else "none")
    assert done is not None  # plan never declines
    changes, after = done
    had = _record_before(before, changes)
    return ThrottleWrites(changes, had, sorted(broker_cfgs), sorted(topic_cfgs), after, begin_setup, offline)


def _record_before(seen: list[dict[str, Any]], changes: Sequence[ConfigChange]) -> dict[str, Any]:
    """The record before this run: as its first attempt read it, plus what a later attempt found recorded
    for keys this run did not write (another run's, between two attempts). A key this run wrote that
    appeared meanwhile was recorded by this run's own transaction that landed before a conflict."""
    out = th.load_record(th.dump_record(seen[0]))
    ours = {(ch.entity, ch.name, k) for ch in changes for k in ch.after}
    for rec in seen[1:]:
        for entity, entries in rec.items():
            if entity not in ("brokers", "topics"):
                continue
            for name, priors in entries.items():
                for k, v in priors.items():
                    if (entity, name, k) not in ours:
                        out.setdefault(entity, {}).setdefault(name, {}).setdefault(k, v)
    return out


def _setter(updates: dict[str, str]) -> ConfigFn:
    return lambda cur: th.apply_config(cur, updates)


def undo_throttles(backend: Backend, writes: ThrottleWrites, *, lost: bool = False) -> None:
    """Take back exactly what this run changed, in one fenced commit that also ends its setup mark: a
    config key only where it still holds the value this run wrote, a record entry only where this run
    added it. What another run wrote since is left alone. lost (the setup mark went with an expired
    session, other runs may have acted): broker rates are shared, so while anything reassigns they stay
    (recorded; verify takes them off once nothing does)."""
    ours = {(ch.entity, ch.name): ch for ch in writes.changes}
    if lost and anything_reassigning(backend.read_state()):
        ours = {k: ch for k, ch in ours.items() if k[0] != "brokers"}

    def revert(ch: ConfigChange) -> ConfigFn:
        def fn(cur: dict[str, str]) -> dict[str, str]:
            out = dict(cur)
            for k, v in ch.before.items():
                if out.get(k) == ch.after.get(k):
                    if v is None:
                        out.pop(k, None)
                    else:
                        out[k] = v
            return out

        return fn

    def plan(rec: dict[str, Any], read: ConfigReader) -> tuple[list[ConfigUpdate], dict[str, Any]]:
        rec = th.load_record(th.dump_record(rec))
        for (entity, name), ch in ours.items():
            had = writes.record_before.get(entity, {}).get(name, {})
            added = writes.record_after.get(entity, {}).get(name, {})
            entry = rec.get(entity, {}).get(name)
            current = read(entity, name)
            for k in ch.after:
                # ours to take back: still the value we wrote, and recorded by this run
                if entry is not None and k in added and k not in had and current.get(k) == ch.after[k]:
                    entry.pop(k, None)
            if entry == {}:
                del rec[entity][name]
        updates = [(e, n, revert(ch)) for (e, n), ch in reversed(list(ours.items()))]
        return updates, rec

    backend.commit_throttles(plan, guard="end" if writes.setup else "none", record_last=True, create=False)


def said_writes(writes: ThrottleWrites, report: ExecuteReport) -> None:
    """A throttle write's lines: brokers not throttled (not registered), lists widened to '*'."""
    if writes.offline:
        report.info(
            f"Not throttled: broker{'' if len(writes.offline) == 1 else 's'} "
            f"{shorten(writes.offline)}, not registered (a broker's rate is set through that broker)"
        )
    _warn_widened(writes.changes, report)


def _warn_widened(changes: Sequence[ConfigChange], report: ExecuteReport) -> None:
    """A topic whose throttled-replica list went as "*" (over a request's string: admin backend)."""
    widened = sorted({ch.name for ch in changes if ch.entity == "topics" and "*" in ch.after.values()})
    if widened:
        report.warn(
            listed(
                "Every replica of {} is throttled ('*'): the list of this plan's replicas is longer than the "
                f"{th.MAX_REQUEST_STRING} bytes a request carries",
                widened,
            )
        )


def seconds_at(
    state: ClusterState, entries: Sequence[PlanEntry], rate: int, sizer: object | None
) -> float | None:
    """The least time the plan's copies take at `rate` per broker (planning.sizes: the busiest receiver's
    bytes / rate); None without sizes (no brokers to ask, or a moving partition whose size is unknown)."""
    from reassign_cli.planning import sizes

    ask = getattr(sizer, "replica_sizes", None)
    if ask is None:
        return None
    live = set(state.broker_ids)
    current: dict[str, dict[int, list[int]]] = {}
    proposed: dict[str, dict[int, list[int]]] = {}
    for e in entries:
        current.setdefault(e.topic, {})[e.partition] = list(state.topics[e.topic].replicas[e.partition])
        proposed.setdefault(e.topic, {})[e.partition] = list(e.replicas)
    keys = [(t, p, b) for t, parts in current.items() for p, reps in parts.items() for b in reps if b in live]
    try:
        found, _ = ask(keys)
    except OperationalError:
        return None
    known: dict[str, dict[int, int]] = {}
    for (t, p), size in sizes.largest(found).items():
        known.setdefault(t, {})[p] = size
    copied = sizes.copy_bytes(current, proposed, known)
    return None if copied.copies_unknown else copied.seconds_at(rate)
