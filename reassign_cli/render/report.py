"""`generate --report NAME`: the plan for review, as BASE.md (a pull-request comment, a CI job summary) and
BASE.html (one self-contained page, its chart an inline SVG), BASE being NAME without a .md or .html ending.

The page is made for a cluster of any size: the command one option per line, long arguments shortened
(the whole command folded); the summary with the tolerance, the worst broker and the disk figures; one
chart of the distribution before and after (each side's brokers sorted, the tolerance band shaded); the
TOP brokers that change most, the others folded; bytes in binary units (exact in the cell's tooltip).

The figures are generate's own: the per-broker replicas and leaders are the `PlanStats` the summary table
shows, the copies, lower bound, bytes and time are the `stats` that `--format json` prints. Only the bytes
per broker are counted here, from the same chunks of the plan as generate writes them (`Collector`, handed
to the pipeline as its `observe` hook), with the partition sizes generate planned with.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt

from reassign_cli.planning.plan import PlanStats
from reassign_cli.render.generate import human_bytes, human_duration

MAX_MOVES = 50  # moves listed; the rest are counted
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


@dataclass(frozen=True, slots=True)
class BrokerRow:
    """One broker's figures, before and after: replicas and preferred leaders (PlanStats), bytes (the
    --balance bytes figures when given, else the plan's chunks as the Collector added them; None unknown),
    disk utilization (None unless the capacities are known)."""

    broker: int
    in_plan: bool
    replicas: tuple[int, int]
    leaders: tuple[int, int]
    bytes: tuple[int, int] | None
    utilization: tuple[float, float] | None

    def change(self) -> tuple[float, int, int]:
        """How much the plan changes this broker, for "the brokers that change most": the utilization's
        change when known, else the bytes', else the replicas' plus the leaders'; then replicas, then id."""
        reps = abs(self.replicas[1] - self.replicas[0])
        if self.utilization is not None:
            main: float = abs(self.utilization[1] - self.utilization[0])
        elif self.bytes is not None:
            main = abs(self.bytes[1] - self.bytes[0])
        else:
            main = reps + abs(self.leaders[1] - self.leaders[0])
        return (main, reps, -self.broker)


def _per_broker(extra: Mapping[str, Any], key: str) -> dict[int, Any] | None:
    values = extra.get(key)
    return None if values is None else {int(k): v for k, v in values.items()}


def broker_rows(r: Report) -> list[BrokerRow]:
    """Every broker that holds or receives a replica, or is one of the plan's, by id."""
    st, e = r.stats, r.extra or {}
    ids = sorted(set(r.brokers) | set(st.replicas_before) | set(st.replicas_after))
    bb: Mapping[int, int] | None = None
    ba: Mapping[int, int] | None = None
    if r.seen.sized or "bytes_per_broker_before" in e:
        bb, ba = bytes_per_broker(r)
    ub, ua = _per_broker(e, "disk_utilization_before"), _per_broker(e, "disk_utilization_after")
    chosen = set(r.brokers)
    return [
        BrokerRow(
            b,
            b in chosen,
            (st.replicas_before[b], st.replicas_after[b]),
            (st.leaders_before[b], st.leaders_after[b]),
            None if bb is None or ba is None else (int(bb.get(b, 0)), int(ba.get(b, 0))),
            None if ub is None or ua is None or b not in ub else (float(ub[b]), float(ua.get(b, 0.0))),
        )
        for b in ids
    ]


TOP = 10  # the brokers that change most, shown; the rest folded


def top_and_rest(rows: Sequence[BrokerRow]) -> tuple[list[BrokerRow], list[BrokerRow]]:
    """The TOP brokers that change most (most first) and the others (by id); with TOP or fewer brokers,
    all of them by id and none folded."""
    if len(rows) <= TOP:
        return list(rows), []
    top = sorted(rows, key=lambda x: x.change(), reverse=True)[:TOP]
    chosen = {x.broker for x in top}
    return top, [x for x in rows if x.broker not in chosen]


