"""The `generate` pipeline: load the state, select brokers, plan, write both documents, count the summary.

The CLI command (cli/generate.py) only parses options, calls `run` and renders what it returns. The
documents are streamed: Kafka's strategy plans and formats a chunk of topics at a time, so neither the
proposed assignment nor either JSON document is ever held whole: they add about one chunk of text to
the memory of the state itself. Files are written under a temporary name and renamed once complete, so
an error or Ctrl-C never leaves a partial current.json or proposed.json.

Strategies are pluggable: a `Strategy` yields the proposal in topic-name order, in chunks of any size
(Kafka's, topic by topic, in bounded chunks; a whole-cluster optimiser may yield everything at once),
and may add a block of its own statistics to the summary.
"""

from __future__ import annotations

import contextlib
import dataclasses
import mmap
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

from reassign_cli.backends.zookeeper.session import ZkOptions
from reassign_cli.core import rates
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.model import Assignment, Broker, ClusterState, format_partition_entries
from reassign_cli.core.names import shorten
from reassign_cli.errors import InvalidInputError, OperationalError, ReassignError, UsageError
from reassign_cli.planning import plan, sizes
from reassign_cli.planning.balanced import bytes as balance_bytes
from reassign_cli.planning.balanced import disks as balance_disks
from reassign_cli.planning.balanced import planner as balance

if TYPE_CHECKING:  # pragma: no cover - imported lazily at run time (pyspark)
    from reassign_cli.spark.engine import Engine
    from reassign_cli.spark.split import Selection, SplitScan

CURRENT_FILE = "current.json"
PROPOSED_FILE = "proposed.json"
DOC_HEAD = '{"version":1,"partitions":['
DOC_TAIL = "]}"
# Kafka partitions planned and formatted per step: big enough for numpy to pay off, small enough that a
# chunk's objects and text (~8 MB) stay far below the state's own size.
CHUNK_PARTITIONS = 100_000


# ---------------------------------------------------------------------------------------------
# Inputs and outputs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """Where the cluster state comes from: a snapshot file, else ZooKeeper, else the admin API."""

    snapshot_file: str | None = None
    zookeeper: ZkOptions | None = None
    admin: AdminOptions | None = None
    ignored_env: str | None = None  # with a snapshot: a connection setting from the environment, not used
    shared_log_dirs: bool = False  # live: count a filesystem holding several log dirs once (capacity_of)


@dataclass(frozen=True, slots=True)
class Request:
    topics: list[str]
    broker_list: list[int] | None = None  # None: every registered broker
    rack_aware: bool = True
    seed: int | None = None  # None: a fresh random seed, reported through Reporter.seed_chosen
    output_dir: str | None = None  # None: both documents on stdout, framed as in `frame`
    # On stdout: the text before, between and after the two documents, given the seed and the
    # strategy's own statistics (None for Kafka's); called again for "after" once those are known.
    frame: Callable[[int, Mapping[str, Any] | None], tuple[str, str, str]] = lambda seed, extra: (
        "",
        "\n",
        "\n",
    )
    engine: str = "local"  # or "spark"
    spark_master: str = "local[*]"
    verbose: bool = False
    stats: bool = True  # count the summary statistics (skipped with -q)
    # Given the seed and the cluster state; None: Kafka's (KafkaStrategy). See STRATEGIES.
    strategy: Callable[[int, ClusterState], Strategy] | None = None
    replication_factor: int | None = None  # a new RF for every selected topic; None: each topic's own
    # From ZooKeeper, read every topic (the balanced strategy counts them all), not only the selected.
    whole_cluster: bool = False
    throttle: int | None = None  # bytes/s: with known partition sizes, how long the copies take at it
    # Sees each chunk of the plan as it is written: (current, proposed, the sizes planned with or None);
    # generate --report (local engine).
    observe: (
        Callable[[plan.AssignmentLike, plan.AssignmentLike, Mapping[str, Mapping[int, int]] | None], None]
        | None
    ) = None
    # The balanced strategy's goal: "replicas" (counts) or "bytes" (every broker within mean bytes x
    # (1 +- tolerance); planning/balanced/bytes.py).
    balance: str = "replicas"
    tolerance: float = 0.05
    # --balance bytes with capacities known: no broker's peak above this share of its capacity; None:
    # the default (balance_bytes.MAX_DISK_UTILIZATION), not asked for (so not refused without capacities)
    max_disk_utilization: float | None = None
    # --balance bytes disk by disk (planning/balanced/disks.py): True (--disks), or None: when a broker
    # of B has several log dirs
    disks: bool | None = None


class Reporter(Protocol):
    """What the pipeline tells its caller while it runs (on stderr, in the CLI)."""

    def warning(self, text: str) -> None: ...

    def detail(self, text: str) -> None: ...

    def seed_chosen(self, seed: int) -> None: ...


@dataclass(slots=True)
class Outcome:
    seed: int
    brokers: list[Broker]
    stats: plan.PlanStats | None  # None when not asked for
    extra_stats: Mapping[str, Any] | None = None  # the strategy's own figures, if any
    files: tuple[str, str] | None = None  # (current, proposed) paths with output_dir
    kept: list[object] = field(default_factory=list)  # large objects the caller may free lazily
    json_stats: Mapping[str, Any] | None = None  # --format json's "stats" (_doc_stats); None: extra_stats


