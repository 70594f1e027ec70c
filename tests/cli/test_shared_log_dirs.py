"""--shared-log-dirs (issue 30, item 20): how a snapshot records the way log dirs were counted in each
broker's capacity, what generate says about a snapshot taken before the choice existed, and where the
flag is refused. The counting itself: tests/unit/test_balance_capacity.py; on the real cluster:
tests/integration/test_capacity.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from reassign_cli.core import snapshot, snapshot_lines
from reassign_cli.core.model import Capacity
from tests.cli.test_generate_capacity import _doc
from tests.helpers import run_cli

PREDATES = "predate --shared-log-dirs"


def _with_rule(rule: bool | None) -> dict[str, Any]:
    doc = _doc({1: (1000, 1000), 2: (3000, 3000)})
    if rule is not None:
        for b in doc["brokers"]:
            b["disk_shared_log_dirs"] = rule
    return doc


@pytest.mark.parametrize("rule", [True, False, None])
def test_the_rule_round_trips_in_both_layouts(rule: bool | None) -> None:
    state = snapshot.loads(orjson.dumps(_with_rule(rule)))
    assert [state.capacities[b].shared for b in (1, 2)] == [rule, rule]
    again = snapshot.loads(snapshot.dumps(state))
    assert [again.capacities[b].shared for b in (1, 2)] == [rule, rule]
    lines = snapshot_lines.loads(b"".join(snapshot_lines.dump_lines(state)))
    assert [lines.capacities[b].shared for b in (1, 2)] == [rule, rule]
    written = orjson.loads(snapshot.dumps(state))["brokers"][0]
    assert written.get("disk_shared_log_dirs") == rule
    assert lines.capacities[1] == Capacity(1000, 1000)


def _gen(tmp_path: Path, doc: dict[str, Any], *args: str) -> Any:
    path = tmp_path / "snap.json"
    path.write_bytes(orjson.dumps(doc))
    return run_cli(
        "generate", "--snapshot", str(path), "--topic", "a", "--seed", "3", "--strategy", "balanced", *args
    )  # fmt: skip


def test_an_old_snapshot_is_used_as_it_is_and_said_once(tmp_path: Path) -> None:
    """Capacities without the rule were counted by the old one (log dirs of one size, equally full,
    once): used as stored, with one warning; the same numbers with a rule plan the same, silently."""
    old = _gen(tmp_path, _with_rule(None), "--balance", "bytes")
    new = _gen(tmp_path, _with_rule(False), "--balance", "bytes")
    assert old.returncode == new.returncode == 0, old.stderr
    assert old.stderr.count(PREDATES) == 1 and PREDATES not in new.stderr
    assert old.stdout == new.stdout
    # Only --balance bytes uses capacities: nothing said otherwise.
    replicas = _gen(tmp_path, _with_rule(None))
    assert replicas.returncode == 0 and PREDATES not in replicas.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--balance", "bytes", "--shared-log-dirs"], "give it to `snapshot`"),
        (["--shared-log-dirs"], "--shared-log-dirs needs --balance bytes"),
    ],
)
def test_refused_where_no_disk_is_read(tmp_path: Path, args: list[str], message: str) -> None:
    r = _gen(tmp_path, _with_rule(None), *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert r.stdout == ""


def test_a_bad_rule_is_refused(tmp_path: Path) -> None:
    doc = _with_rule(True)
    doc["brokers"][1]["disk_shared_log_dirs"] = "yes"
    r = _gen(tmp_path, doc, "--balance", "bytes")
    assert r.returncode == 3 and 'broker 2: "disk_shared_log_dirs" must be true or false' in r.stderr
