"""Bytes copied by moves in progress (core/copied.py), with sums worked out by hand, and how verify shows
them (render/copied.py)."""

from __future__ import annotations

from reassign_cli.core.copied import copied_bytes, moving_bytes
from reassign_cli.core.pacing import Move, move_copied
from reassign_cli.core.progress import PartitionProgress, Status
from reassign_cli.render.copied import add_copied_json, copied_lines
from reassign_cli.render.metrics import bytes_remaining

IN, DONE = Status.IN_PROGRESS, Status.COMPLETE


def _p(
    partition: int, target: list[int], current: list[int], adding: list[int], status: Status = IN
) -> PartitionProgress:
    removing = [b for b in current if b not in target]
    return PartitionProgress("t", partition, target, current, status, None, adding, removing, None)


# t-0: [1,2] -> [2,3]; the lagging follower 2 (4,800) is not the size, the largest origin (1: 5,000) is.
# t-1: [1] -> [2]; broker 2 has no replica yet: 0 of 3,000.
# t-2: [1] -> [3]; no origin replica has a size: left out.
# t-3: complete: left out whatever the sizes say.
# t-4: [1] -> [3,4]; 3 has 1,500 of 1,000 (the leader's log grew since): counts 1,000; 4 has 250.
RESULTS = [
    _p(0, [2, 3], [2, 3, 1], [3]),
    _p(1, [2], [2, 1], [2]),
    _p(2, [3], [3, 1], [3]),
    _p(3, [2], [2], [], DONE),
    _p(4, [3, 4], [3, 4, 1], [3, 4]),
]
SIZES = {
    ("t", 0, 1): 5000, ("t", 0, 2): 4800, ("t", 0, 3): 1200,
    ("t", 1, 1): 3000,
    ("t", 2, 3): 700,
    ("t", 3, 2): 9999,
    ("t", 4, 1): 1000, ("t", 4, 3): 1500, ("t", 4, 4): 250,
}  # fmt: skip


def test_copied_bytes_by_hand() -> None:
    assert copied_bytes(100, [30]) == (30, 100)
    assert copied_bytes(100, [0, 30, 150]) == (130, 300)  # none yet, partly, past the leader (caught up)
    assert copied_bytes(100, []) == (0, 0)
    assert copied_bytes(0, [0]) == (0, 0)


def test_moving_bytes_by_hand() -> None:
    assert moving_bytes(RESULTS, SIZES) == {
        ("t", 0): (1200, 5000),
        ("t", 1): (0, 3000),
        ("t", 4): (1000 + 250, 2000),
    }
    assert moving_bytes(RESULTS, {}) == {}


def test_metrics_remaining_is_the_same_arithmetic() -> None:
    assert bytes_remaining(RESULTS, SIZES) is None  # t-2's size is unknown
    known = [r for r in RESULTS if r.partition != 2]
    assert bytes_remaining(known, SIZES) == (5000 - 1200) + (3000 - 0) + (2000 - 1250)  # 7,550
    assert bytes_remaining(known, None) is None
    assert bytes_remaining([RESULTS[3]], None) == 0


def test_pacing_progress_is_the_same_arithmetic() -> None:
    m = Move(("t", 4), 0, (3, 4), 1, size=900)
    assert move_copied(m, 1000, {3: 1500, 4: 250}) == (1250, 2000)
    assert move_copied(m, None, {3: 100}) == (100, 1800)  # the planned size when the leader's is unknown


def test_lines_and_json() -> None:
    found = moving_bytes(RESULTS, SIZES)
    # 2,450 of 10,000 is 24.5%, and the float 0.245 lies just below it: 24%
    assert copied_lines(found) == [
        "t-0: copied 1.2 KiB of 4.9 KiB (24%)",
        "t-1: copied 0 B of 2.9 KiB (0%)",
        "t-4: copied 1.2 KiB of 2.0 KiB (62%)",
        "Copied 2.4 KiB of 9.8 KiB (24%) in 3 partitions in progress.",
    ]
    assert copied_lines(found, limit=1)[1:] == [
        "... and 2 more (all with -v or --format json)",
        "Copied 2.4 KiB of 9.8 KiB (24%) in 3 partitions in progress.",
    ]
    assert copied_lines({}) == []
    doc = {"partitions": [{"topic": "t", "partition": p} for p in range(5)]}
    add_copied_json(doc, found)
    assert doc["partitions"][0] == {"topic": "t", "partition": 0, "bytes_copied": 1200, "bytes_to_copy": 5000}
    assert doc["partitions"][3] == {"topic": "t", "partition": 3}
    assert (doc["bytes_copied"], doc["bytes_to_copy"]) == (2450, 10000)


def test_unreachable_admin_api_leaves_verify_going() -> None:
    from reassign_cli.cli.verify import _moving_sizes
    from reassign_cli.errors import OperationalError

    class Out:
        def __init__(self) -> None:
            self.said: list[str] = []

        def info(self, line: str) -> None:
            self.said.append(line)

    class Down:
        def replica_sizes(self, replicas: object) -> object:
            raise OperationalError("cannot connect to Kafka at nowhere:9092: NoBrokersAvailable")

    out = Out()
    assert _moving_sizes(out, RESULTS, Down()) is None
    assert out.said == ["Bytes copied not shown: cannot connect to Kafka at nowhere:9092: NoBrokersAvailable"]
    assert _moving_sizes(out, RESULTS, None) is None  # no admin API: nothing asked, nothing said
    assert _moving_sizes(out, [RESULTS[3]], Down()) == {}  # nothing in progress: nothing asked
    assert len(out.said) == 1


def test_an_empty_move_in_progress_says_nothing_to_copy() -> None:
    """Issue 30 item 14: a partition in progress whose log is empty is not "copied 0 B of 0 B (100%)"."""
    assert copied_lines({("e", 0): (0, 0)}) == [
        "e-0: nothing to copy",
        "Nothing to copy in 1 partition in progress.",
    ]
    assert copied_lines({("e", 0): (0, 0), ("t", 1): (512, 1024)}) == [
        "e-0: nothing to copy",
        "t-1: copied 512 B of 1.0 KiB (50%)",
        "Copied 512 B of 1.0 KiB (50%) in 2 partitions in progress.",
    ]
