"""Partition sizes on the real cluster: known amounts of data produced, `snapshot --bootstrap-server` (and
ZooKeeper mode with the brokers beside it) records each partition's size, checked against Kafka's own
kafka-log-dirs tool (Kafka 4.x's LogDirsCommand, from KAFKA_TOOLS_CLASSPATH) and against bounds worked out
from the bytes produced; then generate counts the bytes its plan copies, recomputed here from the printed
plan and Kafka's figures."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import Cluster

VALUE_BYTES = 1000
RECORDS = {0: 300, 1: 200, 2: 100, 3: 50}  # per partition: 300 kB, 200 kB, 100 kB, 50 kB of values


def _kafka_log_dirs(bootstrap: str, topic: str) -> dict[tuple[int, int], int]:
    """{(partition, broker): size} from Kafka's own tool (current logs only, not future ones)."""
    r = subprocess.run(
        ["java", "-cp", os.environ["KAFKA_TOOLS_CLASSPATH"], "org.apache.kafka.tools.LogDirsCommand",
         "--bootstrap-server", bootstrap, "--describe", "--topic-list", topic],
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(next(line for line in r.stdout.splitlines() if line.startswith("{")))
    out: dict[tuple[int, int], int] = {}
    for broker in doc["brokers"]:
        for d in broker["logDirs"]:
            for part in d["partitions"]:
                name, _, p = part["partition"].rpartition("-")
                if name == topic and not part["isFuture"]:
                    out[(int(p), broker["broker"])] = part["size"]
    return out


def _snapshot_sizes(path: Path, topic: str) -> dict[int, int | None]:
    doc = json.loads(path.read_text())
    (t,) = [t for t in doc["topics"] if t["topic"] == topic]
    return {e["partition"]: e.get("size") for e in t["partitions"]}


def test_snapshot_sizes_and_bytes_copied(
    make_topic: Any, cluster: Cluster, run_cli: Any, tmp_path: Path
) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 1], 2: [1, 2], 3: [2, 1]})
    _produce_some(cluster.bootstrap, topic, RECORDS)
    kafka = _kafka_log_dirs(cluster.bootstrap, topic)
    assert sorted(kafka) == [(p, b) for p in range(4) for b in (1, 2)]
    expected = {p: max(kafka[(p, 1)], kafka[(p, 2)]) for p in range(4)}
    for p, n in RECORDS.items():
        # The values alone are n x 1000 bytes; record headers and batch headers add well under 10%.
        assert n * VALUE_BYTES < expected[p] < n * VALUE_BYTES * 1.1, (p, expected[p])

    admin_snap, zk_snap, zk_only = tmp_path / "admin.json", tmp_path / "zk.json", tmp_path / "zk-only.json"
    admin = {"KAFKA_REASSIGN_ZOOKEEPER": None}  # the admin API alone
    r = run_cli(
        "snapshot", "-o", admin_snap, "--topic", topic, "--bootstrap-server", cluster.bootstrap, env=admin
    )
    assert r.returncode == 0 and "4 partitions, 4 with sizes" in r.stderr, r.stderr
    assert _snapshot_sizes(admin_snap, topic) == expected
    # ZooKeeper mode with the brokers beside it: the same sizes; ZooKeeper alone: none (unknown).
    r = run_cli("snapshot", "-o", zk_snap, "--topic", topic, "--zookeeper", cluster.zookeeper,
                "--bootstrap-server", cluster.bootstrap)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert _snapshot_sizes(zk_snap, topic) == expected
    r = run_cli("snapshot", "-o", zk_only, "--topic", topic, env={"KAFKA_REASSIGN_BOOTSTRAP": None})
    assert r.returncode == 0, r.stderr
    assert _snapshot_sizes(zk_only, topic) == dict.fromkeys(range(4))

    for strategy in ("balanced", "kafka"):
        g = run_cli("generate", "--snapshot", admin_snap, "--topic", topic, "--strategy", strategy, "--seed", "5",
                    "--throttle", "100000", "--format", "json")  # fmt: skip
        assert g.returncode == 0, g.stderr
        doc = json.loads(g.stdout)
        before = {e["partition"]: e["replicas"] for e in doc["current"]["partitions"]}
        after = {e["partition"]: e["replicas"] for e in doc["proposed"]["partitions"]}
        inbound: dict[int, int] = {}
        for p, new in after.items():
            for b in set(new) - set(before[p]):
                inbound[b] = inbound.get(b, 0) + expected[p]
        stats = doc["stats"]
        assert stats["bytes_copied"] == sum(inbound.values())
        assert stats["bytes_in_max"] == max(inbound.values())
        assert stats["seconds_at_throttle"] == round(max(inbound.values()) / 100000, 3)
        assert stats["copies_size_unknown"] == 0
        if strategy == "balanced":
            # 8 replicas over 3 brokers: broker 3 needs 2 (the lower bound), and only broker 3 receives.
            assert stats["copies"] == 2 and set(inbound) == {3}
        plain = run_cli("generate", "--snapshot", zk_only, "--topic", topic, "--strategy", strategy, "--seed", "5",
                        "--format", "json")  # fmt: skip
        assert plain.returncode == 0, plain.stderr
        sizeless = {e["partition"]: e["replicas"] for e in json.loads(plain.stdout)["proposed"]["partitions"]}
        if strategy == "kafka":  # sizes never change Kafka's plan
            assert sizeless == after
        else:  # balanced may pick smaller partitions with sizes: the same copies, never more bytes
            plain_in = [expected[p] for p, new in sizeless.items() for _ in set(new) - set(before[p])]
            assert len(plain_in) == stats["copies"] and sum(plain_in) >= stats["bytes_copied"]


