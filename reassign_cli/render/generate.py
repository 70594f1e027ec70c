"""Rendering for `generate`: Kafka's text on stdout, the JSON document, and the summary table on stderr."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import orjson
from rich.bar import Bar
from rich.table import Table

from reassign_cli.planning.plan import PlanStats, plan_stats

__all__ = ["CURRENT_HEADER", "PROPOSED_HEADER", "PlanStats", "output_frame", "plan_stats", "summary_table"]

CURRENT_HEADER = "Current partition replica assignment"
PROPOSED_HEADER = "Proposed partition reassignment configuration"


def output_frame(
    json_mode: bool, seed: int, extra_stats: Mapping[str, Any] | None = None
) -> tuple[str, str, str]:
    """What goes before the current document, between the two, and after the proposed one.

    Text: exactly Kafka's --generate output (a header, the JSON, a blank line, the second header, the JSON).
    JSON: one document {"seed":N,"current":<Kafka doc>,"proposed":<Kafka doc>}, the Kafka documents embedded
    byte for byte as in the text output (they are compact JSON already), plus "stats" when a strategy
    reports figures of its own (extra_stats)."""
    if json_mode:
        tail = "" if extra_stats is None else ',"stats":' + orjson.dumps(dict(extra_stats)).decode()
        return f'{{"seed":{int(seed)},"current":', ',"proposed":', tail + "}\n"
    return f"{CURRENT_HEADER}\n", f"\n\n{PROPOSED_HEADER}\n", "\n"


BALANCED_KEYS = (
    "copies",
    "lower_bound",
    "copies_over_lower_bound",
    "leader_changes",
    "replicas_max_min_before",
    "replicas_max_min_after",
    "leaders_max_min_before",
    "leaders_max_min_after",
)


SIZE_KEYS = ("bytes_copied", "copies_size_unknown", "bytes_in_max", "bytes_in_max_broker")
THROTTLE_KEYS = ("throttle", "seconds_at_throttle")


def extra_lines(extra: Mapping[str, Any]) -> list[str]:
    """The figures beyond the table: the balanced strategy's and the bytes copied in sentences, others
    as "name: value"."""
    lines: list[str] = []
    rest = dict(extra)
    if all(k in extra for k in BALANCED_KEYS):
        lines += _balanced_lines(extra)
        for k in BALANCED_KEYS:
            del rest[k]
    if all(k in extra for k in SIZE_KEYS):
        lines += size_lines(extra)
        for k in (*SIZE_KEYS, *THROTTLE_KEYS):
            rest.pop(k, None)
    if all(k in extra for k in BYTES_KEYS):
        lines += bytes_lines(extra)
        for k in BYTES_KEYS:
            del rest[k]
    if all(k in extra for k in DISK_KEYS):
        lines += disk_lines(extra)
        for k in DISK_KEYS:
            del rest[k]
    if all(k in extra for k in LOG_DIR_KEYS):
        lines += log_dir_lines(extra)
        for k in (*LOG_DIR_KEYS, *LOG_DIR_UTIL_KEYS, "bytes_copied_between_brokers", "disks_outside_band"):
            rest.pop(k, None)
    return lines + [f"{name}: {value}" for name, value in rest.items()]


BYTES_KEYS = (
    "bytes_lower_bound",
    "bytes_max_dev_before",
    "bytes_max_dev_after",
    "bytes_max_dev_after_broker",
    "bytes_within_tolerance",
    "bytes_best_reachable_dev",
    "bytes_tolerance",
    "bytes_mean",
    "bytes_per_broker_before",
    "bytes_per_broker_after",
)


DISK_KEYS = (
    "bytes_balanced_by",
    "disk_capacity_per_broker",
    "disk_utilization_mean",
    "disk_utilization_before",
    "disk_utilization_after",
    "disk_in_use_before",
    "disk_peak_utilization",
    "max_disk_utilization",
)


LOG_DIR_KEYS = (
    "bytes_moved_within_brokers",
    "moves_within_brokers",
    "disks_balanced_by",
    "disks_goal",
    "disks_within_tolerance",
    "disk_bytes_before",
    "disk_bytes_after",
)
LOG_DIR_UTIL_KEYS = (
    "disk_utilization_per_dir_before",
    "disk_utilization_per_dir_after",
    "disk_peak_utilization_per_dir",
)


def log_dir_lines(e: Mapping[str, Any]) -> list[str]:
    """--balance bytes disk by disk (planning/balanced/disks.py): the copies within brokers apart from
    those between them, the goal, and each log dir before and after (up to MAX_BROKER_ROWS of them)."""
    util = "disk_utilization_per_dir_after" in e
    goal = f"{100 * e['disks_goal']:.1f}%" if util else human_bytes(e["disks_goal"])
    moved = e["bytes_moved_within_brokers"]
    lines = [
        f"moved within brokers (log dir to log dir, no network): {e['moves_within_brokers']} replicas, "
        f"{moved} ({human_bytes(moved)})"
        + (
            f"; copied between brokers: {e['bytes_copied_between_brokers']} "
            f"({human_bytes(e['bytes_copied_between_brokers'])})"
            if "bytes_copied_between_brokers" in e
            else ""
        ),
        f"log dirs: goal {goal} each"
        + ("" if e["disks_within_tolerance"] else f", {e.get('disks_outside_band')} outside their band"),
    ]
    before, after = e["disk_bytes_before"], e["disk_bytes_after"]
    if len(before) > MAX_BROKER_ROWS:
        return lines
    if util:
        ub, ua, up = (e[k] for k in LOG_DIR_UTIL_KEYS)
        per = "; ".join(
            f"{k}: {100 * ub[k]:.1f}% -> {100 * ua[k]:.1f}% (peak {100 * up[k]:.1f}%)" for k in before
        )
    else:
        per = "; ".join(f"{k}: {human_bytes(before[k])} -> {human_bytes(after[k])}" for k in before)
    return [*lines, f"per log dir: {per}"]


def disk_lines(e: Mapping[str, Any]) -> list[str]:
    """--balance bytes with the disks' capacity, in two measures named as such: utilization (the
    partitions' bytes over the capacity: what is balanced) before and after; and the disk in use (all
    that is on the volumes, Kafka's or not, plus what the broker receives) now and at the peak of the
    move, against --max-disk-utilization."""
    before, after, peak = (
        e["disk_utilization_before"],
        e["disk_utilization_after"],
        e["disk_peak_utilization"],
    )
    top = max(peak, key=lambda k: (peak[k], -int(k))) if peak else None
    lines: list[str] = []
    if top is not None:
        lines.append(
            f"peak disk in use during the move (all data on the volumes): {100 * peak[top]:.1f}% "
            f"(broker {top}), limit {100 * e['max_disk_utilization']:g}%"
        )
    if len(before) > MAX_BROKER_ROWS:
        return lines
    caps, now = e["disk_capacity_per_broker"], e.get("disk_in_use_before", {})
    per = "; ".join(
        f"{k}: {100 * before[k]:.1f}% -> {100 * after[k]:.1f}% of {human_bytes(caps[k])}"
        + (f" (disk in use {100 * now[k]:.1f}% now, peak {100 * peak[k]:.1f}%)" if k in now else "")
        for k in before
    )
    return [*lines, f"utilization per broker (its partitions' bytes over its capacity): {per}"]


def bytes_lines(e: Mapping[str, Any]) -> list[str]:
    """--balance bytes: bytes per broker before and after, the worst distance from the mean, the bytes
    copied against the lower bound."""
    before, after = e["bytes_per_broker_before"], e["bytes_per_broker_after"]
    bound = e["bytes_lower_bound"]
    ratio = f", ratio {e['bytes_copied'] / bound:.3f}" if bound and "bytes_copied" in e else ""
    mean = f"the mean ({human_bytes(e['bytes_mean'])})"
    if e.get("bytes_balanced_by") == "utilization":
        mean = f"the mean disk utilization ({100 * e['disk_utilization_mean']:.1f}%)"
    lines = [
        f"bytes lower bound: {bound} ({human_bytes(bound)}){ratio}",
        f"worst broker from {mean}: {100 * e['bytes_max_dev_before']:.1f}% "
        f"before, {100 * e['bytes_max_dev_after']:.1f}% after (tolerance {100 * e['bytes_tolerance']:g}%"
        + ("" if e.get("bytes_within_tolerance", True) else ", not reached")
        + ")",
    ]
    if len(before) > MAX_BROKER_ROWS:
        b, a = list(before.values()), list(after.values())
        return [
            *lines,
            f"bytes per broker, min / max: {human_bytes(min(b))} / {human_bytes(max(b))} before, "
            f"{human_bytes(min(a))} / {human_bytes(max(a))} after",
        ]
    per = ", ".join(f"{k}: {human_bytes(before[k])} -> {human_bytes(after[k])}" for k in before)
    return [*lines, f"bytes per broker: {per}"]


def size_lines(e: Mapping[str, Any]) -> list[str]:
    """The bytes copied, the busiest receiver and the time at the throttle, in sentences."""
    unknown = e["copies_size_unknown"]
    lines = [
        f"bytes copied: {e['bytes_copied']} ({human_bytes(e['bytes_copied'])})"
        + (f"; {unknown} copies of partitions of unknown size not counted" if unknown else "")
    ]
    if e["bytes_in_max_broker"] is not None:
        lines.append(
            f"most into one broker: {e['bytes_in_max']} ({human_bytes(e['bytes_in_max'])}), broker "
            f"{e['bytes_in_max_broker']}"
        )
    if "seconds_at_throttle" in e:
        secs = e["seconds_at_throttle"]
        lines.append(
            f"at --throttle {e['throttle']} B/s ({human_bytes(e['throttle'])}/s) per broker: at least "
            f"{secs:.1f} s{human_duration(secs)} (the busiest broker's bytes / rate)"
        )
    return lines


def human_bytes(n: float) -> str:
    """Binary units, 3 significant digits: 1536 -> "1.5 KiB", 1000 -> "1000 B", 1100 KiB -> "1.07 MiB"."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    for unit in units:
        if abs(n) < 1000 or unit == units[-1]:
            return f"{int(n)} B" if unit == "B" else f"{n:.3g} {unit}"
        if abs(n) < 1024:  # 1000..1023 of a unit: not worth the next one
            return f"{n:.0f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def human_duration(secs: float) -> str:
    """ " (1 h 02 min)" or " (3 min 20 s)" for a minute or more; "" below."""
    whole = round(secs)
    if whole < 60:
        return ""
    h, rem = divmod(whole, 3600)
    m, s = divmod(rem, 60)
    return f" ({h} h {m:02d} min)" if h else f" ({m} min {s:02d} s)"


