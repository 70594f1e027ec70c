"""Issue 25's faults of a stored plan's step on KRaft 4.3.1 through the admin API alone (the plan stored in the
record topic __reassign_cli_plan), on the fault suite's own KRaft cluster ($CLUSTER_DIR-faults-kraft, the
fixtures of test_kraft_faults.py): the target broker stopped mid-plan holds the step, which carries on once
it is back. Ends with the fault suite's end-state check (assert_clean) and the stored plan gone."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from tests.clusters import ExtraCluster
from tests.faults import test_kraft_faults as kf
from tests.faults.kraft_support import active_controller, assert_clean
from tests.helpers import run_cli, wait_until
from tests.integration.kraft_support import Admin
from tests.integration.reassign_support import produce, write_plan
from tests.integration.stored_plan_worker import topic_store

ka = kf.ka  # the admin client of the fault suite's KRaft cluster (a fixture; kc: tests/faults/conftest.py)
OPERATOR = kf.OPERATOR
ENV: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}


def _steps_until_done(words: list[str], cwd: Path) -> None:
    last: list[Any] = []

    def step() -> bool:
        r = run_cli(*words, env=ENV, cwd=cwd)
        last[:] = [r]
        assert r.returncode in (0, 4), r.stderr
        assert "2 moving" not in r.stderr and "3 moving" not in r.stderr
        return r.returncode == 0

    wait_until(step, timeout=600, interval=1, message=lambda: f"the stored plan done: {last[0].stderr}")


def test_the_target_broker_stopped_mid_plan_holds_then_carries_on(
    kc: ExtraCluster,
    ka: Admin,
    tmp_path: Path,
) -> None:
    controller = active_controller(kc)
    target = max(n for n in kc.broker_ids if n != controller)
    source = min(n for n in kc.broker_ids if n != target)
    topic, values = ka.make_topic("step", {0: [source], 1: [source], 2: [source]}, messages=10)
    values += produce(kc.bootstrap, topic, 0, 1000)
    planned = {(topic, p): [target] for p in range(3)}
    plan = write_plan(tmp_path / "detach.json", planned)
    flags = ["--bootstrap-server", kc.bootstrap]
    try:
        first = run_cli(
            "execute", "--reassignment-json-file", str(plan), *flags, "--max-moves-per-broker", "1",
            "--throttle", "20000", "--detach", "--rollback-file", str(tmp_path / "rb.json"), env=ENV, cwd=tmp_path,
        )  # fmt: skip
        assert first.returncode == 0 and "Started 1 move" in first.stderr, first.stderr
        line = next(x for x in first.stdout.splitlines() if "Carry it on" in x)
        words = shlex.split(line.split("with: ", 1)[1])[1:]
        with kc.broker_stopped(target):
            held = run_cli(*words, env=ENV, cwd=tmp_path)
            assert held.returncode == 4 and "Started" not in held.stderr, held.stderr
            lines = [x for x in held.stderr.splitlines() if x.startswith("held: ")]
            assert len(lines) == 1, held.stderr
            assert lines[0].startswith(
                (f"held: broker {target} is fenced", f"held: broker {target} is not registered")
            )
        _steps_until_done(words, tmp_path)
        with topic_store(kc.bootstrap) as store:
            assert store.read() is None
        assert_clean(ka, kc, planned, {topic: values}, OPERATOR)
    finally:
        with topic_store(kc.bootstrap) as store:
            if store.read() is not None:
                store.delete()


def test_a_stepper_killed_9_after_each_write_of_a_step(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    """As tests/faults/test_step_faults.py's test of that name, through the admin API alone: each step killed
    one write later than the one before until a step runs whole, then the final step after its lease, its
    clear and its delete. Every move submitted exactly once, never two at once; the end-state check."""
    import re
    import signal
    import subprocess

    from tests.helpers import PYTHON, REPO

    topic, values = ka.make_topic("kill", {0: [1], 1: [1], 2: [1]}, messages=10)
    values += produce(kc.bootstrap, topic, 0, 1000)
    planned = {(topic, p): [3] for p in range(3)}
    plan = write_plan(tmp_path / "detach.json", planned)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    submitted: list[str] = [f"{topic}-0"]
    killed_at: list[tuple[int, str]] = []
    every = sorted(f"{topic}-{p}" for p in range(3))

    def run(n: int, words: list[str]) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(
            [PYTHON, "-m", "tests.faults.step_kill", str(n), "--", *words],
            env=env, cwd=tmp_path, text=True, capture_output=True, timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        submitted.extend(x for m in re.findall(r"^SUBMITTED (\S+)", r.stderr, re.M) for x in m.split(","))
        assert len(ka.reassignments()) <= 1, r.stderr
        if r.returncode == -signal.SIGKILL:
            k, name = re.findall(r"^KILLED (\d+) (\S+)", r.stderr, re.M)[-1]
            killed_at.append((int(k), name))
        else:
            assert r.returncode == 4 and "2 moving" not in r.stderr, r.stderr
        return r

    try:
        first = run_cli(
            "execute", "--reassignment-json-file", str(plan), "--bootstrap-server", kc.bootstrap,
            "--max-moves-per-broker", "1", "--throttle", "400000", "--detach",
            "--rollback-file", str(tmp_path / "rb.json"), env=ENV, cwd=tmp_path,
        )  # fmt: skip
        assert first.returncode == 0 and "Started 1 move" in first.stderr, first.stderr
        line = next(x for x in first.stdout.splitlines() if "Carry it on" in x)
        words = shlex.split(line.split("with: ", 1)[1])[1:]
        n = 1
        for _ in range(40):
            r = run(n, words)
            if sorted(set(submitted)) == every:
                break
            n = n + 1 if r.returncode == -signal.SIGKILL else 1
        assert sorted(set(submitted)) == every, r.stderr
        wait_until(lambda: not ka.reassignments(), timeout=300, message="the last move ended")
        final = [run(k, words).stderr for k in (1, 2, 3)]
        assert killed_at[-3:] == [(1, "replace"), (2, "clear"), (3, "delete")], final
        last = run_cli(*words, env=ENV, cwd=tmp_path)
        assert last.returncode == 0 and "No plan is stored in the cluster" in last.stderr, last.stderr
        assert sorted(submitted) == every, submitted
        names = {name for _, name in killed_at}
        assert {(1, "replace"), (2, "replace")} <= set(killed_at) and {"throttles", "submit"} <= names
        assert_clean(ka, kc, planned, {topic: values}, OPERATOR)
    finally:
        with topic_store(kc.bootstrap) as store:
            if store.read() is not None:
                store.delete()
