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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reassign_cli.backends.protocol import (
    Backend,
    ConfigChange,
    ConfigFn,
    ConfigReader,
    ConfigUpdate,
    LogDirMoves,
    ReplicaDirs,
    ReplicaKey,
    SetupInProgress,
    SetupLost,
)
from reassign_cli.core import rates
from reassign_cli.core import run_plan as rp
from reassign_cli.core import throttle as th
from reassign_cli.core.hints import ConnectionOption, command_line
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
from reassign_cli.core.names import NAMES_SHOWN, count, listed, shorten
from reassign_cli.core.progress import (
    MoveStatus,
    PartitionProgress,
    ReplicaMoveProgress,
    Status,
    StuckWatch,
    anything_reassigning,
    classify,
    moves_ongoing,
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
    Interrupted,
    InvalidInputError,
    OperationalError,
)
from reassign_cli.ops.elect import ElectRequest, elect_leaders
from reassign_cli.ops.unthrottle import SETUP_WAIT_SECONDS, clear_throttles
from reassign_cli.ops.verify import replica_moves

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from reassign_cli.backends.protocol import ClearResult, PlannedWrite
    from reassign_cli.core.elect_rules import LeaderStatus
    from reassign_cli.core.progress import PartitionProgress, ReplicaMoveProgress


class ProgressSink(Protocol):
    """Where a wait shows its polls (render.progress.ProgressView)."""

    def update(self, results: Sequence[PartitionProgress], elapsed: float) -> None: ...


class ExecuteReport(Protocol):
    """What execute tells the operator; render.progress.ExecuteReport draws it (the CLI passes one in)."""

    def result(self, line: str) -> None: ...
    def info(self, line: str) -> None: ...
    def warn(self, line: str) -> None: ...
    def rollback(self, js: str) -> None: ...
    def rollback_saved(self, path: str) -> None: ...
    def dry_run(self, planned: Sequence[PlannedWrite]) -> None: ...
    def run_plan(self, lines: Sequence[str], doc: dict[str, Any]) -> None: ...
    def cleared(self, result: ClearResult | None) -> None: ...
    def log_dir_progress(self, moves: Sequence[ReplicaMoveProgress], elapsed: float) -> None: ...
    def election(self, initial: Sequence[LeaderStatus], final: Sequence[LeaderStatus]) -> None: ...
    def finished(self, results: Sequence[PartitionProgress] | None) -> None: ...
    def moved(self, partitions: int, seconds: float) -> None: ...
    def progress(self, total: int) -> AbstractContextManager[ProgressSink]: ...


BUSY_MESSAGE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this "
    "and create a new partition assignment in addition to the existing one (ZooKeeper mode: with "
    "--bootstrap-server as well). To change the throttle of the running reassignment, resubmit the same "
    "file with --throttle."
)
MAX_LISTED_VIOLATIONS = 50
THROTTLE_SETTLE_SECONDS = 1.0  # pause between the throttle writes and the trigger
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


class WaitInterrupted(Interrupted):
    """Ctrl-C while waiting: the reassignment keeps running in the cluster."""


@dataclass(slots=True)
class ExecuteRequest:
    file_name: str
    data: bytes
    throttle: int | None = None
    log_dir_throttle: int | None = None
    bootstrap_server: str | None = None
    dry_run: bool = False
    wait: bool = False
    poll_interval: float = 5.0
    timeout: float | None = None
    rollback_file: str | None = None
    batch_size: int | None = None
    log_dir_timeout: float = 10.0
    elect_leaders: bool = False  # after waiting: move leadership to the preferred replicas
    resume: bool = False  # skip what is done, wait for our own batch still moving (also with batch_size)
    stuck_after: float = 300.0  # while waiting: warn once a target broker is unregistered this long
    connection: tuple[ConnectionOption, ...] = ()  # the connection options given as flags (core.hints)
    max_moves: int | None = None  # --max-moves-per-broker: a window (ops.pacing), implies waiting
    additional: bool = False  # --additional: add to the reassignments running (KIP-455) instead of refusing
    disallow_rf_change: bool = False  # --disallow-replication-factor-change: refuse a plan that changes one
    ignore_health: frozenset[str] = (
        frozenset()
    )  # --ignore-health: stored with the plan (ops/stored_health.py)
    stored: Any = (
        None  # ops/stored.Keeper: ZooKeeper mode's batches marked in the stored plan (cli/stored.py)
    )
    rate_loop: Any = None  # --throttle auto / --max-throttle / --throttle-schedule: ops.rate_loop.Runner


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


