"""core/logdir_pacing.py (pure rules of `execute --max-moves-per-disk N` / `--one-broker-at-a-time`) and the
pure parts of ops/log_dirs.py (which moves are intra-broker, the entries without them). Expected values are
worked out by hand; the properties run the queue the way ops.log_dirs does (take, some end, take ...)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core import logdir_pacing as lp
from reassign_cli.core.model import Broker, ClusterState, PlanEntry, Topic
from reassign_cli.ops.log_dirs import intra_moves, without


def mv(t: str, p: int, b: int, src: str, dst: str) -> lp.DirMove:
    return lp.DirMove((t, p, b), src, dst)


def test_one_per_disk_moves_one_at_a_time_within_a_broker() -> None:
    # broker 1: three moves /a -> /b; each counts against /a and /b, so one at a time
    q = lp.DiskQueue([mv("t", 2, 1, "/a", "/b"), mv("t", 0, 1, "/a", "/b"), mv("t", 1, 1, "/a", "/b")])
    first = q.take((), 1)
    assert [m.key for m in first] == [("t", 0, 1)]  # plan order: (topic, partition, broker)
    assert q.take(first, 1) == []  # the disks are full
    second = q.take((), 1)  # t-0 ended
    assert [m.key for m in second] == [("t", 1, 1)]
    assert len(q) == 1


def test_disks_of_different_brokers_are_apart() -> None:
    # worked by hand: broker 1 /a->/b, broker 2 /a->/b (other disks), broker 1 /c->/d: all three at once
    # at cap 1; a fourth, broker 1 /b->/c, waits (/b and /c are taken)
    moves = [mv("t", 0, 1, "/a", "/b"), mv("t", 0, 2, "/a", "/b"), mv("t", 1, 1, "/c", "/d"),
             mv("t", 2, 1, "/b", "/c")]  # fmt: skip
    q = lp.DiskQueue(moves)
    got = q.take((), 1)
    assert [m.key for m in got] == [("t", 0, 1), ("t", 0, 2), ("t", 1, 1)]
    assert lp.per_disk(got) == {
        (1, "/a"): 1,
        (1, "/b"): 1,
        (1, "/c"): 1,
        (1, "/d"): 1,
        (2, "/a"): 1,
        (2, "/b"): 1,
    }
    assert [m.key for m in q.take([got[1]], 1)] == [("t", 2, 1)]  # t-0 and t-1 on broker 1 ended


def test_cap_two_lets_two_share_a_disk() -> None:
    q = lp.DiskQueue([mv("t", p, 1, "/a", "/b") for p in range(3)])
    assert [m.key[1] for m in q.take((), 2)] == [0, 1]


def test_one_broker_at_a_time_finishes_a_broker_first() -> None:
    # broker 2's moves are first in plan order on t-0, but the lowest broker id goes first; broker 2 waits
    # until broker 1 has nothing running or queued
    moves = [mv("t", 0, 2, "/a", "/b"), mv("t", 1, 1, "/a", "/b"), mv("t", 2, 1, "/c", "/d"),
             mv("t", 3, 1, "/a", "/b")]  # fmt: skip
    q = lp.DiskQueue(moves)
    first = q.take((), 1, one_broker=True)
    assert [m.key for m in first] == [("t", 1, 1), ("t", 2, 1)]  # t-3 waits: /a and /b are t-1's
    assert q.take(first, 1, one_broker=True) == []
    # t-1 ended, t-2 runs: t-3 starts (/a, /b free); broker 2 still waits (broker 1 has a move running)
    assert [m.key for m in q.take([first[1]], 1, one_broker=True)] == [("t", 3, 1)]
    assert q.take([first[1]], 1, one_broker=True) == []
    # broker 1's moves all ended: broker 2
    assert [m.key for m in q.take([], 1, one_broker=True)] == [("t", 0, 2)]


def test_same_dir_counts_once() -> None:
    assert mv("t", 0, 1, "/a", "/a").disks == ((1, "/a"),)


def test_dir_state_reads_a_swap_as_the_future_copy() -> None:
    # a finished copy being renamed: current in two dirs; the one in the target is the future one
    assert lp.dir_state([("/a", False, 10), ("/b", False, 10)], "/b") == lp.DirState("/a", "/b", 10, 10)
    assert lp.dir_state([("/a", False, 10), ("/b", True, 4)], "/b") == lp.DirState("/a", "/b", 10, 4)
    assert lp.dir_state([("/b", False, 10)], "/b") == lp.DirState("/b", None, 10, None)
    assert lp.copied(lp.DirState("/a", "/b", 10, 4)) == (4, 10)
    assert lp.copied(lp.DirState("/a", "/b", 10, 12)) == (10, 10)  # the log grew: caught up
    assert lp.copied(lp.DirState("/a", None, 10, None)) == (0, 10)


def test_progress_line() -> None:
    line = lp.progress_line(lp.DirProgress(1_048_576, 4_194_304, 1, 2, 1))
    assert line == "log-dir moves: copied 1.0 MiB of 4.0 MiB (25%); 1 moving, 2 queued, 1 done"
    assert lp.progress_line(lp.DirProgress(0, 0, 0, 0, 3)) == "log-dir moves: copied 0 B of 0 B; 3 done"


def test_stalls_once_per_stall() -> None:
    s = lp.FutureStalls(10)
    k = ("t", 0, 1)
    assert s.update({k: 5}, 0) == []
    assert s.update({k: 5}, 9) == []
    assert s.update({k: 5}, 10) == [(k, 10)]
    assert s.update({k: 5}, 30) == []  # told once
    assert s.update({k: 6}, 31) == []  # it grew
    assert s.update({k: 6}, 41) == [(k, 10)]  # stalled again


def test_stalled_line() -> None:
    line = lp.stalled_line(mv("t", 0, 1, "/a", "/b"), 1024, 2048, 300.4, "kafka-reassign cancel X")
    assert line == (
        "t-0 on broker 1 is stuck: its future replica in /b has not grown for 300 s (1.0 KiB of 2.0 KiB "
        "copied); check broker 1 (its log, disk /b and replica.alter.log.dirs.io.max.bytes.per.second), or "
        "cancel the move: kafka-reassign cancel X"
    )


def test_intra_moves_are_the_replicas_already_on_their_broker() -> None:
    state = ClusterState([Broker(1), Broker(2), Broker(3)], {"t": Topic("t", {0: [1, 2], 1: [1]})})
    entries = [
        PlanEntry("t", 0, [1, 3], ["/d1", "/x"]),  # 1 stays (intra); 3 arrives: placed on arrival
        PlanEntry("t", 1, [1], ["any"]),
    ]
    assert intra_moves(entries, state) == {("t", 0, 1): "/d1"}
    assert without(entries, {("t", 0, 1): "/d1"}) == [
        PlanEntry("t", 0, [1, 3], ["any", "/x"]),
        PlanEntry("t", 1, [1], ["any"]),
    ]


# ---------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------

DIRS = ["/a", "/b", "/c"]


@st.composite
def dir_moves(draw: st.DrawFn) -> list[lp.DirMove]:
    n = draw(st.integers(1, 12))
    out = {}
    for _ in range(n):
        b = draw(st.integers(1, 3))
        p = draw(st.integers(0, 5))
        src, dst = draw(st.sampled_from([(s, d) for s in DIRS for d in DIRS if s != d]))
        out[("t", p, b)] = lp.DirMove(("t", p, b), src, dst)
    return list(out.values())


def run_queue(
    moves: list[lp.DirMove], cap: int, one_broker: bool, ends: st.DataObject
) -> list[list[lp.DirMove]]:
    """Run the queue as ops.log_dirs does: take what fits; then some running moves end (chosen by
    hypothesis, at least one); until nothing is queued or running. Returns what ran at each step."""
    q = lp.DiskQueue(moves)
    running: list[lp.DirMove] = []
    seen = []
    for _ in range(10 * len(moves) + 5):
        running += q.take(running, cap, one_broker)
        seen.append(list(running))
        if not running and not len(q):
            return seen
        k = ends.draw(st.integers(1, len(running)))
        gone = ends.draw(st.permutations(running))[:k]
        running = [m for m in running if m not in gone]
    raise AssertionError("the queue did not drain")


@settings(max_examples=200, deadline=None)
@given(dir_moves(), st.integers(1, 3), st.booleans(), st.data())
def test_cap_never_exceeded_every_move_started(
    moves: list[lp.DirMove], cap: int, one_broker: bool, ends: st.DataObject
) -> None:
    seen = run_queue(moves, cap, one_broker, ends)
    started = set()
    for running in seen:
        assert all(n <= cap for n in lp.per_disk(running).values())
        if one_broker:
            assert len({m.broker for m in running}) <= 1
        started |= {m.key for m in running}
    assert started == {m.key for m in moves}


@settings(max_examples=100, deadline=None)
@given(dir_moves(), st.integers(1, 3), st.booleans())
def test_order_is_deterministic(moves: list[lp.DirMove], cap: int, one_broker: bool) -> None:
    # the same moves in any order give the same first take, in plan order
    a = lp.DiskQueue(moves).take((), cap, one_broker)
    b = lp.DiskQueue(list(reversed(moves))).take((), cap, one_broker)
    assert a == b and [m.key for m in a] == sorted(m.key for m in a)
    assert a  # nothing running: at least one starts
