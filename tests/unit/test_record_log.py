"""The prior-values record as a log (record_log.py): the message format, the replay worked by hand, and
property tests of concurrent read-modify-writes (chunked or not) under every interleaving, late duplicate
deliveries, writers killed between any two messages, compactions and prefixes removed at any offset: no
writer's change is ever lost, two writers never both believe they won, a partial write never counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core import throttle as th
from reassign_cli.core.record_log import (
    LEASE_SECONDS,
    NO_BASE,
    TOPIC,
    LeaseWatch,
    Replay,
    decode_message,
    encode_write,
    topic_spec,
)
from reassign_cli.errors import OperationalError

LR = "leader.replication.throttled.rate"


def rec(**brokers: str | None) -> dict[str, Any]:
    """A record with one key per broker: rec(b1="5") -> broker 1's leader rate prior "5"."""
    return {"version": 1, "brokers": {k[1:]: {LR: v} for k, v in brokers.items()}, "topics": {}}


def legacy(base: int, record: dict[str, Any], write_id: str) -> bytes:
    """A message of the first format (no "v"), as versions before chunking wrote it."""
    return orjson.dumps({"base": base, "id": write_id, "record": record}, option=orjson.OPT_SORT_KEYS)


def replay(log: list[bytes], start: int = 0) -> Replay:
    r = Replay()
    r.start_at(start)
    for offset in range(start, len(log)):
        r.feed(offset, log[offset])
    return r


def test_message_bytes() -> None:
    (value,) = encode_write(7, rec(b2=None), "ab12")
    assert value == (
        b'{"base":7,"id":"ab12","record":{"brokers":{"2":{"leader.replication.throttled.rate":null}},'
        b'"topics":{},"version":1},"v":2}'
    )
    msg = decode_message(value)
    assert msg is not None and (msg.base, msg.write_id, msg.record, msg.chunks) == (
        7,
        "ab12",
        rec(b2=None),
        0,
    )


def test_a_record_over_the_limit_is_chunked() -> None:
    lease = {"kind": "setup", "run": "r", "since": 5}
    messages = encode_write(3, rec(b1="x"), "w", lease, limit=60)
    text = '{"brokers":{"1":{"leader.replication.throttled.rate":"x"}},"topics":{},"version":1}'
    # Pieces of 30 characters would make 73-byte chunks: 15 (6 pieces) fit.
    assert messages[0] == b'{"chunk":0,"id":"w","part":"{\\"brokers\\":{\\"1\\"","v":2}'
    assert (
        messages[-1] == b'{"base":3,"chunks":6,"id":"w","lease":{"kind":"setup","run":"r","since":5},"v":2}'
    )
    assert all(len(m) <= 60 for m in messages[:-1])  # the commit is small (base, id, lease)
    parts = [orjson.loads(m)["part"] for m in messages[:-1]]
    assert "".join(parts) == text
    # Counted at offsets 4..8 (base 3): offsets 0-3 are anything.
    r = replay([b"x", b"y", b"z", b"w", *messages])
    assert (r.record, r.lease, r.last, r.cut, r.outcome) == (rec(b1="x"), lease, 10, 4, {"w": True})


def test_topic_spec() -> None:
    assert TOPIC == "__reassign_cli_throttles"
    keep = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
    assert topic_spec(1) == (1, keep)
    assert topic_spec(2) == (2, keep)
    assert topic_spec(3) == (3, {**keep, "min.insync.replicas": "2"})
    assert topic_spec(12) == (3, {**keep, "min.insync.replicas": "2"})


def test_a_write_counts_when_no_other_write_ended_after_its_base() -> None:
    # 0: first write (base -1) counts; 1: a racer also based on -1, lost (0 ended after -1); 2: based on 1
    # (it read the loser too), counts; 3: not ours, does not matter; 4: based on 2, counts; 5: based on 2
    # too, lost (4 ended after 2); 6: based on 5, counts.
    log = encode_write(-1, rec(b1="a"), "w0") + encode_write(-1, rec(b2="b"), "w1")
    log += [*encode_write(1, rec(b1="a", b3=None), "w2"), b"not json"]
    log += encode_write(2, rec(b4="x"), "w4") + encode_write(2, rec(b5="y"), "w5")
    log += encode_write(5, rec(b3=None), "w6")
    r = replay(log)
    assert (r.record, r.last, r.last_end, r.cut, r.position, r.known) == (rec(b3=None), 6, 6, 6, 7, True)
    assert r.outcome == {"w0": True, "w1": False, "w2": True, "w4": True, "w5": False, "w6": True}


