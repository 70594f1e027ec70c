"""ops/step.py's sequencing with fakes (a cluster whose moves end when the test says, an in-memory store
fenced by a version): the order of its writes, the cap, the fence, the lease. The real clusters'
tests are tests/integration/test_step_*.py."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from reassign_cli.backends.plan_store import Versioned
from reassign_cli.core import health as hc
from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import Broker, ClusterState, PlanEntry, Topic
from reassign_cli.core.record_log import LeaseWatch
from reassign_cli.ops import step as st


class FakeStore:
    def __init__(self, plan: sp.StoredPlan) -> None:
        self.plan: sp.StoredPlan | None = plan
        self.version = 0
        self.lose_next = False

    def read(self) -> Versioned | None:
        return None if self.plan is None else Versioned(self.plan, self.version)

    def create(self, plan: sp.StoredPlan, connection: Any = ()) -> tuple[Versioned, bool]:
        raise AssertionError

    def replace(self, seen: Versioned, new: sp.StoredPlan) -> Versioned | None:
        if self.lose_next:  # another writer won meanwhile
            self.lose_next = False
            assert self.plan is not None
            self.plan = dataclasses.replace(self.plan, updated=self.plan.updated + 1)
            self.version += 1
            return None
        if self.plan is None or seen.version != self.version:
            return None
        self.plan, self.version = new, self.version + 1
        return Versioned(new, self.version)

    def delete(self, seen: Versioned | None = None) -> bool:
        self.plan = None
        return True


class FakeCluster:
    """Topic t: partition p on [1, 2] moves to [p % 3 + 3, 2]; brokers 1-5."""

    def __init__(self, store: FakeStore, n: int) -> None:
        self.store = store
        self.replicas = {p: [1, 2] for p in range(n)}
        self.adding: dict[int, list[int]] = {}
        self.removing: dict[int, list[int]] = {}
        self.submits: list[list[tuple[str, int]]] = []
        self.marked_at_submit: list[bool] = []

    def read_state(self, topics: Any, partition_state: bool = False) -> ClusterState:
        t = Topic(
            "t",
            {p: list(r) for p, r in self.replicas.items()},
            adding=dict(self.adding),
            removing=dict(self.removing),
            leader={p: 2 for p in self.replicas},
        )
        return ClusterState([Broker(b, None) for b in range(1, 6)], {"t": t})

    def create_reassignment(self, entries: list[PlanEntry], *, additional: bool = False) -> bool:
        assert additional
        plan = self.store.plan
        assert plan is not None
        self.marked_at_submit.append(all((e.topic, e.partition) in plan.started for e in entries))
        self.submits.append([(e.topic, e.partition) for e in entries])
        for e in entries:
            old = [b for b in self.replicas[e.partition] if b not in self.adding.get(e.partition, [])]
            add = [b for b in e.replicas if b not in old]
            self.adding[e.partition] = add
            self.removing[e.partition] = [b for b in old if b not in e.replicas]
            self.replicas[e.partition] = list(e.replicas) + [b for b in old if b not in e.replicas]
        return True

    def end(self, p: int) -> None:
        gone = self.removing.pop(p, [])
        self.replicas[p] = [b for b in self.replicas[p] if b not in gone]
        self.adding.pop(p, None)

    def lose(self, p: int) -> None:
        """The move vanished (a controller failover lost it): back at its origin, not reassigning."""
        gone = self.adding.pop(p, [])
        self.replicas[p] = [b for b in self.replicas[p] if b not in gone]
        self.removing.pop(p, None)


def target(p: int) -> list[int]:
    return [p % 3 + 3, 2]


def make(n: int = 6, cap: int = 1, **kw: Any) -> tuple[FakeStore, FakeCluster, st.StepEnv]:
    entries = [PlanEntry("t", p, target(p), None) for p in range(n)]
    plan = sp.new_plan(b"{}", entries, pc.Pace(cap, "as-planned"), sp.Origin("h", "u", 100.0), **kw)
    store = FakeStore(plan)
    cluster = FakeCluster(store, n)
    env = st.StepEnv(cluster, store, now=lambda: 200.0, clock=lambda: 0.0, throttle_settle=0)  # type: ignore[arg-type]
    return store, cluster, env


ME = sp.Lease("run-a", "h", 1)


def one(env: st.StepEnv, me: sp.Lease = ME, **kw: Any) -> st.StepResult:
    return st.step(env, me, LeaseWatch(sp.STALE_SECONDS, mark="renewals"), **kw)


def in_flight(cluster: FakeCluster) -> dict[int, int]:
    """Moves per broker (source: the leader, and receivers) of the cluster's running moves."""
    out: dict[int, int] = {}
    for add in cluster.adding.values():
        for b in {*add, 2}:
            out[b] = out.get(b, 0) + 1
    return out


