"""verify: Kafka 3.9's status lines, exit 0/4/5, reasons, --format json, and the throttle removal rules
(only when nothing reassigns anywhere; only what this tool recorded; --preserve-throttles). Exact states are
built in a fresh chroot; a stopped target broker is tested on the real cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.reassign_support import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    RECORD,
    Mover,
    await_idle,
    change_nodes,
    config,
    fake_cluster,
    get_json,
    produce,
    reassigning,
    write_plan,
)


def _verify(run_cli: Any, chroot: str, plan: Path, *args: str) -> Any:
    return run_cli(
        "verify", "--reassignment-json-file", str(plan), *args, env={"KAFKA_REASSIGN_ZOOKEEPER": chroot}
    )


def _with_our_throttles(fake: Any) -> None:
    """Throttles as execute leaves them, including an operator's prior leader rate on broker 1."""
    cfg = {LEADER_RATE: "100", FOLLOWER_RATE: "100"}
    fake.create(
        "/config/brokers/1", json.dumps({"version": 1, "config": {**cfg, "x.y": "z"}}).encode(), makepath=True
    )
    fake.create("/config/brokers/2", json.dumps({"version": 1, "config": cfg}).encode())
    fake.set(
        "/config/topics/foo",
        json.dumps(
            {"version": 1, "config": {"retention.ms": "1", LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: "0:3"}}
        ).encode(),
    )
    rec = {
        "version": 1,
        "brokers": {
            "1": {LEADER_RATE: "555", FOLLOWER_RATE: None},
            "2": {LEADER_RATE: None, FOLLOWER_RATE: None},
        },
        "topics": {"foo": {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None}},
    }
    fake.create(RECORD, json.dumps(rec).encode(), makepath=True)


def test_statuses_exit_codes_and_reasons(fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path) -> None:
    fake_cluster(
        fake,
        {1: "r1", 2: "r2", 3: "r3"},
        {
            "foo": {
                "partitions": {0: [2, 3], 1: [3, 1, 2], 2: [1, 2], 3: [4, 2, 1]},
                "adding": {1: [3], 3: [4]},
                "removing": {3: [1]},
            },
        },
        isr={("foo", 1): [1, 2], ("foo", 3): [2, 1]},
        trigger={("foo", 1): [3, 1, 2], ("foo", 3): [4, 2]},
    )
    plan = write_plan(
        tmp_path / "p.json",
        {("foo", 0): [2, 3], ("foo", 1): [3, 1, 2], ("foo", 2): [2, 3], ("foo", 3): [4, 2], ("gone", 0): [1]},
    )
    r = _verify(run_cli, zk_chroot, plan)
    assert r.returncode == 4, r.stderr
    assert r.stdout.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 is completed.",
        "Reassignment of partition foo-1 is still in progress.",
        "There is no active reassignment of partition foo-2, but replica set is 1,2 rather than 2,3.",
        "Reassignment of partition foo-3 is still in progress.",
        "There is no active reassignment of partition gone-0, but replica set is  rather than 1.",
        "",
    ]
    err = r.stderr.splitlines()
    assert "foo-1: replicas 3 not yet in ISR [1,2]" in err
    assert "foo-3: broker 4 is not registered" in err

    j = _verify(run_cli, zk_chroot, plan, "--format", "json")
    assert j.returncode == 4
    doc = json.loads(j.stdout)
    assert doc["status"] == "in_progress" and doc["throttles_cleared"] is None
    assert [(p["topic"], p["partition"], p["status"]) for p in doc["partitions"]] == [
        ("foo", 0, "complete"),
        ("foo", 1, "in_progress"),
        ("foo", 2, "not_as_planned"),
        ("foo", 3, "in_progress"),
        ("gone", 0, "not_as_planned"),
    ]
    assert doc["partitions"][3]["reason"] == "broker 4 is not registered"

    # Not as planned (exit 5) once nothing is in progress.
    fake.delete("/admin/reassign_partitions")
    ok = write_plan(tmp_path / "ok.json", {("foo", 0): [2, 3]})
    assert _verify(run_cli, zk_chroot, ok, "--preserve-throttles").returncode == 0
    bad = write_plan(tmp_path / "bad.json", {("foo", 0): [2, 3], ("foo", 2): [2, 3]})
    assert _verify(run_cli, zk_chroot, bad, "--preserve-throttles").returncode == 5


