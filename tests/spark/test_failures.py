"""How Spark-side failures surface: one line, the right exit code, no hang (fresh driver processes)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import wait_until

pytestmark = pytest.mark.spark

PLAN_ONE = (
    "import sys\n"
    "from reassign_cli.spark import engine as spark_engine\nfrom reassign_cli.planning import plan\nfrom reassign_cli.core import model\n"
    "from reassign_cli.errors import ReassignError\n"
    "try:\n"
    "    spark_engine.proposed_json([plan.TopicSpec('t', 2, 1)], [model.Broker(1)], 0, master=sys.argv[1])\n"
    "except ReassignError as e:\n"
    "    print(int(e.exit_code), e)\n"
    "    print(e.hint)\n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_master_fails_at_once(tmp_path: Path) -> None:
    master = f"spark://127.0.0.1:{_free_port()}"  # nothing listens there
    res = subprocess.run([sys.executable, "-c", PLAN_ONE, master], capture_output=True, text=True, cwd=tmp_path,
                         timeout=60)  # fmt: skip
    assert res.returncode == 0, res.stderr
    port = master.rsplit(":", 1)[1]
    assert res.stdout.splitlines()[0] == (
        f"1 cannot connect to Spark master {master}: 127.0.0.1:{port}: Connection refused"
    )


def test_master_without_workers_fails_after_the_executor_timeout(tmp_path: Path) -> None:
    """Spark would wait forever ("Initial job has not accepted any resources"); we give up, in one line."""
    from pyspark.find_spark_home import _find_spark_home

    port, ui = _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    cls = os.path.join(_find_spark_home(), "bin", "spark-class")
    with open(tmp_path / "master.log", "wb") as log:
        daemon = subprocess.Popen(
            [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(ui)],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(lambda: _listening(port), timeout=120, message="the Spark master to listen")
        master = f"spark://127.0.0.1:{port}"
        res = subprocess.run(
            [sys.executable, "-c", PLAN_ONE, master],
            capture_output=True, text=True, cwd=tmp_path, timeout=300,
            env={**os.environ, "KAFKA_REASSIGN_SPARK_EXECUTOR_TIMEOUT": "3"},
        )  # fmt: skip
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
    assert res.returncode == 0, res.stderr
    first, hint = res.stdout.strip().splitlines()
    assert first == (
        f"1 no Spark executor registered within 3s: master {master} is unreachable or has no worker with "
        "free cores and memory for this application"
    )
    assert "KAFKA_REASSIGN_SPARK_EXECUTOR_TIMEOUT" in hint
    assert res.stderr == ""  # Spark's own complaints stay in its log


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_workers_without_numpy_fail_in_one_line(tmp_path: Path) -> None:
    """PYSPARK_PYTHON pointing at an interpreter that lacks numpy: the Python error, not a Java trace."""
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')  # no site-packages at all
    bare.chmod(0o755)
    env = {**os.environ, "PYSPARK_PYTHON": str(bare)}
    res = subprocess.run(
        [sys.executable, "-c", PLAN_ONE, "local[1]"], capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    first, hint = res.stdout.strip().splitlines()
    assert first.startswith("1 the Spark job failed: ModuleNotFoundError: No module named "), first
    assert "numpy and orjson" in hint
