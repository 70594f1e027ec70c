"""The commands' side of the stored plan (issue 25): `execute --max-moves-per-broker N --detach` (validate,
store, first step, exit), `execute --resume` with no plan file (steps until done in the foreground, holding
the lease) and `verify` with a stored plan (one step per run). The step itself is ops/step.py; where the
plan is stored (ZooKeeper or the record topic) is the caller's choice (cli/stored.py).
"""

from __future__ import annotations

import getpass
import socket
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from reassign_cli.backends.plan_store import me
from reassign_cli.core import hints
from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import TopicPartition, tp_str
from reassign_cli.errors import ExitCode, UsageError
from reassign_cli.ops import step as st
from reassign_cli.ops import stored_rates
from reassign_cli.ops.execute import prepare, rollback_json, sorted_entries
from reassign_cli.ops.request import ExecuteRequest

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import Backend
    from reassign_cli.ops.request import ExecuteReport
    from reassign_cli.ops.window_watch import SizeReader


def origin(now: float) -> sp.Origin:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return sp.Origin(socket.gethostname(), user, now)


def plan_to_store(
    backend: Backend,
    req: ExecuteRequest,
    order: pc.Order | None,
    sizer: SizeReader | None,
    now: float,
    schedule: dict[str, Any] | None = None,
) -> tuple[sp.StoredPlan, str]:
    """Validate the plan file as execute does (exit 3, nothing written, on any problem), and the plan to
    store: its entries in execute's order, the bytes each move copies (when the brokers tell the leaders'
    sizes), the pace. Also the rollback JSON (the current assignment)."""
    from reassign_cli.ops.window_watch import leader_sizes

    if req.max_moves is None and req.batch_size is None:
        raise UsageError("--detach needs --max-moves-per-broker N or --batch-size N")
    if req.batch_size is not None and places_dirs(req.data):  # batches tell no broker a log dir
        raise UsageError("--batch-size: a plan that names log dirs is stored with --max-moves-per-broker N")
    plan, state, _ = prepare(backend, req)
    entries = sorted_entries(plan)
    full = backend.read_state(sorted({e.topic for e in entries}), partition_state=True)
    moves = pc.make_moves(entries, full, leader_sizes(sizer, full, entries))
    sizes = [None if m.size is None else m.total_bytes for m in moves]
    stored = sp.new_plan(req.data, entries, pace_of(req, order), origin(now), sizes, schedule)
    return stored, rollback_json(entries, state)


def pace_of(req: ExecuteRequest, order: pc.Order | None) -> pc.Pace:
    """The pace stored with the plan: the cap and order, or the batch size (ops/stored_batches.py)."""
    batch = req.batch_size if req.max_moves is None else None
    return pc.Pace(req.max_moves, order, req.throttle, req.log_dir_throttle, batch_size=batch)


def pace_text(pace: pc.Pace) -> str:
    if pace.cap is not None:
        return f"at most {pace.cap} moves per broker"
    return f"batches of {pace.batch_size}"


def places_dirs(data: bytes) -> bool:
    """Whether the plan names a log dir (other than "any") for some replica."""
    from reassign_cli.core.model import parse_reassignment

    return parse_reassignment(data).has_log_dir_moves()


def carry_on_command(connection: Iterable[hints.ConnectionOption]) -> str:
    return hints.command_line(["verify"], connection)


def detach(
    env: st.StepEnv,
    req: ExecuteRequest,
    report: ExecuteReport,
    order: pc.Order | None,
    sizer: SizeReader | None,
    schedule: dict[str, Any] | None = None,
) -> int:
    """`execute --max-moves-per-broker N --detach`: validate, store, the first step, release the lease, exit
    0; the same plan's bytes already stored: one step of it (a resume)."""
    from reassign_cli.ops.execute import _save_rollback

    stored, rollback = plan_to_store(env.backend, req, order, sizer, env.now(), schedule)
    _save_rollback(rollback, req, report)
    _, created = env.store.create(stored, req.connection)
    report.info(
        f"Stored the plan in the cluster ({len(stored.entries)} partitions, {pace_text(stored.pace)})"
        + ("" if created else ": it was stored already (the same plan's bytes), carrying it on")
    )
    _paused_by_standing(env, req, report)
    result = st.step(env, me(), sp.watch())
    if req.throttle is not None and (result.started or result.resubmitted):
        report.result(f"The inter-broker throttle limit was set to {req.throttle} B/s")
    for line in lines(result):
        report.info(line)
    if result.finished:
        return exit_code(result)
    report.result(
        f"Detached: the rest starts from later steps. Carry it on (e.g. from cron, every minute) with: "
        f"{carry_on_command(req.connection)}"
    )
    return ExitCode.OK


def _paused_by_standing(env: st.StepEnv, req: ExecuteRequest, report: ExecuteReport) -> None:
    """The standing pause (ops/standing_pause.py) stands: the plan just stored is paused with it."""
    from reassign_cli.ops import standing_pause

    paused = standing_pause.pause_new_plan(env.backend, env.store)
    if paused is not None:
        report.info(
            f"Stored paused: the standing pause stands ({paused.line()}); no move starts until: "
            f"{hints.command_line(['continue'], req.connection)}"
        )


