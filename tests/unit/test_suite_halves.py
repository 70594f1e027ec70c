"""scripts/test runs the cluster tests as two pytest processes at once (REASSIGN_TEST_HALF, tests/conftest.py):
the halves must split the suite exactly (no test in both, none in neither), and every test on the shared
cluster must be in the `shared` half, since two of them at once would meet in its throttles and trigger znode."""

from __future__ import annotations

import os
import subprocess

from tests.helpers import PYTHON, REPO

DIRS = ("tests/integration", "tests/faults", "tests/docker", "tests/spark")


def _collected(half: str | None) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "REASSIGN_TEST_HALF"}
    if half is not None:
        env["REASSIGN_TEST_HALF"] = half
    r = subprocess.run(
        [PYTHON, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *DIRS],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return {line for line in r.stdout.splitlines() if line.startswith("tests/") and "::" in line}


def test_the_two_halves_split_the_cluster_tests_exactly() -> None:
    everything, shared, private = _collected(None), _collected("shared"), _collected("private")
    assert shared and private
    assert not shared & private
    assert shared | private == everything
    # the docker tests define a `cluster` of their own: never the shared half; to even out the two halves'
    # times, Spark's tests (no Kafka cluster) and the fault suite's ZooKeeper-mode tests (a cluster of their
    # own) go with the shared half, the fault suite's KRaft tests with the private one
    assert not {t for t in shared if t.startswith(("tests/docker/", "tests/faults/test_kraft_"))}
    assert not {t for t in private if t.startswith(("tests/spark/", "tests/faults/test_step_faults.py"))}
    assert any(t.startswith("tests/faults/test_faults.py::") for t in shared)
    assert any(t.startswith("tests/faults/test_kraft_step_faults.py::") for t in private)
    # a test of the shared cluster (make_topic is the root conftest's, on the shared cluster)
    assert any(t.startswith("tests/integration/test_step_zk.py::") for t in shared)
    assert any(t.startswith("tests/integration/test_kraft_rate_loop.py::") for t in private)


def test_an_unknown_half_is_a_usage_error() -> None:
    env = dict(os.environ, REASSIGN_TEST_HALF="both")
    r = subprocess.run(
        [PYTHON, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/integration"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]  # pytest's usage error
    assert "REASSIGN_TEST_HALF='both': expected shared or private" in r.stdout + r.stderr
