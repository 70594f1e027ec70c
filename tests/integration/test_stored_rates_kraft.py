"""The rate loop in a stored plan's steps on KRaft 4.3.1, through the admin API alone (the plan stored in the
topic __reassign_cli_plan): `execute --detach --max-moves-per-broker 1 --throttle auto --min-throttle 2MB
--max-throttle 16MB --throttle-interval 5`, then only `verify` processes until exit 0. Broker 3's follower
rate read back (DescribeConfigs) after every step rises above 2 MB/s and never above 16 MB/s; at the end the
operator's own rate is back exactly and nothing is stored."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from tests.clusters import ExtraCluster
from tests.helpers import consume_all, run_cli, wait_until
from tests.integration.kraft_support import FR, LR, Admin, plan
from tests.integration.reassign_support import produce
from tests.integration.stored_plan_worker import topic_store

MB = 1_000_000
AUTO = ("--throttle", "auto", "--min-throttle", "2MB", "--max-throttle", "16MB", "--throttle-interval", "5")
OPERATOR_RATE = "123456789"


@pytest.mark.timeout(900)
def test_detached_auto_rises_within_its_bounds_on_kraft(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    topic, _ = ka.make_topic("sauto", {0: [1]})
    values = produce(kc.bootstrap, topic, 0, 600, 100_000)  # 60 MB: 30 s at 2 MB/s
    move = plan(tmp_path / "sauto.json", {(topic, 0): [3]})
    ka.alter("brokers", 3, {FR: OPERATOR_RATE})
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}
    flags = ["--bootstrap-server", kc.bootstrap]
    try:
        first = run_cli(
            "execute", "--reassignment-json-file", str(move), *flags, "--max-moves-per-broker", "1", *AUTO,
            "--detach", "--rollback-file", str(tmp_path / "rb.json"), env=env, cwd=tmp_path,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        errs: list[str] = []
        seen: list[int] = []

        def step() -> bool:
            r = run_cli("verify", *flags, env=env, cwd=tmp_path)
            assert r.returncode in (0, 4), r.stderr
            errs.append(r.stderr)
            rate = ka.configs("brokers", 3).get(FR)
            if rate is not None and rate != OPERATOR_RATE:
                seen.append(int(rate))
            return r.returncode == 0

        wait_until(step, timeout=600, interval=1, message=lambda: f"the stored plan done: {errs[-1:]}")
        text = "".join(errs)
        print(f"\n{len(errs)} steps; broker 3's follower rate read back: {sorted(set(seen))}")
        assert "throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)" in text, text
        assert seen and max(seen) > 2 * MB and max(seen) <= 16 * MB and min(seen) >= 2 * MB
        assert "The stored plan is done" in errs[-1]
        with topic_store(kc.bootstrap) as store:
            assert store.read() is None
        assert ka.configs("brokers", 3).get(FR) == OPERATOR_RATE and LR not in ka.configs("brokers", 3)
        assert not {k for k in ka.configs("brokers", 1) if k in (LR, FR)}
        assert sorted(consume_all(kc.bootstrap, topic, 60)) == sorted(values)
    finally:
        with topic_store(kc.bootstrap) as store, contextlib.suppress(Exception):
            store.delete()
        ka.alter("brokers", 3, {FR: None})
