"""`/admin/preferred_replica_election`: create only, refused while one exists (the controller deletes it
once it has acted on it).

One znode holds at most a ZooKeeper request's worth (about 25,000 partitions): a larger election goes in
batches, each created once the controller has deleted the one before."""

from __future__ import annotations

import time
from collections.abc import Sequence

import orjson

from reassign_cli.backends.zookeeper.session import ZkSession
from reassign_cli.core.elect_rules import ELECTION_PATH, encode_election
from reassign_cli.core.model import TopicPartition
from reassign_cli.core.validate import max_trigger_bytes
from reassign_cli.errors import BusyError

BUSY = f"A preferred leader election is already in progress ({ELECTION_PATH} exists)"
BATCH_WAIT_SECONDS = 120.0  # how long a batch waits for the controller to take up the one before
_FRAME = len(encode_election([]))


def election_batches(partitions: Sequence[TopicPartition], max_bytes: int) -> list[list[TopicPartition]]:
    """The partitions, sorted, cut so that each batch's znode (`encode_election`) has at most max_bytes."""
    out: list[list[TopicPartition]] = [[]]
    size = _FRAME
    for t, p in sorted(partitions):
        n = len(orjson.dumps({"topic": t, "partition": p}))
        if out[-1] and size + 1 + n > max_bytes:
            out.append([])
            size = _FRAME
        size += n + (1 if out[-1] else 0)  # the comma before every entry but the first
        out[-1].append((t, p))
    return out


def create_election(session: ZkSession, data: bytes) -> None:
    """Create the election znode; BusyError while an earlier one exists. A lost answer is looked up as for
    a create-only znode (`ZkSession.create_once`)."""
    if not session.create_once(ELECTION_PATH, data):
        raise BusyError(BUSY, hint="Wait until the controller has removed it, then run again.")


def start_elections(
    session: ZkSession,
    partitions: Sequence[TopicPartition],
    max_bytes: int | None = None,
    wait: float = BATCH_WAIT_SECONDS,
) -> None:
    """The election of `partitions`, in as many znodes as their size needs, one after the other."""
    batches = election_batches(partitions, max_trigger_bytes() if max_bytes is None else max_bytes)
    for i, batch in enumerate(batches):
        if i:
            _await_taken_up(session, i, len(batches), wait)
        create_election(session, encode_election(batch))


def _await_taken_up(session: ZkSession, done: int, total: int, wait: float) -> None:
    deadline = time.monotonic() + wait
    while session.get(ELECTION_PATH)[1] is not None:
        if time.monotonic() >= deadline:
            raise BusyError(
                f"The controller has not taken up election batch {done}/{total} within {wait:g}s "
                f"({ELECTION_PATH} still exists); batches 1-{done} were submitted",
                hint="Run elect-leaders again once the controller has removed it.",
            )
        time.sleep(0.2)
