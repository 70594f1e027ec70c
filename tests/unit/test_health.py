"""core/health.py: the holds of a step, worked out by hand for each check, and their one line (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.core import health as hl
from reassign_cli.core.health import PartitionHealth as PH
from reassign_cli.core.record_log import TOPIC as RECORD_TOPIC

HEALTHY = PH(leader=1, replicas=(1, 2, 3), isr=(1, 2, 3))


def signals(
    parts: dict[tuple[str, int], PH] | None = None,
    *,
    registered: frozenset[int] = frozenset({1, 2, 3}),
    fenced: frozenset[int] | None = None,
    min_isr: dict[str, int] | None = None,
    epoch: int | None = 7,
) -> hl.Signals:
    return hl.Signals(
        registered=registered,
        fenced=fenced,
        partitions=parts if parts is not None else {("t", 0): HEALTHY},
        min_isr=min_isr or {},
        controller_epoch=epoch,
    )


def run(s: hl.Signals, **kw: object) -> hl.Verdict:
    args: dict[str, object] = {"plan_brokers": {1, 2, 3}, "queued": set(), "previous_epoch": 7}
    args.update(kw)
    return hl.check(s, **args)  # type: ignore[arg-type]


def checks(v: hl.Verdict) -> list[tuple[str, str]]:
    return [(h.check, h.subject) for h in v.holds]


def test_healthy_cluster_holds_nothing() -> None:
    v = run(signals())
    assert v.holds == () and v.waiting == frozenset() and not v.resubmit and v.epoch == 7
    assert v.may_start(("t", 0))
    assert hl.render_line(v, first_seen={}, now=0, moving=0, queued=3) is None


def test_plan_broker_not_registered() -> None:
    v = run(signals(registered=frozenset({1, 2})), plan_brokers={2, 3})
    assert checks(v) == [("broker-missing", "broker 3")]
    assert v.holds[0].reason == "broker 3 is not registered" and v.holds[0].broker == 3
    assert not v.may_start(("t", 0))


def test_broker_outside_the_plan_is_not_a_broker_hold() -> None:
    assert run(signals(registered=frozenset({1, 2})), plan_brokers={1, 2}).holds == ()


def test_fenced_broker_is_fenced_not_missing() -> None:
    # KIP-1073: a fenced broker is still registered; DescribeCluster v2 lists it with IsFenced.
    v = run(signals(registered=frozenset({1, 2, 3}), fenced=frozenset({2})))
    assert checks(v) == [("broker-fenced", "broker 2")]
    assert v.holds[0].reason == "broker 2 is fenced"


def test_fenced_unknown_never_holds() -> None:
    assert run(signals(fenced=None)).holds == ()


def test_leaderless_partition() -> None:
    v = run(signals({("t", 4): PH(leader=-1, replicas=(3,), isr=(3,))}))
    assert checks(v) == [("leaderless", "partition t-4")]
    assert v.holds[0].reason == "partition t-4 has no leader" and v.holds[0].partition == ("t", 4)


def test_offline_replicas() -> None:
    v = run(signals({("t", 0): PH(leader=1, replicas=(1, 2, 3), isr=(1, 2, 3), offline=(2, 3))}))
    assert checks(v) == [("offline-replicas", "partition t-0")]
    assert v.holds[0].reason == "partition t-0 has offline replicas on brokers 2, 3"


def test_under_replicated() -> None:
    v = run(signals({("t", 0): PH(leader=1, replicas=(1, 2, 3), isr=(1, 3))}))
    assert checks(v) == [("under-replicated", "partition t-0")]
    assert v.holds[0].reason == "partition t-0 is under-replicated (broker 2 is out of its ISR)"


def test_adding_replicas_are_not_under_replicated() -> None:
    # A move 1,2 -> 1,4: replicas 1,2,4 with 4 adding, still copying (not in ISR): nothing is lost.
    moving = PH(leader=1, replicas=(1, 2, 4), isr=(1, 2), adding=(4,))
    assert run(signals({("t", 0): moving})).holds == ()
    # ... but an origin replica out of ISR during the move is.
    lost = PH(leader=1, replicas=(1, 2, 4), isr=(1,), adding=(4,))
    assert checks(run(signals({("t", 0): lost}))) == [("under-replicated", "partition t-0")]


def test_under_min_isr() -> None:
    # RF 2, min.insync.replicas 2, one replica out: 1 in sync of 2.
    v = run(signals({("m", 0): PH(leader=1, replicas=(1, 2), isr=(1,))}, min_isr={"m": 2}))
    assert checks(v) == [("min-isr", "partition m-0"), ("under-replicated", "partition m-0")]
    assert v.holds[0].reason == "partition m-0 is under min.insync.replicas (1 in sync of 2)"


def test_full_isr_below_min_isr_is_configuration_not_a_hold() -> None:
    # RF 1 with min.insync.replicas 2: never more in sync than it has; not ill health.
    assert run(signals({("c", 0): PH(leader=1, replicas=(1,), isr=(1,))}, min_isr={"c": 2})).holds == ()
    # RF 2 with min 2, healthy: at min ISR by construction, no wait either.
    v = run(
        signals({("c", 0): PH(leader=1, replicas=(1, 2), isr=(1, 2))}, min_isr={"c": 2}), queued={("c", 0)}
    )
    assert v.holds == () and v.waiting == frozenset()


def test_unknown_min_isr_is_kafkas_default_one() -> None:
    # RF 2, ISR 1, no min.insync.replicas known: 1 in sync is not under 1: under-replicated only.
    v = run(signals({("u", 0): PH(leader=1, replicas=(1, 2), isr=(1,))}))
    assert checks(v) == [("under-replicated", "partition u-0")]


def test_queued_move_at_min_isr_waits_after_the_rest_resumes() -> None:
    # RF 3, min 2, ISR 2: at min ISR and short of broker 3. The under-replicated hold is ignored (the
    # operator knows that partition); the rest may start, the queued move of a-0 waits.
    parts = {("a", 0): PH(leader=1, replicas=(1, 2, 3), isr=(1, 2)), ("b", 0): HEALTHY}
    v = run(signals(parts, min_isr={"a": 2}), queued={("a", 0), ("b", 0)}, ignore={"under-replicated"})
    assert v.holds == () and v.waiting == frozenset({("a", 0)})
    assert v.may_start(("b", 0)) and not v.may_start(("a", 0))
    assert [h.check for h in v.ignored] == ["under-replicated"]
    line = hl.render_line(v, first_seen={}, now=0, moving=2, queued=5)
    assert line == "waiting: partition a-0 is at min.insync.replicas, a queued move waits; 2 moving, 5 queued"


def test_min_isr_partition_no_queued_move_touches_does_not_wait() -> None:
    parts = {("a", 0): PH(leader=1, replicas=(1, 2, 3), isr=(1, 2))}
    v = run(signals(parts, min_isr={"a": 2}), queued={("b", 0)}, ignore={"under-replicated"})
    assert v.waiting == frozenset() and v.holds == ()


def test_ignoring_min_isr_lifts_the_waits_too() -> None:
    parts = {("a", 0): PH(leader=1, replicas=(1, 2), isr=(1,))}
    v = run(signals(parts, min_isr={"a": 2}), queued={("a", 0)}, ignore={"min-isr", "under-replicated"})
    assert v.holds == () and v.waiting == frozenset() and v.may_start(("a", 0))


def test_the_tools_own_topics_are_skipped() -> None:
    """The stored plan's topic and autopilot's ledger are ours as the record topic is: a broker of theirs
    stopped (a rolling restart) is no hold (seen on the real cluster: __reassign_cli_plan-0 under-replicated
    held a foreground window)."""
    from reassign_cli.backends.admin.ledger_topic import TOPIC as LEDGER

    sick = PH(leader=2, replicas=(1, 2), isr=(2,))
    for topic in ("__reassign_cli_plan", LEDGER):
        assert run(signals({(topic, 0): sick})).holds == ()
    assert {h.check for h in run(signals({("__reassign_cli_planx", 0): sick})).holds} == {"under-replicated"}


def test_record_topic_is_skipped() -> None:
    sick = PH(leader=-1, replicas=(1, 2), isr=(), offline=(1, 2))
    assert run(signals({(RECORD_TOPIC, 0): sick})).holds == ()
    assert run(signals({("own", 0): sick}), skip_topics={"own"}).holds == ()
    assert {h.check for h in run(signals({(RECORD_TOPIC, 0): sick}), skip_topics=()).holds} == {
        "leaderless",
        "offline-replicas",
        "min-isr",  # 0 in sync of Kafka's default 1
        "under-replicated",
    }


def test_controller_change_holds_and_asks_for_resubmit() -> None:
    v = run(signals(epoch=8), previous_epoch=7)
    assert checks(v) == [("controller-change", "controller")]
    assert v.holds[0].reason == "the controller changed (epoch 8, was 7)"
    assert v.resubmit and v.epoch == 8


def test_first_step_has_no_previous_epoch_and_does_not_hold() -> None:
    v = run(signals(epoch=8), previous_epoch=None)
    assert v.holds == () and not v.resubmit and v.epoch == 8


def test_unknown_epoch_now_keeps_the_previous_one() -> None:
    v = run(signals(epoch=None), previous_epoch=7)
    assert v.holds == () and not v.resubmit and v.epoch == 7


def test_ignored_controller_change_still_resubmits() -> None:
    v = run(signals(epoch=9), previous_epoch=7, ignore={"controller-change"})
    assert v.holds == () and v.resubmit and [h.check for h in v.ignored] == ["controller-change"]


def test_parse_ignore() -> None:
    assert hl.parse_ignore(["min-isr", "Under-Replicated"]) == {"min-isr", "under-replicated"}
    assert hl.parse_ignore(["all"]) == set(hl.CHECKS)
    with pytest.raises(ValueError, match="unknown health check 'urp'"):
        hl.parse_ignore(["urp"])


def test_the_issues_line() -> None:
    v = run(signals(registered=frozenset({1, 2})), plan_brokers={3})
    seen = hl.seen_since(v, {}, now=1000.0)
    assert seen == {"broker-missing:broker 3": 1000.0}
    seen = hl.seen_since(v, seen, now=1040.0)  # seen again 40 s later: the first time is kept
    line = hl.render_line(v, first_seen=seen, now=1040.0, moving=2, queued=5)
    assert line == "held: broker 3 is not registered (since 40 s); 2 moving, 5 queued"


def test_several_holds_read_the_first_and_how_many_more() -> None:
    # Broker 3 stopped: it is missing, t-0 (RF 3) has it offline and out of ISR, t-1 (RF 1 on 3) is
    # leaderless with it offline.
    parts = {
        ("t", 0): PH(leader=1, replicas=(1, 2, 3), isr=(1, 2), offline=(3,)),
        ("t", 1): PH(leader=-1, replicas=(3,), isr=(3,), offline=(3,)),
    }
    v = run(signals(parts, registered=frozenset({1, 2})))
    assert checks(v) == [
        ("broker-missing", "broker 3"),
        ("leaderless", "partition t-1"),
        ("offline-replicas", "partition t-0"),
        ("offline-replicas", "partition t-1"),
        ("under-replicated", "partition t-0"),
    ]
    line = hl.render_line(v, first_seen={"broker-missing:broker 3": 0.0}, now=150.0, moving=0, queued=4)
    assert line == (
        "held: broker 3 is not registered (since 2 min), and 4 more (leaderless 1, offline-replicas 2, "
        "under-replicated 1); 0 moving, 4 queued"
    )


def test_seen_since_drops_holds_gone() -> None:
    v = run(signals())
    assert hl.seen_since(v, {"broker-missing:broker 3": 5.0}, now=9.0) == {}


def test_json() -> None:
    parts = {("m", 0): PH(leader=1, replicas=(1, 2), isr=(1,))}
    v = run(signals(parts, min_isr={"m": 2}), queued={("m", 0)}, ignore={"under-replicated"})
    doc = hl.to_json(v, first_seen={"min-isr:partition m-0": 10.0}, now=25.0, moving=1, queued=1)
    assert doc == {
        "held": True,
        "line": "held: partition m-0 is under min.insync.replicas (1 in sync of 2) (since 15 s); 1 moving, 1 queued",
        "holds": [
            {
                "check": "min-isr",
                "subject": "partition m-0",
                "broker": None,
                "partition": {"topic": "m", "partition": 0},
                "reason": "partition m-0 is under min.insync.replicas (1 in sync of 2)",
                "since_seconds": 15.0,
            }
        ],
        "waiting": [{"topic": "m", "partition": 0}],
        "ignored": [
            {
                "check": "under-replicated",
                "subject": "partition m-0",
                "broker": None,
                "partition": {"topic": "m", "partition": 0},
                "reason": "partition m-0 is under-replicated (broker 2 is out of its ISR)",
            }
        ],
        "resubmit": False,
        "controller_epoch": 7,
        "notes": [],
        "moving": 1,
        "queued": 1,
    }


# -- properties ---------------------------------------------------------------------------------

BROKERS = st.integers(min_value=1, max_value=5)


@st.composite
def partition(draw: st.DrawFn) -> PH:
    replicas = tuple(draw(st.lists(BROKERS, min_size=1, max_size=4, unique=True)))
    isr = tuple(b for b in replicas if draw(st.booleans()))
    adding = tuple(b for b in replicas if b not in isr and draw(st.booleans()))
    offline = tuple(b for b in replicas if b not in isr and draw(st.booleans()))
    leader = draw(st.sampled_from([-1, *isr])) if isr else -1
    return PH(leader=leader, replicas=replicas, isr=isr, offline=offline, adding=adding)


PARTS = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b", RECORD_TOPIC]), st.integers(0, 3)), partition(), max_size=8
)


@given(
    parts=PARTS,
    registered=st.frozensets(BROKERS),
    fenced=st.none() | st.frozensets(BROKERS),
    plan=st.frozensets(BROKERS),
    min_isr=st.dictionaries(st.sampled_from(["a", "b"]), st.integers(1, 3)),
    ignore=st.frozensets(st.sampled_from(hl.CHECKS)),
    epochs=st.tuples(st.none() | st.integers(0, 3), st.none() | st.integers(0, 3)),
)
def test_holds_are_exactly_the_conditions(
    parts: dict[tuple[str, int], PH],
    registered: frozenset[int],
    fenced: frozenset[int] | None,
    plan: frozenset[int],
    min_isr: dict[str, int],
    ignore: frozenset[str],
    epochs: tuple[int | None, int | None],
) -> None:
    now, before = epochs
    if fenced is not None:
        fenced &= registered  # DescribeCluster v2 lists fenced brokers among the registered ones
    s = hl.Signals(registered, fenced, parts, min_isr, now)
    v = hl.check(s, plan_brokers=plan, queued=set(parts), previous_epoch=before, ignore=ignore)
    expected: set[tuple[str, str]] = {("broker-missing", f"broker {b}") for b in plan - registered}
    expected |= {("broker-fenced", f"broker {b}") for b in plan & (fenced or frozenset())}
    for (t, p), ph in parts.items():
        if t == RECORD_TOPIC:
            continue
        name = f"partition {t}-{p}"
        lost = set(ph.replicas) - set(ph.isr) - set(ph.adding)
        if ph.leader == -1:
            expected.add(("leaderless", name))
        if ph.offline:
            expected.add(("offline-replicas", name))
        if lost:
            expected.add(("under-replicated", name))
        if lost and len(ph.isr) < min_isr.get(t, 1):
            expected.add(("min-isr", name))
    if now is not None and before is not None and now != before:
        expected.add(("controller-change", "controller"))
    got = {(h.check, h.subject) for h in v.holds}
    assert got == {e for e in expected if e[0] not in ignore}
    assert got | {(h.check, h.subject) for h in v.ignored} == expected
    assert len(v.holds) == len(got)  # one hold per check and subject
    assert [h.sort_key() for h in v.holds] == sorted(h.sort_key() for h in v.holds)
    assert v.resubmit == (now is not None and before is not None and now != before)
    # A waiting partition is never the record topic's, and is short of a replica at or under min ISR.
    for t, p in v.waiting:
        ph = parts[(t, p)]
        assert t != RECORD_TOPIC and set(ph.replicas) - set(ph.isr) - set(ph.adding)
        assert len(ph.isr) <= min_isr.get(t, 1) and "min-isr" not in ignore
    line = hl.render_line(v, first_seen={}, now=0.0, moving=1, queued=2)
    assert (line is None) == (not v.holds and not v.waiting)
    if v.holds:
        assert line is not None and line.startswith(f"held: {v.holds[0].reason} (since 0 s)")
        assert line.endswith("; 1 moving, 2 queued")


# -- the admin gather's reading of kafka-python's answers (a fake client; real ones in
# tests/integration/test_health.py) ---------------------------------------------------------------


class FakeAdmin:
    """The answers of kafka-python 3's KafkaAdminClient, in the shapes it returns them."""

    def __init__(self, brokers: list[dict[str, object]], quorum: object) -> None:
        self.brokers = brokers
        self.quorum = quorum
        self.config_requests: list[list[str]] = []

    def describe_cluster(self) -> dict[str, object]:
        return {"brokers": self.brokers, "controller_id": 1}

    def describe_topics(self, topics: object = None) -> list[dict[str, object]]:
        part = {"partition_index": 0, "leader_id": 1, "replica_nodes": [1, 2, 4], "isr_nodes": [1]}
        return [
            {"name": "a", "error_code": 0, "partitions": [dict(part, offline_replicas=[2])]},
            {"name": "gone", "error_code": 3, "partitions": []},
        ]

    def list_partition_reassignments(self) -> dict[object, dict[str, list[int]]]:
        from kafka import TopicPartition

        return {
            TopicPartition("a", 0): {"replicas": [1, 2, 4], "adding_replicas": [4], "removing_replicas": [2]}
        }

    def describe_configs(self, resources: list[object], config_filter: str) -> dict[str, object]:
        names = [r.name for r in resources]  # type: ignore[attr-defined]
        self.config_requests.append(names)
        return {"topic": {n: {"min.insync.replicas": {"value": "2"}} for n in names}}

    def describe_metadata_quorum(self) -> object:
        if isinstance(self.quorum, Exception):
            raise self.quorum
        return {"topics": [{"partitions": [{"leader_id": 1, "leader_epoch": self.quorum, "error": None}]}]}


