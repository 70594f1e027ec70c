"""Batches: --batch-size N submits the plan N partitions at a time, each batch complete before the next
trigger is created; a plan too large for one znode without --batch-size runs as batches by itself (stored
in the cluster, carried on by verify steps). The znode limit (~1 MB) is lowered in-process for the oversize cases, so a handful of real
partitions exceed it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.reassign_support import (
    FOLLOWER_REPLICAS,
    Mover,
    await_idle,
    config,
    get_json,
)


def _run(argv: list[str], cluster: Any, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    from reassign_cli.cli import main

    monkeypatch.setenv("KAFKA_REASSIGN_ZOOKEEPER", cluster.zookeeper)
    monkeypatch.chdir(cwd)
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return int(exc.value.code or 0)


def test_batches_run_one_after_another(
    cluster: Any,
    make_topic: Any,
    consume_all: Any,
    zk: Any,
    mover: Mover,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from reassign_cli.backends.zookeeper.fenced import FencedThrottles

    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1]}, messages=300)
    targets = {(topic, 0): [2, 3], (topic, 1): [3, 1], (topic, 2): [1, 2]}
    plan = mover.plan("move.json", targets)
    mover.plans.append((plan, [topic]))
    await_idle(zk)

    real_create = FencedThrottles.create_trigger
    created: list[list[tuple[str, int]]] = []

    def checked_create(self: Any, data: bytes) -> bool:
        batch = [(e["topic"], e["partition"]) for e in json.loads(data)["partitions"]]
        # Every earlier batch is complete in the real cluster before this trigger is created.
        doc = get_json(zk, f"/brokers/topics/{topic}")
        for earlier in created:
            for t, p in earlier:
                assert doc["partitions"][str(p)] == targets[(t, p)]
                assert not doc["adding_replicas"].get(str(p)) and not doc["removing_replicas"].get(str(p))
        assert not zk.exists("/admin/reassign_partitions")
        # ... and the throttle lists name this batch's partitions only.
        (p,) = (p for _, p in batch)
        assert config(zk, "topics", topic)[FOLLOWER_REPLICAS] == f"{p}:{targets[(topic, p)][1]}"
        created.append(batch)
        return real_create(self, data)

    monkeypatch.setattr(FencedThrottles, "create_trigger", checked_create)
    code = _run(
        [
            "execute",
            "--reassignment-json-file",
            str(plan),
            "--batch-size",
            "1",
            "--throttle",
            "50000000",
            "--poll-interval",
            "0.3",
            "--timeout",
            "120",
        ],
        cluster,
        mover.tmp,
        monkeypatch,
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert created == [[(topic, 0)], [(topic, 1)], [(topic, 2)]]
    assert [line for line in out.splitlines() if line.startswith("Successfully started")] == [
        f"Successfully started partition reassignment for {topic}-{p}" for p in range(3)
    ]
    assert [line for line in err.splitlines() if line.startswith("Batch ")] == [
        "Batch 1/3: 1 partition",
        "Batch 2/3: 1 partition",
        "Batch 3/3: 1 partition",
    ]
    assert out.splitlines()[-2:] == [
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    assert FOLLOWER_REPLICAS not in config(zk, "topics", topic)
    doc = get_json(zk, f"/brokers/topics/{topic}")
    assert doc["partitions"] == {"0": [2, 3], "1": [3, 1], "2": [1, 2]}
    assert len(consume_all(topic)) == 300


def test_oversize_plan_runs_as_batches_by_itself(
    cluster: Any,
    make_topic: Any,
    zk: Any,
    zk_dump: Any,
    mover: Mover,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 25 item 9: without --batch-size (and without --wait) a plan larger than one znode is stored
    and runs as batches (was: exit 3); one line says so; `verify` steps carry it on to the end."""
    import reassign_cli.backends.zookeeper.backend as zk_backend
    from tests.integration.test_step_zk import _forget

    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1]})
    plan = mover.plan("move.json", {(topic, p): [1, 2, 3] for p in range(3)})
    mover.plans.append((plan, [topic]))
    mover.finally_do.append(lambda: _forget(zk))
    entry = len(f'{{"topic":"{topic}","partition":0,"replicas":[1,2,3]}}')
    # two entries fit, not three (beside the trigger: the room for the mark's delete and the record's head)
    monkeypatch.setattr(
        zk_backend, "max_trigger_bytes", lambda: 30 + 2 * entry + zk_backend.TRIGGER_COMPANIONS
    )
    await_idle(zk)
    # First a dry run: with --batch-size larger than what fits, the byte limit still cuts the batches: 2 + 1.
    code = _run(
        ["execute", "--reassignment-json-file", str(plan), "--batch-size", "10", "--dry-run"],
        cluster,
        mover.tmp,
        monkeypatch,
    )
    out, _ = capsys.readouterr()
    assert code == 0
    triggers = [line for line in out.splitlines() if line.startswith("create /admin/reassign_partitions ")]
    assert [len(json.loads(t.split(" ", 2)[2])["partitions"]) for t in triggers] == [2, 1]
    # Then the real run, without --batch-size
    code = _run(
        ["execute", "--reassignment-json-file", str(plan), "--throttle", "1000000"],
        cluster,
        mover.tmp,
        monkeypatch,
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    said = [line for line in err.splitlines() if "more than one znode holds" in line]
    assert len(said) == 1 and said[0].startswith("The reassignment of 3 partitions needs "), err
    assert "it runs as 2 batches" in said[0] and "Started 2 moves" in err, err
    assert zk.exists("/reassign_cli/plan")
    last: list[str] = []

    def step() -> bool:
        # one step, as cron runs it (a batch of two partitions of no data, then one), until done. Bounded by
        # time, not by a count of steps: a step that starts nothing takes ~20 ms, so 120 of them once gave
        # a replica joining its ISR on a loaded machine only a few seconds (it failed, 1 moving)
        code = _run(["verify"], cluster, mover.tmp, monkeypatch)
        _, err = capsys.readouterr()
        last[:] = [err]
        assert code in (0, 4), err
        return code == 0

    wait_until(step, timeout=300, interval=0.2, message=lambda: f"the stored plan done: {last[0]}")
    assert "The stored plan is done: 3 moves" in last[0], last[0]
    assert not zk.exists("/reassign_cli/plan") and not zk.exists("/admin/reassign_partitions")
    doc = get_json(zk, f"/brokers/topics/{topic}")
    assert doc["partitions"] == {"0": [1, 2, 3], "1": [1, 2, 3], "2": [1, 2, 3]}
    assert FOLLOWER_REPLICAS not in (config(zk, "topics", topic) or {})