def default_rollback_path(now: datetime | None = None) -> str:
    now = now or datetime.now()
    base = f"rollback-{now:%Y%m%d-%H%M%S}"
    path = Path(f"{base}.json")
    n = 1
    while path.exists():
        path = Path(f"{base}-{n}.json")
        n += 1
    return str(path)


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


def verify_command(req: ExecuteRequest) -> str:
    """The verify to paste: this plan, this run's connection options."""
    return command_line(["verify", "--reassignment-json-file", req.file_name], req.connection)


def cancel_command(req: ExecuteRequest) -> str:
    """cancel goes through the admin API: without brokers known to this run (ZooKeeper alone), the hint
    names the option to fill in."""
    brokers = () if req.bootstrap_server else (("--bootstrap-server", "HOST:PORT"),)
    return command_line(["cancel", "--reassignment-json-file", req.file_name], (*req.connection, *brokers))


def resume_command(
    file_name: str,
    connection: Sequence[ConnectionOption] = (),
    *,
    cap: int | None = None,
    batch_size: int | None = None,
    throttle: int | None = None,
    log_dir_throttle: int | None = None,
    loop: Sequence[str] = (),
) -> str:
    """`kafka-reassign execute --resume ...` to paste: the plan, its cap or batch size and its rates (a
    resumed run without them would start its moves unthrottled; `loop`: the options of a rate loop, in
    place of --throttle), and the connection flags given."""
    args = ["execute", "--resume", "--reassignment-json-file", file_name]
    for flag, value in (
        ("--max-moves-per-broker", cap),
        ("--batch-size", batch_size),
        ("--throttle", throttle),
        ("--replica-alter-log-dirs-throttle", log_dir_throttle),
    ):
        if value is not None:
            args += [flag, str(value)]
    return command_line([*args, *loop], connection)


def request_resume_command(req: ExecuteRequest) -> str:
    """resume_command for this run: its cap or batch size, its rates, its connection flags."""
    return resume_command(
        req.file_name,
        req.connection,
        cap=req.max_moves,
        batch_size=req.batch_size,
        throttle=req.throttle if req.rate_loop is None else None,
        log_dir_throttle=req.log_dir_throttle,
        loop=() if req.rate_loop is None else req.rate_loop.resume_args(),
    )


# ---------------------------------------------------------------------------------------------
# throttles
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ThrottleWrites:
    changes: list[ConfigChange]
    record_before: dict[str, Any]
    brokers: list[int]
    topics: list[str]
    record_after: dict[str, Any] = field(default_factory=dict)
    setup: bool = False  # this run holds the setup mark (backend.commit_throttles guard)
    offline: list[int] = dataclasses.field(default_factory=list)  # brokers not throttled: not registered


def throttle_configs(
    state: ClusterState,
    entries: Sequence[PlanEntry],
    rate: int | None,
    log_dir_rate: int | None,
    topics_too: bool = True,
    overrides: Mapping[int, Mapping[str, str]] | None = None,
) -> tuple[dict[int, dict[str, str]], dict[str, dict[str, str]]]:
    """The throttle keys to set: per broker (rates) and per topic (replica lists, only with a rate)."""
    targets = {(e.topic, e.partition): e.replicas for e in entries}
    broker_cfgs: dict[int, dict[str, str]] = {}
    topic_cfgs: dict[str, dict[str, str]] = {}
    if rate is not None:
        moves = th.move_map(targets, state)
        if topics_too:
            topic_cfgs = th.topic_throttles(moves)
        for b in th.throttled_brokers(moves):
            broker_cfgs.setdefault(b, {}).update(th.broker_rate_config(rate, None))
    if log_dir_rate is not None:
        for b in th.log_dir_move_brokers(entries):
            broker_cfgs.setdefault(b, {}).update(th.broker_rate_config(None, log_dir_rate))
    for b, cfg in broker_cfgs.items():  # the rates an adaptive loop holds (ops.rate_loop) over `rate`
        cfg.update({k: v for k, v in (overrides or {}).get(b, {}).items() if k in cfg})
    return broker_cfgs, topic_cfgs


