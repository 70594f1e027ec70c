"""`kafka-reassign cancel`: revert a running reassignment (Kafka's --cancel), then remove the throttles."""

from __future__ import annotations

from typing import Any

import click

from reassign_cli.cli.common import (
    Options,
    command_line,
    connection,
    connection_options,
    controller_option,
    open_backend,
    registered_brokers,
)
from reassign_cli.cli.options import wait_timeout_option
from reassign_cli.errors import UsageError


@click.command("cancel", short_help="Cancel a running reassignment: replicas go back to where they were.")
@click.option(
    "--reassignment-json-file",
    "reassignment_file",
    metavar="FILE",
    help="The file that was given to execute (or --all).",
)
@click.option(
    "--all",
    "cancel_every",
    is_flag=True,
    help="Cancel every reassignment in flight, whoever started it (no plan file needed).",
)
@click.option(
    "--rollback-file",
    metavar="FILE",
    help="With --all: where to save the targets being cancelled, as a reassignment JSON "
    "[default: rollback-YYYYmmdd-HHMMSS.json here].",
)
@click.option("--preserve-throttles", is_flag=True, help="Leave the throttles in place.")
@wait_timeout_option(60.0, "How long to wait for the controller to revert the partitions (exit 4 after).")
@controller_option
@connection_options
def command(
    opts: Options,
    reassignment_file: str | None,
    cancel_every: bool,
    rollback_file: str | None,
    preserve_throttles: bool,
    timeout: float,
) -> int:
    """Cancel the reassignment of the partitions in --reassignment-json-file that are still moving.

    Each reverts to its original replicas (AlterPartitionReassignments through the admin API, so
    --bootstrap-server is needed beside --zookeeper too; ZooKeeper-mode controllers support it since 2.4).
    Refused (exit 3, nothing done) when a partition's original replicas are all offline or out of the ISR,
    which would leave it without a leader. The file's replica moves between log dirs that are still
    copying are stopped, as Kafka's --cancel does (each replica stays in its current log dir). Then, unless
    --preserve-throttles, the throttles come off as verify does (kept while a log-dir copy runs or is unseen).

    Neither: the plan a paced execute stored in the cluster is cancelled so, then deleted.
    With --all instead of the file: every partition reassignment in flight is cancelled the same way
    (ListPartitionReassignments; in ZooKeeper mode the topic znodes and /admin/reassign_partitions), after
    its targets are saved to --rollback-file (executing that file starts the moves again). Nothing in
    flight: one line, nothing written. Replica moves between log dirs in flight (a future copy on any live
    broker) are stopped too; a broker that does not answer keeps the throttles.
    """
    from reassign_cli.cli.inputs import read_input_file
    from reassign_cli.core.model import parse_reassignment
    from reassign_cli.render import Output

    _check_choice(reassignment_file, cancel_every, rollback_file)
    data = None if reassignment_file is None else read_input_file(reassignment_file)
    plan = None if data is None else parse_reassignment(data)
    conn = connection(opts, admin_too=True)
    if conn.zk is not None and conn.admin is None:
        raise UsageError(
            "the cancel goes through the brokers (AlterPartitionReassignments): give --bootstrap-server "
            "beside --zookeeper (ZooKeeper mode keeps its throttle record in ZooKeeper)",
            hint=f"Run: {command_line('--bootstrap-server', registered_brokers(conn.zk))}",
        )
    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    if reassignment_file is None or data is None or plan is None:
        return _cancel_all(opts, out, rollback_file, preserve_throttles, timeout, cancel_every)
    return _cancel_file(opts, out, (reassignment_file, data, plan), preserve_throttles, timeout)


def _cancel_file(
    opts: Options, out: Any, given: tuple[str, bytes, Any], preserve_throttles: bool, timeout: float
) -> int:
    """cancel --reassignment-json-file: the file's moves; when the plan stored in the cluster is this very
    file's (same SHA-256), it is paused before and deleted after (ops.plan_ctl.stored_plan_of_file), so that
    no step of it starts the moves again."""
    from reassign_cli.cli.common import log_dir_mover
    from reassign_cli.ops.cancel import cancel
    from reassign_cli.ops.plan_ctl import stored_plan_of_file

    reassignment_file, data, plan = given
    targets, dirs = plan.targets(), plan.log_dir_targets()
    with open_backend(opts, admin_too=True) as backend, stored_plan_of_file(backend, data) as stored:
        mover = log_dir_mover(backend) if dirs else None
        try:
            outcome = cancel(
                backend,
                targets,
                preserve_throttles=preserve_throttles,
                timeout=timeout,
                dirs=dirs,
                log_dirs=mover,
                hint=_not_reverted_hint(opts, reassignment_file),
            )
        finally:
            if mover is not None:
                mover.close()
    _forget_run(out, reassignment_file)
    code = _report(out, opts, outcome, bool(dirs))
    if stored and not opts.json:
        out.result(f"Deleted the stored plan (SHA-256 {stored[0][:12]}): it was this file's.")
    return code