def percent(u: float) -> str:
    return f"{100 * u:.1f}%"


def broker_header(rows: Sequence[BrokerRow]) -> list[str]:
    head = ["broker", "replicas", "preferred leaders"]
    if rows and rows[0].bytes is not None:
        head.append("bytes")
    if rows and rows[0].utilization is not None:
        head.append("disk utilization")
    return head


def broker_cells(x: BrokerRow) -> list[tuple[str, str | None]]:
    """(text, exact value for a tooltip or None) per column, before -> after; bytes in binary units."""
    cells: list[tuple[str, str | None]] = [
        (str(x.broker) + ("" if x.in_plan else " (not in plan)"), None),
        (f"{x.replicas[0]} → {x.replicas[1]}", None),
        (f"{x.leaders[0]} → {x.leaders[1]}", None),
    ]
    if x.bytes is not None:
        b, a = x.bytes
        cells.append((f"{human_bytes(b)} → {human_bytes(a)}", f"{b:,} B → {a:,} B"))
    if x.utilization is not None:
        cells.append((f"{percent(x.utilization[0])} → {percent(x.utilization[1])}", None))
    return cells


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
                human_bytes(e["bytes_copied"])
                + (f"; {unknown} copies of unknown size not counted" if unknown else ""),
            )
        )
        if e.get("bytes_in_max_broker") is not None:
            rows.append(
                (
                    "most into one broker",
                    f"{human_bytes(e['bytes_in_max'])}, broker {e['bytes_in_max_broker']}",
                )
            )
    else:
        rows.append(("bytes copied", "unknown (plan from a snapshot taken with --bootstrap-server to know)"))
    if "seconds_at_throttle" in e:
        secs = e["seconds_at_throttle"]
        rows.append(
            (
                f"time at --throttle {human_bytes(e['throttle'])}/s",
                f"at least {secs:.1f} s{human_duration(secs)} (the busiest broker's bytes / rate)",
            )
        )
    return rows + balance_rows(e)


def summary_exact(r: Report) -> dict[str, str]:
    """The exact figures behind the summary's binary units, by row name: the HTML cells' tooltips."""
    e = r.extra or {}
    out = {}
    for name, key in (("bytes copied", "bytes_copied"), ("most into one broker", "bytes_in_max")):
        if e.get(key) is not None:
            out[name] = f"{e[key]:,} B"
    if "throttle" in e:
        out[f"time at --throttle {human_bytes(e['throttle'])}/s"] = f"--throttle {e['throttle']:,} B/s"
    if e.get("bytes_lower_bound") is not None:
        out["bytes lower bound"] = f"{e['bytes_lower_bound']:,} B"
    return out


