"""Health holds (core/health.py) from the signals real clusters give (backends/admin/health.py,
backends/zookeeper/health.py): a stopped broker, a partition under min.insync.replicas, a killed controller.

These tests stop and kill brokers, which no other test may see: they run on clusters of their own
($CLUSTER_DIR-health in ZooKeeper mode, Kafka 3.9; $CLUSTER_DIR-health-kraft, KRaft 4.x), started once
for this module and stopped at its end (or, if they were running before, left running with every broker
started again). Every test starts what it stopped in a finalizer. Expected holds are worked out by hand
from the replica assignments each test creates, and the KRaft epoch is compared with Kafka's own
kafka-metadata-quorum tool."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reassign_cli.backends.admin import health as admin_health
from reassign_cli.backends.zookeeper import health as zk_health
from reassign_cli.backends.zookeeper.session import ZkOptions, open_session
from reassign_cli.core import health as hl
from tests import clusters
from tests.conftest import cluster_dir
from tests.helpers import unique_name, wait_until

pytestmark = pytest.mark.timeout(900)  # a cluster of its own to start, brokers stopped and started


@pytest.fixture(scope="module")
def zk_cluster() -> Iterator[clusters.ExtraCluster]:
    c = clusters.start_extra(Path(f"{cluster_dir().resolve()}-health"))
    try:
        yield c
    finally:
        clusters.stop_extra(c)


@pytest.fixture(scope="module")
def kraft_cluster() -> Iterator[clusters.ExtraCluster]:
    c = clusters.start_extra(
        Path(f"{cluster_dir().resolve()}-health-kraft"), "--kraft", "--kafka-version", clusters.KAFKA4_VERSION
    )
    try:
        yield c
    finally:
        clusters.stop_extra(c)


@contextlib.contextmanager
def admin_of(c: clusters.ExtraCluster) -> Iterator[Any]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
    try:
        yield admin
    finally:
        admin.close()


@contextlib.contextmanager
def topic(c: clusters.ExtraCluster, assignment: dict[int, list[int]], **configs: str) -> Iterator[str]:
    """A fresh topic with this replica assignment, led by its first replicas; deleted afterwards."""
    name = unique_name("health")
    spec = {"num_partitions": -1, "replication_factor": -1, "assignments": assignment, "configs": configs}
    with admin_of(c) as admin:
        admin.create_topics({name: spec})
        wait_until(lambda: healthy(admin, name, len(assignment)), timeout=120, message=f"{name} created")
        try:
            yield name
        finally:
            with contextlib.suppress(Exception):
                admin.delete_topics([name])


def healthy(admin: Any, name: str, n: int) -> bool:
    meta = admin.describe_topics([name])
    parts = meta[0]["partitions"] if meta and not meta[0]["error_code"] else []
    return len(parts) == n and all(
        p["leader_id"] >= 0 and sorted(p["isr_nodes"]) == sorted(p["replica_nodes"]) for p in parts
    )


def zk_signals(c: clusters.ExtraCluster) -> hl.Signals:
    assert c.zookeeper
    with open_session(ZkOptions(c.zookeeper)) as session:
        return zk_health.gather(session)


def admin_signals(c: clusters.ExtraCluster) -> hl.Signals:
    with admin_of(c) as admin:
        return admin_health.gather(admin)


def showing(s: hl.Signals, ok: Any) -> hl.Signals | None:
    """s when ok(s), else None (for wait_until)."""
    return s if ok(s) else None


def holds_of(v: hl.Verdict, name: str) -> set[tuple[str, str]]:
    """The broker holds and those of topic `name` (other topics of the cluster are not this test's)."""
    return {(h.check, h.subject) for h in v.holds if h.partition is None or h.partition[0] == name}


def verdict(s: hl.Signals, queued: set[tuple[str, int]] | None = None) -> hl.Verdict:
    return hl.check(s, plan_brokers={1, 2, 3}, queued=queued or set(), previous_epoch=s.controller_epoch)


# -- ZooKeeper mode (Kafka 3.9) ------------------------------------------------------------------


def test_zk_stopped_broker_is_not_registered_and_its_partitions_named(
    zk_cluster: clusters.ExtraCluster,
) -> None:
    c = zk_cluster
    # Broker 3 leads t-0 and follows in t-1; t-2 does not touch it.
    with topic(c, {0: [3, 1], 1: [1, 3], 2: [1, 2]}) as name:
        with c.broker_stopped(3):
            expected = {
                ("broker-missing", "broker 3"),
                ("offline-replicas", f"partition {name}-0"),
                ("offline-replicas", f"partition {name}-1"),
                ("under-replicated", f"partition {name}-0"),
                ("under-replicated", f"partition {name}-1"),
            }
            # ZooKeeper: the truth of a ZooKeeper-mode cluster (the controller shrinks the ISRs on its own
            # time after the broker's registration is gone: poll until it has).
            s = wait_until(
                lambda: showing(zk_signals(c), lambda x: holds_of(verdict(x), name) == expected),
                timeout=120,
                message=lambda: f"ZooKeeper holds {holds_of(verdict(zk_signals(c)), name)}",
            )
            assert s.fenced is None and 3 not in s.registered
            assert s.partitions[(name, 0)].leader == 1  # led by 3 before: its leadership moved to 1
            v = verdict(s)
            line = hl.render_line(v, first_seen={}, now=0.0, moving=0, queued=0)
            assert line is not None and line.startswith("held: broker 3 is not registered (since 0 s)")
            # The admin API of the same cluster (Metadata OfflineReplicas, DescribeCluster v1: no fencing).
            a = wait_until(
                lambda: showing(admin_signals(c), lambda x: holds_of(verdict(x), name) == expected),
                timeout=120,
                message=lambda: f"admin API holds {holds_of(verdict(admin_signals(c)), name)}",
            )
            assert a.fenced is None and a.controller_epoch is None
            assert any("ZooKeeper-mode" in n for n in a.notes)
        wait_until(lambda: not holds_of(verdict(zk_signals(c)), name), timeout=180, message="holds gone")


def test_zk_partition_under_min_isr_is_named_and_its_queued_move_waits(
    zk_cluster: clusters.ExtraCluster,
) -> None:
    c = zk_cluster
    with topic(c, {0: [1, 2], 1: [1, 3]}, **{"min.insync.replicas": "2"}) as name:
        s = zk_signals(c)
        assert s.min_isr[name] == 2
        assert holds_of(verdict(s), name) == set()  # RF 2 at min ISR 2, healthy: nothing holds
        with c.broker_stopped(2):
            tp = (name, 0)
            expected = {
                ("broker-missing", "broker 2"),
                ("offline-replicas", f"partition {name}-0"),
                ("min-isr", f"partition {name}-0"),
                ("under-replicated", f"partition {name}-0"),
            }
            s = wait_until(
                lambda: showing(zk_signals(c), lambda x: holds_of(verdict(x), name) == expected),
                timeout=120,
                message=lambda: f"holds {holds_of(verdict(zk_signals(c)), name)}",
            )
            v = verdict(s, queued={tp, (name, 1)})
            reason = next(h.reason for h in v.holds if h.check == "min-isr")
            assert reason == f"partition {name}-0 is under min.insync.replicas (1 in sync of 2)"
            assert tp in v.waiting and (name, 1) not in v.waiting
            # Through the brokers too (DescribeConfigs gives the topic's value).
            a = admin_signals(c)
            assert a.min_isr[name] == 2
            assert ("min-isr", f"partition {name}-0") in holds_of(verdict(a), name)
        wait_until(lambda: not holds_of(verdict(zk_signals(c)), name), timeout=180, message="holds gone")


@contextlib.contextmanager
def cluster_default_min_isr(c: clusters.ExtraCluster, value: str) -> Iterator[None]:
    """min.insync.replicas as the cluster-wide dynamic broker default, set and deleted afterwards with
    Kafka's own kafka-configs (--entity-default; kafka-python cannot name that entity)."""
    base = ["--bootstrap-server", c.bootstrap, "--alter", "--entity-type", "brokers", "--entity-default"]
    java_tool(c, "kafka.admin.ConfigCommand", *base, "--add-config", f"min.insync.replicas={value}")
    try:
        yield
    finally:
        java_tool(c, "kafka.admin.ConfigCommand", *base, "--delete-config", "min.insync.replicas")


def test_zk_topic_without_its_own_min_isr_takes_the_brokers_default(
    zk_cluster: clusters.ExtraCluster,
) -> None:
    c = zk_cluster
    with topic(c, {0: [1, 2]}) as name:
        with admin_of(c) as admin:
            static = admin_health.broker_default_min_isr(admin, 1)
        assert static == 1  # the test cluster's server.properties leaves it at Kafka's default
        assert zk_signals(c).min_isr[name] == 1
        with cluster_default_min_isr(c, "2"):
            # ZooKeeper: /config/brokers/<default>; the brokers: their DescribeConfigs.
            assert zk_signals(c).min_isr[name] == 2
            with admin_of(c) as admin:
                wait_until(
                    lambda: admin_health.broker_default_min_isr(admin, 1) == 2, message="the new default"
                )
            assert admin_signals(c).min_isr[name] == 2
        with admin_of(c) as admin:
            wait_until(lambda: admin_health.broker_default_min_isr(admin, 1) == 1, message="the default back")


def java_tool(c: clusters.ExtraCluster, main: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One of Kafka's own tools (4.x's jars), by its main class; fails the test when it fails."""
    java = os.environ.get("JAVA") or shutil.which("java") or "/usr/bin/java"
    r = subprocess.run(
        [java, "-cp", c.env["KAFKA_TOOLS_CLASSPATH"], main, *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, f"{main} {' '.join(args)}: {r.stdout}{r.stderr}"
    return r


def controller_of(c: clusters.ExtraCluster) -> int | None:
    import orjson

    zk = c.kazoo()
    try:
        data, _ = zk.get("/controller") if zk.exists("/controller") else (None, None)
    finally:
        zk.stop()
        zk.close()
    return int(orjson.loads(data)["brokerid"]) if data else None


def kill9(c: clusters.ExtraCluster, broker: int) -> None:
    c.stopped.add(broker)  # started again by the test's finalizer (or the module's)
    pid = int((c.directory / "pids" / f"broker-{broker}.pid").read_text().strip())
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), timeout=30, message=f"broker {broker} gone")


def test_zk_controller_killed_changes_the_epoch_and_holds_one_step(zk_cluster: clusters.ExtraCluster) -> None:
    c = zk_cluster
    before = zk_signals(c).controller_epoch
    controller = controller_of(c)
    assert before is not None and controller is not None
    kill9(c, controller)
    try:
        # The killed broker's ZooKeeper session expires; another broker becomes controller, epoch + 1.
        s = wait_until(
            lambda: showing(zk_signals(c), lambda x: x.controller_epoch != before),
            timeout=180,
            message="a new controller epoch",
        )
        assert s.controller_epoch is not None and s.controller_epoch > before
        v = hl.check(s, plan_brokers=set(), queued=set(), previous_epoch=before)
        assert ("controller-change", "controller") in {(h.check, h.subject) for h in v.holds}
        assert v.resubmit and v.epoch == s.controller_epoch
        assert c.zookeeper
        with open_session(ZkOptions(c.zookeeper)) as session:  # an admin-API step's epoch with --zookeeper
            assert zk_health.controller_epoch(session) == s.controller_epoch
        assert f"the controller changed (epoch {s.controller_epoch}, was {before})" in [
            h.reason for h in v.holds
        ]
        # The next step, with the epoch this one recorded, does not hold for it.
        nxt = hl.check(zk_signals(c), plan_brokers=set(), queued=set(), previous_epoch=v.epoch)
        assert "controller-change" not in {h.check for h in nxt.holds} and not nxt.resubmit
    finally:
        c.start_broker(controller)


# -- KRaft (Kafka 4.x) ---------------------------------------------------------------------------


def quorum_status(c: clusters.ExtraCluster) -> dict[str, int]:
    """LeaderId and LeaderEpoch from Kafka's own `kafka-metadata-quorum describe --status`."""
    r = java_tool(
        c,
        "org.apache.kafka.tools.MetadataQuorumCommand",
        "--bootstrap-server",
        c.bootstrap,
        "describe",
        "--status",
    )
    return {k: int(v) for k, v in re.findall(r"^(LeaderId|LeaderEpoch):\s+(\d+)$", r.stdout, re.M)}


def test_kraft_quorum_leader_epoch_is_kafkas(kraft_cluster: clusters.ExtraCluster) -> None:
    c = kraft_cluster
    first = quorum_status(c)
    s = admin_signals(c)
    second = quorum_status(c)
    assert first["LeaderEpoch"] == second["LeaderEpoch"], "the quorum changed leader meanwhile"
    assert s.controller_epoch == first["LeaderEpoch"]
    assert s.fenced == frozenset() and s.registered == {1, 2, 3}  # DescribeCluster v2 (KIP-1073)


def test_kraft_partition_under_min_isr_is_named(kraft_cluster: clusters.ExtraCluster) -> None:
    c = kraft_cluster
    with topic(c, {0: [1, 2], 1: [1, 3]}, **{"min.insync.replicas": "2"}) as name:
        with c.broker_stopped(2):
            expected = {
                ("broker-fenced", "broker 2"),
                ("offline-replicas", f"partition {name}-0"),
                ("min-isr", f"partition {name}-0"),
                ("under-replicated", f"partition {name}-0"),
            }
            s = wait_until(
                lambda: showing(admin_signals(c), lambda x: holds_of(verdict(x), name) == expected),
                timeout=120,
                message=lambda: f"holds {holds_of(verdict(admin_signals(c)), name)}",
            )
            assert s.partitions[(name, 0)].isr == (1,) and s.min_isr[name] == 2
            assert verdict(s, queued={(name, 0), (name, 1)}).waiting == {(name, 0)}
        wait_until(lambda: not holds_of(verdict(admin_signals(c)), name), timeout=180, message="holds gone")


def test_kraft_stopped_broker_is_fenced(kraft_cluster: clusters.ExtraCluster) -> None:
    c = kraft_cluster
    with topic(c, {0: [3, 1], 1: [1, 2]}) as name:
        with c.broker_stopped(3):
            # Kafka 4.x keeps a stopped broker registered and fenced (until it is unregistered).
            expected = {
                ("broker-fenced", "broker 3"),
                ("offline-replicas", f"partition {name}-0"),
                ("under-replicated", f"partition {name}-0"),
            }
            s = wait_until(
                lambda: showing(admin_signals(c), lambda x: holds_of(verdict(x), name) == expected),
                timeout=120,
                message=lambda: f"holds {holds_of(verdict(admin_signals(c)), name)}",
            )
            assert s.fenced == {3} and 3 in s.registered
            assert s.partitions[(name, 0)].leader == 1
            assert isinstance(s.controller_epoch, int)
        wait_until(lambda: not holds_of(verdict(admin_signals(c)), name), timeout=180, message="holds gone")
