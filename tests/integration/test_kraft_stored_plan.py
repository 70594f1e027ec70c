"""The stored plan in the topic __reassign_cli_plan of a real KRaft 4.x cluster (backends/admin/plan_topic.py):
store, read from a fresh reader, compare-and-set, delete, and two writer processes racing. The cluster is
shared: every test deletes the plan it stored, in a finalizer."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reassign_cli.backends import plan_store as ps
from reassign_cli.backends.admin.plan_topic import TopicPlanStore
from reassign_cli.backends.plan_store import Versioned
from reassign_cli.core import stored_plan as sp
from tests.clusters import ExtraCluster
from tests.helpers import REPO
from tests.integration.stored_plan_worker import big_plan, check_race, topic_store


@pytest.fixture
def store(kc: ExtraCluster) -> Iterator[TopicPlanStore]:
    with topic_store(kc.bootstrap) as s:
        s.delete()  # a plan left by an earlier failed run
        try:
            yield s
        finally:
            s.delete()


def test_store_read_cas_delete_20000(store: TopicPlanStore, kc: ExtraCluster) -> None:
    _, plan = big_plan(20_000)
    t0 = time.monotonic()
    first, created = store.create(plan)
    t1 = time.monotonic()
    assert created
    with topic_store(kc.bootstrap) as fresh:  # a new reader replays the topic from its start
        seen = fresh.read()
        t2 = time.monotonic()
        assert seen is not None and seen.plan == plan
        moved = sp.mark_started(plan, plan.moves[:7], 5.0)
        second = fresh.replace(seen, moved)
        t3 = time.monotonic()
        assert second is not None and second.version > seen.version
    assert store.replace(first, sp.mark_started(plan, plan.moves[7:9], 6.0)) is None  # read before: lost
    again = store.read()
    # the plan is the winner's; the version is the last write's end seen: the losing write's, after it
    assert again is not None and again.plan == moved and again.version > second.version
    assert not store.delete(seen)  # at an old version: nothing deleted
    # (in a log, a write that lost moves the version on too: read again)
    assert store.read() == Versioned(moved, again.version + 1)
    assert store.delete(store.read())
    assert store.read() is None
    print(f"\ntopic, 20,000 partitions: create {t1 - t0:.2f}s, fresh read {t2 - t1:.2f}s, CAS {t3 - t2:.2f}s")


def test_conflict_and_lease(store: TopicPlanStore, kc: ExtraCluster) -> None:
    _, plan = big_plan(10)
    store.create(plan)
    _, other = big_plan(11)
    with pytest.raises(sp.PlanConflict, match="stored by tester@test-host"):
        store.create(other)
    me = sp.Lease("run-a", "host-a", 1)
    won, got = ps.take_lease(store, me, sp.watch(), time.monotonic)
    assert won and got is not None and got.plan.lease == me
    with topic_store(kc.bootstrap) as b:
        won, seen = ps.take_lease(b, sp.Lease("run-b", "host-b", 2), sp.watch(), time.monotonic)
        assert not won and seen is not None and seen.plan.lease == me
    assert ps.renew_lease(store, "run-a").plan.lease == sp.Lease("run-a", "host-a", 1, 1)


def test_two_writer_processes(store: TopicPlanStore, kc: ExtraCluster, tmp_path: Path) -> None:
    _, plan = big_plan(200, sized=False)
    store.create(plan)
    cap, out = 10, tmp_path / "wins.jsonl"
    cmd = [sys.executable, "-m", "tests.integration.stored_plan_worker", "race-topic", kc.bootstrap]
    procs = [subprocess.Popen([*cmd, str(seed), "15", str(cap), str(out)], cwd=REPO) for seed in range(2)]
    for p in procs:
        assert p.wait(timeout=500) == 0
    wins, started, _ = check_race(store, str(out), cap)
    print(f"\n2 processes x 15 rounds on the topic: {len(wins)} writes won, {len(started)} moves started")