def balance_rows(e: Mapping[str, Any]) -> list[tuple[str, str]]:
    """--balance bytes: the tolerance and the worst broker's distance from the mean, the bytes lower
    bound; with the disks' capacity, the mean utilization and the peak during the move (as on stderr)."""
    if "bytes_tolerance" not in e:
        return []
    by_disk = e.get("bytes_balanced_by") == "utilization"
    mean = (
        f"the mean disk utilization ({percent(e['disk_utilization_mean'])})"
        if by_disk
        else f"the mean ({human_bytes(e['bytes_mean'])})"
    )
    rows = [
        ("tolerance", f"±{100 * e['bytes_tolerance']:g}% of {mean}"),
        (
            "worst broker from the mean",
            f"{percent(e['bytes_max_dev_before'])} before, {percent(e['bytes_max_dev_after'])} after",
        ),
    ]
    bound = e.get("bytes_lower_bound")
    if bound is not None:
        ratio = f", ratio {e['bytes_copied'] / bound:.3f}" if bound and "bytes_copied" in e else ""
        rows.append(("bytes lower bound", f"{human_bytes(bound)}{ratio}"))
    peak = e.get("disk_peak_utilization") or {}
    if peak:
        top = max(peak, key=lambda k: (peak[k], -int(k)))
        rows.append(
            (
                "peak disk utilization during the move",
                f"{percent(peak[top])} (broker {top}), limit {100 * e['max_disk_utilization']:g}%",
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


# The command line: one option (with its value) per line, so nothing wraps inside a --flag; an argument
# longer than LONG_ARG characters (a 330-id --broker-list) shown shortened, the whole command folded below.
LONG_ARG = 40
KEEP = 16  # characters of a long argument kept at its start


def shorten(arg: str) -> str:
    """An argument longer than LONG_ARG characters, shell-quoted, cut after about KEEP characters (at a
    comma when it is a list), with what was left out: "1,2,3,4,5,6,7,…,330 [330 items]". Not to paste:
    the whole command is folded beside it."""
    import shlex

    if len(arg) <= LONG_ARG:
        return shlex.quote(arg)
    items = arg.split(",")
    if len(items) > 2:
        kept = [items[0]]
        while len(",".join([*kept, items[len(kept)]])) <= KEEP and len(kept) < len(items) - 2:
            kept.append(items[len(kept)])
        return f"{','.join(kept)},…,{items[-1]} [{len(items)} items]"
    return f"{arg[:KEEP]}… [{len(arg)} characters]"


def command_lines(argv: Sequence[str]) -> tuple[list[str], bool]:
    """The command as shell lines ending in " \\", each option with its value on a line of its own (the
    program and subcommand on the first); and whether an argument was shortened."""
    lines: list[list[str]] = [[]]
    for i, arg in enumerate(argv):
        if arg.startswith("-") and i >= 2:
            lines.append([])
        lines[-1].append(arg)
    shown = [" ".join(map(shorten, line)) for line in lines]
    folded = any(len(a) > LONG_ARG for a in argv)
    return [
        ("    " if i else "") + t + (" \\" if i < len(shown) - 1 else "") for i, t in enumerate(shown)
    ], folded


def _fence(text: str) -> str:
    """A fenced code block that no backtick run in `text` can close."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _argv(r: Report) -> list[str]:
    import shlex

    try:
        return shlex.split(r.command)
    except ValueError:
        return [r.command]


def markdown(r: Report) -> str:
    moves = _moves(r.seen)
    if r.seen.moves_total > TOP:  # folded: the heading stays, the tables go in a <details>
        moves = [
            *moves[:2],
            f"<details><summary>{_moves_title(r.seen)}</summary>",
            "",
            *moves[2:],
            "",
            "</details>",
        ]
    return "\n".join([*_head(r), *_brokers_md(r), *moves]) + "\n"


def _moves_title(seen: Collector) -> str:
    shown = len(seen.moves)
    what = f"The first {shown} of {seen.moves_total}" if shown < seen.moves_total else f"All {shown}"
    return f"{what} partitions that change, by topic"


def _head(r: Report) -> list[str]:
    """The command (long arguments shortened, the whole command folded), the seed, the summary."""
    lines, folded = command_lines(_argv(r))
    out = ["# Reassignment plan", "", "Command:", "", _fence("\n".join(lines)), ""]
    if folded:
        out += ["<details><summary>The whole command</summary>", "", _fence(r.command), "", "</details>", ""]
    return [
        *out,
        f"Seed: {r.seed} (the same command with `--seed {r.seed}` gives the same plan)",
        "",
        *_table(["", "this plan"], summary_rows(r), right=2),
        "",
    ]


def _brokers_md(r: Report) -> list[str]:
    rows = broker_rows(r)
    top, rest = top_and_rest(rows)
    header = broker_header(rows)
    out = [
        f"## {_top_title(rows, top)}",
        "",
        *_table(header, [[t for t, _ in broker_cells(x)] for x in top], 1),
        "",
    ]
    out += [_distribution_line(rows), ""]
    if rest:
        out += [
            f"<details><summary>{_rest_title(rest)}</summary>",
            "",
            *_table(header, [[t for t, _ in broker_cells(x)] for x in rest], 1),
            "",
            "</details>",
            "",
        ]
    return out


def _top_title(rows: Sequence[BrokerRow], top: Sequence[BrokerRow]) -> str:
    if len(top) == len(rows):
        return "Per broker"
    return f"The {len(top)} brokers that change most (of {len(rows)})"


def _rest_title(rest: Sequence[BrokerRow]) -> str:
    return f"The other {len(rest)} brokers, by id"


@dataclass(frozen=True, slots=True)
class Series:
    """What the chart plots: one value per broker before and after, how to write a value, and the band
    (the --tolerance around the mean) when there is one."""

    title: str
    before: list[float]
    after: list[float]
    fmt: Any
    band: tuple[float, float] | None
    mean: float | None
    ids: tuple[list[int], list[int]] = ([], [])  # the broker at each point of before, of after


def series(r: Report, rows: Sequence[BrokerRow]) -> Series:
    """Utilization when the capacities are known, else bytes when the sizes are, else replicas; over the
    plan's brokers (those outside it hold nothing afterwards)."""
    inside = [x for x in rows if x.in_plan] or list(rows)
    e = r.extra or {}
    tol = e.get("bytes_tolerance")
    fmt: Callable[[float], str]
    if inside and inside[0].utilization is not None:
        mean = float(e["disk_utilization_mean"])
        vals = [(x.broker, x.utilization) for x in inside if x.utilization is not None]
        title, fmt = "Disk utilization per broker", percent
    elif inside and inside[0].bytes is not None:
        vals = [(x.broker, x.bytes) for x in inside if x.bytes is not None]
        mean = float(e.get("bytes_mean", sum(a for _, (_, a) in vals) / len(vals)))
        title, fmt = "Bytes per broker", human_bytes
    else:
        vals = [(x.broker, (float(x.replicas[0]), float(x.replicas[1]))) for x in inside]
        mean = sum(a for _, (_, a) in vals) / len(vals) if vals else 0.0
        title, fmt = "Replicas per broker", lambda v: f"{v:g}"
    band = (mean * (1 - tol), mean * (1 + tol)) if tol is not None else None
    before = sorted((v[0], b) for b, v in vals)  # by value, then id
    after = sorted((v[1], b) for b, v in vals)
    ids = ([b for _, b in before], [b for _, b in after])
    return Series(title, [v for v, _ in before], [v for v, _ in after], fmt, band, mean, ids)


def _distribution_line(rows: Sequence[BrokerRow]) -> str:
    """The chart's gist in words, for the Markdown: min / median / max before and after."""
    inside = [x for x in rows if x.in_plan] or list(rows)
    fmt: Callable[[float], str]
    pairs: list[Any]
    if inside and inside[0].utilization is not None:
        pairs, fmt, what = [x.utilization for x in inside], percent, "disk utilization"
    elif inside and inside[0].bytes is not None:
        pairs, fmt, what = [x.bytes for x in inside], human_bytes, "bytes"
    else:
        pairs, fmt, what = [x.replicas for x in inside], lambda v: f"{v:g}", "replicas"

    def mmm(values: list[Any]) -> str:
        v = sorted(values)
        return " / ".join(fmt(x) for x in (v[0], v[len(v) // 2], v[-1])) if v else "-"

    return (
        f"Per broker, {what} min / median / max: {mmm([p[0] for p in pairs if p])} before, "
        f"{mmm([p[1] for p in pairs if p])} after."
    )


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


# The chart: a viewBox scaled to the page's width (no horizontal scroll at 600 px).
CHART_W, CHART_H = 640, 300
PLOT = (72, 52, 624, 262)  # left, top, right, bottom of the plotting area
CSS = """body{font:15px/1.45 system-ui,sans-serif;max-width:60em;margin:1.5em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;vertical-align:top}
th{background:#f3f3f3;text-align:left}td.n{text-align:right;white-space:nowrap}
.wide{overflow-x:auto;max-width:100%}
pre{background:#f3f3f3;padding:.6em .8em;overflow-x:auto;white-space:pre;font-size:13px}
code{background:#f3f3f3;padding:0 .3em}details{margin:.6em 0}summary{cursor:pointer;color:#2f6fb0}
svg.chart{width:100%;max-width:760px;height:auto;display:block}
svg text{font:12px system-ui,sans-serif;fill:#444}svg .t{font-weight:bold;font-size:14px;fill:#222}
.before{stroke:#9a9a9a;fill:none;stroke-width:2;stroke-dasharray:5 3}.after{stroke:#2f6fb0;fill:none;stroke-width:2.5}
circle.before{fill:#9a9a9a;stroke:none}circle.after{fill:#2f6fb0;stroke:none}
.band{fill:#2f9e44;fill-opacity:.14}.mean{stroke:#2f9e44;stroke-width:1}.grid{stroke:#e4e4e4}"""


def _num(v: float) -> str:
    """A value for a data- attribute: whole numbers exactly (bytes), others to 6 significant digits."""
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def nice_step(top: float, ticks: int = 4, binary: bool = False) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten; with `binary`, of a power of 1024's unit, so
    that bytes read 512 MiB, 1 GiB...) such that `ticks` steps cover `top`."""
    import math

    if top <= 0:
        return 1.0
    unit = 1024.0 ** max(0, math.floor(math.log(top, 1024))) if binary else 1.0
    raw = top / ticks / unit
    mag = 10 ** math.floor(math.log10(raw))
    return unit * next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def svg_chart(s: Series) -> str:
    """The distribution before and after: each side's brokers sorted by value, as two lines over the
    broker's rank, the --tolerance band shaded (or the mean drawn, without one)."""
    left, top, right, bottom = PLOT
    n = max(len(s.before), len(s.after))
    most = max([*s.before, *s.after, *(s.band or ()), 0.0])
    step = nice_step(most, binary=s.fmt is human_bytes)
    ymax = step * max(1, -(-most // step)) if most > 0 else 1.0

    def x(i: int) -> float:
        return round(left + (right - left) * (i / (n - 1) if n > 1 else 0.5), 1)

    def y(v: float) -> float:
        return round(bottom - (bottom - top) * v / ymax, 1)

    e = html.escape
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {CHART_W} {CHART_H}" '
        f'role="img" aria-label="{e(s.title)}, brokers sorted, before and after">',
        f'<text class="t" x="0" y="16">{e(s.title)}, brokers sorted by it</text>',
    ]
    parts += _legend(s)
    tick = 0.0
    while tick <= ymax + step / 1000:
        parts.append(f'<line class="grid" x1="{left}" x2="{right}" y1="{y(tick)}" y2="{y(tick)}"/>')
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4}" text-anchor="end">{e(s.fmt(tick))}</text>')
        tick += step
    if s.band is not None:
        lo, hi = s.band
        parts.append(
            f'<rect class="band" x="{left}" y="{y(hi)}" width="{right - left}" height="{round(y(lo) - y(hi), 1)}" '
            f'data-low="{_num(lo)}" data-high="{_num(hi)}"><title>within the tolerance: {e(s.fmt(lo))} to '
            f"{e(s.fmt(hi))}</title></rect>"
        )
    if s.mean is not None:
        parts.append(f'<line class="mean" x1="{left}" x2="{right}" y1="{y(s.mean)}" y2="{y(s.mean)}"/>')
    for when, values, ids in (("before", s.before, s.ids[0]), ("after", s.after, s.ids[1])):
        pts = " ".join(f"{x(i)},{y(v)}" for i, v in enumerate(values))
        parts.append(f'<polyline class="{when}" points="{pts}" data-values="{",".join(map(_num, values))}"/>')
        if n <= 40:
            parts += [
                f'<circle class="{when}" cx="{x(i)}" cy="{y(v)}" r="3"><title>broker {b} {when}: '
                f"{e(s.fmt(v))}</title></circle>"
                for i, (v, b) in enumerate(zip(values, ids, strict=True))
            ]
    parts.append(
        f'<text x="{(left + right) / 2}" y="{CHART_H - 12}" text-anchor="middle">{n} brokers, '
        "from the least to the most loaded (each line sorted on its own)</text>"
    )
    return "".join(parts) + "</svg>"


def _legend(s: Series) -> list[str]:
    out = [
        '<line class="before" x1="72" x2="100" y1="34" y2="34"/><text x="106" y="38">before</text>',
        '<line class="after" x1="164" x2="192" y1="34" y2="34"/><text x="198" y="38">after</text>',
    ]
    if s.band is not None:
        out.append(
            '<rect class="band" x="248" y="27" width="28" height="14"/><text x="282" y="38">within the tolerance</text>'
        )
    else:
        out.append('<line class="mean" x1="248" x2="276" y1="34" y2="34"/><text x="282" y="38">mean</text>')
    return out


def _html_table(header: Sequence[str], rows: Sequence[BrokerRow]) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = []
    for x in rows:
        tds = []
        for i, (text, exact) in enumerate(broker_cells(x)):
            title = f' title="{e(exact)}"' if exact else ""
            cls = ' class="n"' if i else ""
            tds.append(f"<td{cls}{title}>{e(text)}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (
        f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    )


def _html_head(r: Report) -> str:
    e = html.escape
    lines, folded = command_lines(_argv(r))
    out = ["<h1>Reassignment plan</h1>", f'<pre class="command">{e(chr(10).join(lines))}</pre>']
    if folded:
        out.append(
            f'<details><summary>The whole command</summary><pre class="command">{e(r.command)}</pre></details>'
        )
    out.append(
        f"<p>Seed: {r.seed} (the same command with <code>--seed {r.seed}</code> gives the same plan)</p>"
    )
    exact = summary_exact(r)
    facts = "".join(
        f"<tr><th>{e(k)}</th><td" + (f' title="{e(exact[k])}"' if k in exact else "") + f">{e(v)}</td></tr>"
        for k, v in summary_rows(r)
    )
    out.append(f'<div class="wide"><table class="facts"><tbody>{facts}</tbody></table></div>')
    return "\n".join(out)


def html_page(r: Report) -> str:
    """One self-contained page: no script, nothing fetched, every name escaped."""
    rows = broker_rows(r)
    top, rest = top_and_rest(rows)
    header = broker_header(rows)
    body = [_html_head(r), "<h2>Distribution</h2>", svg_chart(series(r, rows))]
    body += [f"<h2>{html.escape(_top_title(rows, top))}</h2>", _html_table(header, top)]
    if rest:
        body.append(f"<details><summary>{_rest_title(rest)}</summary>{_html_table(header, rest)}</details>")
    md = MarkdownIt("commonmark", {"html": False}).enable("table")  # no raw HTML from names
    moves = md.render("\n".join(_moves(r.seen))).replace("<table>", '<div class="wide"><table>')
    moves = moves.replace("</table>", "</table></div>")
    if r.seen.moves_total > TOP:
        head, _, rest_html = moves.partition("</h2>")
        moves = f"{head}</h2><details><summary>{_moves_title(r.seen)}</summary>{rest_html}</details>"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Reassignment plan</title><style>{CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n"
        + moves
        + "</body></html>\n"
    )


def report_paths(name: str) -> tuple[str, str]:
    """--report NAME -> (BASE.md, BASE.html): NAME is the base, or either file's name (a name ending in
    .md or .html, any case, loses that ending), so `--report x.html` writes x.md and x.html."""
    base = name
    for ext in (".html", ".md"):
        if name.lower().endswith(ext) and len(name) > len(ext):
            base = name[: -len(ext)]
    return base + ".md", base + ".html"


def write_report(name: str, r: Report) -> tuple[str, str]:
    """BASE.md and BASE.html (report_paths); their paths."""
    from reassign_cli.errors import OperationalError

    paths = report_paths(name)
    try:
        for path, text in zip(paths, (markdown(r), html_page(r)), strict=True):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    except OSError as e:
        raise OperationalError(
            f"Cannot write the report {paths[0]} / {paths[1]}: {e.strerror or e}"
        ) from None
    return paths