class Strategy(Protocol):
    """How the proposed assignment is made. `check` raises every error `proposals` could, before any
    output is written; `proposals` yields the assignment of `specs` (sorted by name) in that order, in
    chunks of any size; `extra_stats`, after the proposals are consumed, returns its own figures or None."""

    def check(self, specs: Sequence[plan.TopicSpec], brokers: Sequence[Broker]) -> None: ...

    def proposals(
        self, specs: Sequence[plan.TopicSpec], brokers: Sequence[Broker]
    ) -> Iterator[plan.AssignmentLike]: ...

    def extra_stats(self) -> Mapping[str, Any] | None: ...


@dataclass(frozen=True, slots=True)
class KafkaStrategy:
    """Kafka's --generate: each topic anew, with the (seed, topic) draws of plan.topic_draws."""

    seed: int
    chunk_partitions: int = CHUNK_PARTITIONS

    def check(self, specs: Sequence[plan.TopicSpec], brokers: Sequence[Broker]) -> None:
        plan.check_specs(specs, brokers)

    def proposals(self, specs: Sequence[plan.TopicSpec], brokers: Sequence[Broker]) -> Iterator[Assignment]:
        for chunk in plan.chunked(specs, self.chunk_partitions):
            yield plan.assign_topics(chunk, brokers, self.seed)

    def extra_stats(self) -> Mapping[str, Any] | None:
        return None


@dataclass(slots=True)
class BalancedStrategy:
    """The fewest copies to a balanced, rack-aware assignment (reassign_cli.planning.balanced.planner): planned whole at the
    first call of `proposals` (it needs every partition at once), then handed out in bounded chunks."""

    seed: int
    state: ClusterState
    chunk_partitions: int = CHUNK_PARTITIONS
    stats: balance.BalanceStats | None = None
    # The unselected topics' counts, when `state` holds only the selected topics (Spark's executors read
    # the others and counted them).
    others: balance.OtherCounts | None = None
    # --balance bytes: the tolerance around the mean bytes (None: --balance replicas)
    bytes_tolerance: float | None = None
    bytes_stats: balance_bytes.BytesStats | None = None
    max_utilization: float | None = None  # --max-disk-utilization as given (None: the default)
    planned: balance.Balanced | None = None  # --balance bytes: planned by `check` (it may refuse the plan)
    disks: bool | None = None  # Request.disks
    disk_plan: balance_disks.DiskPlan | None = None  # --balance bytes disk by disk: the log dirs chosen

    def check(self, specs: Sequence[plan.TopicSpec], brokers: Sequence[Broker]) -> None:
        plan.check_specs(specs, brokers)
        if self.bytes_tolerance is not None:
            missing = balance_bytes.unknown_sizes(self.state.topics, [s.name for s in specs])
            if missing:
                raise UsageError(
                    f"--balance bytes: {missing} selected partition(s) have no known size; take a snapshot "
                    "with `snapshot --bootstrap-server` (it records them), or plan from the live cluster "
                    "through the brokers (--bootstrap-server)"
                )
            lacking = capacity_lacking(self.state, brokers)
            if lacking and self.max_utilization is not None:
                raise UsageError(
                    f"--max-disk-utilization: no disk capacity known for broker(s) {shorten(lacking, sep=', ')}"
                    "; take the snapshot with `snapshot --bootstrap-server` from Kafka 3.3 or later "
                    "(it records them), or leave the option out to balance raw bytes"
                )
            # Planned here, before any output: the plan may break the peak limit, and then nothing is written.
            self.planned = self.make_plan(specs, brokers)
            stats = self.bytes_stats
            if stats is not None and stats.disks is not None and (worst := stats.disks.worst()) is not None:
                raise UsageError(peak_refusal(stats, worst))
            self._check_disks(brokers)

    def _check_disks(self, brokers: Sequence[Broker]) -> None:
        """Disk by disk (--disks, or a broker of B with several log dirs): the log dirs chosen, refused
        when a replica fits on no disk of its broker under --max-disk-utilization."""
        if self.disks is None and not balance_disks.wanted(self.state.disks, brokers, self.state.capacities):
            return
        if not any(self.state.disks.get(b.id) for b in brokers):
            raise UsageError(
                "--disks: no log dirs known for the brokers; take the snapshot with `snapshot "
                "--bootstrap-server` (it records them), or plan from the live cluster (--bootstrap-server)"
            )
        assert self.planned is not None
        limit = balance_bytes.MAX_DISK_UTILIZATION if self.max_utilization is None else self.max_utilization
        assert self.bytes_tolerance is not None
        self.disk_plan = balance_disks.plan_disks(
            self.state.topics, brokers, self.planned, self.state.disks, self.state.capacities,
            self.bytes_tolerance, limit,
        )  # fmt: skip
        if self.disk_plan.unplaced:
            raise UsageError(balance_disks.unplaced_refusal(self.disk_plan))

    def make_plan(self, specs: Sequence[plan.TopicSpec], brokers: Sequence[Broker]) -> balance.Balanced:
        if self.planned is not None:
            return self.planned
        if self.bytes_tolerance is not None:
            topics = self.state.topics
            limit = (
                balance_bytes.MAX_DISK_UTILIZATION if self.max_utilization is None else self.max_utilization
            )
            result, self.bytes_stats = balance_bytes.plan_bytes(
                topics,
                brokers,
                specs,
                self.seed,
                self.bytes_tolerance,
                self.others,
                capacities=self.state.capacities,
                max_utilization=limit,
            )
        else:
            result = balance.plan_balanced(self.state.topics, brokers, specs, self.seed, self.others)
        self.stats = result.stats
        return result

    def proposals(
        self, specs: Sequence[plan.TopicSpec], brokers: Sequence[Broker]
    ) -> Iterator[plan.AssignmentLike]:
        yield from self.make_plan(specs, brokers).chunks(self.chunk_partitions)

    def extra_stats(self) -> Mapping[str, Any] | None:
        if self.stats is None:
            return None
        extra: dict[str, Any] = dict(self.stats.as_dict())
        if self.bytes_stats is not None:
            extra.update(self.bytes_stats.as_dict())
        if self.disk_plan is not None:
            extra.update(self.disk_plan.as_dict())
        return extra

    def entries(self, proposed: plan.AssignmentLike) -> str:
        """Kafka's entries of a chunk of the plan, with the log dirs chosen when planned disk by disk."""
        if self.disk_plan is None:
            return format_partition_entries(proposed)
        return self.disk_plan.entries(proposed)


