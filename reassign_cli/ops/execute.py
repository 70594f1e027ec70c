"""execute, wait and throttle removal: the only module that sequences the writes of a reassignment.

Order (DESIGN §4): parse → read → validate (exit 3, nothing written) → migration guard → busy check →
rollback file (local) → prior-values record → topic throttle lists → broker rates → log-dir moves (admin
API) → the reassignment (create only: /admin/reassign_partitions in ZooKeeper mode). If the create loses a
race, this run's throttle writes are undone. Waiting polls the cluster, and once nothing is reassigning
removes the throttles exactly as verify does (restoring recorded prior values), once the plan's replica
moves between log dirs have finished too (DescribeLogDirs, as verify checks them).

Every read and write goes through a `backend.Backend` (ZooKeeper today; tests use an in-memory fake).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reassign_cli.backends.protocol import (
    Backend,
    LogDirMoves,
    ReplicaDirs,
    SetupInProgress,
    SetupLost,
)
from reassign_cli.core import rates
from reassign_cli.core import run_plan as rp
from reassign_cli.core import throttle as th
from reassign_cli.core.model import (
    Broker,
    ClusterState,
    PlanEntry,
    ReassignmentFile,
    TopicPartition,
    format_reassignment_json,
    parse_reassignment,
    tp_str,
)
from reassign_cli.core.names import NAMES_SHOWN, count, shorten
from reassign_cli.core.progress import (
    PartitionProgress,
    ReplicaMoveProgress,
    Status,
    kafka_line,
    verify_exit,
)
from reassign_cli.core.validate import (
    Violation,
    replication_factor_changes,
    split_batches,
    validate_reassignment,
)
from reassign_cli.core.znodes import REASSIGN_PARTITIONS, encode_reassignment
from reassign_cli.errors import (
    BusyError,
    ExitCode,
    InvalidInputError,
    OperationalError,
)
from reassign_cli.ops.dir_moves import log_dir_moves, raise_hard, start_until_done, wait_for_log_dirs
from reassign_cli.ops.elect import ElectRequest, elect_leaders
from reassign_cli.ops.request import (
    Clock,
    ExecuteReport,
    ExecuteRequest,
    WaitInterrupted,
    default_rollback_path,
    request_resume_command,
    verify_command,
)
from reassign_cli.ops.throttle_writes import (
    THROTTLE_SETTLE_SECONDS,
    ThrottleWrites,
    apply_throttles,
    said_writes,
    seconds_at,
    undo_throttles,
)
from reassign_cli.ops.unthrottle import SETUP_WAIT_SECONDS, clear_throttles
from reassign_cli.ops.watch import wait_for

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import ClearResult
    from reassign_cli.core.progress import PartitionProgress, ReplicaMoveProgress


BUSY_MESSAGE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this "
    "and create a new partition assignment in addition to the existing one (ZooKeeper mode: with "
    "--bootstrap-server as well). To change the throttle of the running reassignment, resubmit the same "
    "file with --throttle."
)
MAX_LISTED_VIOLATIONS = 50
NO_BYTES_LIMIT = 2**62  # a backend without a request size limit: batches only by --batch-size


class BatchRunner(Protocol):
    """Submits the plan's batches (and waits): `_run_batches`, or ops.pacing.Pacer's window."""

    def __call__(
        self,
        backend: Backend,
        state: ClusterState,
        batches: list[list[PlanEntry]],
        req: ExecuteRequest,
        report: ExecuteReport,
        wait: bool,
        mover: LogDirMoves | None,
    ) -> list[PartitionProgress]: ...


class DirPacer(Protocol):
    """Paces the plan's moves between the log dirs of one broker (ops.log_dirs.LogDirPacer): `defer` holds
    them back from the batches, `run` runs them once the partitions have moved and waits for every
    planned log dir (as wait_for_log_dirs)."""

    def defer(self, entries: list[PlanEntry], state: ClusterState) -> list[PlanEntry]: ...
    def run(
        self,
        backend: Backend,
        mover: LogDirMoves,
        dirs: ReplicaDirs,
        req: ExecuteRequest,
        report: ExecuteReport,
    ) -> list[ReplicaMoveProgress]: ...
    def dry_run(self, report: ExecuteReport) -> None: ...


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def violations_error(violations: Sequence[Violation]) -> InvalidInputError:
    """First violation as the error line, the others as further lines (at most MAX_LISTED_VIOLATIONS)."""
    first, rest = violations[0], list(violations[1:])
    lines = [v.message for v in rest[:MAX_LISTED_VIOLATIONS]]
    if len(rest) > MAX_LISTED_VIOLATIONS:
        lines.append(f"... and {len(rest) - MAX_LISTED_VIOLATIONS} more problems")
    return InvalidInputError(first.message, hint="\n".join(lines) if lines else None)


def sorted_entries(plan: ReassignmentFile) -> list[PlanEntry]:
    return sorted(plan.entries, key=lambda e: (e.topic, e.partition))


def rollback_json(entries: Iterable[PlanEntry], state: ClusterState) -> str:
    """Kafka's rollback JSON: the current replicas of the file's partitions, sorted, log_dirs "any"."""
    current: dict[str, dict[int, list[int]]] = {}
    for e in entries:
        topic = state.topics[e.topic]
        current.setdefault(e.topic, {})[e.partition] = list(topic.replicas[e.partition])
    return format_reassignment_json(current, log_dirs=True)


def started_line(tps: Sequence[TopicPartition]) -> str:
    s = "s" if len(tps) > 1 else ""
    return f"Successfully started partition reassignment{s} for {','.join(tp_str(tp) for tp in sorted(tps))}"


def busy_partitions(state: ClusterState, targets: dict[TopicPartition, list[int]]) -> bool:
    """A reassignment is running that blocks ours: the trigger znode exists, one of our partitions
    already has adding/removing replicas (an API-started move), or the read saw one elsewhere (the admin
    API lists them all: Kafka's tool refuses while any is listed)."""
    if state.reassignment is not None or state.reassigning_elsewhere:
        return True
    for t, p in targets:
        topic = state.topics.get(t)
        if topic is not None and topic.is_reassigning(p):
            return True
    return False


def same_reassignment(state: ClusterState, targets: dict[TopicPartition, list[int]]) -> bool:
    """The running reassignment is this file's: every entry still in the znode is in the file with the same
    target (the controller removes entries as they complete), and every reassigning partition of the file's
    topics is moving to the file's target."""
    znode = state.reassignment or {}
    if state.reassigning_elsewhere or any(targets.get(tp) != reps for tp, reps in znode.items()):
        return False
    for t, p in targets:
        topic = state.topics.get(t)
        if topic is not None and topic.is_reassigning(p) and topic.target(p) != targets[(t, p)]:
            return False
    return bool(znode) or any(
        (topic := state.topics.get(t)) is not None and topic.is_reassigning(p) for t, p in targets
    )


# ---------------------------------------------------------------------------------------------
# execute
# ---------------------------------------------------------------------------------------------


def prepare(
    backend: Backend, req: ExecuteRequest
) -> tuple[ReassignmentFile, ClusterState, list[list[PlanEntry]]]:
    """Parse, read and validate; nothing is written. Raises InvalidInputError (exit 3) on any problem."""
    th.broker_rate_config(req.throttle, req.log_dir_throttle)  # out-of-range rates: usage error, first
    plan = parse_reassignment(req.data)
    topics = sorted({e.topic for e in plan.entries})
    state = backend.read_state(topics)
    checked = state
    throttling = req.throttle is not None or req.log_dir_throttle is not None
    if throttling and busy_partitions(state, plan.targets()) and same_reassignment(state, plan.targets()):
        # Only the rates of the running reassignment will change: a target broker that is down right
        # now (its replica waits for it) must not block that.
        known = set(state.broker_ids)
        extra = sorted({b for e in plan.entries for b in e.replicas if b >= 0 and b not in known})
        checked = dataclasses.replace(
            state, brokers=sorted([*state.brokers, *(Broker(b) for b in extra)], key=lambda x: x.id)
        )
    violations = validate_reassignment(plan, checked, bootstrap_server=req.bootstrap_server is not None)
    if violations:
        raise violations_error(violations)
    if req.disallow_rf_change:
        refuse_rf_changes(plan, state)
    limit = backend.reassignment_bytes_limit()
    batches = split_batches(sorted_entries(plan), req.batch_size, NO_BYTES_LIMIT if limit is None else limit)
    if len(batches) > 1 and req.batch_size is None and req.max_moves is None and limit is not None:
        size = len(encode_reassignment(sorted_entries(plan)))
        raise InvalidInputError(
            f"The reassignment of {len(plan.entries)} partitions needs {size} bytes in {REASSIGN_PARTITIONS}, "
            f"more than one znode holds ({limit} bytes)",
            hint=f"Use --batch-size N to submit it in batches (each must finish before the next); "
            f"{len(batches)} batches would fit.",
        )
    return plan, state, batches


def refuse_rf_changes(plan: ReassignmentFile, state: ClusterState) -> None:
    """--disallow-replication-factor-change: the whole plan refused, nothing written, when a partition's
    replica count would change (Kafka's controller refuses those partitions one by one, after the tool set
    the throttles and started the others)."""
    lines = replication_factor_changes(plan.entries, state)
    if lines:
        n = len(lines)
        raise InvalidInputError(
            f"Error reassigning partition(s): the plan changes the replication factor of {n} "
            f"partition{'' if n == 1 else 's'} (--disallow-replication-factor-change; nothing was written)",
            hint="\n".join(lines),
        )


def execute(
    backend: Backend,
    req: ExecuteRequest,
    report: ExecuteReport,
    *,
    log_dirs: LogDirMoves | None = None,
    pacer: BatchRunner | None = None,
    dir_pacer: DirPacer | None = None,
) -> int:
    """Run the whole execute command; returns the exit code (raises ReassignError on failures).

    log_dirs: where log-dir moves go; by default kafka-python's admin client at req.bootstrap_server.
    pacer: runs the batches instead of `_run_batches` (--max-moves-per-broker: ops.pacing.Pacer).
    dir_pacer: paces the moves between log dirs of one broker (--max-moves-per-disk: ops.log_dirs)."""
    mover, own = log_dirs, False
    if mover is None and req.bootstrap_server:
        from reassign_cli.backends.admin.log_dirs import LogDirMover

        mover, own = LogDirMover(req.bootstrap_server), True
    try:
        code, results = _execute(backend, req, report, mover, pacer or _run_batches, dir_pacer)
    finally:
        if own and mover is not None:
            mover.close()
    report.finished(results)
    return code


def _execute(
    backend: Backend,
    req: ExecuteRequest,
    report: ExecuteReport,
    log_dirs: LogDirMoves | None,
    run_batches: BatchRunner,
    dir_pacer: DirPacer | None = None,
) -> tuple[int, list[PartitionProgress] | None]:
    plan, state, batches = prepare(backend, req)
    entries = sorted_entries(plan)
    targets = {(e.topic, e.partition): e.replicas for e in entries}
    ending = _Ending(targets, log_dir_moves(entries), log_dirs, dir_pacer)
    if dir_pacer is not None and log_dirs is not None:  # intra-broker moves: held back, run at the end
        entries, batches = dir_pacer.defer(entries, state), [dir_pacer.defer(b, state) for b in batches]
    wait = req.wait or req.batch_size is not None or req.max_moves is not None or dir_pacer is not None
    if req.dry_run:
        backend = backend.as_dry_run()  # the same reads; every write recorded, none made
    backend.ensure_writable()  # a migrating cluster: nothing goes through ZooKeeper any more

    resuming = req.resume or req.batch_size is not None or req.max_moves is not None
    throttling = req.throttle is not None or req.log_dir_throttle is not None
    # A running reassignment: refuse, unless it is this very file (then: the speed changes, or a resumed
    # run waits for it).
    if busy_partitions(state, targets) and not req.additional:
        if not same_reassignment(state, targets):
            raise BusyError(BUSY_MESSAGE)
        if not resuming:
            if throttling:
                warn_low_rates(state, entries, req, report, log_dirs)
                return change_running_throttle(backend, state, entries, req, report), None
            raise BusyError(BUSY_MESSAGE)
    warn_low_rates(state, entries, req, report, log_dirs)  # not for a run refused as busy
    if ending.dirs and log_dirs is not None and not req.dry_run:
        # the brokers answer (our credentials too) before any write
        log_dirs.describe(dict(sorted(ending.dirs.items())))
    earlier: list[PartitionProgress] = []
    if resuming:
        # What the run skips and waits for, the dry run as the real run (core.run_plan).
        run = rp.split_run(entries, state, resuming=True)
        entries, earlier = _resume(backend, state, run, req, report)
        limit = backend.reassignment_bytes_limit()
        batches = rp.batched(run, req.batch_size, NO_BYTES_LIMIT if limit is None else limit).batches
        if not entries:
            if req.dry_run:
                report.run_plan(["Dry run: nothing would be started"], {"batches": []})
                report.dry_run(backend.planned_writes())
                return ExitCode.OK, None
            if ending.dir_pacer is not None:  # only log-dir moves left: the run kept before they start
                getattr(run_batches, "keep_run", lambda *_: None)(req, report)
            return _finish(backend, ending, earlier, req, report)
        state = backend.read_state(sorted({e.topic for e in entries}))
    _save_rollback(rollback_json(entries, state), req, report)
    if throttling and not wait:
        report.result(
            "Warning: You must run verify periodically, until the reassignment completes, to ensure the "
            "throttle is removed."
        )
    started = time.monotonic()
    results = run_batches(backend, state, batches, req, report, wait, log_dirs)
    return _after_run(backend, ending, earlier, results, req, report, wait, started)


def _after_run(
    backend: Backend,
    ending: _Ending,
    earlier: list[PartitionProgress],
    results: list[PartitionProgress],
    req: ExecuteRequest,
    report: ExecuteReport,
    wait: bool,
    started: float,
) -> tuple[int, list[PartitionProgress] | None]:
    """The run's closing line, the dry run's writes, or the end of a waited run (throttles off)."""
    if wait and results and not req.dry_run:
        # the partitions moved as planned (one cancelled or replaced meanwhile is named by _finish)
        report.moved(sum(r.status is Status.COMPLETE for r in results), time.monotonic() - started)
    if req.dry_run:
        if ending.dir_pacer is not None:
            ending.dir_pacer.dry_run(report)
        report.dry_run(backend.planned_writes())
        return ExitCode.OK, None
    if not wait:
        return ExitCode.OK, None
    return _finish(backend, ending, earlier + results, req, report)


def warn_low_rates(
    state: ClusterState,
    entries: Sequence[PlanEntry],
    req: ExecuteRequest,
    report: ExecuteReport,
    sizer: object | None,
) -> None:
    """A rate below 1 MB/s is most likely a unit left out (`--throttle 50`): warned, unless the plan's
    copies are known (sizes from the brokers) to take less than rates.SHORT_SECONDS at it."""
    for option, rate in (
        ("--throttle", req.throttle),
        ("--replica-alter-log-dirs-throttle", req.log_dir_throttle),
    ):
        if rate is None or rate >= rates.LOW_RATE:
            continue
        seconds = seconds_at(state, entries, rate, sizer) if option == "--throttle" and rate > 0 else None
        line = rates.low_rate_warning(option, rate, seconds)
        if line is not None:
            report.warn(line)


def _resume(
    backend: Backend,
    state: ClusterState,
    split: rp.RunPlan,
    req: ExecuteRequest,
    report: ExecuteReport,
) -> tuple[list[PlanEntry], list[PartitionProgress]]:
    """A plan run again: skip what is done, wait for this plan's batch still moving (at the new rates, if
    given); returns what is left to submit and the results of the waited-for batch. A dry run says what
    it would skip and wait for (stdout, and `run_plan` in JSON), and waits for nothing."""
    if req.dry_run:
        report.run_plan(
            _skip_lines(split), {"skipped": _tps(split.skipped), "waits_for": _tps(split.running)}
        )
        return split.todo, []
    if split.skipped:
        n = len(split.skipped)
        where = "partition already at its target" if n == 1 else "partitions already at their target"
        report.info(f"Skipping {n} {where} ({_names(split.skipped)})")
    results: list[PartitionProgress] = []
    if split.running:
        report.info(f"Waiting for the batch already running ({_names(split.running)})")
        if req.throttle is not None or req.log_dir_throttle is not None:
            change_running_throttle(backend, state, split.running, req, report)
        results = wait_for(backend, {(e.topic, e.partition): e.replicas for e in split.running}, req, report)
        if split.todo and backend.read_state(sorted({e.topic for e in split.todo})).reassignment is not None:
            raise BusyError(BUSY_MESSAGE)
    return split.todo, results


def _tps(entries: Iterable[PlanEntry]) -> list[str]:
    return [f"{e.topic}-{e.partition}" for e in entries]


def _skip_lines(split: rp.RunPlan) -> list[str]:
    lines = []
    if split.skipped:
        n = len(split.skipped)
        where = "partition already at its target" if n == 1 else "partitions already at their target"
        lines.append(f"Dry run: {n} {where}, not submitted: {','.join(_tps(split.skipped))}")
    if split.running:
        n = len(split.running)
        moves = "move" if n == 1 else "moves"
        lines.append(
            f"Dry run: {n} {moves} of this plan already running, waited for first: {','.join(_tps(split.running))}"
        )
    return lines


def would_start_line(tps: Sequence[TopicPartition]) -> str:
    """A dry run's counterpart of Kafka's `Successfully started partition reassignment(s) for ...`."""
    return started_line(tps).replace("Successfully started", "Would start", 1)


def _names(entries: Sequence[PlanEntry], limit: int = NAMES_SHOWN) -> str:
    return shorten((f"{e.topic}-{e.partition}" for e in entries), limit)


@dataclass(frozen=True, slots=True)
class _Ending:
    """What the end of a waiting execute looks at: the whole plan's partitions and replica log-dir moves,
    and where those moves are described (None: not checked, as verify without the admin API)."""

    targets: dict[TopicPartition, list[int]]
    dirs: ReplicaDirs
    log_dirs: LogDirMoves | None
    dir_pacer: DirPacer | None = None  # paces the intra-broker moves held back from the batches


def _finish(
    backend: Backend,
    ending: _Ending,
    results: list[PartitionProgress],
    req: ExecuteRequest,
    report: ExecuteReport,
) -> tuple[int, list[PartitionProgress] | None]:
    """Every partition finished: wait for the replica moves between log dirs (their throttle stays while
    they copy), take the throttles off as verify does; elect leaders if asked."""
    moves: list[ReplicaMoveProgress] = []
    if ending.dirs and ending.log_dirs is not None and ending.dir_pacer is not None:
        moves = ending.dir_pacer.run(backend, ending.log_dirs, ending.dirs, req, report)
    elif ending.dirs and ending.log_dirs is not None:
        moves = wait_for_log_dirs(ending.log_dirs, ending.dirs, req, report)
    targets = ending.targets
    for r in results:  # ended elsewhere: cancelled or replaced while this run waited (verify's line)
        if r.status is Status.NOT_AS_PLANNED:
            report.result(kafka_line(r))
    cleared = clear_until_back(backend, targets, req, report)
    report.cleared(cleared)
    code = verify_exit(results, moves)
    if cleared is not None and cleared.pending and code == ExitCode.OK:
        b = cleared.pending
        report.warn(
            f"Exit 4: the throttles this tool set on broker{'' if len(b) == 1 else 's'} {shorten(b)} are "
            f"still set and recorded; {verify_command(req)} takes them off once "
            f"{'it is' if len(b) == 1 else 'they are'} registered again"
        )
        code = ExitCode.BUSY
    if req.elect_leaders and code == ExitCode.OK:
        election = elect_leaders(backend, ElectRequest(partitions=sorted(targets)))
        report.election(election.initial, election.final)
        code = election.exit_code
    return code, results


BROKER_BACK_SECONDS = 120.0  # without --timeout: how long a clear waits for a down broker to come back


def clear_until_back(
    backend: Backend, targets: dict[TopicPartition, list[int]], req: ExecuteRequest, report: ExecuteReport
) -> ClearResult | None:
    """clear_throttles; while throttles of ours stay on brokers that are down (the admin API changes a
    broker's config through that broker), wait for them to register again (within --timeout, else
    BROKER_BACK_SECONDS) and clear again. What is still pending at the end stays recorded."""
    cleared = clear_throttles(backend, targets)
    if cleared is None or not cleared.pending:
        return cleared
    b = cleared.pending
    report.info(
        f"Waiting for broker{'' if len(b) == 1 else 's'} {shorten(b)} to register again, to take off the "
        "throttles this tool set on "
        f"{'it' if len(b) == 1 else 'them'} (a broker's config is changed through that broker)"
    )
    clock = Clock(req if req.timeout is not None else dataclasses.replace(req, timeout=BROKER_BACK_SECONDS))
    changes = list(cleared.changes)
    try:
        while cleared is not None and cleared.pending and not clock.expired():
            clock.pause()
            if not set(cleared.pending) & set(backend.read_state([]).broker_ids):
                continue
            cleared = clear_throttles(backend, targets)
            if cleared is not None:
                changes += cleared.changes
                cleared.changes = changes
    except KeyboardInterrupt:
        raise WaitInterrupted(
            "Interrupted while waiting for a broker to come back; its throttles stay recorded",
            hint=f"Take them off once it is back with: {verify_command(req)}",
        ) from None
    return cleared


def _save_rollback(rb: str, req: ExecuteRequest, report: ExecuteReport) -> None:
    """Printed and saved before anything is written."""
    report.rollback(rb)
    if req.dry_run:
        where = req.rollback_file or "rollback-<time>.json"
        report.info(f"Dry run: the rollback JSON would be saved to {where}")
        return
    path = req.rollback_file or default_rollback_path()
    try:
        Path(path).write_text(rb + "\n")
    except OSError as e:
        raise OperationalError(f"cannot write the rollback file {path}: {e.strerror}") from None
    report.rollback_saved(path)


def _run_batches(
    backend: Backend,
    state: ClusterState,
    batches: list[list[PlanEntry]],
    req: ExecuteRequest,
    report: ExecuteReport,
    wait: bool,
    mover: LogDirMoves | None,
) -> list[PartitionProgress]:
    """Submit each batch (and wait for it when waiting); the next batch only once the previous is done.
    A dry run first lists the batches (stdout; `run_plan` in JSON). A run whose plan is stored runs its
    batches as steps of it instead (ops/stored_foreground.py)."""
    results: list[PartitionProgress] = []
    if req.dry_run:
        _list_batches(batches, report)
    for i, batch in enumerate(batches):
        if len(batches) > 1:
            report.info(f"Batch {i + 1}/{len(batches)}: {count(len(batch), 'partition')}")
        if i > 0:
            state = backend.read_state(sorted({e.topic for e in batch}))
            if not req.dry_run:
                check_free(state, i, len(batches), req)
        submit_batch(backend, state, batch, req, report, mover, first=(i == 0))
        if wait and not req.dry_run:
            try:
                results += wait_for(backend, {(e.topic, e.partition): e.replicas for e in batch}, req, report)
            except WaitInterrupted as e:
                raise _batches_left(e, batches, i, req) from None
    return results


def check_free(state: ClusterState, i: int, n: int, req: ExecuteRequest) -> None:
    """Before batch i (0-based) of n: BusyError when another reassignment appeared meanwhile."""
    if state.reassignment is not None or state.reassigning_elsewhere:
        where = REASSIGN_PARTITIONS if state.reassignment is not None else "the cluster"
        raise BusyError(
            f"Cannot start batch {i + 1}/{n}: another reassignment appeared in {where}; batches 1-{i} are complete",
            hint=f"Once it has finished, continue with: {request_resume_command(req)}",
        )


def _batches_left(
    e: WaitInterrupted, batches: list[list[PlanEntry]], i: int, req: ExecuteRequest
) -> WaitInterrupted:
    """Ctrl-C while batch i runs: what keeps running, what was never started, and how to go on."""
    if i == len(batches) - 1:
        return e
    rest = sum(len(b) for b in batches[i + 1 :])
    which = f"batch {i + 2}" if i + 2 == len(batches) else f"batches {i + 2}-{len(batches)}"
    return WaitInterrupted(
        f"Interrupted while waiting for batch {i + 1}/{len(batches)}; it keeps running in the cluster, "
        f"{which} ({rest} partition{'' if rest == 1 else 's'}) not started",
        hint=f"Continue with: {request_resume_command(req)} (or check with: {verify_command(req)})",
    )


def _list_batches(batches: list[list[PlanEntry]], report: ExecuteReport) -> None:
    n = len(batches)
    lines = [f"Dry run: {n} batches, each started once the previous one is complete:"] if n > 1 else []
    for i, batch in enumerate(batches):
        line = would_start_line([(e.topic, e.partition) for e in batch])
        lines.append(f"Batch {i + 1}/{n}: {line}" if n > 1 else line)
    report.run_plan(lines, {"batches": [_tps(b) for b in batches]})


def submit_batch(
    backend: Backend,
    state: ClusterState,
    batch: list[PlanEntry],
    req: ExecuteRequest,
    report: ExecuteReport,
    mover: LogDirMoves | None,
    *,
    first: bool,
) -> None:
    """Throttles (prior values recorded first), log-dir moves asked for, then the reassignment created;
    if the create loses a race, this batch's throttle writes are undone."""
    writes = _batch_throttles(backend, state, batch, req)
    said_writes(writes, report)
    if first and req.throttle is not None and not req.dry_run:
        report.result(f"The inter-broker throttle limit was set to {req.throttle} B/s")
    if first and req.log_dir_throttle is not None and not req.dry_run:
        report.result(f"The replica-alter-dir throttle limit was set to {req.log_dir_throttle} B/s")

    if writes.changes and not req.dry_run:
        # Brokers apply config changes asynchronously, from their watch on /config/changes. Give them a
        # moment, so the new followers are throttled from their first fetch, not after the first MBs.
        time.sleep(THROTTLE_SETTLE_SECONDS)

    moves = log_dir_moves(batch)
    if moves and mover is not None and not req.dry_run:
        # Before the trigger, as Kafka: a replica that does not exist yet answers ReplicaNotAvailable, and
        # the broker remembers the preferred dir for when it creates it.
        try:
            raise_hard(mover.attempt(moves)[1])
        except OperationalError:
            undo_throttles(backend, writes)
            raise

    try:
        created = (
            backend.create_reassignment(batch, additional=True)
            if req.additional
            else backend.create_reassignment(batch)
        )
    except SetupLost:
        writes.setup = False  # the mark went with the expired session: not ours to end
        undo_throttles(backend, writes, lost=True)
        raise
    if not created:
        undo_throttles(backend, writes)
        raise BusyError(
            BUSY_MESSAGE + " (another reassignment was created while this one was being set up; "
            "this run's throttle changes were undone)"
        )
    if not req.dry_run:
        report.result(started_line([(e.topic, e.partition) for e in batch]))
    if moves and mover is not None and not req.dry_run:
        start_until_done(mover, moves, req.log_dir_timeout, report)


def _batch_throttles(
    backend: Backend, state: ClusterState, batch: list[PlanEntry], req: ExecuteRequest
) -> ThrottleWrites:
    """The batch's throttles. --additional beside a running reassignment takes no setup mark: while anything
    reassigns, verify keeps the throttles anyway (and its moves are added to the running ones)."""
    if req.additional and busy_partitions(state, {(e.topic, e.partition): e.replicas for e in batch}):
        return apply_throttles(
            backend, state, batch, req.throttle, req.log_dir_throttle, overrides=loop_overrides(req)
        )
    return _throttles_when_free(backend, state, batch, req)


def _throttles_when_free(
    backend: Backend, state: ClusterState, batch: list[PlanEntry], req: ExecuteRequest
) -> ThrottleWrites:
    """apply_throttles with this run's setup mark. Another execute in its setup (or killed in it: its mark
    goes with its ZooKeeper session) is waited for, then the cluster is checked for its reassignment."""
    deadline = time.monotonic() + SETUP_WAIT_SECONDS
    while True:
        try:
            return apply_throttles(
                backend,
                state,
                batch,
                req.throttle,
                req.log_dir_throttle,
                begin_setup=True,
                overrides=loop_overrides(req),
            )
        except SetupInProgress:
            if time.monotonic() >= deadline:
                raise
        time.sleep(0.5)
        state = backend.read_state(sorted({e.topic for e in batch}))
        if busy_partitions(state, {(e.topic, e.partition): e.replicas for e in batch}):
            raise BusyError(BUSY_MESSAGE)


def loop_overrides(req: ExecuteRequest) -> dict[int, dict[str, str]] | None:
    """The rates the run's adaptive loop holds per broker (ops.rate_loop), None without a loop."""
    return None if req.rate_loop is None else req.rate_loop.overrides()


def change_running_throttle(
    backend: Backend,
    state: ClusterState,
    entries: list[PlanEntry],
    req: ExecuteRequest,
    report: ExecuteReport,
) -> int:
    """The same reassignment is running: the rates change, and the topic lists are written where they
    are not already (a move started without a throttle: rates alone throttle nothing; Kafka writes both).
    Prior values stay as recorded."""
    report.info("This reassignment is already running: only its throttle rates are changed.")
    apply_throttles(
        backend, state, entries, req.throttle, req.log_dir_throttle, overrides=loop_overrides(req)
    )
    if req.dry_run:
        report.dry_run(backend.planned_writes())
        return ExitCode.OK
    if req.throttle is not None:
        report.result(f"The inter-broker throttle limit was set to {req.throttle} B/s")
    if req.log_dir_throttle is not None:
        report.result(f"The replica-alter-dir throttle limit was set to {req.log_dir_throttle} B/s")
    return ExitCode.OK