def concerns(
    changes: Sequence[ConfigChange], state: ClusterState, batch: Sequence[PlanEntry], rate: int | None
) -> bool:
    """Whether a throttle write changed what throttles `batch` (so the brokers are given time to apply it
    before the batch starts): a broker's rate, or a topic list that lacked one of its replicas. A write that
    only listed the moves next in line ahead (a step or a window start) needs no wait."""
    if any(ch.entity == "brokers" for ch in changes):
        return True
    _, wanted = throttle_configs(state, batch, rate, None)
    for ch in changes:
        for key, value in wanted.get(ch.name, {}).items() if ch.entity == "topics" else ():
            before = ch.before.get(key, value) or ""
            if before != "*" and not set(value.split(",")) <= set(before.split(",")):
                return True
    return False


def apply_throttles(
    backend: Backend,
    state: ClusterState,
    entries: Sequence[PlanEntry],
    rate: int | None,
    log_dir_rate: int | None,
    *,
    topics_too: bool = True,
    begin_setup: bool = False,
    overrides: Mapping[int, Mapping[str, str]] | None = None,
) -> ThrottleWrites:
    """The prior values recorded and the topic lists (rate only) and broker rates written, in ONE fenced
    commit (backend.commit_throttles): the priors are the configs as that commit found them.

    topics_too=False: only the broker rates (changing the speed of a running move). begin_setup: also
    mark this execute as being set up until its reassignment is created (verify keeps off meanwhile).
    overrides: per broker, the rate keys an adaptive loop holds, written instead of `rate`.
    """
    broker_cfgs, topic_cfgs = throttle_configs(state, entries, rate, log_dir_rate, topics_too, overrides)
    offline: list[int] = []
    if not backend.offline_broker_configs:
        # A source replica on a broker that is down: its rate can only be set through it. It sends
        # nothing while down; Kafka's tool would fail here instead.
        offline = sorted(b for b in broker_cfgs if b not in set(state.broker_ids))
        broker_cfgs = {b: c for b, c in broker_cfgs.items() if b not in offline}
    if not broker_cfgs and not topic_cfgs:
        return ThrottleWrites([], backend.read_priors(), [], [], offline=offline)
    backend.ensure_writable()
    updates: list[ConfigUpdate] = [("topics", t, _setter(cfg)) for t, cfg in topic_cfgs.items()]
    updates += [("brokers", str(b), _setter(cfg)) for b, cfg in sorted(broker_cfgs.items())]
    before: list[dict[str, Any]] = []

    def plan(rec: dict[str, Any], read: ConfigReader) -> tuple[list[ConfigUpdate], dict[str, Any]]:
        # The record as this run first found it: a later attempt (after a conflict) may find the entries
        # of this run's own transactions that had landed, which the undo must still take for this run's.
        before.append(th.load_record(th.dump_record(rec)))
        items: list[tuple[th.Entity, str | int, dict[str, str], Any]]
        items = [("topics", t, read("topics", t), cfg.keys()) for t, cfg in topic_cfgs.items()]
        items += [("brokers", b, read("brokers", str(b)), cfg.keys()) for b, cfg in broker_cfgs.items()]
        return updates, th.record_priors_all(rec, items)

    done = backend.commit_throttles(plan, guard="begin" if begin_setup else "none")
    assert done is not None  # plan never declines
    changes, after = done
    had = _record_before(before, changes)
    return ThrottleWrites(changes, had, sorted(broker_cfgs), sorted(topic_cfgs), after, begin_setup, offline)


def _record_before(seen: list[dict[str, Any]], changes: Sequence[ConfigChange]) -> dict[str, Any]:
    """The record before this run: as its first attempt read it, plus what a later attempt found recorded
    for keys this run did not write (another run's, between two attempts). A key this run wrote that
    appeared meanwhile was recorded by this run's own transaction that landed before a conflict."""
    out = th.load_record(th.dump_record(seen[0]))
    ours = {(ch.entity, ch.name, k) for ch in changes for k in ch.after}
    for rec in seen[1:]:
        for entity, entries in rec.items():
            if entity not in ("brokers", "topics"):
                continue
            for name, priors in entries.items():
                for k, v in priors.items():
                    if (entity, name, k) not in ours:
                        out.setdefault(entity, {}).setdefault(name, {}).setdefault(k, v)
    return out


