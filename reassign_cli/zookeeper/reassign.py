"""`/admin/reassign_partitions`: create, never set.

The controller only reacts to the *creation* of this znode (KAFKA-SPEC §1.11), so we never write to an
existing one: a set would leave zombie entries that block every later reassignment. Reading and decoding
it is `zookeeper.read` + `znodes.decode_reassignment`.
"""

from __future__ import annotations

from typing import Any

from reassign_cli.errors import OperationalError
from reassign_cli.znodes import REASSIGN_PARTITIONS
from reassign_cli.zookeeper.landed import await_reconnect, unknown_outcome


def create_trigger(client: Any, data: bytes) -> bool:
    """Create the trigger znode (parents too). False when it already exists: somebody got there first.

    A connection dropped during the create: once it is back, the znode holding exactly our bytes means the
    create landed; a missing znode means it did not (and it is created now); anything else is someone
    else's."""
    from kazoo.exceptions import ConnectionLoss, NodeExistsError, NoNodeError, ZookeeperError

    for _ in range(3):
        try:
            client.create(REASSIGN_PARTITIONS, data, makepath=True)
        except NodeExistsError:
            return False
        except ConnectionLoss:
            if not await_reconnect(client):
                raise unknown_outcome(REASSIGN_PARTITIONS) from None
            try:
                return bool(client.get(REASSIGN_PARTITIONS)[0] == data)
            except NoNodeError:
                continue  # it did not land: create it now
        except ZookeeperError as e:
            raise OperationalError(f"cannot create {REASSIGN_PARTITIONS}: {type(e).__name__}") from None
        return True
    raise unknown_outcome(REASSIGN_PARTITIONS)
