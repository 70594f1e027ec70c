"""`kafka-reassign rebalance` on KRaft 4.3.1 through the admin API alone: the stored plan in its topic, the
known-broker ledger in __reassign_cli_autopilot. Ticks alone fill broker 3, which holds no replica of the
topic, until a tick says balanced; five more ticks start nothing. A broker stopped (on 4.3.1 it stays
registered, fenced) is healed after --dead-after. Ends clean: no plan stored, no throttle of ours, every
message read back. The cluster is shared: every other topic is excluded (--exclude-topics)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import ExtraCluster
from tests.helpers import REPO, consume_all, run_cli, wait_until
from tests.integration.conftest import clear_ours, restore_baseline
from tests.integration.kraft_support import (
    EMPTY,
    FR,
    FREP,
    LR,
    LREP,
    Admin,
    admin,
    cli,
    idle,
    record_messages,
    replayed_record,
)
from tests.integration.stored_plan_worker import topic_store


def _tick_process(flags: list[str], cwd: Path) -> subprocess.Popen[str]:
    """A tick in its own process, in `cwd`: the plan it starts writes its rollback file there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "reassign_cli", "rebalance", *flags],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.timeout(900)
def test_ticks_alone_fill_an_empty_broker_on_kraft(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    """Two hosts tick at once first (one plan stored, never two); --max-bytes (1.5 partitions' bytes) splits
    the fill into several plans; a second topic as unbalanced is excluded (--exclude-topics) and never moves."""
    layout = {p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(6)}
    topic, values = ka.make_topic("pilot", layout, messages=60)  # 60 kB a partition
    other, _ = ka.make_topic("other", layout)
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    flags = [
        "--bootstrap-server",
        kc.bootstrap,
        "--exclude-topics",
        f"(?!{topic}$).*",
        "--throttle",
        "50000000",
        "--max-bytes",
        str(int(60 * 1000 * 1.5)),
    ]
    try:
        one, two = _tick_process(flags, tmp_path), _tick_process(flags, tmp_path)
        outs = [p.communicate(timeout=300) for p in (one, two)]
        assert {one.returncode, two.returncode} == {4}, outs
        fresh = [o for o in outs if "Stored the plan in the cluster" in o[1] and "stored already" not in o[1]]
        assert len(fresh) <= 1, outs
        assert any("rebalance: broker 3 holds no replica" in o[0] for o in outs), outs
        plans = 1
        last: Any = None
        for _ in range(60):
            last = run_cli("rebalance", *flags, env=env, cwd=tmp_path)
            assert last.returncode in (0, 4), last.stderr
            plans += "Stored the plan in the cluster" in last.stderr
            if last.stdout.startswith("balanced:"):
                break
        assert last is not None and last.stdout.startswith("balanced:"), last.stdout + last.stderr
        assert plans >= 3, f"--max-bytes split the fill into {plans} plans"
        after = {p: r for p, (r, _, _) in ka.partitions(topic).items()}
        assert {b for r in after.values() for b in r} == {1, 2, 3} and all(
            len(set(r)) == 2 for r in after.values()
        )
        for _ in range(5):
            r = run_cli("rebalance", *flags, env=env, cwd=tmp_path)
            assert r.returncode == 0 and r.stdout.startswith("balanced:"), r.stdout + r.stderr
        assert not ka.reassignments()
        assert {p: r for p, (r, _, _) in ka.partitions(topic).items()} == after
        assert {p: r for p, (r, _, _) in ka.partitions(other).items()} == layout
        with topic_store(kc.bootstrap) as store:
            assert store.read() is None
        assert not {k for k in ka.configs("topics", topic) if k in (LREP, FREP)}
        for b in (1, 2, 3):
            assert not {k for k in ka.configs("brokers", b) if k in (LR, FR)}
        assert sorted(consume_all(kc.bootstrap, topic, 60)) == sorted(values)
    finally:
        with topic_store(kc.bootstrap) as store, contextlib.suppress(Exception):
            store.delete()
        _forget_ledger(kc.bootstrap)


def test_an_operators_reassignment_running_is_skipped_on_kraft(
    kc: ExtraCluster, ka: Admin, tmp_path: Path
) -> None:
    topic, _ = ka.make_topic("op", {0: [1], 1: [1]}, messages=2500)  # 2.5 MB at 10 kB/s: minutes
    plan = tmp_path / "op.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [3]}]})
    )
    r = cli(kc.bootstrap, "execute", "--reassignment-json-file", plan, "--throttle", "10000", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert set(ka.reassignments()) == {(topic, 0)}
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    t = run_cli(
        "rebalance", "--bootstrap-server", kc.bootstrap, "--exclude-topics", f"(?!{topic}$).*", env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert t.returncode == 4, t.stderr
    assert (
        t.stdout.startswith("skipped: a reassignment not ours is in progress:") and f"{topic}-0" in t.stdout
    )
    with topic_store(kc.bootstrap) as store:
        assert store.read() is None
    # the ka fixture's finalizer cancels the reassignment and takes the throttles off


@pytest.fixture
def kb(kc: ExtraCluster, tmp_path: Path) -> Iterator[Admin]:
    """conftest's `ka` for a test that stops a broker: the baseline is restored through a fresh client (one
    that saw a broker leave may not route to it again), which also deletes the test's topics."""
    a = Admin(kc.bootstrap)
    idle(a)
    clear_ours(kc, a, tmp_path)
    try:
        yield a
    finally:
        with contextlib.suppress(Exception):
            a.client.close()
        with admin(kc.bootstrap) as fresh:
            fresh.made = a.made
            restore_baseline(kc, fresh, tmp_path)


def _forget_ledger(bootstrap: str) -> None:
    """The ledger is not left for the next test (a fresh client: one that saw a broker leave may not
    route to it again)."""
    with admin(bootstrap) as a, contextlib.suppress(Exception):
        a.client.delete_topics(["__reassign_cli_autopilot"])


def _check_healed(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """Every partition on the live brokers 1 and 2 (RF 2), fully in sync; no plan stored, no throttle of
    ours on the topic or a live broker; every message read back. A fresh client: broker 3 is down."""
    with admin(bootstrap) as a:
        parts = a.partitions(topic)
        assert all(set(row) == {1, 2} and sorted(isr) == sorted(row) for row, _, isr in parts.values()), parts
        assert not a.reassignments()
        assert not {k for k in a.configs("topics", topic) if k in (LREP, FREP)}
        for b in (1, 2):
            assert not {k for k in a.configs("brokers", b) if k in (LR, FR)}
    with topic_store(bootstrap) as store:
        assert store.read() is None
    assert sorted(consume_all(bootstrap, topic, len(values))) == sorted(values)


def _check_refilled(bootstrap: str, topic: str, values: list[bytes], leftover: bool) -> None:
    """Broker 3 holds replicas of the topic again, every partition RF 2 and in sync, nothing of ours left
    but (`leftover`) the keys on broker 3 dropped from our record while it was dead: left set, as named."""
    with admin(bootstrap) as a:
        parts = a.partitions(topic)
        assert all(len(set(row)) == 2 and sorted(isr) == sorted(row) for row, _, isr in parts.values()), parts
        assert 3 in {b for row, _, _ in parts.values() for b in row}, parts
        assert not a.reassignments()
        for b in (1, 2):
            assert not {k for k in a.configs("brokers", b) if k in (LR, FR)}
        assert {k for k in a.configs("brokers", 3) if k in (LR, FR)} == ({LR, FR} if leftover else set())
    with topic_store(bootstrap) as store:
        assert store.read() is None
    assert replayed_record(record_messages(bootstrap)) == EMPTY
    assert sorted(consume_all(bootstrap, topic, len(values))) == sorted(values)


def _throttle_left_on_3(kc: ExtraCluster, a: Admin, topic: str, tmp_path: Path) -> None:
    """Our throttle on broker 3 left in our record: an execute with --throttle moves partition 4 from 1,2
    to 1,3 and is never verified (the record then names brokers 1, 2, 3 and the topic)."""
    plan = tmp_path / "onto3.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 4, "replicas": [1, 3]}]})
    )
    r = cli(kc.bootstrap, "execute", "--reassignment-json-file", plan, "--throttle", "50000000", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    idle(a)
    assert "3" in replayed_record(record_messages(kc.bootstrap))["brokers"]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("leftover", [False, True], ids=["clean", "throttle-left-on-3"])
def test_a_broker_stopped_for_good_is_healed_after_dead_after_on_kraft(
    kc: ExtraCluster, kb: Admin, tmp_path: Path, leftover: bool
) -> None:
    """On 4.3.1 the stopped broker 3 stays registered, fenced: missing for the ledger (not listed unfenced).
    Started again after the heal, it is empty (of the topic) and the next ticks fill it.
    With our throttle left on broker 3 in our record (`leftover`), the heal still ends with exit 0: the
    entry, which only broker 3 could take off, is named once and dropped from our record."""
    layout = {0: [1, 3], 1: [3, 2], 2: [2, 3], 3: [3, 1]} | ({4: [1, 2]} if leftover else {})
    topic, values = kb.make_topic("heal", layout, messages=80)
    if leftover:
        _throttle_left_on_3(kc, kb, topic, tmp_path)
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    flags = [
        "--bootstrap-server", kc.bootstrap, "--exclude-topics", f"(?!{topic}$).*", "--dead-after", "5",
        "--throttle", "50000000",
    ]  # fmt: skip
    seen: list[str] = []
    try:
        with kc.broker_stopped(3):
            first = run_cli("rebalance", *flags, env=env, cwd=tmp_path)
            assert first.returncode == 4 and first.stdout.startswith("wait: broker 3 is missing"), (
                first.stdout + first.stderr
            )

            def healed() -> bool:
                r = run_cli("rebalance", *flags, env=env, cwd=tmp_path)
                assert r.returncode in (0, 4), r.stdout + r.stderr
                seen.append(r.stdout + r.stderr)
                # the end: a tick finds nothing left to move (or, 3 forgotten, balanced) and no plan stored
                end = "plan: nothing to move" in r.stdout or r.stdout.startswith("balanced:")
                return r.returncode == 0 and end

            wait_until(healed, timeout=120, interval=1, message=lambda: f"healed: {seen[-4:]}")
            assert any("heal: broker 3 has been missing for" in s for s in seen), seen
            _check_healed(kc.bootstrap, topic, values)
            dropped = [x for x in seen if "broker 3 is dead: the throttle keys this tool set on it" in x]
            assert len(dropped) == (1 if leftover else 0), seen
            assert replayed_record(record_messages(kc.bootstrap)) == EMPTY
        # broker 3 started again (registered, unfenced), empty of the topic: the next ticks fill it
        again: list[str] = []

        def refilled() -> bool:
            r = run_cli("rebalance", *flags, env=env, cwd=tmp_path)
            assert r.returncode in (0, 4), r.stdout + r.stderr
            again.append(r.stdout + r.stderr)
            return r.returncode == 0 and r.stdout.startswith("balanced:")

        wait_until(refilled, timeout=300, interval=1, message=lambda: f"refilled: {again[-3:]}")
        assert any("rebalance: broker 3 holds no replica" in x for x in again), again
        _check_refilled(kc.bootstrap, topic, values, leftover)
    finally:
        with topic_store(kc.bootstrap) as store, contextlib.suppress(Exception):
            store.delete()
        _forget_ledger(kc.bootstrap)
