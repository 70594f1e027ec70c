"""verify's bytes copied so far for the partitions in progress (core/copied.py): stderr lines and the
--format json fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassign_cli.core.model import TopicPartition
from reassign_cli.core.pacing import human_bytes

Copied = Mapping[TopicPartition, tuple[int, int]]


def _share(copied: int, total: int) -> str:
    return f"{copied / total:.0%}" if total else "100%"


def copied_lines(found: Copied, limit: int | None = 20) -> list[str]:
    """One line per partition in progress with a known size, at most `limit` (None: all), then the total:
    `t-0: copied 1.2 MiB of 4.8 MiB (25%)`."""
    if not found:
        return []
    items = sorted(found.items())
    lines = [
        f"{t}-{p}: copied {human_bytes(c)} of {human_bytes(n)} ({_share(c, n)})" for (t, p), (c, n) in items
    ]
    if limit is not None and len(lines) > limit:
        lines = [*lines[:limit], f"... and {len(lines) - limit} more (all with -v or --format json)"]
    copied, total = sum(c for c, _ in found.values()), sum(n for _, n in found.values())
    many = "" if len(found) == 1 else "s"
    lines.append(
        f"Copied {human_bytes(copied)} of {human_bytes(total)} ({_share(copied, total)}) "
        f"in {len(found)} partition{many} in progress."
    )
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
