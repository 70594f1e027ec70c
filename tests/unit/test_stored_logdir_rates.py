"""ops/stored_logdir_rates.py: the adaptive log-dir throttle kept with a stored plan and ticked by its steps'
log-dir phase (issue 28 item 4 in issue 25's steps). Expected rates and lines worked out by hand from
docs/execute-verify.md ("Adaptive throttle"), as in tests/unit/test_logdir_rates.py: the first measure is a
baseline, the next sets R1, the next raises a throttle-bound broker by 25%; nothing before the interval."""

from __future__ import annotations

import dataclasses

import pytest

from reassign_cli.core import autothrottle as at
from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import PlanEntry
from reassign_cli.core.throttle import LOG_DIR_RATE
from reassign_cli.ops import stored_log_dirs as sld
from reassign_cli.ops import stored_logdir_rates as lr
from reassign_cli.ops.rate_loop import RateLoop

KB = 1000
SETTINGS = at.Settings(None, at.Bounds(300 * KB, 1000 * KB, 300 * KB), 20.0)
KEY = ("t", 0, 1)


def stored(meter: lr.DirMeter | None = None, auto: at.State | None = None) -> sp.StoredPlan:
    entries = [PlanEntry("t", 0, [1], ["/a1"])]
    plan = sp.new_plan(b"{}", entries, pc.Pace(1, "as-planned", None, 300 * KB), sp.Origin("h", "u", 1.0))
    schedule = sld.with_dirs({"hours": None}, 1, False)
    loop = RateLoop(settings=SETTINGS, auto=auto or at.State())
    return dataclasses.replace(plan, schedule=lr.with_loop(schedule, loop, meter))


def through_head(plan: sp.StoredPlan) -> sp.StoredPlan:
    content = sp.encode_content(plan)
    return sp.decode(sp.encode_head(plan, content), content)


def test_the_loop_and_its_meter_round_trip_beside_the_other_keys() -> None:
    auto = at.State({(1, "log-dir"): 375 * KB}, {(1, "log-dir"): at.BOUND})
    plan = through_head(stored(lr.DirMeter(206.5, {KEY: (12_000_000, 50_000_000)}), auto))
    kept = lr.stored_loop(plan)
    assert kept is not None
    loop, meter = kept
    assert loop.settings == SETTINGS and loop.auto == auto
    assert (meter.at_time, dict(meter.sizes)) == (206.5, {KEY: (12_000_000, 50_000_000)})
    assert lr.overrides(plan) == {1: {LOG_DIR_RATE: "375000"}}
    # the other keys stay as they were; a plan without the key has no loop
    assert plan.schedule["hours"] is None and sld.stored(plan) == sld.DirPace(1, False)
    assert lr.stored_loop(dataclasses.replace(plan, schedule={})) is None
    with pytest.raises(sp.StoredPlanError, match="log-dir throttle loop does not parse"):
        lr.stored_loop(dataclasses.replace(plan, schedule={lr.KEY: {"loop": {}}}))


def test_steps_measure_on_wall_time_and_raise_a_throttle_bound_broker() -> None:
    """Each tick's plan goes through the stored head before the next (steps are separate processes)."""
    plan = stored()
    t = lr.tick(plan, {KEY: (0, 50_000_000)}, 100.0)  # the baseline
    assert t.changes == []
    plan = through_head(t.plan)
    t = lr.tick(plan, {KEY: (1, 50_000_000)}, 110.0)  # within the 20 s interval: nothing, nothing kept
    assert t.changes == [] and t.plan == plan
    t = lr.tick(plan, {KEY: (6_000_000, 50_000_000)}, 120.0)  # the first rate: set, not judged
    assert [c.line() for c in t.changes] == ["throttle on broker 1 (log-dir): none -> 300 kB/s (start)"]
    plan = through_head(t.plan)
    # 20 s at 300 kB/s allowed 6 MB; 1 MiB of slack <= 0.4 x 6 MB: judged; 5.9 MB + 1 MiB >= 0.85 x 6 MB
    t = lr.tick(plan, {KEY: (11_900_000, 50_000_000)}, 140.0)
    assert [c.line() for c in t.changes] == [
        "throttle on broker 1 (log-dir): 300 -> 375 kB/s (throttle-bound, guards green)"
    ]
    plan = through_head(t.plan)
    assert lr.overrides(plan) == {1: {LOG_DIR_RATE: "375000"}}
    # a write that did not land: the loop back as it was before the tick, the meter too
    back = lr.unwritten(plan, stored())
    assert lr.overrides(back) == {} and back.schedule[sld.KEY] == plan.schedule[sld.KEY]


