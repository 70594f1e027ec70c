"""The admin backend on a ZooKeeper-mode cluster: the record that the ZooKeeper backend keeps there.

Each backend keeps its own record of the throttles it set (docs/throttles.md §3): the ZooKeeper backend in
the znode `/reassign_cli/throttles`, this one in its record topic. A clear through the admin API sees only
its own, so throttles set through `--zookeeper` would be left in place and called "not set by this tool".
So before it clears, the admin backend asks a broker for its `zookeeper.connect` (a ZooKeeper-mode or
migrating broker has one; a KRaft broker has none) and reads that record; the caller refuses while it names
throttles, and says which command clears them.
"""

from __future__ import annotations

import os
from typing import Any

from reassign_cli.backends.protocol import ZookeeperRecord
from reassign_cli.core import throttle as th
from reassign_cli.errors import ReassignError


def zookeeper_connect(describe_configs: Any, broker: int) -> str | None:
    """The broker's static zookeeper.connect; None on a KRaft broker."""
    from kafka.admin import ConfigResource

    resource = ConfigResource("BROKER", str(broker), configs={"zookeeper.connect": None})
    answer = describe_configs([resource], config_filter="all")
    configs = answer.get("broker", {}).get(str(broker), {})
    value = configs.get("zookeeper.connect", {}).get("value")
    return value or None


def read_zookeeper_record(connect: str, timeout: float) -> ZookeeperRecord:
    """The record in ZooKeeper at `connect` (SASL as KAFKA_OPTS' JAAS file says, as Kafka's tools do)."""
    from reassign_cli.backends.zookeeper.backend import ZkBackend
    from reassign_cli.backends.zookeeper.session import ZkOptions, open_session
    from reassign_cli.core.zk_security import jaas_file_from_kafka_opts

    jaas, section = jaas_file_from_kafka_opts(os.environ.get("KAFKA_OPTS"))
    options = ZkOptions(connect, timeout, jaas_file=jaas, jaas_section=section, jaas_required=False)
    try:
        with open_session(options) as session:
            record = ZkBackend(session).read_priors()
    except ReassignError as e:
        return ZookeeperRecord(connect, unread=str(e))
    brokers, topics = th.recorded_entities(record)
    return ZookeeperRecord(connect, brokers, topics)
