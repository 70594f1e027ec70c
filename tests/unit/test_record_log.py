"""The prior-values record as a log (record_log.py): the message format, the replay worked by hand, and a
property test of concurrent read-modify-writes under every interleaving and late duplicate deliveries:
no writer's change is ever lost, none counts twice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core import throttle as th
from reassign_cli.core.record_log import NO_BASE, TOPIC, Replay, decode_write, encode_write, topic_spec

LR = "leader.replication.throttled.rate"


def rec(**brokers: str | None) -> dict[str, Any]:
    """A record with one key per broker: rec(b1="5") -> broker 1's leader rate prior "5"."""
    return {"version": 1, "brokers": {k[1:]: {LR: v} for k, v in brokers.items()}, "topics": {}}


def test_message_bytes() -> None:
    value = encode_write(7, rec(b2=None), "ab12")
    assert value == (
        b'{"base":7,"id":"ab12","record":{"brokers":{"2":{"leader.replication.throttled.rate":null}},'
        b'"topics":{},"version":1}}'
    )
    assert decode_write(value) == (7, "ab12", rec(b2=None))


def test_topic_spec() -> None:
    assert TOPIC == "__reassign_cli_throttles"
    keep = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
    assert topic_spec(1) == (1, keep)
    assert topic_spec(2) == (2, keep)
    assert topic_spec(3) == (3, {**keep, "min.insync.replicas": "2"})
    assert topic_spec(12) == (3, {**keep, "min.insync.replicas": "2"})


def test_replay_counts_only_writes_based_on_the_last_counted_one() -> None:
    # offset 0: first write (base -1) counts; 1: a racer also based on -1, ignored; 2: based on 0, counts;
    # 3: garbage, ignored; 4: based on 1 (the ignored one), ignored; 5: based on 2, counts.
    log = [
        encode_write(NO_BASE, rec(b1="a"), "w0"),
        encode_write(NO_BASE, rec(b2="b"), "w1"),
        encode_write(0, rec(b1="a", b3=None), "w2"),
        b"not json",
        encode_write(1, rec(b2="b", b4="x"), "w4"),
        encode_write(2, rec(b3=None), "w5"),
    ]
    r = Replay()
    for offset, value in enumerate(log):
        r.feed(offset, value)
    assert (r.record, r.last, r.position) == (rec(b3=None), 5, 6)
    assert r.outcome == {"w0": True, "w1": False, "w2": True, "w4": False, "w5": True}


def test_replay_of_a_truncated_log_takes_the_first_message_left() -> None:
    r = Replay()
    r.start_at(10)  # offsets 0-9 deleted: the first message left (base 8) holds the whole record
    r.feed(10, b"")
    r.feed(11, encode_write(8, rec(b1="a"), "w11"))
    r.feed(12, encode_write(9, rec(b1="z"), "w12"))  # not based on 11: ignored
    r.feed(13, encode_write(11, rec(b2="b"), "w13"))
    assert (r.record, r.last) == (rec(b2="b"), 13)
    assert r.outcome == {"w11": True, "w12": False, "w13": True}


def test_replay_ignores_messages_fed_again() -> None:
    r = Replay()
    r.feed(0, encode_write(NO_BASE, rec(b1="a"), "w0"))
    r.feed(0, encode_write(NO_BASE, rec(b1="other"), "w0"))
    r.start_at(0)
    assert (r.record, r.last, r.position) == (rec(b1="a"), 0, 1)


# ------------------------------------------------------------------ concurrent writers, any interleaving


@dataclass
class Writer:
    """A RecordLog.update of "add my key" as three steps: read+compute, append, check."""

    key: str
    replay: Replay = field(default_factory=Replay)
    phase: str = "read"  # read -> append -> check -> (read | done)
    pending: bytes = b""
    write_id: str = ""
    attempt: int = 0

    def step(self, log: list[bytes], duplicates: list[bytes], duplicate: bool) -> None:
        for offset in range(self.replay.position, len(log)):
            self.replay.feed(offset, log[offset])
        if self.phase == "read":
            new = th.record_priors(self.replay.record, "brokers", self.key, {}, [LR])
            self.write_id = f"{self.key}-{self.attempt}"
            self.pending = encode_write(self.replay.last, new, self.write_id)
            self.phase = "append"
        elif self.phase == "append":
            log.append(self.pending)
            if duplicate:  # a retried send: the same bytes again, delivered later
                duplicates.append(self.pending)
            self.phase = "check"
        elif self.phase == "check":
            counted = self.replay.outcome.get(self.write_id)
            self.attempt += 1
            self.phase = "done" if counted else "read"


