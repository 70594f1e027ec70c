"""verify --metrics-file's content, without a cluster: the bytes still to copy (worked out by hand), and the
textfile as prometheus_client's own parser reads it back. The real cluster's test is
tests/integration/test_verify_metrics.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from reassign_cli.core.progress import PartitionProgress, Status
from reassign_cli.errors import UsageError
from reassign_cli.render.metrics import (
    VerifyMetrics,
    bytes_remaining,
    parse_metrics_labels,
    plan_labels,
    registry,
    write_metrics,
)


def _p(
    partition: int, status: Status, target: list[int], current: list[int], adding: list[int]
) -> PartitionProgress:
    return PartitionProgress("t", partition, target, current, status, None, adding, [], None)


RESULTS = [
    _p(0, Status.COMPLETE, [1, 2], [1, 2], []),
    # moving 1,2 -> 2,3: origin replicas 1 (1000 B) and 2 (900 B); 3 holds 400 B so far
    _p(1, Status.IN_PROGRESS, [2, 3], [1, 2, 3], [3]),
    # in the trigger, not started: 3 and 4 to add, nothing on them yet
    _p(2, Status.IN_PROGRESS, [3, 4], [1], []),
    _p(3, Status.NOT_AS_PLANNED, [1, 3], [1, 2], []),
]
SIZES = {("t", 1, 1): 1000, ("t", 1, 2): 900, ("t", 1, 3): 400, ("t", 2, 1): 50}


def parse(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def plan_key(path: Path, **extra: str) -> tuple[tuple[str, str], ...]:
    """The labels of a plan's series, as parse() keys them: its absolute path and its SHA-256's first 12
    hex digits (hashlib over the file here), the operator's extra labels."""
    labels = {
        "plan": str(path.absolute()),
        "plan_sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:12],
        **extra,
    }
    return tuple(sorted(labels.items()))


def statuses(got: dict[str, dict[tuple[tuple[str, str], ...], float]]) -> dict[str, float]:
    """status -> partitions, from a parsed file."""
    return {dict(k)["status"]: n for k, n in got["kafka_reassign_verify_partitions"].items()}


def rates(got: dict[str, dict[tuple[tuple[str, str], ...], float]]) -> dict[tuple[str, str], float]:
    """(broker, kind) -> our throttle rate, from a parsed file."""
    return {
        (dict(k)["broker"], dict(k)["kind"]): v
        for k, v in got["kafka_reassign_verify_throttle_rate_bytes"].items()
    }


def assert_complete(text: str, key: tuple[tuple[str, str], ...]) -> None:
    """The file a verify writes once the plan is complete: nothing left, no rate of ours, exit 0."""
    got = parse(text)
    assert statuses(got) == {"complete": 1, "in_progress": 0, "not_as_planned": 0, "queued": 0}
    assert got["kafka_reassign_verify_bytes_remaining"] == {key: 0}
    assert "kafka_reassign_verify_throttle_rate_bytes" not in got
    assert got["kafka_reassign_verify_exit_code"] == {key: 0}


def test_bytes_remaining_by_hand() -> None:
    # partition 1: 1000 - 400 = 600; partition 2: 50 for each of 3 and 4 = 100
    assert bytes_remaining(RESULTS, SIZES) == 700
    assert bytes_remaining(RESULTS, None) is None
    # a moving partition whose origin replicas have no size: unknown, not a guess
    assert bytes_remaining(RESULTS, {k: v for k, v in SIZES.items() if k[1] != 2}) is None
    # nothing moving: nothing remains, sizes or not
    assert bytes_remaining(RESULTS[:1], None) == 0


def test_textfile_parsed_back(tmp_path: Path) -> None:
    path = tmp_path / "verify.prom"
    m = VerifyMetrics(
        {"plan": "/srv/plan.json"},
        4,
        1700000000.5,
        RESULTS,
        700,
        {1: {"follower.replication.throttled.rate": 10000}},
    )
    write_metrics(str(path), m)
    text = path.read_text()
    assert "# HELP kafka_reassign_verify_partitions " in text
    assert "# TYPE kafka_reassign_verify_partitions gauge" in text
    got = parse(text)
    plan = ("plan", "/srv/plan.json")
    assert got["kafka_reassign_verify_partitions"] == {
        (plan, ("status", "complete")): 1,
        (plan, ("status", "in_progress")): 2,
        (plan, ("status", "not_as_planned")): 1,
        (plan, ("status", "queued")): 0,
    }
    assert got["kafka_reassign_verify_bytes_remaining"] == {(plan,): 700}
    assert got["kafka_reassign_verify_throttle_rate_bytes"] == {
        (("broker", "1"), ("kind", "follower"), plan): 10000
    }
    assert got["kafka_reassign_verify_exit_code"] == {(plan,): 4}
    assert got["kafka_reassign_verify_last_run_timestamp_seconds"] == {(plan,): 1700000000.5}
    # nothing left beside it: the temporary file was renamed into place
    assert [p.name for p in tmp_path.iterdir()] == ["verify.prom"]


