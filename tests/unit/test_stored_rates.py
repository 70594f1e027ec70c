"""ops/stored_rates.py: the rate loop kept with the stored plan (issue 28 in issue 25's steps). Every expected
rate and line is worked out by hand from docs/execute-verify.md ("Adaptive throttle"): the first reading is a
baseline, the next starts the rates at R1, the third raises a throttle-bound receiver and its source by 25%;
nothing is measured before the interval has passed."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from reassign_cli.core import autothrottle as at
from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import PlanEntry
from reassign_cli.core.throttle_schedule import parse_throttle_schedule
from reassign_cli.ops import execute as ex
from reassign_cli.ops import stored_rates as sr
from reassign_cli.ops.rate_loop import Meter, RateLoop
from tests.unit.test_step import FakeCluster, FakeStore, one

MB = 1_000_000
SETTINGS = at.Settings(at.Bounds(2 * MB, 16 * MB, 2 * MB), None, 5.0)


def stored(loop: RateLoop, meter: Meter | None = None) -> sp.StoredPlan:
    entries = [PlanEntry("t", 0, [3, 2], None)]
    plan = sp.new_plan(b"{}", entries, pc.Pace(1, "as-planned", 2 * MB), sp.Origin("h", "u", 100.0))
    return dataclasses.replace(plan, schedule=sr.with_loop({"hours": None}, loop, meter))


def test_the_loop_and_its_meter_round_trip_through_the_stored_head() -> None:
    auto = at.State(
        {(3, "follower"): 2_500_000, (2, "leader"): 2_500_000},
        {(3, "follower"): at.BOUND, (2, "leader"): "feeds broker 3, " + at.BOUND},
        {(3, "follower"): at.Pending(1_000_000, 2_000_000, 1.5, 1)},
        frozenset({(3, "follower")}),
    )
    meter = Meter(206.5, {("t.x-1", 0, 3): 12 * MB, ("t.x-1", 0, 2): 40 * MB}, {("u", 0, 1)})
    plan = stored(RateLoop(settings=SETTINGS, auto=auto), meter)
    content = sp.encode_content(plan)
    back = sp.decode(sp.encode_head(plan, content), content)
    kept = sr.stored_loop(back)
    assert kept is not None
    loop, m = kept
    assert loop.settings == SETTINGS and loop.schedule is None and loop.auto == auto
    assert (m.at_time, m.sizes, m.out) == (206.5, meter.sizes, meter.out)
    # the schedule's own keys are left as they were; a plan without the key runs at a fixed rate
    assert back.schedule["hours"] is None
    assert sr.stored_loop(dataclasses.replace(back, schedule={})) is None
    sched = RateLoop(schedule=parse_throttle_schedule("22:00-06:00=200MB,*=40MB"))
    kept = sr.stored_loop(stored(sched))
    assert kept is not None and str(kept[0].schedule) == str(sched.schedule)


class Cluster(FakeCluster):
    """The step's fake cluster with broker configs written through a fenced commit, and replica sizes."""

    offline_broker_configs = False

    def __init__(self, store: FakeStore) -> None:
        super().__init__(store, 1)
        self.configs: dict[tuple[str, str], dict[str, str]] = {}
        self.record: dict[str, Any] = {}
        self.sizes: dict[tuple[str, int, int], int] = {}

    def commit_throttles(self, plan: Any) -> None:
        updates, self.record = plan(self.record, lambda kind, name: dict(self.configs.get((kind, name), {})))
        for kind, name, fn in updates:
            self.configs[(kind, name)] = fn(dict(self.configs.get((kind, name), {})))

    def replica_sizes(self, keys: Any) -> tuple[dict[Any, int], list[int]]:
        return {k: v for k, v in self.sizes.items() if k in set(keys)}, []


def test_steps_tick_the_stored_loop_when_its_interval_has_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    throttled: list[tuple[int | None, Any]] = []
    monkeypatch.setattr(
        ex,
        "apply_throttles",
        lambda b, s, e, rate, ld, overrides=None: (
            throttled.append((rate, overrides)) or ex.ThrottleWrites([], {}, [], [])
        ),
    )
    store = FakeStore(stored(RateLoop(settings=SETTINGS)))
    cluster = Cluster(store)
    clock = [200.0]
    env = _env(cluster, store, clock)
    # step 1: t-0 starts (2 -> 3); nothing was running at the read: the meter's baseline only
    r = one(env)
    assert r.started == [("t", 0)] and r.rate_lines == [] and throttled == [(2 * MB, {})]
    assert _kept(store).auto.rates == {}
    # step 2, 6 s later: t-0 copies into 3 from its leader 2; first seen, so the rates start at R1
    cluster.sizes = {("t", 0, 3): 1 * MB, ("t", 0, 2): 100 * MB}
    clock[0] = 206.0
    r = one(env)
    assert r.rate_lines == [
        "throttle on broker 3 (follower): none -> 2.0 MB/s (start)",
        "throttle on broker 2 (leader): none -> 2.0 MB/s (start)",
    ]
    # step 3, 6 s later: 12 MB copied, what 2 MB/s allows in 6 s: throttle-bound, both raised by 25%
    cluster.sizes = {("t", 0, 3): 13 * MB, ("t", 0, 2): 100 * MB}
    clock[0] = 212.0
    r = one(env)
    assert r.rate_lines == [
        "throttle on broker 2 (leader): 2.0 -> 2.5 MB/s (feeds broker 3, throttle-bound, guards green)",
        "throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)",
    ]
    assert cluster.configs[("brokers", "3")] == {"follower.replication.throttled.rate": "2500000"}
    assert cluster.configs[("brokers", "2")] == {"leader.replication.throttled.rate": "2500000"}
    assert _kept(store).auto.rates == {(3, "follower"): 2_500_000, (2, "leader"): 2_500_000}
    assert r.rate_changes[1] == {
        "time": "1970-01-01T00:03:32+00:00",
        "broker": 3,
        "role": "follower",
        "from": 2_000_000,
        "to": 2_500_000,
        "reason": "throttle-bound, guards green",
    }
    # step 4, 2 s later: within the interval, nothing measured, the state as it was
    cluster.sizes = {("t", 0, 3): 30 * MB, ("t", 0, 2): 100 * MB}
    clock[0] = 214.0
    assert one(env).rate_lines == []
    assert _kept(store).auto.rates == {(3, "follower"): 2_500_000, (2, "leader"): 2_500_000}
    kept = store.plan.schedule[sr.KEY]["meter"]  # type: ignore[union-attr]
    assert kept["at"] == 212.0


