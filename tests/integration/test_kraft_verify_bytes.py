"""verify's bytes copied on KRaft (the newest Kafka 4.x, through the admin API, no ZooKeeper anywhere): a
move of about 5 MB at 10 kB/s read in progress. The bytes to copy are the leader's log as the brokers report
it to DescribeLogDirs (asked here through kafka-python directly), the bytes copied lie between 0 and the
new replica's size, they grow between two verifies; the JSON is clean and stdout keeps Kafka's lines, the
bytes going to stderr in text; once complete, the partition has no bytes field and the throttles are gone."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.clusters import ExtraCluster
from tests.helpers import consume_all, wait_until
from tests.integration.kraft_support import Admin, cli, eventually, plan, replica_sizes
from tests.integration.test_verify_metrics import RECORDS, SLOW

FAST = "1000000000"


def test_bytes_copied_in_progress_then_complete(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    topic, values = ka.make_topic("vbytes", {0: [1]}, messages=RECORDS)
    p = plan(tmp_path / "move.json", {(topic, 0): [2]})
    r = cli(kc.bootstrap, "execute", "--reassignment-json-file", p, "--throttle", SLOW, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    wait_until(lambda: (topic, 0) in ka.reassignments(), timeout=30, message="the move is running")

    def copied() -> tuple[dict[str, Any], dict[str, Any]]:
        v = cli(kc.bootstrap, "verify", "--reassignment-json-file", p, "--format", "json")
        assert v.returncode == 4, v.stdout + v.stderr
        doc = json.loads(v.stdout)  # the whole of stdout is the document
        return doc, doc["partitions"][0]

    doc, first = copied()
    sizes = replica_sizes(kc.bootstrap, topic)  # read after verify: the new replica can only have grown
    full = sizes[1]  # nothing is produced meanwhile: the leader's log stays this size
    assert first["bytes_to_copy"] == full > 4_000_000
    assert 0 <= first["bytes_copied"] <= sizes.get(2, 0) < full
    assert (doc["bytes_copied"], doc["bytes_to_copy"]) == (first["bytes_copied"], full)
    wait_until(
        lambda: copied()[1]["bytes_copied"] > first["bytes_copied"],
        timeout=90,
        interval=2,
        message="the bytes copied grew",
    )

    # Text: stdout is Kafka's lines; the bytes go to stderr.
    v = cli(kc.bootstrap, "verify", "--reassignment-json-file", p)
    assert v.returncode == 4
    assert v.stdout == (
        f"Status of partition reassignment:\nReassignment of partition {topic}-0 is still in progress.\n\n"
    )
    line = re.compile(rf"^{re.escape(topic)}-0: copied [0-9.]+ (B|KiB|MiB) of [0-9.]+ MiB \([0-9]+%\)$", re.M)
    assert line.search(v.stderr), v.stderr
    assert "Copied " in v.stderr and "in 1 partition in progress." in v.stderr

    # Complete: no bytes field for the partition, the throttles gone.
    r = cli(kc.bootstrap, "execute", "--reassignment-json-file", p, "--throttle", FAST, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    wait_until(lambda: not ka.reassignments(), timeout=240, interval=1, message="the move finished")
    v = cli(kc.bootstrap, "verify", "--reassignment-json-file", p, "--format", "json")
    assert v.returncode == 0, v.stdout + v.stderr
    doc = json.loads(v.stdout)
    assert "bytes_copied" not in doc["partitions"][0] and "bytes_to_copy" not in doc["partitions"][0]
    assert (doc["bytes_copied"], doc["bytes_to_copy"]) == (0, 0)
    eventually(
        lambda: {k: v for k, v in ka.throttles([1, 2, 3], [topic]).items() if v}, {}, "no throttle left"
    )
    assert sorted(consume_all(kc.bootstrap, topic)) == sorted(values)
