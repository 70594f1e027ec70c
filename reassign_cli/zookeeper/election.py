"""`/admin/preferred_replica_election`: create only, refused while one exists (the controller deletes it
once it has acted on it)."""

from __future__ import annotations

from typing import Any

from reassign_cli.elect import ELECTION_PATH
from reassign_cli.errors import BusyError, OperationalError

BUSY = f"A preferred leader election is already in progress ({ELECTION_PATH} exists)"


def election_pending(client: Any) -> bool:
    return client.exists(ELECTION_PATH) is not None


def create_election(client: Any, data: bytes) -> None:
    from kazoo.exceptions import NodeExistsError, ZookeeperError

    try:
        client.create(ELECTION_PATH, data, makepath=True)
    except NodeExistsError:
        raise BusyError(BUSY, hint="Wait until the controller has removed it, then run again.") from None
    except ZookeeperError as e:
        raise OperationalError(f"cannot create {ELECTION_PATH}: {type(e).__name__}") from None
