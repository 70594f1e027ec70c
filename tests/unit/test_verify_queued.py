"""Issue 30 items 3, 17 and 10b: a run of the plan that has work left (a paced or batched execute,
interrupted or between two moves). verify calls what it has not started "queued" (in progress, exit 4), never
"not as planned" (exit 5), and keeps its throttles; the metrics count queued apart. The Ctrl-C of a batched
run says which batches were never started and how to go on. Expected values worked out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import reassign_cli.ops.execute as executor
from reassign_cli.core.progress import (
    PartitionProgress,
    Status,
    classify,
    kafka_line,
    overall_exit,
    passing_through,
    queued,
    report_json,
    verify_exit,
)
from reassign_cli.errors import ExitCode, Interrupted
from reassign_cli.ops.execute import execute
from reassign_cli.ops.request import ExecuteRequest
from reassign_cli.ops.verify import verify
from reassign_cli.render import Output
from reassign_cli.render.metrics import VerifyMetrics, registry
from reassign_cli.render.progress import ExecuteReport
from tests.fakes import FakeBackend, FakeCluster, make_state

LR = "leader.replication.throttled.rate"
FR = "follower.replication.throttled.rate"
LREP = "leader.replication.throttled.replicas"
FREP = "follower.replication.throttled.replicas"
RATES = {LR: "5000", FR: "5000"}
# A paced run of t-0 [1] -> [3] and t-1 [1] -> [3], one move at a time: t-0 has ended, t-1 not started.
TARGETS = {("t", 0): [3], ("t", 1): [3]}
RECORD: dict[str, Any] = {
    "version": 1,
    "brokers": {"1": {LR: None, FR: None}, "3": {LR: None, FR: None}},
    "topics": {"t": {LREP: None, FREP: None}},
}


def between_two_moves() -> FakeCluster:
    c = FakeCluster(make_state({"t": {0: [3], 1: [1]}}), record=RECORD)
    c.configs.update({("topics", "t"): {LREP: "1:1", FREP: "1:3"}})
    c.configs.update({("brokers", "1"): dict(RATES), ("brokers", "3"): dict(RATES)})
    return c


def test_verify_between_two_moves_of_a_paced_run_keeps_its_throttles() -> None:
    c = between_two_moves()
    outcome = verify(FakeBackend(c), TARGETS, work_left=True)
    assert [(r.name, r.status) for r in outcome.results] == [
        ("t-0", Status.COMPLETE),
        ("t-1", Status.QUEUED),
    ]
    assert outcome.cleared is None and outcome.orphans is None and outcome.queued == 1
    assert verify_exit(outcome.results, outcome.moves) == ExitCode.BUSY
    assert c.record == RECORD and c.configs[("topics", "t")] == {LREP: "1:1", FREP: "1:3"}
    assert not c.writes()


def test_without_a_run_left_the_same_state_is_not_as_planned_and_cleared() -> None:
    # what verify did before (and still does for a plan that no run has work left for)
    c = between_two_moves()
    outcome = verify(FakeBackend(c), TARGETS)
    assert verify_exit(outcome.results, outcome.moves) == ExitCode.NOT_AS_PLANNED
    assert outcome.cleared is not None and c.record is None and outcome.queued == 0


def test_queued_status_rules() -> None:
    state = make_state({"t": {0: [3], 1: [1], 2: [1, 2]}})
    state.topics["t"].adding[2] = [2]
    results = queued(classify({("t", 0): [3], ("t", 1): [3], ("t", 2): [2]}, state))
    assert [r.status for r in results] == [Status.COMPLETE, Status.QUEUED, Status.IN_PROGRESS]
    assert results[1].reason is None
    assert overall_exit(results[:2]) == ExitCode.BUSY
    assert report_json(results[:2])["status"] == "in_progress"
    assert (
        kafka_line(results[1])
        == "Reassignment of partition t-1 is still in progress (queued: not started yet)."
    )
    # nothing not as planned: unchanged
    assert queued(results[:1]) == results[:1]


@pytest.mark.parametrize(
    ("target", "current", "expected"),
    [
        ([3, 2], [3, 2, 1], True),  # mid-move: the target, then the replica being removed
        ([4, 5], [4, 5, 1, 2], True),
        ([3, 2], [3, 2], False),  # at its target
        ([3, 2], [1, 2], False),  # at its origin: never started, or cancelled
        ([3, 2], [2, 3, 1], False),  # not the order Kafka writes a move's set in
        ([3], [1, 3], False),
    ],
)
def test_passing_through(target: list[int], current: list[int], expected: bool) -> None:
    assert passing_through(target, current) is expected


def test_metrics_count_queued_apart_from_not_as_planned() -> None:
    def p(n: int, status: Status) -> PartitionProgress:
        return PartitionProgress("t", n, [3], [1], status, None, [], [], None)

    results = [p(0, Status.COMPLETE), p(1, Status.IN_PROGRESS), p(2, Status.QUEUED), p(3, Status.QUEUED)]
    fams = {f.name: f for f in registry(VerifyMetrics({"plan": "plan.json"}, 4, 1.0, results)).collect()}
    counts = {s.labels["status"]: s.value for s in fams["kafka_reassign_verify_partitions"].samples}
    assert counts == {"complete": 1, "in_progress": 1, "not_as_planned": 0, "queued": 2}


class InterruptedWait(FakeBackend):
    """Ctrl-C during the first poll of the first batch's wait."""

    def read_state(self, topics: Any = None, *, partition_state: bool = False) -> Any:
        if partition_state:
            raise KeyboardInterrupt
        return super().read_state(topics, partition_state=partition_state)