def _balanced_lines(e: Mapping[str, Any]) -> list[str]:
    return [
        f"copies: {e['copies']} (lower bound {e['lower_bound']}, ratio {e['copies_over_lower_bound']:.3f})",
        f"preferred leaders changed: {e['leader_changes']}",
        f"replicas per broker, max - min (all topics): {e['replicas_max_min_before']} before, "
        f"{e['replicas_max_min_after']} after",
        f"preferred leaders per broker, max - min (all topics): {e['leaders_max_min_before']} before, "
        f"{e['leaders_max_min_after']} after",
    ]


MAX_BROKER_ROWS = 30  # more brokers than this: a condensed table unless --verbose


def summary_table(
    st: PlanStats,
    selected: Iterable[int],
    *,
    every_broker: bool = False,
    extra_stats: Mapping[str, Any] | None = None,
) -> Table:
    """Per broker: replicas and preferred leaders before and after (brokers outside the plan marked).
    With more than MAX_BROKER_ROWS brokers (and not every_broker): min / mean / max over the brokers.
    A strategy's own figures (extra_stats), if any, follow the caption as "name: value"."""
    chosen = set(selected)
    ids = sorted(chosen | set(st.replicas_before) | set(st.replicas_after))
    caption = (
        f"{st.partitions_changed} of {st.partitions} partitions change, {st.replicas_moved} replicas "
        f"move, {st.leaders_changed} preferred leaders change"
    )
    if extra_stats:
        caption += "".join(f"\n{line}" for line in extra_lines(extra_stats))
    condensed = len(ids) > MAX_BROKER_ROWS and not every_broker
    table = Table(
        title=f"Proposed plan over {len(chosen)} brokers" if condensed else "Proposed plan by broker",
        caption=caption + (" (-v: one row per broker)" if condensed else ""),
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("per broker" if condensed else "broker", justify="right")
    for name in ("replicas before", "replicas after", "leaders before", "leaders after"):
        table.add_column(name, justify="right")
    counters = (st.replicas_before, st.replicas_after, st.leaders_before, st.leaders_after)
    if condensed:
        # Over the brokers of the plan (the "after" side is only ever on them).
        plan_ids = sorted(chosen) or ids
        cols = [np.array([c[b] for b in plan_ids], dtype=np.int64) for c in counters]
        table.add_row("min", *(str(int(c.min())) for c in cols))
        table.add_row("mean", *(f"{c.mean():.1f}" for c in cols))
        table.add_row("max", *(str(int(c.max())) for c in cols))
        outside = [b for b in ids if b not in chosen]
        if outside:
            rb = sum(st.replicas_before[b] for b in outside)
            lb = sum(st.leaders_before[b] for b in outside)
            table.add_row(f"{len(outside)} not in plan (sum)", str(rb), "0", str(lb), "0", style="dim")
        return table
    table.add_column("replicas before → after", no_wrap=True, min_width=2 * BAR_CELLS + 3)
    most = max((max(st.replicas_before[b], st.replicas_after[b]) for b in ids), default=0)
    for b in ids:
        table.add_row(
            str(b) if b in chosen else f"{b} (not in plan)",
            *(str(c[b]) for c in counters),
            _bars(st.replicas_before[b], st.replicas_after[b], most),
            style=None if b in chosen else "dim",
        )
    return table


BAR_CELLS = 10


def _bars(before: int, after: int, most: int) -> Table:
    """Two bars on one line, before → after, the busiest broker's at full width: a skew seen at a glance."""
    grid = Table.grid(padding=0)
    grid.add_column(width=BAR_CELLS)
    grid.add_column()
    grid.add_column(width=BAR_CELLS)
    size = most or 1
    grid.add_row(Bar(size, 0, before, width=BAR_CELLS), " → ", Bar(size, 0, after, width=BAR_CELLS))
    return grid