def _setter(updates: dict[str, str]) -> ConfigFn:
    return lambda cur: th.apply_config(cur, updates)


def undo_throttles(backend: Backend, writes: ThrottleWrites, *, lost: bool = False) -> None:
    """Take back exactly what this run changed, in one fenced commit that also ends its setup mark: a
    config key only where it still holds the value this run wrote, a record entry only where this run
    added it. What another run wrote since is left alone. lost (the setup mark went with an expired
    session, other runs may have acted): broker rates are shared, so while anything reassigns they stay
    (recorded; verify takes them off once nothing does)."""
    ours = {(ch.entity, ch.name): ch for ch in writes.changes}
    if lost and anything_reassigning(backend.read_state()):
        ours = {k: ch for k, ch in ours.items() if k[0] != "brokers"}

    def revert(ch: ConfigChange) -> ConfigFn:
        def fn(cur: dict[str, str]) -> dict[str, str]:
            out = dict(cur)
            for k, v in ch.before.items():
                if out.get(k) == ch.after.get(k):
                    if v is None:
                        out.pop(k, None)
                    else:
                        out[k] = v
            return out

        return fn

    def plan(rec: dict[str, Any], read: ConfigReader) -> tuple[list[ConfigUpdate], dict[str, Any]]:
        rec = th.load_record(th.dump_record(rec))
        for (entity, name), ch in ours.items():
            had = writes.record_before.get(entity, {}).get(name, {})
            added = writes.record_after.get(entity, {}).get(name, {})
            entry = rec.get(entity, {}).get(name)
            current = read(entity, name)
            for k in ch.after:
                # ours to take back: still the value we wrote, and recorded by this run
                if entry is not None and k in added and k not in had and current.get(k) == ch.after[k]:
                    entry.pop(k, None)
            if entry == {}:
                del rec[entity][name]
        updates = [(e, n, revert(ch)) for (e, n), ch in reversed(list(ours.items()))]
        return updates, rec

    backend.commit_throttles(plan, guard="end" if writes.setup else "none", record_last=True, create=False)


# ---------------------------------------------------------------------------------------------
# log-dir moves (AlterReplicaLogDirs: backend.LogDirMoves, kafka-python's admin client by default)
# ---------------------------------------------------------------------------------------------


def log_dir_moves(entries: Iterable[PlanEntry]) -> ReplicaDirs:
    return ReassignmentFile(list(entries)).log_dir_targets()


def raise_hard(failed: dict[ReplicaKey, str]) -> None:
    """Errors other than "replica not there yet" end the attempt (Kafka retries only those)."""
    hard = {k: e for k, e in failed.items() if e not in ("ReplicaNotAvailableError", "NoResponse")}
    if hard:
        k, e = sorted(hard.items())[0]
        raise OperationalError(f"log-dir move of replica {k[0]}-{k[1]} on broker {k[2]} failed: {e}")


def start_until_done(mover: LogDirMoves, moves: ReplicaDirs, timeout: float, report: ExecuteReport) -> None:
    """Retry until every move has started, or raise after the timeout (Kafka's message)."""
    pending = dict(moves)
    deadline = time.monotonic() + timeout
    while True:
        started, failed = mover.attempt(pending)
        for key in sorted(started):
            t, p, b = key
            report.result(
                f"Successfully started moving log directory to {pending[key]} for replica {t}-{p} "
                f"with broker {b} "
            )
            pending.pop(key)
        if not pending:
            return
        raise_hard(failed)
        if time.monotonic() >= deadline:
            names = shorten((f"{t}-{p} on broker {b}" for t, p, b in sorted(pending)), sep=", ")
            raise OperationalError(f"Timed out before log directory move(s) could be started for: {names}")
        time.sleep(0.5)


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
        report.moved(len(results), time.monotonic() - started)
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