def test_ctrl_c_between_batches_names_what_was_never_started_and_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "THROTTLE_SETTLE_SECONDS", 0.0)
    c = FakeCluster(make_state({"t": {0: [1], 1: [1], 2: [1]}}))
    plan = (
        b'{"version":1,"partitions":['
        + b",".join(b'{"topic":"t","partition":%d,"replicas":[3]}' % p for p in range(3))
        + b"]}"
    )
    req = ExecuteRequest(
        "my plan.json", plan, rollback_file=str(tmp_path / "rb.json"), batch_size=1, throttle=5000,
        connection=(("--zookeeper", "zk:2181/kafka"),),
    )  # fmt: skip
    with pytest.raises(Interrupted) as e:
        execute(InterruptedWait(c), req, ExecuteReport(Output(color=False)))
    assert str(e.value) == (
        "Interrupted while waiting for batch 1/3; it keeps running in the cluster, batches 2-3 "
        "(2 partitions) not started"
    )
    assert e.value.hint == (
        "Continue with: kafka-reassign execute --resume --reassignment-json-file 'my plan.json' "
        "--batch-size 1 --throttle 5000 --zookeeper zk:2181/kafka (or check with: kafka-reassign verify "
        "--reassignment-json-file 'my plan.json' --zookeeper zk:2181/kafka)"
    )


def test_a_batch_size_run_is_kept_before_its_first_batch_and_forgotten_by_the_cli_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reassign_cli.core.pacing import Pace, load_pace
    from reassign_cli.ops.pace_file import PaceFile
    from reassign_cli.ops.pacing import BatchKeeper

    monkeypatch.setattr(executor, "THROTTLE_SETTLE_SECONDS", 0.0)
    plan = (
        b'{"version":1,"partitions":['
        + b",".join(b'{"topic":"t","partition":%d,"replicas":[3]}' % p for p in range(3))
        + b"]}"
    )
    keep = PaceFile.beside(str(tmp_path / "plan.json"), plan)
    seen: list[Any] = []

    class Watching(FakeBackend):
        def create_reassignment(self, entries: Any) -> bool:
            seen.append(load_pace(keep.path.read_bytes(), plan))
            return super().create_reassignment(entries)

    c = FakeCluster(make_state({"t": {0: [1], 1: [1], 2: [1]}}))
    req = ExecuteRequest(
        "plan.json", plan, rollback_file=str(tmp_path / "rb.json"), batch_size=2, throttle=5000
    )
    assert execute(Watching(c), req, ExecuteReport(Output(color=False)), pacer=BatchKeeper(keep)) == 0
    assert seen == [Pace(None, None, 5000, batch_size=2)] * 2


def test_the_window_interrupted_counts_its_moves_in_words() -> None:
    from reassign_cli.ops.window_watch import moves_phrase

    assert moves_phrase(1, "started keep", "started keeps") == "1 move started keeps"
    assert moves_phrase(2, "are", "is") == "2 moves are"
