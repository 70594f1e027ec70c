"""kafka-reassign-partitions (the drop-in) beside Kafka 4.3.1's own kafka-reassign-partitions, on the same KRaft
cluster and the same inputs: stdout and exit code of each action, after normalising only what must differ
(topic names where each tool moves its own topic, Kafka 4.x's current log dirs, our `verify` for its
`--verify` in one warning: docs/differences.md)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import ExtraCluster
from tests.helpers import run_dropin, wait_until
from tests.integration.kraft_support import FR, LDR, LR, Admin, any_dirs, idle, kafka_tool, plan

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# B/s. Measured on Kafka 4.3.1: a throttled follower still fetches about 1 MB per 5-10 s (a fetch takes up
# to replica.fetch.max.bytes before the quota is checked), so the moving partitions hold 6-10 MB: minutes.
THROTTLE = "1000"


def dropin(bootstrap: str, *args: str | os.PathLike[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_dropin("--bootstrap-server", bootstrap, *args, cwd=cwd)


def both(kc: ExtraCluster, tmp_path: Path, *args: str | os.PathLike[str]) -> tuple[Any, Any]:
    """(Kafka's result, ours) for the same arguments, Kafka's first."""
    return kafka_tool(kc.bootstrap, *args), dropin(kc.bootstrap, *args, cwd=tmp_path)


def ours_as_kafka(text: str) -> str:
    return text.replace("You must run verify periodically", "You must run --verify periodically")


@pytest.fixture
def clean(ka: Admin, tmp_path: Path) -> Iterator[Admin]:
    """Kafka's tool sets throttles our record does not know: every throttle rate comes off at the end (the
    topics go with ka's own finalizer, which also cancels what they still move)."""
    yield ka
    for t in list(ka.made):
        for tp in [tp for tp in ka.reassignments() if tp[0] == t]:
            kafka_tool(
                ka.bootstrap,
                "--cancel",
                "--reassignment-json-file",
                _one(tmp_path, tp),
                "--preserve-throttles",
            )
    for b in (1, 2, 3):
        ka.alter("brokers", b, {LR: None, FR: None, LDR: None})


def _one(directory: Path, tp: tuple[str, int]) -> str:
    path = directory / f"cancel-{tp[0]}-{tp[1]}.json"
    path.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": tp[0], "partition": tp[1], "replicas": [1]}]})
    )
    return str(path)