def capacity_lacking(state: ClusterState, brokers: Sequence[Broker]) -> list[int]:
    """The brokers of B with no known disk capacity (none above zero)."""
    caps = state.capacities
    return [b.id for b in brokers if b.id not in caps or caps[b.id].total <= 0]


def peak_refusal(stats: balance_bytes.BytesStats, i: int) -> str:
    """The one line refusing a plan whose peak breaks --max-disk-utilization at broker index i."""
    from reassign_cli.core.pacing import human_bytes

    d = stats.disks
    assert d is not None
    peak, total = int(d.peak[i]), int(d.total[i])
    return (
        f"--max-disk-utilization {d.limit:g}: broker {int(stats.ids[i])} would peak at {peak} bytes "
        f"({human_bytes(peak)}, {100 * peak / total:.1f}%) of its {total} bytes ({human_bytes(total)}) "
        "during the move (it holds what it receives until the plan ends), and no plan within the limit "
        "was found"
    )


STRATEGIES: dict[str, Callable[[int, ClusterState], Strategy]] = {
    "kafka": lambda seed, state: KafkaStrategy(seed),
    "balanced": BalancedStrategy,
}


# ---------------------------------------------------------------------------------------------
# The pipeline
# ---------------------------------------------------------------------------------------------


def run(request: Request, source: Source, reporter: Reporter) -> Outcome:
    """Kafka's --generate, written to stdout or request.output_dir. Nothing is written when any input
    or planning check fails; Ctrl-C leaves no partial file."""
    if request.engine == "spark" and request.strategy not in (None, *STRATEGIES.values()):
        # The Spark engine knows how to split Kafka's strategy and the balanced one, no other.
        raise UsageError("--engine spark plans with the kafka and balanced strategies only")
    if _executors_read(request, source, reporter):
        assert source.snapshot_file is not None
        return _run_spark_lines(request, source, reporter)
    dirs = request.balance == "bytes"  # the replicas' log dirs, for --balance bytes disk by disk
    state = load_state(source, None if request.whole_cluster else request.topics, reporter, replica_dirs=dirs)
    if not source.snapshot_file:
        _record_sizes(source, state, reporter, needed=request.balance == "bytes")
    # Broker selection first, so that its warnings (unregistered ids) show even when planning then fails.
    brokers, warnings = plan.select_brokers(state, request.broker_list, request.rack_aware)
    for w in warnings:
        reporter.warning(w)
    specs = plan.topic_specs(state, request.topics)
    if request.replication_factor is not None:
        rf = request.replication_factor
        specs = [dataclasses.replace(s, replication_factor=rf) for s in specs]
    seed = plan.random_seed() if request.seed is None else request.seed
    strategy = (request.strategy or STRATEGIES["kafka"])(seed, state)
    if isinstance(strategy, BalancedStrategy) and request.balance == "bytes":
        strategy.bytes_tolerance = request.tolerance
        strategy.max_utilization = request.max_disk_utilization
        strategy.disks = request.disks
    strategy.check(specs, brokers)
    if isinstance(strategy, BalancedStrategy) and request.balance == "bytes":
        _note_capacity(state, brokers, strategy, reporter)
        if strategy.bytes_stats is not None and not strategy.bytes_stats.within():
            reporter.warning(tolerance_note(strategy.bytes_stats))
        _note_disks(strategy, source, brokers, reporter)
    if request.seed is None:
        reporter.seed_chosen(seed)
    current = {s.name: state.topics[s.name].replicas for s in specs}
    known = _sizes_of(state, specs, request, reporter)
    job = _Job(request, request.frame(seed, None), specs, brokers, current, seed, known)
    if request.engine != "spark":
        stats, files, copied = _write_local(job, strategy)
    elif isinstance(strategy, BalancedStrategy):
        stats, files, copied = _write_spark_balanced(job, strategy)
    else:
        stats, files, copied = _write_spark(job)
    extra = _extra(strategy.extra_stats(), copied, request.throttle)
    _warn_low_rate(request.throttle, copied, reporter)
    # The state is dropped by the caller at exit (freeing millions of objects one by one serves nothing).
    return Outcome(
        seed, brokers, stats, extra, files, kept=[state, current], json_stats=_doc_stats(extra, stats, copied)
    )


