"""`generate --replication-factor N` with Kafka's strategy, from hand-written snapshots (no cluster):
expected values worked out by hand from Kafka's round-robin rules."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.helpers import run_cli

SNAPSHOT = {
    "version": 1,
    "brokers": [{"id": 1}, {"id": 2}, {"id": 3}],
    "topics": [{"topic": "t", "partitions": [{"partition": p, "replicas": [1 + p % 3]} for p in range(4)]}],
}


def _generate(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    snap = tmp_path / "snap.json"
    snap.write_bytes(orjson.dumps(SNAPSHOT))
    r = run_cli("generate", "--snapshot", str(snap), "--topic", "t", "--seed", "5", "--format", "json", *args)
    return r.returncode, r.stdout, r.stderr


def test_rf_increase_gives_every_partition_all_three_brokers(tmp_path: Path) -> None:
    code, out, _ = _generate(tmp_path, "--replication-factor", "3")
    assert code == 0
    doc = orjson.loads(out)
    # The current document is the snapshot's, RF 1.
    assert [e["replicas"] for e in doc["current"]["partitions"]] == [[1], [2], [3], [1]]
    proposed = [e["replicas"] for e in doc["proposed"]["partitions"]]
    # RF 3 over 3 brokers: each partition holds every broker once; Kafka's round robin moves the first
    # replica on by one broker per partition, so partitions 0-2 lead on three different brokers and
    # partition 3 leads where partition 0 does.
    assert all(sorted(r) == [1, 2, 3] for r in proposed)
    assert len({r[0] for r in proposed[:3]}) == 3
    assert proposed[3][0] == proposed[0][0]


def test_rf_decrease_to_one(tmp_path: Path) -> None:
    code, out, _ = _generate(tmp_path, "--replication-factor", "1")
    assert code == 0
    proposed = [e["replicas"] for e in orjson.loads(out)["proposed"]["partitions"]]
    assert [len(r) for r in proposed] == [1, 1, 1, 1]
    assert len({r[0] for r in proposed[:3]}) == 3


def test_rf_larger_than_brokers_is_kafkas_error(tmp_path: Path) -> None:
    code, out, err = _generate(tmp_path, "--replication-factor", "4")
    assert (code, out) == (3, "")
    assert err.startswith("Error: Replication factor: 4 larger than available brokers: 3.\n")


def test_rf_zero_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = _generate(tmp_path, "--replication-factor", "0")
    assert (code, out) == (2, "")
    assert "--replication-factor" in err
