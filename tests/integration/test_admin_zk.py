"""The admin-API backend (--bootstrap-server) on the ZooKeeper-mode 3.9 cluster, beside the ZooKeeper backend:
the same snapshot and the same plans byte for byte, and a reassignment started through one backend verified
and listed through the other, with the same lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import wait_until
from tests.integration.reassign_support import Mover, await_idle, get_json, produce, reassigning


def admin_env(cluster: Any) -> dict[str, str | None]:
    return {"KAFKA_REASSIGN_ZOOKEEPER": None, "KAFKA_REASSIGN_BOOTSTRAP": cluster.bootstrap}


def test_same_snapshot_and_plans_through_both_backends(
    cluster: Any, make_topic: Any, zk: Any, run_cli: Any, tmp_path: Path, mover: Mover
) -> None:
    a = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]})
    b = make_topic({0: [1, 2, 3], 1: [2, 3, 1]})
    # Nothing queued for deletion (an earlier test's topics), nothing moving: then both views agree.
    wait_until(lambda: not zk.get_children("/admin/delete_topics"), timeout=60, message="deletions done")
    await_idle(zk)
    topics = ["--topic", a, "--topic", b]
    via_zk = run_cli("snapshot", *topics, "-o", tmp_path / "zk.json")
    # (without the sizes, which only the brokers know: test_sizes.py)
    via_admin = run_cli(
        "snapshot", *topics, "--no-sizes", "-o", tmp_path / "admin.json", env=admin_env(cluster)
    )
    assert via_zk.returncode == via_admin.returncode == 0, via_zk.stderr + via_admin.stderr
    assert (tmp_path / "zk.json").read_bytes() == (tmp_path / "admin.json").read_bytes()
    doc = json.loads((tmp_path / "admin.json").read_text())
    assert doc["brokers"] == [{"id": 1, "rack": "r1"}, {"id": 2, "rack": "r2"}, {"id": 3, "rack": "r3"}]
    by_name = {t["topic"]: t for t in doc["topics"]}
    # The topic id as ZooKeeper holds it (base64), from the admin API's UUID.
    assert by_name[a]["topic_id"] == get_json(zk, f"/brokers/topics/{a}")["topic_id"]
    assert [(p["replicas"], p["leader"], sorted(p["isr"])) for p in by_name[b]["partitions"]] == [
        ([1, 2, 3], 1, [1, 2, 3]),
        ([2, 3, 1], 2, [1, 2, 3]),
    ]
    for extra in (
        ["--broker-list", "1,2,3", "--seed", "42"],
        ["--seed", "5", "--disable-rack-aware"],
        ["--broker-list", "1,2", "--seed", "9", "--replication-factor", "2"],
    ):
        gen = ["generate", *topics, *extra]
        g_zk = run_cli(*gen)
        g_admin = run_cli(*gen, env=admin_env(cluster))
        g_snap = run_cli(*gen, "--snapshot", tmp_path / "zk.json", env={"KAFKA_REASSIGN_ZOOKEEPER": None})
        assert g_zk.returncode == g_admin.returncode == g_snap.returncode == 0, g_admin.stderr
        assert g_zk.stdout == g_admin.stdout == g_snap.stdout, extra
        assert g_zk.stderr == g_snap.stderr  # the same summary table
        # through the brokers the sizes are read too (issue 30 item 6): the same table, then the bytes the
        # plan copies (the topics are empty: 0)
        sized = ("bytes copied:", "most into one broker:")
        assert [x for x in g_admin.stderr.splitlines() if not x.startswith(sized)] == g_zk.stderr.splitlines()
        assert "bytes copied: 0 (0 B)" in g_admin.stderr


def _lists_and_verifies_agree(mover: Mover, run_cli: Any, cluster: Any, plan: Path, line: str) -> None:
    ours_zk, ours_admin = mover.cli("list"), run_cli("list", env=admin_env(cluster))
    assert (
        ours_zk.stdout.splitlines()
        == ours_admin.stdout.splitlines()
        == ["Current partition reassignments:", line]
    )
    v_zk = mover.verify(plan, "--preserve-throttles")
    v_admin = run_cli(
        "verify", "--reassignment-json-file", plan, "--preserve-throttles", env=admin_env(cluster)
    )
    assert v_zk.returncode == v_admin.returncode == 4
    assert v_zk.stdout == v_admin.stdout
    assert v_zk.stdout.splitlines()[1].endswith("is still in progress.")


def test_a_move_started_through_one_backend_is_seen_alike_through_the_other(
    cluster: Any, make_topic: Any, zk: Any, run_cli: Any, consume_all: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2]})
    values = produce(cluster.bootstrap, topic, 0, 2500)  # 2.5 MB at 10 kB/s: minutes after the first MB
    await_idle(zk)

    # 1. through ZooKeeper (the trigger znode), seen through the admin API too
    plan = mover.plan("zk.json", {(topic, 0): [3, 2]})
    r = mover.execute(plan, "--throttle", "10000")
    assert r.returncode == 0, r.stderr
    wait_until(
        lambda: bool((get_json(zk, f"/brokers/topics/{topic}") or {}).get("adding_replicas", {}).get("0")),
        timeout=30,
        message="the controller started the move",
    )
    _lists_and_verifies_agree(
        mover, run_cli, cluster, plan, f"{topic}-0: replicas: 3,2,1. adding: 3. removing: 1."
    )
    c = mover.cli(
        "cancel",
        "--reassignment-json-file",
        plan,
        "--zookeeper",
        cluster.zookeeper,
        "--bootstrap-server",
        cluster.bootstrap,
    )
    assert c.returncode == 0, c.stderr
    assert get_json(zk, "/reassign_cli/throttles") is None  # the ZooKeeper record: restored and gone
    await_idle(zk)

    # 2. through the admin API (AlterPartitionReassignments), seen through ZooKeeper too
    plan2 = mover.plan("admin.json", {(topic, 0): [3, 1]})  # from [2,1], where the cancel left it
    r = run_cli(
        "execute",
        "--reassignment-json-file",
        plan2,
        "--throttle",
        "10000",
        env=admin_env(cluster),
        cwd=mover.tmp,
    )
    assert r.returncode == 0, r.stderr
    assert not zk.exists("/admin/reassign_partitions")  # no znode: the controller took it from the API
    wait_until(lambda: reassigning(zk, topic), timeout=30, message="AR/RR in the topic znode")
    _lists_and_verifies_agree(
        mover, run_cli, cluster, plan2, f"{topic}-0: replicas: 3,1,2. adding: 3. removing: 2."
    )
    c = run_cli("cancel", "--reassignment-json-file", plan2, env=admin_env(cluster))
    assert c.returncode == 0, c.stderr
    assert c.stdout.splitlines()[0] == f"Successfully cancelled partition reassignment for: {topic}-0"
    assert get_json(zk, f"/brokers/topics/{topic}")["partitions"]["0"] == [1, 2]
    # Throttles written through the admin API went through the brokers into the same config znodes,
    # and the cancel (admin API) restored them from its own record.
    for entity, name in (("topics", topic), ("brokers", 1), ("brokers", 2), ("brokers", 3)):
        cfg = (get_json(zk, f"/config/{entity}/{name}") or {}).get("config", {})
        assert not [k for k in cfg if "throttled" in k], (entity, name, cfg)
    assert consume_all(topic) == values
