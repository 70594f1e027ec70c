"""ops/stored_batches.py: what a stored plan's step submits when it runs batches (ZooKeeper alone, or a plan
stored with --batch-size). The pure choice (`pick`, `fit`), and the step's sequencing with test_step's fakes:
nothing while the last batch runs, the next batch once it ended, a batch recorded before a step died
submitted by the next one. The real cluster's test is tests/integration/test_stored_batches_zk.py."""

from __future__ import annotations

from typing import Any

from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import PlanEntry
from reassign_cli.core.znodes import encode_reassignment
from reassign_cli.ops import step as st
from reassign_cli.ops import stored_batches as sb
from tests.unit.test_step import FakeCluster, FakeStore, one, target


def plan_of(n: int, pace: pc.Pace) -> sp.StoredPlan:
    entries = [PlanEntry("t", p, target(p), None) for p in range(n)]
    return sp.new_plan(b"{}", entries, pace, sp.Origin("h", "u", 100.0))


def tps(*ps: int) -> list[tuple[str, int]]:
    return [("t", p) for p in ps]


BATCH2 = pc.Pace(None, None, batch_size=2)


def test_a_batch_is_the_next_queued_moves_in_the_plans_order() -> None:
    plan = plan_of(5, BATCH2)
    got = sb.pick(plan, False, [], [], [], may_start=True)
    assert (got.resubmit, got.new, got.heads) == ([], tps(0, 1), tps(2, 3))
    plan = sp.mark_done(plan, tps(0, 1), 150.0)
    assert sb.pick(plan, False, [], [], [], may_start=True).new == tps(2, 3)


def test_nothing_while_the_last_batch_runs() -> None:
    plan = plan_of(5, BATCH2)
    got = sb.pick(plan, True, tps(4), tps(0), tps(1), may_start=True)
    assert (got.resubmit, got.new, got.heads) == ([], [], [])


def test_a_batch_recorded_before_a_step_died_is_submitted_first_and_counts() -> None:
    plan = sp.mark_started(plan_of(5, BATCH2), tps(0), 150.0)  # marked, its trigger never written
    got = sb.pick(plan, False, tps(0), [], [], may_start=True)
    assert (got.resubmit, got.new) == (tps(0), tps(1))  # 2 in all
    held = sb.pick(plan, False, tps(0), [], [], may_start=False)
    assert (held.resubmit, held.new, held.heads) == (tps(0), [], [])  # a hold: no new move, the lost one goes


def test_a_partition_at_min_isr_stays_queued_and_the_next_move_takes_its_place_in_the_batch() -> None:
    plan = plan_of(5, BATCH2)
    got = sb.pick(plan, False, [], [], [], may_start=True, may_start_tp=lambda tp: tp != ("t", 0))
    assert (got.new, got.heads) == (tps(1, 2), tps(3, 4))  # queued 1-4 without 0: batch 1, 2; next 3, 4


def test_a_capped_plan_submits_the_windows_choice_as_its_batch() -> None:
    plan = plan_of(5, pc.Pace(1, "as-planned"))
    got = sb.pick(plan, False, tps(3), tps(1), tps(2), may_start=True)
    assert (got.resubmit, got.new, got.heads) == (tps(3), tps(1), tps(2))


def test_a_batch_never_exceeds_one_trigger_znode() -> None:
    plan = plan_of(6, pc.Pace(None, None, batch_size=6))
    entries = list(plan.entries)
    three = len(encode_reassignment(entries[:3]))  # the trigger of the first three, as the znode holds it
    got = sb.pick(plan, False, [], [], [], may_start=True, limit=three)
    assert got.new == tps(0, 1, 2) and got.heads == []
    assert sb.fit(entries, three - 1) == 2 and sb.fit(entries, None) == 6


def test_which_plans_run_batches() -> None:
    assert sb.batched(plan_of(2, pc.Pace(1, None)), zk_alone=True)
    assert sb.batched(plan_of(2, BATCH2), zk_alone=False)
    assert not sb.batched(plan_of(2, pc.Pace(1, None)), zk_alone=False)


class TriggerCluster(FakeCluster):
    """One trigger at a time, as ZooKeeper alone: a submit while moves run is refused (create-only)."""

    def create_reassignment(self, entries: list[PlanEntry], *, additional: bool = False) -> bool:
        assert not additional and not self.adding
        return super().create_reassignment(entries, additional=True)