def test_of_two_interleaved_chunked_writes_the_first_to_end_counts() -> None:
    a = encode_write(-1, rec(b1="a"), "a", limit=60)
    b = encode_write(-1, rec(b2="b"), "b", limit=60)
    r = replay([a[0], b[0], *a[1:], *b[1:]])
    assert (r.record, r.outcome, r.last, r.cut) == (rec(b1="a"), {"a": True, "b": False}, len(a), 0)
    killed = a[:2]  # a writer killed between its chunks: never counts, and a later write counts after it
    c = encode_write(NO_BASE, rec(b3="c"), "c", limit=60)
    r = replay(killed + c)
    assert (r.record, r.outcome) == (rec(b3="c"), {"c": True})
    # A commit whose chunk arrives only after it (or never) cannot be assembled: it does not count.
    r = replay([*a[:-2], a[-1], a[-2]])
    assert (r.record, r.outcome) == (th.empty_record(), {"a": False})


def test_first_format_messages_replay_by_their_own_rule() -> None:
    # 0 counts; 1 lost; 2 based on 0 counts (the first rule: base = last counted); then a new write.
    log = [
        legacy(NO_BASE, rec(b1="a"), "w0"),
        legacy(NO_BASE, rec(b2="b"), "w1"),
        legacy(0, rec(b3="c"), "w2"),
    ]
    log += encode_write(2, rec(b3="c", b4="d"), "w3")
    r = replay(log)
    assert (r.record, r.outcome) == (rec(b3="c", b4="d"), {"w0": True, "w1": False, "w2": True, "w3": True})
    # After a prefix removal a first-format message proves nothing: the record is unknown...
    r = replay(log[:3], start=2)
    assert (r.known, r.outcome) == (False, {"w2": None})
    # ...until a whole write of this format counts.
    assert replay(log, start=2).known


def test_a_prefix_removed_leaves_the_record_unknown_until_a_whole_write_counts() -> None:
    a = encode_write(-1, rec(b1="a"), "a", limit=60)
    b = encode_write(len(a) - 1, rec(b1="a", b2="b"), "b", limit=60)
    log = a + b
    full = replay(log)
    assert full.outcome == {"a": True, "b": True}
    for start in range(len(log) + 1):
        r = replay(log, start)
        if start <= len(a):  # b is whole after the cut
            assert (r.known, r.record, r.outcome["b"]) == (True, rec(b1="a", b2="b"), True)
        elif start < len(log):  # cut inside b: b's outcome is unknown, and so is the record
            assert (r.known, r.outcome) == (False, {"b": None})
        else:  # everything removed
            assert (r.known, r.outcome) == (False, {})
    # A compaction cuts at the first message of the last counted write: the record stays known.
    assert replay(log, full.cut).record == full.record


def test_replay_ignores_messages_fed_again_and_reads_a_jump_as_a_cut() -> None:
    (w0,) = encode_write(NO_BASE, rec(b1="a"), "w0")
    r = Replay()
    r.feed(0, w0)
    r.feed(0, encode_write(NO_BASE, rec(b1="other"), "w0")[0])
    r.start_at(0)
    assert (r.record, r.last, r.position) == (rec(b1="a"), 0, 1)
    r.feed(5, encode_write(4, rec(b2="b"), "w5")[0])  # offsets 1-4 were removed meanwhile
    assert (r.record, r.seen_from, r.known) == (rec(b2="b"), 5, True)


def test_decode_ignores_what_is_not_ours_and_refuses_what_it_does_not_understand() -> None:
    assert decode_message(None) is None
    assert decode_message(b"") is None
    assert decode_message(b"not json") is None
    assert decode_message(b'{"key":"another producer"}') is None  # no id: not ours, never counts
    assert decode_message(b'{"id":"x"}') is None
    assert decode_message(b"[1,2]") is None
    for ours_but_unknown in (
        b'{"base":"1","id":"x","record":{"version":1}}',
        b'{"base":true,"id":"x","record":{"version":1}}',
        b'{"base":1,"id":"x","record":{"version":2}}',  # a newer record format
        b'{"base":1,"id":"x","record":{"version":1},"chunk":0}',  # a first-format message with chunks
        b'{"base":1,"id":"x","record":{"version":1},"v":3}',  # a newer message format
        b'{"base":1,"id":"x","record":{"version":1},"v":2,"more":1}',  # a field this version does not know
        b'{"base":1,"id":"x","record":{"version":1},"lease":{"kind":"bogus"}}',
        b'{"chunk":-1,"id":"x","part":"","v":2}',
        b'{"chunk":0,"id":"x","part":1,"v":2}',
        b'{"base":1,"chunks":0,"id":"x","v":2}',
        b'{"base":1,"chunks":2,"id":"x","v":2,"record":{}}',
        orjson.dumps({"base": 1, "id": "x"}),
    ):
        with pytest.raises(OperationalError, match="does not understand"):
            decode_message(ours_but_unknown)
    # Whole chunks that do not make a record are refused too.
    log = [b'{"chunk":0,"id":"x","part":"{\\"ver","v":2}', b'{"base":-1,"chunks":1,"id":"x","v":2}']
    with pytest.raises(OperationalError, match="does not understand"):
        replay(log)


