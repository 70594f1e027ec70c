"""core/stored_plan.py: the stored plan's bytes, transitions and lease (issue 25). Expected values by hand."""

from __future__ import annotations

import base64
import dataclasses
import hashlib

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import PlanEntry
from reassign_cli.core.record_log import NO_BASE, Replay, encode_write
from reassign_cli.errors import BusyError, ExitCode, OperationalError

PLAN = b'{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2]}]}\n'


def make(n: int = 3, sizes: list[int | None] | None = None) -> sp.StoredPlan:
    entries = [PlanEntry("t", i, [1, 2], None) for i in range(n)]
    origin = sp.Origin("host-a", "ops", 1_790_000_000.0)
    return sp.new_plan(PLAN, entries, pc.Pace(2, "as-planned", throttle=10_000_000), origin, sizes)


def roundtrip(plan: sp.StoredPlan, limit: int = 1000) -> sp.StoredPlan:
    head, chunks = sp.encode(plan, limit)
    return sp.decode(head, b"".join(chunks))


def test_head_bytes_worked_out_by_hand() -> None:
    plan = sp.mark_started(make(3), [("t", 0), ("t", 2)], 1_790_000_010.0)
    plan = sp.mark_done(plan, [("t", 2)], 1_790_000_020.0)
    content = sp.encode_content(plan)
    assert content == (
        b'{"entries":[["t",0,[1,2],null,null],["t",1,[1,2],null,null],["t",2,[1,2],null,null]],"v":1}'
    )
    head = orjson.loads(sp.encode_head(plan, content, 1, "x"))
    # bit i of byte i//8 is entry i: started {0, 2} = 0b101 = 5, done {2} = 0b100 = 4
    assert head["started"] == base64.b64encode(bytes([5])).decode() == "BQ=="
    assert head["done"] == "BA=="
    assert head["plan_sha256"] == hashlib.sha256(PLAN).hexdigest()
    assert head["content"] == {
        "sha256": hashlib.sha256(content).hexdigest(),
        "bytes": len(content),
        "chunks": 1,
        "where": "x",
    }
    assert head["pace"] == {
        "max_moves_per_broker": 2,
        "order": "as-planned",
        "batch_size": None,
        "throttle": 10_000_000,
        "replica_alter_log_dirs_throttle": None,
    }
    assert head["origin"] == {"host": "host-a", "user": "ops", "at": 1_790_000_000.0}
    assert head["updated"] == 1_790_000_020.0 and head["created"] == 1_790_000_000.0
    assert head["lease"] is None and head["last_step"] is None and head["v"] == 1


def test_never_start_twice() -> None:
    plan = sp.mark_started(make(3), [("t", 0)], 1.0)
    with pytest.raises(sp.StartedTwice, match=r"already started.*t-0"):
        sp.mark_started(plan, [("t", 1), ("t", 0)], 2.0)
    done = sp.mark_done(plan, [("t", 0)], 3.0)
    with pytest.raises(sp.StartedTwice, match="t-0"):
        sp.mark_started(done, [("t", 0)], 4.0)
    with pytest.raises(sp.StartedTwice, match="not in the stored plan: u-0"):
        sp.mark_started(plan, [("u", 0)], 2.0)


def test_done_without_start_is_recorded_as_both() -> None:
    plan = sp.mark_done(make(3), [("t", 1)], 1.0)
    assert plan.started == plan.done == {("t", 1)}


def test_progress_counts_and_bytes() -> None:
    plan = make(4, [100, 200, 300, 400])
    plan = sp.mark_started(plan, [("t", 0), ("t", 1), ("t", 2)], 1.0)
    plan = sp.mark_done(plan, [("t", 0)], 2.0)
    p = sp.progress(plan)
    assert (p.total, p.moving, p.queued, p.done) == (4, 2, 1, 1)
    assert (p.bytes_total, p.bytes_done, p.bytes_moving) == (1000, 100, 500)
    assert sp.progress(make(2, [5, None])).bytes_total is None


def test_conflict_message_by_hand() -> None:
    stored = sp.mark_started(make(3), [("t", 0)], 1.0)
    assert sp.conflict(stored, hashlib.sha256(PLAN).hexdigest()) is None  # same bytes: a resume
    err = sp.conflict(stored, hashlib.sha256(b"other").hexdigest(), [("--zookeeper", "zk:2181/k 1")])
    assert isinstance(err, BusyError) and err.exit_code == ExitCode.BUSY
    digest = hashlib.sha256(PLAN).hexdigest()[:12]
    # 1,790,000,000 s = 2026-09-21T14:13:20Z (20,717 days and 51,200 s after 1970-01-01)
    assert str(err) == (
        f"another plan is stored in the cluster and runs paced: 3 partition(s), plan SHA-256 {digest}, "
        "stored by ops@host-a at 2026-09-21T14:13:20Z; 1 moving, 2 queued, 0 done; nothing was started"
    )
    assert err.hint == "Let it finish, or cancel it with: kafka-reassign cancel --zookeeper 'zk:2181/k 1'"


