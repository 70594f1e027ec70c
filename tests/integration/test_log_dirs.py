"""Log-dir moves: non-"any" log_dirs go through AlterReplicaLogDirs (kafka-python's admin client) with
--bootstrap-server, before the trigger and retried until started; the trigger never holds log_dirs.
Each broker of the test cluster has two log dirs, d0 and d1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.faults.support import Child
from tests.helpers import wait_until
from tests.integration.reassign_support import (
    LOG_DIR_RATE,
    RECORD,
    Mover,
    await_idle,
    config,
    get_json,
    produce,
    set_config,
)


def _dirs(cluster: Any, broker: int) -> tuple[Path, Path]:
    base = Path(cluster.directory) / "data" / f"broker-{broker}"
    return base / "d0", base / "d1"


def _where(cluster: Any, broker: int, topic: str, p: int) -> list[str]:
    """The log dirs of `broker` holding the partition's live log (not a -future or -delete copy)."""
    return [d.name for d in _dirs(cluster, broker) if (d / f"{topic}-{p}").is_dir()]


def test_log_dir_moves_through_the_admin_api(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 1]}, messages=20)
    produce(cluster.bootstrap, topic, 0, 200)
    # Partition 0 stays on brokers 1,2 but moves to the other log dir of broker 1; partition 1 moves
    # from broker 1 to broker 3, into a named dir of broker 3.
    (src,) = _where(cluster, 1, topic, 0)
    other = "d1" if src == "d0" else "d0"
    dir1 = str(_dirs(cluster, 1)[other == "d1"])
    dir3 = str(_dirs(cluster, 3)[1])
    plan = mover.plan(
        "dirs.json",
        {(topic, 0): [1, 2], (topic, 1): [2, 3]},
        log_dirs={(topic, 0): [dir1, "any"], (topic, 1): ["any", dir3]},
    )
    await_idle(zk)
    r = mover.execute(
        plan,
        "--zookeeper",  # ZooKeeper mode; the brokers only for the log-dir moves
        cluster.zookeeper,
        "--bootstrap-server",
        cluster.bootstrap,
        "--replica-alter-log-dirs-throttle",
        "100000000",
        "--wait",
        "--poll-interval",
        "0.5",
        "--timeout",
        "120",
    )
    assert r.returncode == 0, r.stderr
    # Not a terminal: plain progress lines on stderr, no bar.
    assert "2/2 partitions done, 4/4 target replicas in sync" in r.stderr
    assert "\x1b[" not in r.stderr
    lines = r.stdout.splitlines()
    assert "The replica-alter-dir throttle limit was set to 100000000 B/s" in lines
    assert f"Successfully started partition reassignments for {topic}-0,{topic}-1" in lines
    assert (
        f"Successfully started moving log directory to {dir1} for replica {topic}-0 with broker 1 " in lines
    )
    assert (
        f"Successfully started moving log directory to {dir3} for replica {topic}-1 with broker 3 " in lines
    )
    wait_until(
        lambda: _where(cluster, 1, topic, 0) == [other], timeout=60, message="broker 1 moved the log dir"
    )
    wait_until(
        lambda: _where(cluster, 3, topic, 1) == ["d1"], timeout=60, message="broker 3 created it in d1"
    )
    # The log-dir rate was only on the brokers with log-dir moves, and --wait removed it again.
    assert LOG_DIR_RATE not in (config(zk, "brokers", 1) or {})
    assert LOG_DIR_RATE not in (config(zk, "brokers", 3) or {})
    assert get_json(zk, RECORD) is None or "1" not in get_json(zk, RECORD)["brokers"]
    assert len(consume_all(topic)) == 220


def test_unknown_log_dir_fails_and_undoes_throttles(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2]})
    plan = mover.plan("dirs.json", {(topic, 0): [1, 2]}, log_dirs={(topic, 0): ["/nonexistent/dir", "any"]})
    await_idle(zk)
    before = config(zk, "brokers", 1)
    r = mover.execute(
        plan,
        "--zookeeper",
        cluster.zookeeper,
        "--bootstrap-server",
        cluster.bootstrap,
        "--replica-alter-log-dirs-throttle",
        "5000",
    )
    assert r.returncode == 1, r.stderr
    assert f"log-dir move of replica {topic}-0 on broker 1 failed: " in r.stderr
    assert not zk.exists("/admin/reassign_partitions") or topic not in str(
        get_json(zk, "/admin/reassign_partitions")
    )
    assert (config(zk, "brokers", 1) or {}) == (before or {})


