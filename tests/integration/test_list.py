"""list: what is reassigning now, from /admin/reassign_partitions and the AR/RR of topic znodes, in Kafka
3.9's --list format. Exact states are built in a fresh chroot (no controller there to change them)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.reassign_support import fake_cluster


def test_lists_controller_state_and_pending_trigger_entries(fake: Any, zk_chroot: str, run_cli: Any) -> None:
    fake_cluster(
        fake,
        {1: "r1", 2: "r2", 3: "r3", 4: "r1"},
        {
            # foo-0: 1,2,3 -> 2,3,4 under way (RS target first, then origin)
            "foo": {"partitions": {0: [2, 3, 4, 1], 1: [1, 2]}, "adding": {0: [4]}, "removing": {0: [1]}},
            # bar-1: pure reorder waiting in the trigger (controller has not acted): no adding/removing
            # bar-0: waiting in the trigger, 1,2 -> 3,1
            "bar": {"partitions": {0: [1, 2], 1: [1, 2]}},
            "quiet": {"partitions": {0: [1, 2]}},
        },
        trigger={("foo", 0): [2, 3, 4], ("bar", 0): [3, 1], ("bar", 1): [2, 1]},
    )
    r = run_cli("list", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "Current partition reassignments:",
        "bar-0: replicas: 3,1,2. adding: 3. removing: 2.",
        "bar-1: replicas: 2,1.",
        "foo-0: replicas: 2,3,4,1. adding: 4. removing: 1.",
    ]

    j = run_cli("list", "--format", "json", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert j.returncode == 0
    doc = json.loads(j.stdout)
    assert doc["znode"] is True
    assert doc["reassignments"][2] == {
        "topic": "foo",
        "partition": 0,
        "replicas": [2, 3, 4, 1],
        "adding": [4],
        "removing": [1],
        "source": "controller",
    }
    assert [(e["topic"], e["partition"], e["source"]) for e in doc["reassignments"]] == [
        ("bar", 0, "znode"),
        ("bar", 1, "znode"),
        ("foo", 0, "controller"),
    ]


def test_api_started_reassignment_without_trigger_is_listed(fake: Any, zk_chroot: str, run_cli: Any) -> None:
    fake_cluster(fake, {1: None, 2: None, 3: None}, {"t": {"partitions": {0: [3, 1, 2]}, "adding": {0: [3]}}})
    r = run_cli("list", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert r.stdout.splitlines() == ["Current partition reassignments:", "t-0: replicas: 3,1,2. adding: 3."]


def test_nothing_reassigning(fake: Any, zk_chroot: str, run_cli: Any) -> None:
    fake_cluster(fake, {1: None}, {"t": {"partitions": {0: [1]}}})
    r = run_cli("list", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert (r.returncode, r.stdout) == (0, "No partition reassignments found.\n")
    j = run_cli("list", "--format", "json", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert json.loads(j.stdout) == {"znode": False, "reassignments": [], "orphaned_throttles": None}


@pytest.mark.parametrize(
    ("data", "problem", "listed"),
    [
        (
            b'{"version":1,"partitions":[{"topic":"t","partition":0}]}',
            'partitions[0] needs "topic" (string), "partition" (integer) and "replicas" (list of integers)',
            False,
        ),
        (
            b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]}]}',
            "partitions[0] has unknown field 'log_dirs'",
            True,
        ),
        (b'{"version":1,"partitions":[', "not valid JSON", False),
    ],
)
def test_unusable_trigger_is_reported(
    fake: Any, zk_chroot: str, run_cli: Any, data: bytes, problem: str, listed: bool
) -> None:
    fake_cluster(fake, {1: None}, {"t": {"partitions": {0: [1]}}})
    fake.create("/admin/reassign_partitions", data)
    r = run_cli("list", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert r.returncode == 0
    if listed:  # log_dirs: our decoder reads the entry, Kafka's strict one drops the whole znode
        assert r.stdout == "Current partition reassignments:\nt-0: replicas: 1.\n"
    else:
        assert r.stdout == "No partition reassignments found.\n"
    assert "/admin/reassign_partitions cannot be used by the controller (" in r.stderr
    assert problem in r.stderr
    assert "it blocks new reassignments until it is deleted" in r.stderr


def test_orphaned_throttles_are_named(fake: Any, zk_chroot: str, run_cli: Any) -> None:
    """Our record survives a killed execute: with nothing reassigning, list names where our throttles are."""
    fake_cluster(fake, {1: None, 2: None}, {"t": {"partitions": {0: [1, 2]}}})
    fake.create(
        "/reassign_cli/throttles",
        b'{"version":1,"brokers":{"2":{"leader.replication.throttled.rate":null},"1":{"leader.replication.'
        b'throttled.rate":"5"}},"topics":{"t":{"leader.replication.throttled.replicas":null}}}',
        makepath=True,
    )
    r = run_cli("list", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert (r.returncode, r.stdout) == (0, "No partition reassignments found.\n")
    assert "throttles set by kafka-reassign are still in place on brokers 1,2 and topics t" in r.stderr
    j = run_cli("list", "--format", "json", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert json.loads(j.stdout)["orphaned_throttles"] == {"brokers": [1, 2], "topics": ["t"]}
    # While something reassigns, the record belongs to that reassignment: nothing is called orphaned.
    fake.set("/brokers/topics/t", b'{"version":3,"partitions":{"0":[2,1,3]},"adding_replicas":{"0":[3]}}')
    busy = run_cli("list", "--format", "json", env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot})
    assert json.loads(busy.stdout)["orphaned_throttles"] is None