def _note_disks(
    strategy: BalancedStrategy, source: Source, brokers: Sequence[Broker], reporter: Reporter
) -> None:
    """Disk by disk: from a snapshot, the brokers whose log dirs look like one filesystem (the live
    survey says so itself); the log dirs offline or cordoned, never chosen; the disks left outside their
    band."""
    d = strategy.disk_plan
    if d is None:
        return
    if source.snapshot_file:
        from reassign_cli.backends.admin.log_dirs import shared_note

        alike = balance_disks.look_shared(strategy.state.disks, strategy.state.capacities, brokers)
        if alike:
            reporter.warning(shared_note(alike))
    skipped = balance_disks.skipped_note(strategy.state.disks, brokers)
    if skipped:
        reporter.warning(skipped)
    if not d.within():
        reporter.warning(balance_disks.band_note(d))


def tolerance_note(stats: balance_bytes.BytesStats) -> str:
    """The plan ends beyond --tolerance: how close it got, and why when the topics given cannot do
    better (the other topics' bytes stay where they are)."""
    measure = "utilization" if stats.disks is not None else "bytes"
    head = (
        f"--balance bytes: the tolerance {100 * stats.tolerance:g}% is not reached: broker "
        f"{stats.worst_after()} ends {100 * stats.max_dev(stats.after):.1f}% from its goal ({measure})"
    )
    bound, broker = stats.reachable
    if bound > stats.tolerance:
        return (
            f"{head}; with the topics given no plan gets below {100 * bound:.1f}% (broker {broker}: the "
            "other topics' bytes stay where they are); select more topics to do better"
        )
    below = f"; no plan of these topics gets below {100 * bound:.1f}%" if bound > 0 else ""
    return (
        f"{head}; no plan within it was found (the partitions' sizes, the replica count band, the racks "
        f"or the disk limit{below})"
    )


def _note_capacity(
    state: ClusterState, brokers: Sequence[Broker], strategy: BalancedStrategy, reporter: Reporter
) -> None:
    """--balance bytes without every broker's capacity: raw bytes are balanced; said once. With them: the
    brokers already above the limit, which receive nothing."""
    lacking = capacity_lacking(state, brokers)
    stats = strategy.bytes_stats
    d = stats.disks if stats is not None else None
    if stats is not None and d is not None:
        full = [int(b) for b, x in zip(stats.ids, d.base / d.total, strict=True) if x > d.limit]
        if full:
            reporter.warning(
                f"broker(s) {shorten(full, sep=', ')} already above --max-disk-utilization {d.limit:g} of "
                "their disk: they receive nothing"
            )
    if d is not None and any(state.capacities[b.id].shared is None for b in brokers):
        reporter.warning(
            "the snapshot's disk capacities predate --shared-log-dirs: log dirs of one size, equally full "
            "to 0.1%, were counted once (as one filesystem); take the snapshot again to count each log dir "
            "as its own disk, or with --shared-log-dirs to keep that rule"
        )
    if lacking:
        reporter.warning(
            f"--balance bytes: no disk capacity known for broker(s) {shorten(lacking, sep=', ')}: balancing "
            "raw bytes, not disk utilization, and --max-disk-utilization is not checked (a snapshot "
            "taken with --bootstrap-server from Kafka 3.3 or later records capacities)"
        )


def _sizes_of(
    state: ClusterState, specs: Sequence[plan.TopicSpec], request: Request, reporter: Reporter
) -> Mapping[str, Mapping[int, int]] | None:
    """The selected topics' partition sizes, or None when none is known (then no bytes are reported)."""
    names = [s.name for s in specs]
    if sizes.any_sizes(state, names):
        return {n: state.topics[n].sizes for n in names}
    if request.throttle is not None:
        reporter.warning(NO_SIZES)
    return None


NO_SIZES = (
    "--throttle: no partition sizes are known, so the time at that rate cannot be told "
    "(a snapshot taken with --bootstrap-server records them)"
)


def _warn_low_rate(throttle: int | None, copied: sizes.CopyBytes | None, reporter: Reporter) -> None:
    """--throttle below 1 MB/s (a unit left out?), unless the copies are known to take little time at it."""
    if throttle is None:
        return
    seconds = None if copied is None or copied.copies_unknown else copied.seconds_at(throttle)
    line = rates.low_rate_warning("--throttle", throttle, seconds)
    if line is not None:
        reporter.warning(line)


def _doc_stats(
    extra: Mapping[str, Any] | None, stats: plan.PlanStats | None, copied: sizes.CopyBytes | None
) -> Mapping[str, Any] | None:
    """--format json's "stats": the same keys for every strategy first (partitions, partitions_changed,
    copies: replicas created on a broker that lacks them, leader_changes: preferred leaders that change,
    bytes_copied: null when no size is known), then the strategy's own figures and the sizes'. Without
    the statistics counted (-q without --format json), only the latter."""
    if stats is None:
        return extra
    common: dict[str, Any] = {
        "partitions": stats.partitions,
        "partitions_changed": stats.partitions_changed,
        "copies": stats.replicas_moved,
        "leader_changes": stats.leaders_changed,
        "bytes_copied": None if copied is None else copied.bytes_copied,
    }
    # the common keys are counted here the same way for every strategy: they hold over a strategy's own
    return {**common, **{k: v for k, v in (extra or {}).items() if k not in common}}


