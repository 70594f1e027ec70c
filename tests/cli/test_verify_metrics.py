"""verify --metrics-file where no cluster is needed: a verify that fails still writes its exit code and
time; a directory that does not exist is a usage error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.unit.test_metrics import parse, plan_key


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
    assert got["kafka_reassign_verify_exit_code"] == {plan_key(plan): 1}
    assert "kafka_reassign_verify_partitions" not in got
    # a directory that does not exist: a usage error before anything else, nothing written
    r = subprocess.run(
        [sys.executable, "-m", "reassign_cli", "verify", "--reassignment-json-file", str(plan),
         "--zookeeper", "127.0.0.1:1", "--metrics-file", str(tmp_path / "no" / "v.prom")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and "does not exist" in r.stderr
    assert not (tmp_path / "no").exists()


def _verify(env: dict[str, str], *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassign_cli", "verify", "--zookeeper", "127.0.0.1:1", "--zk-timeout", "0.5",
         *map(str, args)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def test_plans_of_one_name_and_operator_labels(tmp_path: Path) -> None:
    """Two plans named proposed.json (as generate --output-dir writes them) in two directories: their
    series differ by path and digest; --metrics-label adds the operator's labels; misuse is exit 2."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    keys = []
    for d, p in (("a", 0), ("b", 1)):
        plan = tmp_path / d / "proposed.json"
        plan.parent.mkdir()
        plan.write_text(f'{{"version":1,"partitions":[{{"topic":"t","partition":{p},"replicas":[1]}}]}}')
        prom = tmp_path / f"{d}.prom"
        r = _verify(
            env, "--reassignment-json-file", plan, "--metrics-file", prom, "--metrics-label", "cluster=eu1"
        )
        assert r.returncode == 1, r.stderr
        got = parse(prom.read_text())["kafka_reassign_verify_exit_code"]
        assert got == {plan_key(plan, cluster="eu1"): 1}
        keys.append(plan_key(plan, cluster="eu1"))
    assert keys[0] != keys[1]
    for bad in (["--metrics-label", "plan=x"], ["--metrics-label", "no-equals"]):
        r = _verify(env, "--reassignment-json-file", plan, "--metrics-file", tmp_path / "c.prom", *bad)
        assert r.returncode == 2 and "--metrics-label" in r.stderr, r.stderr
    r = _verify(env, "--reassignment-json-file", plan, "--metrics-label", "a=b")
    assert r.returncode == 2 and "--metrics-label needs --metrics-file" in r.stderr, r.stderr
    assert not (tmp_path / "c.prom").exists()
