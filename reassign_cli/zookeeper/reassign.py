"""`/admin/reassign_partitions`: create, never set.

The controller only reacts to the *creation* of this znode (KAFKA-SPEC §1.11), so we never write to an
existing one: a set would leave zombie entries that block every later reassignment. Reading and decoding
it is `zookeeper.read` + `znodes.decode_reassignment`.
"""

from __future__ import annotations

from typing import Any

from reassign_cli.errors import OperationalError
from reassign_cli.znodes import REASSIGN_PARTITIONS


def create_trigger(client: Any, data: bytes) -> bool:
    """Create the trigger znode (parents too). False when it already exists: somebody got there first."""
    from kazoo.exceptions import NodeExistsError, ZookeeperError

    try:
        client.create(REASSIGN_PARTITIONS, data, makepath=True)
    except NodeExistsError:
        return False
    except ZookeeperError as e:
        raise OperationalError(f"cannot create {REASSIGN_PARTITIONS}: {type(e).__name__}") from None
    return True