def seconds_at(
    state: ClusterState, entries: Sequence[PlanEntry], rate: int, sizer: object | None
) -> float | None:
    """The least time the plan's copies take at `rate` per broker (planning.sizes: the busiest receiver's
    bytes / rate); None without sizes (no brokers to ask, or a moving partition whose size is unknown)."""
    from reassign_cli.planning import sizes

    ask = getattr(sizer, "replica_sizes", None)
    if ask is None:
        return None
    live = set(state.broker_ids)
    current: dict[str, dict[int, list[int]]] = {}
    proposed: dict[str, dict[int, list[int]]] = {}
    for e in entries:
        current.setdefault(e.topic, {})[e.partition] = list(state.topics[e.topic].replicas[e.partition])
        proposed.setdefault(e.topic, {})[e.partition] = list(e.replicas)
    keys = [(t, p, b) for t, parts in current.items() for p, reps in parts.items() for b in reps if b in live]
    try:
        found, _ = ask(keys)
    except OperationalError:
        return None
    known: dict[str, dict[int, int]] = {}
    for (t, p), size in sizes.largest(found).items():
        known.setdefault(t, {})[p] = size
    copied = sizes.copy_bytes(current, proposed, known)
    return None if copied.copies_unknown else copied.seconds_at(rate)


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
    clock = _Clock(req if req.timeout is not None else dataclasses.replace(req, timeout=BROKER_BACK_SECONDS))
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
    A dry run first lists the batches (stdout; `run_plan` in JSON)."""
    results: list[PartitionProgress] = []
    if req.dry_run:
        _list_batches(batches, report)
    for i, batch in enumerate(batches):
        if len(batches) > 1:
            report.info(f"Batch {i + 1}/{len(batches)}: {count(len(batch), 'partition')}")
        if i > 0:
            state = backend.read_state(sorted({e.topic for e in batch}))
            if (state.reassignment is not None or state.reassigning_elsewhere) and not req.dry_run:
                where = REASSIGN_PARTITIONS if state.reassignment is not None else "the cluster"
                raise BusyError(
                    f"Cannot start batch {i + 1}/{len(batches)}: another reassignment appeared in "
                    f"{where}; batches 1-{i} are complete",
                    hint=f"Once it has finished, continue with: {request_resume_command(req)}",
                )
        if req.stored is not None and not req.dry_run:  # marked (fenced) in the stored plan before its submit
            req.stored.started([(e.topic, e.partition) for e in batch])
        submit_batch(backend, state, batch, req, report, mover, first=(i == 0))
        if wait and not req.dry_run:
            try:
                results += wait_for(backend, {(e.topic, e.partition): e.replicas for e in batch}, req, report)
            except WaitInterrupted as e:
                raise _batches_left(e, batches, i, req) from None
            if req.stored is not None:
                req.stored.ended([(e.topic, e.partition) for e in batch])
    return results


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


def said_writes(writes: ThrottleWrites, report: ExecuteReport) -> None:
    """A throttle write's lines: brokers not throttled (not registered), lists widened to '*'."""
    if writes.offline:
        report.info(
            f"Not throttled: broker{'' if len(writes.offline) == 1 else 's'} "
            f"{shorten(writes.offline)}, not registered (a broker's rate is set through that broker)"
        )
    _warn_widened(writes.changes, report)


def _warn_widened(changes: Sequence[ConfigChange], report: ExecuteReport) -> None:
    """A topic whose throttled-replica list went as "*" (over a request's string: admin backend)."""
    widened = sorted({ch.name for ch in changes if ch.entity == "topics" and "*" in ch.after.values()})
    if widened:
        report.warn(
            listed(
                "Every replica of {} is throttled ('*'): the list of this plan's replicas is longer than the "
                f"{th.MAX_REQUEST_STRING} bytes a request carries",
                widened,
            )
        )


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


# ---------------------------------------------------------------------------------------------
# waiting
# ---------------------------------------------------------------------------------------------


