"""`/admin/reassign_partitions`: create, never set.

The controller only reacts to the *creation* of this znode (KAFKA-SPEC §1.11), so we never write to an
existing one: a set would leave zombie entries that block every later reassignment. Reading and decoding
it is `zookeeper.read` + `znodes.decode_reassignment`.
"""

from __future__ import annotations

from reassign_cli.backends.zookeeper.session import ZkSession
from reassign_cli.core.znodes import REASSIGN_PARTITIONS


def create_trigger(session: ZkSession, data: bytes) -> bool:
    """Create the trigger znode (parents too). False when it already exists: somebody got there first.

    A connection dropped during the create: once it is back, the znode holding exactly our bytes means the
    create landed; a missing znode means it did not (and it is created now); anything else is someone
    else's (`ZkSession.create_once`)."""
    return session.create_once(REASSIGN_PARTITIONS, data)
