"""scripts/example_full_disk (the README's "a full disk") on the real cluster: its numbers against the
tool's --format json and against values worked out by hand from the script's layout (not timed).

The layout (RF 2, 1,000-byte records): big 3 x 6,000 records, mid 6 x 1,200, small 12 x 300; replica
counts 14, 14, 14 and preferred leaders 7, 7, 7, so --balance replicas has nothing to do (no copy),
while broker 1 holds 3 big + 3 mid + 8 small = 24 units of 1,000 records x 0.3, broker 2 19.2 and
broker 3 14.4: +25% and -25% of the mean (19.2). Swapping a big replica of broker 1 with a mid one of
broker 3 lands every broker on the mean: --balance bytes needs copies, within its tolerance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from tests.conftest import Cluster
from tests.helpers import REPO


def test_the_full_disk_example(cluster: Cluster, tmp_path: Path) -> None:
    prefix = f"fd{uuid.uuid4().hex[:6]}-"
    env = {**os.environ, "CLUSTER_DIR": str(cluster.directory)}
    r = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "example_full_disk"), "--work", str(tmp_path), "--prefix", prefix],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert out == json.loads((tmp_path / "summary.json").read_text())
    written = {prefix + "big": 18000, prefix + "mid": 7200, prefix + "small": 3600}
    assert out["produced"] == written and out["consumed"] == written  # every message read back
    assert out["verify_exit"] == 0

    rep, byt = out["stats"]["replicas"], out["stats"]["bytes"]
    tol = out["tolerance"]
    # --balance replicas: counts and leaders already even, nothing to copy, the skew stays.
    assert rep["copies"] == 0 and rep["bytes_copied"] == 0 and rep["seconds_at_throttle"] == 0
    assert out["replicas_plan_max_dev_after"] == out["max_dev_before"]
    # Before: +25% / -25% of the mean, as laid out (record batches add a little overhead, evenly).
    before = {int(b): x for b, x in out["broker_bytes_before"].items()}
    assert abs(out["max_dev_before"] - 0.25) < 0.01
    assert before[1] > before[2] > before[3]
    # The tool read the same bytes per broker from the snapshot's sizes as DescribeLogDirs reports.
    assert {int(b): x for b, x in byt["bytes_per_broker_before"].items()} == before
    assert byt["bytes_max_dev_before"] == out["max_dev_before"]
    # --balance bytes: within the tolerance, counts and leaders still even, no more than point 5 allows.
    assert byt["bytes_max_dev_after"] <= tol
    assert byt["replicas_max_min_after"] <= 1 and byt["leaders_max_min_after"] <= 1
    snapshot = json.loads((tmp_path / "cluster.json").read_text())
    size = {(t["topic"], p["partition"]): p["size"] for t in snapshot["topics"] for p in t["partitions"]}
    old = {
        (t["topic"], p["partition"]): set(p["replicas"]) for t in snapshot["topics"] for p in t["partitions"]
    }
    proposed = json.loads((tmp_path / "plan-bytes" / "proposed.json").read_text())
    into = {1: 0, 2: 0, 3: 0}
    for p in proposed["partitions"]:
        for b in set(p["replicas"]) - old[p["topic"], p["partition"]]:
            into[b] += size[p["topic"], p["partition"]]
    assert byt["bytes_copied"] == sum(into.values()) > 0
    assert byt["bytes_in_max"] == max(into.values())
    assert byt["seconds_at_throttle"] == round(max(into.values()) / out["throttle"], 3)
    assert byt["bytes_copied"] <= 1.10 * byt["bytes_lower_bound"] + 2 * max(size.values())
    # After the move, read back from DescribeLogDirs: every broker within the tolerance of the mean.
    after = out["broker_bytes_after"]
    mean = sum(after.values()) / 3
    assert all(abs(x - mean) <= tol * mean for x in after.values()), after
    assert out["max_dev_after"] <= tol
