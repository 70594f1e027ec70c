"""Large plans format the current document in a forked child: the bytes must not change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

SNAPSHOT = {
    "version": 1,
    "brokers": [{"id": b, "rack": f"r{b % 3}"} for b in range(1, 7)],
    "topics": [
        {
            "topic": f"t{i:03d}",
            "partitions": [
                {"partition": p, "replicas": [1 + (i + p) % 6, 1 + (i + p + 1) % 6]} for p in range(8)
            ],
        }
        for i in range(40)
    ],
}


def generate(tmp: Path, fork_min: int, *extra: str) -> subprocess.CompletedProcess[bytes]:
    snap = tmp / "snap.json"
    snap.write_bytes(orjson.dumps(SNAPSHOT))
    topics = [a for t in SNAPSHOT["topics"] for a in ("--topic", t["topic"])]  # type: ignore[index]
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_REASSIGN_ZOOKEEPER"}
    env["KAFKA_REASSIGN_FORK_MIN_PARTITIONS"] = str(fork_min)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "reassign_cli",
            "generate",
            "--snapshot",
            str(snap),
            *topics,
            "--seed",
            "5",
            *extra,
        ],
        capture_output=True,
        env=env,
        timeout=120,
    )


def test_forked_stdout_is_identical(tmp_path: Path) -> None:
    inline = generate(tmp_path, 10**9, "-q")
    forked = generate(tmp_path, 1, "-q")
    assert inline.returncode == forked.returncode == 0, forked.stderr
    assert forked.stdout == inline.stdout
    assert forked.stdout.startswith(b"Current partition replica assignment\n")
    assert b"\n\nProposed partition reassignment configuration\n" in forked.stdout


def test_forked_output_dir_is_identical(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert generate(tmp_path, 10**9, "-q", "--output-dir", str(a)).returncode == 0
    r = generate(tmp_path, 1, "-q", "--output-dir", str(b))
    assert r.returncode == 0, r.stderr
    for name in ("current.json", "proposed.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
        assert len((a / name).read_bytes()) > 1000


def test_forked_child_failure_is_reported(tmp_path: Path) -> None:
    # The child cannot write current.json (a directory is in the way): one line, exit 1, no success line.
    out = tmp_path / "out"
    (out / "current.json").mkdir(parents=True)
    r = generate(tmp_path, 1, "-q", "--output-dir", str(out))
    assert r.returncode == 1
    assert r.stderr.decode().splitlines() == [f"Error: cannot write {out / 'current.json'}: Is a directory"]
    assert b"written to" not in r.stdout


def test_forked_summary_is_identical(tmp_path: Path) -> None:
    # Without -q the summary table is computed in a second child and printed by the parent at the end.
    inline = generate(tmp_path, 10**9)
    forked = generate(tmp_path, 1)
    assert inline.returncode == forked.returncode == 0, forked.stderr
    assert forked.stdout == inline.stdout
    assert forked.stderr == inline.stderr
    assert b"replicas move" in forked.stderr


def test_planning_error_leaves_no_output_from_the_early_writer(tmp_path: Path) -> None:
    # The child formats the current document before planning; it must write nothing when planning
    # fails (here: RF 2 over one broker).
    r = generate(tmp_path, 1, "--broker-list", "1")
    assert r.returncode == 3
    assert r.stdout == b""
    assert r.stderr.decode().splitlines() == [
        "Error: Replication factor: 2 larger than available brokers: 1.",
        "topic t000 has replication factor 2",
    ]
    out = tmp_path / "out"
    r = generate(tmp_path, 1, "--broker-list", "1", "--output-dir", str(out))
    assert r.returncode == 3
    assert not out.exists()
