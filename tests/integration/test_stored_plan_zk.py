"""The stored plan in a real ZooKeeper (backends/zookeeper/stored_plan.py), each test on a fresh chroot:
big plans in chunks, the fence under 10 concurrent processes, a creator killed -9 between chunk writes, the
lease seen stale and taken over, delete."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reassign_cli.backends import plan_store as ps
from reassign_cli.backends.zookeeper.session import ZkOptions, ZkSession, open_session
from reassign_cli.backends.zookeeper.stored_plan import CONTENT, HEAD, MARK, ZkPlanStore
from reassign_cli.core import stored_plan as sp
from tests.clusters import kazoo_session
from tests.helpers import REPO, wait_until
from tests.integration.stored_plan_worker import big_plan, check_race


@pytest.fixture
def session(zk_chroot: str) -> Iterator[ZkSession]:
    with open_session(ZkOptions(zk_chroot)) as s:
        yield s


def worker(*args: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.stored_plan_worker", *args], cwd=REPO, **kwargs
    )


def znodes(client: Any, path: str) -> list[str]:
    out = [path]
    for name in client.get_children(path):
        out += znodes(client, f"{path}/{name}")
    return out


def test_20000_partitions_stored_and_read_back(session: ZkSession, zk_chroot: str) -> None:
    data, plan = big_plan(20_000)
    plan = sp.mark_started(plan, plan.moves[:500], 1.0)
    store = ZkPlanStore(session)
    t0 = time.monotonic()
    stored, created = store.create(plan)
    t1 = time.monotonic()
    assert created and stored.version == 0
    again = ZkPlanStore(session).read()
    t2 = time.monotonic()
    assert again is not None and again.plan == plan
    with kazoo_session(zk_chroot) as client:
        nodes = znodes(client, "/reassign_cli")
        sizes = {p: len(client.get(p)[0]) for p in nodes}
    content = sp.encode_content(plan)
    chunks = [p for p in nodes if p.startswith(CONTENT + "/") and p.count("/") == 4]
    assert sum(sizes[p] for p in chunks) == len(content)
    assert len(chunks) == -(-len(content) // (512 * 1024))
    assert max(sizes.values()) <= 512 * 1024
    print(
        f"\n20,000 partitions: content {len(content):,} B in {len(chunks)} chunk znodes, head {sizes[HEAD]:,} B, "
        f"{len(nodes)} znodes under /reassign_cli; plan file {len(data):,} B; "
        f"create {t1 - t0:.2f}s, read {t2 - t1:.2f}s"
    )


def test_second_create_conflicts_or_resumes(session: ZkSession) -> None:
    _, plan = big_plan(10)
    store = ZkPlanStore(session)
    store.create(plan)
    same, created = store.create(plan)
    assert not created and same.plan == plan  # the same plan bytes: a resume
    _, other = big_plan(11)
    with pytest.raises(sp.PlanConflict, match=r"10 partition\(s\).*stored by tester@test-host"):
        store.create(other, [("--zookeeper", "zk:2181/x")])


def test_ten_processes_race(session: ZkSession, zk_chroot: str, tmp_path: Path) -> None:
    _, plan = big_plan(300, sized=False)
    store = ZkPlanStore(session)
    store.create(plan)
    cap, out = 12, tmp_path / "wins.jsonl"
    procs = [worker("race", zk_chroot, str(seed), "30", str(cap), str(out)) for seed in range(10)]
    for p in procs:
        assert p.wait(timeout=500) == 0
    wins, started, final = check_race(store, str(out), cap)
    assert final.version == len(wins)  # every win moved the fence on by one, no other write landed
    print(f"\n10 processes x 30 rounds: {len(wins)} writes won, {len(started)} moves started")


def test_creator_killed_between_chunk_writes(session: ZkSession, zk_chroot: str) -> None:
    store = ZkPlanStore(session)
    p = worker("create-stop", zk_chroot, "2000", "20000", "4", stderr=subprocess.PIPE)
    try:
        assert p.stderr is not None
        assert p.stderr.readline().strip() == b"STOPPED"
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.kill()
        p.wait()
    with kazoo_session(zk_chroot) as client:
        (orphan,) = client.get_children(CONTENT)
        assert len(client.get_children(f"{CONTENT}/{orphan}")) == 4  # its mark and 3 chunks
    assert store.read() is None  # no head: nothing is stored, consistently
    _, plan = big_plan(50)
    stored, created = store.create(plan)  # the mark still stands (its session lives on for a while)
    assert created and store.read() == stored
    with kazoo_session(zk_chroot) as client:
        wait_until(
            lambda: not client.exists(f"{CONTENT}/{orphan}/{MARK}"), timeout=60, message="session expired"
        )
    assert store.delete(stored)
    with kazoo_session(zk_chroot) as client:
        assert client.get_children(CONTENT) == []  # the delete swept the dead creator's chunks
        assert not client.exists(HEAD)


def test_lease_taken_renewed_stale_taken_over(session: ZkSession, zk_chroot: str) -> None:
    _, plan = big_plan(20)
    a = ZkPlanStore(session)
    a.create(plan)
    me = sp.Lease("run-a", "host-a", 1)
    won, got = ps.take_lease(a, me, sp.watch(), time.monotonic)
    assert won and got is not None and got.plan.lease == me
    with open_session(ZkOptions(zk_chroot)) as other:
        b = ZkPlanStore(other)
        them, watch = sp.Lease("run-b", "host-b", 2), sp.watch()
        won, seen = ps.take_lease(b, them, watch, time.monotonic)
        assert not won and seen is not None and seen.plan.lease == me
        renewed = ps.renew_lease(a, "run-a")
        assert renewed.plan.lease is not None and renewed.plan.lease.renewals == 1
        # a stops renewing: b sees the same renewal for STALE_SECONDS of its own clock, then takes over
        taken = wait_until(
            lambda: ps.take_lease(b, them, watch, time.monotonic)[0],
            timeout=120,
            interval=1.0,
            message="stale",
        )
        assert taken
        now = b.read()
        assert now is not None and now.plan.lease == sp.Lease("run-b", "host-b", 2, 2)
        with pytest.raises(sp.LeaseLost):
            ps.renew_lease(a, "run-a")
        ps.release_lease(b, "run-b")
        released = a.read()
        assert released is not None and released.plan.lease is None


def test_delete_is_fenced(session: ZkSession, zk_chroot: str) -> None:
    _, plan = big_plan(5)
    store = ZkPlanStore(session)
    first, _ = store.create(plan)
    won, second = ps.update(store, lambda p: sp.mark_started(p, p.moves[:1], 2.0))
    assert won and second is not None and second.version == 1
    assert not store.delete(first)  # read at version 0: the plan changed since
    assert store.replace(first, plan) is None  # the same for a compare-and-set
    _, other = big_plan(6)
    with pytest.raises(ValueError, match="content of a stored plan never changes"):
        store.replace(second, other)
    assert store.delete(second)
    assert store.read() is None and not store.delete()
    with kazoo_session(zk_chroot) as client:
        assert client.get_children(CONTENT) == [] and not client.exists(HEAD)