def started_text(tps: list[TopicPartition], what: str) -> str:
    shown = ",".join(tp_str(tp) for tp in tps[:20])
    more = f" and {len(tps) - 20} more" if len(tps) > 20 else ""
    return f"{what} {len(tps)} move{'' if len(tps) == 1 else 's'}: {shown}{more}"


def lines(result: st.StepResult) -> list[str]:
    """What a step says (stderr): what it started, why it holds, and where the plan stands."""
    out: list[str] = []
    if result.driver is not None:
        out.append(f"Another run drives the stored plan: {result.driver}; this run changed nothing")
    if result.lost_fence:
        out.append("Another writer changed the stored plan during this step; nothing was started")
    if result.started:
        out.append(started_text(result.started, "Started"))
    if result.resubmitted:
        out.append(started_text(result.resubmitted, "Submitted again (vanished without completing)"))
    if result.dirs_started:
        shown = ", ".join(f"{t}-{p} on broker {b}" for t, p, b in result.dirs_started[:20])
        out.append(f"Started {len(result.dirs_started)} log-dir move(s): {shown}")
    if result.cancelled:
        out.append(
            started_text(result.cancelled, "Cancelled (under min.insync.replicas)")
            + f"; their targets saved to {result.cancel_file}"
        )
    out += result.rate_lines
    if result.wait is not None:
        out.append(result.wait)
    if result.held_line is not None:
        out.append(result.held_line)
    if result.finished:
        out.append(
            f"The stored plan is done: {result.done} moves; throttles cleared, the stored plan deleted"
        )
    else:
        out.append(f"Stored plan: {result.progress_line()}")
        if result.log_dirs is not None:
            out.append(f"Stored plan: {result.log_dirs.line()}")
    return out


def exit_code(result: st.StepResult) -> int:
    if not result.finished:
        return ExitCode.BUSY
    return ExitCode.NOT_AS_PLANNED if result.not_as_planned else ExitCode.OK


def drive(
    env: st.StepEnv,
    say: Callable[[str], None],
    *,
    interval: float,
    ignore: Iterable[str] = (),
    sleep: Callable[[float], None] = time.sleep,
) -> st.StepResult:
    """`execute --resume` with no plan file: steps until done in the foreground, holding the lease (renewed
    by every step, at least every `interval` <= RENEW_SECONDS). Another run's fresh lease: say who drives,
    and return."""
    from reassign_cli.backends import plan_store as ps

    run, observer = me(), sp.watch()
    try:
        while True:
            result = st.step(env, run, observer, ignore=ignore, keep_lease=True)
            if not result.stored or result.finished or result.driver is not None:
                return result
            for line in lines(result):
                say(line)
            sleep(min(interval, sp.RENEW_SECONDS))
    finally:
        ps.release_lease(env.store, run.run)


def describe(result: st.StepResult) -> dict[str, Any]:
    """The step for --format json."""
    doc: dict[str, Any] = {
        "plan_sha256": result.plan_sha256,
        "moves": {
            "total": result.total,
            "moving": result.moving,
            "queued": result.queued,
            "done": result.done,
        },
        "bytes": {"total": result.bytes_total, "done": result.bytes_done},
        "rate": result.rate,
        "eta_seconds": result.eta,
        "started": [tp_str(tp) for tp in result.started],
        "resubmitted": [tp_str(tp) for tp in result.resubmitted],
        "cancelled": [tp_str(tp) for tp in result.cancelled],
        "cancel_file": result.cancel_file,
        "wait": result.wait,
        "driver": result.driver,
        "finished": result.finished,
        "throttle_changes": result.rate_changes,
    }
    if result.log_dirs is not None:
        doc["log_dir_moves"] = {
            **result.log_dirs.doc(),
            "started": [{"topic": t, "partition": p, "broker": b} for t, p, b in result.dirs_started],
        }
    if result.verdict is not None:
        from reassign_cli.core import health as hc

        dirs = result.log_dirs if result.in_dirs_phase else None  # the log-dir phase counts its moves
        doc["health"] = hc.to_json(
            result.verdict,
            first_seen=result.first_seen,
            now=time.time() if result.at is None else result.at,
            moving=result.moving if dirs is None else dirs.moving,
            queued=result.queued if dirs is None else dirs.queued,
            of_log_dirs=dirs is not None,
        )
        doc["health"]["counts"] = "partition_moves" if dirs is None else "log_dir_moves"
    return doc


