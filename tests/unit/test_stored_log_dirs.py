"""ops/stored_log_dirs.py's pure parts: the state kept in the stored plan's schedule object, what a step
reads from DescribeLogDirs, and which moves it starts. Expected values worked out by hand; the real
cluster's test is tests/integration/test_logdir_pacing.py::test_a_detached_disk_plan_carried_on_by_verify_alone."""

from __future__ import annotations

from typing import Any

import pytest

from reassign_cli.core import logdir_pacing as lp
from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import PlanEntry
from reassign_cli.ops import stored_log_dirs as sld


def plan(schedule: dict) -> sp.StoredPlan:  # type: ignore[type-arg]
    entries = [
        PlanEntry("t", 0, [1], ["/a1"]),
        PlanEntry("t", 1, [1], ["/a1"]),
        PlanEntry("t", 2, [2, 3], ["any", "/c1"]),
        PlanEntry("u", 0, [1, 2], None),
    ]
    return sp.new_plan(b"{}", entries, pc.Pace(1, "as-planned"), sp.Origin("h", "u", 1.0), schedule=schedule)


def test_kept_beside_the_other_keys_and_read_back_through_the_head() -> None:
    schedule = sld.with_dirs({"hours": None, "not_before": None, "throttle_loop": {"x": 1}}, 2, True)
    assert schedule["throttle_loop"] == {"x": 1} and schedule["hours"] is None
    p = plan(schedule)
    head, chunks = sp.encode(p, 1 << 20)
    back = sp.decode(head, b"".join(chunks))
    assert sld.stored(back) == sld.DirPace(2, True)
    marked = sld.keep(
        back, sld.DirPace(2, True, frozenset({("t", 0, 1), ("t", 1, 1)}), frozenset({("t", 0, 1)}))
    )
    head, chunks = sp.encode(marked, 1 << 20)
    again = sp.decode(head, b"".join(chunks))
    assert again.schedule["throttle_loop"] == {"x": 1}
    # three replicas name a dir (u-0 none, t-2's broker 2 "any"): t-0 done, t-1 moving, t-2 on 3 queued
    assert sld.counts(again) == sld.DirCounts(total=3, moving=1, queued=1, done=1)
    assert sld.counts(again).line() == "log-dir moves: 1 moving, 1 queued, 1 done of 3"  # type: ignore[union-attr]


def test_a_plan_stored_without_them_has_none() -> None:
    assert sld.stored(plan({})) is None and sld.counts(plan({})) is None


def test_a_kept_state_that_does_not_parse_is_said() -> None:
    with pytest.raises(sp.StoredPlanError, match="log-dir moves"):
        sld.stored(plan({sld.KEY: {"cap": 0, "one_broker": False, "started": [], "done": []}}))


def st(current: str | None, future: str | None) -> lp.DirState:
    return lp.DirState(current, future, None, None)


def test_observe_sorts_the_planned_replicas() -> None:
    targets = {
        ("t", 0, 1): "/a1",
        ("t", 1, 1): "/a1",
        ("t", 2, 3): "/c1",
        ("t", 3, 1): "/a1",
        ("t", 4, 2): "/b1",
    }
    states = {
        ("t", 0, 1): st("/a1", None),  # in its dir
        ("t", 1, 1): st("/a0", "/a1"),  # copying there
        ("t", 2, 3): st("/c0", None),  # elsewhere, not moving
        ("t", 3, 1): st("/a0", "/a2"),  # moving to another dir: queued (started again to its own)
    }  # t-4 on 2: not found
    seen = sld.observe(targets, states)
    assert seen.done == {("t", 0, 1)}
    assert seen.running == {("t", 1, 1): lp.DirMove(("t", 1, 1), "/a0", "/a1")}
    assert seen.queued == [lp.DirMove(("t", 2, 3), "/c0", "/c1"), lp.DirMove(("t", 3, 1), "/a0", "/a1")]
    assert seen.unknown == {("t", 4, 2)}


