"""verify --metrics-file through the admin API alone, on a KRaft 4.x cluster: a throttled move read in
progress (exit 4, the bytes still to copy bracketed by the sizes the brokers report, our throttle rates),
then complete (exit 0, nothing to copy, no rates). Parsed with prometheus_client's text parser; the sizes
are read through kafka-python directly, not through our code."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.clusters import ExtraCluster
from tests.helpers import consume_all
from tests.integration.kraft_support import admin, cli, eventually, idle, plan
from tests.unit.test_metrics import assert_complete, parse, plan_key, rates, statuses

SLOW = "20000"  # B/s: the 2.5 MB below take minutes, so the move is seen in progress
FAST = "100000000"


def test_metrics_on_kraft(kc: ExtraCluster, tmp_path: Path) -> None:
    with admin(kc.bootstrap) as a:
        idle(a)
        topic, values = a.make_topic("metrics", {0: [1, 2]}, messages=2500)
        move = plan(tmp_path / "move.json", {(topic, 0): [3, 2]})
        prom = tmp_path / "verify.prom"
        key = plan_key(move)

        def verify() -> Any:
            args = ("verify", "--reassignment-json-file", move, "--metrics-file", prom)
            return cli(kc.bootstrap, *args, cwd=tmp_path)

        r = cli(kc.bootstrap, "execute", "--reassignment-json-file", move, "--throttle", SLOW, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        before = time.time()
        v = verify()
        sizes = a.sizes(topic)
        assert v.returncode == 4, v.stdout + v.stderr
        got = parse(prom.read_text())
        status = statuses(got)
        assert status == {"complete": 0, "in_progress": 1, "not_as_planned": 0, "queued": 0}
        # Still to copy: the leader's log less what broker 3 held when verify looked (it only grows since).
        remaining = got["kafka_reassign_verify_bytes_remaining"][key]
        full = max(sizes[1], sizes[2])
        assert 0 < remaining <= full and full - sizes.get(3, 0) <= remaining
        rate = rates(got)
        assert rate and set(rate.values()) == {int(SLOW)}
        assert {b for b, _ in rate} <= {"1", "2", "3"} and {"1", "3"} <= {b for b, _ in rate}
        assert got["kafka_reassign_verify_exit_code"] == {key: 4}
        assert before <= got["kafka_reassign_verify_last_run_timestamp_seconds"][key] <= time.time()

        r = cli(kc.bootstrap, "execute", "--reassignment-json-file", move, "--throttle", FAST, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        idle(a)
        eventually(lambda: a.partitions(topic)[0][0], [3, 2], "replicas as planned")
        v = verify()
        assert v.returncode == 0, v.stdout + v.stderr
        assert_complete(prom.read_text(), key)
        assert [p.name for p in tmp_path.glob("verify.prom*")] == ["verify.prom"]
        assert consume_all(kc.bootstrap, topic) == values
