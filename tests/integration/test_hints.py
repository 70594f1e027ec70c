"""Suggested commands can be pasted (issue 30 item 4): the hint `execute --wait --timeout` prints is run
through a shell that has none of the KAFKA_REASSIGN_* variables, and reaches the same cluster.

The execute is given its connection as flags, a plan name and a command-config path that need quoting;
the hint must carry them (and nothing from the environment) and exit as verify does for a move in
progress: 4."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import PYTHON
from tests.integration.reassign_support import Mover, await_idle, produce, reassigning

SLOW = "10000"  # B/s: the move stays in progress for minutes
RECORDS = 5000


def _hint(stderr: str, lead: str) -> str:
    (line,) = [x for x in stderr.splitlines() if lead in x]
    return line.split(lead, 1)[1].strip()


def test_the_verify_hint_runs_as_printed(cluster: Any, make_topic: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2]})
    produce(cluster.bootstrap, topic, 0, RECORDS)
    plans = mover.tmp / "my plans"
    plans.mkdir()
    plan = mover.plan("my plans/move it's.json", {(topic, 0): [3, 2]})
    config = mover.tmp / "client config" / "admin.properties"
    config.parent.mkdir()
    config.write_text("security.protocol=PLAINTEXT\n")
    await_idle(zk)
    r = mover.execute(
        plan,
        "--zookeeper",
        cluster.zookeeper,
        "--bootstrap-server",
        cluster.bootstrap,
        "--command-config",
        str(config),
        "--throttle",
        SLOW,
        "--wait",
        "--timeout",
        "3",
        "--poll-interval",
        "1",
    )
    assert r.returncode == 4, r.stderr
    hint = _hint(r.stderr, "Check it with:")
    assert shlex.split(hint) == [
        "kafka-reassign",
        "verify",
        "--reassignment-json-file",
        str(plan),
        "--zookeeper",
        cluster.zookeeper,
        "--bootstrap-server",
        cluster.bootstrap,
        "--command-config",
        str(config),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    env["PATH"] = f"{Path(PYTHON).parent}{os.pathsep}{env.get('PATH', '')}"
    pasted = subprocess.run(
        ["bash", "-c", hint],
        env=env,
        cwd=mover.tmp,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert pasted.returncode == 4, pasted.stderr  # in progress: the throttles stay
    assert f"Reassignment of partition {topic}-0 is still in progress" in pasted.stdout
    assert reassigning(zk, topic)
