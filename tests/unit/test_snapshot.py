"""The snapshot file format (reassign_cli/core/snapshot.py): exact bytes, round trips, every rejection."""

from __future__ import annotations

import gc

import orjson
import pytest

from reassign_cli.core import snapshot
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.errors import ExitCode, InvalidInputError
from reassign_cli.planning.plan import GenerateRequest, generate_plan


def reassigning_state() -> ClusterState:
    """Brokers with a null rack among them is not plannable rack-aware, so racks are all set here; one
    topic mid-reassignment (RS = target + origin), one plain, one queued for deletion."""
    moving = Topic(
        "moving",
        {0: [4, 1, 2], 1: [2, 3]},
        adding={0: [4]},
        removing={0: [2]},
        isr={0: [1, 2], 1: [2, 3]},
        leader={0: 1, 1: 2},
        topic_id="AAAAAAAAAAAAAAAAAAAAAQ",
    )
    plain = Topic("plain", {1: [3, 1], 0: [1, 2]}, isr={0: [1, 2]}, leader={0: -1})
    old = Topic("old", {0: [1]})
    return ClusterState(
        brokers=[Broker(1, "r1"), Broker(2, "r2"), Broker(3, "r1"), Broker(4, "r2")],
        topics={"plain": plain, "moving": moving, "old": old},
        deleting=frozenset({"old"}),
        reassignment={("moving", 0): [4, 1]},
    )


EXPECTED = (
    b'{"version":1,"brokers":[{"id":1,"rack":"r1"},{"id":2,"rack":"r2"},{"id":3,"rack":"r1"},'
    b'{"id":4,"rack":"r2"}],"deleting":["old"],'
    b'"reassignment":[{"topic":"moving","partition":0,"replicas":[4,1]}],"topics":['
    b'{"topic":"moving","topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":['
    b'{"partition":0,"replicas":[4,1,2],"isr":[1,2],"leader":1,"adding_replicas":[4],"removing_replicas":[2]},'
    b'{"partition":1,"replicas":[2,3],"isr":[2,3],"leader":2}]},'
    b'{"topic":"old","partitions":[{"partition":0,"replicas":[1]}]},'
    b'{"topic":"plain","partitions":[{"partition":0,"replicas":[1,2],"isr":[1,2],"leader":-1},'
    b'{"partition":1,"replicas":[3,1]}]}]}\n'
)


def test_dumps_exact_bytes_sorted() -> None:
    assert snapshot.dumps(reassigning_state()) == EXPECTED


def test_round_trip_keeps_everything() -> None:
    state = reassigning_state()
    back = snapshot.loads(snapshot.dumps(state))
    assert back.brokers == state.brokers
    assert back.deleting == state.deleting
    assert back.reassignment == state.reassignment
    assert set(back.topics) == set(state.topics)
    for name, t in state.topics.items():
        b = back.topics[name]
        assert (b.replicas, b.adding, b.removing, b.isr, b.leader, b.topic_id) == (
            t.replicas,
            t.adding,
            t.removing,
            t.isr,
            t.leader,
            t.topic_id,
        )
    assert snapshot.dumps(back) == EXPECTED


def test_without_partition_state_keeps_reassignment_fields() -> None:
    back = snapshot.loads(EXPECTED, partition_state=False)
    m = back.topics["moving"]
    assert m.isr == {} and m.leader == {}
    assert m.adding == {0: [4]} and m.removing == {0: [2]}
    assert m.target(0) == [4, 1]


def test_minimal_document_null_rack_and_no_optional_fields() -> None:
    doc = b'{"version":1,"brokers":[{"id":2},{"id":1,"rack":null}],"topics":[{"topic":"t","partitions":[]}]}'
    st = snapshot.loads(doc)
    assert st.brokers == [Broker(1, None), Broker(2, None)]  # sorted by id
    assert st.topics["t"].replicas == {}
    assert st.deleting == frozenset() and st.reassignment is None
    # and written back without "rack" for rack-less brokers and without "reassignment"
    assert snapshot.dumps(st) == (
        b'{"version":1,"brokers":[{"id":1},{"id":2}],"deleting":[],"topics":[{"topic":"t","partitions":[]}]}\n'
    )


def test_plans_the_same_as_the_state_it_came_from() -> None:
    """A snapshot taken during a reassignment plans like live: RF from the target replicas, same draws."""
    state = reassigning_state()
    state.deleting = frozenset()
    back = snapshot.loads(snapshot.dumps(state), partition_state=False)
    req = GenerateRequest(["moving", "plain", "old"], [1, 2, 3, 4], True, 99)
    a, b = generate_plan(state, req), generate_plan(back, req)
    assert a.proposed == b.proposed and a.current == b.current
    assert {len(r) for r in a.proposed["moving"].values()} == {2}  # target RF, not the inflated RS


