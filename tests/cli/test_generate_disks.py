"""generate --balance bytes disk by disk (issue 27, item 2; planning/balanced/disks.py), hand-worked on
snapshot documents: one full disk inside a broker, a new empty broker with a cordoned and an offline dir,
the peak limit per disk, and the Spark engine giving the same bytes (tests/spark has the parity test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from tests.helpers import run_cli


def _dir(path: str, held: int, total: int = 100, **kw: Any) -> dict[str, Any]:
    return {
        "path": path, "offline": False, "cordoned": None, "bytes": held, "future_bytes": 0,
        "total_bytes": total, "usable_bytes": total - held, **kw,
    }  # fmt: skip


def _doc(place: dict[int, dict[int, int]], paths: dict[int, list[tuple[str, int]]], size: int = 10) -> Any:
    """Topic t, RF 1, every partition `size` bytes; place[b] = {partition: dir index}; paths[b] = the
    broker's dirs as (path, total)."""
    brokers = []
    for b in sorted(paths):
        held = [size * sum(1 for i in place.get(b, {}).values() if i == k) for k in range(len(paths[b]))]
        dirs = [_dir(p, h, t) for (p, t), h in zip(paths[b], held, strict=True)]
        total = sum(t for _, t in paths[b])
        brokers.append({
            "id": b, "disk_total_bytes": total, "disk_usable_bytes": total - sum(held),
            "disk_shared_log_dirs": False, "log_dirs": dirs,
        })  # fmt: skip
    parts = [
        {"partition": p, "replicas": [b], "size": size, "dirs": [i]}
        for b, ps in place.items()
        for p, i in ps.items()
    ]
    parts.sort(key=lambda x: x["partition"])
    return {"version": 1, "brokers": brokers, "topics": [{"topic": "t", "partitions": parts}]}


def _gen(tmp_path: Path, doc: Any, *args: str) -> Any:
    path = tmp_path / "snap.json"
    path.write_bytes(orjson.dumps(doc))
    return run_cli(
        "generate", "--snapshot", str(path), "--topic", "t", "--seed", "3", "--strategy", "balanced",
        "--balance", "bytes", "--format", "json", *args,
    )  # fmt: skip


def _dirs(out: str) -> dict[int, tuple[list[int], list[str]]]:
    doc = orjson.loads(out)
    return {e["partition"]: (e["replicas"], e["log_dirs"]) for e in doc["proposed"]["partitions"]}


TWO = [("/a", 100), ("/b", 100)]


def test_full_disk(tmp_path: Path) -> None:
    """Three brokers of two 100-byte disks, twelve 10-byte partitions, four per broker (balanced): broker
    1 holds all four on /a (40%), /b empty. The goal is 120/600 = 20% (20 bytes a disk); /a is outside
    its band (20 ± max(1, 10)), so two replicas move to /b, the first two in plan order (t-0, t-1); no
    byte crosses the network."""
    place = {1: {0: 0, 1: 0, 2: 0, 3: 0}, 2: {4: 0, 5: 0, 6: 1, 7: 1}, 3: {8: 0, 9: 0, 10: 1, 11: 1}}
    r = _gen(tmp_path, _doc(place, {1: TWO, 2: TWO, 3: TWO}))
    assert r.returncode == 0, r.stderr
    got = _dirs(r.stdout)
    assert got[0] == ([1], ["/b"]) and got[1] == ([1], ["/b"])
    assert all(got[p][1] == ["any"] for p in range(2, 12))
    stats = orjson.loads(r.stdout)["stats"]
    assert stats["bytes_moved_within_brokers"] == 20 and stats["moves_within_brokers"] == 2
    assert stats["bytes_copied_between_brokers"] == 0 and stats["copies"] == 0
    assert stats["disk_bytes_after"] == {
        "1:/a": 20,
        "1:/b": 20,
        "2:/a": 20,
        "2:/b": 20,
        "3:/a": 20,
        "3:/b": 20,
    }
    assert stats["disk_bytes_before"]["1:/a"] == 40 and stats["disks_within_tolerance"] is True
    assert stats["disks_outside_band"] == 0
    assert stats["disk_peak_utilization_per_dir"]["1:/a"] == 0.4  # what leaves counts until the end
    # Byte-identical dirs (brokers 2 and 3): said once, naming the flag.
    assert r.stderr.count("--shared-log-dirs") == 1 and "broker(s) 2, 3" in r.stderr


def test_a_new_broker_never_gets_a_cordoned_or_offline_dir(tmp_path: Path) -> None:
    """Brokers 1 and 2 hold six 10-byte partitions each; broker 3 is new, with /a cordoned, /b offline
    and /c live: every replica it receives goes to /c. The replicas that stay keep their dir (written),
    and with --shared-log-dirs not given nothing else is said about the dirs."""
    place = {1: {p: p % 2 for p in range(6)}, 2: {p: p % 2 for p in range(6, 12)}}
    paths = {
        1: [("/a", 100), ("/b", 110)],
        2: [("/a", 100), ("/b", 110)],
        3: [("/a", 100), ("/b", 110), ("/c", 120)],
    }
    doc = _doc(place, paths)
    new = doc["brokers"][2]["log_dirs"]
    new[0]["cordoned"] = True
    new[1] = {"path": "/b", "offline": True, "cordoned": None, "error": "KAFKA_STORAGE_ERROR"}
    doc["brokers"][2]["disk_total_bytes"], doc["brokers"][2]["disk_usable_bytes"] = 220, 220
    r = _gen(tmp_path, doc, "--max-disk-utilization", "0.9")
    assert r.returncode == 0, r.stderr
    got = _dirs(r.stdout)
    to3 = [p for p, (reps, _) in got.items() if reps == [3]]
    assert len(to3) == 4  # 120 bytes over 3 brokers, counts 4 each
    assert all(got[p][1] == ["/c"] for p in to3)
    for p, (_reps, dirs) in got.items():
        if p not in to3:
            assert dirs in (["any"], ["/a"], ["/b"])
    assert "--shared-log-dirs" not in r.stderr


