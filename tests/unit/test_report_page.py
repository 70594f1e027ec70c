"""generate --report's page, rendered from hand-built inputs (no planner): one SVG chart of the distribution
before and after (two polylines, the tolerance band), the 10 brokers that change most, the others folded in a
<details>, bytes in binary units only (the exact count in the cell's tooltip), the command one option per
line with a long --broker-list shortened and the whole command folded; and the file names --report writes.
Every expected number below is worked out by hand in the comments."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from typing import Any

import pytest

from reassign_cli.planning.plan import PlanStats
from reassign_cli.render.report import Collector, Report, html_page, markdown, report_paths

GIB = 1024**3
MIB = 1024**2


class Page(HTMLParser):
    """The elements the checks need: every start tag with its attributes and where it sits (inside which
    <details>, <table>, <pre>), and the text of each cell."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str], int]] = []  # tag, attrs, depth of <details>
        self.cells: list[tuple[str, dict[str, str], int]] = []  # td text, attrs, depth of <details>
        self.tables: list[tuple[int, list[list[str]]]] = []  # (depth of <details>, rows of cell texts)
        self.pres: list[tuple[int, str]] = []  # (depth of <details>, text)
        self.summaries: list[str] = []
        self._details = 0
        self._text: list[str] | None = None
        self._attrs: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a, self._details))
        if tag == "details":
            self._details += 1
        elif tag == "table":
            self.tables.append((self._details, []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("td", "th", "pre", "summary"):
            self._text, self._attrs = [], a

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self._details -= 1
        elif tag in ("td", "th") and self._text is not None:
            text = "".join(self._text)
            self.tables[-1][1][-1].append(text)
            if tag == "td":
                self.cells.append((text, self._attrs, self._details))
            self._text = None
        elif tag == "pre" and self._text is not None:
            self.pres.append((self._details, "".join(self._text)))
            self._text = None
        elif tag == "summary" and self._text is not None:
            self.summaries.append("".join(self._text))
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def parse(text: str) -> Page:
    p = Page()
    p.feed(text)
    return p


# 12 brokers. Bytes before: broker b holds b GiB; after: every broker 6.5 GiB except 11 (7 GiB) and 12 (6 GiB).
# Change |after - before| in GiB: 1: 5.5, 2: 4.5, 3: 3.5, 4: 2.5, 5: 1.5, 6: 0.5, 7: 0.5, 8: 1.5, 9: 2.5,
# 10: 3.5, 11: 4, 12: 6. The 10 that change most: 12, 1, 2, 11, 3, 10, 4, 9, 5, 8 (ties: more replicas moved
# first, here equal, then the lower id); folded: 6 and 7. Mean after = 78 GiB / 12 = 6.5 GiB; tolerance 5%:
# the band 6.175 GiB .. 6.825 GiB.
IDS = list(range(1, 13))
BEFORE = {b: b * GIB for b in IDS}
AFTER = {b: int(6.5 * GIB) for b in IDS} | {11: 7 * GIB, 12: 6 * GIB}


def _report(
    command: str = "kafka-reassign generate --snapshot s.json --topic a --broker-list 1,2,3",
) -> Report:
    st = PlanStats(
        partitions=24,
        partitions_changed=10,
        replicas_moved=12,
        leaders_changed=5,
        replicas_before=Counter({b: 4 for b in IDS}),
        replicas_after=Counter({b: 4 for b in IDS}),
        leaders_before=Counter({b: 2 for b in IDS}),
        leaders_after=Counter({b: 2 for b in IDS}),
    )
    extra: dict[str, Any] = {
        "copies": 12,
        "lower_bound": 10,
        "copies_over_lower_bound": 1.2,
        "bytes_copied": 30 * GIB,
        "copies_size_unknown": 0,
        "bytes_in_max": 5 * GIB,
        "bytes_in_max_broker": 12,
        "bytes_lower_bound": 25 * GIB,
        "bytes_max_dev_before": 0.8462,  # broker 1: |1 - 6.5| / 6.5
        "bytes_max_dev_after": 0.0769,  # broker 11: |7 - 6.5| / 6.5
        "bytes_tolerance": 0.05,
        "bytes_mean": int(6.5 * GIB),
        "bytes_per_broker_before": {str(b): v for b, v in BEFORE.items()},
        "bytes_per_broker_after": {str(b): v for b, v in AFTER.items()},
    }
    return Report(command, 7, "balanced --balance bytes", st, extra, IDS, Collector())


def test_one_chart_two_lines_and_the_band() -> None:
    text = html_page(_report())
    page = parse(text)
    assert [t for t, _, _ in page.tags if t == "svg"] == ["svg"]
    # a dot per broker, its tooltip naming it: the least loaded after is 12 (6 GiB), the most 11 (7 GiB)
    assert "<title>broker 12 after: 6 GiB</title>" in text and "<title>broker 11 after: 7 GiB</title>" in text
    assert not {t for t, _, _ in page.tags} & {"script", "link", "img", "iframe"}
    lines = {a["class"]: a for t, a, _ in page.tags if t == "polyline"}
    assert set(lines) == {"before", "after"}
    # each line: the brokers' bytes sorted on their own, as the data says (GiB by hand)
    values = {w: [float(v) for v in a["data-values"].split(",")] for w, a in lines.items()}
    assert [v / GIB for v in values["before"]] == list(range(1, 13))
    assert [v / GIB for v in values["after"]] == [6] + [6.5] * 10 + [7]
    points = {w: [tuple(map(float, p.split(","))) for p in a["points"].split()] for w, a in lines.items()}
    assert len(points["before"]) == len(points["after"]) == 12
    # y falls linearly as the value grows: fit it on two points of the "before" line, check every point
    (x1, y1), (x12, y12) = points["before"][0], points["before"][-1]
    scale = (y1 - y12) / (11 * GIB)

    def y(v: float) -> float:
        return y1 - (v - GIB) * scale

    assert scale > 0 and x1 < x12
    for w in ("before", "after"):
        assert [py for _, py in points[w]] == pytest.approx([y(v) for v in values[w]], abs=0.15)
    bands = [a for t, a, _ in page.tags if t == "rect" and a.get("class") == "band" and "data-low" in a]
    assert len(bands) == 1
    band = bands[0]
    assert float(band["data-low"]) == pytest.approx(6.175 * GIB)
    assert float(band["data-high"]) == pytest.approx(6.825 * GIB)
    assert float(band["y"]) == pytest.approx(y(6.825 * GIB), abs=0.15)
    assert float(band["y"]) + float(band["height"]) == pytest.approx(y(6.175 * GIB), abs=0.2)


def test_top_ten_and_the_rest_folded() -> None:
    page = parse(html_page(_report()))
    (depth_top, top), *others = [(d, rows) for d, rows in page.tables if rows and rows[0][0] == "broker"]
    assert depth_top == 0
    assert [int(r[0]) for r in top[1:]] == [12, 1, 2, 11, 3, 10, 4, 9, 5, 8]
    (depth_rest, rest), *_ = others
    assert depth_rest == 1  # inside the <details>
    assert [int(r[0]) for r in rest[1:]] == [6, 7]
    assert "The other 2 brokers, by id" in page.summaries
    # broker 12: 12 GiB -> 6 GiB, in binary units; the exact count in the tooltip
    row12 = next(r for r in top[1:] if r[0] == "12")
    assert row12[1:] == ["4 → 4", "2 → 2", "12 GiB → 6 GiB"]
    tips = [a.get("title", "") for text, a, _ in page.cells if text == "12 GiB → 6 GiB"]
    assert tips == ["12,884,901,888 B → 6,442,450,944 B"]  # 12 x 2^30, 6 x 2^30


HUMAN = re.compile(r"\d+(\.\d+)? (B|KiB|MiB|GiB|TiB|PiB)")


def test_no_raw_byte_counts_in_table_cells() -> None:
    for text in (html_page(_report()), markdown(_report())):
        cells = (
            [c for c, _, _ in parse(text).cells]
            if text.startswith("<!DOCTYPE")
            else [c.strip() for line in text.splitlines() if line.startswith("|") for c in line.split("|")]
        )
        assert cells
        for c in cells:
            assert not re.search(r"\d{5,}", c), c  # no count of bytes written out (the largest id is 12)
            for m in re.finditer(r"(\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB|PiB)\b", c):
                assert float(m.group(1)) < 1024, c
    page = parse(html_page(_report()))
    facts = {r[0]: r[1] for d, rows in page.tables for r in rows if len(r) == 2}
    assert facts["bytes copied"] == "30 GiB"
    assert facts["tolerance"] == "±5% of the mean (6.5 GiB)"
    assert facts["worst broker from the mean"] == "84.6% before, 7.7% after"
    assert facts["bytes lower bound"] == "25 GiB, ratio 1.200"  # 30 / 25


def test_long_command_folded() -> None:
    ids = ",".join(map(str, range(1, 331)))
    command = f"kafka-reassign generate --snapshot s.json --topic a --broker-list {ids} --seed 7"
    page = parse(html_page(_report(command)))
    (shown_depth, shown), (full_depth, full) = page.pres
    assert (shown_depth, full_depth) == (0, 1)
    assert shown.splitlines() == [
        "kafka-reassign generate \\",
        "    --snapshot s.json \\",
        "    --topic a \\",
        "    --broker-list 1,2,3,4,5,6,7,8,…,330 [330 items] \\",
        "    --seed 7",
    ]
    assert full == command
    assert "The whole command" in page.summaries
    md = markdown(_report(command))
    assert "    --broker-list 1,2,3,4,5,6,7,8,…,330 [330 items] \\" in md
    assert f"<details><summary>The whole command</summary>\n\n```\n{command}\n```\n\n</details>" in md
    # a short command: one option a line, nothing folded, no <details> for it
    page = parse(html_page(_report()))
    assert [p for _, p in page.pres] == [
        "kafka-reassign generate \\\n    --snapshot s.json \\\n    --topic a \\\n    --broker-list 1,2,3"
    ]
    assert "The whole command" not in page.summaries


def test_three_brokers_nothing_folded() -> None:
    r = _report()
    small = Report(r.command, r.seed, r.strategy, r.stats, None, [1, 2, 3], Collector())
    small.stats.replicas_before.clear()
    small.stats.replicas_before.update({1: 3, 2: 3})
    small.stats.replicas_after.clear()
    small.stats.replicas_after.update({1: 2, 2: 2, 3: 2})
    for c in (small.stats.leaders_before, small.stats.leaders_after):
        c.clear()
    page = parse(html_page(small))
    assert not any(t == "details" for t, _, _ in page.tags)  # 3 brokers, no moves listed, a short command
    (rows,) = [rows for _, rows in page.tables if rows and rows[0][0] == "broker"]
    assert [r[:2] for r in rows[1:]] == [["1", "3 → 2"], ["2", "3 → 2"], ["3", "0 → 2"]]
    # without sizes the chart plots replicas: 0, 3, 3 before and 2, 2, 2 after, no band but the mean (2)
    lines = {a["class"]: a["data-values"] for t, a, _ in page.tags if t == "polyline"}
    assert lines == {"before": "0,3,3", "after": "2,2,2"}
    assert not [a for t, a, _ in page.tags if t == "rect" and "data-low" in a]


@pytest.mark.parametrize(
    ("name", "files"),
    [
        ("plan", ("plan.md", "plan.html")),
        ("out/plan.html", ("out/plan.md", "out/plan.html")),
        ("out/plan.md", ("out/plan.md", "out/plan.html")),
        ("plan.HTML", ("plan.md", "plan.html")),
        ("plan.v2", ("plan.v2.md", "plan.v2.html")),
        (".html", (".html.md", ".html.html")),  # nothing left of the name: taken as the base
    ],
)
def test_report_file_names(name: str, files: tuple[str, str]) -> None:
    assert report_paths(name) == files