def _extra(
    strategy_stats: Mapping[str, Any] | None, copied: sizes.CopyBytes | None, throttle: int | None
) -> Mapping[str, Any] | None:
    """The strategy's own figures, then the bytes copied (when sizes are known)."""
    if copied is None:
        return strategy_stats
    out = {**(strategy_stats or {}), **copied.as_dict(throttle)}
    if strategy_stats and "bytes_moved_within_brokers" in strategy_stats:  # disk by disk: the two apart
        out["bytes_copied_between_brokers"] = copied.bytes_copied
    return out


def load_state(
    source: Source, topics: list[str] | None, reporter: Reporter, *, replica_dirs: bool = False
) -> ClusterState:
    if source.snapshot_file:
        if source.ignored_env:
            reporter.detail(f"Planning from the snapshot; {source.ignored_env} is not used.")
        return _load_snapshot(source.snapshot_file, replica_dirs)
    if source.zookeeper is not None:  # ZooKeeper mode; the brokers beside it, if given, tell the sizes
        return _read_zookeeper(source.zookeeper, topics)
    assert source.admin is not None, "the CLI requires a connection without --snapshot"
    return _read_admin(source.admin, topics)


def _load_snapshot(path: str, replica_dirs: bool = False) -> ClusterState:
    """The snapshot file (a document or JSON lines, told apart by its first bytes), memory-mapped: its
    pages are dropped as the parser moves on, so a 750 MB file (10M partitions) does not add to the peak
    memory on top of the state built from it."""
    from reassign_cli.core import snapshot, snapshot_lines

    try:
        with open(path, "rb") as f:
            lines = snapshot_lines.is_lines(f.read(snapshot_lines.SNIFF_BYTES))
            loads = snapshot_lines.loads if lines else snapshot.loads
            f.seek(0)
            size = os.fstat(f.fileno()).st_size
            if size == 0 or not hasattr(mmap, "MADV_DONTNEED"):
                return loads(f.read(), partition_state=False, replica_dirs=replica_dirs)
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                release = lambda: m.madvise(mmap.MADV_DONTNEED)  # noqa: E731
                return loads(m, partition_state=False, release=release, replica_dirs=replica_dirs)
    except OSError as e:
        raise InvalidInputError(f"cannot read snapshot file {path}: {e.strerror or e}") from None


def _record_sizes(source: Source, state: ClusterState, reporter: Reporter, *, needed: bool) -> None:
    """From the live cluster, whenever the brokers are at hand: each partition's size, each broker's
    disk capacity and log dirs, and which dir holds each replica (DescribeLogDirs, as `snapshot` records
    them), for the bytes copied and the time at
    --throttle. Without the brokers (ZooKeeper alone) the sizes stay unknown, and --balance bytes
    (`needed`) is refused by the strategy's check. When the brokers fail to answer and the sizes are not
    needed, the plan goes on without them (warned)."""
    from reassign_cli.backends.admin.log_dirs import LogDirMover, shared_note
    from reassign_cli.core import disks

    if source.admin is None:
        return
    mover = LogDirMover(source.admin)
    try:
        survey = mover.survey(state.broker_ids, source.shared_log_dirs)
        sizes.record(state, survey.replica_sizes)
        state.capacities = survey.capacities
        disks.locate(state, survey.dirs, survey.located)
    except OperationalError as e:
        if needed:
            raise
        reporter.warning(f"partition sizes not read from the brokers ({e}): no bytes are reported")
    finally:
        mover.close()
    if mover.looks_shared and needed:  # the capacities count only for --balance bytes
        reporter.warning(shared_note(mover.looks_shared))


def _read_zookeeper(options: ZkOptions, topics: list[str] | None) -> ClusterState:
    from reassign_cli.backends.zookeeper.read import read_state
    from reassign_cli.backends.zookeeper.session import open_session

    with open_session(options) as session:
        return read_state(session, topics=topics)


def _read_admin(options: AdminOptions, topics: list[str] | None) -> ClusterState:
    from reassign_cli.backends.admin.backend import open_admin_backend

    with open_admin_backend(options) as backend:
        return backend.read_state(topics)


@dataclass(frozen=True, slots=True)
class _Job:
    """What the writers need, once every check has passed."""

    request: Request
    frame: tuple[str, str, str]
    specs: Sequence[plan.TopicSpec]
    brokers: Sequence[Broker]
    current: plan.AssignmentLike
    seed: int
    sizes: Mapping[str, Mapping[int, int]] | None = None  # the selected topics' sizes, when any is known


_Written = tuple[plan.PlanStats | None, tuple[str, str] | None, sizes.CopyBytes | None]