def test_replicas_on_a_stopped_broker_are_unknown(
    make_topic: Any, cluster: Cluster, run_cli: Any, tmp_path: Path
) -> None:
    # a-0 on brokers 3 and 1, a-1 on 1 and 2; b-0 on broker 3 alone (offline while 3 is down).
    a, b = make_topic({0: [3, 1], 1: [1, 2]}), make_topic({0: [3]})
    _produce_some(cluster.bootstrap, a, {0: 100, 1: 30})
    _produce_some(cluster.bootstrap, b, {0: 50})
    kafka = _kafka_log_dirs(cluster.bootstrap, a)
    snap = tmp_path / "snap.json"
    with cluster.broker_stopped(3):
        r = run_cli(
            "snapshot", "-o", snap, "--topic", a, "--topic", b, "--bootstrap-server", cluster.bootstrap
        )
    assert r.returncode == 0, r.stderr
    assert "no size for 1 partitions" in r.stderr
    # a-0: broker 1's replica answers (broker 3, not registered, is not asked); b-0: unknown, not 0.
    assert _snapshot_sizes(snap, a) == {0: kafka[(0, 1)], 1: max(kafka[(1, 1)], kafka[(1, 2)])}
    assert _snapshot_sizes(snap, b) == {0: None}
    g = run_cli("generate", "--snapshot", snap, "--topic", a, "--topic", b, "--broker-list", "1,2",
                "--strategy", "balanced", "--seed", "1", "--format", "json")  # fmt: skip
    assert g.returncode == 0, g.stderr
    doc = json.loads(g.stdout)
    before = {(e["topic"], e["partition"]): e["replicas"] for e in doc["current"]["partitions"]}
    after = {(e["topic"], e["partition"]): e["replicas"] for e in doc["proposed"]["partitions"]}
    added = {k: set(after[k]) - set(before[k]) for k in after}
    # Draining broker 3: a-0 needs one copy (broker 1's size), b-0 one (unknown size), a-1 none.
    assert added == {(a, 0): {2}, (a, 1): set(), (b, 0): added[(b, 0)]} and len(added[(b, 0)]) == 1
    assert doc["stats"]["bytes_copied"] == kafka[(0, 1)]
    assert doc["stats"]["copies_size_unknown"] == 1


def test_live_generate_reads_the_sizes_whenever_the_brokers_are_at_hand(
    make_topic: Any, cluster: Cluster, run_cli: Any
) -> None:
    """Issue 30 item 6: `generate --bootstrap-server ... --throttle` (any strategy, no --balance bytes), and
    ZooKeeper mode with the brokers beside it, read the partition sizes: no "no partition sizes are known"
    warning, and the JSON stats carry the bytes (recomputed here from the printed plan and Kafka's own
    kafka-log-dirs figures) beside the copy counts. Before, it warned and had no stats at all."""
    topic = make_topic({0: [1, 2], 1: [2, 1], 2: [1, 2], 3: [2, 1]})
    _produce_some(cluster.bootstrap, topic, RECORDS)
    kafka = _kafka_log_dirs(cluster.bootstrap, topic)
    expected = {p: max(kafka[(p, 1)], kafka[(p, 2)]) for p in range(4)}
    conns = (
        ["--bootstrap-server", cluster.bootstrap],
        ["--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap],
    )
    for conn in conns:
        g = run_cli("generate", *conn, "--topic", topic, "--broker-list", "1,2,3", "--seed", "5",
                    "--throttle", "100kB", "--format", "json")  # fmt: skip
        assert g.returncode == 0, g.stderr
        assert "no partition sizes are known" not in g.stderr
        doc = json.loads(g.stdout)
        before = {e["partition"]: e["replicas"] for e in doc["current"]["partitions"]}
        after = {e["partition"]: e["replicas"] for e in doc["proposed"]["partitions"]}
        inbound: dict[int, int] = {}
        for p, new in after.items():
            for b in set(new) - set(before[p]):
                inbound[b] = inbound.get(b, 0) + expected[p]
        stats = doc["stats"]
        assert stats["copies"] == sum(len(set(after[p]) - set(before[p])) for p in after)
        assert stats["partitions_changed"] == sum(1 for p in after if after[p] != before[p])
        assert stats["leader_changes"] == sum(1 for p in after if after[p][0] != before[p][0])
        assert stats["bytes_copied"] == sum(inbound.values())
        assert stats["seconds_at_throttle"] == round(max(inbound.values(), default=0) / 100_000, 3)


def _produce_some(bootstrap: str, topic: str, records: dict[int, int]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=30000)
    try:
        futures = [
            producer.send(topic, value=b"x" * VALUE_BYTES, partition=p)
            for p, n in records.items()
            for _ in range(n)
        ]
        producer.flush(timeout=60)
        for f in futures:
            f.get(timeout=60)
    finally:
        producer.close(timeout=10)
