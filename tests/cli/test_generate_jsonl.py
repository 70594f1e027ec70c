"""`generate --snapshot` (local engine) reads both snapshot layouts, told apart by the first bytes: the same
cluster as a document and as JSON lines gives the same output, byte for byte, whatever the file's name."""

from __future__ import annotations

from pathlib import Path

from reassign_cli.core import snapshot, snapshot_lines
from tests.helpers import run_cli
from tests.unit.test_snapshot import many_topics_state, reassigning_state


def test_both_layouts_same_output(tmp_path: Path) -> None:
    state = many_topics_state()
    state.topics.update(reassigning_state().topics)
    doc, lines = tmp_path / "cluster.json", tmp_path / "cluster.data"  # the name says nothing
    doc.write_bytes(snapshot.dumps(state))
    lines.write_bytes(b"".join(snapshot_lines.dump_lines(state)))
    args = ["generate", "--topic", "moving", "--topic", "t007", "--topic", "plain", "--seed", "3", "--format"]
    for fmt in ("text", "json"):
        a = run_cli(*args, fmt, "--snapshot", str(doc))
        b = run_cli(*args, fmt, "--snapshot", str(lines))
        assert a.returncode == 0, a.stderr
        assert (b.returncode, b.stdout, b.stderr) == (0, a.stdout, a.stderr)
    out_a, out_b = tmp_path / "a", tmp_path / "b"
    a = run_cli(*args, "text", "--snapshot", str(doc), "--output-dir", str(out_a))
    b = run_cli(*args, "text", "--snapshot", str(lines), "--output-dir", str(out_b))
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    for name in ("current.json", "proposed.json"):
        assert (out_a / name).read_bytes() == (out_b / name).read_bytes()


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b'{"format":"jsonl","version":1,"brokers":[{"id":1}]}\n{"topic":"a","partitions":[]}\n\n{x\n'
    )
    r = run_cli("generate", "--snapshot", str(path), "--topic", "a", "--output-dir", str(tmp_path / "out"))
    assert r.returncode == 3
    assert r.stderr.startswith("Error: snapshot file: line 4: not valid JSON: ")
    assert r.stdout == "" and not (tmp_path / "out").exists()
