"""execute against the real cluster: a throttled move watched in progress and completed, throttles checked
byte for byte in ZooKeeper, the refusal while busy, a throttle change in mid-flight, --wait with a timeout,
Ctrl-C, the dry run, the lost-race undo, and every record consumed afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from typing import Any

import pytest

from tests.helpers import PYTHON, wait_until
from tests.integration.reassign_support import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    REASSIGN,
    RECORD,
    Mover,
    await_idle,
    change_nodes,
    config,
    get_json,
    get_raw,
    notifications_since,
    produce,
    reassigning,
    relevant_diff,
    set_config,
)

SLOW = "10000"  # B/s: a few MB take minutes, so "in progress" is observable
# 1 KB records into the moving partition. A throttled follower still gets the first ~2 MB at once (the
# quota is checked before each fetch of up to 1 MiB), so 5 MB leave minutes of throttled copying.
RECORDS = 5000


@pytest.fixture
def broker1_config(zk: Any, mover: Mover) -> Any:
    """Broker 1's dynamic config as it was; put back (with a notification) after the mover's cleanup
    (whose verify may restore recorded prior values first)."""
    before = config(zk, "brokers", 1)

    def restore() -> None:
        if config(zk, "brokers", 1) != before:
            set_config(zk, "brokers", 1, before)

    mover.finally_do.append(restore)
    return before


def test_throttled_move_in_progress_then_complete(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, zk_dump: Any, mover: Mover, broker1_config: Any
) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3]}, messages=10, configs={"retention.ms": "86400000"})
    values = produce(cluster.bootstrap, topic, 0, RECORDS)
    # An operator's standing throttle and an unrelated key on broker 1: both must survive.
    standing = dict(broker1_config or {})
    standing[LEADER_RATE] = "777777"
    standing["log.cleaner.threads"] = "1"
    set_config(zk, "brokers", 1, standing)
    plan = mover.plan("move.json", {(topic, 0): [2, 3], (topic, 1): [2, 3]})
    await_idle(zk)

    others = {b: config(zk, "brokers", b) for b in (2, 3)}
    notes = change_nodes(zk)
    r = mover.execute(plan, "--throttle", SLOW)
    assert r.returncode == 0, r.stderr
    rollback = (
        f'{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}},'
        f'{{"topic":"{topic}","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}}]}}'
    )
    assert r.stdout.splitlines() == [
        "Current partition replica assignment",
        "",
        rollback,
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        "Warning: You must run verify periodically, until the reassignment completes, to ensure the "
        "throttle is removed.",
        f"The inter-broker throttle limit was set to {SLOW} B/s",
        f"Successfully started partition reassignments for {topic}-0,{topic}-1",
    ]
    saved = list(mover.tmp.glob("rollback-*.json"))
    assert len(saved) == 1 and saved[0].read_text() == rollback + "\n"
    assert f"Rollback JSON saved to {saved[0].name}" in r.stderr

    # The throttles, byte for byte (topic config: keys appended after the existing one).
    assert (
        get_raw(zk, f"/config/topics/{topic}")
        == (
            '{"version":1,"config":{"retention.ms":"86400000",'
            f'"{LEADER_REPLICAS}":"0:1,0:2,1:2,1:3","{FOLLOWER_REPLICAS}":"0:3"}}}}'
        ).encode()
    )
    assert config(zk, "brokers", 1) == {**standing, LEADER_RATE: SLOW, FOLLOWER_RATE: SLOW}
    for b in (2, 3):
        assert config(zk, "brokers", b) == {LEADER_RATE: SLOW, FOLLOWER_RATE: SLOW}
        if not (others[b] or {}):
            assert get_raw(zk, f"/config/brokers/{b}") == (
                f'{{"version":1,"config":{{"{LEADER_RATE}":"{SLOW}","{FOLLOWER_RATE}":"{SLOW}"}}}}'.encode()
            )
    # One notification per config write, topic first, then the brokers.
    ours = {f"topics/{topic}", "brokers/1", "brokers/2", "brokers/3"}
    assert notifications_since(zk, notes, ours) == [f"topics/{topic}", "brokers/1", "brokers/2", "brokers/3"]
    record = get_json(zk, RECORD)
    assert record["brokers"]["1"] == {LEADER_RATE: "777777", FOLLOWER_RATE: None}
    assert record["brokers"]["2"] == {LEADER_RATE: None, FOLLOWER_RATE: None}
    assert record["topics"][topic] == {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None}
    # The trigger (the controller removes partition 1 at once: it is already at its target).
    trigger = get_json(zk, REASSIGN)
    assert trigger["version"] == 1
    assert {"topic": topic, "partition": 0, "replicas": [2, 3]} in trigger["partitions"]

    # In progress: verify says so (exit 4) and keeps the throttles.
    wait_until(lambda: reassigning(zk, topic), timeout=30, message="the controller started the move")
    v = mover.verify(plan)
    assert v.returncode == 4, v.stdout + v.stderr
    assert f"Reassignment of partition {topic}-0 is still in progress." in v.stdout.splitlines()
    assert "Clearing" not in v.stdout
    assert config(zk, "topics", topic)[FOLLOWER_REPLICAS] == "0:3"
    assert f"{topic}-0: replicas 3 not yet in ISR" in v.stderr

    ls = mover.cli("list")
    assert ls.returncode == 0
    assert f"{topic}-0: replicas: 2,3,1. adding: 3. removing: 1." in ls.stdout.splitlines()

    # Busy: another plan, or the same plan without --throttle, is refused and writes nothing.
    other = mover.plan("other.json", {(topic, 1): [3, 1]})
    for p, args in ((other, ()), (plan, ()), (other, ("--throttle", "5000"))):
        before = zk_dump(zk)
        busy = mover.execute(p, *args)
        assert busy.returncode == 4, busy.stderr
        assert busy.stderr.startswith(
            "Error: Cannot execute because there is an existing partition assignment.  "
        )
        # (the controller owns the topic znodes; everything this tool could write is compared)
        assert relevant_diff(before, zk_dump(zk), [topic], topic_znodes=False) == {}

    # Mid-flight throttle change: same file + --throttle changes only the broker rates.
    topic_cfg = get_raw(zk, f"/config/topics/{topic}")
    faster = mover.execute(plan, "--throttle", "50000000")
    assert faster.returncode == 0, faster.stderr
    assert "The inter-broker throttle limit was set to 50000000 B/s" in faster.stdout
    assert config(zk, "brokers", 1)[LEADER_RATE] == "50000000"
    assert config(zk, "brokers", 3)[FOLLOWER_RATE] == "50000000"
    assert get_raw(zk, f"/config/topics/{topic}") == topic_cfg
    assert get_json(zk, RECORD) == record  # prior values untouched

    done = mover.wait_complete(plan, timeout=120)
    assert done.returncode == 0, done.stdout

    # verify removes the throttles: operator's values restored, ours gone, unrelated keys kept.
    v = mover.verify(plan)
    assert v.returncode == 0
    assert v.stdout.splitlines() == [
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is completed.",
        f"Reassignment of partition {topic}-1 is completed.",
        "",
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    assert config(zk, "brokers", 1) == standing
    assert config(zk, "brokers", 2) == {} and config(zk, "brokers", 3) == {}
    assert get_raw(zk, f"/config/topics/{topic}") == b'{"version":1,"config":{"retention.ms":"86400000"}}'
    assert get_json(zk, RECORD) is None or topic not in get_json(zk, RECORD)["topics"]

    # Idempotent: a second verify writes nothing.
    notes = change_nodes(zk)
    before = zk_dump(zk)
    again = mover.verify(plan)
    assert again.returncode == 0
    assert notifications_since(zk, notes, ours) == []
    assert relevant_diff(before, zk_dump(zk), [topic]) == {}
    assert config(zk, "brokers", 1) == standing  # not ours: never removed
    assert again.stdout.splitlines()[-1] == "No throttles set by this tool were found: nothing cleared."
    assert f"  broker 1: {LEADER_RATE}=777777; to remove: kafka-configs --bootstrap-server " in again.stderr

    # Every record is still there, read from the new replicas.
    got = consume_all(topic)
    assert len(got) == 10 + RECORDS
    assert set(values) <= set(got)


def test_dry_run_writes_nothing(make_topic: Any, zk: Any, zk_dump: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2]})
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    before = zk_dump(zk)
    r = mover.execute(plan, "--throttle", "123456", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert relevant_diff(before, zk_dump(zk), [topic]) == {}
    assert not zk.exists(REASSIGN) or not reassigning(zk, topic)
    assert not list(mover.tmp.glob("rollback-*.json"))
    lines = r.stdout.splitlines()
    assert (
        f'create {REASSIGN} {{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[3,2]}}]}}'
        in lines
    )
    assert (
        f'set (if version 0) /config/topics/{topic} {{"version":1,"config":{{'
        f'"{LEADER_REPLICAS}":"0:1,0:2","{FOLLOWER_REPLICAS}":"0:3"}}}}'
    ) in lines
    assert (
        f'create (sequential) /config/changes/config_change_ {{"version":2,"entity_path":"topics/{topic}"}}'
        in lines
    )
    # The prior-values record this run would write: every throttle key it sets, noted as absent.
    (rec_line,) = [line for line in lines if f" {RECORD} " in line]
    assert rec_line.startswith((f"create {RECORD} ", "set (if version"))
    rec = json.loads(rec_line.split(f"{RECORD} ", 1)[1])
    assert rec["topics"][topic] == {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None}
    assert {LEADER_RATE, FOLLOWER_RATE} <= set(rec["brokers"]["3"])


def test_wait_with_timeout(cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2]})
    produce(cluster.bootstrap, topic, 0, RECORDS)
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    r = mover.execute(plan, "--throttle", SLOW, "--wait", "--timeout", "3", "--poll-interval", "1")
    assert r.returncode == 4, r.stderr
    err = [line for line in r.stderr.splitlines() if line.startswith("Error: ")]
    assert err == [err[0]] and f"still in progress: {topic}-0" in err[0], r.stderr
    assert f"verify --reassignment-json-file {plan}" in r.stderr
    assert reassigning(zk, topic)  # the move keeps running; throttles stay
    assert config(zk, "topics", topic)[FOLLOWER_REPLICAS] == "0:3"


def test_ctrl_c_while_waiting(cluster: Any, make_topic: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2]})
    produce(cluster.bootstrap, topic, 0, RECORDS)
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    await_idle(zk)
    mover.plans.append((plan, [topic]))
    env = dict(os.environ, KAFKA_REASSIGN_ZOOKEEPER=cluster.zookeeper)
    proc = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "reassign_cli",
            "execute",
            "--reassignment-json-file",
            str(plan),
            "--throttle",
            SLOW,
            "--wait",
            "--poll-interval",
            "0.5",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=mover.tmp,
    )
    # The first plain progress line on stderr means the wait loop is running: interrupt it there.
    assert proc.stderr is not None
    head: list[str] = []
    reader = threading.Thread(target=_read_until, args=(proc.stderr, "partitions done", head), daemon=True)
    reader.start()
    reader.join(timeout=60)
    assert head and "partitions done" in head[-1], "".join(head)
    assert reassigning(zk, topic)
    proc.send_signal(signal.SIGINT)
    _out, rest = proc.communicate(timeout=30)
    err = "".join(head) + rest
    assert proc.returncode == 130, err
    assert "the reassignment keeps running" in err
    assert f"kafka-reassign verify --reassignment-json-file {plan}" in err
    assert reassigning(zk, topic)


def test_lost_race_undoes_this_runs_throttle_writes(
    make_topic: Any,
    zk: Any,
    zk_dump: Any,
    mover: Mover,
    cluster: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The trigger create hits NodeExists after the throttles were written (someone else started a
    reassignment in between): this run's config writes and record entries are put back exactly."""
    from reassign_cli.backends.zookeeper.fenced import FencedThrottles
    from reassign_cli.cli import main

    topic = make_topic({0: [1, 2]}, configs={"retention.ms": "3600000"})
    plan = mover.plan("move.json", {(topic, 0): [3, 2]})
    mover.plans.append((plan, [topic]))  # cleanup verifies it even if the test fails half-way
    await_idle(zk)
    paths = [f"/config/topics/{topic}", "/config/brokers/1", "/config/brokers/2", "/config/brokers/3", RECORD]
    before = {p: get_raw(zk, p) for p in paths}
    calls: list[bytes] = []

    def lose(self: Any, data: bytes) -> bool:
        calls.append(data)
        # Throttles are in place at this point ...
        assert config(zk, "topics", topic)[FOLLOWER_REPLICAS] == "0:3"
        return False  # ... and the create lost the race

    monkeypatch.setattr(FencedThrottles, "create_trigger", lose)
    monkeypatch.setenv("KAFKA_REASSIGN_ZOOKEEPER", cluster.zookeeper)
    monkeypatch.chdir(mover.tmp)
    with pytest.raises(SystemExit) as exc:
        main(["execute", "--reassignment-json-file", str(plan), "--throttle", "4242"])
    assert exc.value.code == 4
    assert len(calls) == 1
    assert "this run's throttle changes were undone" in capsys.readouterr().err
    after = {p: get_raw(zk, p) for p in paths}
    for p in paths:
        if before[p] is None:
            # Created by this run: left empty ({"config":{}}), as Kafka leaves emptied config znodes.
            assert after[p] is None or json.loads(after[p]).get("config") == {}, p
        else:
            assert json.loads(after[p]) == json.loads(before[p]), p
    # The create that lost was asked for exactly this trigger, and the partition never moved.
    assert calls == [
        f'{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[3,2]}}]}}'.encode()
    ]
    assert get_json(zk, f"/brokers/topics/{topic}")["partitions"]["0"] == [1, 2]


