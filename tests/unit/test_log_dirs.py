"""admin/log_dirs.LogDirMover's DescribeLogDirs readings over a fake admin client that answers in
kafka-python's shape (the real shape is checked on the cluster: tests/integration/test_sizes.py)."""

from __future__ import annotations

from typing import Any

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
    assert mover.describe([("t", 0, 1), ("t", 1, 2), ("t", 1, 3)]) == {
        ("t", 0, 1): ("/d0", "/d1"),
        ("t", 1, 2): ("/d0", None),
    }
