"""Issue 30 items 3, 17 and 22 on the real ZooKeeper-mode cluster: a paced run that has work left (Ctrl-C
between its batches, or a window between two moves) is in progress for verify (exit 4), its throttles stay,
and the `execute --resume` line verify prints can be pasted as it is and runs the plan to its end. A resume
with a pace file kept for other plan bytes is refused with nothing written."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.faults.support import Child
from tests.helpers import PYTHON
from tests.integration.reassign_support import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    Mover,
    await_idle,
    config,
    get_json,
    get_raw,
    produce,
)
from tests.unit.test_metrics import parse, statuses

RATE = "100000"  # B/s: after the first ~2 MB a follower gets at once, 2 MB more take about 20 s
BIG = 4000  # 1 KB records into partition 0: its move is still running when the test interrupts it


def _env_without_ours() -> dict[str, str]:
    """The pasted command gets nothing from the environment: its flags alone must do."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}


def _pasted(stderr: str, after: str) -> list[str]:
    """The command printed after `after` on one line of stderr, split as a shell would."""
    line = next(line for line in stderr.splitlines() if after in line)
    words = shlex.split(line.split(after, 1)[1].rstrip(")"))
    assert words[:3] == ["kafka-reassign", "execute", "--resume"], line
    return [PYTHON, "-m", "reassign_cli", *words[1:]]


