"""`kafka-reassign verify`: where each partition of the file stands; remove the throttles when done."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from reassign_cli.cli.common import (
    Options,
    connection_options,
    controller_option,
    log_dir_mover,
    open_backend,
)
from reassign_cli.cli.inputs import read_input_file


@click.command("verify", short_help="Where each partition of a plan stands; remove the throttles once done.")
@click.option(
    "--reassignment-json-file",
    "reassignment_file",
    default=None,
    metavar="FILE",
    help="The file that was given to execute. Without it: one step of the plan stored in the cluster "
    "(execute --detach), or say that none is stored.",
)
@click.option(
    "--no-advance",
    is_flag=True,
    help="With a stored plan: only report where it stands; start nothing, write nothing.",
)
@click.option(
    "--ignore-health",
    "ignore_health",
    multiple=True,
    metavar="CHECK",
    help="With a stored plan: start moves although this health check holds (repeatable; 'all' for every "
    "check). See docs/health.md.",
)
@click.option(
    "--preserve-throttles",
    is_flag=True,
    help="Leave the throttles in place even when nothing is reassigning any more.",
)
@click.option(
    "--metrics-file",
    metavar="PATH",
    help="Also write the outcome as Prometheus metrics in node_exporter's textfile format (atomically: "
    "a temporary file renamed into place), also when verify fails. Name it *.prom in the textfile "
    "collector's directory (docs/execute-verify.md). Every series is labelled plan (the file's path) and "
    "plan_sha256 (its SHA-256, 12 hex digits); with no plan file, plan=stored and the stored plan's digest.",
)
@click.option(
    "--metrics-label",
    "metrics_labels",
    multiple=True,
    metavar="NAME=VALUE",
    help="With --metrics-file: one more label on every series, e.g. cluster=eu1 (repeatable).",
)
@controller_option
@connection_options
def command(
    opts: Options,
    reassignment_file: str | None,
    preserve_throttles: bool,
    metrics_file: str | None,
    metrics_labels: tuple[str, ...] = (),
    no_advance: bool = False,
    ignore_health: tuple[str, ...] = (),
) -> int:
    """Report the status of each partition in --reassignment-json-file (Kafka's lines), and of each
    replica move between log dirs it names (through the admin API: --bootstrap-server, also beside
    --zookeeper).

    Once no reassignment is running anywhere in the cluster, the throttles are removed (prior values
    that this tool recorded are put back) unless --preserve-throttles is given.
    Exit 0 when all are complete, 4 while any is in progress, 5 when finished but not as planned.
    """
    from reassign_cli.errors import InvalidInputError, UsageError

    if reassignment_file is None:
        return _stored_step(opts, metrics_file, metrics_labels, no_advance, ignore_health)
    if metrics_file is None:
        if metrics_labels:
            raise UsageError("--metrics-label needs --metrics-file")
        return _verify(opts, reassignment_file, preserve_throttles, None)
    from reassign_cli.render.metrics import check_metrics_path, parse_metrics_labels, plan_labels

    extra = parse_metrics_labels(metrics_labels)
    check_metrics_path(metrics_file)
    try:  # read once: the bytes verified are the bytes hashed (unreadable: verify itself says so, exit 3)
        data: bytes | None = read_input_file(reassignment_file)
    except InvalidInputError:
        data = None
    labels = plan_labels(reassignment_file, data, extra)
    return _with_metrics(
        metrics_file, labels, lambda facts: _verify(opts, reassignment_file, preserve_throttles, facts, data)
    )


def _stored_step(
    opts: Options,
    metrics_file: str | None,
    metrics_labels: tuple[str, ...],
    no_advance: bool,
    ignore_health: tuple[str, ...],
) -> int:
    """verify with no plan file: one step of the stored plan (cli/stored.py); with --metrics-file, the
    stored plan's gauges after the step beside verify's exit code, written whatever happens."""
    from reassign_cli.cli import stored
    from reassign_cli.core.health import parse_ignore
    from reassign_cli.errors import UsageError

    if metrics_file is None and metrics_labels:
        raise UsageError("--metrics-label needs --metrics-file")
    try:
        ignore = parse_ignore(ignore_health)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if metrics_file is None:
        return stored.verify_stored(opts, advance=not no_advance, ignore=ignore)
    from reassign_cli.render.metrics import check_metrics_path, parse_metrics_labels
    from reassign_cli.render.plan_metrics import stored_plan_labels

    # plan="stored"; plan_sha256 the stored plan's once read ("" while not, and when none is stored)
    labels = stored_plan_labels("stored", "", parse_metrics_labels(metrics_labels))
    check_metrics_path(metrics_file)
    return _with_metrics(
        metrics_file,
        labels,
        lambda facts: stored.verify_stored(
            opts, advance=not no_advance, ignore=ignore, facts=facts, labels=labels
        ),
    )


def _verify(
    opts: Options,
    reassignment_file: str,
    preserve_throttles: bool,
    facts: dict[str, Any] | None,
    data: bytes | None = None,
) -> int:
    """verify itself; `facts`, when given, gets what the metrics file reports beyond the exit code; `data`:
    the file's bytes when read already."""
    from reassign_cli.cli import stored
    from reassign_cli.core.model import parse_reassignment
    from reassign_cli.core.pacing import plan_digest
    from reassign_cli.ops import stored as stored_ops
    from reassign_cli.ops.pace_file import work_left
    from reassign_cli.ops.verify import verify
    from reassign_cli.render import Output

    if data is None:
        data = read_input_file(reassignment_file)
    plan = parse_reassignment(data)
    pace = work_left(reassignment_file, data)
    dirs = plan.log_dir_targets()
    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts, admin_too=True) as backend:
        found = stored.read_stored(backend)
        same = found is not None and found.plan.plan_sha256 == plan_digest(data)
        if same and found.plan.lease is None and facts is None:  # no run drives it: this verify steps it
            result = stored.step_with(opts, backend, advance=True, ignore=frozenset())
            stored.say_result(opts, result)
            return stored_ops.exit_code(result)
        if found is not None:
            preserve_throttles = True  # never cleared while a stored plan has work left
            if not same:
                out.info(stored.stored_line(found.plan, opts.typed))
        mover = log_dir_mover(backend)
        try:
            outcome = verify(
                backend,
                plan.targets(),
                preserve_throttles=preserve_throttles,
                dirs=dirs,
                log_dirs=mover,
                work_left=pace is not None,
            )
            outcome.moves = _queued_dirs(outcome.moves, found.plan if same else None)
            sizes = _moving_sizes(out, outcome.results, mover)
            if facts is not None:
                facts.update(_metric_facts(backend, outcome.results, sizes))
                if dirs and mover is not None:
                    facts["moves"] = outcome.moves
        finally:
            if mover is not None:
                mover.close()
    _say_unchecked(out, bool(dirs and mover is None))
    code = _report(
        out, opts, outcome, preserve_throttles, checked_dirs=bool(dirs and mover is not None), sizes=sizes
    )
    if outcome.queued:
        out.info(_queued_line(opts, reassignment_file, pace, outcome.queued))
    return code


