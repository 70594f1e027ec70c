"""The autopilot's known-broker ledger (core/autopilot.Ledger) in the topic __reassign_cli_autopilot, for
the admin-API backend (KRaft): a log of writes fenced as the prior-values record's and the stored plan's
are (core/record_log.py, backends/admin/record_topic.py: the same messages, replay and compaction). Used by
ops/autopilot.keep_ledger and dead_now (`kafka-reassign rebalance`); ZooKeeper mode keeps the same ledger
in a znode (ops/ledger.LedgerStore).

A topic of its own, beside __reassign_cli_plan rather than in it: the stored plan's version is the offset
of the last write's end in its topic, so a ledger write there would fail the compare-and-set of a step
writing the plan at the same time. The ledger is written only when it changes (a broker joins, goes
missing, comes back, or is forgotten), so a tick on a steady cluster reads it and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from reassign_cli.backends.admin.record_topic import RecordLog
from reassign_cli.core import autopilot as ap
from reassign_cli.core.record_log import Codec
from reassign_cli.errors import OperationalError

TOPIC = "__reassign_cli_autopilot"


def _load(data: bytes) -> dict[str, Any]:
    """A write's document, {"brokers": {...}, "paused": {...}} as Ledger.to_dict has it (the standing
    pause only while one stands); OperationalError otherwise."""
    try:
        doc = orjson.loads(data)
        if not isinstance(doc, dict) or set(doc) - {"brokers", "paused"}:
            raise ValueError("not a ledger")
        return ap.Ledger.from_dict(doc).to_dict()
    except (ValueError, TypeError) as e:  # orjson.JSONDecodeError is a ValueError
        raise OperationalError(f"{TOPIC} holds a ledger this version does not understand: {e}") from None


def _dumps(doc: Mapping[str, Any]) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


LOG = Codec(TOPIC, "ledger", _load, _dumps, dict)


class LedgerLog(RecordLog):
    codec = LOG
    what = "the autopilot's known-broker ledger"

    def _unknown_hint(self) -> str:
        return (
            f"Delete the topic {self.topic}: the next tick starts a new ledger (a broker missing now is then "
            "missing since that tick)."
        )


class TopicLedgerStore:
    """read and update (read-modify-write until the write counts) of the ledger in LedgerLog."""

    def __init__(self, log: LedgerLog) -> None:
        self.log = log

    def read(self) -> ap.Ledger:
        doc = self.log.read()
        return ap.Ledger.from_dict(doc) if doc else ap.Ledger()

    def update(self, fn: Callable[[ap.Ledger], ap.Ledger]) -> ap.Ledger:
        def change(doc: dict[str, Any]) -> dict[str, Any]:
            before = ap.Ledger.from_dict(doc) if doc else ap.Ledger()
            after = fn(before)
            return doc if after == before else after.to_dict()

        doc = self.log.update(change)
        return ap.Ledger.from_dict(doc) if doc else ap.Ledger()
