"""The rebalance tick's pieces (ops/autopilot.py, core/autopilot.without_dead), expected values worked out by
hand: the heal's health exemption, the per-broker figures the decision reads, the heal's cut, the topics
--exclude-topics leaves, and the reassignments not ours."""

from __future__ import annotations

from reassign_cli.core import autopilot as ap
from reassign_cli.core import health as hc
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.ops import autopilot as ops


def _signals(registered: set[int], parts: dict[tuple[str, int], hc.PartitionHealth]) -> hc.Signals:
    return hc.Signals(frozenset(registered), None, parts, {"t": 2, "u": 2}, 7)


def _holds(signals: hc.Signals) -> list[tuple[str, str]]:
    verdict = hc.check(signals, plan_brokers=[1, 2], queued=[("t", 0)], previous_epoch=7)
    return [(h.check, h.reason) for h in verdict.holds] + [("waiting", str(tp)) for tp in verdict.waiting]


def test_a_dead_brokers_own_damage_holds_nothing_and_other_damage_still_holds() -> None:
    # t-0 on 1,2,3 with broker 3 dead: offline on 3, ISR 1 < min ISR 2, under-replicated: all its own work
    dead_only = hc.PartitionHealth(1, (1, 2, 3), (1,), offline=(3,))
    # the same partition seen raw: three holds, and the queued move waits for min ISR
    raw = _signals({1, 2}, {("t", 0): dead_only})
    assert [c for c, _ in _holds(raw)] == ["offline-replicas", "min-isr", "under-replicated", "waiting"]
    # wait: 2 is live and out of the ISR too: min-isr and under-replicated (by 2) still hold
    assert _holds(ap.without_dead(raw, {3})) == [
        ("min-isr", "partition t-0 is under min.insync.replicas (1 in sync of 2)"),
        ("under-replicated", "partition t-0 is under-replicated (broker 2 is out of its ISR)"),
        ("waiting", "('t', 0)"),
    ]
    only_3 = _signals({1, 2}, {("t", 0): hc.PartitionHealth(1, (1, 2, 3), (1, 2), offline=(3,))})
    assert [c for c, _ in _holds(only_3)] == [
        "offline-replicas",
        "under-replicated",
        "waiting",
    ]  # ISR 2 = min
    assert _holds(ap.without_dead(only_3, {3})) == []
    # a partition with no leader still holds; a live broker's replica out of the ISR elsewhere still holds
    other = _signals(
        {1, 2},
        {
            ("t", 0): hc.PartitionHealth(1, (1, 2, 3), (1, 2), offline=(3,)),
            ("u", 0): hc.PartitionHealth(-1, (3,), (), offline=(3,)),
            ("u", 1): hc.PartitionHealth(1, (1, 2), (1,)),
        },
    )
    assert [c for c, _ in _holds(ap.without_dead(other, {3}))] == [
        "leaderless",
        "min-isr",
        "under-replicated",
    ]
    # a "dead" broker registered again is not exempt: its replica out of the ISR holds as any other
    back = _signals({1, 2, 3}, {("t", 0): hc.PartitionHealth(1, (1, 2, 3), (1, 2))})
    assert [c for c, _ in _holds(ap.without_dead(back, {3}))] == ["under-replicated", "waiting"]


def _state() -> ClusterState:
    topics = {
        "a": Topic("a", {0: [1, 3], 1: [2, 1]}, sizes={0: 100, 1: 10}),
        "b": Topic("b", {0: [3]}, sizes={0: 50}, isr={0: []}),
        "c": Topic("c", {0: [1, 2]}, adding={0: [2]}, removing={0: [3]}),
    }
    return ClusterState([Broker(1, "r1"), Broker(2, "r2")], topics)


def test_broker_figures_from_an_assignment() -> None:
    current = {"a": {0: [1, 3], 1: [2, 1]}, "b": {0: [3]}}
    states = ops.broker_states(_state(), current, {"a": {0: 100, 1: 10}, "b": {0: 50}})
    assert states == [
        ap.BrokerState(1, replicas=2, leaders=1, bytes=110, largest=100),
        ap.BrokerState(2, replicas=1, leaders=1, bytes=10, largest=10),
        ap.BrokerState(3, replicas=2, leaders=1, registered=False, bytes=150, largest=100, must_lead=1),
    ]


