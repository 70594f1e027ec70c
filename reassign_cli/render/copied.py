"""verify's bytes copied so far for the partitions in progress (core/copied.py): stderr lines and the
--format json fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassign_cli.core.model import TopicPartition
from reassign_cli.core.names import count
from reassign_cli.core.pacing import human_bytes

Copied = Mapping[TopicPartition, tuple[int, int]]


def _copied(copied: int, total: int) -> str:
    """`copied 1.2 MiB of 4.8 MiB (25%)`; `nothing to copy` for a move whose log is empty (or that only
    removes replicas): in progress until the controller completes it, not "0 B of 0 B (100%)"."""
    if not total:
        return "nothing to copy"
    return f"copied {human_bytes(copied)} of {human_bytes(total)} ({copied / total:.0%})"


def copied_lines(found: Copied, limit: int | None = 20) -> list[str]:
    """One line per partition in progress with a known size, at most `limit` (None: all), then the total:
    `t-0: copied 1.2 MiB of 4.8 MiB (25%)`."""
    if not found:
        return []
    items = sorted(found.items())
    lines = [f"{t}-{p}: {_copied(c, n)}" for (t, p), (c, n) in items]
    if limit is not None and len(lines) > limit:
        lines = [*lines[:limit], f"... and {len(lines) - limit} more (all with -v or --format json)"]
    copied, total = sum(c for c, _ in found.values()), sum(n for _, n in found.values())
    text = _copied(copied, total)
    lines.append(f"{text[0].upper()}{text[1:]} in {count(len(found), 'partition')} in progress.")
    return lines


def add_copied_json(doc: dict[str, Any], found: Copied) -> None:
    """`bytes_copied` and `bytes_to_copy` on each partition in progress with a known size, and their sums
    at the top of the document."""
    for p in doc["partitions"]:
        got = found.get((p["topic"], p["partition"]))
        if got is not None:
            p["bytes_copied"], p["bytes_to_copy"] = got
    doc["bytes_copied"] = sum(c for c, _ in found.values())
    doc["bytes_to_copy"] = sum(n for _, n in found.values())
