"""`/admin/preferred_replica_election`: create only, refused while one exists (the controller deletes it
once it has acted on it)."""

from __future__ import annotations

from reassign_cli.backends.zookeeper.session import ZkSession
from reassign_cli.core.elect_rules import ELECTION_PATH
from reassign_cli.errors import BusyError

BUSY = f"A preferred leader election is already in progress ({ELECTION_PATH} exists)"


def create_election(session: ZkSession, data: bytes) -> None:
    """Create the election znode; BusyError while an earlier one exists. A lost answer is looked up as for
    a create-only znode (`ZkSession.create_once`)."""
    if not session.create_once(ELECTION_PATH, data):
        raise BusyError(BUSY, hint="Wait until the controller has removed it, then run again.")
