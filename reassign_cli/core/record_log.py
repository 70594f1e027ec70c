"""The prior-values record (throttle.py's format) kept as a log in a Kafka topic, for the admin-API backend.
Pure: the messages' bytes and the replay; backends/admin/record_topic.py produces and consumes them.

Each message holds a whole record and the offset of the record state it was computed from:

    {"base":41,"id":"<random hex>","record":{"brokers":{...},"topics":{...},"version":1}}

Reading replays the log from its start: a write counts only if its base is the offset of the last write
that counted (-1 before the first); any other lost a race and is ignored. A writer produces (acks=all),
replays up to its own message and checks that it counted; if not, it reads again and recomputes: a
read-modify-write with an optimistic check, as the ZooKeeper record's version check. A late duplicate or
a write that arrives after others (a retried send) has a stale base, so it can never count twice or
out of order.

A message may also carry a lease, `"lease":{"kind":"setup"|"clear","run":"<hex>","since":<unix seconds>}`:
an execute between its throttle writes and its reassignment ("setup"), or a clear taking throttles off
("clear"), holds it so that no other run changes the same throttles meanwhile (the admin API has no
ephemeral node and no multi-key transaction). A lease older than LEASE_SECONDS is over (its holder was
killed). Each write carries the lease as it found it unless it takes or ends one, so taking a lease is a
read-modify-write like any other: of two runs, one wins. If the log was truncated (its start offset above 0, say after someone lowered its
retention), the first message left counts whatever its base: every message holds the whole record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from reassign_cli.core import throttle as th
from reassign_cli.errors import OperationalError

TOPIC = "__reassign_cli_throttles"
NO_BASE = -1


def topic_spec(brokers: int) -> tuple[int, dict[str, str]]:
    """(replication factor, topic configs) of the record topic in a cluster of `brokers` live brokers:
    one partition, up to 3 replicas, 2 in sync for each write when there are 3, never deleted by time."""
    rf = max(1, min(3, brokers))
    configs = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
    if rf == 3:
        configs["min.insync.replicas"] = "2"
    return rf, configs


LEASE_SECONDS = 60.0  # a lease older than this is over: its holder was killed (or is far too slow)
Lease = dict[str, Any]  # {"kind": "setup"|"clear", "run": str, "since": float}


def encode_write(
    base: int, record: Mapping[str, Any], write_id: str, lease: Mapping[str, Any] | None = None
) -> bytes:
    """One message's value: compact JSON, keys sorted (the record as throttle.dump_record has it)."""
    body = orjson.loads(th.dump_record(record))
    doc: dict[str, Any] = {"base": base, "id": write_id, "record": body}
    if lease is not None:
        doc["lease"] = dict(lease)
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def decode_write(value: bytes | None) -> tuple[int, str, dict[str, Any]] | None:
    """(base, id, record), or None for a message that is not one of ours (it never counts); see
    decode_message for what is refused."""
    full = decode_message(value)
    return None if full is None else full[:3]


KNOWN_FIELDS = frozenset({"base", "id", "record", "lease"})


def decode_message(value: bytes | None) -> tuple[int, str, dict[str, Any], Lease | None] | None:
    """(base, id, record, lease); None for a message that is not one of ours (not a JSON object with a
    "base" and an "id": it never counts). A message of ours that this version does not understand (another
    field, another record version, a malformed lease or record) is refused (OperationalError): a newer
    writer's rules may differ, and guessing could let two writers both believe they won."""
    if not value:
        return None
    try:
        doc = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or "base" not in doc or "id" not in doc:
        return None
    base, write_id, lease = doc["base"], doc["id"], doc.get("lease")
    if (
        set(doc) - KNOWN_FIELDS
        or not isinstance(base, int)
        or isinstance(base, bool)
        or not isinstance(write_id, str)
        or "record" not in doc
        or (lease is not None and not _is_lease(lease))
    ):
        raise OperationalError(_refusal(value))
    try:
        record = th.load_record(orjson.dumps(doc["record"]), TOPIC)
    except OperationalError:
        raise OperationalError(_refusal(value)) from None
    return base, write_id, record, lease


def _refusal(value: bytes) -> str:
    shown = value[:200].decode(errors="replace")
    return (
        f"{TOPIC} holds a message this version of kafka-reassign does not understand (written by a newer "
        f"version?); refusing to guess the record from it: {shown}"
    )


def _is_lease(lease: Any) -> bool:
    return (
        isinstance(lease, dict)
        and lease.get("kind") in ("setup", "clear")
        and isinstance(lease.get("run"), str)
        and isinstance(lease.get("since"), int | float)
        and not isinstance(lease.get("since"), bool)
    )


def lease_holder(lease: Lease | None, run: str, now: float) -> str:
    """ "free" (none, or over), "mine" (held by `run`), or "other"."""
    if lease is None or now - float(lease["since"]) > LEASE_SECONDS:
        return "free"
    return "mine" if lease["run"] == run else "other"


@dataclass(slots=True)
class Replay:
    """The record as the log says so far: feed it every message in offset order."""

    record: dict[str, Any] = field(default_factory=th.empty_record)
    last: int = NO_BASE  # offset of the last write that counted
    position: int = 0  # next offset to feed
    outcome: dict[str, bool] = field(default_factory=dict)  # write id -> whether it counted
    first_counts: bool = False  # the log was truncated: the first message fed counts
    lease: Lease | None = None  # the lease of the last write that counted

    def start_at(self, offset: int) -> None:
        """The log starts at `offset` (its start offset, above the position when it was truncated)."""
        if offset > self.position:
            self.first_counts = True
            self.position = offset

    def feed(self, offset: int, value: bytes | None) -> None:
        if offset < self.position:
            return  # already seen (a consumer may hand a message back after a seek)
        self.position = offset + 1
        write = decode_message(value)
        if write is None:
            return
        base, write_id, record, lease = write
        counts = base == self.last or self.first_counts
        self.first_counts = False
        self.outcome[write_id] = counts
        if counts:
            self.record, self.last, self.lease = record, offset, lease
