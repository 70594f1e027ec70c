"""admin/log_dirs.LogDirMover's DescribeLogDirs readings over a fake admin client that answers in
kafka-python's shape (the real shape is checked on the cluster: tests/integration/test_sizes.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.errors import KafkaTimeoutError

from reassign_cli.backends.admin.log_dirs import LogDirMover


def _part(p: int, size: int, future: bool = False) -> dict[str, Any]:
    return {"partition_index": p, "partition_size": size, "offset_lag": 0, "is_future_key": future}


class FakeAdmin:
    """Broker 1: t-0 (100 bytes) in /d0 and a future copy of it (40) in /d1; broker 2: t-0 (90) and t-1
    (7) in /d0, t-2 (5) in an offline /d1; broker 3 does not answer."""

    def __init__(self) -> None:
        self.asked: list[tuple[dict[str, list[int]], list[int]]] = []

    def describe_log_dirs(self, tps: dict[str, list[int]], brokers: list[int]) -> list[dict[str, Any]]:
        self.asked.append((tps, brokers))
        (b,) = brokers
        if b == 3:
            raise KafkaTimeoutError("no answer")
        dirs = {
            1: [
                {"error_code": 0, "log_dir": "/d0", "topics": [{"name": "t", "partitions": [_part(0, 100)]}]},
                {
                    "error_code": 0,
                    "log_dir": "/d1",
                    "topics": [{"name": "t", "partitions": [_part(0, 40, True)]}],
                },
            ],
            2: [
                {
                    "error_code": 0,
                    "log_dir": "/d0",
                    "topics": [{"name": "t", "partitions": [_part(0, 90), _part(1, 7)]}],
                },
                {"error_code": 57, "log_dir": "/d1", "topics": [{"name": "t", "partitions": [_part(2, 5)]}]},
            ],
        }[b]
        return [{"broker": b, "log_dirs": dirs}]


def test_replica_sizes_current_logs_of_live_dirs_and_silent_brokers() -> None:
    admin = FakeAdmin()
    mover = LogDirMover("unused:9092", admin)
    keys = [("t", 0, 1), ("t", 0, 2), ("t", 1, 2), ("t", 2, 2), ("t", 1, 3)]
    sizes, silent = mover.replica_sizes(keys)
    # t-0 on broker 1: its current log (100), not the future one (40); t-2 on broker 2: offline dir.
    assert sizes == {("t", 0, 1): 100, ("t", 0, 2): 90, ("t", 1, 2): 7}
    assert silent == [3]
    # one request per broker, for the partitions it holds
    assert admin.asked == [({"t": [0]}, [1]), ({"t": [0, 1, 2]}, [2]), ({"t": [1]}, [3])]


def test_describe_still_reports_current_and_future_dirs() -> None:
    mover = LogDirMover("unused:9092", FakeAdmin())
    assert mover.describe({("t", 0, 1): "/d1", ("t", 1, 2): "/d1", ("t", 1, 3): "/d0"}) == {
        ("t", 0, 1): ("/d0", "/d1"),
        ("t", 1, 2): ("/d0", None),
    }


class SwappingAdmin:
    """Broker 1 in the middle of finishing a move of t-0: the copy in /d0 already renamed to the current
    name, both still registered, so it names t-0 as current in /d0 and in /d1, in its log dirs' order (an
    answer caught on the test cluster, Kafka 3.9.2, 8 times in 40 moves polled back to back)."""

    def describe_log_dirs(self, tps: dict[str, list[int]], brokers: list[int]) -> list[dict[str, Any]]:
        dirs = [
            {"error_code": 0, "log_dir": d, "topics": [{"name": "t", "partitions": [_part(0, 100)]}]}
            for d in ("/d0", "/d1")
        ]
        return [{"broker": 1, "log_dirs": dirs}]


@pytest.mark.parametrize(("target", "expected"), [("/d0", ("/d1", "/d0")), ("/d1", ("/d0", "/d1"))])
def test_a_replica_named_current_in_two_dirs_is_a_move_still_in_progress(
    target: str, expected: tuple[str, str]
) -> None:
    from reassign_cli.core.progress import MoveStatus, classify_moves

    key = ("t", 0, 1)
    dirs = LogDirMover("unused:9092", SwappingAdmin()).describe({key: target})
    # Not "not being moved from /d1 to /d0" (the answer's last dir read as the current one), nor
    # complete while the old copy still waits to be renamed for deletion: still in progress.
    assert dirs == {key: expected}
    (move,) = classify_moves({key: target}, dirs)
    assert move.status is MoveStatus.IN_PROGRESS


class SurveyedAdmin(FakeAdmin):
    """FakeAdmin's log dirs (error 57: LOG_DIR_NOT_FOUND) with volumes, and DescribeConfigs: broker 1 a Kafka
    4.3 one cordoning /d1, broker 2 an older one without the config."""

    def describe_log_dirs(self, tps: Any, brokers: list[int]) -> list[dict[str, Any]]:
        answers = super().describe_log_dirs(tps, brokers)
        for d in answers[0]["log_dirs"]:
            d["total_bytes"], d["usable_bytes"] = (1000, 600) if d["log_dir"] == "/d0" else (-1, -1)
        return answers

    def describe_configs(self, resources: list[Any], config_filter: str) -> dict[str, Any]:
        (r,) = resources
        assert r.configs == {"cordoned.log.dirs": None} and config_filter == "all"
        value = {"1": {"cordoned.log.dirs": {"value": "/d1"}}, "2": {}}[r.name]
        return {"broker": {r.name: value}}


def test_survey_reads_every_partition_and_the_cordoned_config() -> None:
    from reassign_cli.core.model import Capacity, LogDir

    admin = SurveyedAdmin()
    survey = LogDirMover("unused:9092", admin).survey([3, 2, 1])
    assert admin.asked == [(None, [1]), (None, [2]), (None, [3])]  # all partitions, broker by broker
    assert survey.silent == [3]
    assert survey.dirs == {
        1: (
            LogDir("/d0", False, None, 100, 0, 1000, 600, False),
            LogDir("/d1", False, None, 0, 40, cordoned=True),
        ),
        2: (LogDir("/d0", False, None, 97, 0, 1000, 600, None), LogDir("/d1", True, "LOG_DIR_NOT_FOUND")),
    }
    assert survey.capacities == {1: Capacity(1000, 600, False), 2: Capacity(1000, 600, False)}
    keys = [("t", 0, 1), ("t", 0, 2), ("t", 1, 2), ("t", 2, 2), ("t", 1, 3)]
    assert survey.replica_sizes(keys) == LogDirMover("unused:9092", FakeAdmin()).replica_sizes(keys)


class TwinAdmin:
    """Broker 1: two dirs reporting byte-identical total and usable bytes (one filesystem, or twin disks
    equally full); broker 2: two of one total whose usable bytes differ by 40% of it."""

    def describe_log_dirs(self, tps: Any, brokers: list[int]) -> list[dict[str, Any]]:
        (b,) = brokers
        usable = {1: (600, 600), 2: (600, 200)}[b]
        dirs = [
            {"error_code": 0, "log_dir": f"/d{i}", "topics": [], "total_bytes": 1000, "usable_bytes": u}
            for i, u in enumerate(usable)
        ]
        return [{"broker": b, "log_dirs": dirs}]

    def describe_configs(self, resources: list[Any], config_filter: str) -> dict[str, Any]:
        return {"broker": {resources[0].name: {}}}


@pytest.mark.parametrize("shared", [False, True])
def test_survey_flags_log_dirs_that_look_like_one_filesystem(shared: bool) -> None:
    """Item 2's warning (cli/snapshot.py, ops/generate.py: shared_note) names the brokers survey lists."""
    from reassign_cli.backends.admin.log_dirs import shared_note
    from reassign_cli.core.model import Capacity

    mover = LogDirMover("unused:9092", TwinAdmin())
    survey = mover.survey([1, 2], shared)
    assert mover.looks_shared == ([] if shared else [1])
    assert survey.capacities[1] == (Capacity(1000, 600) if shared else Capacity(2000, 1200))
    note = shared_note([1])
    assert "\n" not in note and note.endswith("give --shared-log-dirs") and "one filesystem" in note