def _queued_dirs(moves: Any, stored_plan: Any) -> Any:
    """The stored plan's own file: its log-dir moves not started yet are queued (ops/stored_log_dirs.py)."""
    if stored_plan is None or not moves:
        return moves
    from reassign_cli.ops.stored_log_dirs import queued_moves

    return queued_moves(moves, stored_plan)


def _say_unchecked(out: Any, unchecked: bool) -> None:
    if unchecked:
        out.info(
            "Log-dir moves not checked: they need the admin API (--bootstrap-server, also beside --zookeeper)."
        )


def _queued_line(opts: Options, file_name: str, pace: Any, n: int) -> str:
    """Why throttles stay although nothing may move right now, and how the run goes on."""
    from reassign_cli.ops.pace_file import PACE_SUFFIX, run_option
    from reassign_cli.ops.request import resume_command

    again = resume_command(
        file_name,
        opts.typed,
        cap=pace.cap,
        batch_size=pace.batch_size,
        throttle=pace.throttle,
        log_dir_throttle=pace.log_dir_throttle,
        dir_cap=pace.dir_cap,
        one_broker=pace.one_broker,
    )
    kind = "paced" if pace.cap is not None else "batched"
    return (
        f"Throttles kept: {n} partition{' is' if n == 1 else 's are'} queued, not started yet by the {kind} "
        f"run of this plan ({run_option(pace)}, kept in {file_name}{PACE_SUFFIX}), which has not ended. If no "
        f"execute runs it any more, continue with: {again}"
    )