def batches_env(n: int, pace: pc.Pace) -> tuple[FakeStore, TriggerCluster, st.StepEnv]:
    store = FakeStore(plan_of(n, pace))
    cluster = TriggerCluster(store, n)

    def gate(
        plan: sp.StoredPlan, view: Any, resubmit: Any, new: Any, heads: Any, may: bool, may_tp: Any
    ) -> Any:
        return sb.pick(plan, bool(cluster.adding), resubmit, new, heads, may_start=may, may_start_tp=may_tp)

    env = st.StepEnv(
        cluster,  # type: ignore[arg-type]
        store,  # type: ignore[arg-type]
        now=lambda: 200.0,
        clock=lambda: 0.0,
        throttle_settle=0,
        gate=gate,
        additional=False,
    )
    return store, cluster, env


def test_steps_run_one_batch_after_the_other() -> None:
    store, cluster, env = batches_env(5, BATCH2)
    assert one(env).started == tps(0, 1)
    assert one(env).started == []  # the batch runs: nothing new
    cluster.end(0)
    assert one(env).started == []  # one of two ended: still the same batch
    cluster.end(1)
    assert one(env).started == tps(2, 3)
    cluster.end(2)
    cluster.end(3)
    assert one(env).started == tps(4)
    assert store.plan is not None and store.plan.started == frozenset(tps(0, 1, 2, 3, 4))
    assert cluster.submits == [tps(0, 1), tps(2, 3), tps(4)] and all(cluster.marked_at_submit)


def test_a_batch_step_leaves_out_a_partition_at_min_isr_and_starts_it_in_a_later_batch() -> None:
    """Issue 25 item 5 (a partition at min ISR that a queued move touches waits even after the rest resumes),
    for a plan run as batches: the step used to submit the next N queued moves whatever their partitions'
    ISR. Partition 0 on [1, 2] with only broker 2 in sync and min.insync.replicas 1: at min ISR (one more
    loss and acks=all producers fail). With the under-replicated hold ignored, nothing holds the whole step,
    so the batch of 2 is partitions 1 and 2; once partition 0 is whole again it goes in a later batch."""
    from reassign_cli.core import health as hc

    _, cluster, env = batches_env(5, BATCH2)
    partitions = {("t", 0): hc.PartitionHealth(2, (1, 2), (2,))}
    env.health = lambda: hc.Signals(frozenset(range(1, 6)), None, partitions, {"t": 1}, None)
    assert one(env, ignore=["under-replicated"]).started == tps(1, 2)
    cluster.end(1)
    cluster.end(2)
    partitions[("t", 0)] = hc.PartitionHealth(2, (1, 2), (1, 2))  # back in sync
    assert one(env, ignore=["under-replicated"]).started == tps(0, 3)
    assert cluster.submits == [tps(1, 2), tps(0, 3)]


def test_a_stored_ignore_health_is_honoured_by_every_step_and_keeps_the_other_keys() -> None:
    from reassign_cli.core import health as hc
    from reassign_cli.ops.stored_health import stored_ignore, with_ignore
    from tests.unit.test_step import make

    schedule = with_ignore({"on_under_min_isr": "cancel", "hours": "01:00-05:00"}, ["broker-missing"])
    assert schedule == {
        "on_under_min_isr": "cancel",
        "hours": "01:00-05:00",
        "ignore_health": ["broker-missing"],
    }
    assert with_ignore({"x": 1}, []) == {"x": 1} and stored_ignore({"ignore_health": "bad"}) == frozenset()
    signals = hc.Signals(
        registered=frozenset({1, 2, 4, 5}), fenced=None, partitions={}, min_isr={}, controller_epoch=None
    )
    _, held, env = make()  # broker 3 (a target) not registered: held, as test_step's hold
    env.health = lambda: signals
    assert one(env).started == [] and held.submits == []
    _, cluster, env = make(schedule={"ignore_health": ["broker-missing"]})  # the same, ignored as stored
    env.health = lambda: signals
    r = one(env)
    assert r.started == tps(0) and cluster.submits == [tps(0)]


def test_a_plan_larger_than_one_znode_runs_as_batches() -> None:
    entries = [PlanEntry("t", p, [1, 2, 3], None) for p in range(3)]
    one_entry = len('{"topic":"t","partition":0,"replicas":[1,2,3]}')  # 46 bytes each
    whole = len('{"version":1,"partitions":[]}') + 3 * one_entry + 2  # 29 + 138 + two commas = 169
    assert len(encode_reassignment(entries)) == whole == 169
    assert sb.oversize(entries, whole) is None and sb.oversize(entries, None) is None
    got = sb.oversize(entries, whole - 1)
    assert got is not None and (got.need, got.limit, got.batches) == (
        169,
        168,
        2,
    )  # 2 fit in 168 (122 bytes), then 1
    assert sb.oversize(entries, 29 + one_entry) == sb.Oversize(169, 75, 3)  # one per znode
    line = got.line(3, waiting=False)
    assert line.startswith("The reassignment of 3 partitions needs 169 bytes in /admin/reassign_partitions")
    assert "it runs as 2 batches" in line


