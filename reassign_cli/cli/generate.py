"""`kafka-reassign generate`: Kafka's --generate (a candidate plan), seeded, from the cluster (ZooKeeper or
the admin API) or a snapshot."""

from __future__ import annotations

import functools
from typing import Any

import click

from reassign_cli.cli.common import Options, connection, connection_options, keep_until_exit
from reassign_cli.cli.inputs import read_input_file
from reassign_cli.cli.rate_type import POSITIVE_RATE, RATE_HELP
from reassign_cli.core.model import duplicates, parse_topics_to_move
from reassign_cli.core.names import listed
from reassign_cli.errors import InvalidInputError, UsageError
from reassign_cli.ops import generate
from reassign_cli.render import Output
from reassign_cli.render.generate import CURRENT_HEADER, PROPOSED_HEADER, output_frame, summary_table


def _parse_broker_list(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    """Kafka's parsing: split on ',' and parse each as an integer, no trimming."""
    if value is None:
        return None
    ids: list[int] = []
    for item in value.split(","):
        try:
            if item.strip() != item or not item:
                raise ValueError
            ids.append(int(item))
        except ValueError:
            raise click.BadParameter(
                f"{item!r} is not a broker id (expected comma-separated integers, e.g. 1,2,3)"
            ) from None
    return ids


def _from_command_line(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE


@click.command(
    "generate",
    short_help="Propose a new assignment for some topics (nothing is written).",
    epilog="\b\nExamples:\n"
    "  kafka-reassign generate --topic orders --topic payments --broker-list 1,2,3 --seed 42\n"
    "  kafka-reassign generate --topics-to-move-json-file topics.json --broker-list 4,5,6 "
    "--output-dir plan/\n"
    "  kafka-reassign generate --snapshot cluster.json --topic orders --broker-list 1,2,3\n"
    "  kafka-reassign generate --strategy balanced --topics-to-move-json-file all.json --broker-list 1,2,3,4",
)
@click.option(
    "--topics-to-move-json-file",
    "topics_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help='Kafka\'s topics file: {"topics":[{"topic":"foo"}],"version":1}.',
)
@click.option("--topic", "topic_opts", multiple=True, metavar="TOPIC", help="A topic to move (repeatable).")
@click.option(
    "--broker-list",
    callback=_parse_broker_list,
    metavar="ID,ID,...",
    help="Brokers to assign to, e.g. 1,2,3 [default: every registered broker]. Unregistered ids are "
    "dropped with a warning.",
)
@click.option("--disable-rack-aware", is_flag=True, help="Ignore racks (Kafka's rack-unaware assignment).")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    metavar="N",
    help="Seed of the per-topic random draws; the same seed gives the same plan [default: a random one, "
    "printed on stderr].",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write DIR/current.json (rollback) and DIR/proposed.json instead of printing the JSON.",
)
@click.option(
    "--snapshot",
    "snapshot_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Plan from a `kafka-reassign snapshot` file instead of the live cluster.",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1),
    metavar="N",
    help="Give every selected topic N replicas per partition [default: keep each topic's].",
)
@click.option(
    "--strategy",
    type=click.Choice(["kafka", "balanced"]),
    default="kafka",
    show_default=True,
    help="kafka: Kafka's own round robin, each topic anew. balanced: the fewest replica copies to a "
    "cluster balanced in replicas and preferred leaders per broker (all topics counted), rack-aware.",
)
@click.option(
    "--balance",
    type=click.Choice(["replicas", "bytes"]),
    default="replicas",
    show_default=True,
    help="With --strategy balanced: replicas evens out replica and leader counts; bytes puts every broker "
    "within --tolerance of the mean bytes (partition sizes from a snapshot taken with --bootstrap-server, "
    "or read from the brokers), counts and leaders still even, at close to the fewest bytes copied.",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    metavar="F",
    help="With --balance bytes: each broker ends within mean bytes x (1 +- F); with the brokers' disk "
    "capacity known, within the mean utilization x (1 +- F).",
)
@click.option(
    "--max-disk-utilization",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=0.85,
    show_default=True,
    metavar="F",
    help="With --balance bytes and the brokers' disk capacity known (a snapshot taken with "
    "--bootstrap-server from Kafka 3.3+): no broker above F of its capacity at any moment of the move "
    "(it holds what it receives until the plan ends); exit 2 if no plan keeps within it. Given "
    "explicitly without capacities: exit 2.",
)
@click.option(
    "--shared-log-dirs",
    is_flag=True,
    help="With --balance bytes from the live cluster: a broker's log dirs that report the same total and "
    "usable bytes share one filesystem, counted once in its disk capacity [default: each log dir is its "
    "own disk]. A snapshot records the choice (give it to `snapshot`).",
)
@click.option(
    "--disks",
    is_flag=True,
    help="With --balance bytes: plan disk by disk (the log dir of every replica of a changed partition, "
    "and moves between a broker's log dirs) even where no broker has several log dirs [default: when "
    "one has].",
)
@click.option(
    "--throttle",
    type=POSITIVE_RATE,
    metavar="RATE",
    help="With partition sizes known (a snapshot taken with --bootstrap-server, or the brokers), also tell "
    f"how long the copies take at this per-broker replication throttle (execute's --throttle): {RATE_HELP}.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="Where the proposed assignment is computed (spark needs the [spark] extra).",
)
@click.option(
    "--spark-master",
    default="local[*]",
    show_default=True,
    metavar="URL",
    help="Spark master for --engine spark.",
)
@click.option(
    "--report",
    metavar="NAME",
    callback=lambda ctx, param, value: report_base(value),
    help="Also write the plan for review, as two files: NAME.md (Markdown for a pull request or a CI "
    "summary) and NAME.html (self-contained, with per-broker bar charts). A NAME ending in .md or .html "
    "names the pair too (--report plan.html writes plan.md and plan.html). Local engine.",
)
@connection_options
def command(
    opts: Options,
    topics_file: str | None,
    topic_opts: tuple[str, ...],
    broker_list: list[int] | None,
    disable_rack_aware: bool,
    seed: int | None,
    output_dir: str | None,
    snapshot_file: str | None,
    replication_factor: int | None,
    strategy: str,
    balance: str,
    tolerance: float,
    max_disk_utilization: float,
    throttle: int | None,
    engine: str,
    spark_master: str,
    report: str | None = None,
    shared_log_dirs: bool = False,
    disks: bool = False,
) -> None:
    """Propose a new replica assignment for the given topics over the given brokers.

    Kafka's --generate: prints the current assignment (keep it: it is the rollback plan) and the proposed
    one, both in Kafka's JSON format. Nothing is written to the cluster. The plan is random per topic as in
    Kafka, but drawn from --seed: the same bytes from ZooKeeper, the admin API and a snapshot of the cluster.
    """
    ctx = click.get_current_context()
    if not topics_file and not topic_opts:
        raise UsageError("one of --topics-to-move-json-file or --topic is required")
    if _from_command_line(ctx, "spark_master") and engine != "spark":
        raise UsageError("--spark-master needs --engine spark")
    for flag, name in (("--zookeeper", "zookeeper"), ("--bootstrap-server", "bootstrap")):
        if snapshot_file and name in opts.explicit:
            raise UsageError(f"--snapshot and {flag} cannot be used together")
    _check_balance(ctx, strategy, balance)
    seen = _report_collector(report, engine, output_dir)
    topics = _topics(topics_file, topic_opts)
    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    source = _source(opts, snapshot_file, shared=shared_log_dirs)
    request = generate.Request(
        topics, broker_list, not disable_rack_aware, seed, output_dir, functools.partial(output_frame, opts.json),
        engine, spark_master, opts.verbose, stats=not opts.quiet or seen is not None or opts.json,
        replication_factor=replication_factor, strategy=generate.STRATEGIES[strategy],
        whole_cluster=strategy == "balanced", throttle=throttle, observe=seen,
        balance=balance, tolerance=tolerance, disks=True if disks else None,
        max_disk_utilization=max_disk_utilization if _from_command_line(ctx, "max_disk_utilization") else None,
    )  # fmt: skip
    result = generate.run(request, source, _Reporter(out))
    if result.files is not None:
        _print_files(out, opts.json, result)
    if report is not None and seen is not None:
        shown = strategy + (" --balance bytes" if balance == "bytes" else "")
        _write_report(out, report, shown, result, seen)
    if result.stats is not None and not opts.quiet:
        ids = [b.id for b in result.brokers]
        table = summary_table(result.stats, ids, every_broker=opts.verbose, extra_stats=result.extra_stats)
        out.renderable(table)
    keep_until_exit(*result.kept)  # freeing a 1M-partition state object by object serves nothing at exit


