"""Disks in the snapshot (issue 27, item 1): each broker's log dirs (bytes held, future bytes apart, total and
usable bytes, offline, cordoned) and which dir holds each replica, in the document and JSON-lines forms.

Old snapshots (tests/fixtures/snapshots/before-disks.json{,l}, written by the code before this change)
load as before and are written back byte for byte; the new fields round-trip through both forms; the
brokers' DescribeLogDirs answers become log dirs as worked out by hand below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core import disks, snapshot, snapshot_lines
from reassign_cli.core.model import Broker, Capacity, ClusterState, LogDir, Topic
from reassign_cli.errors import InvalidInputError

FIXTURES = Path(__file__).parent.parent / "fixtures" / "snapshots"


def _lines(state: ClusterState) -> bytes:
    return b"".join(snapshot_lines.dump_lines(state))


# --------------------------------------------------------------------------------------------- old files


@pytest.mark.parametrize("name", ["before-disks.json", "before-disks.jsonl"])
@pytest.mark.parametrize("chunk", [8, 64 << 10])
def test_old_snapshot_loads_as_before(name: str, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(snapshot_lines, "CHUNK_BYTES", chunk)
    data = (FIXTURES / name).read_bytes()
    lines = name.endswith(".jsonl")
    state = (snapshot_lines.loads if lines else snapshot.loads)(data)
    assert state.disks == {}
    assert all(not t.dirs and not t.future_dirs for t in state.topics.values())
    assert (_lines(state) if lines else snapshot.dumps(state)) == data  # written back byte for byte
    # what the file says, read by hand
    assert state.capacities == {1: Capacity(2000, 900), 2: Capacity(1000, 400), 3: Capacity(500, 500)}
    assert [state.capacities[b].shared for b in (1, 2, 3)] == [False, True, None]
    alpha, beta = state.topics["alpha"], state.topics["beta"]
    assert dict(alpha.replicas) == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    assert alpha.sizes == {0: 1048576, 1: 0} and alpha.leader == {0: 1, 1: 2, 2: -1}
    assert beta.adding == {0: [3]} and beta.removing == {0: [2]}
    assert state.reassignment == {("beta", 0): [3, 1]} and state.deleting == frozenset({"gone"})


# --------------------------------------------------------------------------------------------- from answers


def _part(p: int, size: int, future: bool = False) -> dict[str, Any]:
    return {"partition_index": p, "partition_size": size, "offset_lag": 0, "is_future_key": future}


def _dir(path: str, topics: dict[str, list[dict[str, Any]]], total: int = -1, usable: int = -1,
         code: int = 0, cordoned: bool = False) -> dict[str, Any]:  # fmt: skip
    return {
        "log_dir": path,
        "error_code": code,
        "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
        "total_bytes": total,
        "usable_bytes": usable,
        "is_cordoned": cordoned,
    }


def _storage(code: int) -> str:
    assert code == 56
    return "KAFKA_STORAGE_ERROR"


def test_broker_dirs_from_an_answer() -> None:
    """Broker 1: /k/d1 holds t-0 (100 B) and a future copy of t-1 (30 B) being moved in from /k/d0, which
    holds t-1 (70 B) and u-0 (5 B); /k/d2 is offline. Listed out of order: sorted by path."""
    answer = [
        _dir("/k/d1", {"t": [_part(0, 100), _part(1, 30, True)]}, 1000, 600),
        _dir("/k/d2", {}, code=56),
        _dir("/k/d0", {"t": [_part(1, 70)], "u": [_part(0, 5)]}, 2000, 1500),
    ]
    dirs, located = disks.broker_dirs(answer, disks.cordoned_paths("/k/d0/,/elsewhere"), _storage)
    assert dirs == (
        LogDir("/k/d0", False, None, 75, 0, 2000, 1500, True),
        LogDir("/k/d1", False, None, 100, 30, 1000, 600, False),
        LogDir("/k/d2", True, "KAFKA_STORAGE_ERROR", None, None, None, None, False),
    )
    assert located == {("t", 0): (1, None, 100), ("t", 1): (0, 1, 70), ("u", 0): (0, None, 5)}


def test_cordoned_config_and_describe_log_dirs() -> None:
    assert disks.cordoned_paths(None) is None  # no such config: Kafka before 4.3
    assert disks.is_cordoned("/a", None) is None
    assert disks.is_cordoned("/a", None, reported=True) is True  # DescribeLogDirs v5's IsCordoned
    assert disks.is_cordoned("/a", disks.cordoned_paths("")) is False
    assert disks.is_cordoned("/a/./b", disks.cordoned_paths(" /x, /a/b/ ")) is True
    assert disks.is_cordoned("/c", disks.cordoned_paths("*")) is True


def test_locate_and_sizes() -> None:
    """Replica -> dir index per partition, None where a broker did not answer or has no such replica."""
    state = ClusterState([Broker(1), Broker(2), Broker(3)], {"t": Topic("t", {0: [1, 2], 1: [2, 3], 2: [3]})})
    d1, l1 = disks.broker_dirs([_dir("/a", {"t": [_part(0, 10)]}), _dir("/b", {})], None, _storage)
    d2, l2 = disks.broker_dirs(
        [_dir("/c", {"t": [_part(0, 9), _part(1, 4), _part(1, 4, True)]})], None, _storage
    )
    disks.locate(state, {2: d2, 1: d1}, {1: l1, 2: l2})  # broker 3 did not answer
    t = state.topics["t"]
    assert list(state.disks) == [1, 2]
    assert t.dirs == {0: [0, 0], 1: [0, None]} and t.future_dirs == {1: [0, None]}
    sizes = disks.replica_sizes({1: l1, 2: l2}, [("t", 0, 1), ("t", 0, 2), ("t", 1, 2), ("t", 1, 3)])
    assert sizes == {("t", 0, 1): 10, ("t", 0, 2): 9, ("t", 1, 2): 4}
    doc = orjson.loads(snapshot.dumps(state))
    assert doc["brokers"][0]["log_dirs"] == [
        {"path": "/a", "offline": False, "cordoned": None, "bytes": 10, "future_bytes": 0},
        {"path": "/b", "offline": False, "cordoned": None, "bytes": 0, "future_bytes": 0},
    ]
    assert "log_dirs" not in doc["brokers"][2]
    assert doc["topics"][0]["partitions"] == [
        {"partition": 0, "replicas": [1, 2], "dirs": [0, 0]},
        {"partition": 1, "replicas": [2, 3], "dirs": [0, None], "future_dirs": [0, None]},
        {"partition": 2, "replicas": [3]},
    ]


# --------------------------------------------------------------------------------------------- round trips

PATHS = st.lists(st.sampled_from(["/d0", "/d1", "/data/x", "/mnt/disk-2", "/v/ü"]), unique=True, max_size=4)
BYTES = st.none() | st.integers(0, 2**62)


@st.composite
def log_dir(draw: st.DrawFn, path: str) -> LogDir:
    if draw(st.booleans()):
        return LogDir(path, True, draw(st.sampled_from(["KAFKA_STORAGE_ERROR", "UNKNOWN"])),
                      cordoned=draw(st.none() | st.booleans()))  # fmt: skip
    return LogDir(path, False, None, draw(BYTES), draw(BYTES), draw(BYTES), draw(BYTES),
                  draw(st.none() | st.booleans()))  # fmt: skip


@st.composite
def layouts(draw: st.DrawFn) -> ClusterState:
    """Random brokers, each with log dirs or none known, and topics whose replicas are located in them."""
    ids = draw(st.lists(st.integers(0, 6), min_size=3, max_size=5, unique=True))
    dirs = {b: tuple(draw(log_dir(p)) for p in draw(PATHS)) for b in ids if draw(st.booleans())}
    topics: dict[str, Topic] = {}
    for name in draw(st.lists(st.sampled_from(["a", "b.c", "d-e", "f_g"]), unique=True, max_size=3)):
        replicas: dict[int, list[int]] = {}
        located: dict[int, list[int | None]] = {}
        futures: dict[int, list[int | None]] = {}
        rf = draw(st.integers(1, 3))  # one replication factor per topic, as Kafka's
        for p in range(draw(st.integers(0, 4))):
            reps = draw(st.lists(st.sampled_from([*ids, 99]), min_size=rf, max_size=rf, unique=True))
            replicas[p] = reps
            for into in (located, futures):
                idx = [
                    draw(st.none() | st.integers(0, len(dirs[b]) - 1)) if dirs.get(b) else None for b in reps
                ]
                if any(i is not None for i in idx):
                    into[p] = idx
        topics[name] = Topic(name, replicas, sizes={p: 7 for p in replicas if p % 2}, dirs=located,
                             future_dirs=futures)  # fmt: skip
    return ClusterState([Broker(b) for b in sorted(ids)], topics, disks=dirs)


def _same(a: ClusterState, b: ClusterState) -> None:
    assert a.disks == b.disks
    assert sorted(a.topics) == sorted(b.topics)
    for name, t in a.topics.items():
        u = b.topics[name]
        assert {p: list(r) for p, r in t.replicas.items()} == {p: list(r) for p, r in u.replicas.items()}
        assert (t.dirs, t.future_dirs, t.sizes) == (u.dirs, u.future_dirs, u.sizes)


@settings(max_examples=150, deadline=None)
@given(layouts(), st.sampled_from([1, 16, 64 << 10]))
def test_round_trip_document_and_lines(state: ClusterState, chunk: int) -> None:
    old = snapshot.CHUNK_BYTES, snapshot_lines.CHUNK_BYTES
    snapshot.CHUNK_BYTES = snapshot_lines.CHUNK_BYTES = chunk  # chunk boundaries anywhere
    try:
        doc, lines = snapshot.dumps(state), _lines(state)
        assert snapshot.dumps(state) == doc and _lines(state) == lines  # deterministic
        from_doc, from_lines = snapshot.loads(doc), snapshot_lines.loads(lines)
        _same(state, from_doc)
        _same(state, from_lines)
        assert snapshot.dumps(from_lines) == doc and _lines(from_doc) == lines
        assert snapshot.loads(doc.decode()).disks == state.disks  # str input: the whole-parse path
    finally:
        snapshot.CHUNK_BYTES, snapshot_lines.CHUNK_BYTES = old


def test_dirs_not_read_for_planning_unless_asked() -> None:
    """Planning loads (partition_state=False) skip the replicas' dirs unless replica_dirs=True; the
    brokers' log dirs are always read."""
    state = ClusterState([Broker(1)], {"t": Topic("t", {0: [1]}, dirs={0: [0]})}, disks={1: (LogDir("/a"),)})
    for data, loads in ((snapshot.dumps(state), snapshot.loads), (_lines(state), snapshot_lines.loads)):
        plain = loads(data, partition_state=False)
        assert plain.topics["t"].dirs == {} and plain.disks == state.disks
        assert loads(data, partition_state=False, replica_dirs=True).topics["t"].dirs == {0: [0]}


