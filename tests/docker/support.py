"""Helpers of the docker tests: the tool's image, and a move interrupted by a stopped container."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.helpers import run_cli, wait_until

DOCKER = os.environ.get("RC_DOCKER") or "/usr/bin/docker"
TOOL_IMAGE = "reassign-cli/kafka-reassign:local"

# Expected by hand: with --broker-list 2,3 every partition of replication factor 2 ends on exactly
# brokers 2 and 3 (the only two given), whatever the seed and the order.
TARGET_BROKERS = {2, 3}
MESSAGES = 6000  # ~360 KB in make_topic's values: at 10 kB/s broker 3 copies it for ~30 s or more
THROTTLE = "10000"


def in_image(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """docker run --network host <the tool's image> ARGS, with the KAFKA_REASSIGN_* settings given."""
    flags = [f"--env={k}={v}" for k, v in env.items()]
    return subprocess.run(
        [DOCKER, "run", "--rm", "--network", "host", *flags, TOOL_IMAGE, *args],
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
