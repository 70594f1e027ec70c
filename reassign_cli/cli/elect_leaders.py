"""`kafka-reassign elect-leaders`: move leadership to the preferred replicas and wait until it has."""

from __future__ import annotations

import click

from reassign_cli.cli.common import Options, connection_options, open_backend
from reassign_cli.cli.options import wait_timeout_option
from reassign_cli.errors import UsageError


@click.command(
    "elect-leaders",
    short_help="Elect the preferred replicas as leaders, and wait until they lead.",
)
@click.option(
    "--reassignment-json-file",
    "reassignment_file",
    metavar="FILE",
    help="The partitions of this reassignment file (e.g. the plan just executed).",
)
@click.option(
    "--topic", "topics", multiple=True, metavar="TOPIC", help="Every partition of TOPIC (repeatable)."
)
@click.option("--all", "all_topics", is_flag=True, help="Every partition of every topic.")
@wait_timeout_option(60.0, "How long to wait for the leaders to move (exit 4 when some have not).")
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0.1),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="How often the partition states are read while waiting.",
)
@connection_options
def command(
    opts: Options,
    reassignment_file: str | None,
    topics: tuple[str, ...],
    all_topics: bool,
    timeout: float,
    poll_interval: float,
) -> int:
    """Elect each partition's preferred replica (the first in its list) as its leader.

    Writes /admin/preferred_replica_election (create only; refused with exit 4 while one exists) for the
    partitions whose preferred replica is in the ISR but does not lead, then waits until they lead.
    Exit 0 when every partition is led by its preferred replica, 4 when the timeout ran out first, 5 when
    some preferred replica is not in the ISR (it cannot lead until it has caught up).
    """
    from reassign_cli.core.elect_rules import result_lines, status_json
    from reassign_cli.core.model import parse_reassignment
    from reassign_cli.ops.elect import ElectRequest, elect_leaders
    from reassign_cli.render import Output

    if sum([reassignment_file is not None, bool(topics), all_topics]) != 1:
        raise UsageError("give exactly one of --reassignment-json-file, --topic or --all")
    req = ElectRequest(None, list(topics) if topics else None, timeout, poll_interval)
    if reassignment_file is not None:
        from reassign_cli.cli.inputs import read_input_file

        req.partitions = sorted(parse_reassignment(read_input_file(reassignment_file)).targets())
    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts) as backend:
        outcome = elect_leaders(
            backend,
            req,
            lambda tps: out.info(f"Started a preferred leader election for {len(tps)} partitions"),
        )
    if opts.json:
        out.result_json(status_json(outcome.final))
    else:
        for line in result_lines(outcome.initial, outcome.final):
            out.result(line)
    return outcome.exit_code