def _report(
    out: Any, opts: Options, outcome: Any, preserve_throttles: bool, *, checked_dirs: bool, sizes: Any
) -> int:
    from reassign_cli.core.copied import moving_bytes
    from reassign_cli.core.names import NAMES_SHOWN
    from reassign_cli.core.progress import Status, move_json, moves_ongoing, report_json, verify_exit
    from reassign_cli.render.copied import add_copied_json, copied_lines
    from reassign_cli.render.progress import (
        cleared_json,
        clearing_lines,
        kept_lines,
        orphans_line,
        reason_lines,
        verify_lines,
    )

    results, cleared, moves = outcome.results, outcome.cleared, outcome.moves
    code = _exit(verify_exit(results, moves), cleared)
    found = moving_bytes(results, sizes) if sizes is not None else None
    if outcome.orphans is not None:  # before the Clearing lines, as list warns
        brokers, topics = outcome.orphans
        out.warn(orphans_line(brokers, topics, limit=None if opts.verbose else NAMES_SHOWN))
    if opts.json:
        doc = report_json(results)
        if checked_dirs:
            doc["status"] = {0: "complete", 4: "in_progress"}.get(code, "not_as_planned")
            doc["replica_moves"] = [move_json(m) for m in moves]
        doc["throttles_cleared"] = cleared_json(cleared)
        orphans = outcome.orphans
        doc["orphaned_throttles"] = None if orphans is None else {"brokers": orphans[0], "topics": orphans[1]}
        if found is not None:
            add_copied_json(doc, found)
        out.result_json(doc)
    else:
        for line in verify_lines(results, moves):
            out.result(line)
        if cleared is not None:
            for line in clearing_lines(cleared):
                out.result(line)
    for line in reason_lines(results, limit=None if opts.verbose else 20):
        out.info(line)
    for line in copied_lines(found or {}, limit=None if opts.verbose else 20):
        out.info(line)
    if cleared is not None:
        for line in kept_lines(cleared, limit=None if opts.verbose else NAMES_SHOWN):
            out.info(line)
    if cleared is None and not preserve_throttles and outcome.blind is not None:
        out.info(outcome.blind)
    elif (
        cleared is None
        and not preserve_throttles
        and not outcome.queued
        and not any(r.status == Status.IN_PROGRESS for r in results)
    ):
        if moves_ongoing(moves):
            out.info("Throttles kept: a replica is still moving between log dirs.")
        else:
            out.info("Throttles kept: another reassignment is still running in the cluster.")
    return code


def _exit(code: int, cleared: Any) -> int:
    """Throttles of ours still set (recorded) on a broker that is down: not done yet (exit 4, not 0)."""
    from reassign_cli.errors import ExitCode

    if code == ExitCode.OK and cleared is not None and cleared.pending:
        return int(ExitCode.BUSY)
    return code


def _moving_sizes(out: Any, results: Any, mover: Any) -> Any:
    """DescribeLogDirs sizes of the replicas of the partitions in progress ({} when none is; None without
    the admin API, or when it cannot be reached: bytes are then not reported, and verify goes on)."""
    from reassign_cli.errors import OperationalError
    from reassign_cli.ops.verify_metrics import moving_replica_sizes

    try:
        return moving_replica_sizes(results, mover.replica_sizes if mover is not None else None)
    except OperationalError as e:
        out.info(f"Bytes copied not shown: {e}")
        return None


def _metric_facts(backend: Any, results: Any, sizes: Any) -> dict[str, Any]:
    from reassign_cli.ops.verify_metrics import our_throttle_rates, stored_plan
    from reassign_cli.render.metrics import bytes_remaining

    return {
        "results": results,
        "rates": our_throttle_rates(backend),
        "bytes_remaining": bytes_remaining(results, sizes),
        "stored_plan": stored_plan(backend),
    }


def _with_metrics(path: str, labels: dict[str, str], run: Callable[[dict[str, Any]], int]) -> int:
    """Run verify and write the metrics file whatever happens: on a failure, only its exit code and the
    time (the error itself still goes out as usual)."""
    import time

    from reassign_cli.errors import ExitCode, ReassignError
    from reassign_cli.render.metrics import VerifyMetrics, write_metrics

    facts: dict[str, Any] = {}
    code: int = ExitCode.ERROR
    try:
        code = run(facts)
    except ReassignError as e:
        code, facts = e.exit_code, {}
        raise
    except KeyboardInterrupt:
        code, facts = ExitCode.INTERRUPTED, {}
        raise
    except BaseException:
        facts = {}
        raise
    finally:
        write_metrics(path, VerifyMetrics(labels, int(code), time.time(), **facts))
    return code
