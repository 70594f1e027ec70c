"""Per-partition reassignment status, Kafka's verify lines, exit codes and the JSON report."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import Broker, ClusterState, Topic, TopicPartition
from reassign_cli.core.progress import (
    PartitionProgress,
    Status,
    anything_reassigning,
    caught_up,
    classify,
    kafka_line,
    overall_exit,
    report_json,
)
from reassign_cli.errors import ExitCode


def state_of(
    topics: list[Topic],
    brokers: tuple[int, ...] = (1, 2, 3, 4),
    reassignment: dict[TopicPartition, list[int]] | None = None,
) -> ClusterState:
    return ClusterState([Broker(b) for b in brokers], {t.name: t for t in topics}, reassignment=reassignment)


def one(targets: dict[TopicPartition, list[int]], state: ClusterState) -> PartitionProgress:
    (result,) = classify(targets, state)
    return result


def reassigning_foo(isr: list[int] | None = None) -> Topic:
    # KAFKA-SPEC §4.1: ORS [1,2,3], TRS [3,4,2] -> RS [3,4,2,1], AR [4], RR [1].
    t = Topic("foo", {0: [3, 4, 2, 1]}, adding={0: [4]}, removing={0: [1]})
    if isr is not None:
        t.isr[0] = isr
    return t


def test_section_4_1_example_is_in_progress_waiting_for_isr() -> None:
    topic = reassigning_foo(isr=[1, 2, 3])
    assert topic.target(0) == [3, 4, 2]
    state = state_of([topic], reassignment={("foo", 0): [3, 4, 2]})
    r = one({("foo", 0): [3, 4, 2]}, state)
    assert r.status is Status.IN_PROGRESS
    assert (r.current, r.adding, r.removing, r.isr) == ([3, 4, 2, 1], [4], [1], [1, 2, 3])
    assert r.reason == "replicas 4 not yet in ISR [1,2,3]"
    assert kafka_line(r) == "Reassignment of partition foo-0 is still in progress."
    assert caught_up(r) == (2, 3)


def test_in_progress_reasons() -> None:
    target = {("foo", 0): [3, 4, 2]}
    # Broker 4 gone: it can never catch up.
    r = one(target, state_of([reassigning_foo([1, 2, 3])], brokers=(1, 2, 3), reassignment=dict(target)))
    assert r.reason == "broker 4 is not registered"
    r = one({("foo", 0): [5, 6]}, state_of([Topic("foo", {0: [1]})], reassignment={("foo", 0): [5, 6]}))
    assert r.reason == "brokers 5,6 are not registered"
    # Caught up: the controller has to finish (phase B).
    r = one(target, state_of([reassigning_foo([1, 2, 3, 4])], reassignment=dict(target)))
    assert r.reason == "all target replicas are in the ISR; waiting for the controller to finish"
    # Only in the znode, the topic znode not yet touched by the controller.
    r = one({("foo", 0): [2, 3]}, state_of([Topic("foo", {0: [1, 2]})], reassignment={("foo", 0): [2, 3]}))
    assert (r.status, r.reason) == (Status.IN_PROGRESS, "waiting for the controller to start it")
    # Someone else's reassignment of the same partition.
    r = one({("foo", 0): [1, 2]}, state_of([reassigning_foo()], reassignment={("foo", 0): [3, 4, 2]}))
    assert (r.status, r.reason) == (Status.IN_PROGRESS, "a different reassignment is running: to 3,4,2")
    r = one({("foo", 0): [1, 2]}, state_of([reassigning_foo()]))
    assert (r.status, r.reason) == (Status.IN_PROGRESS, "a different reassignment is running: to 3,4,2")


def test_in_progress_reasons_around_the_controllers_steps() -> None:
    # Phase B done in the topic znode (B6) but the entry not yet removed from the trigger (B7).
    r = one({("foo", 0): [2, 3]}, state_of([Topic("foo", {0: [2, 3]})], reassignment={("foo", 0): [2, 3]}))
    assert (r.status, r.reason) == (
        Status.IN_PROGRESS,
        "replicas are at the target; waiting for the controller to remove the entry",
    )
    # An entry for a partition that does not exist: the controller fails it and removes it.
    r = one({("foo", 5): [1]}, state_of([Topic("foo", {0: [1]})], reassignment={("foo", 5): [1]}))
    assert (r.status, r.current) == (Status.IN_PROGRESS, [])
    assert r.reason == "partition does not exist yet; the controller will drop the entry"
    r = one({("gone", 0): [1]}, state_of([], reassignment={("gone", 0): [1]}))
    assert (r.status, r.current, r.adding, r.isr) == (Status.IN_PROGRESS, [], [], None)
    # A target broker that is missing is named before the ISR is looked at.
    r = one({("foo", 0): [1, 9]}, state_of([Topic("foo", {0: [1, 9]}, adding={0: [9]}, isr={0: [1]})]))
    assert r.reason == "broker 9 is not registered"


def test_adding_or_removing_without_the_znode_is_in_progress() -> None:
    # An API-started reassignment, or a trigger znode deleted by hand (KAFKA-SPEC §4.5).
    r = one({("foo", 0): [3, 4, 2]}, state_of([reassigning_foo()]))
    assert r.status is Status.IN_PROGRESS
    shrink = Topic("foo", {0: [1, 2, 3]}, removing={0: [3]})
    assert one({("foo", 0): [1, 2]}, state_of([shrink])).status is Status.IN_PROGRESS


def test_complete() -> None:
    r = one({("foo", 0): [3, 4, 2]}, state_of([Topic("foo", {0: [3, 4, 2]}, isr={0: [4, 2]})]))
    assert (r.status, r.reason) == (Status.COMPLETE, None)
    assert kafka_line(r) == "Reassignment of partition foo-0 is completed."
    assert caught_up(r) == (3, 3)


def test_not_as_planned() -> None:
    state = state_of([Topic("foo", {0: [1, 2], 1: [1, 2]})])
    results = classify({("foo", 1): [2, 3], ("foo", 0): [2, 1], ("gone", 0): [1], ("foo", 9): [1]}, state)
    assert [(r.topic, r.partition, r.status, r.reason) for r in results] == [
        ("foo", 0, Status.NOT_AS_PLANNED, "same replicas in a different order"),
        ("foo", 1, Status.NOT_AS_PLANNED, None),
        ("foo", 9, Status.NOT_AS_PLANNED, "partition does not exist"),
        ("gone", 0, Status.NOT_AS_PLANNED, "topic does not exist"),
    ]
    assert kafka_line(results[1]) == (
        "There is no active reassignment of partition foo-1, but replica set is 1,2 rather than 2,3."
    )
    # A missing partition prints an empty replica set, as Kafka does.
    assert (
        kafka_line(results[3])
        == "There is no active reassignment of partition gone-0, but replica set is  rather than 1."
    )
    assert results[3].current == []


def test_overall_exit() -> None:
    state = state_of([Topic("t", {0: [1], 1: [2], 2: [3]}, adding={2: [3]})])
    done, wrong, moving = ({("t", 0): [1]}, {("t", 1): [1]}, {("t", 2): [3]})
    assert overall_exit(classify(done, state)) == ExitCode.OK == 0
    assert overall_exit(classify(done | wrong, state)) == ExitCode.NOT_AS_PLANNED == 5
    assert overall_exit(classify(done | wrong | moving, state)) == ExitCode.BUSY == 4
    assert overall_exit([]) == 0


def test_anything_reassigning() -> None:
    quiet = Topic("a", {0: [1]})
    assert not anything_reassigning(state_of([quiet]))
    assert not anything_reassigning(state_of([quiet], reassignment={}))  # an empty znode holds nothing
    assert anything_reassigning(state_of([quiet], reassignment={("other", 0): [1]}))
    assert anything_reassigning(state_of([quiet, Topic("b", {0: [1, 2]}, removing={0: [2]})]))


def test_report_json() -> None:
    state = state_of(
        [reassigning_foo([1, 2, 3]), Topic("bar", {0: [1]})], reassignment={("foo", 0): [3, 4, 2]}
    )
    report = report_json(classify({("foo", 0): [3, 4, 2], ("bar", 0): [1]}, state))
    assert orjson.loads(orjson.dumps(report)) == {
        "status": "in_progress",
        "partitions": [
            {
                "topic": "bar",
                "partition": 0,
                "status": "complete",
                "target": [1],
                "current": [1],
                "adding": [],
                "removing": [],
                "isr": None,
                "reason": None,
            },
            {
                "topic": "foo",
                "partition": 0,
                "status": "in_progress",
                "target": [3, 4, 2],
                "current": [3, 4, 2, 1],
                "adding": [4],
                "removing": [1],
                "isr": [1, 2, 3],
                "reason": "replicas 4 not yet in ISR [1,2,3]",
            },
        ],
    }
    assert report_json([])["status"] == "complete"


# ----- properties -------------------------------------------------------------------------------

lists = st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[TopicPartition, list[int]], ClusterState]:
    topics = []
    for name in draw(st.lists(st.sampled_from(["a", "b", "c"]), unique=True)):
        ps = draw(st.lists(st.integers(0, 12), max_size=5, unique=True))
        topics.append(
            Topic(
                name,
                {p: draw(lists) for p in ps},
                adding={p: draw(lists) for p in ps if draw(st.booleans())},
                removing={p: draw(lists) for p in ps if draw(st.booleans())},
                isr={p: draw(lists) for p in ps if draw(st.booleans())},
            )
        )
    tps = st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 12))
    targets = draw(st.dictionaries(tps, lists, max_size=10))
    znode = draw(st.one_of(st.none(), st.dictionaries(tps, lists, max_size=4)))
    brokers = tuple(draw(st.lists(st.integers(0, 6), unique=True)))
    return targets, state_of(topics, tuple(sorted(brokers)), znode)


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_classify_is_total_sorted_and_follows_the_definitions(
    scenario: tuple[dict[TopicPartition, list[int]], ClusterState],
) -> None:
    targets, state = scenario
    results = classify(targets, state)
    assert [(r.topic, r.partition) for r in results] == sorted(targets)
    for r in results:
        tp = (r.topic, r.partition)
        topic = state.topics.get(r.topic)
        moving = tp in (state.reassignment or {}) or (topic is not None and topic.is_reassigning(r.partition))
        current = topic.replicas.get(r.partition, []) if topic else []
        assert r.target == targets[tp] and r.current == current
        if moving:
            assert r.status is Status.IN_PROGRESS
        elif topic is not None and r.partition in topic.replicas and current == targets[tp]:
            assert r.status is Status.COMPLETE and r.reason is None
        else:
            assert r.status is Status.NOT_AS_PLANNED
        assert kafka_line(r).count(f"{r.topic}-{r.partition}") == 1
        have, want = caught_up(r)
        assert 0 <= have <= want == len(r.target)
    expected = (
        4
        if any(r.status is Status.IN_PROGRESS for r in results)
        else 5
        if results and any(r.status is Status.NOT_AS_PLANNED for r in results)
        else 0
    )
    assert overall_exit(results) == expected
    if any(r.status is Status.IN_PROGRESS for r in results):
        assert anything_reassigning(state)


# ------------------------------------------------------------------ replica moves between log dirs

D0, D1, D9 = "/data/d0", "/data/d1", "/data/d9"


def test_replica_moves_and_kafkas_lines() -> None:
    # The five states, each line as Kafka 4.3.1's own --verify printed it for the same state on a KRaft
    # cluster (docs/kraft.md); sorted by (topic, partition, broker).
    from reassign_cli.core.progress import MoveStatus, classify_moves

    moves = {("t", 0, 2): D1, ("t", 0, 1): D1, ("t", 1, 1): D0, ("t", 2, 1): D0, ("t", 3, 3): D0}
    dirs = {
        ("t", 0, 1): (D0, D1),  # future in the target
        ("t", 0, 2): (D1, None),  # there already
        ("t", 1, 1): (D1, None),  # elsewhere, not moving
        ("t", 2, 1): (D1, D9),  # moving, but to another dir
    }  # t-3 on broker 3: in no live log dir
    got = classify_moves(moves, dirs)
    assert [(m.topic, m.partition, m.broker, m.status) for m in got] == [
        ("t", 0, 1, MoveStatus.IN_PROGRESS),
        ("t", 0, 2, MoveStatus.COMPLETE),
        ("t", 1, 1, MoveStatus.NOT_MOVING),
        ("t", 2, 1, MoveStatus.ELSEWHERE),
        ("t", 3, 3, MoveStatus.MISSING),
    ]
    assert [m.line() for m in got] == [
        "Reassignment of replica t-0-1 is still in progress.",
        "Reassignment of replica t-0-2 completed successfully.",
        "Partition t-1 on broker 1 is not being moved from log dir /data/d1 to /data/d0.",
        "Partition t-2 on broker 1 is being moved to log dir /data/d9 instead of /data/d0.",
        "Partition t-3 is not found in any live log dir on broker 3. There is likely an offline log directory "
        "on the broker.",
    ]


def test_verify_exit_with_replica_moves() -> None:
    from reassign_cli.core.progress import MoveStatus, ReplicaMoveProgress, verify_exit

    def move(status: MoveStatus) -> ReplicaMoveProgress:
        return ReplicaMoveProgress("t", 0, 1, D1, D0, None, status)

    done = classify({("foo", 0): [1, 2]}, state_of([Topic("foo", {0: [1, 2]})]))
    moving = classify({("foo", 0): [1, 2]}, state_of([Topic("foo", {0: [1, 2, 3]}, adding={0: [3]})]))
    assert verify_exit(done) == ExitCode.OK
    assert verify_exit(done, [move(MoveStatus.COMPLETE)]) == ExitCode.OK
    assert verify_exit(done, [move(MoveStatus.IN_PROGRESS)]) == ExitCode.BUSY
    assert verify_exit(done, [move(MoveStatus.ELSEWHERE)]) == ExitCode.BUSY
    assert verify_exit(done, [move(MoveStatus.NOT_MOVING)]) == ExitCode.NOT_AS_PLANNED
    assert verify_exit(done, [move(MoveStatus.MISSING)]) == ExitCode.NOT_AS_PLANNED
    assert verify_exit(done, [move(MoveStatus.UNKNOWN)]) == ExitCode.BUSY  # cannot tell: not finished
    assert verify_exit(moving, [move(MoveStatus.MISSING)]) == ExitCode.BUSY  # the partition still moves


def test_a_replica_on_a_broker_that_did_not_answer_is_unknown_not_missing() -> None:
    from reassign_cli.core.progress import MoveStatus, classify_moves, moves_ongoing

    got = classify_moves({("t", 0, 1): D1, ("t", 0, 2): D1}, {("t", 0, 2): (D1, None)}, unanswered=[1])
    assert [m.status for m in got] == [MoveStatus.UNKNOWN, MoveStatus.COMPLETE]
    assert moves_ongoing(got)  # the log-dir throttle stays
    assert got[0].line() == (
        "Partition t-0 on broker 1: the broker did not answer DescribeLogDirs, so whether it still moves to "
        "log dir /data/d1 is unknown."
    )


# ------------------------------------------------------------------ orphaned throttles (verify's warning)


def _result(topic: str, status: Status) -> PartitionProgress:
    return PartitionProgress(topic, 0, [3, 2], [3, 2] if status is Status.COMPLETE else [1, 2], status,
                             None, [], [], None)  # fmt: skip


def test_orphaned_throttles() -> None:
    from reassign_cli.core.progress import orphaned_throttles

    recorded = ([1, 2, 3], ["t", "u"])
    # The plan's partition never moved (killed before the trigger): every throttle of ours is orphaned.
    assert orphaned_throttles(recorded, [_result("t", Status.NOT_AS_PLANNED)]) == ([1, 2, 3], ["t", "u"])
    # The plan finished: its own topic's throttles are its finished reassignment's; u's are another plan's.
    # The broker rates are shared by both and are not named.
    assert orphaned_throttles(recorded, [_result("t", Status.COMPLETE)]) == ([], ["u"])
    assert orphaned_throttles(([1, 2, 3], ["t"]), [_result("t", Status.COMPLETE)]) is None
    assert orphaned_throttles(([], []), [_result("t", Status.NOT_AS_PLANNED)]) is None
    # An empty plan accounts for nothing: recorded topics are all another plan's.
    assert orphaned_throttles(([2], ["t"]), []) == ([], ["t"])
