"""`kafka-reassign verify`: where each partition of the file stands; remove the throttles when done."""

from __future__ import annotations

import click

from reassign_cli.cli.common import Options, connection_options, executed_file_option, open_backend
from reassign_cli.inputs import read_input_file


@click.command("verify")
@executed_file_option
@click.option(
    "--preserve-throttles",
    is_flag=True,
    help="Leave the throttles in place even when nothing is reassigning any more.",
)
@connection_options
def command(opts: Options, reassignment_file: str, preserve_throttles: bool) -> int:
    """Report the status of each partition in --reassignment-json-file (Kafka's lines).

    Once no reassignment is running anywhere in the cluster, the throttles are removed (prior values
    that this tool recorded are put back) unless --preserve-throttles is given.
    Exit 0 when all are complete, 4 while any is in progress, 5 when finished but not as planned.
    """
    from reassign_cli.model import parse_reassignment
    from reassign_cli.progress import overall_exit, report_json
    from reassign_cli.render import Output
    from reassign_cli.render.progress import clearing_lines, kept_lines, reason_lines, verify_lines
    from reassign_cli.verifier import verify

    plan = parse_reassignment(read_input_file(reassignment_file))
    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts) as backend:
        outcome = verify(backend, plan.targets(), preserve_throttles=preserve_throttles)
    results, cleared = outcome.results, outcome.cleared

    if opts.json:
        doc = report_json(results)
        doc["throttles_cleared"] = (
            {"brokers": cleared.brokers, "topics": cleared.topics} if cleared is not None else None
        )
        out.result_json(doc)
    else:
        for line in verify_lines(results):
            out.result(line)
        if cleared is not None:
            for line in clearing_lines(cleared):
                out.result(line)
    for line in reason_lines(results, limit=None if opts.verbose else 20):
        out.info(line)
    if cleared is not None:
        for line in kept_lines(cleared):
            out.info(line)
    if cleared is None and not preserve_throttles and not any(r.status == "in_progress" for r in results):
        out.info("Throttles kept: another reassignment is still running in the cluster.")
    return overall_exit(results)