def test_first_step_marks_before_submit_and_keeps_the_cap() -> None:
    store, cluster, env = make()
    r = one(env)
    # cap 1: broker 2 (every move's source) takes one move at a time
    assert r.started == [("t", 0)] and cluster.submits == [[("t", 0)]]
    assert cluster.marked_at_submit == [True]
    assert store.plan is not None and store.plan.started == {("t", 0)} and store.plan.lease is None
    assert (r.moving, r.queued, r.done) == (1, 5, 0)
    assert one(env).started == []  # still moving: nothing fits
    assert max(in_flight(cluster).values()) == 1


def test_steps_until_done_delete_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    store, cluster, env = make(n=3)
    cleared: list[Any] = []

    def fake_verify(backend: Any, targets: Any) -> Any:
        cleared.append(targets)
        return type("O", (), {"cleared": object(), "results": []})()

    monkeypatch.setattr("reassign_cli.ops.verify.verify", fake_verify)
    for p in range(3):
        r = one(env)
        assert r.started == [("t", p)] and not r.finished
        cluster.end(p)
    r = one(env)
    assert r.finished and store.plan is None and len(cleared) == 1
    assert (r.done, r.total) == (3, 3)


def test_a_lost_fence_submits_nothing() -> None:
    store, cluster, env = make()
    store.lose_next = True
    # take_lease's update wins; the step's own write then loses
    calls = {"n": 0}
    replace = store.replace

    def losing(seen: Versioned, new: sp.StoredPlan) -> Versioned | None:
        calls["n"] += 1
        if calls["n"] == 2:
            return None
        return replace(seen, new)

    store.lose_next = False
    store.replace = losing  # type: ignore[method-assign]
    r = one(env)
    assert r.lost_fence and r.started == [] and cluster.submits == []
    assert store.plan is not None and store.plan.started == frozenset()


def test_a_move_marked_but_never_submitted_is_submitted_again_within_the_cap() -> None:
    store, cluster, env = make()
    assert store.plan is not None
    store.plan = sp.mark_started(store.plan, [("t", 0)], 150.0)  # a step killed -9 after its mark
    r = one(env)
    assert r.resubmitted == [("t", 0)] and r.started == []
    assert cluster.submits == [[("t", 0)]]
    cluster.lose(0)  # vanished again (a controller change)
    assert one(env).resubmitted == [("t", 0)]


def test_moving_moves_are_adopted_and_count_against_the_cap() -> None:
    store, cluster, env = make()
    cluster.create_reassignment([PlanEntry("t", 4, target(4), None)], additional=True)
    cluster.submits.clear()
    r = one(env)
    assert r.started == [] and cluster.submits == []
    assert store.plan is not None and store.plan.started == {("t", 4)}


def ticking(env: st.StepEnv) -> list[float]:
    """A clock that moves on by a second at each sleep."""
    now = [0.0]
    env.clock = lambda: now[0]
    env.sleep = lambda s: now.__setitem__(0, now[0] + s)
    return now


def test_another_runs_live_lease_changes_nothing() -> None:
    store, cluster, env = make()
    assert store.plan is not None
    store.plan = dataclasses.replace(store.plan, lease=sp.Lease("run-b", "other", 7))
    ticking(env)
    sleep = env.sleep

    def renewing(s: float) -> None:  # the other run renews while this one watches
        sleep(s)
        assert store.plan is not None and store.plan.lease is not None
        store.plan = sp.renew_lease(store.plan, "run-b")
        store.version += 1

    env.sleep = renewing
    before = store.version
    r = one(env)
    assert r.driver is not None and "other" in r.driver
    assert store.version == before + 1 and cluster.submits == []  # its renewal, nothing of ours


def test_a_dead_runs_lease_is_taken_over_after_the_watch() -> None:
    store, _, env = make()
    assert store.plan is not None
    store.plan = dataclasses.replace(store.plan, lease=sp.Lease("run-b", "other", 7))
    now = ticking(env)
    r = one(env)
    assert now[0] >= sp.STALE_SECONDS and r.driver is None and r.started == [("t", 0)]


