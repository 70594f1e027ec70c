"""The JSON-lines snapshot (reassign_cli/core/snapshot_lines.py): exact bytes, round trips, detection, every
rejection with its line number, and the same answer whatever the chunking."""

from __future__ import annotations

import itertools
import mmap
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core import snapshot, snapshot_lines
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.errors import ExitCode, InvalidInputError
from reassign_cli.planning.plan import GenerateRequest, generate_plan
from tests.unit.test_snapshot import many_topics_state, reassigning_state

# reassigning_state() as JSON lines, written out by hand from the snapshot format's definition: the header
# (format first, then the document's fields but "topics"), then each topic entry on its own line, sorted.
EXPECTED = (
    b'{"format":"jsonl","version":1,"brokers":[{"id":1,"rack":"r1"},{"id":2,"rack":"r2"},'
    b'{"id":3,"rack":"r1"},{"id":4,"rack":"r2"}],"deleting":["old"],'
    b'"reassignment":[{"topic":"moving","partition":0,"replicas":[4,1]}]}\n'
    b'{"topic":"moving","topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":['
    b'{"partition":0,"replicas":[4,1,2],"isr":[1,2],"leader":1,"adding_replicas":[4],"removing_replicas":[2]},'
    b'{"partition":1,"replicas":[2,3],"isr":[2,3],"leader":2}]}\n'
    b'{"topic":"old","partitions":[{"partition":0,"replicas":[1]}]}\n'
    b'{"topic":"plain","partitions":[{"partition":0,"replicas":[1,2],"isr":[1,2],"leader":-1},'
    b'{"partition":1,"replicas":[3,1]}]}\n'
)


def dump(state: ClusterState, block_bytes: int = 1 << 20) -> bytes:
    return b"".join(snapshot_lines.dump_lines(state, block_bytes))


def test_dump_exact_bytes() -> None:
    assert dump(reassigning_state()) == EXPECTED


def test_dump_in_small_blocks_is_the_same_bytes() -> None:
    blocks = list(snapshot_lines.dump_lines(many_topics_state(), block_bytes=100))
    assert len(blocks) > 10
    assert b"".join(blocks) == dump(many_topics_state())


def test_no_reassignment_znode_means_no_field() -> None:
    state = ClusterState(brokers=[Broker(1)], topics={})
    assert dump(state) == b'{"format":"jsonl","version":1,"brokers":[{"id":1}],"deleting":[]}\n'


def test_topic_lines_are_the_documents_topic_entries() -> None:
    """Every line after the header is, byte for byte, one entry of the document's "topics" array."""
    state = many_topics_state()
    doc = orjson.loads(snapshot.dumps(state))
    lines = dump(state).splitlines()
    assert [orjson.loads(ln) for ln in lines[1:]] == doc["topics"]
    assert lines[1:] == [orjson.dumps(t) for t in doc["topics"]]


@pytest.mark.parametrize("partition_state", [True, False])
def test_round_trip_equals_the_document(partition_state: bool) -> None:
    for state in (reassigning_state(), many_topics_state()):
        from_lines = snapshot_lines.loads(dump(state), partition_state=partition_state)
        from_doc = snapshot.loads(snapshot.dumps(state), partition_state=partition_state)
        assert from_lines == from_doc
    back = snapshot_lines.loads(EXPECTED)
    assert snapshot.dumps(back) == snapshot.dumps(reassigning_state())


def test_both_formats_plan_the_same() -> None:
    state = reassigning_state()
    request = GenerateRequest(["moving", "plain"], broker_list=[1, 2, 3, 4], seed=11)
    a = generate_plan(snapshot.loads(snapshot.dumps(state), partition_state=False), request)
    b = generate_plan(snapshot_lines.loads(dump(state), partition_state=False), request)
    assert (a.current, a.proposed, a.specs) == (b.current, b.proposed, b.specs)
    # by hand: "moving" is mid-reassignment, RS [4,1,2] minus RR [2]: its RF is 2
    assert [(s.name, s.n_partitions, s.replication_factor) for s in a.specs] == [
        ("moving", 2, 2),
        ("plain", 2, 2),
    ]