def test_execute_wait_waits_for_the_log_dir_copy_before_clearing(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover, tmp_path: Path
) -> None:
    # 3 MB copied into broker 1's other log dir at 1000 B/s (the first MB or so goes at once, then the
    # copy crawls), for a partition that keeps its replicas: its reassignment is over at once. --wait
    # reports the copy and keeps the log-dir rate on while DescribeLogDirs shows a future replica; the
    # operator then raises the rate (kafka-configs), and --wait clears once the copy is done.
    topic = make_topic({0: [1, 2]})
    values = produce(cluster.bootstrap, topic, 0, 3000)
    (src,) = _where(cluster, 1, topic, 0)
    other = "d1" if src == "d0" else "d0"
    dir1 = str(_dirs(cluster, 1)[other == "d1"])
    plan = mover.plan("dirs.json", {(topic, 0): [1, 2]}, log_dirs={(topic, 0): [dir1, "any"]})
    await_idle(zk)
    child = Child(
        cluster.zookeeper,
        tmp_path,
        "execute",
        "--reassignment-json-file",
        plan,
        "--zookeeper",  # ZooKeeper mode; the brokers for the log-dir moves
        cluster.zookeeper,
        "--bootstrap-server",
        cluster.bootstrap,
        "--replica-alter-log-dirs-throttle",
        "1000",
        "--wait",
        "--poll-interval",
        "0.5",
        "--timeout",
        "300",
    )
    child.wait_for_line(f"0/1 replica log-dir moves done; copying {topic}-0 on broker 1 to {dir1}")
    assert "1/1 partitions done, 2/2 target replicas in sync" in child.stderr
    assert child.proc.poll() is None  # still waiting: the throttle and our record stay meanwhile
    assert config(zk, "brokers", 1) == {LOG_DIR_RATE: "1000"}
    assert get_json(zk, RECORD)["brokers"]["1"] == {LOG_DIR_RATE: None}
    set_config(zk, "brokers", 1, {LOG_DIR_RATE: "100000000"})  # the operator speeds it up
    assert child.finish() == 0, child.stderr
    assert "1/1 replica log-dir moves done" in child.stderr
    # the copy was over (no future replica) when --wait took the rate off: the log is in its new dir
    assert _where(cluster, 1, topic, 0) == [other]
    assert not list(Path(dir1).glob(f"{topic}-0.*-future"))
    # what was cleared: the log-dir rate on broker 1 (Kafka would name every broker and the topic)
    assert child.out.splitlines()[-1:] == ["Clearing broker-level throttles on broker 1"]
    assert LOG_DIR_RATE not in (config(zk, "brokers", 1) or {})  # the recorded absence put back
    assert get_json(zk, RECORD) is None or "1" not in get_json(zk, RECORD)["brokers"]
    assert consume_all(topic) == values


def test_verify_without_the_admin_api_keeps_the_log_dir_throttle(
    cluster: Any, make_topic: Any, consume_all: Any, zk: Any, mover: Mover
) -> None:
    # A copy into broker 1's other log dir at 1000 B/s. A verify through ZooKeeper alone has no broker to
    # ask whether it still runs: it keeps the throttles (the log-dir rate is at work) and says why.
    topic = make_topic({0: [1, 2]})
    values = produce(cluster.bootstrap, topic, 0, 3000)
    (src,) = _where(cluster, 1, topic, 0)
    other = "d1" if src == "d0" else "d0"
    dir1 = str(_dirs(cluster, 1)[other == "d1"])
    plan = mover.plan("dirs.json", {(topic, 0): [1, 2]}, log_dirs={(topic, 0): [dir1, "any"]})
    await_idle(zk)
    brokers = ("--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap)  # ZooKeeper mode
    r = mover.execute(plan, *brokers, "--replica-alter-log-dirs-throttle", "1000")
    assert r.returncode == 0, r.stderr
    seen = mover.verify(plan, *brokers, "--preserve-throttles")
    assert seen.returncode == 4, seen.stderr
    assert f"Reassignment of replica {topic}-0-1 is still in progress." in seen.stdout.splitlines()
    blind = mover.verify(plan)  # ZooKeeper alone
    assert blind.returncode == 0, blind.stderr  # the partition is where planned; its copy is not checked
    assert (
        "Throttles kept: the plan moves replicas between log dirs, and without the admin API "
        "(--bootstrap-server) it cannot be seen whether those copies still run." in blind.stderr.splitlines()
    )
    assert "Clearing" not in blind.stdout
    assert config(zk, "brokers", 1) == {LOG_DIR_RATE: "1000"}
    assert get_json(zk, RECORD)["brokers"]["1"] == {LOG_DIR_RATE: None}
    set_config(zk, "brokers", 1, {LOG_DIR_RATE: "100000000"})  # the operator speeds it up
    wait_until(lambda: _where(cluster, 1, topic, 0) == [other], timeout=120, message="broker 1 moved it")
    done = mover.verify(plan, *brokers)
    assert done.returncode == 0, done.stderr
    assert f"Reassignment of replica {topic}-0-1 completed successfully." in done.stdout.splitlines()
    assert LOG_DIR_RATE not in (config(zk, "brokers", 1) or {})  # the recorded absence put back
    assert get_json(zk, RECORD) is None or "1" not in get_json(zk, RECORD)["brokers"]
    assert consume_all(topic) == values
