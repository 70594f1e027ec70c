"""Spark test fixtures.

spark_sc       (session) ONE local[2] SparkContext for every local test, built by the engine itself
               (spark_engine.spark_context); proposed_json(master="local[2]") reuses it.
spark_master   (session) a standalone master URL: $SPARK_MASTER if set, else a private cluster started with
               scripts/spark-cluster under a temporary CLUSTER_DIR (stopped at the end). Fails, never
               skips, when it cannot.

Every test in this directory that uses Spark is marked `spark` (cluster ones also `spark_cluster`).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SPARK_CLUSTER = REPO / "scripts" / "spark-cluster"


@pytest.fixture(scope="session")
def spark_sc() -> Iterator[Any]:
    from reassign_cli.spark import engine as spark_engine

    with spark_engine.spark_context("local[2]") as sc:
        yield sc


@pytest.fixture(scope="session")
def spark_master() -> Iterator[str]:
    url = os.environ.get("SPARK_MASTER")
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="spark-cluster-test-") as tmp:
        env = dict(os.environ, CLUSTER_DIR=tmp)
        up = subprocess.run([str(SPARK_CLUSTER), "up"], env=env, capture_output=True, text=True, timeout=300)
        try:
            if up.returncode != 0:
                pytest.fail(f"scripts/spark-cluster up failed ({up.returncode}):\n{up.stderr}")
            env_file = Path(tmp) / "spark-env"
            values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
            yield values["SPARK_MASTER"]
        finally:
            subprocess.run([str(SPARK_CLUSTER), "down"], env=env, capture_output=True, timeout=120)