def test_a_steps_log_dir_phase_ticks_the_loop_and_writes_through_the_fence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """t-0 stays on [1, 2], broker 1's replica from /a0 into /a1 (fakes for the sequencing only): the step
    that starts the move sets the baseline; 20 s later the rate is set at R1; 20 s later, 5.9 MB copied where
    300 kB/s allowed 6 MB, raised to 375 kB/s, written through the fenced commit and kept with the plan."""
    from reassign_cli.ops import throttle_writes as ex
    from tests.unit.test_step import FakeStore, one
    from tests.unit.test_stored_log_dirs import FakeMover
    from tests.unit.test_stored_rates import Cluster, _env

    class SizedMover(FakeMover):
        sizes: tuple[int, int] = (0, 50_000_000)  # (future, current) bytes

        def copies(self, replicas: object) -> dict[object, list[tuple[str, bool, int]]]:
            cur, fut = self.where[KEY]
            fb, cb = self.sizes
            return {KEY: [(cur, False, cb), *([(fut, True, fb)] if fut else [])]}

    throttled: list[tuple[int | None, object]] = []
    monkeypatch.setattr(
        ex,
        "apply_throttles",
        lambda b, s, e, rate, ld, overrides=None: (
            throttled.append((ld, overrides)) or ex.ThrottleWrites([], {}, [], [])
        ),
    )
    plan = dataclasses.replace(stored(), entries=[PlanEntry("t", 0, [1, 2], ["/a1", "any"])])
    store = FakeStore(plan)
    cluster, clock = Cluster(store), [100.0]
    mover = SizedMover(store, {KEY: ("/a0", None)})
    env = _env(cluster, store, clock)
    env.sizer = mover
    r = one(env)
    assert r.dirs_started == [KEY] and r.rate_lines == [] and throttled == [(300 * KB, {})]
    mover.sizes, clock[0] = (1, 50_000_000), 110.0
    assert one(env).rate_lines == []  # within the interval
    mover.sizes, clock[0] = (6_000_000, 50_000_000), 120.0
    assert one(env).rate_lines == ["throttle on broker 1 (log-dir): none -> 300 kB/s (start)"]
    mover.sizes, clock[0] = (11_900_000, 50_000_000), 140.0
    r = one(env)
    assert r.rate_lines == ["throttle on broker 1 (log-dir): 300 -> 375 kB/s (throttle-bound, guards green)"]
    assert (r.rate_changes[0]["from"], r.rate_changes[0]["to"]) == (300 * KB, 375 * KB)
    assert cluster.configs[("brokers", "1")] == {LOG_DIR_RATE: "375000"}
    assert store.plan is not None and lr.overrides(store.plan) == {1: {LOG_DIR_RATE: "375000"}}
    # a health hold (broker 2 not registered) is the loop's tripped guard: halved, never below R1
    from reassign_cli.core import health as hc

    env.health = lambda: hc.Signals(
        registered=frozenset({1}), fenced=None, partitions={}, min_isr={}, controller_epoch=None
    )
    mover.sizes, clock[0] = (17_800_000, 50_000_000), 160.0
    r = one(env)
    assert r.held_line is not None and "broker 2 is not registered" in r.held_line
    assert [(c["from"], c["to"]) for c in r.rate_changes] == [(375 * KB, 300 * KB)], r.rate_lines
    assert "health: broker-missing" in r.rate_lines[0]
    assert cluster.configs[("brokers", "1")] == {LOG_DIR_RATE: "300000"}
