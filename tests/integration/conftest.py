"""Fixtures shared by the execute/verify/list integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import KAFKA4_VERSION, ExtraCluster, kazoo_session
from tests.integration.kraft_support import EMPTY, Admin, admin, cli, idle, record_messages, replayed_record
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


@pytest.fixture(scope="module")
def kc(kraft_cluster: Any) -> ExtraCluster:
    """The KRaft 4.x cluster of the admin-API tests (started once per session; test_kraft.py runs 3.9 too)."""
    c: ExtraCluster = kraft_cluster(KAFKA4_VERSION)
    assert c.mode == "kraft"
    return c


@pytest.fixture
def ka(kc: ExtraCluster, tmp_path: Path) -> Iterator[Admin]:
    """The raw admin client; the cluster idle, and no throttle of ours left by an earlier failed test (its
    record entries would be taken for the priors of the keys this test writes): a verify clears them."""
    with admin(kc.bootstrap) as a:
        idle(a)
        if a.record_end() and replayed_record(record_messages(kc.bootstrap)) != EMPTY:
            none = tmp_path / "none.json"
            none.write_text('{"version":1,"partitions":[]}')
            r = cli(kc.bootstrap, "verify", "--reassignment-json-file", none)
            assert r.returncode == 0, r.stderr
        yield a
