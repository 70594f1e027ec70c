"""`kafka-reassign pause` and `kafka-reassign continue` (issue 25 item 6), and the stored plan's part of
`list` and of `cancel` with no plan file (called from cli/listing.py and cli/cancel.py). The work is in
ops/plan_ctl.py; the store is chosen by backends/plan_stores.open_store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import click

from reassign_cli.cli.common import Options, connection_options, open_backend
from reassign_cli.cli.schedule_types import HOURS, REASON
from reassign_cli.core.hints import command_line


def _out(opts: Options) -> Any:
    from reassign_cli.render import Output

    return Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)


NOTHING_STORED = "No stored plan: nothing to {}."


@click.command("pause", short_help="Pause the stored plan: no new move starts; running moves finish.")
@click.option("--reason", type=REASON, default=None, help="Why (shown by verify and list).")
@connection_options
def pause_command(opts: Options, reason: str | None) -> int:
    """Pause the plan stored in the cluster by a paced execute: no new move starts until `continue`; the
    moves running finish. Records who paused it (user@host) and when. Always the standing pause too (no
    rebalance tick starts a plan, and a plan stored meanwhile is stored paused, until `continue`), so the
    autopilot stays paused after the stored plan ends. Already paused: says since when, keeps the first
    pause, exit 0."""
    from reassign_cli.backends.plan_stores import open_store
    from reassign_cli.ops import standing_pause
    from reassign_cli.ops.plan_ctl import pause_stored, who

    out, (user, host), now = _out(opts), who(), datetime.now(UTC)
    with open_backend(opts) as backend, open_store(backend) as store:
        done = pause_stored(store, now, user, host, reason)
        # the standing pause (ops/standing_pause.py) whatever is stored: the autopilot stays paused
        # after the stored plan's end, until continue
        standing = standing_pause.pause(backend, now, user, host, reason)
        if done is None:
            standing_pause.pause_new_plan(backend, store)  # a plan stored meanwhile: paused too
    if opts.json:
        paused, already = (done.paused, done.already) if done is not None else standing
        out.result_json({"paused": paused.to_dict(), "already_paused": already, "standing": done is None})
        return 0
    resume = command_line(["continue"], opts.typed)
    if done is None:
        line = standing[0].line()
        out.result(
            f"Already {line} (the standing pause); nothing changed."
            if standing[1]
            else f"No stored plan: the autopilot is {line}: no rebalance tick starts a plan, and a plan "
            f"stored meanwhile is stored paused. Resume with: {resume}"
        )
    elif done.already:
        out.result(f"Already {done.paused.line()}; nothing changed.")
    else:
        out.result(
            f"The stored plan is {done.paused.line()}; the autopilot too (no rebalance tick starts a plan "
            f"after it ends). Resume both with: {resume}"
        )
    return 0


class _HoursOrNone(click.ParamType):
    name = HOURS.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.strip().lower() == "none":
            return "none"
        return HOURS.convert(value, param, ctx)


@click.command("continue", short_help="Continue the stored plan after a pause; optionally change its hours.")
@click.option(
    "--hours",
    type=_HoursOrNone(),
    default=None,
    help="Replace the stored hours: HH:MM-HH:MM in UTC (several joined by commas), or `none` for any time.",
)
@connection_options
def continue_command(opts: Options, hours: Any) -> int:
    """Clear the stored plan's pause (the next step may start moves again) and, with --hours, replace the
    hours in which new moves may start. One line per change; nothing stored: one line, exit 0."""
    from reassign_cli.backends.plan_stores import open_store
    from reassign_cli.ops import standing_pause
    from reassign_cli.ops.plan_ctl import KEEP, continue_stored

    out = _out(opts)
    given = KEEP if hours is None else (None if hours == "none" else hours)
    with open_backend(opts) as backend, open_store(backend) as store:
        done = continue_stored(store, datetime.now(UTC), given)
        lifted = standing_pause.lift(backend)
    if opts.json:
        removed = None if lifted is None else lifted.to_dict()
        out.result_json(
            None
            if done is None and lifted is None
            else {
                "changes": [] if done is None else list(done.changes),
                "schedule": None if done is None else done.schedule.to_dict(),
                "standing_pause_removed": removed,
            }
        )
        return 0
    if lifted is not None:
        out.result(f"Standing pause removed (was: {lifted.line()}).")
        if done is None and hours is not None:
            out.warn("no stored plan: --hours changed nothing")
    if done is None and lifted is None:
        out.result(NOTHING_STORED.format("continue"))
    elif done is not None and not done.changes and lifted is None:
        out.result("Not paused, hours as given: nothing changed.")
    for line in done.changes if done is not None else ():
        out.result(line[0].upper() + line[1:] + ".")
    return 0


def stored_plan_report(backend: Any, recorded: Any = None) -> dict[str, Any] | None:
    """list: the stored plan's document (ops.plan_ctl.report; `recorded`: the brokers and topics of our
    throttle record, for its `throttles`), None when nothing is stored."""
    from reassign_cli.backends.plan_stores import open_store
    from reassign_cli.ops.plan_ctl import report

    with open_store(backend) as store:
        seen = store.read()
    return None if seen is None else report(seen, datetime.now(UTC), recorded)


def standing_pause_report(backend: Any) -> dict[str, Any] | None:
    """list: the standing pause (ops/standing_pause.py) as Paused.to_dict, None when none stands."""
    from reassign_cli.ops import standing_pause

    found = standing_pause.read(backend)
    return None if found is None else found.to_dict()


def list_standing(out: Any, doc: dict[str, Any] | None) -> None:
    """list's line on the standing pause (stdout), nothing when none stands."""
    from reassign_cli.core.schedule import Paused

    if doc is not None:
        line = Paused.from_dict(doc).line()
        out.result(f"Standing pause: the autopilot and any plan stored now are {line} (continue removes it)")


