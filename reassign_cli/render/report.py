"""`generate --report FILE`: the plan for review, as FILE.md (a pull-request comment, a CI job summary) and
FILE.html (one self-contained page: the same Markdown rendered, plus per-broker bar charts in inline SVG).

The figures are generate's own: the per-broker replicas and leaders are the `PlanStats` the summary table
shows, the copies, lower bound, bytes and time are the `stats` that `--format json` prints. Only the bytes
per broker are counted here, from the same chunks of the plan as generate writes them (`Collector`, handed
to the pipeline as its `observe` hook), with the partition sizes generate planned with.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt

from reassign_cli.planning.plan import PlanStats
from reassign_cli.render.generate import human_bytes, human_duration

MAX_MOVES = 50  # moves listed; the rest are counted
BAR_WIDTH = 320  # px: the longest bar of a chart
Move = tuple[str, int, list[int], list[int]]  # topic, partition, replicas before, after


@dataclass(slots=True)
class Collector:
    """Sees each chunk of the plan as generate writes it: keeps the partitions that change (the first
    MAX_MOVES of them, and a count) and adds up the bytes on each broker before and after."""

    moves: list[Move] = field(default_factory=list)
    moves_total: int = 0
    bytes_before: Counter[int] = field(default_factory=Counter)
    bytes_after: Counter[int] = field(default_factory=Counter)
    sized: bool = False

    def __call__(
        self,
        current: Mapping[str, Mapping[int, Sequence[int]]],
        proposed: Mapping[str, Mapping[int, Sequence[int]]],
        sizes: Mapping[str, Mapping[int, int]] | None,
    ) -> None:
        self.sized = self.sized or sizes is not None
        for topic, parts in proposed.items():
            old_parts = current.get(topic, {})
            topic_sizes = sizes.get(topic, {}) if sizes is not None else {}
            for p, new in parts.items():
                old = list(old_parts.get(p, ()))
                new = list(new)
                size = topic_sizes.get(p)
                if size is not None:
                    for b in old:
                        self.bytes_before[b] += size
                    for b in new:
                        self.bytes_after[b] += size
                if old != new:
                    self.moves_total += 1
                    if len(self.moves) < MAX_MOVES:
                        self.moves.append((topic, p, old, new))


@dataclass(frozen=True, slots=True)
class Report:
    command: str
    seed: int
    strategy: str
    stats: PlanStats
    extra: Mapping[str, Any] | None  # generate's --format json "stats"
    brokers: Sequence[int]  # the plan's brokers
    seen: Collector


def broker_rows(r: Report) -> list[tuple[int, list[int]]]:
    """(broker, [replicas before, after, leaders before, after, (bytes before, after)]) for every broker
    that holds or receives a replica, sorted."""
    st = r.stats
    ids = sorted(set(r.brokers) | set(st.replicas_before) | set(st.replicas_after))
    before, after = bytes_per_broker(r)
    rows = []
    for b in ids:
        values = [st.replicas_before[b], st.replicas_after[b], st.leaders_before[b], st.leaders_after[b]]
        if r.seen.sized:
            values += [before.get(b, 0), after.get(b, 0)]
        rows.append((b, values))
    return rows


def bytes_per_broker(r: Report) -> tuple[Mapping[int, int], Mapping[int, int]]:
    """Each broker's bytes before and after: with --balance bytes the plan summary's (every topic's
    bytes on the brokers of the plan, the figures the tolerance is about), else the selected topics'
    (counted by the Collector); brokers outside the plan then count the selected topics' bytes."""
    e = r.extra or {}
    if "bytes_per_broker_before" not in e:
        return r.seen.bytes_before, r.seen.bytes_after
    before: dict[int, int] = dict(r.seen.bytes_before)
    after: dict[int, int] = dict(r.seen.bytes_after)
    before.update({int(b): int(x) for b, x in e["bytes_per_broker_before"].items()})
    after.update({int(b): int(x) for b, x in e["bytes_per_broker_after"].items()})
    return before, after


def _copies_line(r: Report) -> str:
    e = r.extra or {}
    if "lower_bound" in e:
        return f"{e['copies']} (lower bound {e['lower_bound']}, ratio {e['copies_over_lower_bound']:.3f})"
    return f"{r.stats.replicas_moved} (no lower bound: the {r.strategy} strategy does not compute one)"