def test_paused_starts_nothing_and_says_so() -> None:
    store, cluster, env = make()
    assert store.plan is not None
    store.plan = dataclasses.replace(
        store.plan, paused={"since": "2026-01-01T00:00:00Z", "user": "al", "host": "ops", "reason": "x"}
    )
    r = one(env)
    assert r.started == [] and cluster.submits == []
    assert r.wait is not None and "paused since 2026-01-01T00:00:00Z by al@ops" in r.wait


def test_a_health_hold_starts_nothing() -> None:
    _, cluster, env = make()
    signals = hc.Signals(
        registered=frozenset({1, 2, 4, 5}), fenced=None, partitions={}, min_isr={}, controller_epoch=None
    )
    env.health = lambda: signals
    r = one(env)
    assert r.started == [] and cluster.submits == []
    assert r.held_line is not None and r.held_line.startswith("held: broker 3 is not registered")


def test_no_advance_writes_nothing() -> None:
    store, cluster, env = make()
    r = one(env, advance=False)
    assert store.version == 0 and cluster.submits == [] and (r.queued, r.total) == (6, 6)


def test_a_foreground_keeper_renews_only_when_due_and_never_forgets_a_plan_taken_over() -> None:
    from reassign_cli.ops.stored import Keeper

    store, _, _ = make()
    assert store.plan is not None
    store.plan = dataclasses.replace(store.plan, lease=ME)
    now = [0.0]
    keeper = Keeper(store, ME, clock=lambda: now[0])
    keeper.renew()  # not due yet: nothing written
    assert store.version == 0
    now[0] = sp.RENEW_SECONDS
    keeper.renew()
    assert (
        store.version == 1 and store.plan.lease is not None and store.plan.lease.renewals == ME.renewals + 1
    )
    store.plan = dataclasses.replace(store.plan, lease=sp.Lease("run-b", "other", 7))  # taken over
    now[0] = 2 * sp.RENEW_SECONDS
    with pytest.raises(sp.LeaseLost):
        keeper.renew()
    keeper.forget()  # not ours any more: left alone
    assert store.plan is not None and store.plan.lease == sp.Lease("run-b", "other", 7)


def test_a_held_step_as_json() -> None:
    import orjson

    from reassign_cli.ops.stored import describe, exit_code

    _, _, env = make()
    signals = hc.Signals(
        registered=frozenset({1, 2, 4, 5}), fenced=None, partitions={}, min_isr={}, controller_epoch=None
    )
    env.health = lambda: signals
    r = one(env)
    doc = orjson.loads(orjson.dumps(describe(r)))
    assert doc["moves"] == {"total": 6, "moving": 0, "queued": 6, "done": 0} and doc["started"] == []
    assert [h["check"] for h in doc["health"]["holds"]] == ["broker-missing"]
    assert exit_code(r) == 4


def test_progress_line_says_eta_once() -> None:
    r = st.StepResult(total=3, moving=1, queued=1, done=1, bytes_total=3 << 20, bytes_done=1 << 20)
    r.rate, r.eta = float(1 << 20), 2.0
    assert r.progress_line() == (
        "1 moving, 1 queued, 1 done of 3; 1.0 MiB of 3.0 MiB copied at 1.0 MiB/s, ETA 0:00:02"
    )


def test_places_dirs_names_a_plan_with_a_log_dir() -> None:
    # a plan with log dirs is stored with its log-dir moves (ops/stored_log_dirs.py)
    from reassign_cli.ops.stored import places_dirs

    with_dirs = (
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","/d1"]}]}'
    )
    anys = (
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}'
    )
    plain = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    assert places_dirs(with_dirs) and not places_dirs(anys) and not places_dirs(plain)


def test_a_hold_is_said_since_the_first_step_that_saw_it_across_processes() -> None:
    """Each cron step is a new process (a new StepEnv): the hold's first-seen time is kept with the plan,
    so the second step, 40 s later, says "since 40 s" (it said "since 0 s" before), and the JSON too."""
    from reassign_cli.ops.stored import describe

    store, _, env = make()
    signals = hc.Signals(
        registered=frozenset({1, 2, 4, 5}), fenced=None, partitions={}, min_isr={}, controller_epoch=None
    )
    env.health = lambda: signals
    first = one(env)
    assert first.held_line is not None and "(since 0 s)" in first.held_line
    assert store.plan is not None and store.plan.schedule[st.HOLDS_SEEN] == {"broker-missing:broker 3": 200.0}
    later = st.StepEnv(env.backend, store, now=lambda: 240.0, clock=lambda: 0.0, throttle_settle=0)
    later.health = lambda: signals
    again = one(later)
    assert again.held_line is not None and "broker 3 is not registered (since 40 s)" in again.held_line
    assert describe(again)["health"]["holds"][0]["since_seconds"] > 0
    signals = dataclasses.replace(signals, registered=frozenset({1, 2, 3, 4, 5}))  # back: the hold gone
    third = st.StepEnv(env.backend, store, now=lambda: 260.0, clock=lambda: 0.0, throttle_settle=0)
    third.health = lambda: signals
    assert one(third).held_line is None
    assert store.plan is not None and st.HOLDS_SEEN not in store.plan.schedule


