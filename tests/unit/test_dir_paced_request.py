"""An execute with --max-moves-per-disk / --one-broker-at-a-time: the request it builds (cli/execute.py) and the
resume command it suggests (ops/request.py). Expected values written by hand."""

from __future__ import annotations

import json
from typing import Any

from reassign_cli.cli.execute import _one_batch
from reassign_cli.ops.request import ExecuteRequest, request_resume_command


def kw(**given: Any) -> dict[str, Any]:
    return {"max_moves_per_disk": None, "one_broker_at_a_time": False, "batch_size": None, **given}


def plan(*log_dirs: list[str] | None) -> bytes:
    parts = []
    for p, dirs in enumerate(log_dirs):
        entry: dict[str, Any] = {"topic": "t", "partition": p, "replicas": [1, 2]}
        if dirs is not None:
            entry["log_dirs"] = dirs
        parts.append(entry)
    return json.dumps({"version": 1, "partitions": parts}).encode()


def test_the_resume_command_keeps_the_log_dir_pacing_given() -> None:
    req = ExecuteRequest(
        "p.json",
        b"",
        batch_size=3,
        log_dir_throttle=1000,
        dir_cap=2,
        one_broker=True,
    )
    assert request_resume_command(req) == (
        "kafka-reassign execute --resume --reassignment-json-file p.json --batch-size 3 "
        "--replica-alter-log-dirs-throttle 1000 --max-moves-per-disk 2 --one-broker-at-a-time"
    )
    assert request_resume_command(ExecuteRequest("p.json", b"", batch_size=3)) == (
        "kafka-reassign execute --resume --reassignment-json-file p.json --batch-size 3"
    )


def test_per_disk_pacing_alone_runs_a_plan_naming_log_dirs_as_one_batch() -> None:
    given = kw(max_moves_per_disk=1)
    req = ExecuteRequest("p.json", plan(["/d1", "any"], None, None), dir_cap=1)
    _one_batch(req, given)
    assert (req.batch_size, given["batch_size"]) == (3, 3)


def test_nothing_changes_without_log_dirs_or_per_disk_pacing_or_with_a_window() -> None:
    for req, given in (
        (ExecuteRequest("p.json", plan(None, ["any", "any"])), kw(max_moves_per_disk=1)),
        (ExecuteRequest("p.json", plan(["/d1", "any"])), kw()),
        (ExecuteRequest("p.json", plan(["/d1", "any"]), max_moves=1), kw(one_broker_at_a_time=True)),
        (
            ExecuteRequest("p.json", plan(["/d1", "any"]), batch_size=1),
            kw(max_moves_per_disk=1, batch_size=1),
        ),
        (ExecuteRequest("p.json", plan(["/d1", "any"]), resume=True), kw(max_moves_per_disk=1)),
    ):
        before = req.batch_size
        _one_batch(req, given)
        assert req.batch_size == before == given["batch_size"], req


def test_the_log_dir_pacing_is_kept_beside_the_plan_and_read_back() -> None:
    import orjson

    from reassign_cli.core import pacing as pc

    data = plan(["/d1", "any"])
    kept = pc.Pace(None, None, None, 5000, batch_size=1, dir_cap=2, one_broker=True)
    doc = orjson.loads(pc.dump_pace(kept, data))
    assert (doc["max_moves_per_disk"], doc["one_broker_at_a_time"], doc["batch_size"]) == (2, True, 1)
    assert pc.load_pace(pc.dump_pace(kept, data), data) == kept
    plain = pc.Pace(2, None)
    assert "max_moves_per_disk" not in orjson.loads(pc.dump_pace(plain, data))
    assert pc.load_pace(pc.dump_pace(plain, data), data) == plain
    for bad in (0, "1", True):
        doc["max_moves_per_disk"] = bad
        assert pc.load_pace(orjson.dumps(doc), data) is None, bad
    doc["max_moves_per_disk"], doc["one_broker_at_a_time"] = 1, "yes"
    assert pc.load_pace(orjson.dumps(doc), data) is None


def test_a_resume_without_the_log_dir_pacing_goes_on_with_the_kept_one() -> None:
    from reassign_cli.cli.execute import _kept_rates
    from reassign_cli.core import pacing as pc

    class Report:
        def __init__(self) -> None:
            self.lines: list[str] = []

        def info(self, line: str) -> None:
            self.lines.append(line)

    report = Report()
    req = ExecuteRequest("p.json", b"", resume=True)
    _kept_rates(req, pc.Pace(None, None, batch_size=3, dir_cap=2, one_broker=True), report)  # type: ignore[arg-type]
    assert (req.dir_cap, req.one_broker) == (2, True)
    assert report.lines == [
        "Resuming with --max-moves-per-disk 2 --one-broker-at-a-time, as kept beside the plan"
    ]
    given = ExecuteRequest("p.json", b"", resume=True, dir_cap=4)
    _kept_rates(given, pc.Pace(None, None, batch_size=3, dir_cap=2), report)  # type: ignore[arg-type]
    assert (given.dir_cap, given.one_broker) == (4, False)
