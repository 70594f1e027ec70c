"""`list` and a step of a stored plan say what is true around its log-dir moves and its throttles (issues 25
and 27): the state once every partition move is done but log-dir moves remain (core/plan_view.state_line,
ops/plan_ctl.report), a health hold in the log-dir phase (ops/step._dirs_phase), and the throttles a stored
plan keeps between two moves (core/plan_view.throttles_held, cli/listing). Expected values worked out by hand.
The real clusters' checks: tests/integration/test_plan_ctl_zk.py::test_list_names_the_stored_plans_throttles
and tests/integration/test_logdir_pacing.py::test_a_detached_disk_plan_carried_on_by_verify_alone
(list_in_dirs_phase: list between two steps of the log-dir phase)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from reassign_cli.backends.plan_store import Versioned
from reassign_cli.core import health as hc
from reassign_cli.core import pacing as pc
from reassign_cli.core import plan_view as pv
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import PlanEntry
from reassign_cli.ops import plan_ctl
from reassign_cli.ops import stored_log_dirs as sld
from reassign_cli.render.stored_plan import stored_plan_lines

NOW = datetime(2026, 12, 1, 2, 30, 15, tzinfo=UTC)
PAUSE = {"since": "2026-12-01T02:00:00Z", "user": "bob", "host": "ops2", "reason": "disk"}


def dir_plan(started: set[tuple[str, int, int]], done: set[tuple[str, int, int]], **kw: Any) -> sp.StoredPlan:
    """t-0 [1] into /a1, t-1 [1] into /a1, t-2 [2, 3] (3 into /c1), u-0 [1, 2] no dirs: three log-dir moves;
    every partition move done."""
    entries = [
        PlanEntry("t", 0, [1], ["/a1"]),
        PlanEntry("t", 1, [1], ["/a1"]),
        PlanEntry("t", 2, [2, 3], ["any", "/c1"]),
        PlanEntry("u", 0, [1, 2], None),
    ]
    p = sp.new_plan(b"{}", entries, pc.Pace(1, "as-planned"), sp.Origin("h", "u", 1.0),
                    schedule=sld.with_dirs({}, 1, False), **kw)  # fmt: skip
    p = sp.mark_done(sp.mark_started(p, p.moves, 10.0), p.moves, 20.0)
    return sld.keep(p, sld.DirPace(1, False, frozenset(started | done), frozenset(done)))


ALL = {("t", 0, 1), ("t", 1, 1), ("t", 2, 3)}


# -- 1. list's state while the log-dir moves remain ---------------------------------------------------
def test_partition_moves_done_log_dir_moves_left_is_not_finished() -> None:
    p = dir_plan({("t", 0, 1)}, set())  # 1 moving, 2 queued
    doc = plan_ctl.report(Versioned(p, 0), NOW)
    assert (doc["state"], doc["state_line"]) == ("moving log dirs", None)
    assert doc["moves"] == {"running": 0, "queued": 0, "done": 4}
    assert doc["log_dir_moves"] == {"total": 3, "moving": 1, "queued": 2, "done": 0}
    lines = stored_plan_lines(doc)
    assert "  state: moving log dirs" in lines and "  log-dir moves: 1 moving, 2 queued, 0 done of 3" in lines
    # the last one copying, none queued: still not finished
    last = dir_plan({("t", 2, 3)}, {("t", 0, 1), ("t", 1, 1)})
    assert pv.state_line(last, NOW, dirs=(1, 0)) == ("moving log dirs", None)
    assert plan_ctl.report(Versioned(last, 0), NOW)["state"] == "moving log dirs"


def test_every_log_dir_move_done_is_finished() -> None:
    doc = plan_ctl.report(Versioned(dir_plan(set(), ALL), 0), NOW)
    assert (doc["state"], doc["log_dir_moves"]["done"]) == ("finished", 3)


def test_a_pause_holds_the_queued_log_dir_moves() -> None:
    p = dataclasses.replace(dir_plan({("t", 0, 1)}, set()), paused=PAUSE)
    doc = plan_ctl.report(Versioned(p, 0), NOW)
    assert (doc["state"], doc["state_line"]) == (
        "paused",
        "paused since 2026-12-01T02:00:00Z by bob@ops2: disk",
    )
    # nothing queued any more: a pause changes nothing, the last log-dir move runs
    last = dataclasses.replace(dir_plan({("t", 2, 3)}, {("t", 0, 1), ("t", 1, 1)}), paused=PAUSE)
    assert plan_ctl.report(Versioned(last, 0), NOW)["state"] == "moving log dirs"


def test_partition_moves_draining_with_log_dir_moves_to_come_is_running() -> None:
    # every partition move started, one still moving; the three log-dir moves still to come after it: a
    # pause or the hours would hold those, so it is not "draining" (where they change nothing any more)
    p = dir_plan(set(), set())
    p = dataclasses.replace(p, done=p.done - {("t", 2)})
    assert pv.state_line(p, NOW, dirs=(0, 3)) == ("running", None)
    assert pv.state_line(p, NOW) == ("draining", None)  # a plan without log-dir moves: as before
    held = dataclasses.replace(p, paused=PAUSE)
    assert pv.state_line(held, NOW, dirs=(0, 3))[0] == "paused"


# -- 2. a health hold in the log-dir phase ------------------------------------------------------------
def test_a_health_hold_in_the_log_dir_phase_is_said_with_the_log_dir_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """t-0 on [1, 2] already (its partition move done at the first step), both replicas into other dirs;
    broker 2 not registered: the step starts no log-dir move and says why, with the log-dir moves' counts."""
    from reassign_cli.ops import step as st
    from reassign_cli.ops.stored import describe, lines
    from tests.unit.test_step import FakeCluster, FakeStore, one
    from tests.unit.test_stored_log_dirs import FakeMover

    entries = [PlanEntry("t", 0, [1, 2], ["/a1", "/b1"])]
    p = sp.new_plan(b"{}", entries, pc.Pace(1, "as-planned"), sp.Origin("h", "u", 100.0),
                    schedule=sld.with_dirs({}, 1, False))  # fmt: skip
    store = FakeStore(p)
    cluster = FakeCluster(store, 1)
    mover = FakeMover(store, {("t", 0, 1): ("/a0", None), ("t", 0, 2): ("/b0", None)})
    env = st.StepEnv(cluster, store, now=lambda: 200.0, clock=lambda: 0.0, throttle_settle=0, sizer=mover)  # type: ignore[arg-type]
    signals = hc.Signals(
        registered=frozenset({1, 3, 4, 5}), fenced=None, partitions={}, min_isr={}, controller_epoch=None
    )
    env.health = lambda: signals
    r = one(env)
    assert r.dirs_started == [] and mover.attempts == [] and not r.finished
    assert r.log_dirs == sld.DirCounts(2, 0, 2, 0)
    line = "held: broker 2 is not registered (since 0 s); log-dir moves: 0 moving, 2 queued"
    assert r.held_line == line
    assert line in lines(r)
    doc = orjson.loads(orjson.dumps(describe(r)))
    assert doc["health"]["held"] is True and doc["health"]["line"] == line
    assert (doc["health"]["moving"], doc["health"]["queued"], doc["health"]["counts"]) == (
        0,
        2,
        "log_dir_moves",
    )
    # the broker back: the step starts a log-dir move and holds no more
    env.health = lambda: dataclasses.replace(signals, registered=frozenset({1, 2, 3}))
    r = one(env)
    assert r.held_line is None and r.dirs_started == [("t", 0, 1), ("t", 0, 2)]