def test_unknown_version_is_one_line() -> None:
    head, chunks = sp.encode(make(1), 100)
    doc = orjson.loads(head)
    doc["v"] = 7
    with pytest.raises(sp.StoredPlanError, match="format version 7, which this version of kafka-reassign"):
        sp.decode(orjson.dumps(doc), b"".join(chunks))


def test_content_not_the_heads_is_refused() -> None:
    head, _ = sp.encode(make(2), 100)
    _, other = sp.encode(make(3), 100)
    with pytest.raises(sp.StoredPlanError, match="does not match its head"):
        sp.decode(head, b"".join(other))


def test_schedule_and_paused_must_be_objects() -> None:
    head, chunks = sp.encode(make(1), 100)
    doc = orjson.loads(head)
    doc["paused"] = [1]
    with pytest.raises(sp.StoredPlanError, match="malformed"):
        sp.decode(orjson.dumps(doc), b"".join(chunks))


def test_lease_take_renew_stale_takeover() -> None:
    a, b = sp.Lease("run-a", "h1", 10), sp.Lease("run-b", "h2", 20)
    watch_b = sp.watch()
    plan = sp.take_lease(make(1), a, sp.watch(), 0.0)
    assert plan is not None and plan.lease == a
    assert sp.take_lease(plan, b, watch_b, 100.0) is None  # first seen at b's 100.0
    assert sp.take_lease(plan, b, watch_b, 100.0 + sp.STALE_SECONDS - 0.01) is None
    renewed = sp.renew_lease(plan, "run-a")
    assert renewed.lease is not None and renewed.lease.renewals == 1
    # a renewal starts b's count again
    assert sp.take_lease(renewed, b, watch_b, 100.0 + sp.STALE_SECONDS) is None
    taken = sp.take_lease(renewed, b, watch_b, 100.0 + 2 * sp.STALE_SECONDS)
    assert taken is not None and taken.lease == sp.Lease("run-b", "h2", 20, 2)
    with pytest.raises(sp.LeaseLost, match=r"run run-b \(pid 20 on h2\) drives it now"):
        sp.renew_lease(taken, "run-a")
    assert sp.release_lease(taken, "run-a") == taken
    assert sp.release_lease(taken, "run-b").lease is None


names = st.text(alphabet="abcxyz._-", min_size=1, max_size=8)
entry = st.tuples(names, st.integers(0, 50), st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True))


@st.composite
def plans(draw: st.DrawFn) -> sp.StoredPlan:
    rows = draw(st.lists(entry, max_size=40, unique_by=lambda r: (r[0], r[1])))
    entries = [PlanEntry(t, p, r, draw(st.none() | st.just(["any"] * len(r)))) for t, p, r in rows]
    sizes = [draw(st.none() | st.integers(0, 2**50)) for _ in rows]
    origin = sp.Origin(draw(names), draw(names), draw(st.floats(0, 2e9)))
    cap = draw(st.integers(1, 10))
    plan = sp.new_plan(draw(st.binary()), entries, pc.Pace(cap, None), origin, sizes, {"hours": draw(names)})
    tps = plan.moves
    started = draw(st.sets(st.sampled_from(tps))) if tps else set()
    plan = sp.mark_started(plan, started, 1.0)
    done = draw(st.sets(st.sampled_from(sorted(started)))) if started else set()
    plan = sp.mark_done(plan, done, 2.0)
    if draw(st.booleans()):
        plan = sp.stepped(plan, 3.0, draw(st.none() | st.integers(0, 99)))
    if draw(st.booleans()):
        plan = sp.take_lease(
            plan, sp.Lease(draw(names), draw(names), draw(st.integers(1, 99999))), sp.watch(), 0
        )
    assert plan is not None
    return plan


@settings(max_examples=150, deadline=None)
@given(plans(), st.integers(1, 300))
def test_roundtrip_deterministic_and_chunked(plan: sp.StoredPlan, limit: int) -> None:
    head, chunks = sp.encode(plan, limit)
    assert all(len(c) <= limit for c in chunks)
    assert sp.content_ref(head).chunks == len(chunks)
    assert sp.decode(head, b"".join(chunks)) == plan
    again = sp.decode(head, b"".join(chunks))
    assert sp.encode(again, limit) == (head, chunks)  # the same plan, the same bytes


