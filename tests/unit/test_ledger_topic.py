"""The autopilot's ledger in its topic (backends/admin/ledger_topic.py): the writes as the fenced log of
core/record_log.py replays them (the race rule is the record's own, tested in test_record_log.py), and the
store's read-modify-write. Expected values worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from reassign_cli.backends.admin import ledger_topic as lt
from reassign_cli.core import autopilot as ap
from reassign_cli.core.record_log import Replay, encode_write
from reassign_cli.errors import OperationalError


def _replay(*writes: tuple[int, dict[str, Any], str]) -> Replay:
    replay = Replay(codec=lt.LOG, record=lt.LOG.empty())
    offset = 0
    for base, doc, wid in writes:
        for msg in encode_write(base, doc, wid, codec=lt.LOG):
            replay.feed(offset, msg)
            offset += 1
    return replay


def test_the_last_write_that_counts_is_the_ledger() -> None:
    first = {"brokers": {"1": None, "3": 1000.0}}
    second = {"brokers": {"1": None}}
    racing = {"brokers": {"1": None, "3": 5.0}}
    # write 0 counts; write 1 (base 0) counts; write 2 also computed from 0 lost the race: not the ledger
    replay = _replay((-1, first, "a"), (0, second, "b"), (0, racing, "c"))
    assert replay.outcome == {"a": True, "b": True, "c": False}
    assert ap.Ledger.from_dict(replay.record) == ap.Ledger({1: None})
    assert encode_write(-1, first, "a", codec=lt.LOG)[0] == (
        b'{"base":-1,"id":"a","ledger":{"brokers":{"1":null,"3":1000.0}},"v":2}'
    )


def test_a_ledger_not_understood_is_refused() -> None:
    for bad in (b'{"brokers":{"3":"x"}}', b'{"brokers":{},"more":1}', b"[1]"):
        with pytest.raises(OperationalError):
            lt.LOG.load(bad)
    msg = b'{"base":-1,"id":"a","ledger":{"brokers":{"3":"soon"}},"v":2}'
    with pytest.raises(OperationalError):
        Replay(codec=lt.LOG, record={}).feed(0, msg)


class FakeLog:
    """RecordLog.update's contract: fn of the document read, written when it changes."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc, self.writes = doc, 0

    def read(self) -> dict[str, Any]:
        return self.doc

    def update(self, fn: Any) -> dict[str, Any]:
        new = fn(dict(self.doc))
        if new != self.doc:
            self.doc, self.writes = new, self.writes + 1
        return new


def test_the_store_writes_only_a_change() -> None:
    log = FakeLog({})
    store = lt.TopicLedgerStore(log)  # type: ignore[arg-type]
    assert store.read() == ap.Ledger()
    # broker 3 holds replicas and is not live at t=100: missing since 100
    assert store.update(lambda led: ap.update(led, [1, 2], {1, 2, 3}, 100.0)) == ap.Ledger(
        {1: None, 2: None, 3: 100.0}
    )
    assert log.writes == 1 and log.doc == {"brokers": {"1": None, "2": None, "3": 100.0}}
    # the next tick at t=160 sees the same: the first-missing time is kept, nothing written
    assert store.update(lambda led: ap.update(led, [1, 2], {1, 2, 3}, 160.0)).missing_since[3] == 100.0
    assert log.writes == 1
    assert ap.dead(store.read(), 1900.0, 1800.0) == frozenset({3})
