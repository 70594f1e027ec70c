"""Throttles set through one path and cleared through another, on the ZooKeeper-mode cluster (issue 30 items 1
and 2, reproduced as the issue describes them):

- our execute through ZooKeeper, then `cancel` as an operator with KAFKA_REASSIGN_ZOOKEEPER set would try it:
  the error names the command that works, the admin API alone refuses (nothing changed) and names one too,
  and the command named works, leaving no throttle;
- our execute through the admin API, then verify through ZooKeeper: nothing is said to be cleared, and what is
  kept is said to be kept, with why and a kafka-configs command;
- a throttle set by Kafka's own kafka-configs: kept, and the kafka-configs command printed beside it, run as
  printed through Kafka's own tool, removes it.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
from typing import Any

from tests.helpers import CLUSTER_SCRIPT, wait_until
from tests.integration.reassign_support import (
    FAST,
    FOLLOWER_RATE,
    LEADER_RATE,
    RECORD,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
)

RATES = (LEADER_RATE, FOLLOWER_RATE)
ADMIN_ALONE = ("--zookeeper", "")  # hides the cluster's KAFKA_REASSIGN_ZOOKEEPER: the admin API alone


def kafka_configs(*args: str) -> subprocess.CompletedProcess[str]:
    """Kafka 4.3.1's own kafka-configs."""
    return subprocess.run(
        [str(CLUSTER_SCRIPT), "kafka-tool", "configs", *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def rates(zk: Any, broker: int) -> dict[str, str]:
    return {k: v for k, v in (config(zk, "brokers", broker) or {}).items() if k in RATES}


def test_cancel_names_the_command_that_works(cluster: Any, make_topic: Any, zk: Any, mover: Mover) -> None:
    topic = make_topic({0: [1, 2]}, messages=10)
    produce(cluster.bootstrap, topic, 0, 5000)
    plan = mover.plan("move.json", {(topic, 0): [2, 3]})
    await_idle(zk)
    r = mover.execute(plan, "--throttle", "20000")  # through KAFKA_REASSIGN_ZOOKEEPER
    assert r.returncode == 0, r.stderr
    wait_until(
        lambda: bool((get_json(zk, f"/brokers/topics/{topic}") or {}).get("adding_replicas", {}).get("0")),
        timeout=60,
        message="the controller started the move",
    )
    throttled = {b: {LEADER_RATE: "20000", FOLLOWER_RATE: "20000"} for b in (1, 2, 3)}
    assert {b: rates(zk, b) for b in (1, 2, 3)} == throttled

    # As the issue found it: KAFKA_REASSIGN_ZOOKEEPER set, no brokers given.
    first = mover.cli("cancel", "--reassignment-json-file", plan)
    assert first.returncode == 2, first.stderr
    hint = first.stderr.splitlines()[-1]
    # the brokers as the cluster registered them (its env file lists them in broker id order)
    assert (
        hint
        == f"Run: kafka-reassign cancel --reassignment-json-file {plan} --bootstrap-server {cluster.bootstrap}"
    )

    # The admin API alone: its record is not ZooKeeper's; it refuses before anything is cancelled.
    alone = mover.cli(
        "cancel", "--reassignment-json-file", plan, "--bootstrap-server", cluster.bootstrap, *ADMIN_ALONE
    )
    assert alone.returncode == 1, alone.stderr
    assert alone.stdout == ""
    assert alone.stderr.splitlines() == [
        f"Error: kafka-reassign set throttles on brokers 1,2,3 and topics {topic} through ZooKeeper "
        f"({cluster.zookeeper}); their prior values are recorded there, and only --zookeeper can restore them: "
        "nothing was changed",
        f"Run: kafka-reassign cancel --reassignment-json-file {plan} --bootstrap-server {cluster.bootstrap} "
        f"--zookeeper {cluster.zookeeper}",
    ]
    assert (get_json(zk, f"/brokers/topics/{topic}") or {}).get("adding_replicas", {}).get("0")
    assert {b: rates(zk, b) for b in (1, 2, 3)} == throttled

    # The command the first error named, as printed (KAFKA_REASSIGN_ZOOKEEPER still set): it works.
    done = mover.cli(*shlex.split(hint.removeprefix("Run: "))[1:])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"Successfully cancelled partition reassignment for: {topic}-0",
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    assert {b: rates(zk, b) for b in (1, 2, 3)} == {1: {}, 2: {}, 3: {}}
    assert get_json(zk, RECORD) is None


def test_throttles_set_through_the_admin_api_are_not_said_cleared_through_zookeeper(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1]}, messages=10)
    plan = mover.plan("move.json", {(topic, 0): [2]})
    admin_verify = (
        "verify",
        "--reassignment-json-file",
        plan,
        "--bootstrap-server",
        cluster.bootstrap,
        *ADMIN_ALONE,
    )
    mover.finally_do.append(lambda: mover.cli(*admin_verify) and None)  # its throttles, whatever happens
    await_idle(zk)
    r = mover.execute(plan, "--bootstrap-server", cluster.bootstrap, *ADMIN_ALONE, "--throttle", FAST)
    assert r.returncode == 0, r.stderr
    mover.wait_complete(plan)
    ours = {
        b: rates(zk, b) for b in (1, 2, 3) if rates(zk, b)
    }  # read from ZooKeeper: the brokers of the move
    assert ours and all(v == {LEADER_RATE: FAST, FOLLOWER_RATE: FAST} for v in ours.values())

    v = mover.verify(plan)  # through ZooKeeper (KAFKA_REASSIGN_ZOOKEEPER): its record is empty
    assert v.returncode == 0, v.stderr
    assert [x for x in v.stdout.splitlines() if x] == [
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is completed.",
        "No throttles set by this tool were found: nothing cleared.",
    ]
    kept = [x for x in v.stderr.splitlines() if x.startswith("  broker ")]
    assert [x.split(":")[0] for x in kept] == [f"  broker {b}" for b in sorted(ours)]
    assert "through the other connection" in v.stderr and "this tool did not set" not in v.stderr
    assert all(rates(zk, b) == ours[b] for b in ours)  # nothing removed

    # Through the path that set them, they come off, and it says so.
    a = mover.cli(*admin_verify)
    assert a.returncode == 0, a.stderr
    assert a.stdout.splitlines()[-2:] == [
        f"Clearing broker-level throttles on brokers {','.join(map(str, sorted(ours)))}",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    wait_until(lambda: all(not rates(zk, b) for b in (1, 2, 3)), timeout=30, message="the rates removed")


def test_a_throttle_set_by_kafka_configs_is_kept_with_the_command_that_removes_it(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover
) -> None:
    theirs = ("--bootstrap-server", cluster.bootstrap, "--entity-type", "brokers", "--entity-name", "3")
    set_by_hand = kafka_configs(*theirs, "--alter", "--add-config", f"{LEADER_RATE}=20000")
    assert set_by_hand.returncode == 0, set_by_hand.stderr
    mover.finally_do.append(
        lambda: kafka_configs(*theirs, "--alter", "--delete-config", LEADER_RATE) and None
    )
    wait_until(lambda: rates(zk, 3) == {LEADER_RATE: "20000"}, timeout=30, message="kafka-configs' throttle")

    topic = make_topic({0: [1]}, messages=10)
    plan = mover.plan("move.json", {(topic, 0): [2]})
    await_idle(zk)
    r = mover.execute(plan, "--throttle", FAST)  # through ZooKeeper; broker 3 takes no part in the move
    assert r.returncode == 0, r.stderr
    mover.wait_complete(plan)
    v = mover.verify(plan)
    assert v.returncode == 0, v.stderr
    assert v.stdout.splitlines()[-2:] == [
        "Clearing broker-level throttles on brokers 1,2",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    kept = [x for x in v.stderr.splitlines() if x.startswith("  broker 3: ")]
    assert len(kept) == 1, v.stderr
    line = kept[0]
    command = line.partition("; to remove: ")[2]
    assert line.startswith(f"  broker 3: {LEADER_RATE}=20000; to remove: ")
    assert command == (
        f"kafka-configs --bootstrap-server {cluster.bootstrap} --entity-type brokers --entity-name 3 --alter "
        f"--delete-config {LEADER_RATE}"
    )
    assert rates(zk, 3) == {LEADER_RATE: "20000"}
    # The command as printed, run through Kafka's own kafka-configs, removes it.
    removed = kafka_configs(*shlex.split(command)[1:])
    assert removed.returncode == 0, removed.stderr
    wait_until(lambda: not rates(zk, 3), timeout=30, message="the throttle removed by the printed command")


def test_a_zookeeper_port_given_as_a_broker_is_named(cluster: Any, run_cli: Any) -> None:
    """Issue 30 item 8: ZooKeeper's port as --bootstrap-server is recognised (its answer to `srvr`), and the
    advice says where it belongs. The version is ZooKeeper's own word, read here with the same command."""
    host, _, port = cluster.zk_hosts.partition(",")[0].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"srvr")
        version = s.makefile("rb").readline().decode().split("-")[0].strip()  # "Zookeeper version: 3.8.4"
    r = run_cli("list", "--bootstrap-server", f"{host}:{port}", "--zookeeper", "", "--connect-timeout", "5")
    assert (r.returncode, r.stdout) == (1, ""), r.stderr
    assert r.stderr.splitlines() == [
        f"Error: cannot connect to Kafka at {host}:{port}: a ZooKeeper server "
        f"({version.replace('Zookeeper', 'ZooKeeper')}), not a Kafka broker",
        f"Give ZooKeeper as --zookeeper {host}:{port}/CHROOT (the brokers' zookeeper.connect), and the brokers' "
        "listeners as --bootstrap-server.",
    ]