def test_prior_value_taken_from_the_versioned_write(
    make_topic: Any,
    zk: Any,
    mover: Mover,
    cluster: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An operator's throttle lands between execute's reads and its fenced transaction: the transaction
    fails on the config's version, the throttles are planned again from fresh reads, and the record ends
    up with the value really replaced (restored by verify)."""
    from reassign_cli.backends.zookeeper.fenced import FencedThrottles
    from reassign_cli.cli import main

    topic = make_topic({0: [1, 2]})
    plan = mover.plan("move.json", {(topic, 0): [2, 1]})  # a reorder: completes at once
    mover.plans.append((plan, [topic]))  # cleanup verifies it even if the test fails half-way
    await_idle(zk)
    before = config(zk, "brokers", 2)
    real_transaction = FencedThrottles._transaction
    attempts: list[int] = []

    def racing(self: FencedThrottles, ops: Any, writes: Any, head: Any, guard: Any) -> bool:
        if not attempts:  # the operator, just now, before our first commit
            set_config(zk, "brokers", 2, {**(config(zk, "brokers", 2) or {}), LEADER_RATE: "888"})
        attempts.append(len(writes))
        return real_transaction(self, ops, writes, head, guard)

    monkeypatch.setattr(FencedThrottles, "_transaction", racing)
    monkeypatch.setenv("KAFKA_REASSIGN_ZOOKEEPER", cluster.zookeeper)
    monkeypatch.chdir(mover.tmp)
    try:
        with pytest.raises(SystemExit) as exc:
            main(["execute", "--reassignment-json-file", str(plan), "--throttle", "4000"])
        assert exc.value.code == 0, capsys.readouterr().err
        assert len(attempts) == 2  # the first commit lost to the operator's write, the second planned anew
        assert get_json(zk, RECORD)["brokers"]["2"][LEADER_RATE] == "888"
        monkeypatch.undo()
        mover.wait_complete(plan)
        assert mover.verify(plan).returncode == 0
        assert config(zk, "brokers", 2)[LEADER_RATE] == "888"
    finally:
        set_config(zk, "brokers", 2, before)


def _read_until(stream: Any, marker: str, lines: list[str]) -> None:
    for line in stream:
        lines.append(line)
        if marker in line:
            return