@pytest.mark.parametrize(
    ("head", "lines"),
    [
        (b'{"format":"jsonl","version":1}', True),
        (b' \t{ "format" :\t"jsonl", "version":1}', True),
        (b'{"version":1,"brokers":[],"topics":[]}', False),
        (b'{\n  "format": "jsonl"}', False),  # the header is one line
        (b'{"format":"json","version":1}', False),
        (b'{"brokers":[],"format":"jsonl"}', False),  # "format" must come first
        (b"", False),
    ],
)
def test_detection_by_first_bytes(head: bytes, lines: bool) -> None:
    assert snapshot_lines.is_lines(head[: snapshot_lines.SNIFF_BYTES]) is lines


def test_line_ends_blank_lines_str_and_memory_map(tmp_path: Path) -> None:
    r"""\r\n and \r end lines as \n does (Hadoop's rule); blank lines are skipped."""
    lines = EXPECTED.splitlines()
    crlf = b"\r\n".join(lines) + b"\r\n"
    mixed = lines[0] + b"\r" + lines[1] + b"\n\n   \n" + lines[2] + b"\r\n" + lines[3]
    want = snapshot_lines.loads(EXPECTED)
    assert snapshot_lines.loads(crlf) == want
    assert snapshot_lines.loads(mixed) == want
    assert snapshot_lines.loads(EXPECTED.decode()) == want
    path = tmp_path / "s.jsonl"
    path.write_bytes(mixed)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert snapshot_lines.loads(m) == want


def test_header_only_is_an_empty_cluster() -> None:
    st = snapshot_lines.loads(b'{"format":"jsonl","version":1,"brokers":[{"id":3,"rack":null}]}')
    assert st.brokers == [Broker(3)] and st.topics == {} and st.reassignment is None


def test_release_is_called_as_the_parse_moves_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "RELEASE_BYTES", 100)
    monkeypatch.setattr(snapshot_lines, "CHUNK_BYTES", 64)
    calls: list[int] = []
    data = dump(many_topics_state())
    assert snapshot_lines.loads(data, release=lambda: calls.append(1)) == snapshot_lines.loads(data)
    assert len(calls) > 2


H = b'{"format":"jsonl","version":1,"brokers":[{"id":1}]}'


def T(name: str, *parts: str) -> bytes:
    return b'{"topic":"' + name.encode() + b'","partitions":[' + ",".join(parts).encode() + b"]}"


