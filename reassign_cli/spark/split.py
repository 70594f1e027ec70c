"""What the Spark executors do with their split of a JSON-lines snapshot, and how the driver combines the
splits' answers. Pure (numpy, orjson): testable without Spark, and the same code on every executor.

A split is one byte range of the file as Spark's textFile cuts it: the lines that start in it, in order
(split 0 starts with the header line). Two passes over the splits:

1. `iter_scan`: parse and check every line, select the topics of the plan, derive their specs and run
   Kafka's argument checks. It yields the selected topics of each chunk in a compact form
   (`SplitTopics`: numpy arrays, which Spark caches on the executors' disks), then a small `SplitScan`
   (the first problem of each kind, the line count, the first and last topic names, which selected
   topics were found). The driver combines the answers in split order (`first_line_error`,
   `first_plan_error`) so that the error reported, if any, is exactly the one the local engine reports
   for the same file: nothing is written before this pass is clean.
2. `plan_split`: over the cached `SplitTopics` of the split, Kafka's assignment (plan.assign_topics), the
   current and the proposed entries (model.format_partition_entries) and the summary statistics, in
   batches. Splits are in name order (snapshot_lines), so the driver only concatenates.

Caching the compact topics costs less than reading and parsing the lines again (measured at 1M
partitions: 0.18 s of CPU to pack, pickle, unpickle and rebuild them against 0.91 s to parse them).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import orjson

from reassign_cli import errors
from reassign_cli.core import snapshot_lines
from reassign_cli.core.model import NO_ENTRIES, Topic, format_partition_entries
from reassign_cli.core.replicas import ReplicaStore, TopicReplicas, int_array
from reassign_cli.errors import InvalidInputError, ReassignError
from reassign_cli.planning import plan
from reassign_cli.planning.balanced.planner import OtherCounts, target_ids, targets_of

# Bytes of lines parsed at once (one orjson call): small chunks keep the parsed objects in the CPU's cache
# until they are consumed (at 1M partitions, scanning with 64 KiB chunks took 1.7 s, with 4 MiB 3.8 s).
CHUNK_BYTES = 64 << 10
# Kafka partitions planned and formatted at once: enough for numpy's kernel to pay off.
PLAN_PARTITIONS = 50_000

BrokerPairs = tuple[tuple[int, str | None], ...]


@dataclass(frozen=True, slots=True)
class Selection:
    """What the driver broadcasts: the topics of the plan (sorted, unique; None: every topic in the file),
    the brokers to assign to (plan.select_brokers' order), the RF override, the topics being deleted."""

    names: Sequence[str] | None
    brokers: BrokerPairs
    replication_factor: int | None = None
    deleting: frozenset[str] = frozenset()
    # Whole-cluster strategies (balanced): also count the unselected topics' replicas and leaders per broker.
    others: bool = False


@dataclass(slots=True)
class SplitScan:
    """One split's answer to the scan. Line indexes count the split's lines from 0 (blank lines included)."""

    index: int
    lines: int = 0
    error: tuple[int, str] | None = None  # the first bad line: (index, what is wrong)
    first: tuple[int, str] | None = None  # the first topic line: (index, name)
    last: str | None = None  # the last topic's name
    found: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # into Selection.names
    deleting: list[str] = field(default_factory=list)  # selected topics queued for deletion
    topics: int = 0  # selected topics
    partitions: int = 0  # their partitions
    empty: str | None = None  # the first selected topic without partitions
    mixed: str | None = None  # the error message of the first selected topic with mixed RFs
    invalid: tuple[str, str, str | None] | None = None  # Kafka's argument error: (class name, message, hint)
    others: OtherCounts | None = None  # with Selection.others: the unselected topics' counts per broker


def _chunks(records: Iterator[bytes], chunk_bytes: int) -> Iterator[list[bytes]]:
    lines: list[bytes] = []
    size = 0
    for line in records:
        lines.append(line)
        size += len(line) + 1
        if size >= chunk_bytes:
            yield lines
            lines, size = [], 0
    if lines:
        yield lines


def _lines_of(index: int, records: Iterable[bytes]) -> tuple[Iterator[bytes], int]:
    """The split's records without the header line (split 0's first), and how many lines were skipped."""
    it = iter(records)
    if index == 0 and next(it, None) is not None:
        return it, 1
    return it, 0


class _Selector:
    """Picks the selected topics out of consecutive, sorted topics: a merge against the sorted names."""

    def __init__(self, names: Sequence[str] | None) -> None:
        self.names = names
        self.lo = 0
        self.found: list[int] = []

    def pick(self, topics: list[Topic]) -> list[Topic]:
        names = self.names
        if names is None:
            return topics
        chosen = []
        for t in topics:
            i = bisect.bisect_left(names, t.name, self.lo)
            self.lo = i
            if i < len(names) and names[i] == t.name:
                chosen.append(t)
                self.found.append(i)
        return chosen


def iter_scan(
    index: int, records: Iterable[bytes], sel: Selection, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[SplitTopics | SplitScan]:
    """Pass 1 over one split (see the module's doc): the selected topics chunk by chunk, as long as
    nothing is wrong in the split (the plan needs them only then), and the SplitScan last."""
    it, skipped = _lines_of(index, records)
    scan = SplitScan(index, lines=skipped)
    selector = _Selector(sel.names)
    others = _Others() if sel.others else None
    prev = None
    for lines in _chunks(it, chunk_bytes):
        base = scan.lines
        scan.lines += len(lines)
        try:
            topics = snapshot_lines.parse_lines(lines, prev, partition_state=False)
        except snapshot_lines.LineError as e:
            scan.error = (base + e.index, e.detail)
            if scan.first is None:  # a good topic line before the bad one still meets the previous split
                scan.first = _first_topic(lines[: e.index], base)
            break
        if not topics:
            continue
        if scan.first is None:
            scan.first = _first_topic(lines, base)
        prev = topics[-1].name
        specs = _check(chosen := selector.pick(topics), sel, scan)
        if others is not None:
            others.add(topics, chosen)
        if specs and scan.empty is None and scan.mixed is None and scan.invalid is None:
            yield SplitTopics.of(chosen, specs)
    scan.last = prev if scan.error is None else None
    scan.found = np.array(selector.found, dtype=np.int32)
    scan.others = None if others is None else others.counts()
    yield scan


def scan_split(
    index: int, records: Iterable[bytes], sel: Selection, chunk_bytes: int = CHUNK_BYTES
) -> SplitScan:
    """Pass 1's answer alone (the compact topics dropped)."""
    *_, scan = iter_scan(index, records, sel, chunk_bytes)
    assert isinstance(scan, SplitScan)
    return scan


def _first_topic(lines: Sequence[bytes], base: int) -> tuple[int, str] | None:
    for i, line in enumerate(lines):
        if line and not line.isspace():
            return base + i, orjson.loads(line)["topic"]
    return None


def _check(chosen: list[Topic], sel: Selection, scan: SplitScan) -> list[plan.TopicSpec]:
    """The checks of plan.topic_specs and plan.check_specs on the selected topics of one chunk; the
    first problem of each kind is kept (the driver ranks the kinds as the local engine does). Returns
    the specs (with the RF override) of the topics that have no problem of their own."""
    if not chosen:
        return []
    if sel.deleting:
        scan.deleting += [t.name for t in chosen if t.name in sel.deleting]
    specs, empty, mixed = plan.spec_problems(chosen)
    scan.topics += len(chosen)
    scan.partitions += sum(s.n_partitions for s in specs)
    if empty is not None and scan.empty is None:
        scan.empty = empty
    if mixed is not None and scan.mixed is None:
        scan.mixed = str(mixed)
    specs = _with_rf(specs, sel.replication_factor)
    if scan.invalid is None:
        n_brokers = len(sel.brokers)
        for s in specs:
            try:
                plan.check_spec(s, n_brokers)
            except ReassignError as e:
                scan.invalid = (type(e).__name__, str(e), e.hint)
                break
    return specs


def _with_rf(specs: list[plan.TopicSpec], rf: int | None) -> list[plan.TopicSpec]:
    return specs if rf is None else [replace(s, replication_factor=rf) for s in specs]


class _Others:
    """The unselected topics of a split, counted per broker (OtherCounts) once at its end; until then only
    their target replica ids (RS minus RR) and first ids, one array per chunk: a split's worth at most."""

    def __init__(self) -> None:
        self.replicas: list[np.ndarray] = []
        self.leaders: list[np.ndarray] = []

    def add(self, topics: list[Topic], chosen: list[Topic]) -> None:
        taken = {t.name for t in chosen}
        rest = [t for t in topics if t.name not in taken] if taken else topics
        if rest:
            replicas, leaders = target_ids([targets_of(t) for t in rest])
            self.replicas.append(replicas)
            self.leaders.append(leaders)

    def counts(self) -> OtherCounts:
        return OtherCounts.of_ids(_joined(self.replicas), _joined(self.leaders))


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


@dataclass(slots=True)
class SplitTopics:
    """Selected topics of one chunk, in name order, as the plan needs them: their specs (the RF override
    applied) and their current replicas, in numpy arrays (pickled as raw buffers: cheap to cache).

    `flat` holds every replica id, topic after topic, partition after partition (in the topic's own
    order). When every topic is regular (partitions 0..P-1, `widths[i]` replicas each) that is all;
    otherwise `pids` and `lens` give each partition's id and replica count."""

    names: list[str]
    counts: np.ndarray  # partitions per topic
    rfs: np.ndarray  # replication factor of the plan per topic
    widths: np.ndarray  # current replicas per partition when regular, else -1
    flat: np.ndarray
    pids: np.ndarray | None = None
    lens: np.ndarray | None = None
    # The replicas being removed (RR) of topics in the middle of a reassignment: a whole-cluster strategy
    # plans from the targets (RS minus RR). None when no topic has any.
    removing: dict[str, dict[int, list[int]]] | None = None
    # Each partition's size (in `flat`'s order, -1 unknown) when any is known: the balancer prefers the
    # smaller partitions with them, so the plan is the one the local engine makes. None: no size known.
    sizes: np.ndarray | None = None

    @classmethod
    def of(cls, chosen: Sequence[Topic], specs: Sequence[plan.TopicSpec]) -> SplitTopics:
        views = [t.replicas for t in chosen]
        blocks = [v.regular_block() if isinstance(v, TopicReplicas) else None for v in views]
        counts = np.array([s.n_partitions for s in specs], dtype=np.int32)
        rfs = np.array([s.replication_factor for s in specs], dtype=np.int32)
        names = [s.name for s in specs]
        removing = {t.name: t.removing for t in chosen if t.removing} or None
        if all(b is not None for b in blocks):
            widths = np.array([b.shape[1] for b in blocks if b is not None], dtype=np.int32)
            flat = np.concatenate([b.ravel() for b in blocks if b is not None])
            return cls(names, counts, rfs, widths, flat, removing=removing, sizes=_sizes(chosen))
        rows = [list(v.items()) for v in views]
        pids = np.array([p for r in rows for p, _ in r], dtype=np.int64)
        lens = np.array([len(reps) for r in rows for _, reps in r], dtype=np.int32)
        flat = int_array([b for r in rows for _, reps in r for b in reps])
        widths = np.full(len(names), -1, dtype=np.int32)
        return cls(names, counts, rfs, widths, flat, pids, lens, removing, _sizes(chosen))

    def topics(self, store: ReplicaStore | None = None, base: int = 0) -> dict[str, Topic]:
        """The topics as the balancer reads them: current replicas and RR (see `current`)."""
        removing, none = self.removing or {}, NO_ENTRIES  # no dicts of its own per topic (a million topics)
        sizes = self._size_maps()
        return {
            name: Topic(name, view, none, removing.get(name) or none, none, none, sizes=sizes.get(name, none))
            for name, view in self.current(store, base).items()
        }

    def _size_maps(self) -> dict[str, dict[int, int]]:
        """Each topic's known partition sizes (none known: no dict at all)."""
        if self.sizes is None:
            return {}
        counts = self.counts.tolist()
        pids = self.pids.tolist() if self.pids is not None else None
        sizes = self.sizes.tolist()
        out: dict[str, dict[int, int]] = {}
        first = 0
        for name, n in zip(self.names, counts, strict=True):
            ps = range(n) if pids is None else pids[first : first + n]
            out[name] = {p: s for p, s in zip(ps, sizes[first : first + n], strict=True) if s >= 0}
            first += n
        return out

    def current(self, store: ReplicaStore | None = None, base: int = 0) -> dict[str, TopicReplicas]:
        """Each topic's current replicas, a view over `flat`, or over `store` where `flat` starts at
        `base` (many batches joined: see join_topics)."""
        store = ReplicaStore.of(self.flat) if store is None else store
        counts, widths = self.counts.tolist(), self.widths.tolist()
        if self.pids is None or self.lens is None:
            starts = np.full(len(counts), base, dtype=np.int64)
            np.cumsum((self.counts.astype(np.int64) * self.widths)[:-1], out=starts[1:])
            starts[1:] += base
            views = map(TopicReplicas, [store] * len(counts), starts.tolist(), counts, widths)
            return dict(zip(self.names, views, strict=True))
        out: dict[str, TopicReplicas] = {}
        pids, lens = self.pids.tolist(), self.lens.tolist()
        first, start = 0, base
        for name, n in zip(self.names, counts, strict=True):
            ls = lens[first : first + n]
            out[name] = TopicReplicas.from_rows(store, start, pids[first : first + n], ls)
            start += sum(ls)
            first += n
        return out

    def specs(self) -> list[plan.TopicSpec]:
        return list(map(plan.TopicSpec, self.names, self.counts.tolist(), self.rfs.tolist()))


def _sizes(chosen: Sequence[Topic]) -> np.ndarray | None:
    """Each partition's size, topic after topic in the replicas' own order (-1 unknown); None when no
    size is known."""
    if not any(t.sizes for t in chosen):
        return None
    return np.array([t.sizes.get(p, -1) for t in chosen for p in t.replicas], dtype=np.int64)


def join_topics(batches: Iterable[SplitTopics]) -> tuple[dict[str, Topic], list[plan.TopicSpec]]:
    """Many splits' packed topics (in name order) as topics over ONE store, and their specs: the
    balancer then reads runs of regular topics with one numpy call, as it reads a loaded snapshot."""
    store = ReplicaStore()
    kept = [(batch, store.append(batch.flat)) for batch in batches]
    store.finish()
    topics: dict[str, Topic] = {}
    specs: list[plan.TopicSpec] = []
    for batch, base in kept:
        topics.update(batch.topics(store, base))
        specs += batch.specs()
    return topics, specs


def current_split(batches: Iterable[SplitTopics], plan_partitions: int = PLAN_PARTITIONS) -> Iterator[str]:
    """The current document's entries of one split's cached topics, in slices of about plan_partitions
    Kafka partitions (for a plan made elsewhere: the balanced strategy's, on the driver)."""
    current: dict[str, TopicReplicas] = {}
    for batch in batches:
        current.update(batch.current())
        if sum(map(len, current.values())) >= plan_partitions:
            yield format_partition_entries(current)
            current = {}
    if current:
        yield format_partition_entries(current)


@dataclass(slots=True)
class SplitPlan:
    """A batch of pass 2: comma-joined entries of the current and the proposed documents, and statistics."""

    current: str
    proposed: str
    stats: plan.PlanStats | None


def plan_split(
    batches: Iterable[SplitTopics],
    sel: Selection,
    seed: int,
    stats: bool,
    plan_partitions: int = PLAN_PARTITIONS,
) -> Iterator[SplitPlan]:
    """Pass 2 over one split's cached topics, once pass 1 found nothing wrong anywhere (see the module's
    doc), in batches of about plan_partitions Kafka partitions."""
    specs: list[plan.TopicSpec] = []
    current: dict[str, TopicReplicas] = {}
    for batch in batches:
        specs += batch.specs()
        current.update(batch.current())
        if sum(map(len, current.values())) >= plan_partitions:
            yield _plan_batch(specs, current, sel, seed, stats)
            specs, current = [], {}
    if specs:
        yield _plan_batch(specs, current, sel, seed, stats)


def _plan_batch(
    specs: list[plan.TopicSpec], current: dict[str, TopicReplicas], sel: Selection, seed: int, stats: bool
) -> SplitPlan:
    proposed = plan.assign_topics(specs, sel.brokers, seed)
    st = plan.plan_stats(current, proposed) if stats else None
    return SplitPlan(format_partition_entries(current), format_partition_entries(proposed), st)


# ---------------------------------------------------------------------------------------------
# The driver's side: the splits' answers combined, in split order
# ---------------------------------------------------------------------------------------------


def first_line_error(scans: Sequence[SplitScan]) -> InvalidInputError | None:
    """The first bad line of the file (a line's own problem, or the order where two splits meet), with
    its line number in the whole file (the header is line 1)."""
    before = 0  # lines in the splits before this one
    last = None  # the last topic before this split
    for s in sorted(scans, key=lambda s: s.index):
        if s.first is not None:
            problem = snapshot_lines.order_problem(s.first[1], last)
            if problem is not None:
                return snapshot_lines.line_error(before + s.first[0] + 1, problem)
        if s.error is not None:
            return snapshot_lines.line_error(before + s.error[0] + 1, s.error[1])
        before += s.lines
        last = s.last if s.last is not None else last
    return None


def first_plan_error(scans: Sequence[SplitScan], sel: Selection) -> ReassignError | None:
    """The error plan.topic_specs and then plan.check_specs raise for the same topics, or None."""
    ordered = sorted(scans, key=lambda s: s.index)
    if sel.names is not None:
        found = np.zeros(len(sel.names), dtype=bool)
        for s in ordered:
            found[s.found] = True
        if not found.all():
            return plan.missing_topics_error([sel.names[i] for i in np.flatnonzero(~found).tolist()])
    deleting = [name for s in ordered for name in s.deleting]
    if deleting:
        return plan.deleting_topics_error(deleting)
    empty = next((s.empty for s in ordered if s.empty is not None), None)
    if empty is not None:
        return plan.no_partitions_error(empty)
    mixed = next((s.mixed for s in ordered if s.mixed is not None), None)
    if mixed is not None:
        return InvalidInputError(mixed)
    invalid = next((s.invalid for s in ordered if s.invalid is not None), None)
    if invalid is not None:
        cls = getattr(errors, invalid[0], None)
        if not (isinstance(cls, type) and issubclass(cls, ReassignError)):
            cls = ReassignError
        return cls(invalid[1], hint=invalid[2])
    if any(s.topics for s in ordered):
        try:
            plan.check_racks(sel.brokers)
        except ReassignError as e:
            return e
    return None
