"""generate --report: FILE.md read back with a CommonMark parser (markdown-it-py), its tables holding the
numbers of `--format json` (the stats, the plan itself) counted here independently; FILE.html parsed, its
bars as long as the numbers say. From snapshots: no cluster needed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from markdown_it import MarkdownIt

from tests.cli.test_generate_sizes import _doc, _rows, _snap
from tests.helpers import run_cli
from tests.unit.test_report_page import Page
from tests.unit.test_report_page import parse as parse_page


def md_tables(text: str) -> list[list[list[str]]]:
    """Every table of a CommonMark (+ tables) document: rows of cell texts, the header row first."""
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    in_cell = False
    for tok in MarkdownIt("commonmark").enable("table").parse(text):
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close":
            assert row is not None
            tables[-1].append(row)
        elif tok.type in ("th_open", "td_open"):
            in_cell = True
        elif tok.type in ("th_close", "td_close"):
            in_cell = False
        elif tok.type == "inline" and in_cell:
            assert row is not None
            row.append(tok.content)
    return tables


def _page(text: str) -> Page:
    return parse_page(text)


def _report(tmp_path: Path, snap: str, *args: str) -> tuple[dict[str, Any], str, str]:
    base = tmp_path / "plan"
    r = run_cli(
        "generate", "--snapshot", snap, "--topic", "a", "--topic", "b", "--seed", "3", "--format", "json",
        "--report", str(base), *args,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return orjson.loads(r.stdout), (tmp_path / "plan.md").read_text(), (tmp_path / "plan.html").read_text()


def _per_broker(doc: dict[str, Any], sizes: dict[tuple[str, int], int]) -> dict[int, list[int]]:
    """replicas before/after, leaders before/after, bytes before/after, counted from the plan."""
    before, after = _rows(doc["current"]), _rows(doc["proposed"])
    out: dict[int, list[int]] = {b: [0] * 6 for b in (1, 2, 3)}
    for k in after:
        for i, reps in ((0, before[k]), (1, after[k])):
            out[reps[0]][2 + i] += 1
            for b in reps:
                out[b][i] += 1
                out[b][4 + i] += sizes[k]
    return out


def test_markdown_and_html_hold_the_json_numbers(tmp_path: Path) -> None:
    snap = _snap(tmp_path, _doc(True), "s.json")  # sizes: partition p holds 1000 * (p + 1) bytes
    doc, md, page = _report(tmp_path, snap, "--strategy", "balanced", "--throttle", "400")
    stats = doc["stats"]
    summary, brokers, *moves = md_tables(md)
    facts = dict(summary[1:])
    assert facts["strategy"] == "balanced"
    assert facts["replica copies"] == (
        f"{stats['copies']} (lower bound {stats['lower_bound']}, ratio {stats['copies_over_lower_bound']:.3f})"
    )
    assert facts["most into one broker"].endswith(f", broker {stats['bytes_in_max_broker']}")
    (throttle_row,) = [k for k in facts if k.startswith("time at --throttle ")]
    assert facts[throttle_row].startswith(f"at least {stats['seconds_at_throttle']:.1f} s")
    html = _page(page)
    tips = {text: a.get("title") for text, a, _ in html.cells}
    assert tips[facts["bytes copied"]] == f"{stats['bytes_copied']:,} B"
    sizes = {(t, p): 1000 * (p + 1) for t, p in _rows(doc["current"])}
    expected = _per_broker(doc, sizes)
    assert brokers[0] == ["broker", "replicas", "preferred leaders", "bytes"]
    got = {int(row[0]): [int(x) for cell in row[1:3] for x in cell.split(" → ")] for row in brokers[1:]}
    assert got == {b: [v[0], v[1], v[2], v[3]] for b, v in expected.items()}
    # bytes: binary units in the cell, the exact count in its tooltip
    html_rows = next(rows for _, rows in html.tables if rows and rows[0][0] == "broker")
    exact = {int(r[0]): tips[r[3]] for r in html_rows[1:]}
    assert exact == {b: f"{v[4]:,} B → {v[5]:,} B" for b, v in expected.items()}
    # the moves: every partition that changes, topic by topic, as the plan has them
    before, after = _rows(doc["current"]), _rows(doc["proposed"])
    changed = {k for k in after if after[k] != before[k]}
    listed = {
        (topic, int(row[0])): (row[1], row[2])
        for topic, table in zip(["a", "b"], moves, strict=False)
        for row in table[1:]
    }
    assert listed == {k: (",".join(map(str, before[k])), ",".join(map(str, after[k]))) for k in changed}
    # the chart: each broker's bytes before and after, each line sorted
    assert not {t for t, _, _ in html.tags} & {"script", "link", "img", "iframe"}  # nothing fetched
    lines = {a["class"]: a["data-values"] for t, a, _ in html.tags if t == "polyline"}
    assert lines == {
        w: ",".join(str(v) for v in sorted(x[i] for x in expected.values()))
        for w, i in (("before", 4), ("after", 5))
    }


def test_kafka_strategy_without_sizes(tmp_path: Path) -> None:
    snap = _snap(tmp_path, _doc(False), "p.json")
    doc, md, page = _report(tmp_path, snap)
    summary, brokers, *_ = md_tables(md)
    facts = dict(summary[1:])
    moved = sum(len(set(n) - set(_rows(doc["current"])[k])) for k, n in _rows(doc["proposed"]).items())
    assert facts["replica copies"].startswith(f"{moved} (no lower bound")
    assert facts["bytes copied"].startswith("unknown")
    assert brokers[0] == ["broker", "replicas", "preferred leaders"]
    # no sizes: the chart plots the replicas per broker
    before, after = _rows(doc["current"]), _rows(doc["proposed"])
    count = {
        w: Counter(b for reps in plan.values() for b in reps)
        for w, plan in (("before", before), ("after", after))
    }
    lines = {a["class"]: a["data-values"] for t, a, _ in _page(page).tags if t == "polyline"}
    assert lines == {
        w: ",".join(str(c[b]) for b in sorted((1, 2, 3), key=c.__getitem__)) for w, c in count.items()
    }


def test_moves_shortened_past_50(tmp_path: Path) -> None:
    doc = {
        "version": 1,
        "brokers": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}],
        "topics": [
            {"topic": t, "partitions": [{"partition": p, "replicas": [1, 2]} for p in range(40)]}
            for t in "ab"
        ],
    }
    snap = _snap(tmp_path, doc, "big.json")
    out, md, page = _report(tmp_path, snap, "--strategy", "balanced")
    before, after = _rows(out["current"]), _rows(out["proposed"])
    changed = sum(1 for k in after if after[k] != before[k])
    assert changed > 50
    rows = sum(len(t) - 1 for t in md_tables(md)[2:])
    assert rows == 50
    assert f"Shown: the first 50 of {changed} partitions that change; and {changed - 50} more" in md
    # more than 10: folded, in both files
    title = f"The first 50 of {changed} partitions that change, by topic"
    assert f"<details><summary>{title}</summary>" in md
    assert title in _page(page).summaries


def test_report_usage_errors(tmp_path: Path) -> None:
    snap = _snap(tmp_path, _doc(False), "p.json")
    for extra in (
        ["--report", str(tmp_path / "no" / "r")],
        ["--report", str(tmp_path / "r"), "--engine", "spark"],
    ):
        r = run_cli("generate", "--snapshot", snap, "--topic", "a", *extra)
        assert r.returncode == 2, r.stderr
        assert r.stdout == ""
    assert not list(tmp_path.glob("r.*"))
    # into the --output-dir that generate creates: fine
    out = tmp_path / "plan"
    r = run_cli(
        "generate", "--snapshot", snap, "--topic", "a", "--output-dir", str(out), "--report", str(out / "r")
    )
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["current.json", "proposed.json", "r.html", "r.md"]


@pytest.mark.parametrize("name", ["review.html", "review.md", "review"])
def test_report_names_either_file(tmp_path: Path, name: str) -> None:
    """--report review.html (or .md, or the bare base) writes exactly review.md and review.html, never
    review.html.html; a missing directory is found from the name as given."""
    snap = _snap(tmp_path, _doc(False), "p.json")
    out = tmp_path / "o"
    out.mkdir()
    r = run_cli("generate", "--snapshot", snap, "--topic", "a", "--report", str(out / name))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["review.html", "review.md"]
    assert f"Report written to {out / 'review.md'} and {out / 'review.html'}" in r.stderr
    r = run_cli("generate", "--snapshot", snap, "--topic", "a", "--report", str(tmp_path / "no" / name))
    assert r.returncode == 2 and "does not exist" in r.stderr, r.stderr


def test_no_raw_html_from_the_command_line(tmp_path: Path) -> None:
    snap = _snap(tmp_path, _doc(False), "p.json")
    base = tmp_path / "x`<script>alert(1)"
    r = run_cli("generate", "--snapshot", snap, "--topic", "a", "--report", str(base))
    assert r.returncode == 0, r.stderr
    tags = {t for t, _, _ in _page(Path(str(base) + ".html").read_text()).tags}
    assert "script" not in tags
