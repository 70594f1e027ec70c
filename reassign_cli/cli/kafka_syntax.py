"""Kafka's action flags as `kafka-reassign` meets them: the hint that names our subcommand instead
(imported by the `kafka-reassign` group's error handling; the drop-in itself is cli/dropin.py)."""

from __future__ import annotations

from collections.abc import Sequence

ACTIONS = ("generate", "execute", "verify", "cancel", "list")
DROPIN = "kafka-reassign-partitions"
ACTION_FLAGS = tuple(f"--{a}" for a in ACTIONS)


def action_hint(argv: Sequence[str], subcommands: Sequence[str]) -> str | None:
    """For `kafka-reassign` given Kafka's syntax (`--verify ...` before any subcommand): the subcommand to
    use instead, or None."""
    for token in argv:
        if token in subcommands:
            return None
        if token in ACTION_FLAGS:
            sub = token[2:]
            return (
                f"kafka-reassign takes subcommands: use the subcommand `{sub}` "
                f"(kafka-reassign {sub} --help), or {DROPIN}, which takes Kafka's syntax."
            )
    return None
