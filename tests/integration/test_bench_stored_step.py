"""scripts/bench_ops --stored-plan at a tiny size (200 partitions): it runs on the real ZooKeeper and KRaft
4.3.1 clusters, prints its table, and leaves nothing behind (no chroot of its own, no plan stored in the
topic). No timings are checked."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

from kazoo.client import KazooClient

from tests.clusters import ExtraCluster
from tests.conftest import Cluster
from tests.helpers import REPO, wait_until
from tests.integration.stored_plan_worker import topic_store


def test_bench_ops_stored_plan_tiny(cluster: Cluster, kraft_cluster: Callable[..., ExtraCluster]) -> None:
    kc = kraft_cluster()
    hosts = cluster.zookeeper.split("/")[0]
    r = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "bench_ops"),
            "--stored-plan",
            "40x5",
            "--zookeeper",
            hosts,
            "--bootstrap-server",
            cluster.bootstrap,
            "--kraft-bootstrap",
            kc.bootstrap,
        ],
        capture_output=True,
        text=True,
        timeout=500,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    for line in (
        "(a) ZooKeeper, synthetic chroot: 200 partitions",
        "verify today (in progress)",
        "verify: step (starts moves)",
        "verify: step (cap full)",
        "step 1 / verify today: wall",
        "(b) topic __reassign_cli_plan (KRaft)",
        "take the lease (read + CAS)",
        "store part / verify today (a): wall",
    ):
        assert line in r.stdout, r.stdout
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=15)
    try:
        assert not [c for c in zk.get_children("/") if c.startswith("bench-step-")]
    finally:
        zk.stop()
        zk.close()
    with topic_store(kc.bootstrap) as store:
        assert store.read() is None


def test_bench_ops_stored_real_tiny(kraft_cluster: Callable[..., ExtraCluster]) -> None:
    """--stored-real at 20 real partitions on the KRaft 4.3.1 cluster: its table, and nothing left behind
    (no bench-real-* topic, no stored plan, nothing reassigning)."""
    from kafka.admin import KafkaAdminClient

    kc = kraft_cluster()
    r = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_ops"), "--stored-real", "10x2", "--kraft-bootstrap", kc.bootstrap],
        capture_output=True, text=True, timeout=500, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    for line in (
        "(c) real topics on KRaft, admin API whole: 20 empty RF-1 partitions",
        "verify today (all complete)",
        "execute --detach (store, step)",
        "verify: step 2 (no file)",
        "step 1 / verify today: wall",
    ):
        assert line in r.stdout, r.stdout
    with topic_store(kc.bootstrap) as store:
        assert store.read() is None
    admin = KafkaAdminClient(bootstrap_servers=kc.bootstrap)
    try:
        assert not admin.list_partition_reassignments()
        # deleted by the bench; each broker's metadata drops the names once it applies the deletion
        wait_until(
            lambda: not [t for t in admin.list_topics() if t.startswith("bench-real-")],
            timeout=120,
            message="the bench's topics gone",
        )
    finally:
        admin.close()
