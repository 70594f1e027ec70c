"""Rendering for `generate`: Kafka's text on stdout, the JSON document, and the summary table on stderr."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import orjson
from rich.table import Table

from reassign_cli.plan import PlanStats, plan_stats

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


def extra_lines(extra: Mapping[str, Any]) -> list[str]:
    """A strategy's figures for the summary: the balanced strategy's in sentences, others as "name: value"."""
    if set(extra) != set(BALANCED_KEYS):
        return [f"{name}: {value}" for name, value in extra.items()]
    e = extra
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
    for b in ids:
        table.add_row(
            str(b) if b in chosen else f"{b} (not in plan)",
            *(str(c[b]) for c in counters),
            style=None if b in chosen else "dim",
        )
    return table
