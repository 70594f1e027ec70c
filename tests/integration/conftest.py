"""Fixtures shared by the execute/verify/list integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import kazoo_session
from tests.integration.reassign_support import Mover


@pytest.fixture
def fake(zk_chroot: str) -> Iterator[Any]:
    """A kazoo client on a fresh chroot, for tests that build a synthetic cluster's znodes."""
    with kazoo_session(zk_chroot) as client:
        yield client


@pytest.fixture
def mover(run_cli: Any, zk: Any, tmp_path: Path) -> Iterator[Mover]:
    """Runs execute/verify in tmp_path and waits for its reassignments to finish in teardown."""
    m = Mover(run_cli, zk, tmp_path)
    yield m
    m.close()