def test_decide_one_per_disk_records_before_it_starts() -> None:
    # broker 1: three replicas /a0 -> /a1, one running: the cap of 1 per disk starts none; broker 2's starts
    running = {("t", 0, 1): lp.DirMove(("t", 0, 1), "/a0", "/a1")}
    queued = [lp.DirMove(("t", 1, 1), "/a0", "/a1"), lp.DirMove(("t", 2, 2), "/b0", "/b1")]
    seen = sld.DirSeen(frozenset({("t", 9, 1)}), running, queued, frozenset())
    pace = sld.DirPace(1, False, frozenset({("t", 9, 1), ("t", 1, 1)}), frozenset())
    after, new = sld.decide(pace, seen, True)
    assert [m.key for m in new] == [("t", 2, 2)]
    # t-0 adopted, t-9 done, t-1 started before but seen queued: queued again (not started now: /a0 is busy)
    assert after.started == {("t", 0, 1), ("t", 9, 1), ("t", 2, 2)}
    assert after.done == {("t", 9, 1)}
    held, none = sld.decide(pace, seen, False)
    assert none == [] and held.started == {("t", 0, 1), ("t", 9, 1)}


def test_decide_one_broker_at_a_time_and_no_cap() -> None:
    queued = [lp.DirMove(("t", 0, 2), "/b0", "/b1"), lp.DirMove(("t", 1, 1), "/a0", "/a1"),
              lp.DirMove(("t", 2, 1), "/a0", "/a1")]  # fmt: skip
    seen = sld.DirSeen(frozenset(), {}, queued, frozenset())
    _, new = sld.decide(sld.DirPace(2, True), seen, True)
    assert [m.key for m in new] == [("t", 1, 1), ("t", 2, 1)]  # the lowest broker id first, two per disk
    _, all_ = sld.decide(sld.DirPace(None, False), seen, True)
    assert len(all_) == 3  # no --max-moves-per-disk: every move at once


def test_a_verify_of_the_stored_plans_file_calls_a_move_not_started_queued() -> None:
    from reassign_cli.core.progress import MoveStatus, ReplicaMoveProgress, verify_exit

    moves = [
        ReplicaMoveProgress("t", 0, 1, "/a1", "/a1", None, MoveStatus.COMPLETE),
        ReplicaMoveProgress("t", 1, 1, "/a1", "/a0", None, MoveStatus.NOT_MOVING),
    ]
    kept = sld.queued_moves(moves, plan(sld.with_dirs({}, 1, False)))
    assert [m.status for m in kept] == [MoveStatus.COMPLETE, MoveStatus.QUEUED]
    assert kept[1].line() == "Reassignment of replica t-1-1 is still in progress (queued: not started yet)."
    assert verify_exit([], kept) == 4 and verify_exit([], moves) == 5
    assert sld.queued_moves(moves, plan({})) == moves  # a plan stored without log-dir moves: as before


def test_list_says_the_log_dir_moves() -> None:
    from datetime import UTC, datetime

    from reassign_cli.backends.plan_store import Versioned
    from reassign_cli.ops import plan_ctl
    from reassign_cli.render.stored_plan import stored_plan_lines

    p = sld.keep(plan(sld.with_dirs({}, 1, False)), sld.DirPace(1, False, frozenset({("t", 0, 1)})))
    doc = plan_ctl.report(Versioned(p, 0), datetime(2026, 12, 1, tzinfo=UTC))
    assert doc["log_dir_moves"] == {"total": 3, "moving": 1, "queued": 2, "done": 0}
    assert "  log-dir moves: 1 moving, 2 queued, 0 done of 3" in stored_plan_lines(doc)
    assert "log_dir_moves" not in plan_ctl.report(Versioned(plan({}), 0), datetime(2026, 12, 1, tzinfo=UTC))


class FakeMover:
    """AlterReplicaLogDirs and DescribeLogDirs of the fake cluster: each replica's (current, future) dir; an
    attempt notes what the stored plan recorded as started at that moment."""

    def __init__(self, store: Any, where: dict[tuple[str, int, int], tuple[str, str | None]]) -> None:
        self.store, self.where = store, where
        self.attempts: list[tuple[dict[tuple[str, int, int], str], frozenset[tuple[str, int, int]]]] = []
        self.unanswered: list[int] = []

    def attempt(self, moves: dict[tuple[str, int, int], str]) -> tuple[list[Any], dict[Any, str]]:
        pace = sld.stored(self.store.plan)
        self.attempts.append((dict(moves), pace.started if pace else frozenset()))
        started, failed = [], {}
        for k, d in moves.items():
            if k in self.where:
                self.where[k] = (self.where[k][0], d)
                started.append(k)
            else:
                failed[k] = "ReplicaNotAvailableError"  # arriving: the broker remembers the dir
        return started, failed

    def copies(self, replicas: Any) -> dict[Any, list[tuple[str, bool, int]]]:
        out: dict[Any, list[tuple[str, bool, int]]] = {}
        for k in replicas:
            if k in self.where:
                cur, fut = self.where[k]
                out[k] = [(cur, False, 10), *([(fut, True, 5)] if fut else [])]
        return out

    def finish(self, k: tuple[str, int, int]) -> None:
        self.where[k] = (self.where[k][1] or self.where[k][0], None)


