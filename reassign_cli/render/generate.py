"""Rendering for `generate`: Kafka's text on stdout, the JSON document, and the summary table on stderr."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
from rich.table import Table

CURRENT_HEADER = "Current partition replica assignment"
PROPOSED_HEADER = "Proposed partition reassignment configuration"

AssignmentLike = Mapping[str, Mapping[int, Sequence[int]]]


def output_frame(json_mode: bool, seed: int) -> tuple[str, str, str]:
    """What goes before the current document, between the two, and after the proposed one.

    Text: exactly Kafka's --generate output (a header, the JSON, a blank line, the second header, the JSON).
    JSON: one document {"seed":N,"current":<Kafka doc>,"proposed":<Kafka doc>}, the Kafka documents embedded
    byte for byte as in the text output (they are compact JSON already)."""
    if json_mode:
        return f'{{"seed":{int(seed)},"current":', ',"proposed":', "}\n"
    return f"{CURRENT_HEADER}\n", f"\n\n{PROPOSED_HEADER}\n", "\n"


@dataclass(slots=True)
class PlanStats:
    partitions: int = 0
    partitions_changed: int = 0
    replicas_moved: int = 0  # replicas that must be created on a broker that does not hold them yet
    leaders_changed: int = 0  # partitions whose preferred leader (first replica) changes
    replicas_before: Counter[int] = field(default_factory=Counter)
    replicas_after: Counter[int] = field(default_factory=Counter)
    leaders_before: Counter[int] = field(default_factory=Counter)
    leaders_after: Counter[int] = field(default_factory=Counter)


def _rows(
    current: AssignmentLike, proposed: AssignmentLike
) -> tuple[list[Sequence[int]], list[Sequence[int]]]:
    """Old and new replica lists, aligned partition by partition over the proposal."""
    old_rows: list[Sequence[int]] = []
    new_rows: list[Sequence[int]] = []
    for topic, new_parts in proposed.items():
        old_parts = current.get(topic, {})
        if old_parts.keys() == new_parts.keys() and list(old_parts) == list(new_parts):
            old_rows.extend(old_parts.values())
        else:
            old_rows.extend([old_parts.get(p, ()) for p in new_parts])
        new_rows.extend(new_parts.values())
    return old_rows, new_rows


def _count(flat: np.ndarray) -> Counter[int]:
    if flat.size == 0:
        return Counter()
    ids, counts = np.unique(flat, return_counts=True)
    return Counter(dict(zip(ids.tolist(), counts.tolist(), strict=True)))


def _flat(rows: list[Sequence[int]]) -> np.ndarray:
    total = sum(map(len, rows))
    return np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=total)


def plan_stats(current: AssignmentLike, proposed: AssignmentLike) -> PlanStats:
    """Per-broker replica and preferred-leader counts before and after, and how much would move.
    Vectorized (numpy) when every partition has the same replica count before and after, as usual."""
    old_rows, new_rows = _rows(current, proposed)
    st = PlanStats(partitions=len(new_rows))
    if not new_rows:
        return st
    old_lens, new_lens = set(map(len, old_rows)), set(map(len, new_rows))
    if len(old_lens) == 1 and len(new_lens) == 1 and 0 not in old_lens and 0 not in new_lens:
        n = len(new_rows)
        o = _flat(old_rows).reshape(n, old_lens.pop())
        m = _flat(new_rows).reshape(n, new_lens.pop())
        st.replicas_before, st.replicas_after = _count(o.ravel()), _count(m.ravel())
        st.leaders_before, st.leaders_after = _count(o[:, 0]), _count(m[:, 0])
        changed = (o != m).any(axis=1) if o.shape == m.shape else np.ones(n, dtype=bool)
        st.partitions_changed = int(np.count_nonzero(changed))
        st.leaders_changed = int(np.count_nonzero(o[:, 0] != m[:, 0]))
        # a new replica "moves" when no old replica of its partition is on that broker
        st.replicas_moved = int((m[:, :, None] != o[:, None, :]).all(axis=2).sum())
        return st
    st.replicas_before = _count(_flat(old_rows))
    st.replicas_after = _count(_flat(new_rows))
    st.leaders_before.update(r[0] for r in old_rows if r)
    st.leaders_after.update(r[0] for r in new_rows if r)
    for old, new in zip(old_rows, new_rows, strict=True):
        if list(old) != list(new):
            st.partitions_changed += 1
            if not old or not new or old[0] != new[0]:
                st.leaders_changed += 1
            st.replicas_moved += len(set(new).difference(old))
    return st


MAX_BROKER_ROWS = 30  # more brokers than this: a condensed table unless --verbose


def summary_table(st: PlanStats, selected: Iterable[int], *, every_broker: bool = False) -> Table:
    """Per broker: replicas and preferred leaders before and after (brokers outside the plan marked).
    With more than MAX_BROKER_ROWS brokers (and not every_broker): min / mean / max over the brokers."""
    chosen = set(selected)
    ids = sorted(chosen | set(st.replicas_before) | set(st.replicas_after))
    caption = (
        f"{st.partitions_changed} of {st.partitions} partitions change, {st.replicas_moved} replicas "
        f"move, {st.leaders_changed} preferred leaders change"
    )
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
