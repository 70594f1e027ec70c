"""generate --report on the real ZooKeeper-mode cluster: `--report review.html` writes exactly review.md and
review.html (never review.html.html) beside the plan, and the page holds the chart and the broker table of
the live cluster's topic. The page's layout is checked from hand-built inputs in
tests/unit/test_report_page.py; this run proves the command line's naming end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.test_report_page import parse


def test_report_files_named_once(make_topic: Any, run_cli: Any, cluster: Any, tmp_path: Path) -> None:
    topic = make_topic({0: [1, 2], 1: [1, 2], 2: [1, 2]}, messages=30)
    out = tmp_path / "plan"
    r = run_cli(
        "generate", "--topic", topic, "--broker-list", "1,2,3", "--seed", "5", "--strategy", "balanced",
        "--output-dir", str(out), "--report", str(out / "review.html"),
        env={"KAFKA_REASSIGN_BOOTSTRAP": cluster.bootstrap},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "current.json",
        "proposed.json",
        "review.html",
        "review.md",
    ]
    assert f"Report written to {out / 'review.md'} and {out / 'review.html'}" in r.stderr
    page = parse((out / "review.html").read_text())
    assert [t for t, _, _ in page.tags if t == "svg"] == ["svg"]
    assert {a["class"] for t, a, _ in page.tags if t == "polyline"} == {"before", "after"}
    (brokers,) = [rows for _, rows in page.tables if rows and rows[0][0] == "broker"]
    assert [row[0] for row in brokers[1:]] == ["1", "2", "3"]
    assert (out / "review.md").read_text().startswith("# Reassignment plan\n")
