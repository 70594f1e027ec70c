"""Which store holds the stored plan (issue 25, docs/stored-plan.md), chosen from the backend a command
opened: ZooKeeper mode (any --zookeeper, with or without the brokers) keeps it in znodes written with kazoo
(backends/zookeeper/stored_plan.ZkPlanStore); the admin API alone (KRaft) in the topic __reassign_cli_plan
(backends/admin/plan_topic.TopicPlanStore). The one place this choice is made: pause, continue, list, cancel
and verify's metrics (ops/plan_ctl.py) use it, and so should the step.

Opening a store writes nothing: a read of a plan never stored creates no znode and no topic.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from reassign_cli.backends.plan_store import PlanStore


@contextlib.contextmanager
def open_store(backend: Any) -> Iterator[PlanStore]:
    """The stored plan's store of `backend` (a ZkBackend or an AdminBackend), closed on exit."""
    from reassign_cli.backends.admin.backend import AdminBackend
    from reassign_cli.backends.zookeeper.backend import ZkBackend

    if isinstance(backend, ZkBackend):
        from reassign_cli.backends.zookeeper.stored_plan import ZkPlanStore

        yield ZkPlanStore(backend.session)
        return
    if isinstance(backend, AdminBackend):
        from reassign_cli.backends.admin.plan_topic import PlanLog, TopicPlanStore

        log = PlanLog(backend.options, backend.admin)
        try:
            yield TopicPlanStore(log)
        finally:
            log.close()
        return
    raise TypeError(f"no plan store for {type(backend).__name__}")
