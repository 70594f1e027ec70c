"""`kafka-reassign rebalance`: one tick of the autopilot (issue 26; docs/autopilot.md). A plan stored in
the cluster is stepped exactly as `verify` steps it; otherwise the tick reads the cluster, decides, and
on a rebalance or heal stores and starts a plan as `execute --max-moves-per-broker N --detach` does
(ops/autopilot.py)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import click

from reassign_cli.cli.common import Options, connection_options, log_dir_mover, open_backend
from reassign_cli.cli.rate_type import RATE, RATE_HELP
from reassign_cli.cli.schedule_types import HOURS, HOURS_HELP
from reassign_cli.errors import UsageError


def _brokers(value: str | None) -> frozenset[int]:
    if not value:
        return frozenset()
    try:
        return frozenset(int(x) for x in value.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--exclude-brokers {value!r}: expected broker ids separated by commas") from None


@click.command(
    "rebalance", short_help="One autopilot tick: step the stored plan, or balance/heal the cluster."
)
@click.option(
    "--trigger",
    type=click.FloatRange(min=0),
    default=0.10,
    show_default=True,
    metavar="F",
    help="Rebalance when a broker's bytes are outside goal ± max(F × goal, the largest partition).",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=0.05,
    show_default=True,
    metavar="F",
    help="What a plan aims at (--balance bytes' tolerance).",
)
@click.option(
    "--dead-after",
    type=click.FloatRange(min=0),
    default=1800.0,
    show_default=True,
    metavar="SECONDS",
    help="A broker that held replicas and is missing this long is healed.",
)
@click.option(
    "--exclude-brokers", default=None, metavar="IDS", help="Brokers never planned onto (comma list)."
)
@click.option(
    "--exclude-topics", default=None, metavar="REGEX", help="Topics whose whole name matches are never moved."
)
@click.option(
    "--max-moves",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="At most N partition moves per plan (largest gain first).",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=None,
    metavar="BYTES",
    help="At most this many bytes copied per plan (largest gain first).",
)
@click.option(
    "--max-moves-per-broker",
    "per_broker",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    metavar="N",
    help="The stored plan's cap, as execute's.",
)
@click.option(
    "--throttle",
    type=RATE,
    default=None,
    metavar="RATE",
    help=f"Inter-broker throttle of the plan's moves: {RATE_HELP}.",
)
@click.option("--hours", type=HOURS, default=None, help=f"The plan's hours: {HOURS_HELP}.")
@click.option(
    "--report-dir",
    default=None,
    metavar="DIR",
    help="Write each plan's report there (Markdown and HTML, named by time and plan SHA-256).",
)
@click.option("--dry-run", is_flag=True, help="Print the decision and the plan; write nothing.")
@click.option(
    "--metrics-file",
    default=None,
    metavar="PATH",
    help="Write the tick's decision and figures in node_exporter's textfile format.",
)
@connection_options
def command(opts: Options, **kw: Any) -> int:
    """One tick of the autopilot (run it from cron every minute, on any number of hosts).

    A plan stored in the cluster is stepped as `verify` steps it (exit 4 while work is left, 0 at the
    end, 5 not as planned). Otherwise: skipped (a reassignment not ours runs: exit 4), wait (a broker is
    missing: exit 4), heal or rebalance (a plan is stored and started: exit 4), or balanced (exit 0).
    """
    from reassign_cli.ops.autopilot import TickRequest

    if opts.json:
        raise UsageError("rebalance prints text lines only: --format json is not supported yet")
    req = TickRequest(
        trigger=kw["trigger"],
        tolerance=kw["tolerance"],
        dead_after=kw["dead_after"],
        exclude_brokers=_brokers(kw["exclude_brokers"]),
        exclude_topics=_regex(kw["exclude_topics"]),
        max_moves=kw["max_moves"],
        max_bytes=kw["max_bytes"],
        per_broker=kw["per_broker"],
        throttle=None if kw["throttle"] is None or kw["throttle"] < 0 else kw["throttle"],
        hours=kw["hours"],
        report_dir=kw["report_dir"],
        dry_run=kw["dry_run"],
    )
    facts: dict[str, Any] = {}
    code = 1
    try:
        code = _tick(opts, req, facts)
        return code
    finally:
        if kw["metrics_file"] is not None:
            from reassign_cli.render import autopilot_metrics

            autopilot_metrics.write(kw["metrics_file"], facts.get("metrics"), code, time.time())


def _regex(value: str | None) -> str | None:
    import re

    if value is not None:
        try:
            re.compile(value)
        except re.error as e:
            raise UsageError(f"--exclude-topics {value!r}: {e}") from None
    return value


def _tick(opts: Options, req: Any, facts: dict[str, Any]) -> int:
    from reassign_cli.cli import stored
    from reassign_cli.core.autopilot import TickMetrics
    from reassign_cli.ops import autopilot as ops
    from reassign_cli.ops import stored as stored_ops

    with open_backend(opts, admin_too=True) as backend:
        if not req.dry_run:  # a dead broker's record entry only it could clear: named once, dropped
            ops.forget_dead_configs(backend, req.dead_after, time.time(), _warn(opts), _connection())
        seen = stored.read_stored(backend)
        if seen is not None:  # handsoff: step it as verify does (ops/step.step)
            ending = _end_early(opts, backend, req, seen.plan)
            result = _step(backend, req)
            if result.stored:
                facts["metrics"] = TickMetrics("stepping")
                stored.say_result(opts, result)
                if not (ending and result.finished):  # ended early: the heal is planned now
                    return stored_ops.exit_code(result)
        with stored.step_env(backend) as env:
            mover = log_dir_mover(backend)
            try:
                return _decide(opts, req, facts, backend, env, mover)
            finally:
                if mover is not None:
                    mover.close()


def _end_early(opts: Options, backend: Any, req: Any, plan: Any) -> bool:
    """The ledger kept while a plan is stored, and the autopilot's own plan ended early when a broker it
    was not made for is dead (ops/autopilot_end.py; not on a dry run). True: such a broker is dead."""
    from reassign_cli.backends.plan_stores import open_store
    from reassign_cli.core import autopilot as ap
    from reassign_cli.ops import autopilot_end as end

    mine = end.made_for(plan)
    if req.dry_run or mine is None:
        return False
    now = time.time()
    dead = ap.dead(end.note_missing(backend, now), now, req.dead_after) - mine
    if not dead:
        return False
    with open_store(backend) as store:
        ended = end.end_early(backend, store, dead | mine, now)
    if ended is not None:
        _warn(opts)(ended.line())
    return True


def _warn(opts: Options) -> Any:
    from reassign_cli.render import Output

    return Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose).warn


def _connection() -> list[str]:
    from reassign_cli.render.progress import CONFIGS_CONNECTION

    return CONFIGS_CONNECTION()


def _step(backend: Any, req: Any) -> Any:
    """One step of the stored plan, as `verify` makes it (cli/stored.step_with: ops/step.step), except
    that the health signals leave out the dead brokers' own damage (core/autopilot.without_dead): the
    replicas on brokers the ledger says are dead, and still not registered. Nothing else is exempt."""
    from reassign_cli.cli import stored
    from reassign_cli.core import autopilot as ap
    from reassign_cli.core import stored_plan as sp
    from reassign_cli.ops import autopilot as ops
    from reassign_cli.ops import step as st
    from reassign_cli.ops import stored as stored_ops

    with stored.step_env(backend) as env:
        dead = ops.dead_now(backend, req.dead_after, time.time())
        gather = env.health
        if dead and gather is not None:
            env.health = lambda: ap.without_dead(gather(), dead)
        return st.step(env, stored_ops.me(), sp.watch(), advance=not req.dry_run, ignore=frozenset())


def _decide(opts: Options, req: Any, facts: dict[str, Any], backend: Any, env: Any, mover: Any) -> int:
    import os

    from reassign_cli.ops import autopilot as ops
    from reassign_cli.render import Output
    from reassign_cli.render.progress import ExecuteReport

    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    at = time.time()
    outcome, lk, limited = ops.tick(backend, mover, req, out.warn, at)
    facts["metrics"] = outcome.metrics
    for line in outcome.lines:
        out.result(line)
    if outcome.plan is None or lk is None or limited is None:
        return outcome.code
    data = ops.plan_bytes(outcome.plan)
    if req.dry_run:
        out.result(data.decode().rstrip("\n"))
        out.info("Dry run: nothing was stored or started")
        return outcome.code
    rollback = None
    if req.report_dir is not None:
        paths = write_report(req.report_dir, lk, limited, data, ["kafka-reassign", *sys.argv[1:]], at)
        out.info(f"Report: {paths[0]}, {paths[1]}")
        rollback = os.path.join(req.report_dir, os.path.basename(paths[0])[: -len(".md")] + "-rollback.json")
    report = ExecuteReport(out, json=opts.json)
    decision = outcome.decision
    gather = env.health
    if decision.kind == "heal" and gather is not None:  # its first step too: the dead brokers' damage exempt
        from reassign_cli.core import autopilot as ap

        env.health = lambda: ap.without_dead(gather(), decision.dead)
    return ops.start(
        env, mover, req, data, opts.typed, report, decision.kind == "heal", rollback, decision.dead
    )


def write_report(
    report_dir: str, lk: Any, limited: Any, data: bytes, argv: Sequence[str], at: float
) -> tuple[str, str]:
    """--report-dir: the plan's report (render/report.py, Markdown and HTML), named by the time (UTC) and
    the plan's SHA-256 (its first 12 hex digits): rebalance-YYYYmmddTHHMMSSZ-<sha>.md / .html."""
    import hashlib
    import os
    import shlex
    from datetime import UTC, datetime

    from reassign_cli.ops.autopilot import SEED, applied
    from reassign_cli.planning import plan
    from reassign_cli.render import report as rr

    after = applied(lk.current, limited)
    seen = rr.Collector()
    seen(lk.current, after, lk.sizes)
    r = rr.Report(
        command=shlex.join(argv),
        seed=SEED,
        strategy="balanced",
        stats=plan.plan_stats(lk.current, after),
        extra=None,
        brokers=[b.id for b in lk.brokers],
        seen=seen,
    )
    stamp = datetime.fromtimestamp(at, UTC).strftime("%Y%m%dT%H%M%SZ")
    name = os.path.join(report_dir, f"rebalance-{stamp}-{hashlib.sha256(data).hexdigest()[:12]}")
    return rr.write_report(name, r)