def test_the_lease_of_the_last_counted_write_is_the_logs() -> None:
    lease = {"kind": "setup", "run": "r1", "since": 1000.0}
    log = encode_write(NO_BASE, rec(b1="a"), "w0", lease) + encode_write(NO_BASE, rec(b2="b"), "w1")
    r = replay(log)  # w1 lost the race: its (absent) lease does not count
    assert (r.record, r.lease) == (rec(b1="a"), lease)
    watch = LeaseWatch()
    assert watch.holder(r.lease, "r1", 5.0) == "mine"
    assert watch.holder(r.lease, "r2", 5.0) == "other"
    assert watch.holder(r.lease, "r2", 5.0 + LEASE_SECONDS) == "free"  # not renewed: its holder was killed
    assert watch.holder(None, "r2", 0.0) == "free"
    r.feed(2, encode_write(1, rec(), "w3")[0])  # a write that ends it
    assert (r.record, r.lease) == (rec(), None)


# ------------------------------------------------------------------ concurrent writers, any interleaving

LIMIT = 110  # chunk messages of at most 110 bytes: records of two or more brokers are chunked


@dataclass
class Log:
    messages: list[bytes] = field(default_factory=list)
    start: int = 0  # messages before it were removed
    duplicates: list[bytes] = field(default_factory=list)


@dataclass
class Writer:
    """A RecordLog.transact of "add my key": read+compute, append each message, check."""

    key: str
    replay: Replay = field(default_factory=Replay)
    phase: str = "read"  # read -> send -> check -> (read | done); refused (unknown record); killed
    pending: list[bytes] = field(default_factory=list)
    write_id: str = ""
    attempt: int = 0

    def catch_up(self, log: Log) -> None:
        self.replay.start_at(log.start)
        for offset in range(self.replay.position, len(log.messages)):
            self.replay.feed(offset, log.messages[offset])

    def step(self, log: Log, duplicate: bool) -> None:
        self.catch_up(log)
        if self.phase == "read":
            if not self.replay.known:
                self.phase = "refused"
                return
            new = th.record_priors(self.replay.record, "brokers", self.key, {}, [LR])
            self.write_id = f"{self.key}-{self.attempt}"
            self.pending = encode_write(self.replay.last_end, new, self.write_id, limit=LIMIT)
            self.phase = "send"
        elif self.phase == "send":
            message = self.pending.pop(0)
            log.messages.append(message)
            if duplicate:  # a retried send: the same bytes again, delivered later
                log.duplicates.append(message)
            self.phase = "send" if self.pending else "check"
        elif self.phase == "check":
            counted = self.replay.outcome.get(self.write_id)
            self.attempt += 1
            self.phase = {True: "done", None: "refused"}.get(counted, "read")  # type: ignore[arg-type]


ACTIONS = st.tuples(
    st.integers(0, 9), st.sampled_from(["step", "dup", "deliver", "kill", "cut"]), st.integers(0, 99)
)


def run_schedule(
    writers: int, schedule: list[tuple[int, str, int]], cut_anywhere: bool
) -> tuple[Log, list[Writer]]:
    log, ws = Log(), [Writer(str(i + 1)) for i in range(writers)]
    for who, action, at in schedule:
        w = ws[who % writers]
        if action == "deliver" and log.duplicates:
            log.messages.append(log.duplicates.pop(0))
        elif action == "kill" and w.phase in ("send", "check"):
            w.phase = "killed"
        elif action == "cut" and cut_anywhere:  # someone removes a prefix, anywhere
            log.start = max(log.start, min(len(log.messages), log.start + at % 7))
        elif action == "cut" and w.phase == "done":  # a compaction by a writer whose write counted
            log.start = max(log.start, w.replay.cut)
        elif action in ("step", "dup") and w.phase not in ("done", "refused", "killed"):
            w.step(log, action == "dup")
    # Then each writer alone until it is done (what the writers' random backoff after a lost race gives:
    # two writers in lockstep could otherwise make each other lose for ever), late duplicates first.
    while log.duplicates:
        log.messages.append(log.duplicates.pop(0))
    for w in ws:
        for _ in range(1000):
            if w.phase in ("done", "refused", "killed"):
                break
            w.step(log, False)
    for w in ws:
        w.catch_up(log)
    return log, ws


