"""core/pacing.py: which moves fit the window, their order, and the progress arithmetic (pure)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core import pacing as pc
from reassign_cli.core.model import PlanEntry
from reassign_cli.core.names import count
from tests.fakes import make_state

MB = 1_000_000


def _two_way() -> list[pc.Move]:
    """The issue's measured case: topic a moves 1 -> 3, topic b 2 -> 1; sizes alternate 12 MB and 1 MB
    out of phase, 52 MB each way."""
    moves = []
    for p in range(8):
        moves.append(pc.Move(("a", p), p, (3,), 1, (12 if p % 2 == 0 else 1) * MB))
    for p in range(8):
        moves.append(pc.Move(("b", p), 8 + p, (1,), 2, (1 if p % 2 == 0 else 12) * MB))
    return moves


def test_move_counts_receivers_and_leader() -> None:
    state = make_state({"t": {0: [1, 2], 1: [2, 3]}}, brokers=(1, 2, 3, 4))
    entries = [PlanEntry("t", 0, [3, 2]), PlanEntry("t", 1, [2, 3])]
    a, b = pc.make_moves(entries, state, {("t", 0): 10})
    assert (a.receivers, a.source, a.brokers, a.size, a.total_bytes) == ((3,), 1, (1, 3), 10, 10)
    assert (b.receivers, b.source, b.brokers, b.size) == ((), 2, (2,), None)


def test_both_directions_share_the_source_broker() -> None:
    """Broker 1 sends a's data and receives b's: with a cap of 2, one move each way runs, never two a's
    (which would leave broker 1's incoming side idle), largest first."""
    q = pc.Queue(_two_way(), "largest-first")
    first = q.take((), 2)
    assert [m.tp for m in first] == [("a", 0), ("b", 1)]
    # a-0 ends: the next a (largest left) comes in beside b-1
    nxt = q.take([first[1]], 2)
    assert [m.tp for m in nxt] == [("a", 2)]


def test_fewest_incoming_receiver_first() -> None:
    # two receivers; the one with nothing coming in is served before a larger move to the busy one
    moves = [
        pc.Move(("t", 0), 0, (2,), 1, 100),
        pc.Move(("t", 1), 1, (2,), 5, 90),
        pc.Move(("t", 2), 2, (3,), 6, 10),
    ]
    q = pc.Queue(moves, "largest-first")
    assert [m.tp for m in q.take((), 2)] == [("t", 0), ("t", 2), ("t", 1)]


def test_orders() -> None:
    moves = [pc.Move(("t", p), p, (9,), p, s) for p, s in enumerate([5, 50, 1, 20])]
    assert [m.tp[1] for m in pc.batches(moves, 1, "largest-first")[0]] == [1]
    assert [[m.tp[1] for m in b] for b in pc.batches(moves, 1, "largest-first")] == [[1], [3], [0], [2]]
    assert [[m.tp[1] for m in b] for b in pc.batches(moves, 1, "smallest-first")] == [[2], [0], [3], [1]]
    assert [[m.tp[1] for m in b] for b in pc.batches(moves, 1, "as-planned")] == [[0], [1], [2], [3]]
    assert pc.default_order(moves) == "largest-first"
    assert pc.default_order([*moves, pc.Move(("u", 0), 4, (1,), 2)]) == "as-planned"


moves_st = st.lists(
    st.tuples(
        st.sets(st.integers(1, 6), max_size=3),  # receivers
        st.integers(1, 6),  # source
        st.one_of(st.none(), st.integers(0, 10**9)),
    ),
    max_size=40,
).map(
    lambda rows: [
        pc.Move(("t", i), i, tuple(sorted(r - {s})), s, size) for i, (r, s, size) in enumerate(rows)
    ]
)


@settings(max_examples=200, deadline=None)
@given(moves=moves_st, cap=st.integers(1, 4), order=st.sampled_from(pc.ORDERS), data=st.data())
def test_window_never_exceeds_the_cap_and_runs_everything(
    moves: list[pc.Move], cap: int, order: pc.Order, data: st.DataObject
) -> None:
    """Whatever ends when, no broker ever has more than `cap` moves, every move starts exactly once, and
    the window is never left empty while moves are queued."""
    q = pc.Queue(moves, order)
    running: list[pc.Move] = []
    started: list[pc.Move] = []
    while len(q) or running:
        new = q.take(running, cap)
        running += new
        started += new
        assert max(pc.in_flight(running).values(), default=0) <= cap
        assert running or not len(q)
        # the window is full: nothing queued would still fit
        load = Counter(b for m in running for b in m.brokers)
        assert all(any(load[b] >= cap for b in m.brokers) for m in q.moves())
        if running:
            ends = data.draw(st.sets(st.sampled_from(running), min_size=1))
            running = [m for m in running if m not in ends]
    assert sorted(m.tp for m in started) == sorted(m.tp for m in moves)


@settings(max_examples=100, deadline=None)
@given(moves=moves_st, cap=st.integers(1, 3))
def test_batches_partition_the_plan_under_the_cap(moves: list[pc.Move], cap: int) -> None:
    out = pc.batches(moves, cap, "as-planned")
    assert sorted(m.tp for b in out for m in b) == sorted(m.tp for m in moves)
    assert all(b and max(pc.in_flight(b).values()) <= cap for b in out)


def test_moves_put_back_are_taken_again_first() -> None:
    moves = [pc.Move(("t", p), p, (2,), 1, 10 - p) for p in range(3)]
    q = pc.Queue(moves, "largest-first")
    taken = q.take((), 1)
    q.put_back(taken)
    assert len(q) == 3 and [m.tp for m in q.take((), 1)] == [("t", 0)]


def test_discarded_moves_are_not_taken() -> None:
    moves = [pc.Move(("t", p), p, (2,), 1, 1) for p in range(3)]
    q = pc.Queue(moves, "as-planned")
    q.discard(("t", 0))
    assert len(q) == 2 and ("t", 0) not in q
    assert [m.tp for m in q.take((), 1)] == [("t", 1)]


def test_move_copied_counts_each_receiver_up_to_the_leader() -> None:
    m = pc.Move(("t", 0), 0, (2, 3), 1, 100)
    assert pc.move_copied(m, 120, {2: 50, 3: 500}) == (170, 240)
    assert pc.move_copied(m, None, {}) == (0, 200)


def test_meter_rate_is_a_moving_average() -> None:
    meter = pc.Meter(span=10)
    assert meter.add(0, 0) is None
    assert meter.add(5, 50) == 10
    assert meter.add(10, 100) == 10
    assert meter.add(20, 400) == 30  # the first sample has left the span: (400 - 100) / 10
    assert pc.eta(100, 400, 30) == 10
    assert pc.eta(100, 400, None) is None and pc.eta(1, 2, 0) is None
    assert pc.eta(100, 400, 30, moves_left=6, overhead=2.0, parallel=2) == 16


def test_overhead_is_the_lag_after_the_bytes_plus_the_start() -> None:
    o = pc.Overhead()
    o.started([("t", 0), ("t", 1)], 0.5)
    o.copied(("t", 0), 5, 10, 1.0)
    o.copied(("t", 0), 10, 10, 2.0)
    o.copied(("t", 0), 10, 10, 3.0)  # the first poll that saw it full counts
    o.ended(("t", 0), 4.0)
    o.ended(("t", 1), 4.0)  # never seen full (sizes unknown): no sample
    assert o.samples == [2.5] and o.mean == 2.5


def test_progress_line() -> None:
    s = pc.Snapshot(int(1.2 * 2**30), int(4.7 * 2**30), 48.1 * 2**20, 74, running=2, queued=9, done=1)
    assert pc.progress_line(s) == (
        "copied 1.2 GiB of 4.7 GiB (26%), 48.1 MiB/s, ETA 0:01:14; 2 moving, 9 queued, 1 done"
    )
    s0 = pc.Snapshot(0, 0, None, None, 0, 1, 0)
    assert pc.progress_line(s0) == (
        "copied 0 B of 0 B (0%), rate not measured yet, ETA unknown; 0 moving, 1 queued, 0 done"
    )


def test_the_last_frame_says_it_is_over() -> None:
    """Issue 30 item 14: every move ended: no "1 moving", no ETA; and the closing line, by hand."""
    end = pc.Snapshot(int(6.5 * 2**20), int(6.5 * 2**20), 175_000.0, None, running=0, queued=0, done=8)
    assert pc.progress_line(end) == "copied 6.5 MiB of 6.5 MiB (100%), 170.9 KiB/s; 8 done"
    assert pc.closing_line(8, 38.4, int(6.5 * 2**20)) == "8 partitions, 6.5 MiB in 0:00:38"
    assert pc.closing_line(1, 3661.0) == "1 partition in 1:01:01"


def test_counts_agree_with_their_nouns() -> None:
    assert [count(n, "move") for n in (0, 1, 2)] == ["0 moves", "1 move", "2 moves"]


def test_stalls_report_once_per_stall() -> None:
    s = pc.Stalls(10)
    tp = ("t", 0)
    assert s.update({tp: 0}, 0) == []
    assert s.update({tp: 0}, 9) == []
    assert s.update({tp: 0}, 10) == [(tp, 10)]
    assert s.update({tp: 0}, 30) == []  # told already
    assert s.update({tp: 5}, 31) == []  # grew
    assert s.update({tp: 5}, 41) == [(tp, 10)]


def test_diagnosis() -> None:
    step = pc.FETCH_STEP
    # 18 MB in 10 s into a broker at a 2 MB/s throttle, known to within 2 fetches (0.21 MB/s)
    assert pc.at_throttle([pc.Span(18e6, 10)], 2_000_000)
    # 8.6 MB in 10 s at 1 MB/s: below 85%, but within one fetch of it (the copy goes in steps)
    assert pc.at_throttle([pc.Span(8.6e6, 10)], 1_000_000)
    assert not pc.at_throttle([pc.Span(10e6, 10)], 2_000_000)  # half the throttle: something else holds it
    assert not pc.at_throttle([pc.Span(50e6, 10)], None) and not pc.at_throttle([], 1_000_000)
    assert not pc.at_throttle([pc.Span(7.5e6, 10)], 10_000)  # the first fetches, before the quota bites
    # at 100 kB/s, 10 s of samples cannot tell (one fetch is 1 MiB): a stalled move is not "at the throttle"
    assert not pc.at_throttle([pc.Span(0, 10)], 100_000)
    assert not pc.at_throttle([pc.Span(1e6, 10)], 100_000)
    assert pc.at_throttle([pc.Span(6e6, 60)], 100_000)  # 60 s: known to within 35 kB/s
    # two moves into one broker add up
    assert pc.at_throttle([pc.Span(9e6, 10), pc.Span(9e6, 10)], 2_000_000)
    assert pc.Span(0, 10).low == 0 and pc.Span(0, 10).high == step / 10
    assert pc.span(None) is None
    meter = pc.Meter()
    meter.add(0.0, 0)
    meter.add(4.0, 400)
    assert pc.span(meter, 2) == pc.Span(400, 4.0, 2)

    # the copy can go at most the measured rate plus a fetch, and at most its share of the throttle
    assert pc.copy_limit(pc.Span(0, 10), 100_000) == 100_000
    assert pc.copy_limit(pc.Span(0, 10), 400_000, sharing=2) == step / 10
    assert pc.copy_limit(pc.Span(0, 10), None) == step / 10
    assert pc.catch_up_throttle(0, 10, 100) is None
    assert pc.catch_up_throttle(100, 200, 200) is None
    assert pc.catch_up_throttle(300, 200, 200) == 601
    assert pc.catch_up_throttle(300, 200, 400, sharing=2) == 1201
    assert pc.catch_up_throttle(300, 200, None) == 0  # no throttle: the brokers are the limit


def test_heads_are_the_next_moves_of_each_lane() -> None:
    moves = [pc.Move(("t", p), p, (2 if p < 3 else 3,), 1, 10 * p) for p in range(5)]
    q = pc.Queue(moves, "largest-first")
    assert sorted(m.tp[1] for m in q.heads(2)) == [1, 2, 3, 4]
    q.discard(("t", 2))
    assert sorted(m.tp[1] for m in q.heads(1)) == [1, 4]


def test_plain_progress_lines_on_change_and_every_30_s(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from reassign_cli.render import Output
    from reassign_cli.render import progress as rp

    now = [100.0]
    monkeypatch.setattr(rp.time, "monotonic", lambda: now[0])
    view = rp.PaceView(Output(color=False), 3)
    snap = pc.Snapshot(26 * MB, 100 * MB, 2 * 2**20, 37, running=2, queued=1, done=0)
    view.update(snap, 5)
    view.update(snap, 6)  # nothing changed: no line
    now[0] += 30
    view.update(snap, 36)  # 30 s later: the same line again
    view.update(pc.Snapshot(27 * MB, 100 * MB, 2 * 2**20, 36, 2, 1, 0), 37)  # 27%: a line
    view.update(pc.Snapshot(0, 0, None, None, 1, 0, 2), 38)  # no sizes: the moves only
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "[0:00:05] copied 24.8 MiB of 95.4 MiB (26%), 2.0 MiB/s, ETA 0:00:37; 2 moving, 1 queued, 0 done",
        "[0:00:36] copied 24.8 MiB of 95.4 MiB (26%), 2.0 MiB/s, ETA 0:00:37; 2 moving, 1 queued, 0 done",
        "[0:00:37] copied 25.7 MiB of 95.4 MiB (27%), 2.0 MiB/s, ETA 0:00:36; 2 moving, 1 queued, 0 done",
        "[0:00:38] 1 moving, 0 queued, 2 done",
    ]


def test_catch_up_advises_a_throttle_only_when_the_throttle_is_the_limit() -> None:
    """Issue 30 item 23, worked by hand. --throttle 100 MB/s, one move, a copy measured at 5 MB/s over
    60 s (300 MB gained), the leader's log growing at 6 MB/s. The copy can go at most
    (300e6 + 1 MiB) / 60 = 5,017,476 B/s: below 6 MB/s, so it cannot catch up; but the throttle's share
    (100e6) is far above what the copy does: the brokers are the limit, not the throttle. Before the fix
    this advised --throttle 12000001 (2 x 6e6 + 1)."""
    from reassign_cli.ops.window_watch import grows_line

    copy = pc.Span(300e6, 60.0)
    assert int(copy.high) == 5_017_476
    limit = pc.copy_limit(copy, 100_000_000)
    assert int(limit) == 5_017_476
    assert pc.catch_up_throttle(6e6, limit, 100_000_000) == 0
    line = grows_line("t-0", 6e6, limit, 0, 100_000_000)
    assert "--throttle 1" not in line and "not the throttle, are the limit" in line
    assert "a higher --throttle will not help" in line
    # The same copy at --throttle 4 MB/s, shared by two moves: each move's share is 2e6 B/s, at most what
    # the copy could go (5.0e6): the throttle is the limit; 2 x 6e6 x 2 + 1 = 24,000,001.
    limit = pc.copy_limit(copy, 4_000_000, sharing=2)
    assert limit == 2_000_000
    assert pc.catch_up_throttle(6e6, limit, 4_000_000, sharing=2) == 24_000_001
    assert "--throttle 24000001 would let it finish" in grows_line("t-0", 6e6, limit, 24_000_001, 4_000_000)
    # Kafka's quota holds a throttled copy a little under the rate: at --throttle 1 MB/s a copy measured at
    # 0.97 MB/s over 120 s (116.4 MB) could go (116.4e6 + 1 MiB) / 120 = 978,738 B/s, at least 85% of the
    # throttle: the throttle is the limit. A log growing at 1.2 MB/s needs 2 x 1.2e6 + 1 = 2,400,001.
    limit = pc.copy_limit(pc.Span(116.4e6, 120.0), 1_000_000)
    assert int(limit) == 978_738
    assert pc.catch_up_throttle(1.2e6, limit, 1_000_000) == 2_400_001
