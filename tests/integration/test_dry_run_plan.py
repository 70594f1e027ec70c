"""`execute --dry-run` on the real cluster lists exactly what the real run then starts (issue 30 item 5):
the partitions it skips (already at their target), its batches through ZooKeeper, and through the admin
API the window's moves in the order they start. Before, the dry run counted the no-op partition as a
move (one batch more than the run made) and showed batches where the admin API runs a window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import Cluster
from tests.integration.reassign_support import Mover
from tests.integration.test_sizes import _produce_some

# t-0..t-4 on broker 1 (RF 1; broker 1 leads each, so every move counts against it); t-2 stays (a no-op).
TARGETS = {0: [2], 1: [3], 2: [1], 3: [2], 4: [3]}
RECORDS = {0: 10, 1: 50, 3: 30, 4: 20}  # x 1000-byte values: t-1 largest, then t-3, t-4, t-0


def _started(doc: dict[str, Any]) -> list[list[str]]:
    """The partitions of each `Successfully started partition reassignment(s) for ...` line, in order."""
    head = "Successfully started partition reassignment"
    return [m.split(" for ", 1)[1].split(",") for m in doc["messages"] if m.startswith(head)]


def test_dry_run_lists_what_the_run_starts(
    cluster: Cluster, make_topic: Any, mover: Mover, tmp_path: Path
) -> None:
    topic = make_topic({p: [1] for p in TARGETS})
    _produce_some(cluster.bootstrap, topic, RECORDS)
    plan = mover.plan("plan.json", {(topic, p): r for p, r in TARGETS.items()})
    name = [f"{topic}-{p}" for p in range(5)]

    # ZooKeeper: --batch-size 1 skips t-2 and makes 4 batches, in the dry run as in the run.
    args = ["--batch-size", "1", "--format", "json", "--rollback-file", str(tmp_path / "rb.json")]
    dry = mover.execute(plan, *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)["run_plan"]
    assert listed["skipped"] == [name[2]]
    assert listed["batches"] == [[name[0]], [name[1]], [name[3]], [name[4]]]
    real = mover.execute(plan, *args)
    assert real.returncode == 0, real.stderr
    assert _started(json.loads(real.stdout)) == listed["batches"]

    # Back, then the admin API's window at 1 move per broker: the moves start one at a time, largest
    # first (sizes from the brokers); the dry run names the first and the queue's order.
    back = mover.plan("back.json", {(topic, p): [1] for p in TARGETS})
    r = mover.execute(back, "--batch-size", "5", "--rollback-file", str(tmp_path / "rb2.json"))
    assert r.returncode == 0, r.stderr
    bs = ["--bootstrap-server", cluster.bootstrap, "--max-moves-per-broker", "1", "--format", "json"]
    bs += ["--rollback-file", str(tmp_path / "rb3.json"), "--poll-interval", "0.5"]
    dry = mover.run_cli(
        "execute",
        "--reassignment-json-file",
        str(plan),
        *bs,
        "--dry-run",
        env={"KAFKA_REASSIGN_ZOOKEEPER": None},
    )
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)["run_plan"]
    assert listed["skipped"] == [name[2]] and "batches" not in listed
    assert listed["window"] == {
        "max_moves_per_broker": 1,
        "order": "largest-first",
        "first": [name[1]],
        "queued": [name[3], name[4], name[0]],
    }
    real = mover.run_cli(
        "execute", "--reassignment-json-file", str(plan), *bs, env={"KAFKA_REASSIGN_ZOOKEEPER": None}
    )
    assert real.returncode == 0, real.stderr
    assert _started(json.loads(real.stdout)) == [
        [m] for m in [*listed["window"]["first"], *listed["window"]["queued"]]
    ]