class Keeper:
    """A foreground paced execute's stored plan (issue 25 item 2) and its lease: the window (ops/pacing._Window)
    steps it with ops/step.step (which marks, ends and renews); so do ZooKeeper mode's foreground batches
    (ops/stored_foreground.py, with the StepEnv kept as `env`): a batch is marked started through the fence
    BEFORE its trigger is created. A kill -9 of the execute leaves the plan stored
    with its lease unrenewed: a cron `verify` takes it over and carries it on. The execute's own end (done,
    or stopped with an error or Ctrl-C, as today) deletes it."""

    def __init__(
        self, store: Any, run: sp.Lease, clock: Callable[[], float] = time.monotonic, loop: Any = None
    ) -> None:
        self.store, self.run, self.clock = store, run, clock
        self.renewed = clock()
        self.dirs_ended_since: list[
            tuple[str, int, int]
        ] = []  # log-dir moves: noted, written with the next write
        self.loop = loop  # the run's rate loop (ops.rate_loop.Runner): its state kept with every write
        self.env: Any = None  # ZooKeeper mode's foreground batches: their StepEnv (ops/stored_foreground.py)

    def _update(self, fn: Callable[[sp.StoredPlan], sp.StoredPlan]) -> None:
        from reassign_cli.backends import plan_store as ps
        from reassign_cli.errors import OperationalError
        from reassign_cli.ops import stored_log_dirs as sld

        dirs_ended, self.dirs_ended_since = self.dirs_ended_since, []

        def change(p: sp.StoredPlan) -> sp.StoredPlan:
            p = sp.renew_lease(p, self.run.run)
            p = sld.mark_done(p, dirs_ended) if dirs_ended else p
            p = fn(p)
            return p if self.loop is None else stored_rates.kept_from(p, self.loop)

        _, written = ps.update(self.store, change)
        if written is None:
            raise OperationalError("the stored plan is gone (cancelled?); no more moves start")
        self.renewed = self.clock()

    def dirs_started(self, keys: Iterable[tuple[str, int, int]]) -> None:
        """Log-dir moves (ops/log_dirs._Run) recorded before they are started."""
        from reassign_cli.ops import stored_log_dirs as sld

        wanted = list(keys)
        self._update(lambda p: sld.mark_started(p, wanted))

    def dirs_ended(self, keys: Iterable[tuple[str, int, int]]) -> None:
        """Noted; written with the next start or renewal."""
        self.dirs_ended_since += list(keys)

    def renew(self) -> None:
        if self.clock() - self.renewed >= sp.RENEW_SECONDS - 1:
            self._update(lambda p: p)

    def keep_loop(self) -> None:
        """The rate loop's state kept now (its changes were just written): a takeover goes on from it."""
        self._update(lambda p: p)

    def forget(self) -> None:
        """Delete the stored plan, if this run still drives it (never another run's that took it over)."""
        seen = self.store.read()
        if seen is not None and seen.plan.lease is not None and seen.plan.lease.run == self.run.run:
            self.store.delete(seen)


def keep_paced(
    store: Any,
    req: ExecuteRequest,
    order: pc.Order | None,
    watch: Callable[..., Any],
    schedule: dict[str, Any] | None = None,
    sizes: list[int | None] | None = None,
) -> Keeper:
    """Store a foreground paced execute's plan before its first move (another plan's bytes stored: exit 4,
    nothing written; the same bytes: a resume of it) and take its lease (`watch`: ops/step.take_watching).
    `sizes`: the bytes each move copies (move_sizes), for the window's largest-first order and its bytes."""
    from reassign_cli.core.model import parse_reassignment

    entries = sorted_entries(parse_reassignment(req.data))
    from reassign_cli.ops.stored_health import with_ignore

    schedule = with_ignore(
        schedule, req.ignore_health
    )  # --ignore-health: the cron steps after a kill -9 honour it
    stored = sp.new_plan(req.data, entries, pace_of(req, order), origin(time.time()), sizes, schedule)
    loop = req.rate_loop
    if loop is not None:  # where a detached plan keeps it: a cron step taking over goes on with it
        stored = stored_rates.kept_from(stored, loop)
    store.create(stored, req.connection)
    run = me()
    taken, seen = watch(store, run)
    if not taken:
        from reassign_cli.errors import BusyError

        lease = None if seen is None else seen.plan.lease
        raise BusyError(f"Another run drives the stored plan of this file: {st.driver_text(lease)}")
    if loop is not None and req.resume and seen is not None:
        stored_rates.resume_from(seen.plan, loop)
    keeper = Keeper(store, run, loop=loop)
    if loop is not None:
        loop.on_change = keeper.keep_loop
    return keeper


def move_sizes(backend: Backend, sizer: SizeReader | None, data: bytes) -> list[int | None] | None:
    """The bytes each move of the plan `data` copies (the leaders' sizes through the brokers), in stored
    order; None without a size reader or when they cannot be read (an invalid plan is refused by execute's
    validation after this, not here)."""
    from reassign_cli.core.model import parse_reassignment
    from reassign_cli.errors import ReassignError
    from reassign_cli.ops.window_watch import leader_sizes

    if sizer is None:
        return None
    try:
        entries = sorted_entries(parse_reassignment(data))
        full = backend.read_state(sorted({e.topic for e in entries}), partition_state=True)
        moves = pc.make_moves(entries, full, leader_sizes(sizer, full, entries))
    except ReassignError:
        return None
    return [None if m.size is None else m.total_bytes for m in moves]