def _print_files(out: Output, json: bool, result: generate.Outcome) -> None:
    """With --output-dir: where the two documents went (stdout)."""
    assert result.files is not None
    current_path, proposed_path = result.files
    if json:
        doc = {"seed": result.seed, "current_file": current_path, "proposed_file": proposed_path}
        stats = result.json_stats if result.json_stats is not None else result.extra_stats
        if stats is not None:
            doc["stats"] = dict(stats)
        out.result_json(doc)
    else:
        out.result(f"{CURRENT_HEADER} written to {current_path}")
        out.result(f"{PROPOSED_HEADER} written to {proposed_path}")


def report_base(value: str | None) -> str | None:
    """--report's NAME without a .md or .html ending: the report is always NAME.md and NAME.html."""
    if value is None:
        return None
    for ending in (".md", ".html"):
        if value.lower().endswith(ending) and len(value) > len(ending):
            return value[: -len(ending)]
    return value


def _report_collector(report: str | None, engine: str, output_dir: str | None) -> Any:
    """The report's collector; the checks on --report before anything is planned (its directory must
    exist, or be the --output-dir that generate creates)."""
    import os

    if report is None:
        return None
    if engine != "local":
        raise UsageError("--report works with --engine local")
    from reassign_cli.render.report import Collector, report_paths

    directory = os.path.dirname(os.path.abspath(report_paths(report)[0]))
    creates = output_dir is not None and directory == os.path.abspath(output_dir)
    if not os.path.isdir(directory) and not creates:
        raise UsageError(f"--report {report}: the directory {directory} does not exist")
    return Collector()