P0 = '{"partition":0,"replicas":[1]}'


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([b"{", T("a", P0)], "snapshot file: line 1: not valid JSON: "),
        ([b'{"format":"jsonl","version":2,"brokers":[]}'], "snapshot file: line 1: unsupported version 2 (expected 1)"),
        ([b'{"format":"jsonl","version":1}'], 'snapshot file: line 1: "brokers" must be a list'),
        ([b'{"format":"jsonl","version":1,"brokers":[],"topics":[]}'], 'snapshot file: line 1: "topics" has no place'),
        ([b'{"format":"jsonl","version":1,"brokers":[{"id":1},{"id":1}]}'], "snapshot file: line 1: broker 1 is listed twice"),
        ([b'["format","jsonl"]', T("a", P0)], "snapshot file: line 1: expected the header"),
        ([H, T("a", P0), b"", T("b", P0), b"{nope"], "snapshot file: line 5: not valid JSON: "),
        ([H, T("a", P0), b"[1,2]"], 'snapshot file: line 3: expected a JSON object with "topic" and "partitions"'),
        ([H, b'{"partitions":[]}'], 'snapshot file: line 2: needs a "topic" name'),
        ([H, b'{"topic":"","partitions":[]}'], 'snapshot file: line 2: needs a "topic" name'),
        ([H, b'{"topic":"a"}'], 'snapshot file: line 2: topic a: "partitions" must be a list'),
        ([H, T("a", '{"replicas":[1]}')], 'snapshot file: line 2: topic a: partitions[0] needs an integer "partition"'),
        ([H, T("a", P0, P0)], "snapshot file: line 2: partition a-0 is listed twice"),
        ([H, T("a", '{"partition":0,"replicas":[1,true]}')], 'snapshot file: line 2: partition a-0: "replicas" must be a list of integers'),
        ([H, T("a", '{"partition":0,"replicas":[1],"adding_replicas":["x"]}')], 'snapshot file: line 2: partition a-0: "adding_replicas" must be a list of integers'),
        ([H, T("a", '{"partition":0,"replicas":[1],"isr":[1,"x"]}')], 'snapshot file: line 2: partition a-0: "isr" must be a list of integers'),
        ([H, b'{"topic":"a","topic_id":7,"partitions":[]}'], 'snapshot file: line 2: topic a: "topic_id" must be a string'),
        ([H, T("a", P0), T("b", '{"partition":0,"replicas":[1],"size":-5}')], 'snapshot file: line 3: partition b-0: "size" must be a non-negative integer'),
        ([H, T("a", P0), T("a", P0)], "snapshot file: line 3: topic a is listed twice"),
        ([H, T("b", P0), b" ", T("a", P0)], "snapshot file: line 4: topic a comes after b: the topic lines must be sorted by name"),
        ([H, T("a", P0) + b" " + T("b", P0)], "snapshot file: line 2: not valid JSON: "),
        ([H, T("a", P0) + b",", T("b", P0)], "snapshot file: line 2: not valid JSON: "),
    ],
)  # fmt: skip
@pytest.mark.parametrize("chunk", [1, 1 << 20])
def test_rejections_name_the_line(
    lines: list[bytes], message: str, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshot_lines, "CHUNK_BYTES", chunk)
    with pytest.raises(InvalidInputError) as ei:
        snapshot_lines.loads(b"\n".join(lines) + b"\n")
    assert str(ei.value).startswith(message), str(ei.value)
    assert ei.value.exit_code == ExitCode.INVALID
    assert "\n" not in str(ei.value)


def test_isr_and_leader_unchecked_without_partition_state() -> None:
    """As for the document: planning skips them entirely."""
    data = H + b"\n" + T("a", '{"partition":0,"replicas":[1],"isr":"x","leader":"y"}')
    assert snapshot_lines.loads(data, partition_state=False).topics["a"].replicas == {0: [1]}
    with pytest.raises(InvalidInputError, match="line 2"):
        snapshot_lines.loads(data)


def test_escaped_keys_are_read_as_their_names() -> None:
    r"""A key spelt with \u escapes is the same key: its value is checked and used."""
    line = T("a", '{"partition":0,"replicas":[1,2],"removing\\u005freplicas":[2]}')
    st = snapshot_lines.loads(H + b"\n" + line)
    assert st.topics["a"].removing == {0: [2]}


# ---------------------------------------------------------------------------------------------
# Any chunking gives the same topics or the same first error (the property the Spark splits rely on)
# ---------------------------------------------------------------------------------------------

BAD_LINES = [
    b"{oops",
    b"[1]",
    b'{"topic":"zz"}',
    T("m", '{"partition":0,"replicas":["1"]}'),
    T("m", '{"partition":0,"replicas":[1],"removing_replicas":[true]}'),
    b'{"topic":"m","topic_id":1,"partitions":[]}',
]


