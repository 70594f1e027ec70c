"""Two CLUSTER_DIRs on one dockerd (scripts/docker): the dockerd that scripts/docker started is stopped by
the last user's `down`, not the first's; a user whose `up` was killed (kill -9) before any container ran does
not keep it running; one of the two clusters runs through compose v2 (RC_COMPOSE=v2).

The dockerd's pid is what dockerd itself writes in /var/run/docker.pid. When a dockerd already runs before
the test (not started by this test, e.g. another run's), the same steps must leave it running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker import support
from tests.docker.conftest import DOCKER_SCRIPT, docker_checked, docker_dir, docker_script
from tests.helpers import read_env_file, wait_until

DOCKER_PID = Path("/var/run/docker.pid")
RECORD = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reassign_cli/docker/dockerd.json"
NETNS = "/run/docker/netns/default"
V2 = {"RC_COMPOSE": "v2"}


def dockerd_pid() -> int | None:
    """The running dockerd's pid (its own pid file), or None."""
    try:
        pid = int(DOCKER_PID.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    stat = Path(f"/proc/{pid}/stat").read_text()
    return None if stat.rsplit(")", 1)[1].split()[0] == "Z" else pid


def users() -> dict[str, dict[str, str]]:
    return json.loads(RECORD.read_text())["users"] if RECORD.exists() else {}


def labels(project: str) -> list[dict[str, str]]:
    """The compose labels of the project's running containers."""
    ids = support_docker("ps", "-q", "--filter", f"label=com.docker.compose.project={project}").split()
    if not ids:
        return []
    return [c["Config"]["Labels"] for c in json.loads(support_docker("inspect", *ids))]


def support_docker(*args: str) -> str:
    r = subprocess.run([support.DOCKER, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def brokers_serving(env: dict[str, str]) -> list[int]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=env["KAFKA_BOOTSTRAP"], request_timeout_ms=30000)
    try:
        return sorted(int(b["broker_id"]) for b in admin.describe_cluster()["brokers"])
    finally:
        admin.close()


@pytest.fixture
def dirs() -> Iterator[tuple[Path, Path, Path]]:
    a, b, c = docker_dir("docker-a"), docker_dir("docker-b"), docker_dir("docker-c")
    try:
        yield a, b, c
    finally:
        for d in (c, b, a):
            docker_script("down", directory=d)


def up_killed_once_registered(directory: Path) -> None:
    """`scripts/docker up` in directory, kill -9'd (with its process group) as soon as it has recorded
    itself as a user of dockerd; then none of its containers is left (as if they had died too)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLUSTER_", "RC_"))}
    proc = subprocess.Popen(
        [str(DOCKER_SCRIPT), "up"],
        env={**env, "CLUSTER_DIR": str(directory)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: str(directory) in users(), timeout=300, interval=0.2, message="up registered")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    project = users()[str(directory)]["project"]
    left = support_docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={project}").split()
    if left:
        support_docker("rm", "-f", *left)


def test_the_last_user_of_our_dockerd_stops_it_and_a_killed_up_does_not_keep_it(
    dirs: tuple[Path, Path, Path],
) -> None:
    a, b, c = dirs
    ours = dockerd_pid() is None  # else a dockerd not started by this test: it must be left running
    docker_checked("up", directory=a)
    pid = dockerd_pid()
    assert pid is not None
    docker_checked("up", directory=b, extra=V2)
    assert dockerd_pid() == pid
    env_b = read_env_file(b / "env")
    project_b = json.loads((b / "docker.json").read_text())["project"]
    # b's containers were made by compose v2 (compose labels each container with its own version)
    versions = {lab["com.docker.compose.version"] for lab in labels(project_b)}
    assert len(versions) == 1 and versions.pop().startswith("2."), versions
    docker_checked("stop-broker", "2", directory=b)  # compose v2's stop and start
    docker_checked("start-broker", "2", directory=b)
    if ours:
        assert set(users()) == {str(a), str(b)}
        up_killed_once_registered(c)
        assert str(c) in users()

    down_a = docker_checked("down", directory=a)
    assert dockerd_pid() == pid  # b still uses it
    assert brokers_serving(env_b) == [1, 2, 3]
    assert docker_script("status", directory=b).returncode == 0
    if ours:
        assert set(users()) == {str(b)}  # a left; c (killed, no container) dropped
        assert f"dropped {c}" in down_a.stderr

    docker_checked("down", directory=b)
    if ours:
        assert dockerd_pid() is None
        assert not RECORD.exists()
        assert not os.path.ismount(NETNS)
    else:
        assert dockerd_pid() == pid