def _write_report(out: Output, base: str, strategy: str, result: generate.Outcome, seen: Any) -> None:
    import shlex
    import sys

    from reassign_cli.render.report import Report, write_report

    assert result.stats is not None
    command = shlex.join(["kafka-reassign", *sys.argv[1:]])
    ids = [b.id for b in result.brokers]
    md, page = write_report(
        base, Report(command, result.seed, strategy, result.stats, result.extra_stats, ids, seen)
    )
    out.info(f"Report written to {md} and {page}")


def _check_balance(ctx: click.Context, strategy: str, balance: str) -> None:
    if balance != "replicas" and strategy != "balanced":
        raise UsageError("--balance needs --strategy balanced")
    if _from_command_line(ctx, "tolerance") and balance != "bytes":
        raise UsageError("--tolerance needs --balance bytes")
    if _from_command_line(ctx, "max_disk_utilization") and balance != "bytes":
        raise UsageError("--max-disk-utilization needs --balance bytes")
    if ctx.params.get("disks") and balance != "bytes":
        raise UsageError("--disks needs --balance bytes")
    if ctx.params.get("shared_log_dirs") and balance != "bytes":
        raise UsageError("--shared-log-dirs needs --balance bytes")
    if ctx.params.get("shared_log_dirs") and ctx.params.get("snapshot_file"):
        raise UsageError(
            "--shared-log-dirs applies where the disks are read: give it to `snapshot` (the file records it)"
        )


def _source(opts: Options, snapshot_file: str | None, shared: bool = False) -> generate.Source:
    if not snapshot_file:
        # The sizes are read from the brokers whenever they are at hand: --bootstrap-server may stand beside
        # --zookeeper (ZooKeeper mode with the brokers' help).
        conn = connection(opts, admin_too=True)
        return generate.Source(None, conn.zk, conn.admin, shared_log_dirs=shared)
    # A connection from the environment is only mentioned, never used.
    env = (
        "KAFKA_REASSIGN_ZOOKEEPER"
        if opts.zookeeper
        else "KAFKA_REASSIGN_BOOTSTRAP"
        if opts.bootstrap
        else None
    )
    return generate.Source(snapshot_file, ignored_env=env)


def _topics(topics_file: str | None, topic_opts: tuple[str, ...]) -> list[str]:
    topics: list[str] = []
    if topics_file:
        topics += parse_topics_to_move(read_input_file(topics_file, "topics-to-move file"))
    topics += topic_opts
    dups = duplicates(topics)
    if dups:
        raise InvalidInputError(listed("List of topics to reassign contains duplicate entries: {}", dups))
    return topics


class _Reporter:
    def __init__(self, out: Output) -> None:
        self.out = out

    def warning(self, text: str) -> None:
        self.out.warn(text)

    def detail(self, text: str) -> None:
        self.out.detail(text)

    def seed_chosen(self, seed: int) -> None:
        # Always shown (even with -q): without it the plan could not be reproduced.
        self.out.err.print(f"Using seed {seed}; pass --seed {seed} to reproduce this plan.", markup=False)
