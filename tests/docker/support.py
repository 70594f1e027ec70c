"""Helpers of the docker tests: the tool's image, and a move interrupted by a stopped container."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.helpers import consume_all, run_cli, wait_until
from tests.integration.reassign_support import produce

DOCKER = os.environ.get("RC_DOCKER") or "/usr/bin/docker"
TOOL_IMAGE = "reassign-cli/kafka-reassign:local"
TOOL_SPARK_IMAGE = "reassign-cli/kafka-reassign:spark"  # target spark: `scripts/docker images --spark`

# Expected by hand: with --broker-list 2,3 a partition of replication factor 2 ends on exactly brokers
# 2 and 3 (the only two given), whatever the seed.
TARGET_BROKERS = {2, 3}
# 1.6 MB in one partition at 10 kB/s: broker 3's first fetch takes at most 1 MB (replica.fetch.max.bytes),
# the rest needs a minute, so the move is still running when its container is stopped.
RECORDS, RECORD_SIZE, THROTTLE = 1600, 1000, "10000"
FAST = "100000000"
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def in_image(*args: str, env: dict[str, str], image: str = TOOL_IMAGE) -> subprocess.CompletedProcess[str]:
    """docker run --network host <the tool's image> ARGS, with the KAFKA_REASSIGN_* settings given."""
    flags = [f"--env={k}={v}" for k, v in env.items()]
    return subprocess.run(
        [DOCKER, "run", "--rm", "--network", "host", *flags, image, *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def generate(topic: str, out: Path, conn: dict[str, str]) -> dict[int, list[int]]:
    """generate --broker-list 2,3 into out/; the proposed {partition: replicas}."""
    r = run_cli(
        "generate",
        "--topic",
        topic,
        "--broker-list",
        "2,3",
        "--seed",
        "1",
        "--output-dir",
        str(out),
        env=conn,
    )
    assert r.returncode == 0, r.stderr
    proposed = json.loads((out / "proposed.json").read_text())
    return {p["partition"]: p["replicas"] for p in proposed["partitions"]}


def verify(plan: Path, conn: dict[str, str]) -> int:
    return run_cli("verify", "--reassignment-json-file", str(plan), env=conn).returncode


def wait_complete(plan: Path, conn: dict[str, str]) -> None:
    """verify until it says complete (exit 0; it removes the throttles then)."""
    wait_until(lambda: verify(plan, conn) == 0, timeout=600, interval=3, message=f"verify of {plan} exit 0")


def speed_up(bootstrap: str) -> None:
    """Raise the brokers' replication rates (as an operator would), so that the rest is copied at once;
    verify removes them when the move is complete."""
    from kafka import KafkaAdminClient
    from kafka.admin import AlterConfigOp, ConfigResource

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        ops = {k: (AlterConfigOp.SET, FAST) for k in RATES}
        for b in (1, 2, 3):
            admin.alter_configs(
                [ConfigResource("BROKER", str(b), ops)], raise_on_unknown=False, incremental=True
            )
    finally:
        admin.close()


def move_with_broker_stopped(
    topic: str,
    bootstrap: str,
    conn: dict[str, str],
    tmp: Path,
    stop: Callable[[], object],
    start: Callable[[], object],
) -> None:
    """Fill topic (one partition on brokers 1,2), plan it onto 2,3, execute at 10 kB/s, stop broker 3's
    container mid-move (verify: in progress), start it, finish, and read every record back."""
    values = produce(bootstrap, topic, 0, RECORDS, RECORD_SIZE)
    proposed = generate(topic, tmp, conn)
    assert {p: set(r) for p, r in proposed.items()} == {0: TARGET_BROKERS}
    plan = tmp / "proposed.json"
    r = run_cli("execute", "--reassignment-json-file", str(plan), "--throttle", THROTTLE, env=conn, cwd=tmp)
    assert r.returncode == 0, r.stderr
    stop()
    try:
        assert verify(plan, conn) == 4  # broker 3 is a target and down: it cannot have completed
    finally:
        start()
    speed_up(bootstrap)
    wait_complete(plan, conn)
    assert consume_all(bootstrap, topic, timeout=120) == values
