"""Reads survive a ZooKeeper outage: the real ZooKeeper is stopped under an open session and started again
a few seconds later; a read made while it is down waits and then answers."""

from __future__ import annotations

import threading
import time
from typing import Any

from reassign_cli.zookeeper.read import read_state
from reassign_cli.zookeeper.session import ZkOptions, open_session


def test_read_waits_out_a_zookeeper_restart(cluster: Any) -> None:
    seen: dict[str, Any] = {}
    with open_session(ZkOptions(cluster.zookeeper, 10.0)) as session:
        client = session.client
        before = read_state(session)
        cluster.stop_zookeeper()
        try:

            def restart() -> None:
                time.sleep(4)  # the read below starts while ZooKeeper is down
                seen["down"] = not client.connected
                cluster.start_zookeeper()

            t = threading.Thread(target=restart)
            t.start()
            state = read_state(session, retry_for=120)
            t.join()
        finally:
            if not client.connected:
                cluster.start_zookeeper()
    assert seen["down"] is True  # the read really ran into the outage
    assert state.broker_ids == before.broker_ids == cluster.broker_ids