def summary_rows(r: Report) -> list[tuple[str, str]]:
    st, e = r.stats, r.extra or {}
    rows = [
        ("strategy", r.strategy),
        ("partitions that change", f"{st.partitions_changed} of {st.partitions}"),
        ("replica copies", _copies_line(r)),
        ("preferred leaders that change", str(st.leaders_changed)),
    ]
    if "bytes_copied" in e:
        unknown = e["copies_size_unknown"]
        rows.append(
            (
                "bytes copied",
                f"{e['bytes_copied']} ({human_bytes(e['bytes_copied'])})"
                + (f"; {unknown} copies of unknown size not counted" if unknown else ""),
            )
        )
        if e.get("bytes_in_max_broker") is not None:
            rows.append(
                (
                    "most into one broker",
                    f"{e['bytes_in_max']} ({human_bytes(e['bytes_in_max'])}), broker {e['bytes_in_max_broker']}",
                )
            )
    else:
        rows.append(("bytes copied", "unknown (plan from a snapshot taken with --bootstrap-server to know)"))
    if "seconds_at_throttle" in e:
        secs = e["seconds_at_throttle"]
        rows.append(
            (
                f"time at --throttle {e['throttle']} B/s",
                f"at least {secs:.1f} s{human_duration(secs)} (the busiest broker's bytes / rate)",
            )
        )
    return rows


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: int = 0) -> list[str]:
    """A GFM table; the columns from `right` on are right-aligned."""
    align = ["---:" if i >= right else "---" for i in range(len(header))]
    out = ["| " + " | ".join(map(_cell, header)) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return out


BROKER_HEADER = ["broker", "replicas before", "replicas after", "leaders before", "leaders after"]
BYTES_HEADER = ["bytes before", "bytes after"]


def markdown(r: Report) -> str:
    return "\n".join([*_head(r), *_moves(r.seen)]) + "\n"


def _head(r: Report) -> list[str]:
    """The command, the summary and the per-broker table."""
    lines = [
        "# Reassignment plan",
        "",
        f"Command: `{r.command}`",
        "",
        f"Seed: {r.seed} (the same command with `--seed {r.seed}` gives the same plan)",
        "",
        *_table(["", "this plan"], summary_rows(r), right=2),
        "",
        "## Per broker",
        "",
    ]
    header = BROKER_HEADER + (BYTES_HEADER if r.seen.sized else [])
    chosen = set(r.brokers)
    rows = [
        [str(b) + ("" if b in chosen else " (not in plan)"), *map(str, values)]
        for b, values in broker_rows(r)
    ]
    return [*lines, *_table(header, rows, right=1), ""]


def _moves(seen: Collector) -> list[str]:
    if not seen.moves_total:
        return ["## Moves by topic", "", "No partition changes."]
    lines: list[str] = ["## Moves by topic", ""]
    by_topic: dict[str, list[Move]] = {}
    for m in seen.moves:
        by_topic.setdefault(m[0], []).append(m)
    for topic, moves in by_topic.items():
        lines += [f"### {topic}", ""]
        rows = [[str(p), ",".join(map(str, old)), ",".join(map(str, new))] for _, p, old, new in moves]
        lines += [*_table(["partition", "replicas before", "replicas after"], rows, right=3), ""]
    more = seen.moves_total - len(seen.moves)
    if more:
        lines.append(
            f"Shown: the first {len(seen.moves)} of {seen.moves_total} partitions that change; "
            f"and {more} more (the proposed plan has them all)."
        )
    return lines


CHARTS = (("replicas", 0, 1), ("preferred leaders", 2, 3), ("bytes", 4, 5))
CSS = """body{font:15px/1.45 system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em}
th{background:#f3f3f3}code{background:#f3f3f3;padding:0 .3em}.charts{display:flex;flex-wrap:wrap;gap:2em}
svg text{font:12px system-ui,sans-serif}svg text.t{font-weight:bold;font-size:13px}.before{fill:#b9b9b9}.after{fill:#2f6fb0}"""


def bar_length(value: float, most: float) -> float:
    """A bar's length in px: proportional to its value, the chart's largest at BAR_WIDTH."""
    return round(value / most * BAR_WIDTH, 1) if most else 0.0


def svg_chart(title: str, rows: Sequence[tuple[int, int, int]], fmt: Any = str) -> str:
    """Horizontal bars, two per broker (before grey, after blue); rows: (broker, before, after)."""
    most = max((max(b, a) for _, b, a in rows), default=0)
    step, left = 34, 40
    height = 28 + step * len(rows)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + BAR_WIDTH + 110}" height="{height}" '
        f'role="img" aria-label="{html.escape(title)} per broker, before and after">',
        f'<text class="t" x="0" y="14">{html.escape(title)}</text>',
    ]
    for i, (broker, before, after) in enumerate(rows):
        y = 24 + i * step
        parts.append(f'<text x="0" y="{y + 17}">{broker}</text>')
        for j, (when, value) in enumerate((("before", before), ("after", after))):
            length = bar_length(value, most)
            yy = y + j * 14
            parts.append(
                f'<rect class="{when}" x="{left}" y="{yy}" width="{length}" height="12" '
                f'data-broker="{broker}" data-when="{when}" data-value="{value}"/>'
            )
            parts.append(f'<text x="{left + length + 4}" y="{yy + 10}">{html.escape(fmt(value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def html_page(r: Report) -> str:
    """The Markdown rendered (CommonMark with tables), the charts after the per-broker table; no script,
    no network."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")  # no raw HTML from names
    rows = broker_rows(r)
    width = len(rows[0][1]) if rows else 0
    charts = [
        svg_chart(title, [(b, v[i], v[j]) for b, v in rows], human_bytes if title == "bytes" else str)
        for title, i, j in CHARTS
        if j < width
    ]
    legend = (
        '<p><svg width="12" height="12"><rect class="before" width="12" height="12"/></svg> before '
        '<svg width="12" height="12"><rect class="after" width="12" height="12"/></svg> after</p>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Reassignment plan</title>"
        f"<style>{CSS}</style></head><body>\n"
        + md.render("\n".join(_head(r)))
        + f'{legend}\n<div class="charts">{"".join(charts)}</div>\n'
        + md.render("\n".join(_moves(r.seen)))
        + "</body></html>\n"
    )


def write_report(base: str, r: Report) -> tuple[str, str]:
    """BASE.md and BASE.html; their paths."""
    from reassign_cli.errors import OperationalError

    paths = (base + ".md", base + ".html")
    try:
        for path, text in zip(paths, (markdown(r), html_page(r)), strict=True):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    except OSError as e:
        raise OperationalError(f"Cannot write the report {base}.md/.html: {e.strerror or e}") from None
    return paths
