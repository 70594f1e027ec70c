"""The adaptive throttle's decision (issue 28 items 2 to 4): every rule with values worked out by hand, then
properties over random sequences of intervals. FETCH_STEP is 1 MiB (1,048,576 B), PRECISION 0.4 and
AT_THROTTLE[0] 0.85 (core.pacing): with one move, a receiver at rate r over T seconds is judged once
2 * 1,048,576 <= 0.4 * r * T, and bound once copied + 1,048,576 >= 0.85 * r * T."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.core.autothrottle import (
    Bounds,
    Decision,
    Feed,
    Key,
    Observation,
    Pending,
    Receiver,
    Settings,
    State,
    bounds_from_options,
    decide,
    floors,
    min_interval,
    rate_change,
)
from reassign_cli.errors import UsageError

MB = 1_000_000
R = Settings(Bounds(2 * MB, 16 * MB, 2 * MB))  # --throttle auto --min-throttle 2MB --max-throttle 16MB
F3: Key = (3, "follower")
L1: Key = (1, "leader")


def at(rates: dict[Key, int]) -> State:
    return State(rates, {k: "start" for k in rates})


def one(copied: int, seconds: float = 30, moves: int = 1, **kw: object) -> Observation:
    """Receiver 3 fed by source 1."""
    return Observation(seconds, (Receiver(3, copied, moves, (1,)),), **kw)  # type: ignore[arg-type]


def test_start_at_the_minimum_on_receivers_and_sources() -> None:
    d = decide(State(), one(0), R)
    assert d.lines() == [
        "throttle on broker 3 (follower): none -> 2.0 MB/s (start)",
        "throttle on broker 1 (leader): none -> 2.0 MB/s (start)",
    ]
    assert d.writes == {F3: 2 * MB, L1: 2 * MB}
    assert d.state.pending == {}  # a first rate is not judged


def test_start_at_r_with_a_throttle_and_a_maximum() -> None:
    s = Settings(bounds_from_options(3 * MB, None, 16 * MB))
    assert s.replication == Bounds(3 * MB, 16 * MB, 3 * MB)
    assert decide(State(), one(0), s).writes == {F3: 3 * MB, L1: 3 * MB}


def test_raise_by_a_quarter_a_bound_receiver_and_its_source() -> None:
    # 2 MB/s over 30 s allows 60,000,000 B; copied all of it
    d = decide(at({F3: 2 * MB, L1: 2 * MB}), one(60 * MB), R)
    assert d.lines() == [
        "throttle on broker 1 (leader): 2.0 -> 2.5 MB/s (feeds broker 3, throttle-bound, guards green)",
        "throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)",
    ]
    assert d.state.why[F3] == "throttle-bound, guards green"
    assert [c.to_dict() for c in d.changes][1] == {
        "broker": 3,
        "role": "follower",
        "from": 2 * MB,
        "to": 2_500_000,
        "reason": "throttle-bound, guards green",
    }


def test_bound_threshold_with_one_fetch_of_slack() -> None:
    # bound iff copied + 1,048,576 >= 0.85 * 60,000,000 = 51,000,000, i.e. copied >= 49,951,424
    state = at({F3: 2 * MB, L1: 2 * MB})
    assert decide(state, one(49_951_424), R).writes == {F3: 2_500_000, L1: 2_500_000}
    assert decide(state, one(49_951_423), R).changes == ()
    assert decide(state, one(49_951_423), R).state.pending == {}  # judged: not bound


def test_a_source_shared_by_two_bound_receivers_is_raised_once() -> None:
    state = at({F3: 2 * MB, (4, "follower"): 2 * MB, L1: 4 * MB})
    obs = Observation(30, (Receiver(3, 60 * MB, 1, (1,)), Receiver(4, 60 * MB, 1, (1,))))
    d = decide(state, obs, R)
    assert d.writes == {F3: 2_500_000, (4, "follower"): 2_500_000, L1: 5 * MB}
    assert d.changes[0].reason == "feeds brokers 3, 4, throttle-bound, guards green"


def test_the_sources_leader_rate_is_what_the_receiver_was_allowed_when_lower() -> None:
    # follower 8 MB/s, but its one source lets out 2 MB/s: allowed 60,000,000 B over 30 s; all copied
    d = decide(at({F3: 8 * MB, L1: 2 * MB}), one(60 * MB), R)
    assert d.writes == {F3: 10 * MB, L1: 2_500_000}
    # two sources at 2 MB/s each: allowed min(8, 2 + 2) MB/s = 120,000,000 B; 60,000,000 is not bound
    two = Observation(30, (Receiver(3, 60 * MB, 1, (1, 2)),))
    assert decide(at({F3: 8 * MB, L1: 2 * MB, (2, "leader"): 2 * MB}), two, R).changes == ()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (11 * MB, 13_750_000),  # 25% up; 16 - 13.75 = 2.25 MB/s is more than 10% of 13.75
        (12 * MB, 16 * MB),  # 15 MB/s would end 1 MB/s (6.7%) below 16: to 16 at once
        (14 * MB, 16 * MB),  # 17.5 capped at 16
        (16 * MB, None),  # at the maximum: nothing to write
        (15 * MB, None),  # 16 is 6.7% above 15: not written
    ],
)
def test_raise_never_above_the_maximum(old: int, new: int | None) -> None:
    copied = old * 30  # all its rate allowed
    d = decide(at({F3: old, L1: 16 * MB}), one(copied), R)
    assert d.writes.get(F3) == new


@pytest.mark.parametrize(
    ("old", "floor", "new"),
    [
        (8 * MB, 0, 4 * MB),
        (3 * MB, 0, 2 * MB),  # half is 1.5, below the minimum 2: to 2 (33%)
        (2_200_000, 0, None),  # to 2 would be 9%: not written
        (8 * MB, 5 * MB, 5 * MB),  # not below the floor
        (4 * MB, 6 * MB, None),  # the floor rose above the rate: no raise while a guard is tripped
    ],
)
def test_halve_when_a_guard_trips(old: int, floor: int, new: int | None) -> None:
    obs = one(old * 30, tripped="broker 2 has under-replicated partitions", floors={F3: floor})
    d = decide(at({F3: old, L1: old}), obs, R)
    assert d.writes.get(F3) == new
    if new is not None:
        assert d.lines()[-1] == (
            f"throttle on broker 3 (follower): {rate_change(old, new)} "
            "(guard tripped: broker 2 has under-replicated partitions)"
        )


def test_halve_when_a_non_moving_follower_leaves_the_isr_every_rate_the_loop_holds() -> None:
    why = "broker 4 left the ISR of orders-3 (led by broker 3)"
    state = at({F3: 8 * MB, L1: 8 * MB, (7, "follower"): 6 * MB})  # broker 7: no move this interval
    d = decide(state, one(0, isr_left=why), R)
    assert d.writes == {F3: 4 * MB, L1: 4 * MB, (7, "follower"): 3 * MB}
    assert d.lines()[0] == f"throttle on broker 1 (leader): 8.0 -> 4.0 MB/s (a follower left the ISR: {why})"


def test_floor_raises_a_rate_more_than_ten_percent_below_it() -> None:
    floor = "floor: twice the leader's ingest per sharing move"
    d = decide(at({F3: 2 * MB, L1: 2 * MB}), one(0, floors={F3: 5 * MB}), R)
    assert d.lines() == [f"throttle on broker 3 (follower): 2.0 -> 5.0 MB/s ({floor})"]
    # 2.2 MB/s is exactly 10% above 2: left as it is
    assert decide(at({F3: 2 * MB, L1: 2 * MB}), one(0, floors={F3: 2_200_000}), R).changes == ()
    # the first rate starts at the floor
    d = decide(State(), one(0, floors={F3: 3 * MB}), R)
    assert d.lines()[0] == "throttle on broker 3 (follower): none -> 3.0 MB/s (start, at the floor)"


def test_a_floor_above_the_maximum_is_capped_and_warned_about_once() -> None:
    d = decide(at({F3: 2 * MB, L1: 2 * MB}), one(0, floors={F3: 20 * MB}), R)
    assert d.writes == {F3: 16 * MB}
    assert d.warnings == (
        "broker 3 (follower): its floor, 20 MB/s (twice its leaders' ingest per sharing move), is above the "
        "maximum, 16 MB/s: held at the maximum, its moves may not catch up with their leaders' logs",
    )
    again = decide(d.state, one(0, floors={F3: 25 * MB}), R)
    assert again.warnings == () and again.changes == ()


def test_no_raise_while_a_guard_is_tripped_even_when_bound() -> None:
    d = decide(at({F3: 2 * MB, L1: 2 * MB}), one(60 * MB, tripped="p99 produce latency"), R)
    assert d.changes == ()  # at the minimum already: halving writes nothing, and nothing is raised


def test_slack_too_large_is_judged_over_several_intervals_and_survives_a_restart() -> None:
    # 1 MB/s, 4 moves, 5 s intervals: the slack 4 * 1,048,576 = 4,194,304 B is within 0.4 of the allowed
    # bytes once 2 * 4,194,304 = 8,388,608 <= 0.4 * allowed, i.e. allowed >= 20,971,520: 5 intervals of
    # 5,000,000 B (min_interval(1 MB/s, 4) = 20.97 s)
    s = Settings(Bounds(MB, 16 * MB, MB))
    state = at({F3: MB, L1: 4 * MB})
    for i in range(1, 5):
        d = decide(state, one(5 * MB, seconds=5, moves=4), s)
        assert d.changes == ()
        assert d.state.pending == {F3: Pending(i * 5 * MB, i * 5 * MB, i * 5.0, 4)}
        state = State.from_dict(json.loads(json.dumps(d.state.to_dict())))  # a restart between intervals
    d = decide(state, one(5 * MB, seconds=5, moves=4), s)
    assert d.writes == {F3: 1_250_000, L1: 5 * MB}
    assert d.state.pending == {}


@pytest.mark.parametrize(
    ("capacity", "climb"),
    [
        # brokers that could copy 50 MB/s: 25% a step (integer quarters), then 11,920,926 -> 14,901,157
        # would end 1,098,843 B/s (7.4%) below 16 MB/s, so it goes to 16 MB/s at once, and stays
        (
            50 * MB,
            [
                2_500_000,
                3_125_000,
                3_906_250,
                4_882_812,
                6_103_515,
                7_629_393,
                9_536_741,
                11_920_926,
                16 * MB,
            ],
        ),
        # brokers that copy 5 MB/s: at 6,103,515 B/s, 25,000,000 + 1,048,576 >= 0.85 * 30,517,575 = 25,939,938
        # (bound); at 7,629,393, 26,048,576 < 0.85 * 38,146,965 = 32,424,920: the climb stops there
        (5 * MB, [2_500_000, 3_125_000, 3_906_250, 4_882_812, 6_103_515, 7_629_393]),
    ],
)
def test_one_move_climbs_to_the_maximum_or_to_what_the_brokers_copy(capacity: int, climb: list[int]) -> None:
    # the test: --throttle auto --min-throttle 2MB --max-throttle 16MB --throttle-interval 5, one move
    state, seen = decide(State(), one(0, seconds=5), R).state, []
    for _ in range(20):
        rate = min(state.rates[F3], state.rates[L1], capacity)
        state = decide(state, one(rate * 5, seconds=5), R).state
        if state.rates[F3] != (seen or [2 * MB])[-1]:
            seen.append(state.rates[F3])
        assert state.rates[L1] == state.rates[F3] <= 16 * MB
    assert seen == climb


def test_a_new_receiver_is_not_judged_in_its_first_interval() -> None:
    d = decide(at({L1: 2 * MB}), one(60 * MB), R)
    assert d.writes == {F3: 2 * MB}
    assert d.state.pending == {}


def test_a_new_source_of_a_bound_receiver_starts_and_is_not_raised_in_the_same_interval() -> None:
    # found by the invariants property: broker 1 was started and raised in one decision (two changes)
    d = decide(at({F3: 2 * MB}), one(60 * MB), R)
    assert d.lines() == [
        "throttle on broker 1 (leader): none -> 2.0 MB/s (start)",
        "throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)",
    ]


def test_log_dir_moves_have_their_own_bounds() -> None:
    s = Settings(None, Bounds(MB, 8 * MB, MB))
    disk = Observation(30, disks=(Receiver(2, 0, 1),))
    d = decide(State(), disk, s)
    assert d.lines() == ["throttle on broker 2 (log-dir): none -> 1.0 MB/s (start)"]
    d = decide(d.state, Observation(30, disks=(Receiver(2, 30 * MB, 1),)), s)
    assert d.lines() == ["throttle on broker 2 (log-dir): 1.0 -> 1.25 MB/s (throttle-bound, guards green)"]
    with pytest.raises(ValueError, match="no bounds"):
        decide(State(), one(0), s)


def test_floors_follow_the_catch_up_rule() -> None:
    # move a: leader 1 -> broker 3, log grows 1 MB/s; move b: leader 1 -> brokers 3 and 4, 0.5 MB/s
    got = floors([Feed(1, (3,), 1e6), Feed(1, (3, 4), 0.5e6)], [(2, 1e6), (2, 0.0)])
    assert got == {
        (3, "follower"): 4_000_001,  # 2 * 1 MB/s * 2 moves into broker 3, one byte over
        (4, "follower"): 1_000_001,  # 2 * 0.5 MB/s * 1 move
        (1, "leader"): 6_000_001,  # 2 * 1 MB/s * 3 copies out of broker 1
        (2, "log-dir"): 4_000_001,  # 2 * 1 MB/s * 2 log-dir moves on broker 2 (one not growing)
    }


@pytest.mark.parametrize(
    ("old", "new", "text"),
    [
        (2 * MB, 2_500_000, "2.0 -> 2.5 MB/s"),
        (None, 2 * MB, "none -> 2.0 MB/s"),
        (16 * MB, 8 * MB, "16.0 -> 8.0 MB/s"),
        (200 * MB, 250 * MB, "200 -> 250 MB/s"),
        (1_500_000, 750_000, "1.5 -> 0.75 MB/s"),
        (500, 625, "500 -> 625 B/s"),
        (2_000_000_000, 2_500_000_000, "2.0 -> 2.5 GB/s"),
    ],
)
def test_rate_change_text(old: int | None, new: int, text: str) -> None:
    assert rate_change(old, new) == text


def test_min_interval_table() -> None:
    # 2 * moves * 1,048,576 / (0.4 * rate)
    assert min_interval(MB, 1) == pytest.approx(5.24288)
    assert min_interval(10 * MB, 16) == pytest.approx(8.388608)
    assert min_interval(100 * MB, 4) == pytest.approx(0.2097152)
    with pytest.raises(ValueError):
        min_interval(0, 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("auto", 2 * MB, None), "--throttle auto needs both --min-throttle and --max-throttle"),
        ((None, None, 16 * MB), "--max-throttle needs --throttle auto or a --throttle rate"),
        ((-1, 2 * MB, None), "--min-throttle needs --throttle auto or a --throttle rate"),
        ((3 * MB, 2 * MB, None), "--min-throttle needs --max-throttle"),
        (("auto", 0, 16 * MB), "--min-throttle must be at least 1 B/s, got 0"),
        (("auto", 20 * MB, 16 * MB), "--min-throttle 20 MB/s is above --max-throttle 16 MB/s"),
        ((20 * MB, None, 16 * MB), "--throttle 20 MB/s is above --max-throttle 16 MB/s"),
        (
            (MB, 2 * MB, 16 * MB),
            "--throttle 1 MB/s is outside --min-throttle 2 MB/s to --max-throttle 16 MB/s",
        ),
    ],
)
def test_bounds_from_options_refuses_with_one_line(args: tuple, message: str) -> None:
    with pytest.raises(UsageError) as e:
        bounds_from_options(*args)
    assert str(e.value).startswith(message)


def test_bounds_from_options() -> None:
    assert bounds_from_options("auto", 2 * MB, 16 * MB) == Bounds(2 * MB, 16 * MB, 2 * MB)
    assert bounds_from_options(4 * MB, 2 * MB, 16 * MB) == Bounds(2 * MB, 16 * MB, 4 * MB)
    assert bounds_from_options(4 * MB, None, None) is None  # a fixed rate, as today
    assert bounds_from_options(None, None, None) is None
    names = ("--replica-alter-log-dirs-throttle", "--min-log-dirs-throttle", "--max-log-dirs-throttle")
    with pytest.raises(UsageError, match=r"^--replica-alter-log-dirs-throttle auto needs both"):
        bounds_from_options("auto", None, None, names)
    settings = Settings(Bounds(2, 16, 2), Bounds(1, 8, 4), 5.0)
    assert Settings.from_dict(json.loads(json.dumps(settings.to_dict()))) == settings


# --- properties ---------------------------------------------------------------------------------------

LOW, HIGH = 2 * MB, 16 * MB
P = Settings(Bounds(LOW, HIGH, LOW), Bounds(MB, 8 * MB, MB))


@st.composite
def observations(draw: st.DrawFn) -> Observation:
    seconds = draw(st.sampled_from([0.5, 5.0, 30.0, 61.0]))
    receivers = []
    for b in draw(st.sets(st.integers(1, 4), max_size=3)):
        sources = tuple(sorted(draw(st.sets(st.integers(1, 4).filter(lambda s, b=b: s != b), max_size=2))))
        moves = draw(st.integers(0, 6))
        receivers.append(Receiver(b, draw(st.integers(0, 40 * MB)) * int(seconds + 1) // 2, moves, sources))
    disks = [
        Receiver(b, draw(st.integers(0, 500 * MB)), draw(st.integers(0, 3)))
        for b in draw(st.sets(st.integers(1, 4), max_size=2))
    ]
    keys: list[Key] = [(b, r) for b in range(1, 5) for r in ("leader", "follower", "log-dir")]
    fl = {
        k: draw(st.sampled_from([0, MB, 3 * MB, 10 * MB, 20 * MB]))
        for k in draw(st.sets(st.sampled_from(keys)))
    }
    signal = st.one_of(st.none(), st.none(), st.just("a guard"))
    return Observation(seconds, tuple(receivers), tuple(disks), draw(signal), draw(signal), fl)


def lower(key: Key, obs: Observation) -> int:
    b = P.bounds(key[1])
    return max(b.low, min(obs.floors.get(key, 0), b.high))


def check(before: State, obs: Observation, d: Decision) -> None:
    halving = obs.tripped is not None or obs.isr_left is not None
    for key, rate in d.state.rates.items():
        b = P.bounds(key[1])
        assert b.low <= rate <= b.high
    active = {(r.broker, "follower") for r in obs.receivers} | {
        (s, "leader") for r in obs.receivers for s in r.sources
    }
    active |= {(r.broker, "log-dir") for r in obs.disks}
    for key in active:
        rate = d.state.rates[key]
        if not halving or key not in before.rates:
            assert rate * 1.1 >= lower(key, obs)  # at the floor, or less than 10% below it (documented)
    assert len(d.writes) == len(d.changes)  # one change per broker and role
    for c in d.changes:
        assert before.rates.get((c.broker, c.role)) == c.old
        if c.old is not None:
            assert abs(c.new - c.old) > 0.1 * c.old  # a change of 10% or less is never written
            if halving:
                assert c.new < c.old  # never a raise while a guard is tripped
    assert State.from_dict(json.loads(json.dumps(d.state.to_dict()))) == d.state


@given(st.lists(observations(), min_size=1, max_size=12))
def test_invariants_over_a_sequence_of_intervals(seq: list[Observation]) -> None:
    state = State()
    warned: list[str] = []
    for obs in seq:
        d = decide(state, obs, P)
        check(state, obs, d)
        warned += [w.split(":")[0] for w in d.warnings]
        state = d.state
    assert len(warned) == len(set(warned))  # a floor above the maximum: warned about once per broker and role


@given(
    st.lists(observations(), min_size=1, max_size=6),
    observations(),
    st.integers(0, 3),
    st.integers(1, 200 * MB),
)
def test_more_bytes_copied_never_lowers_a_rate(
    history: list[Observation], obs: Observation, which: int, more: int
) -> None:
    state = State()
    for h in history:
        state = decide(state, h, P).state
    if not obs.receivers:
        return
    r = obs.receivers[which % len(obs.receivers)]
    bigger = tuple(
        Receiver(x.broker, x.copied + more, x.moves, x.sources) if x == r else x for x in obs.receivers
    )
    a = decide(state, obs, P).state.rates
    b = decide(
        state, Observation(obs.seconds, bigger, obs.disks, obs.tripped, obs.isr_left, obs.floors), P
    ).state.rates
    assert a.keys() == b.keys()
    assert all(b[k] >= a[k] for k in a)


@given(
    st.integers(LOW, HIGH),
    st.integers(1, 16),
    st.sampled_from([0.5, 1.0, 5.0, 30.0]),
    st.booleans(),
)
def test_the_slack_accumulation_ends_within_a_bounded_number_of_intervals(
    rate: int, moves: int, seconds: float, full: bool
) -> None:
    limit = math.ceil(min_interval(rate, moves) / seconds) + 1  # +1: float rounding of the sums
    state = at({F3: rate, L1: HIGH})
    for _ in range(limit):
        d = decide(state, one(rate * int(seconds * 2) // 2 if full else 0, seconds, moves), P)
        state = d.state
        if F3 not in state.pending:
            break
    else:
        pytest.fail(f"not judged within {limit} intervals")
    # copying at its full rate, it is raised (unless at the maximum already); copying nothing, it is not
    assert (F3 in d.writes) == (full and HIGH - rate > 0.1 * rate)