def check_log(log: Log, ws: list[Writer]) -> Replay:
    full = replay(log.messages)  # the whole log, as if nothing had been removed
    assert full.known
    # Each write that counted adds its writer's key to the previous counted record (never two from the
    # same state, never a partial record): the counted records form one chain.
    chain: list[set[str]] = [set()]
    seen = Replay()
    for offset, value in enumerate(log.messages):
        seen.feed(offset, value)
        if seen.last == offset:
            keys = set(seen.record["brokers"])
            added = keys - chain[-1]
            assert chain[-1] <= keys and len(added) == 1, (chain[-1], keys)
            chain.append(keys)
    assert chain[-1] == set(full.record["brokers"])
    assert len(chain) - 1 == len(full.record["brokers"])
    for w in ws:  # a writer that believes it won: its change is there (no lost update)
        if w.phase == "done":
            assert w.key in full.record["brokers"]
        # What any replay of a cut log says about a write, the whole log says too; unknown is all it adds.
        for write_id, counted in w.replay.outcome.items():
            assert counted is None or full.outcome[write_id] is counted
        if w.replay.known:
            assert w.replay.record == full.record
    return full


@settings(max_examples=300, deadline=None)
@given(writers=st.integers(min_value=1, max_value=4), schedule=st.lists(ACTIONS, max_size=100))
def test_concurrent_chunked_writers_never_lose_a_change(
    writers: int, schedule: list[tuple[int, str, int]]
) -> None:
    log, ws = run_schedule(writers, schedule, cut_anywhere=False)
    full = check_log(log, ws)
    # Only compactions cut the log: no writer ever finds the record unknown; the survivors all finish.
    assert all(w.phase in ("done", "killed") for w in ws), [w.phase for w in ws]
    assert all(w.replay.known for w in ws)
    assert replay(log.messages, log.start).record == full.record


@settings(max_examples=300, deadline=None)
@given(writers=st.integers(min_value=1, max_value=4), schedule=st.lists(ACTIONS, max_size=100))
def test_prefixes_removed_anywhere_never_make_two_winners(
    writers: int, schedule: list[tuple[int, str, int]]
) -> None:
    log, ws = run_schedule(writers, schedule, cut_anywhere=True)
    full = check_log(log, ws)
    final = replay(log.messages, log.start)
    for write_id, counted in final.outcome.items():
        assert counted is None or full.outcome[write_id] is counted
    if final.known:
        assert final.record == full.record


def test_a_lease_is_over_only_when_seen_unrenewed_for_lease_seconds_by_its_observer() -> None:
    """Issue 30 item 18: whether another run's lease is over is told on the observer's own (monotonic)
    clock, from when it first saw that renewal; never by comparing the holder's wall clock (`since`)
    with its own. Worked by hand with LEASE_SECONDS = 30."""
    assert LEASE_SECONDS == 30.0
    watch = LeaseWatch()
    taken = {"kind": "setup", "run": "r1", "since": 1000.0}
    # A holder whose wall clock is an hour behind ours (or a lease taken an hour ago and renewed since):
    # just seen, so held, and held until we have seen it unrenewed for 30 s.
    assert watch.holder(taken, "r2", 7_000.0) == "other"
    assert watch.holder(taken, "r2", 7_029.9) == "other"
    # Renewed at second 20 (a new `since`): the count starts again from when we see the renewal.
    renewed = {**taken, "since": 1020.0}
    assert watch.holder(renewed, "r2", 7_020.0) == "other"
    assert watch.holder(renewed, "r2", 7_049.9) == "other"
    assert watch.holder(renewed, "r2", 7_050.0) == "free"
    # A holder whose clock is an hour ahead of ours does not hold its lease any longer than that.
    ahead = LeaseWatch()
    future = {"kind": "clear", "run": "r3", "since": 1e12}
    assert ahead.holder(future, "r2", 10.0) == "other"
    assert ahead.holder(future, "r2", 40.0) == "free"
    # Our own lease is ours however old; no lease is free.
    assert ahead.holder(taken, "r1", 1e9) == "mine"
    assert ahead.holder(None, "r1", 0.0) == "free"