def lazy() -> tuple[FakeStore, FakeCluster, st.StepEnv, list[float], list[float]]:
    """A lazy driver's env (2 moves, cap 1) on a ticking clock (now[0]); `reads`: when health was read."""
    store, cluster, env = make(n=2, cap=1)
    env.lazy = True
    now = ticking(env)
    reads: list[float] = []
    ok = hc.Signals(
        registered=frozenset(range(1, 6)), fenced=None, partitions={}, min_isr={}, controller_epoch=7
    )

    def health() -> hc.Signals:
        reads.append(now[0])
        return ok

    env.health = health
    return store, cluster, env, now, reads


def test_a_lazy_driver_reads_health_only_when_a_move_could_start_and_writes_only_when_due() -> None:
    store, cluster, env, now, reads = lazy()
    r = one(env, keep_lease=True)  # the first step: a move starts, health read, the plan written
    assert r.started == [("t", 0)] and reads == [0.0] and r.health_read
    written = store.version
    # t-0 still moves: broker 2 (every move's source) is full at cap 1, so nothing could start; by hand:
    # no health read, and nothing written (the last write is 0 s old, under RENEW_SECONDS - 1 = 4 s)
    now[0] = 1.0
    r = one(env, keep_lease=True)
    assert (
        reads == [0.0] and not r.health_read and store.version == written and cluster.submits == [[("t", 0)]]
    )
    assert r.plan is not None and r.plan.started == {("t", 0)}
    now[0] = 4.0  # 4 s since the last write: the lease is renewed (one write), still no health read
    one(env, keep_lease=True)
    assert reads == [0.0] and store.version == written + 1
    assert store.plan is not None and store.plan.last_step is not None
    assert store.plan.last_step.controller_epoch == 7  # kept from the step that read health
    cluster.end(0)  # now t-1 fits: health read before it starts; the move ended and the start written
    now[0] = 5.0
    r = one(env, keep_lease=True)
    assert reads == [0.0, 5.0] and r.started == [("t", 1)] and store.version == written + 2
    assert store.plan.lease is not None and store.plan.lease.run == ME.run


def test_a_lazy_driver_reads_health_every_refresh_even_when_nothing_could_start() -> None:
    _, _, env, now, reads = lazy()
    one(env, keep_lease=True)
    now[0] = st.HEALTH_REFRESH_SECONDS - 1
    one(env, keep_lease=True)
    now[0] = st.HEALTH_REFRESH_SECONDS
    one(env, keep_lease=True)
    assert reads == [0.0, st.HEALTH_REFRESH_SECONDS]


def test_a_step_that_is_not_lazy_reads_health_and_writes_every_time() -> None:
    store, _, env = make(n=2, cap=1)
    reads: list[int] = []
    ok = hc.Signals(
        registered=frozenset(range(1, 6)), fenced=None, partitions={}, min_isr={}, controller_epoch=7
    )
    env.health = lambda: reads.append(1) or ok  # type: ignore[func-returns-value]
    one(env, keep_lease=True)
    v = store.version
    one(env, keep_lease=True)  # a cron step: nothing could start, still a health read and a write
    assert len(reads) == 2 and store.version > v


def test_a_lazy_step_that_writes_nothing_still_says_what_holds() -> None:
    """Seen on the real cluster: a held step with nothing to write returned no line, so the window said the
    same hold twice (it says a hold again only after a step without one)."""
    store, cluster, env = make(n=2, cap=1)
    env.lazy = True
    now = ticking(env)
    env.health = lambda: hc.Signals(
        registered=frozenset({1, 2, 4, 5}), fenced=None, partitions={}, min_isr={}, controller_epoch=None
    )
    first = one(env, keep_lease=True)
    written = store.version
    now[0] = 1.0
    second = one(env, keep_lease=True)  # a move could start, so health is read: held, nothing to write
    assert second.health_read and store.version == written and cluster.submits == []
    assert first.held_line is not None and second.held_line is not None
    assert second.held_line.startswith("held: broker 3 is not registered")
