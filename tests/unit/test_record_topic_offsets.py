"""RecordLog's offset lookups against a scripted stand-in for kafka-python's KafkaConsumer (no cluster): a
leader that moved is found again. The real client on a real cluster: tests/faults/test_kraft_faults.py."""

from __future__ import annotations

from typing import Any

import pytest
from kafka import TopicPartition
from kafka.errors import KafkaTimeoutError

from reassign_cli.backends.admin.record_topic import OFFSETS_TRY_MS, RecordLog
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.record_log import TOPIC

TP = TopicPartition(TOPIC, 0)


class StaleLeader:
    """kafka-python 3.0.12's consumer after the record's leader moved: ListOffsets goes to the old leader,
    answers NOT_LEADER and is tried again until the timeout, until a Metadata request (topics()) is made."""

    def __init__(self, fresh: bool = False) -> None:
        self.fresh = fresh
        self.calls: list[tuple[str, Any]] = []

    def topics(self) -> set[str]:
        self.calls.append(("topics", None))
        self.fresh = True
        return {TOPIC}

    def _offsets(self, what: str, timeout_ms: int, offset: int) -> dict[Any, int]:
        self.calls.append((what, timeout_ms))
        if not self.fresh:
            raise KafkaTimeoutError(f"Failed to get offsets by timestamps in {timeout_ms} ms")
        return {TP: offset}

    def beginning_offsets(self, tps: list[Any], timeout_ms: int) -> dict[Any, int]:
        return self._offsets("beginning", timeout_ms, 0)

    def end_offsets(self, tps: list[Any], timeout_ms: int) -> dict[Any, int]:
        return self._offsets("end", timeout_ms, 7)


def log() -> RecordLog:
    return RecordLog(AdminOptions("k:9092"), admin=None)


def test_offsets_asked_again_after_a_metadata_refresh_when_the_leader_moved() -> None:
    consumer = StaleLeader()
    assert log()._offsets(consumer, TP) == (0, 7)
    assert consumer.calls == [
        ("beginning", OFFSETS_TRY_MS),
        ("topics", None),
        ("beginning", OFFSETS_TRY_MS),
        ("end", OFFSETS_TRY_MS),
    ]


def test_offsets_need_no_refresh_when_the_leader_answers() -> None:
    consumer = StaleLeader(fresh=True)
    assert log()._offsets(consumer, TP) == (0, 7)
    assert [c[0] for c in consumer.calls] == ["beginning", "end"]


def test_offsets_give_up_at_the_request_timeout() -> None:
    class Never(StaleLeader):
        def topics(self) -> set[str]:
            self.calls.append(("topics", None))
            return {TOPIC}

    options = AdminOptions("k:9092", settings={"request_timeout_ms": 0})
    with pytest.raises(KafkaTimeoutError):
        RecordLog(options, admin=None)._offsets(Never(), TP)
