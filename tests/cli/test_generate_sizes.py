"""`generate` with partition sizes in the snapshot: the bytes a plan copies and the time at --throttle, for
both strategies; stdout unchanged. Expected values by hand (comments), or computed here from the printed
plan (an independent count: size x brokers added, per partition)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_cli

SIZE = 1000  # every partition: the balanced plan's bytes then follow from its copies alone


def _doc(sized: bool) -> dict[str, Any]:
    """Topics a (4 partitions) and b (2), RF 2, on brokers 1 and 2; broker 3 is new and empty."""

    def part(p: int) -> dict[str, Any]:
        e: dict[str, Any] = {"partition": p, "replicas": [1 + p % 2, 2 - p % 2]}
        if sized:
            e["size"] = SIZE * (1 + p)  # a-0: 1000, a-1: 2000, ... (the Kafka test uses the spread)
        return e

    return {
        "version": 1,
        "brokers": [{"id": 1}, {"id": 2}, {"id": 3}],
        "topics": [
            {"topic": "a", "partitions": [part(p) for p in range(4)]},
            {"topic": "b", "partitions": [part(p) for p in range(2)]},
        ],
    }


def _snap(tmp_path: Path, doc: dict[str, Any], name: str) -> str:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(doc))
    return str(path)


def _rows(doc: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): e["replicas"] for e in doc["partitions"]}


def _gen(snap: str, *args: str) -> Any:
    r = run_cli("generate", "--snapshot", snap, "--topic", "a", "--topic", "b", "--seed", "3", *args)
    assert r.returncode == 0, r.stderr
    return r


def test_kafka_strategy_stdout_unchanged_and_bytes_counted(tmp_path: Path) -> None:
    sized, plain = _snap(tmp_path, _doc(True), "s.json"), _snap(tmp_path, _doc(False), "p.json")
    text_sized, text_plain = _gen(sized, "--throttle", "500"), _gen(plain)
    assert text_sized.stdout == text_plain.stdout  # Kafka's text, byte for byte
    assert "bytes copied" not in text_plain.stderr
    out = orjson.loads(_gen(sized, "--format", "json", "--throttle", "500").stdout)
    before, after = _rows(out["current"]), _rows(out["proposed"])
    sizes = {(t, p): SIZE * (1 + p) for t, p in before}
    inbound: dict[int, int] = {}
    for k, new in after.items():
        for b in set(new) - set(before[k]):
            inbound[b] = inbound.get(b, 0) + sizes[k]
    busiest = min(inbound, key=lambda b: (-inbound[b], b))
    assert out["stats"] == {
        "partitions": 6,
        "partitions_changed": sum(1 for k in after if after[k] != before[k]),
        "copies": sum(len(set(after[k]) - set(before[k])) for k in after),
        "leader_changes": sum(1 for k in after if after[k][0] != before[k][0]),
        "bytes_copied": sum(inbound.values()),
        "copies_size_unknown": 0,
        "bytes_in_max": inbound[busiest],
        "bytes_in_max_broker": busiest,
        "throttle": 500,
        "seconds_at_throttle": inbound[busiest] / 500,
    }
    assert f"bytes copied: {sum(inbound.values())} " in text_sized.stderr


def test_balanced_bytes_and_time_by_hand(tmp_path: Path) -> None:
    doc = _doc(False)
    for t in doc["topics"]:
        for e in t["partitions"]:
            e["size"] = SIZE
    snap = _snap(tmp_path, doc, "s.json")
    r = _gen(snap, "--strategy", "balanced", "--format", "json", "--throttle", "400")
    stats = orjson.loads(r.stdout)["stats"]
    # 12 replicas over 3 brokers: broker 3 receives 4 (the lower bound), each a 1000-byte partition:
    # 4000 bytes, all into broker 3; at 400 B/s: 10 s.
    assert stats["copies"] == 4
    assert {k: stats[k] for k in ("bytes_copied", "bytes_in_max", "bytes_in_max_broker")} == {
        "bytes_copied": 4000,
        "bytes_in_max": 4000,
        "bytes_in_max_broker": 3,
    }
    assert (stats["throttle"], stats["seconds_at_throttle"], stats["copies_size_unknown"]) == (400, 10.0, 0)
    text = _gen(snap, "--strategy", "balanced", "--throttle", "400").stderr
    assert "bytes copied: 4000 (3.91 KiB)" in text
    assert "most into one broker: 4000 (3.91 KiB), broker 3" in text
    assert "at --throttle 400 B/s (400 B/s) per broker: at least 10.0 s" in text


def test_unknown_sizes_are_counted_apart(tmp_path: Path) -> None:
    doc = _doc(False)
    doc["topics"][0]["partitions"][0]["size"] = 5  # only a-0 has a size
    snap = _snap(tmp_path, doc, "s.json")
    out = orjson.loads(_gen(snap, "--strategy", "balanced", "--format", "json").stdout)
    before, after = _rows(out["current"]), _rows(out["proposed"])
    copies = sum(len(set(after[k]) - set(before[k])) for k in after)
    a0 = len(set(after[("a", 0)]) - set(before[("a", 0)]))
    assert out["stats"]["bytes_copied"] == 5 * a0
    assert out["stats"]["copies_size_unknown"] == copies - a0
    assert "throttle" not in out["stats"]


@pytest.mark.parametrize("strategy", ["kafka", "balanced"])
def test_throttle_without_sizes_warns(tmp_path: Path, strategy: str) -> None:
    r = _gen(_snap(tmp_path, _doc(False), "p.json"), "--strategy", strategy, "--throttle", "100")
    assert "--throttle: no partition sizes are known" in r.stderr
    assert "bytes copied" not in r.stderr


def test_throttle_must_be_positive(tmp_path: Path) -> None:
    r = run_cli(
        "generate", "--snapshot", _snap(tmp_path, _doc(True), "s.json"), "--topic", "a", "--throttle", "0"
    )
    assert r.returncode == 2


def test_human_units() -> None:
    from reassign_cli.render.generate import human_bytes, human_duration

    assert [human_bytes(v) for v in (999, 1023, 1024, 1536, 4000, 1126400, 3 << 50)] == [
        "999 B", "1023 B", "1 KiB", "1.5 KiB", "3.91 KiB", "1.07 MiB", "3 PiB",
    ]  # fmt: skip
    # 4000 / 1024 = 3.906; 1126400 / 1024**2 = 1.074
    assert [human_duration(s) for s in (59.4, 200, 3720)] == ["", " (3 min 20 s)", " (1 h 02 min)"]


COMMON = ("partitions", "partitions_changed", "copies", "leader_changes", "bytes_copied")


@pytest.mark.parametrize("strategy", ["kafka", "balanced"])
@pytest.mark.parametrize("sized", [True, False])
def test_stats_carry_the_same_keys_for_every_strategy(tmp_path: Path, strategy: str, sized: bool) -> None:
    """Issue 30 item 6: --format json's "stats" has copies, partitions changed, leader changes and bytes
    for every strategy, with sizes or without (bytes_copied null then), on stdout and with --output-dir.
    Before, --strategy kafka had no copy counts, and no "stats" at all without sizes. Counted here from the
    printed plan."""
    snap = _snap(tmp_path, _doc(sized), "s.json")
    out = orjson.loads(_gen(snap, "--strategy", strategy, "--format", "json").stdout)
    before, after = _rows(out["current"]), _rows(out["proposed"])
    stats = out["stats"]
    assert {k: stats[k] for k in COMMON} == {
        "partitions": 6,
        "partitions_changed": sum(1 for k in after if after[k] != before[k]),
        "copies": sum(len(set(after[k]) - set(before[k])) for k in after),
        "leader_changes": sum(1 for k in after if after[k][0] != before[k][0]),
        "bytes_copied": (
            sum(SIZE * (1 + k[1]) * len(set(after[k]) - set(before[k])) for k in after) if sized else None
        ),
    }
    files = _gen(snap, "--strategy", strategy, "--format", "json", "--output-dir", str(tmp_path / "o"))
    assert {k: orjson.loads(files.stdout)["stats"][k] for k in COMMON} == {k: stats[k] for k in COMMON}
    quiet = orjson.loads(_gen(snap, "--strategy", strategy, "--format", "json", "-q").stdout)
    assert {k: quiet["stats"][k] for k in COMMON} == {k: stats[k] for k in COMMON}