def test_list_generate_execute_verify_side_by_side(kc: ExtraCluster, clean: Admin, tmp_path: Path) -> None:
    ka = clean
    topic, _ = ka.make_topic("dropin", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    k, o = both(kc, tmp_path, "--list")
    assert (o.returncode, o.stdout) == (k.returncode, k.stdout) == (0, "No partition reassignments found.\n")

    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    k, o = both(kc, tmp_path, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,2,3")
    assert (k.returncode, o.returncode) == (0, 0), (k.stdout, o.stderr)
    k_current, k_proposed = _generated(any_dirs(k.stdout))
    o_current, o_proposed = _generated(o.stdout)
    assert o_current == k_current  # the current assignment, byte for byte
    for proposed in (k_proposed, o_proposed):  # Kafka's draw is random: the proposal's shape and validity
        parts = json.loads(proposed)["partitions"]
        assert sorted(p["partition"] for p in parts) == [0, 1, 2]
        assert all(len(set(p["replicas"])) == 2 and set(p["replicas"]) <= {1, 2, 3} for p in parts)

    target = plan(tmp_path / "p.json", {(topic, 0): [2, 3], (topic, 1): [3, 1]})
    back = plan(tmp_path / "back.json", {(topic, 0): [1, 2], (topic, 1): [2, 3]})
    k_exec = kafka_tool(
        kc.bootstrap, "--execute", "--reassignment-json-file", target, "--throttle", "50000000"
    )
    idle(ka)
    k_verify = kafka_tool(kc.bootstrap, "--verify", "--reassignment-json-file", target)
    kafka_tool(kc.bootstrap, "--execute", "--reassignment-json-file", back)
    idle(ka)
    assert kafka_tool(kc.bootstrap, "--verify", "--reassignment-json-file", back).returncode == 0
    o_exec = dropin(
        kc.bootstrap, "--execute", "--reassignment-json-file", target, "--throttle", "50000000", cwd=tmp_path
    )
    idle(ka)
    o_verify = dropin(kc.bootstrap, "--verify", "--reassignment-json-file", target, cwd=tmp_path)
    assert (o_exec.returncode, ours_as_kafka(o_exec.stdout)) == (k_exec.returncode, any_dirs(k_exec.stdout))
    assert k_exec.returncode == 0 and "Successfully started partition reassignments" in k_exec.stdout
    assert (o_verify.returncode, o_verify.stdout) == (k_verify.returncode, k_verify.stdout)
    assert "is completed." in k_verify.stdout and "Clearing topic-level throttles" in k_verify.stdout


def _generated(stdout: str) -> tuple[str, str]:
    lines = stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[3] == "Proposed partition reassignment configuration"
    return lines[1], lines[4]


def test_running_reassignment_verify_list_additional_cancel(
    kc: ExtraCluster, clean: Admin, tmp_path: Path
) -> None:
    """A slow move runs; both tools verify (exit 0 while in progress, as Kafka's), list, refuse a second plan
    without --additional (exit 1), add one with it (each its own topic, same shape), and cancel it."""
    ka = clean
    slow, _ = ka.make_topic("dslow", {0: [1, 2]}, messages=1000, size=10_000)
    mine = {who: ka.make_topic(f"d{who}", {0: [1, 2]}, messages=600, size=10_000)[0] for who in ("k", "o")}
    running = plan(tmp_path / "slow.json", {(slow, 0): [3, 2]})
    r = kafka_tool(kc.bootstrap, "--execute", "--reassignment-json-file", running, "--throttle", THROTTLE)
    assert r.returncode == 0, r.stdout
    wait_until(lambda: bool(ka.reassignments()), timeout=30, message="the slow move is listed")

    k, o = both(kc, tmp_path, "--verify", "--reassignment-json-file", running, "--preserve-throttles")
    assert (
        (o.returncode, o.stdout)
        == (k.returncode, k.stdout)
        == (
            0,
            f"Status of partition reassignment:\nReassignment of partition {slow}-0 is still in progress.\n\n",
        )
    )
    k, o = both(kc, tmp_path, "--list")
    assert (o.returncode, o.stdout) == (k.returncode, k.stdout)
    assert (
        k.stdout == f"Current partition reassignments:\n{slow}-0: replicas: 3,2,1. adding: 3. removing: 1.\n"
    )

    plans = {who: plan(tmp_path / f"{who}.json", {(t, 0): [3, 2]}) for who, t in mine.items()}
    k = kafka_tool(kc.bootstrap, "--execute", "--reassignment-json-file", plans["k"])
    o = dropin(kc.bootstrap, "--execute", "--reassignment-json-file", plans["o"], cwd=tmp_path)
    assert (k.returncode, o.returncode) == (1, 1)
    assert k.stdout.splitlines()[-1].startswith(
        "Cannot execute because there is an existing partition assignment."
    )
    assert "Cannot execute because there is an existing partition assignment." in o.stderr and o.stdout == ""

    args = ("--execute", "--additional", "--throttle", THROTTLE, "--reassignment-json-file")
    k = kafka_tool(kc.bootstrap, *args, plans["k"])
    o = dropin(kc.bootstrap, *args, plans["o"], cwd=tmp_path)
    assert (o.returncode, ours_as_kafka(o.stdout).replace(mine["o"], "T")) == (
        k.returncode,
        any_dirs(k.stdout).replace(mine["k"], "T"),
    )
    assert k.returncode == 0 and k.stdout.endswith(
        f"Successfully started partition reassignment for {mine['k']}-0\n"
    )
    moving = ka.reassignments()
    assert {(mine["k"], 0), (mine["o"], 0), (slow, 0)} <= set(moving)
    assert moving[(mine["o"], 0)] == moving[(mine["k"], 0)]  # the same move, started by each tool

    k = kafka_tool(kc.bootstrap, "--cancel", "--preserve-throttles", "--reassignment-json-file", plans["k"])
    o = dropin(
        kc.bootstrap, "--cancel", "--preserve-throttles", "--reassignment-json-file", plans["o"], cwd=tmp_path
    )
    assert (k.returncode, o.returncode) == (0, 0), (k.stdout, o.stderr)
    # Kafka always adds its line about log-dir moves (without a newline); ours only for a plan that has some.
    no_moves = "None of the specified partition moves are active."
    assert k.stdout.splitlines()[-1] == no_moves and not k.stdout.endswith("\n")
    assert o.stdout.replace(mine["o"], "T").splitlines() == k.stdout.replace(mine["k"], "T").splitlines()[:-1]
    assert k.stdout.startswith(f"Successfully cancelled partition reassignment for: {mine['k']}-0")
    wait_until(lambda: set(ka.reassignments()) == {(slow, 0)}, timeout=60, message="both cancels done")


def test_disallow_replication_factor_change(kc: ExtraCluster, clean: Admin, tmp_path: Path) -> None:
    ka = clean
    topic, _ = ka.make_topic("drf", {0: [1, 2], 1: [2, 3]})
    grow = plan(tmp_path / "grow.json", {(topic, 0): [1, 2, 3], (topic, 1): [3]})
    args = ("--execute", "--disallow-replication-factor-change", "--reassignment-json-file", grow)
    k = kafka_tool(kc.bootstrap, *args)
    idle(ka)
    o = dropin(kc.bootstrap, *args, cwd=tmp_path)
    lines = [
        f"{topic}-0: The replication factor is changed from 2 to 3",
        f"{topic}-1: The replication factor is changed from 2 to 1",
    ]
    assert k.returncode == 1 and k.stdout.splitlines()[-3:] == ["Error reassigning partition(s):", *lines]
    assert o.returncode == 1 and o.stderr.splitlines()[-2:] == lines and o.stdout == ""
    assert ka.partitions(topic)[0][0] == [1, 2] and ka.partitions(topic)[1][0] == [2, 3]  # nothing moved
    assert not list(tmp_path.glob("rollback-*.json"))  # refused before anything was written
