"""What every fault test needs: the CLI as a real child process that can be killed with SIGKILL, a wait
on a line of its stderr, and the end-state check that every recovery must pass."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests.helpers import PYTHON, REPO, wait_until
from tests.integration.reassign_support import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
    REASSIGN,
    RECORD,
    config,
    get_json,
)

SLOW = "10000"  # B/s: the few MB a test writes take minutes, so a move is caught in the middle
FAST = "1000000000"
RECORDS = 3000  # 1 KB records into a moving partition (about 1 MB is copied at once, the rest throttled)


class Child:
    """`kafka-reassign ARGS` running in the background; its stderr is read line by line as it comes."""

    def __init__(
        self,
        zookeeper: str | None,
        cwd: Path,
        *args: str | os.PathLike[str],
        bootstrap: str | None = None,
        module: str = "reassign_cli",
    ) -> None:
        """With `bootstrap` (and no zookeeper) the child talks to the admin API only; `module` runs
        another entry point (a test runner wrapping the CLI, importable from the repository root)."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if zookeeper is not None:
            env["KAFKA_REASSIGN_ZOOKEEPER"] = zookeeper
        if bootstrap is not None:
            for name in ("KAFKA_REASSIGN_ZOOKEEPER", "KAFKA_REASSIGN_COMMAND_CONFIG"):
                env.pop(name, None)
            env["KAFKA_REASSIGN_BOOTSTRAP"] = bootstrap
        if module != "reassign_cli":
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [PYTHON, "-m", module, *map(str, args)],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.err: list[str] = []
        self.out = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)

    def wait_for_line(self, text: str, timeout: float = 120) -> None:
        wait_until(
            lambda: any(text in line for line in self.err) or self.proc.poll() is not None,
            timeout=timeout,
            interval=0.01,
            message=lambda: f"{text!r} on the child's stderr:\n{''.join(self.err)}",
        )
        assert any(text in line for line in self.err), f"exited {self.proc.returncode}:\n{''.join(self.err)}"

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.finish(timeout=30)
        assert self.proc.returncode == -signal.SIGKILL

    def finish(self, timeout: float = 300) -> int:
        # stdout here, stderr by the reader thread only (communicate() would take stderr's tail from it)
        assert self.proc.stdout is not None
        self.out = self.proc.stdout.read()
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=30)
        return self.proc.returncode

    @property
    def stderr(self) -> str:
        return "".join(self.err)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error: ")]


def assert_recovered(
    zk: Any,
    broker_ids: list[int],
    planned: Mapping[tuple[str, int], list[int]],
    produced: Mapping[str, list[bytes]],
    consume_all: Callable[[str], list[bytes]],
) -> None:
    """The end state every documented recovery must reach: no trigger, no record, no throttle key of ours
    on any broker or topic, every partition on its planned replicas with nothing moving, and every record
    that was produced consumed intact."""
    assert not zk.exists(REASSIGN), get_json(zk, REASSIGN)
    assert not zk.exists(RECORD), get_json(zk, RECORD)
    for b in broker_ids:
        cfg = config(zk, "brokers", b) or {}
        assert not {LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE} & set(cfg), (b, cfg)
    for topic in {t for t, _ in planned}:
        cfg = config(zk, "topics", topic) or {}
        assert not {LEADER_REPLICAS, FOLLOWER_REPLICAS} & set(cfg), (topic, cfg)
    for (topic, p), replicas in planned.items():
        doc = get_json(zk, f"/brokers/topics/{topic}")
        assert doc["partitions"][str(p)] == replicas, (topic, p, doc)
        assert not doc.get("adding_replicas", {}).get(str(p)), doc
        assert not doc.get("removing_replicas", {}).get(str(p)), doc
    for topic, values in produced.items():
        assert sorted(consume_all(topic)) == sorted(values), topic
