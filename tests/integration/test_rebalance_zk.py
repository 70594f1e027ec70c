"""`kafka-reassign rebalance` (issue 26) on the ZooKeeper-mode cluster (Kafka 3.9, the brokers given too).

The shared cluster holds other topics, so every tick is confined to the test's topic with --exclude-topics
(a regex excluding every other name): a second topic of the test, as unbalanced, is excluded and must stay
exactly where it was. Ticks alone (separate processes, the first two at once) fill broker 3, which holds no
replica of the topic, plan after plan cut by --max-bytes, until a tick says balanced; five more ticks then
start nothing. An operator's own reassignment running: the tick skips, exit 4. Each test ends clean: no
throttle of ours, no stored plan, every message read back."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.reassign_support import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
)

HEAD = "/reassign_cli/plan"
LEDGER = "/reassign_cli/autopilot-brokers"
ENV: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
PART_BYTES = 100 * 1000  # each partition: 100 records of 1000 bytes (plus batch overhead)


def _flags(cluster: Any, topic: str) -> list[str]:
    return [
        "--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap,
        "--exclude-topics", f"(?!{topic}$).*",
    ]  # fmt: skip


def _forget(zk: Any) -> None:
    """The stored plan and the ledger are not left for the next test."""
    for path in (HEAD, "/reassign_cli/plan-content", LEDGER):
        if zk.exists(path):
            zk.delete(path, recursive=True)


@pytest.fixture
def clean(zk: Any, mover: Mover) -> Any:
    mover.finally_do.append(lambda: _forget(zk))
    await_idle(zk)
    _forget(zk)
    yield


def _replicas(zk: Any, topic: str) -> dict[str, list[int]]:
    return dict(get_json(zk, f"/brokers/topics/{topic}")["partitions"])


def _no_throttles(zk: Any, topics: list[str]) -> None:
    for t in topics:
        tcfg = config(zk, "topics", t) or {}
        assert LEADER_REPLICAS not in tcfg and FOLLOWER_REPLICAS not in tcfg
    for b in (1, 2, 3):
        bcfg = config(zk, "brokers", b) or {}
        assert LEADER_RATE not in bcfg and FOLLOWER_RATE not in bcfg


def _tick_process(cluster: Any, topic: str, *extra: str, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    return subprocess.Popen(  # in cwd: the tick's execute writes its rollback file there
        [sys.executable, "-m", "reassign_cli", "rebalance", *_flags(cluster, topic), *extra],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.timeout(900)
def test_ticks_alone_fill_an_empty_broker_in_several_plans_then_start_nothing(
    cluster: Any, zk: Any, make_topic: Any, consume_all: Any, clean: Any, mover: Mover, tmp_path: Any
) -> None:
    layout = {p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(6)}
    topic = make_topic(layout)
    other = make_topic(layout)  # as unbalanced, and excluded: never moved
    sent = [v for p in range(6) for v in produce(cluster.bootstrap, topic, p, 100)]
    before_other = _replicas(zk, other)
    limits = ["--max-bytes", str(int(PART_BYTES * 1.5)), "--throttle", "50000000"]
    metrics = tmp_path / "tick.prom"

    # the first tick from two hosts at once: one plan is stored, never two
    a, b = (_tick_process(cluster, topic, *limits, cwd=tmp_path) for _ in range(2))
    outs = [p.communicate(timeout=300) for p in (a, b)]
    assert {a.returncode, b.returncode} == {4}, outs
    fresh = [o for o in outs if "Stored the plan in the cluster" in o[1] and "stored already" not in o[1]]
    assert len(fresh) <= 1, outs
    assert any("rebalance: broker 3 holds no replica" in o[0] for o in outs), outs

    reports = tmp_path / "reports"
    reports.mkdir()
    plans, ticks, last = 1, 0, ""
    while "balanced:" not in last:
        ticks += 1
        assert ticks < 60, last
        r = mover.cli(
            "rebalance", *_flags(cluster, topic), *limits, "--metrics-file", metrics, "--report-dir", reports
        )
        assert r.returncode in (0, 4), r.stderr
        if "Stored the plan in the cluster" in r.stderr:
            copied = re.search(r"of ([\d.]+) (B|KiB) copied", r.stderr)
            assert copied is not None, r.stderr  # --max-bytes: within the limit (one partition's copy)
            assert float(copied[1]) * (1024 if copied[2] == "KiB" else 1) <= PART_BYTES * 1.5, r.stderr
            plans += 1
        last = r.stdout
    assert plans >= 3, f"--max-bytes split the rebalance into {plans} plans"
    md = sorted(reports.glob("rebalance-*.md"))
    assert len(md) == plans - 1 and all(m.with_suffix(".html").exists() for m in md), md
    assert all(re.fullmatch(r"rebalance-\d{8}T\d{6}Z-[0-9a-f]{12}\.md", m.name) for m in md)
    print(f"\nfilled broker 3 in {plans} plans over {ticks + 1} ticks")
    assert 'kafka_reassign_autopilot_decision{decision="balanced"} 1.0' in metrics.read_text()
    assert not zk.exists(HEAD)
    after = _replicas(zk, topic)
    held = {b for row in after.values() for b in row}
    assert held == {1, 2, 3} and all(len(set(row)) == 2 for row in after.values())
    counts = [sum(b in row for row in after.values()) for b in (1, 2, 3)]
    assert max(counts) - min(counts) <= 1, after

    for _ in range(5):  # balanced: nothing starts
        r = mover.cli("rebalance", *_flags(cluster, topic), *limits)
        assert r.returncode == 0 and r.stdout.startswith("balanced: worst deviation"), r.stdout + r.stderr
        assert not zk.exists(HEAD) and not zk.exists("/admin/reassign_partitions")
    assert _replicas(zk, topic) == after and _replicas(zk, other) == before_other
    _no_throttles(zk, [topic, other])
    assert set(sent) <= set(consume_all(topic))


def test_dry_run_prints_the_decision_and_plan_and_writes_nothing(
    cluster: Any, zk: Any, make_topic: Any, clean: Any, mover: Mover
) -> None:
    topic = make_topic({p: [1, 2] for p in range(3)}, messages=30)
    r = mover.cli("rebalance", *_flags(cluster, topic), "--dry-run")
    assert r.returncode == 4, r.stderr
    assert "rebalance: broker 3 holds no replica" in r.stdout and '"partitions":[' in r.stdout
    assert not zk.exists(HEAD) and not zk.exists(LEDGER) and not zk.exists("/admin/reassign_partitions")


def test_an_operators_reassignment_running_is_skipped(
    cluster: Any, zk: Any, make_topic: Any, clean: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1], 1: [1]})
    produce(cluster.bootstrap, topic, 0, 5000)
    plan = mover.plan("op.json", {(topic, 0): [3]})
    mover.plans.append((plan, [topic]))
    started = mover.execute(plan, "--throttle", "10000")  # ~5 MB at 10 kB/s: still running below
    assert started.returncode == 0, started.stderr
    wait_until(lambda: zk.exists("/admin/reassign_partitions") is not None, timeout=60, message="running")
    r = mover.cli("rebalance", *_flags(cluster, topic))
    assert r.returncode == 4, r.stderr
    assert r.stdout.startswith("skipped: a reassignment not ours is in progress:"), r.stdout
    assert f"{topic}-0" in r.stdout
    assert not zk.exists(HEAD)


@pytest.mark.timeout(900)
def test_a_broker_stopped_for_good_is_healed_after_dead_after(
    cluster: Any, zk: Any, make_topic: Any, consume_all: Any, clean: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 3], 1: [3, 2], 2: [2, 3], 3: [3, 1]}, messages=80)
    flags = [*_flags(cluster, topic), "--dead-after", "5"]
    with cluster.broker_stopped(3):
        first = mover.cli("rebalance", *flags)
        assert first.returncode == 4 and first.stdout.startswith("wait: broker 3 is missing"), first.stdout
        assert not zk.exists(HEAD)
        seen: list[str] = []

        def healed() -> bool:
            r = mover.cli("rebalance", *flags)
            assert r.returncode in (0, 4), r.stderr
            seen.append(r.stdout + r.stderr)
            # the end: nothing to move (broker 3 still holds replicas of excluded topics), or, holding
            # nothing any more, forgotten by the ledger and the two live brokers balanced
            done = "plan: nothing to move" in r.stdout or r.stdout.startswith("balanced:")
            return r.returncode == 0 and done and not zk.exists(HEAD)

        wait_until(healed, timeout=600, interval=1, message=lambda: f"healed: {seen[-1:]}")
        assert any("heal: broker 3 has been missing for" in s for s in seen), seen
        assert not any("health" in s.lower() and "held" in s.lower() for s in seen), seen
        after = _replicas(zk, topic)
        assert all(len(set(row)) == 2 and set(row) == {1, 2} for row in after.values()), (
            after
        )  # RF 2, racks r1/r2
        for p, row in after.items():
            state = get_json(zk, f"/brokers/topics/{topic}/partitions/{p}/state")
            assert sorted(state["isr"]) == sorted(row), state
        _no_throttles(zk, [topic])
        values = consume_all(topic)
        assert sorted(values) == sorted(f"{topic}-value-{i}".encode() for i in range(80))
    # broker 3 started again, empty of the topic: the next ticks refill it until balanced
    again: list[str] = []

    def refilled() -> bool:
        r = mover.cli("rebalance", *flags)
        assert r.returncode in (0, 4), r.stdout + r.stderr
        again.append(r.stdout + r.stderr)
        return r.returncode == 0 and r.stdout.startswith("balanced:") and not zk.exists(HEAD)

    wait_until(refilled, timeout=300, interval=1, message=lambda: f"refilled: {again[-3:]}")
    assert any("rebalance: broker 3 holds no replica" in x for x in again), again
    after = _replicas(zk, topic)
    assert 3 in {b for row in after.values() for b in row} and all(len(set(r)) == 2 for r in after.values())
    _no_throttles(zk, [topic])
    assert sorted(consume_all(topic)) == sorted(f"{topic}-value-{i}".encode() for i in range(80))


@pytest.mark.timeout(900)
def test_a_broker_dying_while_the_autopilots_plan_runs_ends_it_and_heals(
    cluster: Any, zk: Any, make_topic: Any, consume_all: Any, clean: Any, mover: Mover
) -> None:
    """Broker 3 holds one replica of the topic: the first tick plans replicas onto it, slowly (10 kB/s,
    at most one move per broker), and starts them. Broker 3 then stops for good. Once it is dead, a tick
    ends the autopilot's plan early: the running moves onto 3 (which can never complete) cancelled, the
    queued ones dropped; the same tick stores the heal (the partition on 3 re-placed on 1 and 2) and
    its first step starts it (the dead broker's own damage exempt there too, not held). Ticks then end
    the heal: every partition on 1 and 2, in sync, every message read back."""
    layout = {0: [1, 2], 1: [2, 1], 2: [1, 2], 3: [2, 1], 4: [3, 1]}
    topic = make_topic(layout)
    sent = [v for p in range(4) for v in produce(cluster.bootstrap, topic, p, 2000)]  # 2 MB each
    sent += produce(cluster.bootstrap, topic, 4, 10)
    first = mover.cli(
        "rebalance", *_flags(cluster, topic), "--throttle", "10000", "--max-moves-per-broker", "1"
    )
    assert first.returncode == 4 and "rebalance:" in first.stdout, first.stdout + first.stderr
    assert "Started" in first.stderr, first.stderr
    assert zk.exists(HEAD)
    flags = [*_flags(cluster, topic), "--dead-after", "5", "--throttle", "50000000"]
    with cluster.broker_stopped(3):
        seen: list[str] = []

        def healed() -> bool:
            r = mover.cli("rebalance", *flags)
            assert r.returncode in (0, 4), r.stdout + r.stderr
            seen.append(r.stdout + r.stderr)
            done = "plan: nothing to move" in r.stdout or r.stdout.startswith("balanced:")
            return r.returncode == 0 and done and not zk.exists(HEAD)

        wait_until(healed, timeout=600, interval=1, message=lambda: f"healed: {seen[-3:]}")
        ended = [s for s in seen if "dead while the autopilot's plan runs: it ends early" in s]
        assert len(ended) == 1, seen
        print(f"\nthe tick that ended the plan:\n{ended[0]}")
        assert "running move(s) onto a dead broker cancelled" in ended[0], ended
        assert "heal: broker 3 has been missing for" in ended[0], ended  # the same tick plans the heal
        assert re.search(r"Started 1 move: " + re.escape(f"{topic}-4"), ended[0]), ended[0]  # not held
        after = _replicas(zk, topic)
        assert all(set(row) == {1, 2} for row in after.values()), after
        for p, row in after.items():
            state = get_json(zk, f"/brokers/topics/{topic}/partitions/{p}/state")
            assert sorted(state["isr"]) == sorted(row), state
        _no_throttles(zk, [topic])
        assert sorted(consume_all(topic)) == sorted(sent)


def _plan_of(stdout: str) -> dict[int, list[int]]:
    """The reassignment JSON a dry run prints (its last line): partition -> target replicas."""
    doc = json.loads(stdout.strip().splitlines()[-1])
    return {e["partition"]: e["replicas"] for e in doc["partitions"]}


@pytest.mark.timeout(900)
def test_trigger_tolerance_exclude_brokers_and_max_moves(
    cluster: Any, zk: Any, make_topic: Any, consume_all: Any, clean: Any, mover: Mover
) -> None:
    """One topic of 30 single-replica partitions, ten on each broker (counts and leaders even), holding
    140, 100 and 60 records of 100 bytes on brokers 1, 2 and 3: bytes about 1.4 : 1.0 : 0.6 of the goal.
    The default trigger (10%, and no partition is above 1.4% of the total) rebalances; --trigger 0.5 (a
    band of 50% to 150% of the goal) does not. --tolerance 0.5 gives a plan with nothing to move; the
    default tolerance moves partitions off 1 onto 3. --exclude-brokers 3 plans nothing onto 3 (and moves its
    partitions away); --max-moves 1 cuts the plan to one move, and one real tick stores exactly that one,
    which ticks then finish. Dry runs otherwise: nothing else is written."""
    layout = {p: [1 + p % 3] for p in range(30)}
    topic = make_topic(layout)
    count = {1: 140, 2: 100, 3: 60}
    sent = [v for p in range(30) for v in produce(cluster.bootstrap, topic, p, count[1 + p % 3], size=100)]
    flags = _flags(cluster, topic)

    def dry(*extra: str) -> Any:
        r = mover.cli("rebalance", *flags, "--dry-run", *extra)
        assert r.returncode in (0, 4), r.stdout + r.stderr
        return r

    r = dry()
    assert r.returncode == 4 and r.stdout.startswith("rebalance: broker 1: "), r.stdout
    assert "broker 3: " in r.stdout.splitlines()[0], r.stdout
    whole = _plan_of(r.stdout)
    assert whole and all(layout[p] != row for p, row in whole.items())
    assert any(layout[p] == [1] and row == [3] for p, row in whole.items()), whole

    r = dry("--trigger", "0.5")
    assert (r.returncode, r.stdout.split(":")[0]) == (0, "balanced"), r.stdout

    r = dry("--tolerance", "0.5")
    assert r.returncode == 0 and "plan: nothing to move within the limits" in r.stdout, r.stdout

    r = dry("--exclude-brokers", "3")
    assert r.returncode == 4, r.stdout
    off = _plan_of(r.stdout)
    assert all(3 not in row for row in off.values()), off
    assert {p for p in range(30) if layout[p] == [3]} <= set(off), off  # an excluded broker aims at 0

    r = dry("--max-moves", "1")
    one = _plan_of(r.stdout)
    assert len(one) == 1 and "plan: 1 move(s), " in r.stdout and "more left for later ticks" in r.stdout
    assert not zk.exists(HEAD) and not zk.exists("/admin/reassign_partitions")

    t = mover.cli("rebalance", *flags, "--max-moves", "1", "--throttle", "50000000")
    assert t.returncode == 4 and "Stored the plan in the cluster (1 partitions" in t.stderr, t.stderr
    ((p, row),) = one.items()
    while zk.exists(HEAD):
        t = mover.cli("rebalance", *flags, "--max-moves", "1", "--throttle", "50000000")
        assert t.returncode in (0, 4), t.stdout + t.stderr
    after = _replicas(zk, topic)
    assert after[str(p)] == row and all(after[str(q)] == layout[q] for q in range(30) if q != p), after
    _no_throttles(zk, [topic])
    assert sorted(consume_all(topic)) == sorted(sent)