def test_failed_run_reports_only_its_code_and_time() -> None:
    text = registry(VerifyMetrics({"plan": "p.json"}, 1, 5.0)).collect()
    names = {f.name for f in text}
    assert names == {"kafka_reassign_verify_exit_code", "kafka_reassign_verify_last_run_timestamp_seconds"}


def test_two_plans_of_one_name_give_distinct_series(tmp_path: Path) -> None:
    """generate --output-dir names every plan proposed.json: two of them verified into two files (the
    collector reads them together) must not give the same series."""
    texts = []
    for d, body in (("a", b'{"version":1,"partitions":[]}'), ("b", b'{"version":1,"partitions":[] }')):
        plan = tmp_path / d / "proposed.json"
        plan.parent.mkdir()
        plan.write_bytes(body)
        labels = plan_labels(str(plan), plan.read_bytes(), {"cluster": "eu1"})
        assert labels == {
            "plan": str(plan),
            "plan_sha256": hashlib.sha256(body).hexdigest()[:12],
            "cluster": "eu1",
        }
        write_metrics(str(tmp_path / f"{d}.prom"), VerifyMetrics(labels, 0, 1.0, RESULTS[:1], 0))
        texts.append((tmp_path / f"{d}.prom").read_text())
    a, b = (set(parse(t)["kafka_reassign_verify_exit_code"]) for t in texts)
    assert a and b and not a & b
    (key,) = a
    assert dict(key) == {
        "plan": str(tmp_path / "a" / "proposed.json"),
        "plan_sha256": "c4eb806c53c4",  # printf ... | sha256sum, by hand
        "cluster": "eu1",
    }
    # a relative path is made absolute; an unreadable plan has an empty digest
    assert plan_labels("x.json", None)["plan_sha256"] == ""
    assert plan_labels("x.json", None)["plan"].endswith("/x.json")


def test_metrics_label_parsing() -> None:
    assert parse_metrics_labels(["cluster=eu1", "team=a=b", "empty="]) == {
        "cluster": "eu1",
        "team": "a=b",
        "empty": "",
    }
    for bad in (["nolabel"], ["1x=a"], ["__x=a"], ["a-b=c"], ["plan=x"], ["status=x"], ["a=1", "a=2"]):
        with pytest.raises(UsageError):
            parse_metrics_labels(bad)


def test_log_dir_moves_by_status(tmp_path: Path) -> None:
    from reassign_cli.core.progress import MoveStatus, ReplicaMoveProgress

    moves = [
        ReplicaMoveProgress("t", 0, 1, "/b", "/a", None, MoveStatus.NOT_MOVING),
        ReplicaMoveProgress("t", 1, 1, "/b", "/a", "/b", MoveStatus.IN_PROGRESS),
        ReplicaMoveProgress("t", 2, 1, "/b", "/b", None, MoveStatus.COMPLETE),
        ReplicaMoveProgress("t", 3, 1, "/b", "/b", None, MoveStatus.COMPLETE),
    ]
    path = tmp_path / "m.prom"
    write_metrics(
        str(path), VerifyMetrics({"plan": "/p.json", "plan_sha256": "x"}, 4, 1.0, RESULTS, moves=moves)
    )
    (fam,) = [f for f in text_string_to_metric_families(path.read_text()) if f.name.endswith("log_dir_moves")]
    got = {s.labels["status"]: s.value for s in fam.samples}
    assert got == {
        "complete": 2,
        "in_progress": 1,
        "elsewhere": 0,
        "not_moving": 1,
        "missing": 0,
        "unknown": 0,
        "queued": 0,
    }
    # without log-dir moves checked: no such series
    write_metrics(str(path), VerifyMetrics({"plan": "/p.json", "plan_sha256": "x"}, 0, 1.0, RESULTS))
    assert "log_dir_moves" not in path.read_text()