def _check_choice(reassignment_file: str | None, cancel_every: bool, rollback_file: str | None) -> None:
    if cancel_every and reassignment_file is not None:
        raise UsageError("give one of --reassignment-json-file and --all (neither: the stored plan)")
    if rollback_file is not None and reassignment_file is not None:
        raise UsageError(
            "--rollback-file goes with --all or the stored plan (execute saved the rollback of a plan file)"
        )


def _forget_run(out: Any, file_name: str | None) -> None:
    """A paced run of the plan is over once it is cancelled: verify no longer calls its moves queued."""
    from reassign_cli.cli.inputs import read_input_file
    from reassign_cli.ops.pace_file import PACE_SUFFIX, forget_run

    if file_name is not None and forget_run(file_name, read_input_file(file_name)):
        out.info(
            f"Removed {file_name}{PACE_SUFFIX}: the paced run of this plan is over (execute --resume "
            "would need --max-moves-per-broker again)"
        )


def _not_reverted_hint(opts: Options, plan_file: str | None) -> str:
    """What to run when the partitions have not reverted in time: list, then verify with the plan."""
    from reassign_cli.core.hints import command_line

    check = command_line(["list"], opts.typed)
    if plan_file is None:
        return f"Check with: {check}"
    verify = command_line(["verify", "--reassignment-json-file", plan_file], opts.typed)
    return f"Check with: {check}; once they have reverted, remove the throttles with: {verify}"


def _cancel_all(
    opts: Options,
    out: Any,
    rollback_file: str | None,
    preserve_throttles: bool,
    timeout: float,
    every: bool = True,
) -> int:
    from reassign_cli.cli.common import log_dir_mover
    from reassign_cli.cli.plan_ctl import cancel_stored_command

    if not every:  # neither a file nor --all: the stored plan (cli/plan_ctl.py)
        return cancel_stored_command(opts, out, rollback_file, preserve_throttles, timeout, _report)
    from reassign_cli.core.in_flight import not_cancelled_line
    from reassign_cli.ops.cancel_all import cancel_all

    with open_backend(opts, admin_too=True) as backend:
        mover = log_dir_mover(backend)
        try:
            done = cancel_all(
                backend,
                rollback_file=rollback_file,
                preserve_throttles=preserve_throttles,
                timeout=timeout,
                log_dirs=mover,
            )
        finally:
            if mover is not None:
                mover.close()
    if done.outcome is None:
        if opts.json:
            out.result_json({"cancelled": [], "rollback_file": None, "throttles_cleared": None})
        else:
            out.result("No partition reassignments in flight: nothing to cancel.")
        return 0
    missed = not_cancelled_line(done.in_flight, done.outcome.cancelled)
    if missed is not None:
        out.warn(missed)
    if done.rollback_file is not None and not opts.json:
        out.result(f"Saved the targets of the reassignments cancelled to {done.rollback_file}")
    return _report(out, opts, done.outcome, bool(done.outcome.stopped), {"rollback_file": done.rollback_file})


def _report(
    out: Any, opts: Options, outcome: Any, has_dirs: bool, extra: dict[str, object] | None = None
) -> int:
    from reassign_cli.core.cancel_rules import cancelled_line, stopped_moves_lines
    from reassign_cli.core.names import NAMES_SHOWN
    from reassign_cli.render.progress import cleared_json, clearing_lines, kept_lines

    if outcome.kept is not None:
        out.info(outcome.kept)
    if opts.json:
        cleared = outcome.cleared
        doc: dict[str, object] = {
            "cancelled": [{"topic": t, "partition": p} for t, p in outcome.cancelled],
            "throttles_cleared": cleared_json(cleared),
            **(extra or {}),
        }
        if has_dirs:
            doc["log_dir_moves_stopped"] = [
                {"topic": t, "partition": p, "broker": b, "log_dir": d}
                for (t, p, b), d in outcome.stopped.items()
            ]
        out.result_json(doc)
        return 0
    out.result(cancelled_line(outcome.cancelled))
    for line in stopped_moves_lines(outcome.stopped) if has_dirs else []:
        out.result(line)
    if outcome.cleared is not None:
        for line in clearing_lines(outcome.cleared):
            out.result(line)
        for line in kept_lines(outcome.cleared, limit=None if opts.verbose else NAMES_SHOWN):
            out.info(line)
    return 0
