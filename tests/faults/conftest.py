"""The fault suite runs on a cluster of its own ($CLUSTER_DIR-faults, ZooKeeper mode, started once for
tests/faults): it stops ZooKeeper, the controller and target brokers, and kills the CLI with SIGKILL, none of
which other tests may see. Overriding `cluster` here points every shared fixture (zk, make_topic,
run_cli, consume_all) at that cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import clusters
from tests.conftest import Cluster, cluster_dir
from tests.integration.reassign_support import Mover

FAULT_TEST_TIMEOUT = 1200  # a fault test moves data slowly on purpose (up to ~450 s quiet, twice that loaded)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(FAULT_TEST_TIMEOUT))


@pytest.fixture(scope="package")
def cluster() -> Iterator[Cluster]:
    """The fault suite's ZooKeeper-mode cluster: started on first use, stopped when tests/faults ends (not
    left idle through the rest of the session)."""
    extra = clusters.start_extra(Path(f"{cluster_dir().resolve()}-faults"))
    c = Cluster.from_env(extra.directory, extra.env)
    try:
        yield c
    finally:
        extra.stopped |= c.stopped
        clusters.stop_extra(extra)


@pytest.fixture
def mover(run_cli: Any, zk: Any, tmp_path: Path) -> Iterator[Mover]:
    m = Mover(run_cli, zk, tmp_path)
    yield m
    m.close()


@pytest.fixture(scope="package")
def kc() -> Iterator[clusters.ExtraCluster]:
    """The fault suite's KRaft cluster ($CLUSTER_DIR-faults-kraft, Kafka 4.x: three combined broker+controller
    nodes), shared by test_kraft_faults.py and test_kraft_step_faults.py (one start, not one per module):
    every test there leaves it idle and clean (their `ka` fixture and assert_clean)."""
    c = clusters.start_extra(
        Path(f"{cluster_dir().resolve()}-faults-kraft"), "--kraft", "--kafka-version", clusters.KAFKA4_VERSION
    )
    try:
        yield c
    finally:
        clusters.stop_extra(c)