def test_throttles_cleared_only_when_nothing_reassigns(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path
) -> None:
    fake_cluster(
        fake,
        {1: None, 2: None, 3: None},
        {
            "foo": {"partitions": {0: [3, 2]}, "config": {"retention.ms": "1"}},
            "other": {"partitions": {0: [1]}},
        },
        trigger={("other", 0): [2]},
    )
    _with_our_throttles(fake)
    plan = write_plan(tmp_path / "p.json", {("foo", 0): [3, 2]})
    before = {
        p: fake.get(p)[0] for p in ("/config/brokers/1", "/config/brokers/2", "/config/topics/foo", RECORD)
    }

    # Another reassignment runs (other-0 in the trigger): ours is complete, but throttles stay.
    r = _verify(run_cli, zk_chroot, plan)
    assert r.returncode == 0
    assert "Clearing" not in r.stdout
    assert "Throttles kept: another reassignment is still running" in r.stderr
    assert {p: fake.get(p)[0] for p in before} == before

    # --preserve-throttles: never touched.
    fake.delete("/admin/reassign_partitions")
    r = _verify(run_cli, zk_chroot, plan, "--preserve-throttles")
    assert r.returncode == 0 and "Clearing" not in r.stdout
    assert {p: fake.get(p)[0] for p in before} == before

    # Now: cleared; prior values back, unrelated keys kept, our record emptied. The plan is complete:
    # the throttles are its finished reassignment's, not orphaned ones.
    notes = change_nodes(fake)
    r = _verify(run_cli, zk_chroot, plan)
    assert r.returncode == 0
    # What was cleared: the record's brokers 1,2 and topic foo (broker 3 is registered but had none of ours).
    assert r.stdout.splitlines()[-2:] == [
        "Clearing broker-level throttles on brokers 1,2",
        "Clearing topic-level throttles on topic foo",
    ]
    assert "Warning" not in r.stderr
    assert config(fake, "brokers", 1) == {LEADER_RATE: "555", "x.y": "z"}
    assert config(fake, "brokers", 2) == {}
    assert config(fake, "topics", "foo") == {"retention.ms": "1"}
    assert get_json(fake, RECORD) is None
    assert len(change_nodes(fake) - notes) == 3  # brokers/1, brokers/2, topics/foo

    # Idempotent.
    notes = change_nodes(fake)
    dump = {p: fake.get(p)[0] for p in ("/config/brokers/1", "/config/brokers/2", "/config/topics/foo")}
    again = _verify(run_cli, zk_chroot, plan)
    assert again.returncode == 0
    assert change_nodes(fake) == notes
    assert {p: fake.get(p)[0] for p in dump} == dump


def test_orphaned_throttles_named_before_they_are_removed(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path
) -> None:
    # An execute recorded and wrote its throttles for foo-0 -> [3,2] and died before the trigger: nothing
    # reassigns, foo-0 is still on [1,2]. A second topic's entry in the record is another plan's.
    fake_cluster(
        fake,
        {1: None, 2: None, 3: None},
        {
            "foo": {"partitions": {0: [1, 2]}, "config": {"retention.ms": "1"}},
            "bar": {"partitions": {0: [1]}},
        },
    )
    _with_our_throttles(fake)
    rec = get_json(fake, RECORD)
    rec["topics"]["bar"] = {FOLLOWER_REPLICAS: None}
    fake.set(RECORD, json.dumps(rec).encode())
    fake.set("/config/topics/bar", json.dumps({"version": 1, "config": {FOLLOWER_REPLICAS: "0:2"}}).encode())
    plan = write_plan(tmp_path / "p.json", {("foo", 0): [3, 2]})
    warning = (
        "Warning: throttles set by kafka-reassign were left in place on brokers 1,2 and topics bar,foo with "
        "nothing reassigning (an interrupted execute?); removing them"
    )

    # --format json: the warning on stderr, the same names in the document, then the throttles gone
    r = _verify(run_cli, zk_chroot, plan, "--format", "json")
    assert r.returncode == 5, r.stderr
    assert r.stderr.splitlines()[0] == warning
    doc = json.loads(r.stdout)
    assert doc["orphaned_throttles"] == {"brokers": [1, 2], "topics": ["bar", "foo"]}
    assert doc["throttles_cleared"] == {"brokers": [1, 2], "topics": ["bar", "foo"]}  # the record's, cleared
    assert get_json(fake, RECORD) is None
    assert config(fake, "topics", "bar") == {} and config(fake, "topics", "foo") == {"retention.ms": "1"}

    # Nothing of ours left: no warning, the document says null.
    again = _verify(run_cli, zk_chroot, plan, "--format", "json")
    assert again.returncode == 5 and "Warning" not in again.stderr
    assert json.loads(again.stdout)["orphaned_throttles"] is None


