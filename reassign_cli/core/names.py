"""Lists of names in our own messages, at scale. Pure.

At 1,700 topics a warning naming every one is a line of 20,000 characters that nobody reads. Our messages
name the first NAMES_SHOWN and count the rest ("a,b,c and 1690 more"); the whole list stays in
`--format json` and under `-v`. A message built with `listed` is a `str` whose `full` attribute is the
same message uncut: `Output.warn` and the error handler in `cli.main` print that one under `-v`, and no
caller in between needs to know. Kafka's own lines that we reproduce (verify's
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


class Listed(str):
    """A message whose list of names was cut; `full` is the same message with every name."""

    full: str

    def __new__(cls, short: str, full: str) -> Listed:
        obj = super().__new__(cls, short)
        obj.full = full
        return obj


def listed(template: str, names: Iterable[object], sep: str = ",", limit: int = NAMES_SHOWN) -> str:
    """`template` with its one `{}` replaced by the names, cut after `limit`; the uncut message rides
    along as `.full` when anything was cut."""
    items = [str(n) for n in names]
    short = template.format(shorten(items, limit, sep))
    if len(items) <= limit:
        return short
    return Listed(short, template.format(sep.join(items)))


def uncut(message: str) -> str:
    """The whole message: `.full` of a `listed` one, else the message itself."""
    return getattr(message, "full", message)


def count(n: int, noun: str) -> str:
    """ "1 partition", "3 partitions" (nouns whose plural takes an s)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