def _env(cluster: Cluster, store: FakeStore, clock: list[float]) -> Any:
    from reassign_cli.ops import step as st

    return st.StepEnv(
        cluster,  # type: ignore[arg-type]
        store,  # type: ignore[arg-type]
        now=lambda: clock[0],
        clock=lambda: 0.0,
        throttle_settle=0,
        sizer=cluster,
    )


def _kept(store: FakeStore) -> RateLoop:
    assert store.plan is not None
    kept = sr.stored_loop(store.plan)
    assert kept is not None
    return kept[0]


def test_a_held_health_check_is_the_loops_tripped_guard_and_halves_its_rates() -> None:
    rates = {(3, "follower"): 8 * MB, (2, "leader"): 8 * MB}
    loop = RateLoop(settings=SETTINGS, auto=at.State(rates, dict.fromkeys(rates, at.BOUND)))
    plan = stored(loop, Meter(200.0, {("t", 0, 3): 10 * MB, ("t", 0, 2): 100 * MB}))
    store = FakeStore(plan)
    cluster = Cluster(store)
    cluster.create_reassignment([PlanEntry("t", 0, [3, 2], None)], additional=True)  # t-0 copies into 3
    cluster.sizes = {("t", 0, 3): 20 * MB, ("t", 0, 2): 100 * MB}
    ticked = sr.tick(plan, cluster.read_state(None, True), 210.0, cluster, "health: min-isr")
    assert [c.line() for c in ticked.changes] == [
        "throttle on broker 2 (leader): 8.0 -> 4.0 MB/s (guard tripped: health: min-isr)",
        "throttle on broker 3 (follower): 8.0 -> 4.0 MB/s (guard tripped: health: min-isr)",
    ]
    kept = sr.stored_loop(ticked.plan)
    assert kept is not None and kept[0].auto.rates == {(3, "follower"): 4 * MB, (2, "leader"): 4 * MB}
    assert kept[1].at_time == 210.0


class Failing(Cluster):
    """A cluster whose fenced throttle commit fails while `fail` is set (a broker gone, a lost session)."""

    fail = False

    def commit_throttles(self, plan: Any) -> None:
        if self.fail:
            from reassign_cli.errors import OperationalError

            raise OperationalError("the throttle commit failed")
        super().commit_throttles(plan)


def test_a_failed_rate_write_leaves_the_stored_rates_as_the_brokers_hold_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Item 4: the step's compare-and-set keeps the tick's rates, then the write fails: the loop is put back
    (the rates the brokers hold, 2 MB/s), so the next step decides from them, not from 2.5 MB/s never written."""
    monkeypatch.setattr(ex, "apply_throttles", lambda *a, **k: ex.ThrottleWrites([], {}, [], []))
    store = FakeStore(stored(RateLoop(settings=SETTINGS)))
    cluster = Failing(store)
    clock = [200.0]
    env = _env(cluster, store, clock)
    one(env)  # t-0 starts; the meter's baseline
    cluster.sizes = {("t", 0, 3): 1 * MB, ("t", 0, 2): 100 * MB}
    clock[0] = 206.0
    assert len(one(env).rate_lines) == 2  # both start at 2 MB/s, written
    before = store.plan.schedule[sr.KEY]  # type: ignore[union-attr]
    cluster.sizes = {("t", 0, 3): 13 * MB, ("t", 0, 2): 100 * MB}  # throttle-bound: 2.5 MB/s decided
    clock[0] = 212.0
    cluster.fail = True
    r = one(env)
    assert r.rate_lines == [
        "the throttle commit failed; the throttle rates were not written, the next step decides again"
    ]
    assert r.rate_changes == []
    assert cluster.configs[("brokers", "3")] == {"follower.replication.throttled.rate": "2000000"}
    assert _kept(store).auto.rates == {(3, "follower"): 2 * MB, (2, "leader"): 2 * MB}
    assert store.plan.schedule[sr.KEY] == before  # type: ignore[union-attr]
    # the next step (the write lands): the longer span since the kept baseline is judged, 2 -> 2.5 again
    cluster.fail = False
    cluster.sizes = {("t", 0, 3): 25 * MB, ("t", 0, 2): 100 * MB}
    clock[0] = 218.0
    assert (
        one(env).rate_lines[1]
        == "throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)"
    )
    assert _kept(store).auto.rates == {(3, "follower"): 2_500_000, (2, "leader"): 2_500_000}
