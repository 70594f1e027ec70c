"""The adaptive log-dir throttle (issue 28 item 4) on a PRIVATE JBOD cluster (the fixtures of
test_logdir_pacing.py: `scripts/cluster up --jbod`, ZooKeeper mode, each broker two tmpfs log dirs, down at the
end): `execute --max-moves-per-disk 1 --replica-alter-log-dirs-throttle auto --min-log-dir-throttle 300kB
--max-log-dir-throttle 1MB --throttle-interval 2`, two replicas of 6 MB moved from broker 1's d0 to its d1.

The judges, none of them reassign_cli code: a thread reading broker 1's own dynamic config back
(DescribeConfigs) all through the run; Kafka's own kafka-log-dirs for where the replicas end; the records read
back; the operator's own log-dir rate on broker 1 (777777), which must be back exactly at the end.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import consume_all
from tests.integration.kraft_support import Admin
from tests.integration.test_logdir_pacing import (  # noqa: F401 (admin and jbod: the fixtures)
    LOG_DIR_RATE,
    admin,
    dirs_of,
    execute,
    jbod,
    place,
    write_plan,
)

OPERATORS = "777777"


class RateSampler(threading.Thread):
    """Broker 1's log-dir rate, read back (DescribeConfigs) every 0.2 s."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.admin, self.stop, self.samples = Admin(bootstrap), threading.Event(), []

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.samples.append(self.admin.configs("brokers", 1).get(LOG_DIR_RATE))

    def __enter__(self) -> RateSampler:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.join(timeout=30)
        self.admin.client.close()

    def rates(self) -> list[int]:
        return [int(v) for v in self.samples if v is not None and v != OPERATORS]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_auto_log_dir_rate_rises_within_its_bounds_and_restores_the_operators_rate(
    jbod: tuple[str, str, dict[int, list[str]]],  # noqa: F811
    admin: Admin,  # noqa: F811
    tmp_path: Path,
) -> None:
    bootstrap, zookeeper, dirs = jbod
    d0, d1 = dirs[1]
    topic, values = admin.make_topic("autodir", {p: [1] for p in range(2)}, messages=2400, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([1], [d0]) for p in range(2)})
    admin.alter("brokers", 1, {LOG_DIR_RATE: OPERATORS})
    try:
        plan = write_plan(tmp_path / "plan.json", topic, {p: ([1], [d1]) for p in range(2)})
        with RateSampler(bootstrap) as sampler:
            r = execute(zookeeper, bootstrap, plan, "--max-moves-per-disk", "1", "--format", "json",
                        "--replica-alter-log-dirs-throttle", "auto", "--min-log-dir-throttle", "300kB",
                        "--max-log-dir-throttle", "1MB", "--throttle-interval", "2")  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        lines = [x for x in r.stderr.splitlines() if x.startswith("throttle on broker")]
        rates = sampler.rates()
        print(
            "\n" + "\n".join(lines) + f"\nread back: max {max(rates)}, min {min(rates)}, {len(rates)} samples"
        )
        assert lines[0] == "throttle on broker 1 (log-dir): none -> 300 kB/s (start)", lines
        assert lines[1] == "throttle on broker 1 (log-dir): 300 -> 375 kB/s (throttle-bound, guards green)", (
            lines
        )
        assert max(rates) > 300_000  # a fixed 300 kB/s holds 300000 throughout
        assert max(rates) <= 1_000_000 and min(rates) >= 300_000
        doc = json.loads(r.stdout)
        history = [(c["broker"], c["role"], c["from"], c["to"]) for c in doc["throttle_changes"]]
        assert history[:2] == [(1, "log-dir", None, 300_000), (1, "log-dir", 300_000, 375_000)], history
        assert dirs_of(bootstrap, topic) == {(0, 1): d1, (1, 1): d1}
        assert consume_all(bootstrap, topic) == values
        assert admin.configs("brokers", 1).get(LOG_DIR_RATE) == OPERATORS  # exactly as before
    finally:
        admin.alter("brokers", 1, {LOG_DIR_RATE: None})


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_stored_plan_carries_the_auto_log_dir_rate_through_verify_steps(
    jbod: tuple[str, str, dict[int, list[str]]],  # noqa: F811
    admin: Admin,  # noqa: F811
    tmp_path: Path,
) -> None:
    """`execute --detach` with the adaptive log-dir throttle (issue 28 items 2 and 4), then only `verify`
    processes (cron steps, no plan file) until exit 0: the rate read back from broker 1 rises above R1,
    never above R2, and the operator's own rate is back exactly at the end."""
    import subprocess

    from tests.integration.test_logdir_pacing import PYTHON, connection, own_env

    bootstrap, zookeeper, dirs = jbod
    d0, d1 = dirs[1]
    topic, values = admin.make_topic("autostored", {p: [1] for p in range(2)}, messages=4800, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([1], [d0]) for p in range(2)})
    admin.alter("brokers", 1, {LOG_DIR_RATE: OPERATORS})
    try:
        plan = write_plan(tmp_path / "plan.json", topic, {p: ([1], [d1]) for p in range(2)})
        outputs = []
        with RateSampler(bootstrap) as sampler:
            r = execute(zookeeper, bootstrap, plan, "--detach", "--max-moves-per-broker", "1",
                        "--max-moves-per-disk", "1", "--replica-alter-log-dirs-throttle", "auto",
                        "--min-log-dir-throttle", "300kB", "--max-log-dir-throttle", "1MB",
                        "--throttle-interval", "5")  # fmt: skip
            assert r.returncode == 0, r.stdout + r.stderr
            plan.unlink()
            for _ in range(300):
                v = subprocess.run([PYTHON, "-m", "reassign_cli", "verify", *connection(zookeeper, bootstrap)],
                                   capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                                   env=own_env(), cwd=tmp_path)  # fmt: skip
                outputs.append(v.stdout + v.stderr)
                assert v.returncode in (0, 4), outputs[-1]
                if v.returncode == 0:
                    break
        assert v.returncode == 0, outputs
        assert "The stored plan is done" in outputs[-1], outputs[-1]
        lines = [x for o in outputs for x in o.splitlines() if "throttle on broker" in x]
        rates = sampler.rates()
        print(
            "\n" + "\n".join(lines) + f"\nread back: max {max(rates)}, min {min(rates)}, {len(rates)} samples"
        )
        assert any("throttle on broker 1 (log-dir): none -> 300 kB/s (start)" in x for x in lines), lines
        assert max(rates) > 300_000  # a fixed 300 kB/s holds 300000 throughout
        assert max(rates) <= 1_000_000 and min(rates) >= 300_000
        assert dirs_of(bootstrap, topic) == {(0, 1): d1, (1, 1): d1}
        assert consume_all(bootstrap, topic) == values
        assert admin.configs("brokers", 1).get(LOG_DIR_RATE) == OPERATORS  # exactly as before
    finally:
        admin.alter("brokers", 1, {LOG_DIR_RATE: None})
