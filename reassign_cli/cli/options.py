"""Options shared by several subcommands beyond the connection (cli.common): the wait timeout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

OLD_SPELLING = " (--timeout, its old name, still works.)"


class RenamedOption(click.Option):
    """An option whose names after the first are old spellings: still accepted, left out of --help."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        names = self.opts
        self.opts = names[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = names


def wait_timeout_option(default: float | None, help: str) -> Callable[[Any], Any]:
    """`--wait-timeout SECONDS` (passed as `timeout`): how long a command waits for the cluster to get where
    it asked (execute --wait, cancel, elect-leaders). Before, `--timeout`; Kafka's tool means by --timeout
    something else (execute's --log-dir-timeout), and the connection has its own (--zk-timeout)."""
    return click.option(
        "--wait-timeout",
        "--timeout",
        "timeout",
        cls=RenamedOption,
        type=click.FloatRange(min=0),
        default=default,
        show_default=default is not None,
        metavar="SECONDS",
        help=help + OLD_SPELLING,
    )
