"""verify's bytes copied on the real cluster: a throttled move (about 5 MB at 10 kB/s) read in progress
through the admin API (ZooKeeper mode with the brokers beside it, and --bootstrap-server): the bytes lie
between 0 and the partition's size as the brokers report it to DescribeLogDirs (asked here through
kafka-python directly), they grow between two verifies, the JSON is clean and stdout keeps Kafka's lines;
without the admin API nothing changes; once complete, the partition has no bytes field."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.helpers import wait_until
from tests.integration.kraft_support import replica_sizes
from tests.integration.reassign_support import FAST, Mover, await_idle, produce, reassigning
from tests.integration.test_verify_metrics import RECORDS, SLOW


def test_bytes_copied_in_progress_then_complete(
    cluster: Any, make_topic: Any, zk: Any, mover: Mover, run_cli: Any
) -> None:
    topic = make_topic({0: [1, 2]})
    produce(cluster.bootstrap, topic, 0, RECORDS)
    plan = mover.plan("move.json", {(topic, 0): [2, 3]})
    await_idle(zk)
    assert mover.execute(plan, "--throttle", SLOW).returncode == 0
    beside = {"KAFKA_REASSIGN_BOOTSTRAP": cluster.bootstrap}

    def verify(*args: str, env: dict[str, str | None] | None = None) -> Any:
        return run_cli("verify", "--reassignment-json-file", str(plan), *args, env=env, cwd=str(mover.tmp))

    def copied(*args: str, env: dict[str, str | None] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        v = verify("--format", "json", *args, env=env)
        assert v.returncode == 4, v.stdout + v.stderr
        doc = json.loads(v.stdout)  # the whole of stdout is the document
        return doc, doc["partitions"][0]

    wait_until(lambda: reassigning(zk, topic), timeout=30, message="the controller started the move")
    doc, first = copied(env=beside)
    sizes = replica_sizes(cluster.bootstrap, topic)
    full = max(sizes[1], sizes[2])  # nothing is produced meanwhile: the leader's log stays this size
    assert first["bytes_to_copy"] == full > 1_000_000
    assert 0 <= first["bytes_copied"] <= sizes.get(3, 0) < full
    assert (doc["bytes_copied"], doc["bytes_to_copy"]) == (first["bytes_copied"], full)

    # It grows between two verifies (through --bootstrap-server this time).
    admin = ("--bootstrap-server", cluster.bootstrap)
    wait_until(
        lambda: (
            copied(*admin, env={"KAFKA_REASSIGN_ZOOKEEPER": None})[1]["bytes_copied"] > first["bytes_copied"]
        ),
        timeout=60,
        interval=2,
        message="the bytes copied grew",
    )
    _, later = copied(*admin, env={"KAFKA_REASSIGN_ZOOKEEPER": None})
    assert first["bytes_copied"] < later["bytes_copied"] < later["bytes_to_copy"] == full

    # Text: stdout is Kafka's lines, the same as without the admin API; the bytes go to stderr.
    with_admin, without = verify(env=beside), verify()
    assert with_admin.returncode == without.returncode == 4
    assert (
        with_admin.stdout
        == without.stdout
        == (
            f"Status of partition reassignment:\nReassignment of partition {topic}-0 is still in progress.\n\n"
        )
    )
    line = re.compile(rf"^{re.escape(topic)}-0: copied [0-9.]+ (B|KiB|MiB) of [0-9.]+ MiB \([0-9]+%\)$", re.M)
    assert line.search(with_admin.stderr), with_admin.stderr
    assert "Copied " in with_admin.stderr and "in 1 partition in progress." in with_admin.stderr
    assert ": copied " not in without.stderr and "Copied " not in without.stderr, without.stderr
    doc, bare = copied()  # ZooKeeper alone: the JSON as before
    assert "bytes_copied" not in doc and "bytes_copied" not in bare and "bytes_to_copy" not in bare

    # Complete: no bytes field for the partition, nothing copied in flight.
    assert mover.execute(plan, "--throttle", FAST).returncode == 0
    wait_until(lambda: not reassigning(zk, topic), timeout=240, interval=1, message="the move finished")
    v = verify("--format", "json", env=beside)
    assert v.returncode == 0, v.stdout + v.stderr
    doc = json.loads(v.stdout)
    assert "bytes_copied" not in doc["partitions"][0] and "bytes_to_copy" not in doc["partitions"][0]
    assert (doc["bytes_copied"], doc["bytes_to_copy"]) == (0, 0)
    assert ": copied " not in v.stderr and "Copied " not in v.stderr, v.stderr
