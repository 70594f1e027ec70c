"""Lists of names in our own messages, at scale. Pure.

At 1,700 topics a warning naming every one is a line of 20,000 characters that nobody reads. Our messages
name the first NAMES_SHOWN and count the rest ("a,b,c and 1690 more"); the whole list stays in
`--format json` and, where a command has it, under `-v`. Kafka's own lines that we reproduce (verify's
"Clearing ... throttles on topics ...", execute's "Successfully started ...") are left whole.
"""

from __future__ import annotations

from collections.abc import Iterable

NAMES_SHOWN = 10


def shorten(names: Iterable[object], limit: int | None = NAMES_SHOWN, sep: str = ",") -> str:
    """The names joined with `sep`, cut after `limit` (None: never) with " and N more"."""
    items = [str(n) for n in names]
    if limit is None or len(items) <= limit:
        return sep.join(items)
    return f"{sep.join(items[:limit])} and {len(items) - limit} more"
