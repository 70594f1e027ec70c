"""A throttle change too large for one ZooKeeper transaction, cut by a real `kill -9` between two of its
transactions (tests/integration/split_runner.py makes the transactions small, so a synthetic cluster of
20 topics needs several). Whatever the cut: every throttle key of ours still set has its prior in the
record (record first when setting, last when clearing), and the next verify restores everything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reassign_cli.backends.zookeeper.record import HEAD, read_stored
from reassign_cli.core import throttle as th
from tests.integration.reassign_support import fake_cluster

ROOT = Path(__file__).resolve().parents[2]
TOPICS = [f"s-{i:02d}" for i in range(20)]
OPERATOR = {  # what the operator had before: kept or given back
    "/config/brokers/2": {th.LEADER_RATE: "777"},
    "/config/topics/s-05": {th.FOLLOWER_REPLICAS: "0:9", "retention.ms": "1000"},
}


def config(zk: Any, path: str) -> dict[str, str]:
    got = zk.exists(path)
    return json.loads(zk.get(path)[0])["config"] if got else {}


def paths() -> list[str]:
    return [f"/config/brokers/{b}" for b in (1, 2, 3)] + [f"/config/topics/{t}" for t in TOPICS]


def setup(zk: Any, tmp_path: Path) -> Path:
    fake_cluster(zk, {1: None, 2: None, 3: None}, {t: {"partitions": {0: [1, 2]}} for t in TOPICS})
    for path, cfg in OPERATOR.items():
        zk.ensure_path(path)
        zk.set(path, json.dumps({"version": 1, "config": cfg}).encode())
    plan = tmp_path / "plan.json"
    entries = [{"topic": t, "partition": 0, "replicas": [3, 2]} for t in TOPICS]
    plan.write_text(json.dumps({"version": 1, "partitions": entries}))
    return plan


def killed(zk_chroot: str, kill_after: int, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """kafka-reassign ARGS with small transactions, killed after `kill_after` of them (0: run to the end)."""
    env = {"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot, "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    cmd = [
        sys.executable,
        "-m",
        "tests.integration.split_runner",
        str(kill_after),
        *args,
        "--zk-timeout",
        "3",
    ]
    r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    if kill_after:
        assert r.returncode == -9, r.stderr
        assert f"transaction {kill_after} landed" in r.stderr
    return r


def assert_recorded(zk: Any) -> None:
    """Every throttle key of ours still set has a recorded prior (the record may hold more)."""
    stored = read_stored(lambda p: _get(zk, p), lambda p: zk.get_children(p) if zk.exists(p) else [])
    rec = stored.record()
    assert stored.parts, "the record should span several znodes here"
    for path in paths():
        entity, name = path.split("/")[2:]
        ours = {k: v for k, v in config(zk, path).items() if k in th.BROKER_KEYS + th.TOPIC_KEYS}
        ours = {k: v for k, v in ours.items() if OPERATOR.get(path, {}).get(k) != v}
        assert set(ours) <= set(rec[entity].get(name, {})), (path, ours, rec[entity].get(name))


def _get(zk: Any, path: str) -> tuple[bytes | None, int | None]:
    st = zk.exists(path)
    return (zk.get(path)[0], st.version) if st else (None, None)


def assert_restored(zk: Any) -> None:
    for path in paths():
        assert config(zk, path) == OPERATOR.get(path, {}), path
    assert zk.exists(HEAD) is None


@pytest.mark.parametrize("kill_after", [1, 2, 3])
def test_execute_killed_between_its_transactions(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path, kill_after: int
) -> None:
    plan = setup(fake, tmp_path)
    killed(
        zk_chroot,
        kill_after,
        "execute",
        "--reassignment-json-file",
        str(plan),
        "--throttle",
        "1000",
        cwd=tmp_path,
    )
    assert fake.exists("/admin/reassign_partitions") is None
    assert_recorded(fake)
    r = run_cli("verify", "--reassignment-json-file", plan, env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert r.returncode == 5, r.stderr
    assert "with nothing reassigning (an interrupted execute?); removing them" in r.stderr
    assert_restored(fake)


@pytest.mark.parametrize("kill_after", [1, 2, 3])
def test_verify_killed_between_its_transactions(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path, kill_after: int
) -> None:
    plan = setup(fake, tmp_path)
    env = {"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot}
    r = killed(
        zk_chroot, 0, "execute", "--reassignment-json-file", str(plan), "--throttle", "1000", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert "transaction 3 landed" in r.stderr  # several transactions, the record over several znodes
    # The controller's part, done by hand: every partition at its target, the trigger gone.
    for t in TOPICS:
        fake.set(f"/brokers/topics/{t}", json.dumps({"version": 1, "partitions": {"0": [3, 2]}}).encode())
    fake.delete("/admin/reassign_partitions")
    killed(zk_chroot, kill_after, "verify", "--reassignment-json-file", str(plan))
    assert_recorded(fake)
    r = run_cli("verify", "--reassignment-json-file", plan, env=env)
    assert r.returncode == 0, r.stderr
    assert_restored(fake)


def test_conflict_between_transactions_keeps_what_landed(
    fake: Any, zk_chroot: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Issue 30 item 21: a setup of several transactions whose second one meets a conflict (another
    client moves the record's version on between the two, as a concurrent run would) plans again from
    fresh reads; the changes of the transaction that had landed stay this run's, so when its trigger then
    loses the race, its undo takes back every throttle it wrote, the first transaction's included."""
    from reassign_cli.backends.zookeeper import fenced, record
    from reassign_cli.cli import main

    plan = setup(fake, tmp_path)
    monkeypatch.setattr(fenced, "TXN_LIMIT", 12_000)
    monkeypatch.setattr(record, "HEAD_MAX", 600)
    monkeypatch.setattr(record, "PART_MAX", 1_000)
    real = fenced.FencedThrottles._transaction
    calls: list[int] = []

    def interleaved(self: Any, ops: Any, items: Any, head_op: Any, guard: Any) -> bool:
        calls.append(len(items))
        if len(calls) == 2:  # a second client writes the record between our first two transactions
            data, _ = fake.get(HEAD)
            fake.set(HEAD, data)
        return bool(real(self, ops, items, head_op, guard))

    monkeypatch.setattr(fenced.FencedThrottles, "_transaction", interleaved)
    monkeypatch.setattr(fenced.FencedThrottles, "create_trigger", lambda self, data: False)
    monkeypatch.setenv("KAFKA_REASSIGN_ZOOKEEPER", zk_chroot)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["execute", "--reassignment-json-file", str(plan), "--throttle", "1000", "--zk-timeout", "3"])
    err = capsys.readouterr().err
    assert exc.value.code == 4, err
    assert "this run's throttle changes were undone" in err
    assert len(calls) > 3  # the first transaction landed, the second conflicted, the setup was planned again
    assert fake.exists("/admin/reassign_partitions") is None
    assert_restored(fake)