@pytest.mark.parametrize("broker", [0, 3, 4194303, 4194304, 1 << 40])
def test_dirs_read_whatever_the_broker_id(broker: int) -> None:
    """The replicas' dirs are checked against their broker's log dirs by a lookup table for the usual ids
    and by bisection beyond (snapshot._dirs_ok): both read the same dirs; a replica on a broker with no
    log dirs known may only be null."""
    state = ClusterState(
        [Broker(broker), Broker(broker + 1)],
        {
            "t": Topic(
                "t", {0: [broker, broker + 1], 1: [broker + 1, broker]}, dirs={0: [1, None], 1: [None, 0]}
            )
        },
        disks={broker: (LogDir("/a"), LogDir("/b"))},
    )
    for chunk in (1, 64 << 10):
        old, snapshot.CHUNK_BYTES = snapshot.CHUNK_BYTES, chunk
        try:
            got = snapshot.loads(snapshot.dumps(state), partition_state=False, replica_dirs=True)
        finally:
            snapshot.CHUNK_BYTES = old
        assert got.topics["t"].dirs == {0: [1, None], 1: [None, 0]}


# --------------------------------------------------------------------------------------------- rejections

_BROKER = '{"id":1,"log_dirs":[{"path":"/a","offline":false,"cordoned":null},{"path":"/b"}]}'


