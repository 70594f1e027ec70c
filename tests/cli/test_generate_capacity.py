"""`generate --balance bytes` with the brokers' disk capacity in the snapshot (issue 18, point 8): the
utilization figures, the --max-disk-utilization refusal (exit 2, one line, nothing written), the note
without capacities, and snapshots without capacities unchanged. Expected figures worked out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_cli


def _doc(caps: dict[int, tuple[int, int]] | None) -> dict[str, Any]:
    """Topic a, RF 1: four 100-byte partitions on broker 1; broker 2 empty."""
    brokers: list[dict[str, Any]] = []
    for b in (1, 2):
        e: dict[str, Any] = {"id": b}
        if caps is not None and b in caps:
            e["disk_total_bytes"], e["disk_usable_bytes"] = caps[b]
        brokers.append(e)
    parts = [{"partition": p, "replicas": [1], "size": 100} for p in range(4)]
    return {"version": 1, "brokers": brokers, "topics": [{"topic": "a", "partitions": parts}]}


def _snap(tmp_path: Path, caps: dict[int, tuple[int, int]] | None) -> str:
    path = tmp_path / "snap.json"
    path.write_bytes(orjson.dumps(_doc(caps)))
    return str(path)


def _gen(snap: str, *args: str) -> Any:
    return run_cli(
        "generate", "--snapshot", snap, "--topic", "a", "--seed", "3", "--strategy", "balanced",
        "--balance", "bytes", *args,
    )  # fmt: skip


def test_utilization_by_hand(tmp_path: Path) -> None:
    """Broker 1: 1000-byte disk, broker 2: 3000. 400 bytes in all: mean utilization 10%, goals 100 and
    300 bytes (±5%: exactly one and three partitions). Broker 2 receives 300 bytes: peak 300 / 3000 =
    10%; broker 1 holds its 400 until the end: 40%, receiving nothing."""
    r = _gen(_snap(tmp_path, {1: (1000, 1000), 2: (3000, 3000)}), "--format", "json")
    assert r.returncode == 0, r.stderr
    stats = orjson.loads(r.stdout)["stats"]
    assert stats["bytes_per_broker_after"] == {"1": 100, "2": 300}
    assert stats["bytes_balanced_by"] == "utilization"
    assert stats["disk_capacity_per_broker"] == {"1": 1000, "2": 3000}
    assert stats["disk_utilization_mean"] == 0.1
    assert stats["disk_utilization_before"] == {"1": 0.4, "2": 0.0}
    assert stats["disk_utilization_after"] == {"1": 0.1, "2": 0.1}
    assert stats["disk_peak_utilization"] == {"1": 0.4, "2": 0.1}
    assert stats["max_disk_utilization"] == 0.85
    # |0.4 - 0.1| / 0.1 = 3.0 before; 0 after. Lower bound: 400 - 105 = 295 must leave broker 1.
    assert stats["bytes_max_dev_before"] == 3.0 and stats["bytes_max_dev_after"] == 0.0
    assert stats["bytes_lower_bound"] == 295 and stats["bytes_copied"] == 300
    assert "no disk capacity" not in r.stderr


def test_text_summary(tmp_path: Path) -> None:
    """Two measures, each named (issue 30, item 7): utilization, the partitions' bytes over the
    capacity (what is balanced: broker 1 400 / 1000 = 40% -> 100 / 1000 = 10%); and the disk in use,
    everything on the volumes (here only the partitions) now and at the peak of the move."""
    r = _gen(_snap(tmp_path, {1: (1000, 1000), 2: (3000, 3000)}))
    assert r.returncode == 0, r.stderr
    assert "worst broker from the mean disk utilization (10.0%): 300.0% before, 0.0% after" in r.stderr
    assert (
        "peak disk in use during the move (all data on the volumes): 40.0% (broker 1), limit 85%" in r.stderr
    )
    assert (
        "utilization per broker (its partitions' bytes over its capacity): 1: 40.0% -> 10.0% of 1000 B "
        "(disk in use 40.0% now, peak 40.0%); 2: 0.0% -> 10.0% of 2.93 KiB (disk in use 0.0% now, peak "
        "10.0%)"
    ) in r.stderr


def test_other_data_on_the_volume_is_named_apart(tmp_path: Path) -> None:
    """Broker 2's volume has 2500 of 3000 bytes in use by something else (usable 500), and 0 bytes of
    partitions: utilization 0% -> 10% (300 bytes), but disk in use 83.3% now, 93.3% at the peak
    (2500 + 300 of 3000): the two measures side by side, never mixed in one figure."""
    r = _gen(_snap(tmp_path, {1: (1000, 1000), 2: (3000, 500)}), "--max-disk-utilization", "1")
    assert r.returncode == 0, r.stderr
    assert "2: 0.0% -> 10.0% of 2.93 KiB (disk in use 83.3% now, peak 93.3%)" in r.stderr


def test_refused_when_the_peak_breaks_the_limit(tmp_path: Path) -> None:
    """--replication-factor 2 over brokers 1 and 2: every partition needs a replica on broker 2, whose
    volume has 2900 of 3000 bytes in use (usable 100). It receives 4 x 100 bytes and deletes nothing:
    peak 2900 + 400 = 3300 bytes, 110% > 85%. No plan avoids it: exit 2, one line naming broker 2, its
    peak and its capacity; nothing on stdout, no output dir."""
    out = tmp_path / "out"
    snap = _snap(tmp_path, {1: (1000, 600), 2: (3000, 100)})
    r = _gen(snap, "--replication-factor", "2", "--output-dir", str(out))
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("Error:")]
    assert lines == [
        "Error: --max-disk-utilization 0.85: broker 2 would peak at 3300 bytes (3.2 KiB, 110.0%) of its 3000 "
        "bytes (2.9 KiB) during the move (it holds what it receives until the plan ends), and no plan "
        "within the limit was found"
    ]
    assert r.stdout == "" and not out.exists()


def test_a_full_broker_receives_nothing(tmp_path: Path) -> None:
    """Broker 2's volume is at 2900 of 3000 bytes (96.7%) already: at the default 85% it may receive
    nothing, so the plan is empty (the balance gives way to the limit), and the operator is told."""
    r = _gen(_snap(tmp_path, {1: (1000, 600), 2: (3000, 100)}), "--format", "json")
    assert r.returncode == 0, r.stderr
    stats = orjson.loads(r.stdout)["stats"]
    assert stats["bytes_copied"] == 0 and stats["bytes_per_broker_after"] == {"1": 400, "2": 0}
    assert (
        "broker(s) 2 already above --max-disk-utilization 0.85 of their disk: they receive nothing"
        in r.stderr
    )


def test_a_higher_limit_lets_it_through(tmp_path: Path) -> None:
    """The same cluster at --max-disk-utilization 1: broker 2 may reach 3000 of 3000; goals 100 / 300:
    it receives one 100-byte partition (with usable 100 bytes that is all it can take)."""
    r = _gen(
        _snap(tmp_path, {1: (1000, 600), 2: (3000, 100)}), "--max-disk-utilization", "1", "--format", "json"
    )
    assert r.returncode == 0, r.stderr
    stats = orjson.loads(r.stdout)["stats"]
    assert stats["disk_peak_utilization"]["2"] == 1.0
    assert stats["bytes_per_broker_after"] == {"1": 300, "2": 100}


def test_without_capacities_raw_bytes_said_once(tmp_path: Path) -> None:
    r = _gen(_snap(tmp_path, None), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("no disk capacity known for broker(s) 1, 2: balancing raw bytes") == 1
    stats = orjson.loads(r.stdout)["stats"]
    assert "bytes_balanced_by" not in stats and stats["bytes_per_broker_after"] == {"1": 200, "2": 200}


def test_one_broker_without_capacity_is_raw_bytes(tmp_path: Path) -> None:
    r = _gen(_snap(tmp_path, {1: (1000, 1000)}), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "no disk capacity known for broker(s) 2:" in r.stderr
    assert orjson.loads(r.stdout)["stats"]["bytes_per_broker_after"] == {"1": 200, "2": 200}


def test_explicit_limit_without_capacities_is_refused(tmp_path: Path) -> None:
    r = _gen(_snap(tmp_path, None), "--max-disk-utilization", "0.9")
    assert r.returncode == 2
    assert "--max-disk-utilization: no disk capacity known for broker(s) 1, 2" in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--balance", "replicas", "--max-disk-utilization", "0.9"],
            "--max-disk-utilization needs --balance bytes",
        ),
        (["--max-disk-utilization", "0"], "Invalid value for '--max-disk-utilization'"),
        (["--max-disk-utilization", "1.5"], "Invalid value for '--max-disk-utilization'"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    snap = _snap(tmp_path, {1: (1000, 1000), 2: (3000, 3000)})
    r = run_cli(
        "generate", "--snapshot", snap, "--topic", "a", "--seed", "3", "--strategy", "balanced", *args
    )
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_replicas_and_kafka_ignore_capacities(tmp_path: Path) -> None:
    """Capacities in the snapshot change nothing for --balance replicas and Kafka's strategy."""
    with_caps = _snap(tmp_path, {1: (1000, 1000), 2: (3000, 3000)})
    bare = tmp_path / "bare.json"
    bare.write_bytes(orjson.dumps(_doc(None)))
    for extra in (["--strategy", "balanced"], ["--strategy", "kafka"]):
        runs = [
            run_cli(
                "generate", "--snapshot", s, "--topic", "a", "--seed", "3", "--broker-list", "1,2", *extra
            )
            for s in (with_caps, str(bare))
        ]
        assert runs[0].returncode == runs[1].returncode == 0
        assert (runs[0].stdout, runs[0].stderr) == (runs[1].stdout, runs[1].stderr)


def test_snapshot_round_trip_keeps_capacities(tmp_path: Path) -> None:
    """The capacities load from both layouts; a malformed pair is refused (exit 3) naming the broker."""
    from reassign_cli.core import snapshot, snapshot_lines
    from reassign_cli.core.model import Capacity

    raw = orjson.dumps(_doc({1: (1000, 600), 2: (3000, 100)}))
    state = snapshot.loads(raw)
    assert state.capacities == {1: Capacity(1000, 600), 2: Capacity(3000, 100)}
    assert snapshot.loads(snapshot.dumps(state)).capacities == state.capacities
    lines = b"".join(snapshot_lines.dump_lines(state))
    assert snapshot_lines.loads(lines).capacities == state.capacities
    assert snapshot.loads(orjson.dumps(_doc(None))).capacities == {}
    assert b"disk_total_bytes" not in snapshot.dumps(snapshot.loads(orjson.dumps(_doc(None))))
    bad = _doc(None)
    bad["brokers"][1]["disk_total_bytes"] = 10
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(bad))
    r = run_cli("generate", "--snapshot", str(path), "--topic", "a", "--seed", "3")
    assert r.returncode == 3
    assert 'broker 2: "disk_total_bytes" and "disk_usable_bytes" go together' in r.stderr