@settings(max_examples=300, deadline=None)
@given(
    writers=st.integers(min_value=1, max_value=5),
    schedule=st.lists(st.tuples(st.integers(0, 9), st.booleans(), st.booleans()), max_size=80),
)
def test_concurrent_writers_never_lose_a_change(writers: int, schedule: list[tuple[int, bool, bool]]) -> None:
    log: list[bytes] = []
    duplicates: list[bytes] = []
    ws = [Writer(str(i + 1)) for i in range(writers)]
    for who, duplicate, deliver in schedule:
        if deliver and duplicates:
            log.append(duplicates.pop(0))
        w = ws[who % writers]
        if w.phase != "done":
            w.step(log, duplicates, duplicate)
    for _ in range(100 * writers):  # then round-robin until everyone is done (late duplicates too)
        if duplicates:
            log.append(duplicates.pop(0))
        for w in ws:
            if w.phase != "done":
                w.step(log, duplicates, False)
        if all(w.phase == "done" for w in ws) and not duplicates:
            break
    assert all(w.phase == "done" for w in ws)
    final = Replay()
    for offset, value in enumerate(log):
        final.feed(offset, value)
    assert sorted(final.record["brokers"]) == sorted(w.key for w in ws)
    # Each writer's change counted exactly once: one counted message carries its key for the first time.
    firsts: list[str] = []
    seen: set[str] = set()
    counted = Replay()
    for offset, value in enumerate(log):
        counted.feed(offset, value)
        if counted.last == offset:
            firsts += [k for k in counted.record["brokers"] if k not in seen]
            seen |= set(counted.record["brokers"])
    assert sorted(firsts) == sorted(w.key for w in ws)


def test_decode_ignores_what_is_not_ours_and_refuses_what_it_does_not_understand() -> None:
    import pytest

    from reassign_cli.errors import OperationalError

    assert decode_write(None) is None
    assert decode_write(b"") is None
    assert decode_write(b"not json") is None
    assert decode_write(b'{"key":"another producer"}') is None  # no base and id: not ours, never counts
    assert decode_write(b"[1,2]") is None
    for ours_but_unknown in (
        b'{"base":"1","id":"x","record":{"version":1}}',
        b'{"base":true,"id":"x","record":{"version":1}}',
        b'{"base":1,"id":"x","record":{"version":2}}',  # a newer record format
        b'{"base":1,"id":"x","record":{"version":1},"chunk":0}',  # a field this version does not know
        b'{"base":1,"id":"x","record":{"version":1},"lease":{"kind":"bogus"}}',
        orjson.dumps({"base": 1, "id": "x"}),
    ):
        with pytest.raises(OperationalError, match="does not understand"):
            decode_write(ours_but_unknown)


def test_the_lease_of_the_last_counted_write_is_the_logs() -> None:
    from reassign_cli.core.record_log import LEASE_SECONDS, lease_holder

    lease = {"kind": "setup", "run": "r1", "since": 1000.0}
    log = [
        encode_write(NO_BASE, rec(b1="a"), "w0", lease),
        encode_write(NO_BASE, rec(b2="b"), "w1"),  # lost the race: its (absent) lease does not count
    ]
    r = Replay()
    for offset, value in enumerate(log):
        r.feed(offset, value)
    assert (r.record, r.lease) == (rec(b1="a"), lease)
    assert lease_holder(r.lease, "r1", 1001.0) == "mine"
    assert lease_holder(r.lease, "r2", 1001.0) == "other"
    assert lease_holder(r.lease, "r2", 1000.0 + LEASE_SECONDS + 1) == "free"  # its holder was killed
    assert lease_holder(None, "r2", 0.0) == "free"
    r.feed(3, encode_write(0, rec(), "w3"))  # a write that ends it
    assert (r.record, r.lease) == (rec(), None)
