"""pause, continue, list and the metrics of a stored plan (ops/plan_ctl.py, render/stored_plan.py), on an
in-memory store with the PlanStore contract (a version per write, compare-and-set). Expected values are
worked out by hand in each test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from reassign_cli.backends.plan_store import MemoryPlanStore, Versioned
from reassign_cli.core import pacing as pc
from reassign_cli.core import plan_view as pv
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import PlanEntry
from reassign_cli.core.schedule import parse_hours
from reassign_cli.errors import UsageError
from reassign_cli.ops import plan_ctl as pctl
from reassign_cli.render.metrics import VerifyMetrics, parse_metrics_labels, registry
from reassign_cli.render.plan_metrics import summary
from reassign_cli.render.stored_plan import stored_plan_lines

NOW = datetime(2026, 12, 1, 2, 30, 15, tzinfo=UTC)


class MemStore(MemoryPlanStore):
    """The in-memory store, counting its writes."""

    def __init__(self, plan: sp.StoredPlan | None = None) -> None:
        super().__init__()
        self.plan, self.writes = plan, 0

    def replace(self, seen: Versioned, new: sp.StoredPlan) -> Versioned | None:
        written = super().replace(seen, new)
        self.writes += written is not None
        return written


def plan4(**kw: object) -> sp.StoredPlan:
    entries = [PlanEntry("t", i, [1, 2], None) for i in range(4)]
    origin = sp.Origin("ops1", "alice", 1000.0)
    p = sp.new_plan(b'{"version":1}', entries, pc.Pace(2, None), origin, [100, 200, 300, 400], **kw)  # type: ignore[arg-type]
    p = sp.mark_started(p, [("t", 0), ("t", 1), ("t", 2)], 1050.0)
    p = sp.mark_done(p, [("t", 0)], 1100.0)
    return sp.stepped(p, 1100.0, 7)


def test_pause_records_who_and_keeps_the_first() -> None:
    store = MemStore(plan4())
    got = pctl.pause_stored(store, NOW, "bob", "ops2", "disk  on\nbroker 3")
    assert got is not None and not got.already
    assert store.plan is not None and store.plan.paused == {
        "since": "2026-12-01T02:30:15Z",
        "user": "bob",
        "host": "ops2",
        "reason": "disk on broker 3",
    }
    again = pctl.pause_stored(store, datetime(2026, 12, 2, tzinfo=UTC), "carol", "ops3", "other")
    assert again is not None and again.already
    assert again.paused.line() == "paused since 2026-12-01T02:30:15Z by bob@ops2: disk on broker 3"
    assert store.writes == 1  # the second pause wrote nothing


def test_nothing_stored() -> None:
    store = MemStore()
    assert pctl.pause_stored(store, NOW, "bob", "ops2") is None
    assert pctl.continue_stored(store, NOW) is None


def test_continue_clears_the_pause_and_changes_the_hours() -> None:
    store = MemStore(plan4(schedule={"hours": "01:00-05:00", "not_before": None}))
    pctl.pause_stored(store, NOW, "bob", "ops2", "why")
    c = pctl.continue_stored(store, NOW, parse_hours("22:00-06:00"))
    assert c is not None and c.changes == (
        "pause cleared (was: paused since 2026-12-01T02:30:15Z by bob@ops2: why)",
        "hours: 01:00-05:00 UTC -> 22:00-06:00 UTC",
    )
    assert store.plan is not None and store.plan.paused == {}
    assert store.plan.schedule == {"hours": "22:00-06:00", "not_before": None}
    c = pctl.continue_stored(store, NOW, None)  # --hours none
    assert c is not None and store.plan.schedule == {"hours": None, "not_before": None}
    writes = store.writes
    c = pctl.continue_stored(store, NOW)
    assert c is not None and c.changes == () and store.writes == writes


def test_continue_keeps_what_else_the_schedule_holds() -> None:
    # execute --detach --on-under-min-isr cancel keeps its policy in the schedule object (ops/isr_cancel.py):
    # a `continue --hours` must change the hours and leave the policy as it was.
    store = MemStore(plan4(schedule={"hours": None, "not_before": None, "on_under_min_isr": "cancel"}))
    pctl.continue_stored(store, NOW, parse_hours("22:00-06:00"))
    assert store.plan is not None
    assert store.plan.schedule == {"hours": "22:00-06:00", "not_before": None, "on_under_min_isr": "cancel"}


def test_summary_by_hand() -> None:
    # sizes 100, 200, 300, 400; started 0-2, done 0: 2 running, 1 queued, 1 done; 100 of 1000 bytes done,
    # 900 left; 100 bytes from the storing (1000) to the last step (1100): 1 B/s, so 900 s.
    p = plan4(schedule={"hours": None, "not_before": "2099-01-01T00:00:00Z"})
    s = summary(p, NOW, {"broker_unregistered": True})
    assert (s.running, s.queued, s.done) == (2, 1, 1)
    assert (s.bytes_remaining, s.eta_seconds, s.last_step_timestamp, s.paused) == (900, 900.0, 1100.0, False)
    assert s.held == {"hours": False, "not_before": True, "broker_unregistered": True}


def test_eta_unknown_without_sizes_or_step() -> None:
    entries = [PlanEntry("t", 0, [1, 2], None)]
    p = sp.new_plan(b"x", entries, pc.Pace(2, None), sp.Origin("h", "u", 10.0))
    assert pv.eta_seconds(p, sp.progress(p)) is None
    sized = sp.new_plan(b"x", entries, pc.Pace(2, None), sp.Origin("h", "u", 10.0), [5])
    assert pv.eta_seconds(sized, sp.progress(sized)) is None  # nothing done, no step yet
    assert summary(p, NOW).bytes_remaining is None


def test_list_lines_by_hand() -> None:
    store = MemStore(plan4(schedule={"hours": "01:00-05:00", "not_before": None}))
    doc = pctl.report(store.read(), NOW)  # type: ignore[arg-type]
    assert doc["state"] == "running"  # 02:30 is inside 01:00-05:00
    pctl.pause_stored(store, NOW, "bob", "ops2", "disk")
    seen = store.read()
    assert seen is not None
    lease = sp.Lease("run1", "ops9", 42, 3)
    seen = Versioned(sp.take_lease(seen.plan, lease, sp.watch(), 0.0) or seen.plan, seen.version)
    doc = pctl.report(seen, NOW)
    sha = doc["plan_sha256"][:12]
    assert stored_plan_lines(doc) == [
        f"Stored plan: 4 partition(s), SHA-256 {sha}, stored by alice@ops1 at 1970-01-01T00:16:40Z",
        "  state: paused since 2026-12-01T02:30:15Z by bob@ops2: disk",
        "  moves: 2 moving, 1 queued, 1 done",
        "  bytes: 100 B of 1000 B done, 900 B left; ETA 0:15:00",
        "  driver: run run1 (pid 42 on ops9), renewed 3 times",
        "  last step: 1970-01-01T00:18:20Z; last change 2026-12-01T02:30:15Z (0 s ago by this host's clock)",
    ]
    assert doc["state"] == "paused" and doc["driver"] == lease.doc()


def test_state_outside_hours_and_draining() -> None:
    p = plan4(schedule={"hours": "03:00-04:00", "not_before": None})
    state, line = pv.state_line(p, NOW)
    assert state == "waiting"
    assert line == "outside hours 03:00-04:00 UTC; next start 2026-12-01 03:00 UTC (in 30 min)"
    started = sp.mark_started(p, [("t", 3)], 1200.0)
    assert pv.state_line(started, NOW) == ("draining", None)
    assert pv.state_line(sp.mark_done(started, started.moves, 1300.0), NOW) == ("finished", None)


def _families(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_verify_metrics_carry_the_stored_plan() -> None:
    from prometheus_client import generate_latest

    p = plan4()
    labels = {"plan": "/x/p.json", "plan_sha256": "0123456789ab", "cluster": "eu1"}
    m = VerifyMetrics(labels, 0, 5.0, stored_plan=p)
    got = _families(generate_latest(registry(m)).decode())
    own = (("cluster", "eu1"), ("plan", "stored"), ("plan_sha256", p.plan_sha256[:12]))

    def at(name: str, *extra: tuple[str, str]) -> float:
        return got[(name, tuple(sorted(own + extra)))]

    assert [at("kafka_reassign_plan_moves", ("state", s)) for s in ("running", "queued", "done")] == [2, 1, 1]
    assert at("kafka_reassign_plan_bytes_remaining") == 900
    assert at("kafka_reassign_plan_eta_seconds") == 900
    assert at("kafka_reassign_plan_paused") == 0
    assert at("kafka_reassign_plan_held", ("reason", "hours")) == 0
    assert at("kafka_reassign_plan_last_step_timestamp_seconds") == 1100
    # the file's own plan: verify's labels
    same = VerifyMetrics(
        {**labels, "plan_sha256": p.plan_sha256[:12]},
        0,
        5.0,
        stored_plan=p,
    )
    keys = _families(generate_latest(registry(same)).decode())
    assert (("cluster", "eu1"), ("plan", "/x/p.json"), ("plan_sha256", p.plan_sha256[:12])) in {
        k[1] for k in keys if k[0] == "kafka_reassign_plan_paused"
    }


@pytest.mark.parametrize("name", ["state", "reason"])
def test_plan_gauge_labels_are_reserved(name: str) -> None:
    with pytest.raises(UsageError, match="this label is verify's own"):
        parse_metrics_labels([f"{name}=x"])


@given(
    sizes=st.lists(st.integers(0, 10**12), min_size=1, max_size=30),
    data=st.data(),
    step=st.one_of(st.none(), st.floats(1000.0, 10**6)),
)
def test_summary_counts_and_bytes_add_up(sizes: list[int], data: st.DataObject, step: float | None) -> None:
    entries = [PlanEntry("t", i, [1, 2], None) for i in range(len(sizes))]
    p = sp.new_plan(b"x", entries, pc.Pace(2, None), sp.Origin("h", "u", 1000.0), sizes)
    started = data.draw(st.sets(st.sampled_from(range(len(sizes)))))
    done = data.draw(st.sets(st.sampled_from(sorted(started)))) if started else set()
    p = sp.mark_started(p, [("t", i) for i in sorted(started)], 1000.0)
    p = sp.mark_done(p, [("t", i) for i in sorted(done)], 1000.0)
    if step is not None:
        p = sp.stepped(p, step, None)
    s = summary(p, NOW)
    assert (s.running, s.queued, s.done) == (len(started) - len(done), len(sizes) - len(started), len(done))
    assert s.bytes_remaining == sum(n for i, n in enumerate(sizes) if i not in done)
    left, done_bytes = s.bytes_remaining, sum(sizes[i] for i in done)
    if left == 0:
        assert s.eta_seconds == 0
    elif step is None or step <= 1000.0 or done_bytes == 0:
        assert s.eta_seconds is None
    else:
        assert s.eta_seconds == pytest.approx(left * (step - 1000.0) / done_bytes)
