"""verify --metrics-file where no cluster is needed: a verify that fails still writes its exit code and
time; a directory that does not exist is a usage error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.unit.test_metrics import parse


def test_unreachable_zookeeper_still_writes_the_file(tmp_path: Path) -> None:
    plan = tmp_path / "p.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}')
    prom = tmp_path / "v.prom"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    r = subprocess.run(
        [sys.executable, "-m", "reassign_cli", "verify", "--reassignment-json-file", str(plan),
         "--zookeeper", "127.0.0.1:1", "--zk-timeout", "0.5", "--metrics-file", str(prom)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    got = parse(prom.read_text())
    assert got["kafka_reassign_verify_exit_code"] == {(("plan", "p.json"),): 1}
    assert "kafka_reassign_verify_partitions" not in got
    # a directory that does not exist: a usage error before anything else, nothing written
    r = subprocess.run(
        [sys.executable, "-m", "reassign_cli", "verify", "--reassignment-json-file", str(plan),
         "--zookeeper", "127.0.0.1:1", "--metrics-file", str(tmp_path / "no" / "v.prom")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and "does not exist" in r.stderr
    assert not (tmp_path / "no").exists()
