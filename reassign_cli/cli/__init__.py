"""The `kafka-reassign` command: Click group, subcommand registration, and the ONE place where
exceptions become messages and exit codes.

Each subcommand lives in its own module under reassign_cli/cli/ and is registered below.
"""

from __future__ import annotations

import gc
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

import click

from reassign_cli import __version__
from reassign_cli.errors import ExitCode, ReassignError
from reassign_cli.sigint import restore as restore_sigint

EXIT_CODES_HELP = """\b
Exit codes:
  0    success; verify: every partition is at its target
  1    operational error (ZooKeeper or brokers unreachable, auth failure, unexpected)
  2    usage error
  3    invalid plan or input file (nothing was written)
  4    busy or unfinished: a reassignment is already running (execute),
       still in progress (verify, --wait timeout)
  5    verify: finished, but some partition is not as planned
  130  interrupted
"""


@click.group(
    epilog=EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="kafka-reassign")
def cli() -> None:
    """Move Kafka partition replicas between brokers safely: ZooKeeper-mode clusters through ZooKeeper
    (--zookeeper), KRaft clusters and Kafka 4.x through the admin API (--bootstrap-server).

    The workflow of kafka-reassign-partitions: `generate` a plan, `execute` it with
    throttles, `verify` it until complete (which removes the throttles).

    Shell completion (bash; zsh_source, fish_source likewise): eval
    "$(_KAFKA_REASSIGN_COMPLETE=bash_source kafka-reassign)"
    """


def _register() -> None:
    # Imported here, after `cli` exists: each subcommand module imports the shared helpers of this package.
    from reassign_cli.cli import (
        cancel,
        elect_leaders,
        execute,
        generate,
        listing,
        plan_ctl,
        rebalance,
        snapshot,
        verify,
    )

    for mod in (generate, snapshot, execute, verify, listing, elect_leaders, cancel, rebalance):
        cli.add_command(mod.command)
    cli.add_command(plan_ctl.pause_command)
    cli.add_command(plan_ctl.continue_command)


_register()


def _print_error(message: str, hint: str | None = None) -> None:
    click.echo(f"Error: {message}", err=True)
    if hint:
        click.echo(hint, err=True)


def main(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry point."""
    try:
        restore_sigint()  # from here a Ctrl-C is a KeyboardInterrupt, answered below
        rv = cli.main(args=argv, prog_name="kafka-reassign", standalone_mode=False)
    except click.exceptions.Exit as e:  # --help, --version
        sys.exit(e.exit_code)
    except click.Abort:
        click.echo("Interrupted.", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except click.ClickException as e:
        from reassign_cli.cli.kafka_syntax import action_hint

        hint = action_hint(sys.argv[1:] if argv is None else argv, list(cli.commands))
        if hint is not None and isinstance(e, click.NoSuchOption):
            e = click.UsageError(hint, ctx=e.ctx)  # Kafka's syntax: name the subcommand, not click's guess
        e.show()
        sys.exit(ExitCode.USAGE if isinstance(e, click.UsageError) else e.exit_code)
    except ReassignError as e:
        _print_error(e.full if e.verbose else str(e), e.hint)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        sys.exit(ExitCode.ERROR)
    except Exception as e:  # a bug or an unforeseen failure: still one line and exit 1
        _print_error(
            f"unexpected {type(e).__name__}: {e}",
            None if os.environ.get("KAFKA_REASSIGN_DEBUG") else "Set KAFKA_REASSIGN_DEBUG=1 for a traceback.",
        )
        if os.environ.get("KAFKA_REASSIGN_DEBUG"):
            traceback.print_exc()
        sys.exit(ExitCode.ERROR)
    # Subcommands return an ExitCode (verify's 4/5 are results, not errors); None means success.
    sys.exit(int(rv) if isinstance(rv, int) else ExitCode.OK)


GC_THRESHOLD0 = 1_000_000


def run(entry: Callable[[], object] | None = None) -> NoReturn:
    """Console script and `python -m`: main(), then exit without interpreter teardown.

    Freeing the objects of a 1M-partition plan at exit costs 0.2-0.3 s and achieves nothing; every
    command has closed its files and connections by the time main() returns.

    The cyclic garbage collector is tuned here, for the whole short-lived process, and nowhere in the
    library: a 1M-partition state is millions of acyclic containers, which the default thresholds would
    traverse again and again while they are built (seconds at 1M partitions). Modules loaded so far are
    frozen (never traversed again); young collections run every GC_THRESHOLD0 allocations instead of 700,
    so cycles (e.g. in a long `verify --wait`) are still collected.
    """
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD0, 1000, 1000)
    try:
        (entry or main)()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = code or ExitCode.ERROR
    os._exit(code)
