"""An execute with --max-moves-per-disk / --one-broker-at-a-time: the request it builds (cli/execute.py) and the
resume command it suggests (ops/request.py). Expected values written by hand."""

from __future__ import annotations

import json
from typing import Any

from reassign_cli.cli.execute import _dir_options, _one_batch
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
        dir_options=_dir_options(kw(max_moves_per_disk=2, one_broker_at_a_time=True)),
    )
    assert request_resume_command(req) == (
        "kafka-reassign execute --resume --reassignment-json-file p.json --batch-size 3 "
        "--replica-alter-log-dirs-throttle 1000 --max-moves-per-disk 2 --one-broker-at-a-time"
    )
    assert _dir_options(kw()) == ()


def test_per_disk_pacing_alone_runs_a_plan_naming_log_dirs_as_one_batch() -> None:
    given = kw(max_moves_per_disk=1)
    req = ExecuteRequest("p.json", plan(["/d1", "any"], None, None))
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
