"""The compose cluster's kraft profile (three combined Kafka 4.3.1 nodes, scripts/docker up --kraft): the
env file, a throttled move through the admin API with a node's container stopped mid-move, and the
tool's image against it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker import support
from tests.docker.conftest import docker_checked, docker_dir, docker_script
from tests.helpers import read_env_file, unique_name

# The names scripts/cluster writes for `up --kraft` (scripts/_cluster.py write_env), read by hand.
KRAFT_ENV_NAMES = {
    "KAFKA_REASSIGN_BOOTSTRAP", "KAFKA_BOOTSTRAP", "CLUSTER_BROKER_IDS", "CLUSTER_BROKER_PORTS",
    "CLUSTER_BROKER_1", "CLUSTER_BROKER_2", "CLUSTER_BROKER_3", "CLUSTER_RACKS", "CLUSTER_DIR",
    "CLUSTER_KAFKA_VERSION", "CLUSTER_MODE", "CLUSTER_CONTROLLER_PORTS", "KAFKA_TOOLS_CLASSPATH", "CLUSTER_LOG_DIRS",
}  # fmt: skip


@pytest.fixture(scope="module")
def kraft() -> Iterator[tuple[Path, dict[str, str]]]:
    directory = docker_dir("docker-kraft")
    try:
        docker_checked("up", "--kraft", directory=directory)
        yield directory, read_env_file(directory / "env")
    finally:
        docker_script("down", directory=directory)


def make_topic(bootstrap: str, assignment: dict[int, list[int]], messages: int) -> str:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    topic = unique_name("docker-kraft")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments=assignment)], timeout_ms=30000)
    finally:
        admin.close()
    if not messages:
        return topic
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=60000)
    try:
        n = len(assignment)
        for i in range(messages):
            producer.send(
                topic, key=f"key-{i}".encode(), value=f"{topic}-value-{i}".encode(), partition=i % n
            )
        producer.flush(timeout=120)
    finally:
        producer.close(timeout=10)
    return topic


def test_env_file_has_the_names_of_scripts_cluster_kraft(kraft: tuple[Path, dict[str, str]]) -> None:
    _, env = kraft
    assert set(env) == KRAFT_ENV_NAMES
    assert env["CLUSTER_MODE"] == "kraft" and env["CLUSTER_KAFKA_VERSION"] == "4.3.1"
    assert env["KAFKA_REASSIGN_BOOTSTRAP"] == env["KAFKA_BOOTSTRAP"]


def test_kraft_throttled_move_with_a_node_stopped_mid_move(
    kraft: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    directory, env = kraft
    bootstrap = env["KAFKA_BOOTSTRAP"]
    topic = make_topic(bootstrap, {0: [1, 2]}, 0)
    support.move_with_broker_stopped(
        topic,
        bootstrap,
        {"KAFKA_REASSIGN_BOOTSTRAP": bootstrap},
        tmp_path,
        lambda: docker_checked("stop-broker", "3", directory=directory),
        lambda: docker_checked("start-broker", "3", directory=directory),
    )


def test_the_tools_image_against_kraft(kraft: tuple[Path, dict[str, str]]) -> None:
    directory, env = kraft
    docker_checked("images", directory=directory)
    bootstrap = env["KAFKA_BOOTSTRAP"]
    topic = make_topic(bootstrap, {0: [1, 2], 1: [2, 3], 2: [3, 1]}, 10)
    args = ["generate", "--topic", topic, "--broker-list", "1,2,3", "--seed", "7", "--format", "json"]
    conn = {"KAFKA_REASSIGN_BOOTSTRAP": bootstrap}
    image = support.in_image(*args, env=conn)
    venv = support.run_cli(*args, env=conn)
    assert image.returncode == venv.returncode == 0, image.stderr + venv.stderr
    assert image.stdout == venv.stdout
    assert {p["partition"] for p in json.loads(image.stdout)["proposed"]["partitions"]} == {0, 1, 2}
