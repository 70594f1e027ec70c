"""Ctrl-C during a large `generate`: exit 130, "Interrupted.", and no partial file left in --output-dir.

The signal is sent once the command is observably writing (its temporary file exists in the output
directory, or its first bytes reached stdout), never after a fixed sleep."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import signal
import subprocess
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import PYTHON, REPO

TOPICS, PARTITIONS, BROKERS = 40_000, 10, 30  # 400k partitions: writing takes seconds, not milliseconds


def _gen_snapshot() -> ModuleType:
    path = str(REPO / "scripts" / "gen_snapshot")
    loader = importlib.machinery.SourceFileLoader("gen_snapshot", path)
    spec = importlib.util.spec_from_loader("gen_snapshot", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def big_snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    gen = _gen_snapshot()
    d = tmp_path_factory.mktemp("big")
    snap, topics = d / "snap.json", d / "topics.json"
    snap.write_bytes(gen.snapshot_bytes(TOPICS, PARTITIONS, 3, BROKERS, None, 1))
    names = gen.topic_names(TOPICS)
    topics.write_text('{"topics":[' + ",".join(f'{{"topic":"{t}"}}' for t in names) + '],"version":1}')
    return snap, topics


def _start(
    snap: Path, topics: Path, *extra: str, stdout: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop("KAFKA_REASSIGN_ZOOKEEPER", None)
    cmd = [PYTHON, "-m", "reassign_cli", "generate", "--snapshot", str(snap)]
    cmd += ["--topics-to-move-json-file", str(topics), "--seed", "3", *extra]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE, env=env)


def _interrupt(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


def test_ctrl_c_while_writing_files_exits_130_and_leaves_nothing(
    big_snapshot: tuple[Path, Path], tmp_path: Path
) -> None:
    out_dir = tmp_path / "plan"
    proc = _start(*big_snapshot, "--output-dir", str(out_dir), "-q")
    try:
        # The observable state: a temporary file of the plan exists in the output directory.
        while proc.poll() is None and not (out_dir.is_dir() and any(out_dir.glob(".*.partial"))):
            time.sleep(0.002)
        assert proc.poll() is None, "generate finished before it was seen writing"
        rc, err = _interrupt(proc)
    finally:
        proc.kill()
    assert rc == 130, err
    assert err.splitlines()[-1] == "Interrupted."
    assert sorted(p.name for p in out_dir.iterdir()) == []  # no current.json, proposed.json nor temp file


def test_ctrl_c_while_printing_exits_130(big_snapshot: tuple[Path, Path]) -> None:
    proc = _start(*big_snapshot, "-q", stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        first = proc.stdout.read(len("Current partition replica assignment\n"))
        assert first == b"Current partition replica assignment\n"  # it is writing stdout now
        rc, err = _interrupt(proc)  # communicate() drains the rest of stdout meanwhile
    finally:
        proc.kill()
    assert rc == 130, err
    assert err.splitlines()[-1] == "Interrupted."