def test_a_held_partition_step_counts_partition_moves() -> None:
    from reassign_cli.ops.stored import describe
    from tests.unit.test_step import make, one

    _, _, env = make()
    env.health = lambda: hc.Signals(
        registered=frozenset({1, 2, 4, 5}), fenced=None, partitions={}, min_isr={}, controller_epoch=None
    )
    r = one(env)
    assert r.held_line == "held: broker 3 is not registered (since 0 s); 0 moving, 6 queued"
    assert describe(r)["health"]["counts"] == "partition_moves"


# -- 3. the throttles a stored plan keeps between two moves -------------------------------------------
def test_throttles_on_the_plans_topics_are_the_plans() -> None:
    plan_topics = {"t", "u"}
    assert pv.throttles_held(plan_topics, ([1, 2, 3], ["t"])) == (([1, 2, 3], ["t"]), ([], []))
    # a topic outside the plan: another execute's; the broker rates, shared, cannot be told apart then
    assert pv.throttles_held(plan_topics, ([1, 2], ["t", "x"])) == (([], ["t"]), ([1, 2], ["x"]))
    assert pv.throttles_held(plan_topics, ([1], [])) == (([1], []), ([], []))  # a log-dir rate alone
    assert pv.throttles_held(plan_topics, ([], [])) == (([], []), ([], []))


def test_list_says_the_stored_plan_keeps_its_throttles() -> None:
    p = dir_plan(set(), set())
    doc = plan_ctl.report(Versioned(p, 0), NOW, recorded=([1, 2, 3], ["t"]))
    assert doc["throttles"] == {"brokers": [1, 2, 3], "topics": ["t"]}
    assert (
        "  throttles: on brokers 1,2,3 and topics t, kept for its moves (cleared when it ends)"
        in stored_plan_lines(doc)
    )
    none = plan_ctl.report(Versioned(p, 0), NOW, recorded=([], []))
    assert none["throttles"] == {"brokers": [], "topics": []}
    assert not [x for x in stored_plan_lines(none) if "throttles" in x]


def test_list_warns_only_of_the_throttles_no_stored_plan_explains() -> None:
    from reassign_cli.cli.listing import orphans_of

    recorded = ([1, 2], ["t", "x"])
    assert orphans_of(recorded, reassigning=False, stored=None) == ([1, 2], ["t", "x"])  # as before
    assert orphans_of(recorded, reassigning=True, stored=None) is None
    held = {"throttles": {"brokers": [], "topics": ["t"]}}
    assert orphans_of(recorded, reassigning=False, stored=held) == ([1, 2], ["x"])
    every = {"throttles": {"brokers": [1, 2], "topics": ["t", "x"]}}
    assert orphans_of(recorded, reassigning=False, stored=every) is None
    assert orphans_of(([], []), reassigning=False, stored=None) is None
