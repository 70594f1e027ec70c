"""`generate --strategy balanced --balance bytes` end to end from snapshots: the refusals (exit 2, nothing
written), the figures of the summary and of `--format json`'s stats (worked out by hand in comments), and
`--balance replicas` unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_cli


def _doc(sizes: list[int | None]) -> dict[str, Any]:
    """Topic a, RF 1, on brokers 1 and 2: partitions 0, 1 on broker 1, 2, 3 on broker 2."""
    parts = []
    for p, size in enumerate(sizes):
        e: dict[str, Any] = {"partition": p, "replicas": [1 if p < 2 else 2]}
        if size is not None:
            e["size"] = size
        parts.append(e)
    return {"version": 1, "brokers": [{"id": 1}, {"id": 2}], "topics": [{"topic": "a", "partitions": parts}]}


def _snap(tmp_path: Path, sizes: list[int | None]) -> str:
    path = tmp_path / "snap.json"
    path.write_bytes(orjson.dumps(_doc(sizes)))
    return str(path)


def _gen(snap: str, *args: str) -> Any:
    return run_cli(
        "generate", "--snapshot", snap, "--topic", "a", "--seed", "3", "--strategy", "balanced", *args
    )


def test_crowded_broker_by_hand(tmp_path: Path) -> None:
    """100 + 100 bytes on broker 1, 10 + 10 on broker 2: mean 110, band [104.5, 115.5]; counts must stay
    2 and 2, so a 100 and a 10 swap brokers: 110 bytes copied, both brokers at 110. Lower bound: 84.5
    must leave broker 1 (ceil: 85). Worst deviation before: 90 / 110 = 0.8182; after: 0."""
    r = _gen(_snap(tmp_path, [100, 100, 10, 10]), "--balance", "bytes", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = orjson.loads(r.stdout)
    stats = doc["stats"]
    assert stats["bytes_copied"] == 110
    assert stats["bytes_lower_bound"] == 85
    assert stats["bytes_max_dev_before"] == 0.8182 and stats["bytes_max_dev_after"] == 0.0
    assert stats["bytes_per_broker_after"] == {"1": 110, "2": 110}
    moved = {e["partition"]: e["replicas"] for e in doc["proposed"]["partitions"]}
    assert sorted(moved.values()) == [[1], [1], [2], [2]] and moved != {0: [1], 1: [1], 2: [2], 3: [2]}


def test_text_summary(tmp_path: Path) -> None:
    r = _gen(_snap(tmp_path, [100, 100, 10, 10]), "--balance", "bytes", "--tolerance", "0.1")
    assert r.returncode == 0, r.stderr
    # band [99, 121]: 200 - 121 = 79 must leave broker 1, 99 - 20 = 79 enter broker 2; 110 / 79 = 1.392
    assert "bytes lower bound: 79 (79 B), ratio 1.392" in r.stderr
    assert "worst broker from the mean (110 B): 81.8% before, 0.0% after (tolerance 10%)" in r.stderr
    assert "bytes per broker: 1: 200 B -> 110 B, 2: 20 B -> 110 B" in r.stderr


def test_unknown_sizes_refused_nothing_written(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    r = _gen(_snap(tmp_path, [100, None, 10, None]), "--balance", "bytes", "--output-dir", str(out))
    assert r.returncode == 2
    assert "2 selected partition(s) have no known size" in r.stderr
    assert "snapshot --bootstrap-server" in r.stderr
    assert r.stdout == "" and not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--balance", "bytes", "--strategy", "kafka"], "--balance needs --strategy balanced"),
        (["--tolerance", "0.1"], "--tolerance needs --balance bytes"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    snap = _snap(tmp_path, [1, 2, 3, 4])
    r = run_cli("generate", "--snapshot", snap, "--topic", "a", "--seed", "3", *args)
    assert r.returncode == 2 and message in r.stderr


def test_balance_replicas_is_the_default_unchanged(tmp_path: Path) -> None:
    snap = _snap(tmp_path, [100, 100, 10, 10])
    plain, explicit = _gen(snap), _gen(snap, "--balance", "replicas")
    assert plain.returncode == explicit.returncode == 0
    assert (plain.stdout, plain.stderr) == (explicit.stdout, explicit.stderr)
    assert "bytes lower bound" not in plain.stderr