def test_steps_tell_arrivals_then_pace_the_log_dir_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    """t-0 [1, 2] -> [3, 2], broker 3's replica into /c1 (arriving: told before the submit) and broker 2's
    into /b1 (held: an intra-broker move); t-1 stays on [1, 2], both into their d1. One per disk: broker 2's
    two moves out of /b0 one after the other, broker 1's beside the first."""
    from reassign_cli.ops import step as st
    from tests.unit.test_step import FakeCluster, FakeStore, one

    entries = [PlanEntry("t", 0, [3, 2], ["/c1", "/b1"]), PlanEntry("t", 1, [1, 2], ["/a1", "/b1"])]
    p = sp.new_plan(b"{}", entries, pc.Pace(1, "as-planned"), sp.Origin("h", "u", 100.0),
                    schedule=sld.with_dirs({}, 1, False))  # fmt: skip
    store = FakeStore(p)
    cluster = FakeCluster(store, 2)
    mover = FakeMover(
        store, {("t", 0, 2): ("/b0", None), ("t", 1, 1): ("/a0", None), ("t", 1, 2): ("/b0", None)}
    )
    env = st.StepEnv(cluster, store, now=lambda: 200.0, clock=lambda: 0.0, throttle_settle=0, sizer=mover)  # type: ignore[arg-type]
    monkeypatch.setattr(
        "reassign_cli.ops.verify.verify",
        lambda backend, targets, **kw: type("O", (), {"cleared": object(), "results": []})(),
    )
    r = one(env)  # t-0 submitted (t-1 is at its replicas already: done)
    assert cluster.submits == [[("t", 0)]]
    assert mover.attempts == [({("t", 0, 3): "/c1"}, frozenset())]  # only the arriving replica, before
    assert r.log_dirs == sld.DirCounts(4, 0, 4, 0)
    assert one(env).dirs_started == []  # t-0 still moving: no log-dir move yet
    cluster.end(0)
    mover.where[("t", 0, 3)] = ("/c1", None)  # placed on arrival
    r = one(env)
    assert r.dirs_started == [("t", 0, 2), ("t", 1, 1)]  # /b0 takes one; /a0 another
    moves, recorded = mover.attempts[-1]
    assert moves == {("t", 0, 2): "/b1", ("t", 1, 1): "/a1"} and set(moves) <= recorded  # marked first
    assert r.log_dirs == sld.DirCounts(4, 2, 1, 1)
    assert one(env).dirs_started == []  # /b0 busy
    mover.finish(("t", 0, 2))
    mover.finish(("t", 1, 1))
    r = one(env)
    assert r.dirs_started == [("t", 1, 2)] and r.log_dirs == sld.DirCounts(4, 1, 0, 3)
    mover.finish(("t", 1, 2))
    r = one(env)
    assert r.finished and store.plan is None


def test_a_foreground_runs_log_dir_moves_are_kept_with_its_stored_plan() -> None:
    import dataclasses

    from reassign_cli.ops.stored import Keeper
    from tests.unit.test_step import ME, FakeStore

    store = FakeStore(dataclasses.replace(plan(sld.with_dirs({}, 1, False)), lease=ME))
    now = [0.0]
    keeper = Keeper(store, ME, clock=lambda: now[0])
    keeper.dirs_started([("t", 0, 1)])  # written at once, before the move starts
    assert store.version == 1 and sld.counts(store.plan) == sld.DirCounts(3, 1, 2, 0)  # type: ignore[arg-type]
    keeper.dirs_ended([("t", 0, 1)])
    keeper.renew()  # not due: noted only
    assert store.version == 1
    keeper.dirs_started([("t", 1, 1)])  # one write: the ended one done, the new one started
    assert store.version == 2 and sld.counts(store.plan) == sld.DirCounts(3, 1, 1, 1)  # type: ignore[arg-type]