@st.composite
def files(draw: st.DrawFn) -> tuple[list[bytes], list[int]]:
    """Topic lines (sorted names, some blank lines), perhaps with one defect: a bad line, a repeated or
    out-of-order topic. Also the cut points of a chunking."""
    names = sorted(draw(st.sets(st.text("abcxyz._-", min_size=1, max_size=4), min_size=1, max_size=12)))
    lines = [
        T(n, *(f'{{"partition":{p},"replicas":[{1 + p % 3}]}}' for p in range(1 + len(n) % 3))) for n in names
    ]
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from([b"", b"  ", b"\t"])))
    defect = draw(st.sampled_from(["none", "bad", "repeat", "swap"]))
    at = draw(st.integers(0, len(lines) - 1))
    if defect == "bad":
        lines[at] = draw(st.sampled_from(BAD_LINES))
    elif defect == "repeat":
        lines.insert(at, lines[at])
    elif defect == "swap" and at + 1 < len(lines):
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    cuts = sorted(draw(st.lists(st.integers(0, len(lines)), max_size=6)))
    return lines, cuts


def _outcome(fn: object) -> object:
    try:
        return ("ok", fn())  # type: ignore[operator]
    except InvalidInputError as e:
        return ("error", str(e))


@settings(max_examples=300, deadline=None)
@given(files())
def test_any_chunking_same_result(case: tuple[list[bytes], list[int]]) -> None:
    lines, cuts = case
    data = b"\n".join([H, *lines]) + b"\n"
    whole = _outcome(lambda: snapshot_lines.loads(data))
    pieces: list[Topic] = []

    def by_pieces() -> dict[str, Topic]:
        prev = None
        bounds = [0, *cuts, len(lines)]
        for lo, hi in itertools.pairwise(bounds):
            try:
                new = snapshot_lines.parse_lines(lines[lo:hi], prev, True)
            except snapshot_lines.LineError as e:
                raise snapshot_lines.line_error(2 + lo + e.index, e.detail) from None
            pieces.extend(new)
            prev = new[-1].name if new else prev
        return {t.name: t for t in pieces}

    split = _outcome(by_pieces)
    assert split == (whole if whole[0] == "error" else ("ok", whole[1].topics))  # type: ignore[index]
    if whole[0] == "ok":  # the slow path accepts exactly what the fast path accepts
        assert snapshot_lines._parse_one_by_one(lines, None, True) == [
            orjson.loads(ln) for ln in lines if ln.strip()
        ]


def test_replica_ids_beyond_64_bits_are_refused_by_line() -> None:
    line = T("a", '{"partition":0,"replicas":[1,' + str(2**64) + "]}")
    with pytest.raises(InvalidInputError, match=r'^snapshot file: line 3: partition a-0: "replicas" must be'):
        snapshot_lines.loads(H + b"\n\n" + line)


def test_good_lines_refused_by_the_fast_path_are_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-by-one path finds nothing wrong: its topics are kept (the fast path is an optimisation)."""
    real_add = snapshot._TopicsBuilder.add
    calls: list[int] = []

    def refuse_first(self: snapshot._TopicsBuilder, raw: list[object]) -> None:
        calls.append(len(raw))
        if len(calls) == 1:
            raise TypeError("refused")
        real_add(self, raw)

    monkeypatch.setattr(snapshot._TopicsBuilder, "add", refuse_first)
    state = snapshot_lines.loads(EXPECTED)
    monkeypatch.undo()
    assert state == snapshot_lines.loads(EXPECTED)
    assert calls[0] == 3 and len(calls) > 2  # the chunk, then each line alone, then the good lines


def test_sizes_round_trip_in_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    state = ClusterState(
        [Broker(1)],
        {"a": Topic("a", {0: [1], 1: [1]}, sizes={1: 42}), "b": Topic("b", {0: [1]}, sizes={0: 7})},
    )
    data = dump(state)
    assert b'{"partition":1,"replicas":[1],"size":42}' in data
    for chunk in (1, 1 << 20):
        monkeypatch.setattr(snapshot_lines, "CHUNK_BYTES", chunk)
        back = snapshot_lines.loads(data, partition_state=False)
        assert {n: t.sizes for n, t in back.topics.items()} == {"a": {1: 42}, "b": {0: 7}}
        assert dump(back) == data