def _write_local(job: _Job, strategy: Strategy) -> _Written:
    specs, brokers, current, known = job.specs, job.brokers, job.current, job.sizes
    stats = plan.PlanStats() if job.request.stats else None
    copied = None if known is None else sizes.CopyBytes()

    def current_slices() -> Iterator[str]:
        for chunk in plan.chunked(specs, CHUNK_PARTITIONS):
            yield format_partition_entries({s.name: current[s.name] for s in chunk})

    def proposed_slices() -> Iterator[str]:
        for proposed in strategy.proposals(specs, brokers):
            if stats is not None:
                stats.add(plan.plan_stats(current, proposed))
            if copied is not None and known is not None:
                copied.add(sizes.copy_bytes(current, proposed, known))
            if job.request.observe is not None:
                job.request.observe(current, proposed, known)
            yield (
                strategy.entries(proposed)
                if isinstance(strategy, BalancedStrategy)
                else format_partition_entries(proposed)
            )

    def after() -> str:
        extra = _extra(strategy.extra_stats(), copied, job.request.throttle)
        return job.request.frame(job.seed, _doc_stats(extra, stats, copied))[2]

    with _Outputs(job.request.output_dir, job.frame) as outs:
        outs.write_current(current_slices())
        outs.write_proposed(proposed_slices(), after)
    return stats, outs.paths, copied


def _current_slices(job: _Job) -> Iterator[str]:
    for chunk in plan.chunked(job.specs, CHUNK_PARTITIONS):
        yield format_partition_entries({s.name: job.current[s.name] for s in chunk})


def _write_spark(job: _Job) -> _Written:
    """The proposed document from Spark: computed before anything is written (if Spark fails, nothing is
    left behind), then streamed from the executors' part files (output dir) or from the executors.
    The statistics are counted here chunk by chunk from the same deterministic plan, which costs far
    less than reading the proposed document back; so are the bytes copied, before the document's end
    (--format json carries them)."""
    from reassign_cli.spark import engine as spark_engine

    request = job.request
    stats = plan.PlanStats() if request.stats else None
    copied = None if job.sizes is None else sizes.CopyBytes()
    with (
        spark_engine.engine(request.spark_master, verbose=request.verbose) as eng,
        _Outputs(request.output_dir, job.frame) as outs,
    ):
        proposed = eng.proposed(job.specs, job.brokers, job.seed, outs.parts_dir(eng.executors_here))
        outs.write_current(_current_slices(job))
        if stats is not None or copied is not None:
            for chunk in plan.chunked(job.specs, CHUNK_PARTITIONS):
                chunk_plan = plan.assign_topics(chunk, job.brokers, job.seed)
                if stats is not None:
                    stats.add(plan.plan_stats(job.current, chunk_plan))
                if copied is not None and job.sizes is not None:
                    copied.add(sizes.copy_bytes(job.current, chunk_plan, job.sizes))
        outs.write_proposed(
            proposed,
            lambda: request.frame(
                job.seed, _doc_stats(_extra(None, copied, request.throttle), stats, copied)
            )[2],
        )
    return stats, outs.paths, copied


def _write_spark_balanced(job: _Job, strategy: BalancedStrategy) -> _Written:
    """The balanced strategy with the state on the driver: planned here (it needs every partition at
    once), the proposed document formatted by the executors, before anything is written; the statistics
    and bytes copied counted from the plan's chunks, as the local engine counts them."""
    from reassign_cli.spark import engine as spark_engine

    request = job.request
    copied = None if job.sizes is None else sizes.CopyBytes()
    with (
        spark_engine.engine(request.spark_master, verbose=request.verbose) as eng,
        _Outputs(request.output_dir, job.frame) as outs,
    ):
        result = strategy.make_plan(job.specs, job.brokers)
        if strategy.disk_plan is None:
            proposed = eng.format_plan(result, outs.parts_dir(eng.executors_here))
        else:  # the log dirs chosen on the driver (planning/balanced/disks.py): formatted here too
            proposed = map(strategy.entries, result.chunks(CHUNK_PARTITIONS))
        stats = _balanced_stats(result, job.current, request.stats, copied, job.sizes)
        outs.write_current(_current_slices(job))
        extra = _doc_stats(_extra(strategy.extra_stats(), copied, request.throttle), stats, copied)
        outs.write_proposed(proposed, lambda: request.frame(job.seed, extra)[2])
    return stats, outs.paths, copied


def _balanced_stats(
    result: balance.Balanced,
    current: plan.AssignmentLike,
    count: bool,
    copied: sizes.CopyBytes | None = None,
    known: Mapping[str, Mapping[int, int]] | None = None,
) -> plan.PlanStats | None:
    """The summary's statistics (when `count`) and the bytes copied (into `copied`, when sizes are
    known), chunk by chunk as the local engine counts them."""
    stats = plan.PlanStats() if count else None
    if stats is None and copied is None:
        return None
    for chunk in result.chunks(CHUNK_PARTITIONS):
        if stats is not None:
            stats.add(plan.plan_stats(current, chunk))
        if copied is not None and known is not None:
            copied.add(sizes.copy_bytes(current, chunk, known))
    return stats


# ---------------------------------------------------------------------------------------------
# Spark, with a JSON-lines snapshot: the executors read it
# ---------------------------------------------------------------------------------------------


