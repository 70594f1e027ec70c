"""One rule for every subcommand (issue 30 item 12, docs/kraft.md): --zookeeper alone, --bootstrap-server alone,
or both together (ZooKeeper mode with the brokers beside it). None of them is a usage error: each command goes
on to connect, and fails to (exit 1) since nothing listens at the addresses. `cancel` alone needs the brokers
(its one request is the admin API's): with ZooKeeper alone it says so and names the command that works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

NOWHERE = "127.0.0.1:1"  # nothing listens on port 1: refused at once
CONNECTIONS = {
    "zookeeper": ("--zookeeper", NOWHERE),
    "bootstrap": ("--bootstrap-server", NOWHERE),
    "both": ("--zookeeper", NOWHERE, "--bootstrap-server", NOWHERE),
}


def _subcommands(plan: Path) -> dict[str, tuple[str, ...]]:
    file = ("--reassignment-json-file", str(plan))
    return {
        "list": ("list",),
        "snapshot": ("snapshot", "-o", "snap.json"),
        "generate": ("generate", "--topic", "t", "--broker-list", "1,2,3"),
        "execute": ("execute", *file),
        "verify": ("verify", *file),
        "cancel": ("cancel", *file),
        "elect-leaders": ("elect-leaders", "--all"),
    }


SUBCOMMANDS = ["list", "snapshot", "generate", "execute", "verify", "cancel", "elect-leaders"]


@pytest.mark.parametrize("connection", CONNECTIONS)
@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_every_subcommand_takes_either_alone_or_both(
    tmp_path: Path, subcommand: str, connection: str
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]})
    )
    args = _subcommands(plan)[subcommand]
    env = {"KAFKA_REASSIGN_ZOOKEEPER": None, "KAFKA_REASSIGN_BOOTSTRAP": None}
    r = run_cli(*args, *CONNECTIONS[connection], "--connect-timeout", "2", env=env, cwd=tmp_path)
    assert "cannot be used together" not in r.stderr
    if subcommand == "cancel" and connection == "zookeeper":
        assert r.returncode == 2, r.stderr
        assert r.stderr.splitlines()[-1] == (
            f"Run: kafka-reassign cancel --reassignment-json-file {plan} --zookeeper {NOWHERE} "
            "--connect-timeout 2 --bootstrap-server HOST:PORT"
        )
        return
    assert r.returncode == 1, r.stderr
    first = r.stderr.splitlines()[0]
    expected = (
        "Error: cannot connect to ZooKeeper"
        if connection != "bootstrap"
        else "Error: cannot connect to Kafka"
    )
    assert first.startswith(expected), r.stderr
