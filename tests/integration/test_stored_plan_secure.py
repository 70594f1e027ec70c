"""The stored plan on the secured cluster (ZooKeeper with SASL over TLS, brokers with zookeeper.set.acl=true):
every znode it creates carries the ACLs a broker would give it, and a client without credentials reads the
plan but cannot change it (one line, nothing written)."""

from __future__ import annotations

from typing import Any

import pytest

from reassign_cli.backends import plan_store as ps
from reassign_cli.backends.zookeeper.session import ZkOptions, open_session
from reassign_cli.backends.zookeeper.stored_plan import CONTENT, HEAD, ZkPlanStore
from reassign_cli.core import stored_plan as sp
from reassign_cli.errors import OperationalError
from tests.clusters import ExtraCluster
from tests.integration.stored_plan_worker import big_plan
from tests.integration.test_secure import KAFKA_ACL, acl_set, szk  # noqa: F401 (szk: a fixture)

pytestmark = [pytest.mark.slow]


def test_stored_plan_acls_and_an_unauthenticated_client(secure_cluster: ExtraCluster, szk: Any) -> None:  # noqa: F811
    c = secure_cluster
    assert c.zookeeper and c.jaas_file and c.tls_config_file
    secured = ZkOptions(c.zookeeper, jaas_file=str(c.jaas_file), tls_config_file=str(c.tls_config_file))
    anonymous = ZkOptions(c.zookeeper, tls_config_file=str(c.tls_config_file))
    with open_session(secured) as session:
        store = ZkPlanStore(session, chunk_bytes=4000)
        store.delete()  # a plan left by an earlier failed run
        try:
            _, plan = big_plan(200)
            stored, created = store.create(plan)
            assert created
            (content_id,) = szk.get_children(CONTENT)
            chunks = szk.get_children(f"{CONTENT}/{content_id}")
            assert len(chunks) > 1
            for path in ["/reassign_cli", HEAD, CONTENT, f"{CONTENT}/{content_id}"] + [
                f"{CONTENT}/{content_id}/{n}" for n in chunks
            ]:
                assert acl_set(szk, path) == KAFKA_ACL, path
            with open_session(anonymous) as anon:
                other = ZkPlanStore(anon)
                seen = other.read()
                assert seen is not None and seen.plan == plan
                with pytest.raises(OperationalError, match="denied write access to /reassign_cli/plan"):
                    other.replace(seen, sp.mark_started(seen.plan, seen.plan.moves[:1], 1.0))
            again = store.read()
            assert again is not None and again.version == stored.version  # nothing was written
            won, _ = ps.update(store, lambda p: sp.mark_started(p, p.moves[:3], 2.0))
            assert won
        finally:
            store.delete()
    assert szk.exists(HEAD) is None and szk.get_children(CONTENT) == []