def test_the_heal_takes_the_dead_brokers_partitions_most_damaged_first_within_the_limits() -> None:
    state = _state()
    current = {"a": {0: [1, 3], 1: [2, 1]}, "b": {0: [3]}}
    whole = {"a": {0: [1, 2], 1: [2, 1]}, "b": {0: [1]}}
    sizes = {"a": {0: 100, 1: 10}, "b": {0: 50}}
    # b-0 has lost its only replica (short by 1 of 1, ISR empty); a-0 is short by 1 too: the smaller first
    got = ops.heal_limited(state, current, whole, sizes, frozenset({3}), ops.TickRequest())
    assert [(m.topic, m.partition, m.after) for m in got.taken] == [("b", 0, (1,)), ("a", 0, (1, 2))]
    assert got.bytes == 150
    one = ops.heal_limited(state, current, whole, sizes, frozenset({3}), ops.TickRequest(max_moves=1))
    assert one.proposed == {"b": {0: [1]}}
    small = ops.heal_limited(state, current, whole, sizes, frozenset({3}), ops.TickRequest(max_bytes=60))
    assert small.proposed == {"b": {0: [1]}} and [m.topic for m in small.too_large] == ["a"]


def test_exclude_topics_is_a_whole_name_regex_and_reassignments_not_ours_are_named() -> None:
    state = _state()
    assert ops.selected_topics(state, None) == ["a", "b", "c"]
    assert ops.selected_topics(state, "a|c") == ["b"]
    assert ops.selected_topics(state, "(?!b$).*") == ["b"]
    assert ops.selected_topics(state, "^a") == ["b", "c"]  # fullmatch: "a" only, not "ab"...
    line = ops.foreign_line(state)
    assert line is not None and line.endswith("kafka-reassign (an operator's or another tool's): c-0")
    state.topics["c"] = Topic("c", {0: [1, 2]})
    assert ops.foreign_line(state) is None
    state.reassignment = {("a", 1): [1, 2]}
    assert (ops.foreign_line(state) or "").endswith(": a-1")


def test_rebalance_refuses_format_json_before_connecting() -> None:
    from click.testing import CliRunner

    from reassign_cli.cli import cli

    r = CliRunner().invoke(
        cli, ["rebalance", "--zookeeper", "127.0.0.1:1/x", "--format", "json"], standalone_mode=False
    )
    assert "--format json is not supported yet" in str(r.exception)


def test_a_dead_broker_registered_and_fenced_is_exempt_as_one_gone() -> None:
    # KRaft 4.3.1: a stopped broker stays registered, fenced. Its own damage is the heal's work as if gone.
    part = hc.PartitionHealth(1, (1, 2, 3), (1, 2), offline=(3,))
    fenced = hc.Signals(frozenset({1, 2, 3}), frozenset({3}), {("t", 0): part}, {"t": 2}, 7)
    assert _holds(ap.without_dead(fenced, {3})) == []
    # unfenced again (it came back): no exemption
    back = hc.Signals(frozenset({1, 2, 3}), frozenset(), {("t", 0): part}, {"t": 2}, 7)
    assert [c for c, _ in _holds(ap.without_dead(back, {3}))] == [
        "offline-replicas",
        "under-replicated",
        "waiting",
    ]


class _RecordBackend:
    """What forget_dead_configs uses of a backend: the admin API alone (no controller), brokers 1, 2 live."""

    offline_broker_configs = False
    offline_broker_clear = False

    def __init__(self, record: dict) -> None:  # type: ignore[type-arg]
        self.record = record

    def read_state(self, topics: list[str]) -> ClusterState:
        return ClusterState([Broker(1, None), Broker(2, None)], {})

    def read_priors(self) -> dict:  # type: ignore[type-arg]
        return self.record

    def update_priors(self, fn):  # type: ignore[no-untyped-def]
        self.record = fn(self.record)
        return self.record


def test_a_dead_brokers_record_entry_is_named_once_and_dropped(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rate = "leader.replication.throttled.rate"
    record = {"version": 1, "brokers": {"2": {rate: None}, "3": {rate: None}}, "topics": {"t": {}}}
    backend = _RecordBackend(record)
    monkeypatch.setattr(ops, "dead_now", lambda b, after, now: frozenset({3}))
    said: list[str] = []
    assert ops.forget_dead_configs(backend, 1800.0, 0.0, said.append) == [3]
    assert backend.record["brokers"] == {"2": {rate: None}} and backend.record["topics"] == {"t": {}}
    assert len(said) == 1 and said[0].startswith(
        f"broker 3 is dead: the throttle keys this tool set on it ({rate})"
    )
    assert "--entity-name 3 --alter --delete-config leader.replication.throttled.rate" in said[0]
    assert ops.forget_dead_configs(backend, 1800.0, 0.0, said.append) == [] and len(said) == 1  # once
    # a dead broker registered again (live), or the controller at hand: nothing dropped
    monkeypatch.setattr(ops, "dead_now", lambda b, after, now: frozenset({2}))
    assert ops.forget_dead_configs(backend, 1800.0, 0.0, said.append) == []
    backend.offline_broker_clear = True
    monkeypatch.setattr(ops, "dead_now", lambda b, after, now: frozenset({3}))
    backend.record["brokers"]["3"] = {rate: None}
    assert (
        ops.forget_dead_configs(backend, 1800.0, 0.0, said.append) == [] and "3" in backend.record["brokers"]
    )
