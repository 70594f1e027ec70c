"""`/admin/reassign_partitions`: create (never set) and read.

The controller only reacts to the *creation* of this znode (KAFKA-SPEC §1.11), so we never write to an
existing one: a set would leave zombie entries that block every later reassignment.
"""

from __future__ import annotations

from typing import Any

import orjson

from reassign_cli.errors import OperationalError
from reassign_cli.model import TopicPartition

REASSIGN_PATH = "/admin/reassign_partitions"


def read_trigger(client: Any) -> dict[TopicPartition, list[int]] | None:
    """The znode's entries, or None when it does not exist. Unreadable JSON counts as no entries."""
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = client.get(REASSIGN_PATH)
    except NoNodeError:
        return None
    return decode_trigger(data)


def decode_trigger(data: bytes | None) -> dict[TopicPartition, list[int]]:
    if not data:
        return {}
    try:
        doc = orjson.loads(data)
        return {(e["topic"], int(e["partition"])): [int(b) for b in e["replicas"]] for e in doc["partitions"]}
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        # The controller ignores such a znode too ("Ignoring partition reassignment due to invalid json").
        return {}


def create_trigger(client: Any, data: bytes) -> bool:
    """Create the trigger znode (parents too). False when it already exists: somebody got there first."""
    from kazoo.exceptions import NodeExistsError, ZookeeperError

    try:
        client.create(REASSIGN_PATH, data, makepath=True)
    except NodeExistsError:
        return False
    except ZookeeperError as e:
        raise OperationalError(f"cannot create {REASSIGN_PATH}: {type(e).__name__}") from None
    return True