def _executors_read(request: Request, source: Source, reporter: Reporter) -> bool:
    """Whether the Spark executors read the snapshot (JSON lines, at a path Hadoop takes)."""
    from reassign_cli.core import snapshot_lines
    from reassign_cli.spark import engine as spark_engine

    if request.engine != "spark" or not source.snapshot_file or request.balance == "bytes":
        return False  # --balance bytes: the driver reads the snapshot (the executors count no bytes)
    try:
        with open(source.snapshot_file, "rb") as f:
            if not snapshot_lines.is_lines(f.read(snapshot_lines.SNIFF_BYTES)):
                return False
    except OSError:
        return False  # load_state reports it
    if not spark_engine.readable_by_hadoop(source.snapshot_file):
        reporter.warning(
            f"The Spark executors cannot read a path with any of {spark_engine.UNREADABLE_PATH_CHARS!r} "
            "in it (Hadoop takes them for path lists and URI schemes): the driver reads the snapshot instead"
        )
        return False
    return True


def _read_header(path: str) -> ClusterState:
    """The JSON-lines snapshot's header line as a state without topics."""
    from reassign_cli.core import snapshot_lines

    blocks: list[bytes] = []
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 16):
                blocks.append(block)
                if b"\n" in block or b"\r" in block:
                    break
    except OSError as e:
        raise InvalidInputError(f"cannot read snapshot file {path}: {e.strerror or e}") from None
    head = b"".join(blocks)
    header = snapshot_lines.parse_header(head[: snapshot_lines.header_span(head)[0]])
    return ClusterState(
        header.brokers,
        {},
        header.deleting,
        header.reassignment,
        capacities=header.capacities,
        disks=header.disks,
    )


def _run_spark_lines(request: Request, source: Source, reporter: Reporter) -> Outcome:
    """`run` when the executors read the snapshot: the driver holds the header, the selected names and one
    slice at a time, never the topics. Errors come in the local engine's order: the file's first bad
    line, then the brokers, then the topics (split_plan); nothing is written before."""
    from reassign_cli.spark import engine as spark_engine
    from reassign_cli.spark import split as split_plan

    assert source.snapshot_file is not None
    if source.zookeeper:
        reporter.detail("Planning from the snapshot; KAFKA_REASSIGN_ZOOKEEPER is not used.")
    header = _read_header(source.snapshot_file)
    try:
        brokers, warnings = plan.select_brokers(header, request.broker_list, request.rack_aware)
        broker_error = None
    except ReassignError as e:
        brokers, warnings, broker_error = [], [], e
    pairs = tuple((b.id, b.rack) for b in brokers)
    balanced = request.strategy is STRATEGIES["balanced"]
    sel = split_plan.Selection(
        sorted(set(request.topics)), pairs, request.replication_factor, header.deleting, others=balanced
    )
    seed = plan.random_seed() if request.seed is None else request.seed
    if request.throttle is not None:
        reporter.warning(SPARK_NO_SIZES)
    with spark_engine.engine(request.spark_master, verbose=request.verbose) as eng:
        scans = eng.scan(source.snapshot_file, sel)
        error = split_plan.first_line_error(scans) or broker_error
        if error is not None:
            raise error
        for w in warnings:
            reporter.warning(w)
        error = split_plan.first_plan_error(scans, sel)
        if error is not None:
            raise error
        if request.seed is None:
            reporter.seed_chosen(seed)
        if balanced:
            return _lines_balanced(request, eng, source.snapshot_file, sel, scans, brokers, seed)
        del scans
        with _Outputs(request.output_dir, request.frame(seed, None)) as outs:
            parts_dir = outs.parts_dir(eng.executors_here)
            result = eng.plan(source.snapshot_file, sel, seed, request.stats, parts_dir)
            outs.write_current(result.current)
            # the same "stats" keys as the local engine's (counted once the slices are written); the
            # executors report no sizes
            outs.write_proposed(
                result.proposed, lambda: request.frame(seed, _doc_stats(None, result.stats, None))[2]
            )
    return Outcome(
        seed, brokers, result.stats, None, outs.paths, json_stats=_doc_stats(None, result.stats, None)
    )


def _lines_balanced(
    request: Request,
    eng: Engine,
    path: str,
    sel: Selection,
    scans: list[SplitScan],
    brokers: list[Broker],
    seed: int,
) -> Outcome:
    """The balanced strategy over a JSON-lines snapshot the executors scanned: the selected topics
    collected (compact arrays, in name order) with the unselected ones' per-broker counts, planned here,
    both documents formatted by the executors."""
    others = balance.OtherCounts({}, {})
    for scan in scans:
        if scan.others is not None:
            others = others.plus(scan.others)
    topics, specs = eng.selected(path, sel)
    strategy = BalancedStrategy(seed, ClusterState(brokers, topics), others=others)
    result = strategy.make_plan(specs, brokers)
    stats = _balanced_stats(result, {name: t.replicas for name, t in topics.items()}, request.stats)
    # the same "stats" keys as the local engine's (_doc_stats); the executors report no sizes
    extra = _doc_stats(strategy.extra_stats(), stats, None)
    with _Outputs(request.output_dir, request.frame(seed, None)) as outs:
        parts_dir = outs.parts_dir(eng.executors_here)
        proposed = eng.format_plan(result, parts_dir)
        outs.write_current(eng.current(path, sel, parts_dir))
        outs.write_proposed(proposed, lambda: request.frame(seed, extra)[2])
    return Outcome(
        seed, brokers, stats, strategy.extra_stats(), outs.paths, kept=[topics, result], json_stats=extra
    )


SPARK_NO_SIZES = (
    "--throttle: the Spark executors read this snapshot and do not report the bytes copied; "
    "plan with --engine local (or a snapshot document, not JSON lines) for them"
)


