"""Fixtures shared by the execute/verify/list integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.reassign_support import kazoo


@pytest.fixture
def fake(zk_chroot: str) -> Iterator[Any]:
    """A kazoo client on a fresh chroot, for tests that build a synthetic cluster's znodes."""
    client = kazoo(zk_chroot)
    try:
        yield client
    finally:
        client.stop()
        client.close()