def test_no_disk_passes_the_limit(tmp_path: Path) -> None:
    """The new broker's only live, uncordoned dir is 50 bytes: four 10-byte replicas would take it to
    80%; at --max-disk-utilization 0.5 none fits past the second, so the plan is refused (exit 2), and
    nothing is written."""
    place = {1: {p: 0 for p in range(6)}, 2: {p: 0 for p in range(6, 12)}}
    paths = {1: [("/a", 100), ("/b", 110)], 2: [("/a", 100), ("/b", 110)], 3: [("/a", 100), ("/c", 50)]}
    doc = _doc(place, paths)
    doc["brokers"][2]["log_dirs"][0]["cordoned"] = True
    r = _gen(tmp_path, doc, "--max-disk-utilization", "0.5", "--tolerance", "0.5")
    assert r.returncode == 2, r.stderr
    assert "fits on none of its log dirs" in r.stderr and r.stdout == ""


def test_the_summary_in_text(tmp_path: Path) -> None:
    """The full disk's figures in the text summary: the moves within brokers apart from the copies
    between them, the goal, each log dir before -> after with its peak."""
    place = {1: {0: 0, 1: 0, 2: 0, 3: 0}, 2: {4: 0, 5: 0, 6: 1, 7: 1}, 3: {8: 0, 9: 0, 10: 1, 11: 1}}
    path = tmp_path / "snap.json"
    path.write_bytes(orjson.dumps(_doc(place, {1: TWO, 2: TWO, 3: TWO})))
    r = run_cli("generate", "--snapshot", str(path), "--topic", "t", "--seed", "3", "--strategy", "balanced",
                "--balance", "bytes")  # fmt: skip
    assert r.returncode == 0, r.stderr
    text = r.stdout + r.stderr
    assert (
        "moved within brokers (log dir to log dir, no network): 2 replicas, 20 (20 B); copied between brokers: 0 (0 B)"
        in text
    )
    assert "log dirs: goal 20.0% each\n" in text
    assert "1:/a: 40.0% -> 20.0% (peak 40.0%); 1:/b: 0.0% -> 20.0% (peak 20.0%); 2:/a: 20.0% -> 20.0%" in text


def _one_filesystem(shared: bool) -> Any:
    """Brokers 1-3 with four 10-byte partitions each, two on /a and two on /b, and an empty broker 4; every
    broker's /a and /b report one filesystem's figures (1000 bytes, the same usable bytes)."""
    place = {1: {0: 0, 1: 0, 2: 1, 3: 1}, 2: {4: 0, 5: 0, 6: 1, 7: 1}, 3: {8: 0, 9: 0, 10: 1, 11: 1}, 4: {}}
    doc = _doc(place, {b: [("/a", 1000), ("/b", 1000)] for b in place})
    for b in doc["brokers"]:
        used = sum(d["bytes"] for d in b["log_dirs"])
        b["disk_total_bytes"], b["disk_usable_bytes"] = 1000, 1000 - used
        b["disk_shared_log_dirs"] = shared
        for d in b["log_dirs"]:
            d["usable_bytes"] = 1000 - used
    return doc


def test_log_dirs_on_one_filesystem_are_named_by_no_plan(tmp_path: Path) -> None:
    """Declared on one filesystem (--shared-log-dirs, recorded in the snapshot), a broker's two dirs are one
    disk: there is nothing to balance between them, so the plan names no dir ("any": Kafka picks one), as
    the plan without disks. The 12 x 10 bytes end 30 per broker: three partitions move to broker 4."""
    r = _gen(tmp_path, _one_filesystem(shared=True))
    assert r.returncode == 0, r.stderr
    got = _dirs(r.stdout)
    assert sum(1 for replicas, _ in got.values() if replicas == [4]) == 3
    assert all(dirs == ["any"] for _, dirs in got.values())
    assert "bytes_moved_within_brokers" not in orjson.loads(r.stdout)["stats"]


def test_the_same_dirs_not_declared_shared_are_disks_of_their_own(tmp_path: Path) -> None:
    """The same cluster without the declaration: each dir is its own disk (the default), so the replicas
    arriving on broker 4 are given a dir, and stderr says the dirs look like one filesystem."""
    r = _gen(tmp_path, _one_filesystem(shared=False))
    assert r.returncode == 0, r.stderr
    arriving = [dirs for replicas, dirs in _dirs(r.stdout).values() if replicas == [4]]
    assert len(arriving) == 3 and all(d in (["/a"], ["/b"]) for d in arriving)
    assert "--shared-log-dirs" in r.stderr
