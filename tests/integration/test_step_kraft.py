"""Issue 25 on KRaft 4.3.1 through the admin API alone: `execute --detach` stores the plan in the topic
__reassign_cli_plan and starts the first move; then only separate `verify` processes, from another directory
with no plan file, carry it on until exit 0. At the end: nothing reassigning, no throttle of ours left, the
operator's own broker rate back exactly, replicas as planned, the stored plan gone, every message read back."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import ExtraCluster
from tests.helpers import consume_all, run_cli, wait_until
from tests.integration.kraft_support import FR, FREP, LR, LREP, Admin, eventually
from tests.integration.stored_plan_worker import topic_store

RATE = "400000"
OPERATOR_RATE = "123456789"


def _forget(bootstrap: str) -> None:
    with topic_store(bootstrap) as store, contextlib.suppress(Exception):
        store.delete()


@pytest.mark.timeout(900)
def test_detach_then_cron_verifies_from_elsewhere_until_done(
    kc: ExtraCluster, ka: Admin, tmp_path: Path
) -> None:
    topic, values = ka.make_topic("detach", {0: [1], 1: [1], 2: [1]}, messages=10)
    from tests.integration.reassign_support import produce, write_plan

    values += produce(kc.bootstrap, topic, 0, 1000)
    plan = write_plan(tmp_path / "detach.json", {(topic, p): [3] for p in range(3)})
    ka.alter("brokers", 3, {FR: OPERATOR_RATE})
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    flags = ["--bootstrap-server", kc.bootstrap]
    try:
        first = run_cli(
            "execute", "--reassignment-json-file", str(plan), *flags, "--max-moves-per-broker", "1",
            "--throttle", RATE, "--detach", "--rollback-file", str(tmp_path / "rb.json"), env=env, cwd=tmp_path,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        assert "Started 1 move" in first.stderr and "1 moving, 2 queued, 0 done of 3" in first.stderr
        line = next(x for x in first.stdout.splitlines() if "Carry it on" in x)
        words = shlex.split(line.split("with: ", 1)[1])
        assert words[:2] == ["kafka-reassign", "verify"]
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        last: list[Any] = []

        def step() -> bool:
            r = run_cli(*words[1:], env=env, cwd=elsewhere)
            last[:] = [r]
            assert r.returncode in (0, 4), r.stderr
            assert "2 moving" not in r.stderr and "3 moving" not in r.stderr
            return r.returncode == 0

        wait_until(step, timeout=600, interval=1, message=lambda: f"the stored plan done: {last[0].stderr}")
        assert "The stored plan is done: 3 moves" in last[0].stderr
        assert not ka.reassignments()
        with topic_store(kc.bootstrap) as store:
            assert store.read() is None
        eventually(
            lambda: {p: r for p, (r, _, _) in ka.partitions(topic).items()},
            {0: [3], 1: [3], 2: [3]},
            "replicas",
        )
        assert not {k for k in ka.configs("topics", topic) if k in (LREP, FREP)}
        for b in (1, 2):
            assert not {k for k in ka.configs("brokers", b) if k in (LR, FR)}
        assert ka.configs("brokers", 3).get(FR) == OPERATOR_RATE and LR not in ka.configs("brokers", 3)
        assert sorted(consume_all(kc.bootstrap, topic, 60)) == sorted(values)
        none = run_cli(*words[1:], env=env, cwd=elsewhere)
        assert none.returncode == 0 and "No plan is stored in the cluster" in none.stderr
    finally:
        _forget(kc.bootstrap)
        ka.alter("brokers", 3, {FR: None})


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "pace",
    [["--max-moves-per-broker", "1", "--order", "as-planned"], ["--batch-size", "1"]],
    ids=["paced", "batch"],
)
def test_kill_9_of_a_foreground_paced_execute_then_verify_carries_on(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, pace: list[str]
) -> None:
    """A foreground paced execute (the window) and a foreground `--batch-size 1` execute (batches through
    the brokers: stored too) are killed -9 while their first move runs; `verify` alone carries it on."""
    from tests.faults.support import Child
    from tests.integration.reassign_support import produce, write_plan

    topic, values = ka.make_topic("killed", {0: [1], 1: [1], 2: [1]}, messages=10)
    # 5 MB: a follower's first fetch takes up to 1 MB a partition past the throttle, so 1 MB moved in under a
    # second, and a poll under load could miss the whole batch (CI, 2026-11-28); this takes ~13 s at RATE
    values += produce(kc.bootstrap, topic, 0, 5000)
    plan = write_plan(tmp_path / "paced.json", {(topic, p): [3] for p in range(3)})
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    flags = ["--bootstrap-server", kc.bootstrap]
    child = Child(
        None, tmp_path, "execute", "--reassignment-json-file", plan, *flags, *pace,
        "--throttle", RATE, "--poll-interval", "0.5", bootstrap=kc.bootstrap,
    )  # fmt: skip
    try:
        if pace[0] == "--batch-size":
            child.wait_for_line("Batch 1/3: 1 partition")
            wait_until(
                lambda: bool(ka.reassignments()),
                timeout=60,
                message=lambda: f"the first batch moving (exit {child.proc.poll()}):\n{''.join(child.err)}",
            )
        else:
            child.wait_for_line("1 moving, 2 queued")
        with topic_store(kc.bootstrap) as store:
            assert store.read() is not None  # stored before its first move
        child.kill9()
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        last: list[Any] = []

        def step() -> bool:
            r = run_cli("verify", *flags, env=env, cwd=elsewhere)
            last[:] = [r]
            assert r.returncode in (0, 4), r.stderr
            assert "2 moving" not in r.stderr and "3 moving" not in r.stderr
            return r.returncode == 0

        wait_until(step, timeout=600, interval=1, message=lambda: f"the stored plan done: {last[0].stderr}")
        assert not ka.reassignments()
        eventually(
            lambda: {p: r for p, (r, _, _) in ka.partitions(topic).items()},
            {0: [3], 1: [3], 2: [3]},
            "replicas",
        )
        assert not {k for k in ka.configs("topics", topic) if k in (LREP, FREP)}
        for b in (1, 2, 3):
            assert not {k for k in ka.configs("brokers", b) if k in (LR, FR)}
        assert sorted(consume_all(kc.bootstrap, topic, 60)) == sorted(values)
    finally:
        if child.proc.poll() is None:  # a failed wait: the child must not go on beside the next test
            child.kill9()
        _forget(kc.bootstrap)