@pytest.mark.parametrize("enabled", [True, False])
def test_gc_state_restored(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        snapshot.loads(EXPECTED)
        assert gc.isenabled() is enabled
        with pytest.raises(InvalidInputError):
            snapshot.loads(b'{"version":1,"brokers":[],"topics":[{"topic":"t"}]}')
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def _doc(**over: object) -> bytes:
    base: dict[str, object] = {
        "version": 1,
        "brokers": [{"id": 1, "rack": "r1"}],
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "replicas": [1]}]}],
    }
    base.update(over)
    return orjson.dumps(base)


def _topic(**part: object) -> list[object]:
    return [{"topic": "t", "partitions": [{"partition": 0, "replicas": [1], **part}]}]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", "snapshot file: not valid JSON: "),
        (b"[]", "snapshot file: expected a JSON object"),
        (_doc(version=2), "snapshot file: unsupported version 2 (expected 1)"),
        (_doc(version=True), "snapshot file: unsupported version True (expected 1)"),
        (_doc(brokers={}), 'snapshot file: "brokers" must be a list'),
        (_doc(topics=None), 'snapshot file: "topics" must be a list'),
        (_doc(brokers=[{"id": "1"}]), 'snapshot file: brokers[0] needs an integer "id"'),
        (_doc(brokers=[{"id": 1, "rack": 5}]), 'snapshot file: broker 1: "rack" must be a string or null'),
        (_doc(brokers=[{"id": 2}, {"id": 2}]), "snapshot file: broker 2 is listed twice"),
        (_doc(deleting="t"), 'snapshot file: "deleting" must be a list of topic names'),
        (_doc(reassignment=[{"topic": "t"}]), 'snapshot file: reassignment[0] needs "topic", "partition"'),
        (_doc(topics=[{"partitions": []}]), 'snapshot file: topics[0] needs a "topic" name'),
        (_doc(topics=[{"topic": 3, "partitions": []}]), 'snapshot file: topics[0] needs a "topic" name'),
        (_doc(topics=[{"topic": "t"}]), 'snapshot file: topic t: "partitions" must be a list'),
        (
            _doc(topics=[{"topic": "t", "partitions": []}, {"topic": "t", "partitions": []}]),
            "snapshot file: topic t is listed twice",
        ),
        (
            _doc(topics=[{"topic": "t", "partitions": [{"replicas": [1]}]}]),
            'snapshot file: topic t: partitions[0] needs an integer "partition"',
        ),
        (
            _doc(topics=[{"topic": "t", "partitions": [{"partition": "0", "replicas": [1]}]}]),
            'snapshot file: topic t: partitions[0] needs an integer "partition"',
        ),
        (
            _doc(topics=[{"topic": "t", "partitions": [{"partition": 0, "replicas": [1]}] * 2}]),
            "snapshot file: partition t-0 is listed twice",
        ),
        (
            _doc(topics=[{"topic": "t", "partitions": [{"partition": 0}]}]),
            'snapshot file: partition t-0: "replicas" must be a list of integers',
        ),
        (
            _doc(topics=[{"topic": "t", "partitions": [{"partition": 0, "replicas": [1, "2"]}]}]),
            'snapshot file: partition t-0: "replicas" must be a list of integers',
        ),
        (
            _doc(topics=[{"topic": "t", "partitions": [{"partition": 0, "replicas": [1, True]}]}]),
            'snapshot file: partition t-0: "replicas" must be a list of integers',
        ),
        (
            _doc(topics=[{"topic": "t", "partitions": [{"partition": 0, "replicas": [1.0]}]}]),
            'snapshot file: partition t-0: "replicas" must be a list of integers',
        ),
        (_doc(topics=_topic(isr=[1, "x"])), 'snapshot file: partition t-0: "isr" must be a list of integers'),
        (_doc(topics=_topic(leader="1")), 'snapshot file: partition t-0: "leader" must be an integer'),
        (
            _doc(topics=_topic(adding_replicas=[None])),
            'snapshot file: partition t-0: "adding_replicas" must be a list of integers',
        ),
        (
            _doc(topics=[{"topic": "t", "topic_id": 7, "partitions": []}]),
            'snapshot file: topic t: "topic_id" must be a string',
        ),
        (_doc(topics=_topic(size=-1)), 'snapshot file: partition t-0: "size" must be a non-negative integer'),
        (
            _doc(topics=_topic(size=True)),
            'snapshot file: partition t-0: "size" must be a non-negative integer',
        ),
        (
            _doc(topics=_topic(size=1.5)),
            'snapshot file: partition t-0: "size" must be a non-negative integer',
        ),
        (
            _doc(topics=_topic(size="9")),
            'snapshot file: partition t-0: "size" must be a non-negative integer',
        ),
    ],
)
@pytest.mark.parametrize("topics_last", [False, True])
def test_rejections(data: bytes, message: str, topics_last: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both loading paths: the whole-document parse, and the chunked fast path (documents with "topics"
    last, as we write them; tiny chunks here) which must fall back to the whole parse for the message."""
    if topics_last:
        monkeypatch.setattr(snapshot, "CHUNK_BYTES", 8)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and "topics" in doc:
            doc["topics"] = doc.pop("topics")
            data = orjson.dumps(doc)
    with pytest.raises(InvalidInputError) as ei:
        snapshot.loads(data)
    assert str(ei.value).startswith(message), str(ei.value)
    assert ei.value.exit_code == ExitCode.INVALID
    assert "\n" not in str(ei.value)


def many_topics_state(n: int = 60) -> ClusterState:
    topics = {
        f"t{i:03d}": Topic(
            f"t{i:03d}",
            {p: [1 + (i + p) % 4, 1 + (i + p + 1) % 4] for p in range(1 + i % 5)},
            isr={0: [1]},
            leader={0: 1},
            adding={0: [1 + i % 4]} if i % 7 == 0 else {},
        )
        for i in range(n)
    }
    return ClusterState(brokers=[Broker(b, None) for b in range(1, 5)], topics=topics)


@pytest.mark.parametrize("chunk", [1, 64, 1000, 1 << 22])
@pytest.mark.parametrize("partition_state", [True, False])
def test_chunked_path_equals_whole_parse(
    chunk: int, partition_state: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = snapshot.dumps(many_topics_state())
    whole = snapshot._loads_whole(data, partition_state, True)
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", chunk)
    chunked = snapshot._loads_chunked(data, partition_state, True)
    assert chunked is not None
    assert chunked == whole
    assert snapshot.loads(data, partition_state=partition_state) == whole


def test_chunked_path_survives_separator_inside_nested_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown field holding objects that start with "topic": a chunk cut there cannot parse, so the
    whole document is parsed instead; the unknown field is ignored either way."""
    doc = orjson.loads(snapshot.dumps(many_topics_state(5)))
    doc["topics"][2]["notes"] = [{"x": 1}, {"topic": "zz", "partitions": []}]
    data = orjson.dumps(doc)
    assert b'},{"topic":"zz"' in data
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", 1)
    assert snapshot._loads_chunked(data, True, False) is None
    st = snapshot.loads(data)
    assert sorted(st.topics) == ["t000", "t001", "t002", "t003", "t004"]


@pytest.mark.parametrize(
    "data",
    [
        b'{"version":1,"brokers":[],"topics":[]}',
        b'{"version":1,"brokers":[],"topics":[]}\n',
        b'{"version":1,"topics":[],"brokers":[]}',
        b'{ "version": 1, "brokers": [], "topics": [] }',
    ],
)
def test_empty_cluster_any_layout(data: bytes) -> None:
    st = snapshot.loads(data)
    assert st.brokers == [] and st.topics == {}


def test_str_input_accepted() -> None:
    assert snapshot.loads(EXPECTED.decode()).brokers[0] == Broker(1, "r1")


@pytest.mark.parametrize("shape", ["ours", "topics first"])
def test_memory_map_input_and_release(
    shape: str, tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only mmap of the file parses as its bytes do; release() is called as the parse moves on
    (the chunked path) so the caller can drop the pages read so far."""
    import mmap
    from pathlib import Path

    data = snapshot.dumps(many_topics_state())
    if shape == "topics first":  # not the chunked shape: the whole-document fallback
        doc = orjson.loads(data)
        data = orjson.dumps({"topics": doc.pop("topics"), **doc})
    path = Path(str(tmp_path)) / "snap.json"
    path.write_bytes(data)
    monkeypatch.setattr(snapshot, "RELEASE_BYTES", 100)
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", 64)
    calls: list[int] = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        state = snapshot.loads(m, release=lambda: calls.append(1))
    assert state == snapshot.loads(data)
    assert (len(calls) > 2) if shape == "ours" else calls == []


SIZED = (
    b'{"version":1,"brokers":[{"id":1},{"id":2}],"deleting":[],"topics":['
    b'{"topic":"a","partitions":[{"partition":0,"replicas":[1,2],"size":1048576},{"partition":1,"replicas":[2,1]}]},'
    b'{"topic":"b","partitions":[{"partition":0,"replicas":[2],"size":0}]},'
    b'{"topic":"c","partitions":[{"partition":0,"replicas":[1]}]}]}\n'
)


@pytest.mark.parametrize("chunk", [8, 1 << 20])
@pytest.mark.parametrize("partition_state", [True, False])
def test_sizes_read_where_present_and_written_back(
    chunk: int, partition_state: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", chunk)
    state = snapshot.loads(SIZED, partition_state=partition_state)
    # a-1 and c-0 have no "size": unknown, absent (not 0); b-0 is an empty partition: 0 bytes.
    assert {n: t.sizes for n, t in state.topics.items()} == {"a": {0: 1048576}, "b": {0: 0}, "c": {}}
    assert snapshot.dumps(state) == SIZED


def test_sizes_do_not_change_the_plan() -> None:
    without = SIZED.replace(b',"size":1048576', b"").replace(b',"size":0', b"")
    plans = [
        generate_plan(snapshot.loads(data), GenerateRequest(["a", "b", "c"], [1, 2], seed=5)).proposed
        for data in (SIZED, without)
    ]
    assert plans[0] == plans[1]