# -- planned / batch_line / left: a foreground run's batches numbered as its steps pick them ---------------
# The expected batches come from core/validate.split_batches and core/run_plan.paced_batches, which
# execute's own loop (ops/execute._run_batches) runs today: the steps must pick the same batches for the
# "Batch i/n" lines to stay true.
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

from reassign_cli.core.model import Broker, ClusterState, Topic  # noqa: E402
from reassign_cli.core.run_plan import paced_batches  # noqa: E402
from reassign_cli.core.validate import split_batches  # noqa: E402
from reassign_cli.ops.execute import NO_BYTES_LIMIT  # noqa: E402


def names(batches: list[list[PlanEntry]]) -> list[list[tuple[str, int]]]:
    return [[(e.topic, e.partition) for e in b] for b in batches]


@settings(max_examples=60, deadline=None)
@given(
    parts=hs.lists(
        hs.tuples(hs.sampled_from(["a", "b", "topic-with-a-long-name"]), hs.integers(0, 40)),
        min_size=1,
        max_size=25,
        unique=True,
    ),
    size=hs.integers(1, 7),
    limit=hs.one_of(hs.none(), hs.integers(120, 400)),
)
def test_a_batch_size_plans_batches_are_executes_batches(
    parts: list[tuple[str, int]], size: int, limit: int | None
) -> None:
    entries = [PlanEntry(t, p, target(p), None) for t, p in sorted(parts)]
    plan = sp.new_plan(b"{}", entries, pc.Pace(None, None, batch_size=size), sp.Origin("h", "u", 100.0))
    want = names(split_batches(entries, size, NO_BYTES_LIMIT if limit is None else limit))
    assert sb.planned(plan, limit) == want


def state_of(n: int) -> ClusterState:
    t = Topic("t", {p: [1, 2] for p in range(n)}, leader={p: 2 for p in range(n)})
    return ClusterState([Broker(b, None) for b in range(1, 6)], {"t": t})


def test_a_capped_plans_batches_are_the_zookeeper_windows_batches() -> None:
    # t-p moves [1, 2] -> [p % 3 + 3, 2]: receivers 3, 4, 5 in turn, leader 2 in every move. Cap 2 per
    # broker: broker 2 takes part in every move, so 2 moves a batch, in the plan's order.
    entries = [PlanEntry("t", p, target(p), None) for p in range(5)]
    plan = sp.new_plan(b"{}", entries, pc.Pace(2, "as-planned"), sp.Origin("h", "u", 100.0))
    state = state_of(5)
    got = sb.planned(plan, None, state)
    assert got == [tps(0, 1), tps(2, 3), tps(4)]
    assert got == names(paced_batches(entries, state, 2, "as-planned", NO_BYTES_LIMIT))


def test_a_capped_plan_needs_its_partitions() -> None:
    plan = plan_of(3, pc.Pace(1, "as-planned"))
    try:
        sb.planned(plan)
    except ValueError:
        return
    raise AssertionError("a capped plan's batches were numbered without its partitions")


def test_batch_lines_number_the_batches_as_execute_says_them() -> None:
    batches = [tps(0, 1), tps(2, 3), tps(4)]
    assert sb.batch_line(batches, tps(1, 0)) == "Batch 1/3: 2 partitions"
    assert sb.batch_line(batches, tps(4)) == "Batch 3/3: 1 partition"
    assert sb.batch_line(batches, tps(4, 0)) is None  # not one batch (a resubmit after a kill)
    assert sb.batch_line([tps(0, 1)], tps(0, 1)) is None  # one batch: no line, as execute


def test_left_names_the_batches_not_started() -> None:
    batches = [tps(0, 1), tps(2, 3), tps(4), tps(5, 6)]
    assert sb.left(batches, tps(0, 1)) == sb.Left(1, 4, "batches 2-4", 5)
    assert sb.left(batches, tps(0, 1, 2, 3)) == sb.Left(2, 4, "batches 3-4", 3)
    assert sb.left(batches, tps(0, 1, 2, 3, 4)) == sb.Left(3, 4, "batch 4", 2)
    assert sb.left(batches, tps(0, 1, 2, 3, 4, 5)) == sb.Left(4, 4, None, 0)


def test_a_resumed_plans_batches_are_the_moves_not_done() -> None:
    # execute --resume batches only what is left (core/run_plan.split_run's todo); a step marks the moves it
    # finds complete done before it picks: 0, 2 and 3 done, so batches of 2 are [1, 4], [5]
    plan = sp.mark_done(plan_of(6, BATCH2), tps(0, 2, 3), 150.0)
    assert sb.planned(plan) == [tps(1, 4), tps(5)]
