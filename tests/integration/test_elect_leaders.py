"""elect-leaders on the real cluster: a pure reorder leaves the old leaders in place (auto leader
rebalance is off), elect-leaders moves them, a second run has nothing to do; refusals write nothing."""

from __future__ import annotations

import json
from typing import Any

from tests.cli.test_snapshot import broker_v5
from tests.clusters import kazoo_session
from tests.helpers import run_cli, wait_until
from tests.integration.reassign_support import Mover, get_json

ELECTION = "/admin/preferred_replica_election"


def _leaders(zk: Any, topic: str, n: int) -> list[int]:
    return [get_json(zk, f"/brokers/topics/{topic}/partitions/{p}/state")["leader"] for p in range(n)]


def test_reorder_then_elect(make_topic: Any, consume_all: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3]}, messages=20)
    assert _leaders(zk, topic, 2) == [1, 2]
    plan = mover.plan("reorder.json", {(topic, 0): [2, 1], (topic, 1): [3, 2]})
    r = mover.execute(plan, "--wait", "--timeout", "60", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    # A pure reorder completes at once and does not move leadership (KAFKA-SPEC §4.4).
    assert _leaders(zk, topic, 2) == [1, 2]

    r = mover.cli("elect-leaders", "--reassignment-json-file", plan, "--timeout", "60")
    assert (r.returncode, r.stdout) == (
        0,
        f"Successfully completed leader election (PREFERRED) for partitions {topic}-0, {topic}-1\n",
    ), r.stderr
    assert _leaders(zk, topic, 2) == [2, 3]
    wait_until(lambda: zk.exists(ELECTION) is None, timeout=30, message="the controller removed the trigger")

    again = mover.cli("elect-leaders", "--topic", topic, "--format", "json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["status"] == "complete"
    assert [(p["partition"], p["leader"], p["status"]) for p in doc["partitions"]] == [
        (0, 2, "elected"),
        (1, 3, "elected"),
    ]
    assert sorted(consume_all(topic)) == sorted(f"{topic}-value-{i}".encode() for i in range(20))


def test_refused_while_an_election_is_pending(zk_chroot: str) -> None:
    # A synthetic cluster (no controller in this chroot): the trigger stays, so the refusal is observable.
    with kazoo_session(zk_chroot) as z:
        z.create("/brokers/ids/1", broker_v5(1, None), makepath=True)
        z.create("/brokers/ids/2", broker_v5(2, None))
        z.create("/brokers/topics/t", b'{"version":3,"partitions":{"0":[2,1]}}', makepath=True)
        z.create(
            "/brokers/topics/t/partitions/0/state",
            b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}',
            makepath=True,
        )
        z.create(ELECTION, b'{"version":1,"partitions":[{"topic":"x","partition":0}]}', makepath=True)
        r = run_cli("elect-leaders", "--topic", "t", zookeeper=zk_chroot)
        assert (r.returncode, r.stdout) == (4, "")
        assert r.stderr.startswith(
            f"Error: A preferred leader election is already in progress ({ELECTION} exists)"
        )
        assert z.get(ELECTION)[0] == b'{"version":1,"partitions":[{"topic":"x","partition":0}]}'

        missing = run_cli("elect-leaders", "--topic", "nope", zookeeper=zk_chroot)
        assert (missing.returncode, missing.stderr) == (3, "Error: Topic not found: nope\n")
        both = run_cli("elect-leaders", "--topic", "t", "--all", zookeeper=zk_chroot)
        assert both.returncode == 2
        assert "exactly one of --reassignment-json-file, --topic or --all" in both.stderr


def test_execute_wait_elect_leaders(make_topic: Any, consume_all: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3]}, messages=12)
    plan = mover.plan("reorder.json", {(topic, 0): [2, 1], (topic, 1): [3, 2]})
    refused = mover.execute(plan, "--elect-leaders")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert "--elect-leaders needs --wait" in refused.stderr
    r = mover.execute(plan, "--wait", "--elect-leaders", "--timeout", "60", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == (
        f"Successfully completed leader election (PREFERRED) for partitions {topic}-0, {topic}-1"
    )
    assert _leaders(zk, topic, 2) == [2, 3]
    assert sorted(consume_all(topic)) == sorted(f"{topic}-value-{i}".encode() for i in range(12))


def test_a_large_election_goes_in_batches(
    make_topic: Any, zk: Any, mover: Mover, cluster: Any, monkeypatch: Any, capsys: Any
) -> None:
    """An election larger than one znode holds (here made small: two partitions per znode) goes in
    batches, each created once the real controller has taken up and removed the one before."""
    import pytest

    from reassign_cli.backends.zookeeper import election
    from reassign_cli.cli import main

    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3], 4: [2, 1]}, messages=5)
    plan = mover.plan(
        "reorder.json",
        {(topic, 0): [2, 1], (topic, 1): [3, 2], (topic, 2): [1, 3], (topic, 3): [3, 1], (topic, 4): [1, 2]},
    )
    r = mover.execute(plan, "--wait", "--timeout", "60", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert _leaders(zk, topic, 5) == [1, 2, 3, 1, 2]
    two = len(election.encode_election([(topic, 0), (topic, 1)]))
    monkeypatch.setattr(election, "max_trigger_bytes", lambda: two)
    created: list[bytes] = []
    real_create = election.create_election

    def recording(session: Any, data: bytes) -> None:
        created.append(data)
        real_create(session, data)

    monkeypatch.setattr(election, "create_election", recording)
    monkeypatch.setenv("KAFKA_REASSIGN_ZOOKEEPER", cluster.zookeeper)
    with pytest.raises(SystemExit) as exc:
        main(["elect-leaders", "--reassignment-json-file", str(plan), "--timeout", "60"])
    assert exc.value.code == 0, capsys.readouterr().err
    assert [[e["partition"] for e in json.loads(d)["partitions"]] for d in created] == [[0, 1], [2, 3], [4]]
    assert _leaders(zk, topic, 5) == [2, 3, 1, 3, 1]
    wait_until(lambda: zk.exists(ELECTION) is None, timeout=30, message="the controller removed the trigger")