def _doc(broker: str, partition: str = '{"partition":0,"replicas":[1],"dirs":[1]}') -> bytes:
    return (
        f'{{"version":1,"brokers":[{broker}],"topics":[{{"topic":"t","partitions":[{partition}]}}]}}'.encode()
    )


@pytest.mark.parametrize(
    ("broker", "partition", "message"),
    [
        ('{"id":1,"log_dirs":{}}', None, 'broker 1: "log_dirs" must be a list'),
        ('{"id":1,"log_dirs":[{"offline":true}]}', None, 'broker 1: log_dirs[0] needs a "path"'),
        ('{"id":1,"log_dirs":[{"path":"/a"},{"path":"/a"}]}', None, "a log dir is listed twice"),
        ('{"id":1,"log_dirs":[{"path":"/a","offline":1}]}', None, '"offline" must be true or false'),
        ('{"id":1,"log_dirs":[{"path":"/a","cordoned":"yes"}]}', None, '"cordoned" true, false or null'),
        ('{"id":1,"log_dirs":[{"path":"/a","bytes":-1}]}', None, "must be non-negative integers"),
        ('{"id":1,"log_dirs":[{"path":"/a","error":5}]}', None, '"error" must be a string'),
        (_BROKER, '{"partition":0,"replicas":[1],"dirs":[2]}', "2 is not the index of one of broker 1's 2"),
        (_BROKER, '{"partition":0,"replicas":[1],"dirs":[0,1]}', '"dirs" must list a log dir index or null'),
        (_BROKER, '{"partition":0,"replicas":[1],"future_dirs":[-1]}', '"future_dirs": -1 is not the index'),
        ('{"id":1}', '{"partition":0,"replicas":[1],"dirs":[0]}', "of broker 1's 0 log dirs"),
        # a broker above the largest with log dirs; a broker id too large for a lookup table (bisected)
        (_BROKER, '{"partition":0,"replicas":[7],"dirs":[0]}', "0 is not the index of one of broker 7's 0"),
        (
            _BROKER.replace('"id":1', '"id":4194304'),
            '{"partition":0,"replicas":[4194304],"dirs":[2]}',
            "2 is not the index of one of broker 4194304's 2",
        ),
    ],
)
def test_rejections(broker: str, partition: str | None, message: str) -> None:
    data = _doc(broker, partition) if partition else _doc(broker, '{"partition":0,"replicas":[1]}')
    with pytest.raises(InvalidInputError, match=r"^snapshot file: ") as e:
        snapshot.loads(data)
    assert message in str(e.value)
    head, topic = orjson.loads(data), orjson.loads(data)["topics"][0]
    del head["topics"]
    lines = orjson.dumps({"format": "jsonl", **head}) + b"\n" + orjson.dumps(topic) + b"\n"
    with pytest.raises(InvalidInputError) as e:
        snapshot_lines.loads(lines)
    assert message in str(e.value)
    assert ("line 2:" if partition else "line 1:") in str(e.value)


@settings(max_examples=40, deadline=None)
@given(layouts(), st.integers(0, 2**16))
def test_disks_do_not_change_the_plan(state: ClusterState, seed: int) -> None:
    """Nothing plans with the log dirs yet: a snapshot with them plans like the same one without."""
    from reassign_cli.planning.plan import GenerateRequest, generate_plan

    names = sorted(n for n, t in state.topics.items() if t.replicas)
    if not names:
        return
    bare = ClusterState(
        state.brokers, {n: Topic(n, dict(t.replicas), sizes=t.sizes) for n, t in state.topics.items()}
    )
    req = GenerateRequest(names, [b.id for b in state.brokers], seed=seed)
    plans = []
    for s in (state, bare):
        loaded = snapshot.loads(snapshot.dumps(s), partition_state=False)
        plans.append(generate_plan(loaded, req).proposed)
    assert plans[0] == plans[1]
