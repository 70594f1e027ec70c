"""`kafka-reassign rebalance` on KRaft 4.3.1 through the admin API alone: the stored plan in the record topic,
no ledger (no broker goes missing here). Ticks alone fill broker 3, which holds no replica of the topic,
until a tick says balanced; five more ticks start nothing. Ends clean: no plan stored, no throttle of ours,
every message read back. The cluster is shared: every other topic is excluded (--exclude-topics)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import ExtraCluster
from tests.helpers import consume_all, run_cli
from tests.integration.kraft_support import FR, FREP, LR, LREP, Admin
from tests.integration.stored_plan_worker import topic_store


@pytest.mark.timeout(900)
def test_ticks_alone_fill_an_empty_broker_on_kraft(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    topic, values = ka.make_topic(
        "pilot", {p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(6)}, messages=60
    )
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    flags = [
        "--bootstrap-server",
        kc.bootstrap,
        "--exclude-topics",
        f"(?!{topic}$).*",
        "--throttle",
        "50000000",
    ]
    try:
        last: Any = None
        for _ in range(60):
            last = run_cli("rebalance", *flags, env=env, cwd=tmp_path)
            assert last.returncode in (0, 4), last.stderr
            if last.stdout.startswith("balanced:"):
                break
        assert last is not None and last.stdout.startswith("balanced:"), last.stdout + last.stderr
        after = {p: r for p, (r, _, _) in ka.partitions(topic).items()}
        assert {b for r in after.values() for b in r} == {1, 2, 3} and all(
            len(set(r)) == 2 for r in after.values()
        )
        for _ in range(5):
            r = run_cli("rebalance", *flags, env=env, cwd=tmp_path)
            assert r.returncode == 0 and r.stdout.startswith("balanced:"), r.stdout + r.stderr
        assert not ka.reassignments()
        assert {p: r for p, (r, _, _) in ka.partitions(topic).items()} == after
        with topic_store(kc.bootstrap) as store:
            assert store.read() is None
        assert not {k for k in ka.configs("topics", topic) if k in (LREP, FREP)}
        for b in (1, 2, 3):
            assert not {k for k in ka.configs("brokers", b) if k in (LR, FR)}
        assert sorted(consume_all(kc.bootstrap, topic, 60)) == sorted(values)
    finally:
        with topic_store(kc.bootstrap) as store, contextlib.suppress(Exception):
            store.delete()