@pytest.mark.parametrize(
    ("option", "kind"), [(["--max-moves-per-broker", "1"], "paced"), (["--batch-size", "1"], "batched")]
)
def test_ctrl_c_in_a_batched_paced_run_then_verify_then_its_pasted_resume(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, option: list[str], kind: str
) -> None:
    topic = make_topic({0: [1], 1: [1], 2: [1]})
    produce(cluster.bootstrap, topic, 0, BIG)
    for p in (1, 2):
        produce(cluster.bootstrap, topic, p, 10)
    targets = {(topic, p): [3] for p in range(3)}
    plan = mover.plan("paced.json", targets)
    kept = Path(f"{plan}.pacing.json")
    mover.plans.append((plan, [topic]))
    await_idle(zk)
    zk_flags = ["--zookeeper", cluster.zookeeper]
    # Through ZooKeeper alone, one move per broker: three batches of one (broker 1 leads all three); or
    # --batch-size 1, the same batches.
    child = Child(
        cluster.zookeeper, mover.tmp, "execute", "--reassignment-json-file", plan, *zk_flags, *option,
        "--throttle", RATE, "--poll-interval", "0.5",
    )  # fmt: skip
    try:
        child.wait_for_line("Batch 1/3")
        child.wait_for_line("partitions done")  # the wait for batch 1 polls: interrupt it there
        child.proc.send_signal(signal.SIGINT)
        assert child.finish(timeout=60) == 130, "".join(child.err)
        err = "".join(child.err)
        assert (
            "Interrupted while waiting for batch 1/3; it keeps running in the cluster, batches 2-3 "
            "(2 partitions) not started"
        ) in err
        resume = (
            f"kafka-reassign execute --resume --reassignment-json-file {plan} {' '.join(option)} "
            f"--throttle {RATE} --zookeeper {cluster.zookeeper}"
        )
        assert f"Continue with: {resume} (or check with: " in err, err
        assert kept.exists()

        prom = mover.tmp / "verify.prom"
        v = mover.cli("verify", "--reassignment-json-file", plan, *zk_flags, "--metrics-file", prom)
        assert v.returncode == 4, v.stdout + v.stderr
        lines = [x for x in v.stdout.splitlines() if x.startswith("Reassignment of partition")]
        assert lines[0] in (
            f"Reassignment of partition {topic}-0 is still in progress.",
            f"Reassignment of partition {topic}-0 is completed.",
        ), v.stdout
        assert lines[1:] == [
            f"Reassignment of partition {topic}-{p} is still in progress (queued: not started yet)."
            for p in (1, 2)
        ], v.stdout
        assert "Clearing" not in v.stdout and "orphan" not in v.stderr.lower()
        assert f"Throttles kept: 2 partitions are queued, not started yet by the {kind} run" in v.stderr
        got = statuses(parse(prom.read_text()))  # item 10b: queued, not not_as_planned
        assert got["queued"] == 2 and got["not_as_planned"] == 0, got
        assert f"continue with: {resume}" in v.stderr, v.stderr
        # the throttles of the run stay: the broker rates and the list of the partition that moves
        for b in (1, 3):
            assert (config(zk, "brokers", b) or {}).get(FOLLOWER_RATE) == RATE
        assert "0:3" in (config(zk, "topics", topic) or {}).get(FOLLOWER_REPLICAS, "").split(",")

        # verify's line, pasted as it is, with nothing of ours in the environment: it runs to the end
        r = subprocess.run(
            _pasted(v.stderr, "continue with: "), cwd=mover.tmp, env=_env_without_ours(),
            capture_output=True, text=True, timeout=540, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert "Waiting for the batch already running" in r.stderr or f"{topic}-0" in r.stderr
        assert not kept.exists()
        for p in range(3):
            assert get_json(zk, f"/brokers/topics/{topic}")["partitions"][str(p)] == [3]
        for b in (1, 2, 3):
            cfg = config(zk, "brokers", b) or {}
            assert LEADER_RATE not in cfg and FOLLOWER_RATE not in cfg, (b, cfg)
        assert FOLLOWER_REPLICAS not in (config(zk, "topics", topic) or {})
        done = mover.verify(plan)
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
        kept.unlink(missing_ok=True)  # the Mover's verify then clears what a failure left


@pytest.mark.timeout(900)
def test_a_verify_between_two_moves_of_a_window_keeps_the_throttles(
    cluster: Any,
    make_topic: Any,
    zk: Any,
    mover: Mover,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The window (admin API, one move per broker) starts its next move only after a verify has run, at
    the instant nothing of the plan moves: that verify must say in progress (4) and leave every throttle;
    the move then starts with its partition in the lists."""
    from reassign_cli.backends.admin.backend import AdminBackend
    from reassign_cli.cli import main

    topic = make_topic({0: [1], 1: [1], 2: [1]}, messages=20)
    plan = mover.plan("window.json", {(topic, p): [3] for p in range(3)})
    kept = Path(f"{plan}.pacing.json")
    bootstrap = ["--bootstrap-server", cluster.bootstrap]
    await_idle(zk)
    seen: list[tuple[int, str, dict[str, str], dict[str, str]]] = []
    real_add = AdminBackend.add_reassignment

    def verify_first(self: AdminBackend, entries: Any) -> None:
        assert not any(self.admin.list_partition_reassignments())  # the gap: nothing of it moves
        v = subprocess.run(
            [PYTHON, "-m", "reassign_cli", "verify", "--reassignment-json-file", str(plan), *bootstrap],
            cwd=mover.tmp, env=_env_without_ours(), capture_output=True, text=True, timeout=300,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        lists = config(zk, "topics", topic) or {}
        seen.append((v.returncode, v.stdout + v.stderr, dict(config(zk, "brokers", 3) or {}), dict(lists)))
        real_add(self, entries)
        # the move started with its partition listed (the window wrote the lists before it)
        p = entries[0].partition
        assert f"{p}:3" in (config(zk, "topics", topic) or {}).get(FOLLOWER_REPLICAS, "").split(",")

    def clear_after() -> None:
        kept.unlink(missing_ok=True)
        await_idle(zk)
        r = subprocess.run(
            [PYTHON, "-m", "reassign_cli", "verify", "--reassignment-json-file", str(plan), *bootstrap],
            cwd=mover.tmp, env=_env_without_ours(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert r.returncode in (0, 5), r.stderr

    mover.finally_do.append(clear_after)
    monkeypatch.setattr(AdminBackend, "add_reassignment", verify_first)
    for name in [k for k in os.environ if k.startswith("KAFKA_REASSIGN_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(mover.tmp)
    with pytest.raises(SystemExit) as exc:
        main(
            ["execute", "--reassignment-json-file", str(plan), *bootstrap, "--max-moves-per-broker", "1",
             "--throttle", RATE, "--poll-interval", "0.3", "--timeout", "600"]
        )  # fmt: skip
    assert exc.value.code == 0, capsys.readouterr().err
    # every start after a verify: the first inside the create of the first move (nothing started yet),
    # then one in each gap between two moves
    assert len(seen) == 3, seen
    for code, out, rates, lists in seen:
        assert code == 4, out
        assert "queued, not started yet by the paced run" in out and "Clearing" not in out, out
        assert rates.get(FOLLOWER_RATE) == RATE, out
        assert FOLLOWER_REPLICAS in lists, out
    assert not kept.exists()
    for b in (1, 3):
        assert FOLLOWER_RATE not in (config(zk, "brokers", b) or {})


def test_a_resume_with_a_pace_file_of_other_plan_bytes_is_refused(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1], 1: [1]}, messages=10)
    plan = mover.plan("edited.json", {(topic, 0): [3], (topic, 1): [3]})
    kept = Path(f"{plan}.pacing.json")
    other = mover.plan("other.json", {(topic, 0): [2], (topic, 1): [2]})
    # the pace kept for other bytes (the plan was edited since it started, or the file was copied)
    kept.write_bytes(
        b'{"max_moves_per_broker":1,"order":null,"plan_sha256":"'
        + __import__("hashlib").sha256(other.read_bytes()).hexdigest().encode()
        + b'","version":1}\n'
    )
    await_idle(zk)
    before = {
        p: get_raw(zk, p) for p in (f"/config/topics/{topic}", "/config/brokers/1", "/config/brokers/3")
    }
    with contextlib.ExitStack() as stack:
        stack.callback(kept.unlink, missing_ok=True)
        r = mover.execute(plan, "--resume", "--throttle", RATE)
        assert r.returncode == 3, r.stderr
        err = [line for line in r.stderr.splitlines() if line.strip()]
        assert len(err) == 1 and re.match(
            rf"Error: Cannot resume: {re.escape(str(kept))} was kept for other plan bytes .*nothing was started",
            err[0],
        ), r.stderr
        assert r.stdout == ""
        assert {p: get_raw(zk, p) for p in before} == before  # nothing written
        assert get_json(zk, f"/brokers/topics/{topic}")["partitions"] == {"0": [1], "1": [1]}
        # a cap given instead: used, said, and the pace file now this plan's
        r = mover.execute(plan, "--resume", "--max-moves-per-broker", "1", "--throttle", RATE)
        assert r.returncode == 0, r.stderr
        assert f"Not using {kept}: it was kept for other plan bytes" in r.stderr
        assert not kept.exists()