def test_admin_gather_kraft_4_shapes() -> None:
    from reassign_cli.backends.admin import health as ah

    fenced = [{"broker_id": 1, "is_fenced": False}, {"broker_id": 2, "is_fenced": True}]
    admin = FakeAdmin(fenced, quorum=12)
    cache: dict[str, int] = {}
    s = ah.gather(admin, min_isr_cache=cache)
    assert s.registered == {1, 2} and s.fenced == {2}
    assert s.partitions == {("a", 0): PH(leader=1, replicas=(1, 2, 4), isr=(1,), offline=(2,), adding=(4,))}
    assert s.min_isr == {"a": 2} and cache == {"a": 2} and s.controller_epoch == 12 and s.notes == ()
    ah.gather(admin, min_isr_cache=cache)
    assert admin.config_requests == [["a"]]  # cached for the run: asked once


def test_admin_gather_zookeeper_mode_shapes() -> None:
    from kafka.errors import IncompatibleBrokerVersion

    from reassign_cli.backends.admin import health as ah

    admin = FakeAdmin([{"broker_id": 1}, {"broker_id": 3}], quorum=IncompatibleBrokerVersion("no"))
    s = ah.gather(admin)
    assert s.registered == {1, 3} and s.fenced is None and s.controller_epoch is None
    assert s.notes == ("controller epoch unknown through the admin API on a ZooKeeper-mode cluster",)


def test_zookeeper_partitions_offline_are_on_unregistered_brokers() -> None:
    from reassign_cli.backends.zookeeper import health as zh
    from reassign_cli.core.model import Broker, ClusterState, Topic

    t = Topic("z", {0: [1, 3], 1: [2, 1]}, adding={1: [2]}, isr={0: [1], 1: [1]}, leader={0: 1, 1: 1})
    d = Topic("del", {0: [3]}, leader={0: -2})
    state = ClusterState(
        brokers=[Broker(1, None), Broker(2, None)], topics={"z": t, "del": d}, deleting=frozenset({"del"})
    )
    assert zh.partitions(state) == {
        ("z", 0): PH(leader=1, replicas=(1, 3), isr=(1,), offline=(3,)),
        ("z", 1): PH(leader=1, replicas=(2, 1), isr=(1,), adding=(2,)),
    }
