"""Fixtures shared by the execute/verify/list integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import KAFKA4_VERSION, ExtraCluster, kazoo_session
from tests.integration.kraft_support import (
    EMPTY,
    FR,
    LDR,
    LR,
    Admin,
    admin,
    cli,
    idle,
    record_messages,
    replayed_record,
)
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
        clear_ours(kc, a, tmp_path)
        try:
            yield a
        finally:
            restore_baseline(kc, a, tmp_path)


def clear_ours(kc: ExtraCluster, a: Admin, tmp_path: Path) -> None:
    """A verify of an empty plan takes off whatever the record says is ours (and restores its priors)."""
    if a.record_end() and replayed_record(record_messages(kc.bootstrap)) != EMPTY:
        none = tmp_path / "none.json"
        none.write_text('{"version":1,"partitions":[]}')
        r = cli(kc.bootstrap, "verify", "--reassignment-json-file", none)
        assert r.returncode == 0, r.stderr


def restore_baseline(kc: ExtraCluster, a: Admin, tmp_path: Path) -> None:
    """The finalizer of every test on the shared KRaft cluster, run even when the test failed: no
    reassignment left running (cancelled), nothing of ours in the record, and no throttle key on any broker
    (the cluster's baseline has none). A failed test's leftovers must not fail the tests after it: a
    broker rate the record does not know is 'kept' by every later verify, and failed each cleanliness check."""
    if a.reassignments():
        cli(kc.bootstrap, "cancel", "--all", "--rollback-file", str(tmp_path / "teardown-rollback.json"))
        idle(a)
    clear_ours(kc, a, tmp_path)
    for broker in (1, 2, 3):
        left = {k: None for k in a.configs("brokers", broker) if k in (LR, FR, LDR)}
        if left:
            a.alter("brokers", broker, left)
