"""Rendering for `generate`: Kafka's text on stdout, the JSON document, and the summary table on stderr."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

from rich.table import Table

CURRENT_HEADER = "Current partition replica assignment"
PROPOSED_HEADER = "Proposed partition reassignment configuration"

AssignmentLike = Mapping[str, Mapping[int, Sequence[int]]]


def kafka_text(current_json: str, proposed_json: str) -> str:
    """Kafka's --generate output, exactly: the header, the JSON, a blank line, then the proposal."""
    return f"{CURRENT_HEADER}\n{current_json}\n\n{PROPOSED_HEADER}\n{proposed_json}\n"


def json_document(seed: int, current_json: str, proposed_json: str) -> str:
    """`--format json`: {"seed":N,"current":<Kafka doc>,"proposed":<Kafka doc>}, spliced from the Kafka
    texts (which are already compact JSON), so the embedded documents are byte-identical to the text mode."""
    return f'{{"seed":{int(seed)},"current":{current_json},"proposed":{proposed_json}}}\n'


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


def plan_stats(current: AssignmentLike, proposed: AssignmentLike) -> PlanStats:
    """Per-broker replica and preferred-leader counts before and after, and how much would move."""
    st = PlanStats()
    for topic, new_parts in proposed.items():
        old_parts = current.get(topic, {})
        old_vals = [old_parts.get(p, ()) for p in new_parts]
        new_vals = list(new_parts.values())
        st.partitions += len(new_vals)
        st.replicas_before.update(chain.from_iterable(old_vals))
        st.replicas_after.update(chain.from_iterable(new_vals))
        st.leaders_before.update(r[0] for r in old_vals if r)
        st.leaders_after.update(r[0] for r in new_vals if r)
        for old, new in zip(old_vals, new_vals, strict=True):
            if list(old) != list(new):
                st.partitions_changed += 1
                if not old or not new or old[0] != new[0]:
                    st.leaders_changed += 1
                st.replicas_moved += len(set(new).difference(old))
    return st


def summary_table(st: PlanStats, selected: Iterable[int]) -> Table:
    """Per broker: replicas and preferred leaders before -> after (brokers outside the plan marked)."""
    chosen = set(selected)
    ids = sorted(chosen | set(st.replicas_before) | set(st.replicas_after))
    table = Table(
        title="Proposed plan by broker",
        caption=(
            f"{st.partitions_changed} of {st.partitions} partitions change, {st.replicas_moved} replicas "
            f"move, {st.leaders_changed} preferred leaders change"
        ),
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("broker", justify="right")
    table.add_column("replicas before", justify="right")
    table.add_column("replicas after", justify="right")
    table.add_column("leaders before", justify="right")
    table.add_column("leaders after", justify="right")
    for b in ids:
        name = str(b) if b in chosen else f"{b} (not in plan)"
        table.add_row(
            name,
            str(st.replicas_before[b]),
            str(st.replicas_after[b]),
            str(st.leaders_before[b]),
            str(st.leaders_after[b]),
            style=None if b in chosen else "dim",
        )
    return table