class _Outputs:
    """Where the two documents go. On stdout: frame[0], current, frame[1], proposed, frame[2]. With an
    output dir: DIR/current.json and DIR/proposed.json, each document and a newline, written under
    temporary names in DIR and renamed into place only once both are complete; removed on any error or
    interrupt."""

    def __init__(self, output_dir: str | None, frame: tuple[str, str, str]) -> None:
        self.output_dir = output_dir
        self.frame = frame
        self.paths: tuple[str, str] | None = None
        self._tmps: dict[str, str] = {}
        self._open: list[IO[str]] = []
        self._scratch: list[str] = []

    def __enter__(self) -> _Outputs:
        if self.output_dir is not None:
            _make_dir(self.output_dir)
        return self

    def _file(self, name: str) -> IO[str]:
        assert self.output_dir is not None
        tmp = self._reserve(name)
        f = open(tmp, "w", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
        self._open.append(f)
        return f

    def _reserve(self, name: str) -> str:
        """A new empty file DIR/.NAME.<random>.partial, created with the mode a plain open() gives."""
        assert self.output_dir is not None
        for _ in range(100):
            tmp = os.path.join(self.output_dir, f".{name}.{secrets.token_hex(4)}.partial")
            # Recorded before it exists: a Ctrl-C right after the create must still find it to remove.
            self._tmps[name] = tmp
            try:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                del self._tmps[name]  # not ours
                continue
            except OSError as e:
                del self._tmps[name]
                path = os.path.join(self.output_dir, name)
                raise OperationalError(f"cannot write {path}: {e.strerror or e}") from None
            return tmp
        raise OperationalError(f"cannot create a temporary file in {self.output_dir}")  # pragma: no cover

    def write_current(self, slices: Iterator[str] | Iterator[bytes]) -> None:
        self._write(CURRENT_FILE, self.frame[0], slices, self.frame[1])

    def write_proposed(
        self, slices: Iterator[str] | Iterator[bytes | str], after: Callable[[], str] | None = None
    ) -> None:
        """`after`, if given, replaces frame[2]; it is asked for once the slices are written."""
        self._write(PROPOSED_FILE, "", slices, after or (lambda: self.frame[2]))

    def _write(self, name: str, before: str, slices: Iterator[Any], after: str | Callable[[], str]) -> None:
        """On stdout, framed; in a file, the document and a newline."""
        f = sys.stdout if self.output_dir is None else self._file(name)
        if self.output_dir is not None:
            before, after = "", "\n"
        f.write(before)
        _write_document(f, slices)
        f.write(after if isinstance(after, str) else after())

    def scratch_dir(self) -> str:
        """A new directory for other writers' pieces (Spark executors' part files), removed on exit: hidden
        in the output dir (which must be on a filesystem the executors share), or without one a
        temporary directory (for executors on this host)."""
        where = self.output_dir
        try:
            path = tempfile.mkdtemp(
                prefix=".kafka-reassign-parts-" if where else "kafka-reassign-parts-", dir=where
            )
        except OSError as e:
            raise OperationalError(
                f"cannot write into {where or tempfile.gettempdir()}: {e.strerror or e}"
            ) from None
        self._scratch.append(path)
        return path

    def parts_dir(self, executors_here: bool) -> str | None:
        """Where Spark executors write their part files: the output dir's scratch dir; on stdout, a
        temporary one when the executors run on this host, else None (they stream to the driver)."""
        return self.scratch_dir() if self.output_dir is not None or executors_here else None

    def final_paths(self) -> tuple[str, str]:
        assert self.output_dir is not None
        return (os.path.join(self.output_dir, CURRENT_FILE), os.path.join(self.output_dir, PROPOSED_FILE))

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self.output_dir is None:
            for path in self._scratch:
                shutil.rmtree(path, ignore_errors=True)
            if exc is None:
                sys.stdout.flush()
            return
        try:
            for f in self._open:
                f.close()
            if exc is None:
                final = dict(zip((CURRENT_FILE, PROPOSED_FILE), self.final_paths(), strict=True))
                for name, tmp in list(self._tmps.items()):
                    os.replace(tmp, final[name])
                    del self._tmps[name]
                self.paths = self.final_paths()
        except OSError as e:
            raise OperationalError(f"cannot write into {self.output_dir}: {e.strerror or e}") from None
        finally:
            for tmp in self._tmps.values():
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            for path in self._scratch:
                shutil.rmtree(path, ignore_errors=True)


def _write_document(f: IO[str], slices: Iterator[str] | Iterator[bytes] | Iterator[bytes | str]) -> None:
    """Kafka's reassignment document from its comma-joined entry slices (empty slices skipped); slices
    in bytes (UTF-8) go to the stream's binary buffer when it has one."""
    f.write(DOC_HEAD)
    first = True
    for text in slices:
        if text:
            if not first:
                f.write(",")
            if isinstance(text, str):
                f.write(text)
            else:
                _write_bytes(f, text)
            first = False
    f.write(DOC_TAIL)


def _write_bytes(f: IO[str], data: bytes) -> None:
    buffer = getattr(f, "buffer", None)
    if buffer is None:
        f.write(data.decode())
        return
    f.flush()
    buffer.write(data)


def _make_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise OperationalError(f"cannot create directory {path}: {e.strerror or e}") from None