@given(st.binary(max_size=2000), st.integers(1, 500))
def test_split_and_join(data: bytes, limit: int) -> None:
    parts = sp.split(data, limit)
    assert b"".join(parts) == data
    assert all(1 <= len(p) <= limit for p in parts) or data == b""
    assert len(parts) == max(1, -(-len(data) // limit))


def replay_log(log: list[bytes], start: int = 0) -> Replay:
    r = Replay(codec=sp.LOG, record={})
    r.start_at(start)
    for offset in range(start, len(log)):
        r.feed(offset, log[offset])
    return r


def test_topic_log_carries_the_content_and_never_compacts_it_away() -> None:
    plan = make(40)
    ref = sp.content_ref(sp.encode(plan, 10**6)[0])
    plan = dataclasses.replace(plan, content_ref=ref)
    log = encode_write(NO_BASE, sp.log_doc(plan, True), "c", limit=600, codec=sp.LOG)
    assert len(log) > 2  # chunks, then the commit: offsets 0 .. len-1
    created = len(log) - 1
    one = sp.mark_started(plan, [("t", 0)], 2.0)
    log += encode_write(created, sp.log_doc(one, False), "h1", codec=sp.LOG)  # counts
    lost = sp.mark_started(plan, [("t", 1)], 2.0)
    log += encode_write(created, sp.log_doc(lost, False), "h2", codec=sp.LOG)  # its base is not the last end
    two = sp.mark_done(one, [("t", 0)], 3.0)
    log += encode_write(created + 2, sp.log_doc(two, False), "h3", codec=sp.LOG)
    r = replay_log(log)
    assert r.outcome == {"c": True, "h1": True, "h2": False, "h3": True}
    assert sp.from_log_doc(r.record) == two
    assert r.cut == 0  # the create's base + 1: a compaction keeps the content's write
    assert sp.from_log_doc(replay_log(log, start=r.cut).record) == two
    # the content's write removed (by hand): the head alone is refused, not guessed from
    with pytest.raises(sp.StoredPlanError, match="content is no longer in __reassign_cli_plan"):
        sp.from_log_doc(replay_log(log, start=created + 1).record)
    log += encode_write(created + 3, {}, "d", codec=sp.LOG)  # deleted
    r = replay_log(log)
    assert sp.from_log_doc(r.record) is None and r.cut == created + 4


def test_topic_log_refuses_what_it_does_not_understand() -> None:
    (value,) = encode_write(NO_BASE, {"other": {}}, "x", codec=sp.LOG)
    with pytest.raises(OperationalError, match="__reassign_cli_plan holds a message this version"):
        replay_log([value])


def test_topic_log_writer_killed_between_chunks_leaves_nothing_stored() -> None:
    plan, other = make(40), make(30)
    partial = encode_write(NO_BASE, sp.log_doc(plan, True), "dead", limit=600, codec=sp.LOG)[:-2]
    r = replay_log(partial)
    assert sp.from_log_doc(r.record) is None and r.last_end == NO_BASE  # no write ended: nothing stored
    log = partial + encode_write(NO_BASE, sp.log_doc(other, True), "next", limit=600, codec=sp.LOG)
    r = replay_log(log)
    assert r.outcome == {"next": True} and sp.from_log_doc(r.record) == other


def test_a_content_read_again_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `verify` step reads the stored plan three times (is one stored? the lease taken, the lease
    released): the content (1.7 MB at 20,000 partitions, written once) is parsed once per process; only
    the head, which every write changes, is decoded each time. Another content is parsed anew."""
    monkeypatch.setattr(sp, "_PARSED", {}, raising=False)  # what earlier tests decoded is not counted
    calls: list[int] = []
    real = sp._entries

    def counted(body: dict[str, object]) -> tuple[tuple[PlanEntry, ...], tuple[int | None, ...]]:
        calls.append(1)
        return real(body)

    monkeypatch.setattr(sp, "_entries", counted)
    plan = make(3)
    head, chunks = sp.encode(plan, 1000)
    content = b"".join(chunks)
    first = sp.decode(head, content)
    moved = sp.mark_started(first, [("t", 0)], 5.0)
    again = sp.decode(sp.encode_head(moved, content, len(chunks)), content)
    assert calls == [1]
    assert again.started == frozenset({("t", 0)}) and first.started == frozenset()
    assert again.entries == plan.entries and again.sizes == plan.sizes
    other = make(2)
    h2, c2 = sp.encode(other, 1000)
    assert sp.decode(h2, b"".join(c2)).entries == other.entries
    assert calls == [1, 1]
