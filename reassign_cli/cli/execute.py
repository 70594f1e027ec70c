"""`kafka-reassign execute`: validate, save the rollback, set throttles, start the reassignment, maybe wait."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from reassign_cli.cli.common import (
    Options,
    connection_options,
    controller_option,
    log_dir_mover,
    open_backend,
)
from reassign_cli.cli.inputs import read_input_file
from reassign_cli.cli.options import wait_timeout_option
from reassign_cli.cli.rate_type import POSITIVE_RATE, RATE_HELP
from reassign_cli.cli.schedule_types import HOURS, HOURS_HELP, NOT_BEFORE, NOT_BEFORE_HELP
from reassign_cli.cli.throttle_types import RATE_OR_AUTO, SECONDS, THROTTLE_SCHEDULE, THROTTLE_SCHEDULE_HELP
from reassign_cli.errors import UsageError

if TYPE_CHECKING:
    from reassign_cli.ops.pacing import BatchKeeper, Pacer
    from reassign_cli.ops.request import ExecuteRequest
    from reassign_cli.render.progress import ExecuteReport


def _rate(value: int | None) -> int | None:
    # Kafka's tools take -1 (any negative value) as "no throttle".
    return None if value is None or value < 0 else value


@click.command("execute", short_help="Start a plan's reassignment, throttled; with --wait, see it through.")
@click.option(
    "--reassignment-json-file",
    "reassignment_file",
    default=None,
    metavar="FILE",
    help="The plan, in Kafka's reassignment JSON format (as printed by generate). Required, except with "
    "--resume alone, which takes over the plan stored in the cluster.",
)
@click.option("--hours", type=HOURS, default=None, help=f"With --detach: {HOURS_HELP}.")
@click.option("--not-before", type=NOT_BEFORE, default=None, help=f"With --detach: {NOT_BEFORE_HELP}.")
@click.option(
    "--on-under-min-isr",
    "on_under_min_isr",
    type=click.Choice(["hold", "cancel"]),
    default="hold",
    show_default=True,
    help="With --detach: what a step does when a partition under its min.insync.replicas has a move of the "
    "plan running: hold (start nothing new) or cancel (also cancel that move alone, saving its target to a "
    "rollback file). Stored with the plan.",
)
@click.option(
    "--ignore-health",
    "ignore_health",
    multiple=True,
    metavar="CHECK",
    help="With --detach, --max-moves-per-broker or --batch-size (a plan stored in the "
    "cluster): every step of the stored plan starts moves although this health check holds (repeatable; "
    "'all' for every check; stored with the plan). See docs/health.md.",
)
@click.option(
    "--detach",
    is_flag=True,
    help="With --max-moves-per-broker or --batch-size: store the plan in the cluster, start the first moves "
    "and exit 0; each later `kafka-reassign verify` (e.g. from cron) carries it on (ZooKeeper alone: one "
    "batch at a time). See docs/execute-verify.md.",
)
@click.option(
    "--throttle",
    type=RATE_OR_AUTO,
    default=None,
    metavar="RATE|auto",
    help=f"Inter-broker replication throttle for the moving replicas: {RATE_HELP} (negative: none); "
    "auto (with --min-throttle and --max-throttle): a rate per broker that follows the copies while "
    "waiting (docs/execute-verify.md, Adaptive throttle).",
)
@click.option(
    "--min-throttle",
    type=POSITIVE_RATE,
    default=None,
    metavar="RATE",
    help="With --throttle auto: the adaptive throttle's start and least rate.",
)
@click.option(
    "--max-throttle",
    type=POSITIVE_RATE,
    default=None,
    metavar="RATE",
    help="With --throttle auto or a --throttle rate: the adaptive throttle's highest rate.",
)
@click.option(
    "--throttle-interval",
    type=SECONDS,
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="The adaptive throttle's decision period.",
)
@click.option(
    "--throttle-schedule",
    type=THROTTLE_SCHEDULE,
    default=None,
    metavar="WINDOW=RATE,...",
    help=f"Instead of --throttle, while waiting: {THROTTLE_SCHEDULE_HELP}.",
)
@click.option(
    "--replica-alter-log-dirs-throttle",
    "log_dir_throttle",
    type=RATE_OR_AUTO,
    default=None,
    metavar="RATE|auto",
    help=f"Throttle for moves between log dirs of one broker: {RATE_HELP} (negative: none); auto (with "
    "--min-log-dir-throttle, --max-log-dir-throttle and --max-moves-per-disk): a rate per broker that follows "
    "the log-dir moves (docs/execute-verify.md, Adaptive throttle).",
)
@click.option(
    "--min-log-dir-throttle",
    type=POSITIVE_RATE,
    default=None,
    metavar="RATE",
    help="With --replica-alter-log-dirs-throttle auto: the adaptive log-dir throttle's start and least rate.",
)
@click.option(
    "--max-log-dir-throttle",
    type=POSITIVE_RATE,
    default=None,
    metavar="RATE",
    help="With --replica-alter-log-dirs-throttle auto or a rate: the adaptive log-dir throttle's highest rate.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Validate and print every write it would make (znodes or admin-API requests); write nothing.",
)
@click.option("--wait", is_flag=True, help="Wait until complete, then remove the throttles (as verify).")
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="How often --wait polls the cluster.",
)
@wait_timeout_option(
    None, "With --wait: give up waiting after this long (exit 4; the reassignment keeps running)."
)
@click.option(
    "--rollback-file",
    metavar="FILE",
    help="Where to save the rollback JSON [default: rollback-YYYYmmdd-HHMMSS.json here].",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Submit at most N partitions at a time, each batch after the previous completed (implies --wait).",
)
@click.option(
    "--max-moves-per-broker",
    "max_moves",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="At most N partition moves in flight per broker (receiving a replica, or leading the partition); "
    "a move starts as soon as one ends (implies --wait; ZooKeeper alone: batches). See docs/execute-verify.md.",
)
@click.option(
    "--order",
    type=click.Choice(["largest-first", "smallest-first", "as-planned"]),
    default=None,
    help="With --max-moves-per-broker: which moves start first [default: largest-first when sizes are "
    "known (--bootstrap-server), else as-planned].",
)
@click.option(
    "--max-moves-per-disk",
    "max_moves_per_disk",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Pace the moves between log dirs of one broker: at most N into or out of one disk (broker, log dir) "
    "at a time, after the partition moves (implies --wait; needs --bootstrap-server). See docs/execute-verify.md.",
)
@click.option(
    "--one-broker-at-a-time",
    is_flag=True,
    help="Pace the moves between log dirs of one broker (as --max-moves-per-disk, default 1) on one broker at "
    "a time (implies --wait).",
)
@click.option(
    "--log-dir-timeout",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to retry starting the log-dir moves (what Kafka's tool calls --timeout, in ms there).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Run the file again after an interruption: skip the partitions already at their target, wait for "
    "its own batch still moving, then do the rest (implied by --batch-size; implies --wait). A paced run "
    "continues with the cap kept beside the file (FILE.pacing.json) unless --max-moves-per-broker is given; "
    "a --batch-size run with its batch size.",
)
@click.option(
    "--stuck-after",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="While waiting: warn once a target broker of a moving partition has been unregistered this long.",
)
@click.option(
    "--elect-leaders",
    is_flag=True,
    help="With --wait: at the end, elect the preferred replicas as leaders (as elect-leaders does).",
)
@click.option(
    "--additional",
    is_flag=True,
    help="Start this plan beside the reassignments already running (KIP-455; ZooKeeper mode: needs "
    "--bootstrap-server as well) instead of refusing with exit 4.",
)
@click.option(
    "--disallow-replication-factor-change",
    "disallow_rf_change",
    is_flag=True,
    help="Refuse (exit 3, nothing written) a plan that changes the number of replicas of a partition.",
)
@controller_option
@connection_options
def command(opts: Options, reassignment_file: str | None, **kw: Any) -> int:
    """Start the reassignment in --reassignment-json-file (creates /admin/reassign_partitions with
    --zookeeper; AlterPartitionReassignments with --bootstrap-server).

    Everything is validated first; any problem exits 3 with nothing written. The current assignment
    of the file's partitions is printed and saved for rollback. With --throttle the moving replicas are
    throttled; run verify (or use --wait) to remove the throttles once the reassignment is complete.
    log_dirs other than "any" need the brokers (--bootstrap-server, also beside --zookeeper).
    """
    from reassign_cli.cli.stored import foreground
    from reassign_cli.ops.execute import execute
    from reassign_cli.render import Output
    from reassign_cli.render.progress import ExecuteReport

    detach = kw.pop("detach")
    kw["ignore_health"] = _ignored(kw["ignore_health"])
    if kw["on_under_min_isr"] != "hold" and not detach:
        raise UsageError("--on-under-min-isr cancel needs --detach")
    if reassignment_file is None or detach:
        return _stored(opts, reassignment_file, detach, kw)
    kw.pop("on_under_min_isr")
    ignore = kw.pop("ignore_health")
    if kw.pop("hours") is not None or kw.pop("not_before") is not None:
        raise UsageError("--hours and --not-before need --detach")
    _check_options(kw)
    loop = rate_loop(kw)
    dir_loop = log_dir_loop(kw)
    req = _request(opts, reassignment_file, kw)
    req.ignore_health = ignore
    if _oversize(opts, req, kw) and not (req.wait or req.dry_run):  # stored, stepped by later verifies
        detached = {"hours": None, "not_before": None, "on_under_min_isr": "hold", "ignore_health": ignore}
        return _stored_batches(opts, reassignment_file, {**kw, **detached}, req, loop)
    _one_batch(req, kw)
    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts, admin_too=True) as backend:
        _check_additional(backend, req)
        mover = log_dir_mover(backend)
        req.bootstrap_server = opts.bootstrap if mover is not None else None
        report = ExecuteReport(out, json=opts.json)
        if loop is not None:
            _start_loop(loop, req, backend, mover, report)
        pacer = _pacer(req, kw["order"], report, mover)
        dir_pacer = _dir_pacer(mover, req)
        if dir_loop is not None and dir_pacer is not None:
            dir_pacer.rates = _log_dir_runner(dir_loop, report, req)
        try:
            with foreground(backend, req, kw["order"], pacer, dir_pacer):
                code = execute(backend, req, report, log_dirs=mover, pacer=pacer, dir_pacer=dir_pacer)
            if pacer is not None and pacer.keep is not None and not req.dry_run:
                pacer.keep.forget()  # the plan ran to its end: nothing left to resume
            return code
        finally:
            if mover is not None:
                mover.close()


def _oversize(opts: Options, req: ExecuteRequest, kw: dict[str, Any]) -> bool:
    """A plan whose trigger exceeds one znode (ZooKeeper mode, no --batch-size nor --max-moves-per-broker)
    runs as batches by itself (ops/stored_batches.oversize): one line says so, and the batch size is set
    to the whole plan (the bytes cut it). Waiting (or a dry run): in the foreground; else stored."""
    if opts.zookeeper is None or req.batch_size is not None or req.max_moves is not None or req.additional:
        return False
    from reassign_cli.core.model import parse_reassignment
    from reassign_cli.ops import stored_batches as sb
    from reassign_cli.ops.execute import sorted_entries
    from reassign_cli.render import Output

    entries = sorted_entries(parse_reassignment(req.data))
    found = sb.oversize(entries, sb.zookeeper_limit())
    if found is None:
        return False
    Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose).info(
        found.line(len(entries), req.wait or req.dry_run)
    )
    req.batch_size = kw["batch_size"] = len(entries)
    return True


def _one_batch(req: ExecuteRequest, kw: dict[str, Any]) -> None:
    """--max-moves-per-disk / --one-broker-at-a-time alone (no window, no batches) on a plan that names log
    dirs: it runs as one batch of the whole plan, so it is stored as batches are, its log-dir queue with it,
    and a kill -9 leaves it to cron (it ran in this process's memory alone before 2026-11-29)."""
    if req.max_moves is not None or req.batch_size is not None or req.resume or req.additional:
        return
    if req.dir_cap is None and not req.one_broker:
        return
    from reassign_cli.core.model import parse_reassignment

    plan = parse_reassignment(req.data)
    if plan.has_log_dir_moves():
        req.batch_size = kw["batch_size"] = len(plan.entries)


def _stored_batches(
    opts: Options, reassignment_file: str, kw: dict[str, Any], req: ExecuteRequest, loop: Any
) -> int:
    """An oversize plan without --wait: stored as --detach --batch-size stores it (cli/stored.detach)."""
    from reassign_cli.cli import stored

    rates = {"throttle": req.throttle, "log_dir_throttle": req.log_dir_throttle, "rate_loop": loop}
    return stored.detach(opts, reassignment_file, {**kw, **rates})


def _ignored(names: tuple[str, ...]) -> frozenset[str]:
    from reassign_cli.core.health import parse_ignore

    try:
        return parse_ignore(names)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _request(opts: Options, reassignment_file: str, kw: dict[str, Any]) -> ExecuteRequest:
    from reassign_cli.ops.request import ExecuteRequest

    return ExecuteRequest(
        file_name=reassignment_file,
        data=read_input_file(reassignment_file),
        throttle=_rate(kw["throttle"]),
        log_dir_throttle=_rate(kw["log_dir_throttle"]),
        dry_run=kw["dry_run"],
        wait=kw["wait"],
        poll_interval=kw["poll_interval"],
        timeout=kw["timeout"],
        rollback_file=kw["rollback_file"],
        batch_size=kw["batch_size"],
        log_dir_timeout=kw["log_dir_timeout"],
        elect_leaders=kw["elect_leaders"],
        resume=kw["resume"],
        stuck_after=kw["stuck_after"],
        max_moves=kw["max_moves"],
        connection=opts.typed,
        additional=kw["additional"],
        disallow_rf_change=kw["disallow_rf_change"],
        dir_cap=kw["max_moves_per_disk"],
        one_broker=kw["one_broker_at_a_time"],
    )


def rate_loop(kw: dict[str, Any]) -> Any:
    """The run's rate loop (ops.rate_loop.RateLoop) from the throttle options, or None: a fixed rate, as
    always. Usage errors (exit 2) on a combination that makes no loop; sets kw["throttle"] to the rate the
    first moves start at."""
    from reassign_cli.core import autothrottle as at
    from reassign_cli.ops.rate_loop import RateLoop

    schedule, throttle = kw["throttle_schedule"], kw["throttle"]
    given = [n for n in ("min_throttle", "max_throttle") if kw[n] is not None]
    if schedule is not None:
        if throttle is not None or given:
            raise UsageError(
                "--throttle-schedule sets the rate itself: not with --throttle, --min-throttle or "
                "--max-throttle (give the other hours' rate as *=RATE)"
            )
        if (schedule.default is not None and schedule.default < 0) or any(r < 0 for _, r in schedule.windows):
            raise UsageError("--throttle-schedule with execute: every rate must be at least 1 B/s")
        loop = RateLoop(schedule=schedule)
    else:
        bounds = at.bounds_from_options(throttle, kw["min_throttle"], kw["max_throttle"])
        if bounds is None:
            if throttle == at.AUTO:
                raise UsageError("--throttle auto needs both --min-throttle and --max-throttle")
            return None
        loop = RateLoop(settings=at.Settings(bounds, None, kw["throttle_interval"]))
    if not kw["wait"] and kw["batch_size"] is None:
        raise UsageError(
            "--throttle auto, --max-throttle and --throttle-schedule change the rate while waiting: "
            "they need --wait (or --max-moves-per-broker, --batch-size, --resume)"
        )
    from datetime import UTC, datetime

    kw["throttle"] = loop.start_rate(datetime.now(UTC))
    return loop


def log_dir_loop(kw: dict[str, Any]) -> Any:
    """The adaptive log-dir throttle's settings (core.autothrottle.Settings), or None: a fixed rate, as
    always. Usage errors (exit 2) on a combination that makes no loop; sets kw["log_dir_throttle"] to the
    rate the first log-dir moves start at."""
    from reassign_cli.core import autothrottle as at

    names = ("--replica-alter-log-dirs-throttle", "--min-log-dir-throttle", "--max-log-dir-throttle")
    low, high = kw.pop("min_log_dir_throttle"), kw.pop("max_log_dir_throttle")
    bounds = at.bounds_from_options(kw["log_dir_throttle"], low, high, names)
    if bounds is None:
        if kw["log_dir_throttle"] == at.AUTO:
            raise UsageError(f"{names[0]} auto needs both {names[1]} and {names[2]}")
        return None
    if kw["max_moves_per_disk"] is None and not kw["one_broker_at_a_time"]:
        raise UsageError(
            f"the adaptive log-dir throttle ({names[0]} auto or {names[2]}) follows the paced log-dir moves: "
            "it needs --max-moves-per-disk or --one-broker-at-a-time"
        )
    kw["log_dir_throttle"] = bounds.start
    return at.Settings(None, bounds, kw["throttle_interval"])


def _log_dir_runner(settings: Any, report: ExecuteReport, req: ExecuteRequest) -> Any:
    from reassign_cli.ops.logdir_rates import LogDirLoop

    runner = LogDirLoop(settings, report)
    runner.joined = req.rate_loop
    return runner


def _start_loop(loop: Any, req: ExecuteRequest, backend: Any, mover: Any, report: ExecuteReport) -> None:
    """The loop's runner on the request; a resumed adaptive run starts at the rates last written."""
    from datetime import UTC, datetime

    from reassign_cli.core import throttle as th
    from reassign_cli.ops.rate_loop import Runner, resumed_state

    if loop.settings is not None:
        if mover is None:
            raise UsageError(
                "the adaptive throttle measures the copies through the brokers: give --bootstrap-server"
            )
        if req.resume:
            brokers, _ = th.recorded_entities(backend.read_priors())
            loop.auto = resumed_state(backend, brokers, loop.settings.replication)
    runner = Runner(loop, mover, report, req)
    line = runner.schedule_line(datetime.now(UTC))
    if line is not None:
        report.info(line)
    req.rate_loop = runner


def _stored(opts: Options, reassignment_file: str | None, detach: bool, kw: dict[str, Any]) -> int:
    """--detach, and --resume with no plan file: the plan stored in the cluster (cli/stored.py)."""
    from reassign_cli.cli import stored

    if reassignment_file is None:
        if not kw["resume"] or detach:
            raise UsageError(
                "Missing option '--reassignment-json-file' (only --resume alone goes without it)"
            )
        return stored.resume_stored(opts, interval=kw["poll_interval"], ignore=kw["ignore_health"])
    if (kw["max_moves"] is None) == (kw["batch_size"] is None):
        raise UsageError("--detach needs --max-moves-per-broker N or --batch-size N (one of them)")
    dir_loop = log_dir_loop(
        kw
    )  # the adaptive log-dir throttle: its steps tick it (ops/stored_logdir_rates.py)
    if kw["resume"] or kw["wait"] or kw["dry_run"] or kw["additional"] or kw["elect_leaders"]:
        raise UsageError(
            "--detach cannot be combined with --resume, --wait, --dry-run, --additional or --elect-leaders"
        )
    loop = _detached_loop(kw)
    rates = {"throttle": _rate(kw["throttle"]), "log_dir_throttle": _rate(kw["log_dir_throttle"])}
    return stored.detach(
        opts, reassignment_file, {**kw, **rates, "rate_loop": loop, "log_dir_loop": dir_loop}
    )


def _pacer(req: ExecuteRequest, order: Any, report: ExecuteReport, mover: Any) -> Pacer | BatchKeeper | None:
    """The window's runner for --max-moves-per-broker, or for --resume of a plan whose cap is kept; the
    batches' runner that keeps a --batch-size run beside the plan (given, or kept and resumed)."""
    if req.max_moves is None and not req.resume and req.batch_size is None:
        return None
    from reassign_cli.ops.pace_file import PaceFile, resumed_pace
    from reassign_cli.ops.pacing import BatchKeeper, Pacer

    keep = PaceFile.beside(req.file_name, req.data)
    if req.batch_size is not None:  # given anew: the size given holds, whatever was kept
        return BatchKeeper(keep)
    pace = resumed_pace(keep, req.max_moves, order, req.resume, report)
    if pace is None:
        return None
    if req.resume:
        _kept_rates(req, pace, report)
    if pace.cap is None:
        req.batch_size = pace.batch_size
        return BatchKeeper(keep)
    req.max_moves = pace.cap
    return Pacer(pace.cap, pace.order, report, sizer=mover, keep=keep)


def _detached_loop(kw: dict[str, Any]) -> Any:
    """The rate loop a stored plan's steps run (ops/stored_rates.py), or None: a fixed rate. The same checks
    as in the foreground (a stored plan waits: its steps tick the loop); sets kw["throttle"] to the start."""
    given = {**kw, "wait": True}
    loop = rate_loop(given)
    kw["throttle"] = given["throttle"]
    return loop


def _dir_pacer(mover: Any, req: ExecuteRequest) -> Any:
    """ops.log_dirs.LogDirPacer for --max-moves-per-disk / --one-broker-at-a-time (the brokers at hand).
    Without them, a plan that names log dirs run in a window or in batches (or resumed) gets one too, with no
    cap: its moves within a broker start at once after the partition moves (a window or a resume submits
    only what is not at its target replicas, so they would never start) and the plan is stored with them."""
    from reassign_cli.ops.log_dirs import LogDirPacer

    if req.dir_cap is None and not req.one_broker:
        from reassign_cli.ops.stored import places_dirs

        paced = req.max_moves is not None or req.batch_size is not None or req.resume
        return LogDirPacer(None) if mover is not None and paced and places_dirs(req.data) else None
    if mover is None:
        raise UsageError("--max-moves-per-disk and --one-broker-at-a-time need --bootstrap-server")
    return LogDirPacer(req.dir_cap or 1, req.one_broker)


def _kept_rates(req: ExecuteRequest, pace: Any, report: ExecuteReport) -> None:
    """A resume that leaves a rate out throttles the moves it starts at the rate the plan started with; one
    that leaves the log-dir pacing out (--max-moves-per-disk, --one-broker-at-a-time) paces as it started."""
    kept = []
    if req.throttle is None and pace.throttle is not None:
        req.throttle = pace.throttle
        kept.append(f"--throttle {pace.throttle}")
    if req.log_dir_throttle is None and pace.log_dir_throttle is not None:
        req.log_dir_throttle = pace.log_dir_throttle
        kept.append(f"--replica-alter-log-dirs-throttle {pace.log_dir_throttle}")
    if req.dir_cap is None and not req.one_broker and (pace.dir_cap is not None or pace.one_broker):
        req.dir_cap, req.one_broker = pace.dir_cap, pace.one_broker
        kept += [] if pace.dir_cap is None else [f"--max-moves-per-disk {pace.dir_cap}"]
        kept += ["--one-broker-at-a-time"] if pace.one_broker else []
    if kept:
        report.info(f"Resuming with {' '.join(kept)}, as kept beside the plan")


def _check_additional(backend: Any, req: ExecuteRequest) -> None:
    """--additional in ZooKeeper mode goes through the brokers: refused before anything is written when none
    are named (Kafka 2.8's tool refused --additional without --bootstrap-server too)."""
    from reassign_cli.backends.zookeeper.backend import ADDITIONAL_NEEDS_BROKERS, ZkBackend

    if req.additional and isinstance(backend, ZkBackend) and backend.admin is None:
        raise UsageError(ADDITIONAL_NEEDS_BROKERS)


def _check_options(kw: dict[str, Any]) -> None:
    """The option combinations execute refuses (usage errors); --resume and --max-moves-per-broker imply
    --wait (set in kw)."""
    if kw["max_moves"] is not None and kw["batch_size"] is not None:
        raise UsageError("--max-moves-per-broker and --batch-size cannot be combined")
    if kw["order"] is not None and kw["max_moves"] is None and not kw["resume"]:
        raise UsageError("--order needs --max-moves-per-broker")
    if kw["resume"] or kw["max_moves"] is not None:
        kw["wait"] = True
    if kw["max_moves_per_disk"] is not None or kw["one_broker_at_a_time"]:
        if kw["additional"]:
            raise UsageError("--additional starts the whole plan at once: not with --max-moves-per-disk")
        kw["wait"] = True
    if kw["timeout"] is not None and not (kw["wait"] or kw["batch_size"]):
        raise UsageError("--wait-timeout needs --wait (or --batch-size, which waits)")
    if kw["elect_leaders"] and not (kw["wait"] or kw["batch_size"]):
        raise UsageError("--elect-leaders needs --wait (or --batch-size, which waits)")
    if kw["additional"] and (kw["resume"] or kw["batch_size"] or kw["max_moves"]):
        raise UsageError(
            "--additional starts the whole plan at once: not with --batch-size, "
            "--max-moves-per-broker or --resume"
        )
