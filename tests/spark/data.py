"""Random planning inputs for the Spark tests (and the cluster probe script): plain data, no Spark."""

from __future__ import annotations

import random

from reassign_cli.core.model import Broker
from reassign_cli.planning.plan import TopicSpec

NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

# Uneven racks and non-contiguous ids: the rack-aware path interleaves racks.
RACKED = [Broker(1, "r1"), Broker(2, "r1"), Broker(3, "r2"), Broker(5, "r3"), Broker(8, "r1"), Broker(9, "r2"),
          Broker(12, "r3")]  # fmt: skip
UNRACKED = [Broker(b, None) for b in (0, 1, 2, 5, 8, 13)]


def random_specs(rnd: random.Random, n_topics: int, max_rf: int, max_partitions: int = 60) -> list[TopicSpec]:
    """Unique topic names mixing case, digits and . _ - (so the sort order matters), unsorted,
    mixed partition counts (1..max_partitions, some larger than the broker count) and RFs."""
    names: set[str] = set()
    while len(names) < n_topics:
        names.add("".join(rnd.choice(NAME_CHARS) for _ in range(rnd.randint(1, 24))))
    specs = [
        TopicSpec(name, rnd.choice([1, 2, 3, rnd.randint(1, max_partitions)]), rnd.randint(1, max_rf))
        for name in names
    ]
    rnd.shuffle(specs)
    return specs