@pytest.mark.parametrize("throttle", [["--throttle", "1000"], []], ids=["throttled", "unthrottled"])
def test_config_writes_refused_after_kraft_takeover(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path, throttle: list[str]
) -> None:
    fake_cluster(fake, {1: None, 2: None}, {"foo": {"partitions": {0: [1, 2]}}})
    fake.create("/controller", b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":7}')
    plan = write_plan(tmp_path / "p.json", {("foo", 0): [2, 1]})
    r = run_cli(
        "execute",
        "--reassignment-json-file",
        str(plan),
        *throttle,
        env={"KAFKA_REASSIGN_ZOOKEEPER": zk_chroot},
        cwd=str(tmp_path),
    )
    assert r.returncode == 1
    assert r.stderr.splitlines()[-2:] == [
        "Error: refusing to write to ZooKeeper: a KRaft controller has taken over (/controller has "
        "kraftControllerEpoch 7); use --bootstrap-server (the admin API) instead of --zookeeper",
        "A migrating or migrated cluster is written through its brokers: kafka-reassign --bootstrap-server "
        "HOST:PORT (or KAFKA_REASSIGN_BOOTSTRAP).",
    ]
    assert not list(tmp_path.glob("rollback-*.json"))
    assert not fake.exists("/admin/reassign_partitions")
    assert not fake.exists("/config/brokers/1")


# ---------------------------------------------------------------------------------------------------
# real cluster: a target broker stops in the middle of the move
# ---------------------------------------------------------------------------------------------------


def test_target_broker_stopped_mid_move(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2]}, messages=5)
    produce(cluster.bootstrap, topic, 0, 5000)  # see test_execute.RECORDS
    # A topic living only on broker 3, queued for deletion while broker 3 is down: its deletion cannot
    # proceed, so execute must refuse it (exit 3) rather than let the controller drop the entry.
    doomed = make_topic({0: [3]})
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    r = mover.execute(plan, "--throttle", "10000")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: reassigning(zk, topic), timeout=30, message="move started")
    with cluster.broker_stopped(3):
        v = mover.verify(plan)
        assert v.returncode == 4
        assert f"Reassignment of partition {topic}-0 is still in progress." in v.stdout
        assert f"{topic}-0: broker 3 is not registered" in v.stderr
        assert config(zk, "topics", topic)[FOLLOWER_REPLICAS] == "0:3"  # throttles stay

        zk.create(f"/admin/delete_topics/{doomed}", makepath=True)
        bad = mover.plan("doomed.json", {(doomed, 0): [1]})
        refused = mover.cli("execute", "--reassignment-json-file", bad)
        assert refused.returncode == 3
        assert refused.stderr.startswith(f"Error: Topic {doomed} is queued for deletion")
        # The move's speed can be changed while the broker is away (stored in ZooKeeper).
        assert mover.execute(plan, "--throttle", "100000000").returncode == 0
    done = mover.wait_complete(plan, timeout=180)
    assert done.returncode == 0, done.stdout
    v = mover.verify(plan)
    assert v.returncode == 0 and "Clearing topic-level throttles on topic " + topic in v.stdout
    assert FOLLOWER_REPLICAS not in (config(zk, "topics", topic) or {})
    assert len(consume_all(topic)) == 5005


def test_a_recorded_topic_deleted_since_is_forgotten_and_no_config_made_for_it(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path
) -> None:
    # The record names a topic deleted after its execute set the throttles (its config znode went with it):
    # the clear restores the plan's topic, forgets the deleted one's entry, and writes no config znode for it.
    fake_cluster(fake, {1: None, 2: None}, {"kept": {"partitions": {0: [1, 2]}}})
    fake.set("/config/topics/kept", json.dumps({"version": 1, "config": {FOLLOWER_REPLICAS: "0:2"}}).encode())
    rec = {"version": 1, "brokers": {}, "topics": {t: {FOLLOWER_REPLICAS: None} for t in ("gone", "kept")}}
    fake.create(RECORD, json.dumps(rec).encode(), makepath=True)
    plan = write_plan(tmp_path / "p.json", {("kept", 0): [1, 2]})
    r = _verify(run_cli, zk_chroot, plan)
    assert r.returncode == 0, r.stderr
    assert config(fake, "topics", "kept") == {}
    assert not fake.exists("/config/topics/gone")
    assert get_json(fake, RECORD) is None


@pytest.mark.parametrize("verbose", [False, True], ids=["short", "verbose"])
def test_orphaned_throttles_of_many_topics_named_in_short(
    fake: Any, zk_chroot: str, run_cli: Any, tmp_path: Path, verbose: bool
) -> None:
    # 40 topics with our recorded throttles and nothing reassigning; the plan's own (t00, complete) accounts
    # for its throttles, the 39 others are orphaned: the warning names ten (all with -v), the document all.
    names = [f"t{i:02d}" for i in range(40)]
    fake_cluster(fake, {1: None, 2: None}, {n: {"partitions": {0: [1, 2]}} for n in names})
    rec: dict[str, Any] = {"version": 1, "brokers": {}, "topics": {}}
    for n in names:
        rec["topics"][n] = {FOLLOWER_REPLICAS: None}
        fake.set(
            f"/config/topics/{n}", json.dumps({"version": 1, "config": {FOLLOWER_REPLICAS: "0:2"}}).encode()
        )
    fake.create(RECORD, json.dumps(rec).encode(), makepath=True)
    plan = write_plan(tmp_path / "p.json", {("t00", 0): [1, 2]})
    r = _verify(run_cli, zk_chroot, plan, "--format", "json", *(["-v"] if verbose else []))
    assert r.returncode == 0, r.stderr
    warning = next(line for line in r.stderr.splitlines() if line.startswith("Warning: "))  # -v: kazoo's too
    orphaned = names[1:]
    shown = orphaned if verbose else orphaned[:10]
    assert warning == (
        f"Warning: throttles set by kafka-reassign were left in place on topics {','.join(shown)}"
        + ("" if verbose else " and 29 more")
        + " with nothing reassigning (an interrupted execute?); removing them"
    )
    assert json.loads(r.stdout)["orphaned_throttles"] == {"brokers": [], "topics": orphaned}
