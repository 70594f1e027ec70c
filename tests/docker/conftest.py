"""The compose cluster (docker-compose.yml, started by scripts/docker) under the shared fixtures.

Each module brings up its own docker cluster ($CLUSTER_DIR-docker, $CLUSTER_DIR-docker-kraft) and takes
it down at its end (module scope: at most one of them runs at a time). Overriding `cluster` points the
shared fixtures (zk, make_topic, run_cli, consume_all) at the ZooKeeper-mode one; stop_broker and
start_broker stop and start its containers.

These tests run only with REASSIGN_DOCKER_TESTS=1 (they install docker from Debian's packages if
missing, start dockerd if it is not running, and take minutes); elsewhere they are skipped.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import clusters
from tests.conftest import Cluster, cluster_dir
from tests.helpers import REPO, read_env_file

DOCKER_SCRIPT = REPO / "scripts" / "docker"
ENABLED = os.environ.get("REASSIGN_DOCKER_TESTS", "") in ("1", "true", "yes")
DOCKER_TEST_TIMEOUT = 1200  # a cold start bootstraps an image (minutes on a loaded machine)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here not in item.path.parents:
            continue
        item.add_marker(pytest.mark.docker)
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DOCKER_TEST_TIMEOUT))
        if not ENABLED:
            item.add_marker(pytest.mark.skip(reason="docker tests: set REASSIGN_DOCKER_TESTS=1"))


def docker_script(
    *args: str, directory: Path, timeout: float = 1100, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """scripts/docker ARGS with CLUSTER_DIR=directory and free ports (the caller's port settings dropped;
    `extra` set instead, e.g. RC_COMPOSE)."""
    return clusters.script(
        *args,
        directory=directory,
        timeout=timeout,
        program=DOCKER_SCRIPT,
        settings=("CLUSTER_", "RC_"),
        extra=extra,
    )


def docker_checked(
    *args: str, directory: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    r = docker_script(*args, directory=directory, extra=extra)
    if r.returncode != 0:
        pytest.fail(
            f"scripts/docker {' '.join(args)} failed ({directory}):\n{r.stderr[-4000:]}", pytrace=False
        )
    return r


def docker_dir(suffix: str) -> Path:
    return Path(f"{cluster_dir().resolve()}-{suffix}")


class DockerCluster(Cluster):
    """The conftest Cluster, whose brokers are containers (scripts/docker stop-broker/start-broker)."""

    def stop_broker(self, broker_id: int) -> None:
        self.stopped.add(broker_id)
        docker_checked("stop-broker", str(broker_id), directory=self.directory)

    def start_broker(self, broker_id: int) -> None:
        docker_checked("start-broker", str(broker_id), directory=self.directory)
        self.stopped.discard(broker_id)


@pytest.fixture(scope="module")
def docker_up() -> Iterator[tuple[Path, dict[str, str]]]:
    """scripts/docker up in $CLUSTER_DIR-docker; down at the end of the module."""
    directory = docker_dir("docker")
    try:
        docker_checked("up", directory=directory)
        yield directory, read_env_file(directory / "env")
    finally:
        docker_script("down", directory=directory)


@pytest.fixture(scope="module")
def cluster(docker_up: tuple[Path, dict[str, str]]) -> Iterator[Cluster]:
    directory, env = docker_up
    c = DockerCluster.from_env(directory, env)
    try:
        yield c
    finally:
        for broker_id in sorted(c.stopped):
            docker_script("start-broker", str(broker_id), directory=directory)
