"""`generate --strategy balanced` end to end from hand-written snapshots (no cluster). Expected values are
worked out by hand in the comments; the plan's own choices (which partitions move) are checked through
their properties, not through bytes the code produced."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from tests.helpers import run_cli

# Topics a (4 partitions) and b (2), RF 2, all on brokers 1 and 2; broker 3 is new and empty.
ADD = {
    "version": 1,
    "brokers": [{"id": 1, "rack": "r1"}, {"id": 2, "rack": "r2"}, {"id": 3, "rack": "r3"}],
    "topics": [
        {
            "topic": "a",
            "partitions": [{"partition": p, "replicas": [1 + p % 2, 2 - p % 2]} for p in range(4)],
        },
        {
            "topic": "b",
            "partitions": [{"partition": p, "replicas": [1 + p % 2, 2 - p % 2]} for p in range(2)],
        },
    ],
}


def _snap(tmp_path: Path, doc: dict[str, Any], name: str = "snap.json") -> str:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(doc))
    return str(path)


def _json(tmp_path: Path, doc: dict[str, Any], *args: str) -> dict[str, Any]:
    r = run_cli("generate", "--snapshot", _snap(tmp_path, doc), "--seed", "3", "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    out: dict[str, Any] = orjson.loads(r.stdout)
    return out


def _rows(doc: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): e["replicas"] for e in doc["partitions"]}


def test_adding_a_broker_moves_the_lower_bound_and_balances(tmp_path: Path) -> None:
    out = _json(tmp_path, ADD, "--topic", "a", "--topic", "b", "--strategy", "balanced")
    before, after = _rows(out["current"]), _rows(out["proposed"])
    # 12 replicas over 3 brokers: 4 each; broker 3 must receive 4 (the lower bound), 1 and 2 shed 2 each.
    assert Counter(b for r in after.values() for b in r) == {1: 4, 2: 4, 3: 4}
    assert sum(len(set(after[k]) - set(before[k])) for k in after) == 4
    # 6 preferred leaders: 2 each; broker 3 must gain 2, so at least 2 leaders change.
    assert Counter(r[0] for r in after.values()) == {1: 2, 2: 2, 3: 2}
    # Racks r1, r2, r3 (one broker each): every RF 2 partition spans 2 racks by having 2 brokers.
    assert all(len(set(r)) == 2 for r in after.values())
    assert out["stats"] == {
        "partitions": 6,
        "partitions_changed": sum(1 for k in after if after[k] != before[k]),
        "bytes_copied": None,  # no sizes in the snapshot
        "copies": 4,
        "lower_bound": 4,
        "copies_over_lower_bound": 1.0,
        "leader_changes": 2,
        "replicas_max_min_before": 6,
        "replicas_max_min_after": 0,
        "leaders_max_min_before": 3,
        "leaders_max_min_after": 0,
    }


def test_the_summary_reports_copies_leaders_and_spreads(tmp_path: Path) -> None:
    r = run_cli(
        "generate", "--snapshot", _snap(tmp_path, ADD), "--topic", "a", "--topic", "b", "--seed", "3",
        "--strategy", "balanced", "--no-color",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "copies: 4 (lower bound 4, ratio 1.000)\n" in r.stderr
    assert "preferred leaders changed: 2\n" in r.stderr
    assert "replicas per broker, max - min (all topics): 6 before, 0 after\n" in r.stderr
    assert "preferred leaders per broker, max - min (all topics): 3 before, 0 after\n" in r.stderr
    assert "4 of 6 partitions change, 4 replicas move, 2 preferred leaders change" in r.stderr  # the table


def test_kafka_stays_the_default_byte_for_byte(tmp_path: Path) -> None:
    snap = _snap(tmp_path, ADD)
    base = ("generate", "--snapshot", snap, "--topic", "a", "--topic", "b", "--seed", "3")
    default = run_cli(*base)
    kafka = run_cli(*base, "--strategy", "kafka")
    assert default.returncode == kafka.returncode == 0
    assert default.stdout == kafka.stdout
    # the stats every strategy carries, and none of the balanced strategy's own
    stats = orjson.loads(run_cli(*base, "--format", "json").stdout)["stats"]
    assert list(stats) == ["partitions", "partitions_changed", "copies", "leader_changes", "bytes_copied"]


def test_drain_a_broker_and_a_dead_one(tmp_path: Path) -> None:
    # Broker 3 leaves the broker list; broker 9 is not registered but still holds replicas.
    doc = {
        "version": 1,
        "brokers": [{"id": 1}, {"id": 2}, {"id": 3}],
        "topics": [
            {
                "topic": "t",
                "partitions": [
                    {"partition": 0, "replicas": [1, 3]},
                    {"partition": 1, "replicas": [9, 2]},
                    {"partition": 2, "replicas": [3, 9]},
                    {"partition": 3, "replicas": [2, 1]},
                ],
            }
        ],
    }
    out = _json(tmp_path, doc, "--topic", "t", "--broker-list", "1,2", "--strategy", "balanced")
    after = _rows(out["proposed"])
    # Only {1, 2} is left: every partition holds both. Replicas off B: 3 (twice), 9 (twice): 4 copies.
    assert {k: sorted(v) for k, v in after.items()} == {("t", p): [1, 2] for p in range(4)}
    assert out["stats"]["copies"] == out["stats"]["lower_bound"] == 4
    # Partition 3 is unchanged and keeps its order; leaders 2 and 2.
    assert after["t", 3] == [2, 1]
    assert Counter(r[0] for r in after.values()) == {1: 2, 2: 2}


def test_unselected_topics_count_but_do_not_move(tmp_path: Path) -> None:
    # u (not selected) puts 4 replicas on broker 1; t (4 partitions, RF 1) sits on broker 1 too.
    doc = {
        "version": 1,
        "brokers": [{"id": 1}, {"id": 2}, {"id": 3}],
        "topics": [
            {"topic": "t", "partitions": [{"partition": p, "replicas": [1]} for p in range(4)]},
            {"topic": "u", "partitions": [{"partition": p, "replicas": [1]} for p in range(4)]},
        ],
    }
    out = _json(tmp_path, doc, "--topic", "t", "--strategy", "balanced")
    after = _rows(out["proposed"])
    assert sorted(after) == [("t", p) for p in range(4)]
    # 8 replicas over 3 brokers; broker 1 keeps u's 4, so t's 4 go to brokers 2 and 3 (2 each): the
    # counts are 4, 2, 2, as even as moving only t allows; 4 copies.
    assert Counter(r[0] for r in after.values()) == {2: 2, 3: 2}
    assert out["stats"]["copies"] == 4
    assert out["stats"]["replicas_max_min_after"] == 2


def test_replication_factor_up_and_racks(tmp_path: Path) -> None:
    out = _json(tmp_path, ADD, "--topic", "a", "--strategy", "balanced", "--replication-factor", "3")
    after = _rows(out["proposed"])
    # RF 3 over three brokers in three racks: every partition holds 1, 2 and 3; the one copy per
    # partition is onto broker 3 (4 copies, the lower bound), and leaders stay one per broker as far as
    # 4 partitions over 3 brokers allow (2, 1, 1).
    assert all(sorted(r) == [1, 2, 3] for r in after.values())
    assert out["stats"]["copies"] == out["stats"]["lower_bound"] == 4
    assert sorted(Counter(r[0] for r in after.values()).values()) == [1, 1, 2]


def test_disable_rack_aware_ignores_racks(tmp_path: Path) -> None:
    # Brokers 1, 2 in rack x, 3, 4 in rack y; t's partitions each sit in one rack (1,2 and 3,4).
    doc = {
        "version": 1,
        "brokers": [
            {"id": 1, "rack": "x"},
            {"id": 2, "rack": "x"},
            {"id": 3, "rack": "y"},
            {"id": 4, "rack": "y"},
        ],
        "topics": [
            {
                "topic": "t",
                "partitions": [{"partition": 0, "replicas": [1, 2]}, {"partition": 1, "replicas": [3, 4]}],
            }
        ],
    }
    aware = _json(tmp_path, doc, "--topic", "t", "--strategy", "balanced")
    # Rack-aware: each partition must span x and y: one replica of each moves (2 copies).
    assert all({b <= 2 for b in r} == {True, False} for r in _rows(aware["proposed"]).values())
    assert aware["stats"]["copies"] == 2
    unaware = _json(tmp_path, doc, "--topic", "t", "--strategy", "balanced", "--disable-rack-aware")
    # Without racks the cluster is already balanced: nothing moves.
    assert _rows(unaware["proposed"]) == _rows(unaware["current"])
    assert unaware["stats"]["copies"] == 0


def test_topics_file_output_dir_and_the_json_result(tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"b"},{"topic":"a"}],"version":1}')
    out_dir = tmp_path / "plan"
    r = run_cli(
        "generate", "--snapshot", _snap(tmp_path, ADD), "--topics-to-move-json-file", str(topics),
        "--seed", "3", "--strategy", "balanced", "--output-dir", str(out_dir), "--format", "json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    res = orjson.loads(r.stdout)
    assert res["current_file"] == str(out_dir / "current.json")
    assert res["stats"]["copies"] == res["stats"]["lower_bound"] == 4
    proposed = orjson.loads((out_dir / "proposed.json").read_bytes())
    assert Counter(b for e in proposed["partitions"] for b in e["replicas"]) == {1: 4, 2: 4, 3: 4}


def test_same_bytes_whatever_the_snapshot_order(tmp_path: Path) -> None:
    shuffled = dict(ADD)
    shuffled["topics"] = [
        {"topic": t["topic"], "partitions": list(reversed(t["partitions"]))} for t in reversed(ADD["topics"])
    ]
    args = ("--topic", "b", "--topic", "a", "--strategy", "balanced")
    first = run_cli("generate", "--snapshot", _snap(tmp_path, ADD, "one.json"), "--seed", "8", *args)
    second = run_cli("generate", "--snapshot", _snap(tmp_path, shuffled, "two.json"), "--seed", "8", *args)
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout


def test_planning_the_result_again_changes_nothing(tmp_path: Path) -> None:
    out = _json(tmp_path, ADD, "--topic", "a", "--topic", "b", "--strategy", "balanced")
    again = dict(ADD)
    again["topics"] = [
        {"topic": t, "partitions": [{"partition": e["partition"], "replicas": e["replicas"]} for e in es]}
        for t, es in (
            (name, [e for e in out["proposed"]["partitions"] if e["topic"] == name]) for name in ("a", "b")
        )
    ]
    second = _json(tmp_path, again, "--topic", "a", "--topic", "b", "--strategy", "balanced")
    assert second["proposed"] == out["proposed"]
    assert second["stats"]["copies"] == second["stats"]["leader_changes"] == 0


def test_rf_larger_than_brokers_is_kafkas_error(tmp_path: Path) -> None:
    r = run_cli(
        "generate", "--snapshot", _snap(tmp_path, ADD), "--topic", "a", "--strategy", "balanced",
        "--replication-factor", "4",
    )  # fmt: skip
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr.startswith("Error: Replication factor: 4 larger than available brokers: 3.\n")