def list_stored(out: Any, doc: dict[str, Any] | None) -> None:
    """list's text lines on the stored plan (stdout); nothing stored: one line on stderr, so that stdout
    stays Kafka's --list format for scripts that parse it."""
    from reassign_cli.render.stored_plan import stored_plan_lines

    if doc is None:
        out.info("No stored plan.")
        return
    for line in stored_plan_lines(doc):
        out.result(line)


def cancel_stored_command(
    opts: Options,
    out: Any,
    rollback_file: str | None,
    preserve_throttles: bool,
    timeout: float,
    report: Callable[..., int],
) -> int:
    """cancel with no plan file: the stored plan (ops.plan_ctl.cancel_stored); `report` is cancel's own
    report of what it cancelled and cleared."""
    from reassign_cli.backends.plan_stores import open_store
    from reassign_cli.cli.common import log_dir_mover
    from reassign_cli.ops.plan_ctl import cancel_stored, who

    user, host = who()
    with open_backend(opts, admin_too=True) as backend, open_store(backend) as store:
        mover = log_dir_mover(backend)
        try:
            done = cancel_stored(
                backend,
                store,
                (user, host, datetime.now(UTC)),
                rollback_file=rollback_file,
                preserve_throttles=preserve_throttles,
                timeout=timeout,
                log_dirs=mover,
            )
        finally:
            if mover is not None:
                mover.close()
    if done is None:
        if opts.json:
            out.result_json({"stored_plan": None, "cancelled": [], "rollback_file": None})
        else:
            out.result(
                NOTHING_STORED.format("cancel")
                + " (a plan file: --reassignment-json-file; every move in flight: --all)"
            )
        return 0
    if done.rollback_file is not None and not opts.json:
        out.result(f"Saved the targets of the reassignments cancelled to {done.rollback_file}")
    extra: dict[str, object] = {
        "stored_plan": done.plan.plan_sha256,
        "rollback_file": done.rollback_file,
        "deleted": done.deleted,
    }
    code = report(out, opts, done.outcome, bool(done.outcome.stopped), extra)
    if not opts.json:
        gone = "Deleted" if done.deleted else "Found already deleted"
        out.result(f"{gone} the stored plan (SHA-256 {done.plan.plan_sha256[:12]}).")
    return code
