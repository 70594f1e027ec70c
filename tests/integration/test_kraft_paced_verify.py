"""Issue 30 items 3, 10b and 24 on a KRaft 4.x cluster, through the admin API alone: Ctrl-C in a paced window,
then verify says in progress (exit 4; the moves not started are "queued", also in --metrics-file), keeps the
throttles and prints an `execute --resume` line with the connection flags given (a --command-config is named,
never read into the line); pasted as it is, it runs the plan to its end. And a verify of a plan not run yet
asks for the metadata once, without waiting for partitions that cannot be trailing."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import ExtraCluster
from tests.faults.support import Child
from tests.helpers import PYTHON
from tests.integration.kraft_support import FR, FREP, Admin, cli, eventually, idle, plan
from tests.unit.test_metrics import parse, statuses

RATE = "100000"  # B/s: after the first ~2 MB a follower gets at once, 2 MB more take about 20 s


def _env_without_ours() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}


def test_ctrl_c_in_a_paced_window_then_verify_then_its_pasted_resume(
    kc: ExtraCluster, ka: Admin, tmp_path: Path
) -> None:
    topic, _ = ka.make_topic("paced", {0: [1], 1: [1], 2: [1]})
    from tests.integration.reassign_support import produce

    produce(kc.bootstrap, topic, 0, 4000)
    for p in (1, 2):
        produce(kc.bootstrap, topic, p, 10)
    move = plan(tmp_path / "paced.json", {(topic, p): [3] for p in range(3)})
    kept = Path(f"{move}.pacing.json")
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=PLAINTEXT\n")
    flags = ["--bootstrap-server", kc.bootstrap, "--command-config", str(config)]
    child = Child(
        None, tmp_path, "execute", "--reassignment-json-file", move, *flags, "--max-moves-per-broker", "1",
        "--order", "as-planned", "--throttle", RATE, "--poll-interval", "0.5", bootstrap=kc.bootstrap,
    )  # fmt: skip
    try:
        child.wait_for_line("1 moving, 2 queued")
        child.proc.send_signal(signal.SIGINT)
        assert child.finish(timeout=60) == 130, "".join(child.err)
        err = "".join(child.err)
        assert (
            "Interrupted while pacing; 1 move started keeps running in the cluster, 2 moves are not started"
            in err
        )
        resume = shlex.join(
            ["kafka-reassign", "execute", "--resume", "--reassignment-json-file", str(move),
             "--max-moves-per-broker", "1", "--throttle", RATE, *flags]
        )  # fmt: skip
        assert f"Continue with: {resume} (or check with: " in err, err

        prom = tmp_path / "verify.prom"
        v = subprocess.run(
            [PYTHON, "-m", "reassign_cli", "verify", "--reassignment-json-file", str(move), *flags,
             "--metrics-file", str(prom)],
            cwd=tmp_path, env=_env_without_ours(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert v.returncode == 4, v.stdout + v.stderr
        assert [x for x in v.stdout.splitlines() if x.startswith("Reassignment")][1:] == [
            f"Reassignment of partition {topic}-{p} is still in progress (queued: not started yet)."
            for p in (1, 2)
        ], v.stdout
        assert "Clearing" not in v.stdout
        assert f"continue with: {resume}" in v.stderr, v.stderr
        got = statuses(parse(prom.read_text()))
        assert got["queued"] == 2 and got["not_as_planned"] == 0, got
        # the run's throttles stay on the brokers and the moving partition's list
        for b in (1, 3):
            assert ka.configs("brokers", b).get(FR) == RATE
        assert "0:3" in ka.configs("topics", topic).get(FREP, "").split(",")

        line = next(x for x in v.stderr.splitlines() if "continue with: " in x)
        words = shlex.split(line.split("continue with: ", 1)[1])
        r = subprocess.run(
            [PYTHON, "-m", "reassign_cli", *words[1:]], cwd=tmp_path, env=_env_without_ours(),
            capture_output=True, text=True, timeout=540, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert not kept.exists()
        idle(ka)
        for p in range(3):
            eventually(lambda p=p: ka.partitions(topic)[p][0], [3], f"{topic}-{p} on 3")
        assert ka.throttles([1, 2, 3], [topic]) == {f"broker {b}": {} for b in (1, 2, 3)} | {
            f"topic {topic}": {}
        }
        done = cli(kc.bootstrap, "verify", "--reassignment-json-file", move, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
        kept.unlink(missing_ok=True)
        idle(ka)
        cli(kc.bootstrap, "verify", "--reassignment-json-file", move, cwd=tmp_path)


def test_verify_of_a_plan_not_run_yet_asks_for_metadata_once(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Item 24: before, every partition neither moving nor at its target was waited for, 10 s and about
    100 Metadata requests. Counted here on the real client, in-process."""
    from reassign_cli.backends.admin.backend import AdminBackend
    from reassign_cli.cli import main

    topic, _ = ka.make_topic("unrun", {0: [1], 1: [2]})
    move = plan(tmp_path / "unrun.json", {(topic, 0): [3], (topic, 1): [3]})
    asked: list[Any] = []
    real = AdminBackend._describe

    def counting(self: AdminBackend, topics: Any, partition_state: bool) -> Any:
        asked.append(topics)
        return real(self, topics, partition_state)

    monkeypatch.setattr(AdminBackend, "_describe", counting)
    for name in [k for k in os.environ if k.startswith("KAFKA_REASSIGN_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--reassignment-json-file", str(move), "--bootstrap-server", kc.bootstrap])
    out = capsys.readouterr().out
    assert exc.value.code == 5, out
    # the plan's topic once, and the whole cluster once for the clear (which finds nothing to clear)
    assert [t for t in asked if t is not None] == [[topic]], asked
