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
from reassign_cli.ops import stored_rates as sr
from reassign_cli.ops import throttle_writes as ex
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


class Creating(FakeStore):
    """A store where the foreground's plan is created (the same bytes stored already: kept, a resume)."""

    def __init__(self) -> None:
        self.plan = None  # type: ignore[assignment]
        self.version = 0
        self.lose_next = False

    def create(self, plan: sp.StoredPlan, connection: Any = ()) -> tuple[Any, bool]:
        if self.plan is None:
            self.plan, self.version = plan, 1
            return self.read(), True
        return self.read(), False


def test_a_foreground_paced_run_keeps_its_loop_where_a_stored_plan_does_and_a_resume_takes_it_back() -> None:
    """Item 3: the foreground's loop state (rates, why, open judgements) goes with its stored plan, written
    after each change; a cron step taking over reads the same loop back; a foreground --resume adopts it."""
    from datetime import UTC, datetime

    from reassign_cli.core.model import Broker, ClusterState, Topic
    from reassign_cli.ops.rate_loop import Runner
    from reassign_cli.ops.request import ExecuteRequest
    from reassign_cli.ops.stored import keep_paced
    from tests.fakes import FakeBackend
    from tests.fakes import FakeCluster as Fakes

    data = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3]}]}'
    store = Creating()

    def runner() -> Runner:
        wall = datetime(2026, 1, 1, 12, tzinfo=UTC)
        return Runner(RateLoop(settings=SETTINGS), None, None, clock=lambda: 0.0, wall=lambda: wall)

    def req(r: Runner, resume: bool) -> ExecuteRequest:
        return ExecuteRequest("p.json", data, throttle=2 * MB, max_moves=1, rate_loop=r, resume=resume)

    def watch(s: Creating, run: Any) -> tuple[bool, Any]:  # the lease taken (ops/step.take_watching)
        seen = s.read()
        return True, s.replace(seen, dataclasses.replace(seen.plan, lease=run))

    first = runner()
    first.report = type("R", (), {"info": lambda self, line: None})()
    keeper = keep_paced(store, req(first, False), None, watch)
    kept = sr.stored_loop(store.plan)  # type: ignore[arg-type]
    assert kept is not None and kept[0].settings == SETTINGS and kept[0].auto == at.State()
    # a tick of the foreground's loop: t-0 into 3 from 1, both start at R1, written, then kept
    t = Topic("t", {0: [3, 1]}, adding={0: [3]}, removing={0: [1]}, isr={0: [1]}, leader={0: 1})
    state = ClusterState([Broker(1), Broker(3)], {"t": t})
    obs = at.Observation(5.0, (at.Receiver(3, 0, 1, (1,)),))
    first._apply(FakeBackend(Fakes(state)), state, datetime(2026, 1, 1, 12, tzinfo=UTC), first.loop.tick, obs)
    kept = sr.stored_loop(store.plan)  # type: ignore[arg-type]
    assert kept is not None
    assert kept[0].auto.rates == {(3, "follower"): 2 * MB, (1, "leader"): 2 * MB}
    assert kept[0].auto.why == {(3, "follower"): at.START, (1, "leader"): at.START}
    assert kept[1].at_time is None  # a step taking over measures from its own first reading
    assert store.plan is not None and store.plan.lease is not None  # the keeper's own write
    del keeper
    # a foreground --resume of the same bytes: the kept state, reasons included (not read back from brokers)
    again = runner()
    keep_paced(store, req(again, True), None, watch)
    assert again.loop.auto.why == {(3, "follower"): at.START, (1, "leader"): at.START}


def test_the_rates_the_loop_holds_are_a_per_broker_gauge_of_the_stored_plan() -> None:
    """Item 2: verify --metrics-file's stored-plan gauges (a detached plan's steps, a foreground paced run's
    stored plan) carry the loop's rate per broker and role, read back by prometheus_client's own parser."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from reassign_cli.render.metrics import VerifyMetrics, registry

    rates = {(3, "follower"): 2_500_000, (1, "leader"): 2_500_000, (1, "log-dir"): 375_000}
    plan = stored(RateLoop(settings=SETTINGS, auto=at.State(rates, dict.fromkeys(rates, at.BOUND))))
    labels = {"plan": "/p.json", "plan_sha256": plan.plan_sha256[:12]}
    m = VerifyMetrics(labels, exit_code=4, timestamp=1_796_086_800.0, stored_plan=plan)
    text = generate_latest(registry(m)).decode()
    got = {
        (s.labels["broker"], s.labels["role"]): s.value
        for f in text_string_to_metric_families(text)
        if f.name == "kafka_reassign_plan_throttle_rate_bytes"
        for s in f.samples
    }
    assert got == {("3", "follower"): 2_500_000, ("1", "leader"): 2_500_000, ("1", "log_dir"): 375_000}
    # a plan without a loop (a fixed rate) writes no such series
    fixed = dataclasses.replace(plan, schedule={"hours": None})
    m = VerifyMetrics(labels, exit_code=4, timestamp=1_796_086_800.0, stored_plan=fixed)
    assert "kafka_reassign_plan_throttle_rate_bytes" not in generate_latest(registry(m)).decode()