class _Clock:
    """One wait's --timeout and --poll-interval."""

    def __init__(self, req: ExecuteRequest) -> None:
        self.start = time.monotonic()
        self.timeout = req.timeout
        self.interval = req.poll_interval

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def expired(self) -> bool:
        return self.timeout is not None and self.elapsed() >= self.timeout

    def pause(self) -> None:
        left = self.interval if self.timeout is None else self.timeout - self.elapsed()
        time.sleep(max(min(self.interval, left), 0.05))


def wait_for(
    backend: Backend, targets: dict[TopicPartition, list[int]], req: ExecuteRequest, report: ExecuteReport
) -> list[PartitionProgress]:
    """Poll until none of `targets` is in progress. --timeout: BusyError naming what still moves;
    Ctrl-C: WaitInterrupted (the reassignment keeps running)."""
    topics = sorted({t for t, _ in targets})
    clock = _Clock(req)
    stuck = StuckWatch(req.stuck_after)
    try:
        with report.progress(len(targets)) as bar:
            while True:
                state = backend.read_state(topics, partition_state=True)
                results = classify(targets, state)
                bar.update(results, clock.elapsed())
                if req.rate_loop is not None:
                    req.rate_loop.poll(backend, state, targets)
                if req.stored is not None:  # the stored plan's lease, renewed while this run drives
                    req.stored.renew()
                for p, broker, gone in stuck.update(results, state.broker_ids, time.monotonic()):
                    report.warn(stuck_line(p.name, broker, gone, req))
                moving = [r for r in results if r.status is Status.IN_PROGRESS]
                if not moving:
                    return results
                if clock.expired():
                    raise BusyError(
                        f"Timed out after {req.timeout:g}s; still in progress: {describe_moving(moving)}",
                        hint=f"The reassignment keeps running. Check it with: {verify_command(req)}",
                    )
                clock.pause()
    except KeyboardInterrupt:
        raise WaitInterrupted(
            "Interrupted while waiting; the reassignment keeps running in the cluster",
            hint=f"Check it (and remove the throttles once it is complete) with: {verify_command(req)}",
        ) from None


def wait_for_log_dirs(
    mover: LogDirMoves, dirs: ReplicaDirs, req: ExecuteRequest, report: ExecuteReport
) -> list[ReplicaMoveProgress]:
    """Poll DescribeLogDirs (verify's check) until no planned replica has a future copy left. --timeout:
    BusyError naming the replicas still copying (the throttles stay); Ctrl-C: WaitInterrupted."""
    clock = _Clock(req)
    try:
        while True:
            moves = replica_moves(dirs, mover)
            report.log_dir_progress(moves, clock.elapsed())
            if not moves_ongoing(moves):
                for m in moves:
                    if m.status is not MoveStatus.COMPLETE:
                        report.warn(m.line())
                return moves
            if clock.expired():
                raise BusyError(
                    f"Timed out after {req.timeout:g}s; replicas still moving between log dirs: "
                    f"{describe_copying(moves)}",
                    hint=f"The moves keep running. Check them with: {verify_command(req)}",
                )
            clock.pause()
    except KeyboardInterrupt:
        raise WaitInterrupted(
            "Interrupted while waiting; the replica moves between log dirs keep running",
            hint=f"Check them (and remove the throttles once they are done) with: {verify_command(req)}",
        ) from None


def describe_copying(moves: Sequence[ReplicaMoveProgress], limit: int = 10) -> str:
    """The replicas that still have a future copy: "t-0 on broker 1 (to /d1)"."""
    copying = [m for m in moves if m.future is not None]
    parts = [f"{m.topic}-{m.partition} on broker {m.broker} (to {m.future})" for m in copying[:limit]]
    if len(copying) > limit:
        parts.append(f"and {len(copying) - limit} more")
    return ", ".join(parts)


def stuck_line(name: str, broker: int, gone: float, req: ExecuteRequest) -> str:
    return (
        f"{name} is stuck: its target broker {broker} has not been registered for {gone:.0f} s. Start "
        f"broker {broker}, or cancel the move: {cancel_command(req)}"
    )


def describe_moving(moving: Sequence[PartitionProgress], limit: int = 10) -> str:
    parts = [f"{p.name} ({p.reason})" if p.reason else p.name for p in moving[:limit]]
    if len(moving) > limit:
        parts.append(f"and {len(moving) - limit} more")
    return ", ".join(parts)
