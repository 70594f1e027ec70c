"""What to do when the connection drops in the middle of a write: the write may or may not have been
applied. Wait for the connection to come back, then look, instead of guessing."""

from __future__ import annotations

import time
from typing import Any

from reassign_cli.errors import OperationalError

RECONNECT_SECONDS = 30.0


def await_reconnect(client: Any, seconds: float = RECONNECT_SECONDS) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if client.connected:
            return True
        time.sleep(0.2)
    return False


def unknown_outcome(path: str) -> OperationalError:
    return OperationalError(
        f"the connection to ZooKeeper dropped while writing {path}; the write may or may not have been "
        "applied",
        hint="Run kafka-reassign verify (or list) once ZooKeeper is reachable to see where things stand.",
    )
