"""Planning for `generate`: broker selection, per-topic specs, seeded draws, the proposed assignment. Pure.

Randomness. Kafka draws a start index and a replica shift per topic from one unseeded `Random`. We draw
both from a keyed hash of (seed, topic), so a topic's plan depends only on (seed, topic, brokers,
partition count, RF), never on processing order or batching (local and Spark engines agree byte for
byte). With M = 2**64 and all arithmetic mod M:

    fnv   = FNV-1a 64 over the topic's UTF-8 bytes:
            h = 0xcbf29ce484222325; for each byte c: h = (h ^ c) * 0x100000001b3
    mix   = splitmix64's finaliser:
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9; z = (z ^ (z >> 27)) * 0x94d049bb133111eb; z ^ (z >> 31)
    key   = mix((seed mod M) + G)                with G = 0x9e3779b97f4a7c15
    a     = mix(fnv ^ key)
    b     = mix(a + G)
    draw(x, n) = ((x >> 32) * n) >> 32           (Lemire's multiply-shift; bias below n / 2**32)
    start = draw(a, n), shift = draw(b, n)       n = number of selected brokers

`topic_draws` is the scalar definition, `topic_draws_many` the numpy one (same results, tested), and
`TopicRng(seed, topic)` hands the two draws out through `randrange`, so
`assign_replicas(brokers, P, RF, rng=TopicRng(seed, t))` is exactly the plan's topic t.
"""

from __future__ import annotations

import itertools
import secrets
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from reassign_cli.core.model import Assignment, Broker, ClusterState, Topic, duplicates
from reassign_cli.core.names import listed
from reassign_cli.core.replicas import TopicReplicas, stack
from reassign_cli.errors import AdminOperationError, InvalidInputError, InvalidReplicationFactorError
from reassign_cli.planning.assign import MIXED_RACKS_MESSAGE, assign_many, check_arguments

__all__ = [
    "GenerateRequest",
    "GenerateResult",
    "PlanStats",
    "TopicRng",
    "TopicSpec",
    "assign_topics",
    "check_racks",
    "check_spec",
    "check_specs",
    "chunked",
    "deleting_topics_error",
    "generate_plan",
    "missing_topics_error",
    "no_partitions_error",
    "plan_stats",
    "random_seed",
    "select_brokers",
    "spec_problems",
    "topic_draws",
    "topic_draws_many",
    "topic_specs",
]

MASK = (1 << 64) - 1
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB

NOT_ALL_RACKS_MESSAGE = (
    "Not all brokers have rack information. Add --disable-rack-aware in command line to make replica "
    "assignment without rack information."
)


# ---------------------------------------------------------------------------------------------
# Draws
# ---------------------------------------------------------------------------------------------


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * MIX1) & MASK
    z = ((z ^ (z >> 27)) * MIX2) & MASK
    return z ^ (z >> 31)


def _fnv1a(data: bytes) -> int:
    h = FNV_OFFSET
    for c in data:
        h = ((h ^ c) * FNV_PRIME) & MASK
    return h


def _draw(x: int, n: int) -> int:
    return ((x >> 32) * n) >> 32


def _topic_words(seed: int, topic: str) -> tuple[int, int]:
    key = _mix(((seed & MASK) + GOLDEN) & MASK)
    a = _mix(_fnv1a(topic.encode("utf-8")) ^ key)
    return a, _mix((a + GOLDEN) & MASK)


def topic_draws(seed: int, topic: str, n: int) -> tuple[int, int]:
    """(start index, replica shift) for `topic`, each in [0, n): Kafka's two draws, from the keyed hash."""
    if n <= 0:
        raise ValueError("n must be positive")
    a, b = _topic_words(seed, topic)
    return _draw(a, n), _draw(b, n)


class TopicRng:
    """A `randrange`-only stand-in for Kafka's Random: the first call returns the start draw, the second
    the shift draw (for the n passed to each call). Later calls continue the splitmix64 sequence."""

    __slots__ = ("_last", "_pending")

    def __init__(self, seed: int, topic: str) -> None:
        a, b = _topic_words(seed, topic)
        self._pending = [a, b]
        self._last = b

    def randrange(self, n: int, /) -> int:
        if n <= 0:
            raise ValueError("empty range for randrange()")
        if self._pending:
            x = self._pending.pop(0)
        else:
            x = self._last = _mix((self._last + GOLDEN) & MASK)
        return _draw(x, n)


def _mix_np(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
    return z ^ (z >> np.uint64(31))


def _fnv1a_many(names: Sequence[str]) -> np.ndarray:
    """FNV-1a 64 of each name's UTF-8 bytes, column by column over names grouped by byte length."""
    enc = [t.encode("utf-8") for t in names]
    lens = np.fromiter(map(len, enc), dtype=np.int64, count=len(enc))
    out = np.empty(len(enc), dtype=np.uint64)
    prime = np.uint64(FNV_PRIME)
    for length in np.unique(lens).tolist():
        idx = np.flatnonzero(lens == length)
        h = np.full(len(idx), FNV_OFFSET, dtype=np.uint64)
        if length:
            data = np.frombuffer(b"".join([enc[i] for i in idx.tolist()]), dtype=np.uint8)
            cols = data.reshape(len(idx), length).astype(np.uint64)
            for j in range(length):
                h ^= cols[:, j]
                h *= prime
        out[idx] = h
    return out


def topic_draws_many(seed: int, topics: Sequence[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """`topic_draws` for many topics at once: (starts, shifts) as int64 arrays."""
    if n <= 0:
        raise ValueError("n must be positive")
    with np.errstate(over="ignore"):
        key = np.uint64(_mix(((seed & MASK) + GOLDEN) & MASK))
        a = _mix_np(_fnv1a_many(topics) ^ key)
        b = _mix_np(a + np.uint64(GOLDEN))
        nn = np.uint64(n)
        starts = ((a >> np.uint64(32)) * nn) >> np.uint64(32)
        shifts = ((b >> np.uint64(32)) * nn) >> np.uint64(32)
    return starts.astype(np.int64), shifts.astype(np.int64)


def random_seed() -> int:
    """A fresh seed when the user gave none (printed and recorded by the CLI so the plan can be redone)."""
    return secrets.randbelow(1 << 31)


# ---------------------------------------------------------------------------------------------
# Inputs: brokers and topic specs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    n_partitions: int
    replication_factor: int


def select_brokers(
    state: ClusterState, broker_list: Sequence[int] | None, rack_aware: bool
) -> tuple[list[Broker], list[str]]:
    """Kafka's getBrokerMetadatas: registered brokers sorted by id, kept if in `broker_list` (when
    given), racks dropped when not `rack_aware`. Unregistered ids in `broker_list` become a warning
    (Kafka drops them silently); duplicates, and mixed rack information when rack-aware, are errors."""
    registered = sorted(state.brokers, key=lambda b: b.id)
    warnings: list[str] = []
    if broker_list is not None:
        dups = duplicates(broker_list)
        if dups:
            raise InvalidInputError(listed("Broker list contains duplicate entries: {}", dups))
        wanted = set(broker_list)
        known = {b.id for b in registered}
        missing = [b for b in broker_list if b not in known]
        if missing:
            warnings.append(
                listed(
                    f"Broker{'s' if len(missing) > 1 else ''} {{}} in --broker-list "
                    f"{'are' if len(missing) > 1 else 'is'} not registered and will not be used",
                    missing,
                )
            )
        registered = [b for b in registered if b.id in wanted]
    if not rack_aware:
        return [b if b.rack is None else Broker(b.id, None) for b in registered], warnings
    with_rack = sum(1 for b in registered if b.rack is not None)
    if 0 < with_rack < len(registered):
        raise AdminOperationError(NOT_ALL_RACKS_MESSAGE)
    return registered, warnings


def topic_specs(state: ClusterState, topics: Iterable[str]) -> list[TopicSpec]:
    """Partition count and RF of each topic from its current assignment, sorted by name. During a
    running reassignment the RF is that of the target replicas (RS minus RR), not of the inflated RS."""
    names = list(dict.fromkeys(sorted(topics)))
    get = state.topics.get
    chosen = [get(t) for t in names]
    missing = [t for t, topic in zip(names, chosen, strict=True) if topic is None]
    if missing:
        raise missing_topics_error(missing)
    deleting = [t for t in names if t in state.deleting] if state.deleting else []
    if deleting:
        raise deleting_topics_error(deleting)
    if not names:
        return []
    return _specs_of([t for t in chosen if t is not None])


def missing_topics_error(missing: Sequence[str]) -> InvalidInputError:
    """The error for selected topics that do not exist (names sorted)."""
    if len(missing) == 1:
        return InvalidInputError(f"Topic {missing[0]} not found.")
    return InvalidInputError(listed("Topics not found: {}", missing))


def deleting_topics_error(deleting: Sequence[str]) -> InvalidInputError:
    """The error for selected topics queued for deletion (names sorted)."""
    return InvalidInputError(
        listed(f"Topic{'s' if len(deleting) > 1 else ''} queued for deletion: {{}}", deleting)
    )


def no_partitions_error(name: str) -> InvalidInputError:
    return InvalidInputError(f"Topic {name} has no partitions")


def _specs_of(chosen: list[Topic]) -> list[TopicSpec]:
    specs, empty, mixed = spec_problems(chosen)
    if empty is not None:
        raise no_partitions_error(empty)
    if mixed is not None:
        raise mixed
    return specs


def spec_problems(chosen: Sequence[Topic]) -> tuple[list[TopicSpec], str | None, InvalidInputError | None]:
    """The specs of the topics (in order) that have partitions and one replication factor; the name of
    the first topic without partitions; the error for the first topic with mixed replication factors.
    topic_specs raises the second, else the third; a caller that sees the topics in pieces (Spark
    executors) combines the pieces' first problems in the same order."""
    empty = next((t.name for t in chosen if not t.replicas), None)
    full = [t for t in chosen if t.replicas] if empty is not None else list(chosen)
    if not full:
        return [], empty, None
    counts = [len(t.replicas) for t in full]
    lo, hi = _rf_bounds(full)
    mixed = None
    if lo != hi:
        t = next(t for t, a, b in zip(full, lo, hi, strict=True) if a != b)
        if t.removing:
            found = sorted({len(t.target(p)) for p in t.replicas})
        else:
            found = sorted(set(map(len, t.replicas.values())))
        mixed = InvalidInputError(
            f"Topic {t.name} has partitions with different replication factors "
            f"({','.join(map(str, found))}); generate needs one replication factor per topic"
        )
    rows = zip(full, counts, lo, hi, strict=True)
    return [TopicSpec(t.name, c, r) for t, c, r, h in rows if r == h], empty, mixed


def _rf_bounds(chosen: list[Topic]) -> tuple[list[int], list[int]]:
    """The smallest and largest replica count of each topic's partitions (of its target replicas, RS
    minus RR, when it is being reassigned)."""
    # A regular TopicReplicas knows its one count; the others are measured below.
    lo = [t.replicas.rf if isinstance(t.replicas, TopicReplicas) and not t.removing else -1 for t in chosen]
    hi = list(lo)
    rest = [i for i, r in enumerate(lo) if r < 0]
    # Replica-list lengths of every partition of every other topic in one C-level pass, then each
    # topic's min and max with reduceat: RF per topic, and mixed RFs found without a Python loop.
    others = [chosen[i] for i in rest]
    counts = np.fromiter((len(t.replicas) for t in others), dtype=np.int64, count=len(others))
    lens = np.fromiter(
        map(len, itertools.chain.from_iterable(t.replicas.values() for t in others)),
        dtype=np.int64,
        count=int(counts.sum()),
    )
    if rest:
        offsets = np.zeros(len(others), dtype=np.int64)
        np.cumsum(counts[:-1], out=offsets[1:])
        mins, maxs = np.minimum.reduceat(lens, offsets).tolist(), np.maximum.reduceat(lens, offsets).tolist()
        for i, a, b in zip(rest, mins, maxs, strict=True):
            lo[i], hi[i] = a, b
    for i in [i for i, t in enumerate(chosen) if t.removing]:
        t = chosen[i]  # RF of the target replicas (RS minus RR), not of the inflated RS
        target = [len(t.target(p)) for p in t.replicas]
        lo[i], hi[i] = min(target), max(target)
    return lo, hi


# ---------------------------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------------------------


def _pairs(brokers: Sequence[Broker] | Sequence[tuple[int, str | None]]) -> list[tuple[int, str | None]]:
    return [(b.id, b.rack) if isinstance(b, Broker) else (int(b[0]), b[1]) for b in brokers]


def check_specs(
    specs: Sequence[TopicSpec], brokers: Sequence[Broker] | Sequence[tuple[int, str | None]]
) -> None:
    """Kafka's argument checks for every topic (RF against the brokers, mixed racks): the errors
    `assign_topics` would raise, before any of the plan is computed or written."""
    pairs = _pairs(brokers)
    for s in specs:
        check_spec(s, len(pairs))
    if specs:
        check_racks(pairs)


def check_spec(s: TopicSpec, n_brokers: int) -> None:
    """Kafka's argument checks for one topic, its name in the hint."""
    try:
        check_arguments(n_brokers, s.n_partitions, s.replication_factor)
    except InvalidReplicationFactorError as e:
        raise type(e)(str(e), hint=f"topic {s.name} has replication factor {s.replication_factor}") from None


def check_racks(brokers: Sequence[Broker] | Sequence[tuple[int, str | None]]) -> None:
    """Kafka's rack-aware assignment needs a rack on every broker or on none."""
    pairs = _pairs(brokers)
    if any(r is not None for _, r in pairs) and any(r is None for _, r in pairs):
        raise AdminOperationError(MIXED_RACKS_MESSAGE)


def assign_topics(
    specs: Sequence[TopicSpec], brokers: Sequence[Broker] | Sequence[tuple[int, str | None]], seed: int
) -> Assignment:
    """Kafka's assignment for every topic of `specs` over `brokers` (in the given order, as
    `select_brokers` returns them), with the (seed, topic) draws. Result in the order of `specs`.
    Topics sharing (partition count, RF) are computed together by the numpy kernel."""
    if not specs:
        return {}
    check_specs(specs, brokers)
    pairs = _pairs(brokers)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, s in enumerate(specs):
        groups.setdefault((s.n_partitions, s.replication_factor), []).append(i)
    names = [s.name for s in specs]
    starts, shifts = topic_draws_many(seed, names, len(pairs))
    rows: list[dict[int, list[int]] | None] = [None] * len(specs)
    for (n_partitions, rf), members in groups.items():
        idx = np.array(members, dtype=np.int64)
        arr = assign_many(pairs, n_partitions, rf, starts[idx], shifts[idx])
        for i, per_topic in zip(members, arr.tolist(), strict=True):
            rows[i] = dict(enumerate(per_topic))
    return dict(zip(names, rows, strict=True))  # type: ignore[arg-type]


def chunked(specs: Sequence[TopicSpec], max_partitions: int) -> Iterator[list[TopicSpec]]:
    """Consecutive runs of `specs` of at most `max_partitions` partitions each (a bigger topic alone)."""
    run: list[TopicSpec] = []
    size = 0
    for s in specs:
        if run and size + s.n_partitions > max_partitions:
            yield run
            run, size = [], 0
        run.append(s)
        size += s.n_partitions
    if run:
        yield run


# ---------------------------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class GenerateRequest:
    topics: list[str]
    broker_list: list[int] | None = None  # None: every registered broker
    rack_aware: bool = True
    seed: int | None = None  # None: a fresh random seed (reported in the result)


@dataclass(slots=True)
class GenerateResult:
    current: AssignmentLike  # each topic's replicas exactly as in its znode
    proposed: Assignment
    seed: int
    brokers: list[Broker]
    warnings: list[str] = field(default_factory=list)
    specs: list[TopicSpec] = field(default_factory=list)


def generate_plan(state: ClusterState, request: GenerateRequest) -> GenerateResult:
    """Kafka's --generate as one value: for each topic a fresh assignment over the selected brokers.
    (The CLI streams the same plan chunk by chunk: reassign_cli.ops.generate.)"""
    brokers, warnings = select_brokers(state, request.broker_list, request.rack_aware)
    specs = topic_specs(state, request.topics)
    seed = random_seed() if request.seed is None else request.seed
    proposed = assign_topics(specs, brokers, seed)
    topics = state.topics
    current: AssignmentLike = {s.name: topics[s.name].replicas for s in specs}
    return GenerateResult(current, proposed, seed, brokers, warnings, specs)


# ---------------------------------------------------------------------------------------------
# Statistics of a plan (the summary table and --format json's numbers)
# ---------------------------------------------------------------------------------------------

AssignmentLike = Mapping[str, Mapping[int, Sequence[int]]]


@dataclass(slots=True)
class PlanStats:
    partitions: int = 0
    partitions_changed: int = 0
    replicas_moved: int = 0  # replicas that must be created on a broker that does not hold them yet
    leaders_changed: int = 0  # partitions whose preferred leader (first replica) changes
    replicas_before: Counter[int] = field(default_factory=Counter)
    replicas_after: Counter[int] = field(default_factory=Counter)
    leaders_before: Counter[int] = field(default_factory=Counter)
    leaders_after: Counter[int] = field(default_factory=Counter)

    def add(self, other: PlanStats) -> None:
        """Fold in the statistics of another part of the same plan (disjoint partitions)."""
        self.partitions += other.partitions
        self.partitions_changed += other.partitions_changed
        self.replicas_moved += other.replicas_moved
        self.leaders_changed += other.leaders_changed
        self.replicas_before.update(other.replicas_before)
        self.replicas_after.update(other.replicas_after)
        self.leaders_before.update(other.leaders_before)
        self.leaders_after.update(other.leaders_after)


def _rows(
    current: AssignmentLike, proposed: AssignmentLike
) -> tuple[list[Sequence[int]], list[Sequence[int]]]:
    """Old and new replica lists, aligned partition by partition over the proposal."""
    old_rows: list[Sequence[int]] = []
    new_rows: list[Sequence[int]] = []
    for topic, new_parts in proposed.items():
        old_parts = current.get(topic, {})
        if old_parts.keys() == new_parts.keys() and list(old_parts) == list(new_parts):
            old_rows.extend(old_parts.values())
        else:
            old_rows.extend([old_parts.get(p, ()) for p in new_parts])
        new_rows.extend(new_parts.values())
    return old_rows, new_rows


BINCOUNT_MAX_ID = 1 << 20


def _count(flat: np.ndarray) -> Counter[int]:
    if flat.size == 0:
        return Counter()
    lo, hi = int(flat.min()), int(flat.max())
    if lo >= 0 and hi < BINCOUNT_MAX_ID:  # usual broker ids: counting by index beats sorting
        counts = np.bincount(flat, minlength=hi + 1)
        ids = np.flatnonzero(counts)
        counts = counts[ids]
    else:
        ids, counts = np.unique(flat, return_counts=True)
    return Counter(dict(zip(ids.tolist(), counts.tolist(), strict=True)))


def _flat(rows: list[Sequence[int]]) -> np.ndarray:
    total = sum(map(len, rows))
    return np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=total)


def _old_block(current: AssignmentLike, proposed: AssignmentLike) -> np.ndarray | None:
    """The old replicas of the proposal's partitions as one matrix, when the current assignment is regular
    replicas.TopicReplicas (a loaded snapshot) and each proposed topic has the same partitions 0..n-1."""
    olds = [current.get(t) for t in proposed]
    if not olds or not isinstance(olds[0], TopicReplicas):
        return None
    r: list[int] = []
    for old, new in zip(olds, proposed.values(), strict=True):
        if old is None or len(old) != len(new):
            return None
        if len(r) != len(new):
            r = list(range(len(new)))
        if list(new) != r:
            return None
    return stack(olds)  # type: ignore[arg-type]


def _new_block(proposed: AssignmentLike) -> np.ndarray | None:
    return stack(list(proposed.values())) if proposed else None


Rows = list[Sequence[int]]
Aligned = tuple[tuple[np.ndarray, np.ndarray] | None, np.ndarray | None, Rows, Rows]


def _aligned(current: AssignmentLike, proposed: AssignmentLike) -> Aligned:
    """The old and new replica lists of the proposal's partitions (in its order): as two int64 matrices
    when every old list has one length and every new list one (or None), and what they were made of
    (the old block, else the old rows; the new rows). Both sides regular views of stores (a snapshot, a
    balanced plan): straight from the stores, no Python lists in between."""
    old_block = _old_block(current, proposed)
    if old_block is not None and old_block.shape[1]:
        new_block = _new_block(proposed)
        if new_block is not None and new_block.shape[1]:
            return (old_block.astype(np.int64), new_block.astype(np.int64)), old_block, [], []
    if old_block is None:
        old_rows, new_rows = _rows(current, proposed)
    else:
        old_rows, new_rows = [], [r for parts in proposed.values() for r in parts.values()]
    old_lens = {old_block.shape[1]} if old_block is not None else set(map(len, old_rows))
    new_lens = set(map(len, new_rows))
    if not new_rows or len(old_lens) != 1 or len(new_lens) != 1 or 0 in old_lens or 0 in new_lens:
        return None, old_block, old_rows, new_rows
    n = len(new_rows)
    o = _flat(old_rows).reshape(n, old_lens.pop()) if old_block is None else old_block.astype(np.int64)
    return (o, _flat(new_rows).reshape(n, new_lens.pop())), old_block, old_rows, new_rows


def row_matrices(current: AssignmentLike, proposed: AssignmentLike) -> tuple[np.ndarray, np.ndarray] | None:
    """The old and new replica lists of the proposal's partitions (in its order) as two int64 matrices,
    one row per partition; None when the old or the new lists differ in length (or any is empty)."""
    return _aligned(current, proposed)[0]


def plan_stats(current: AssignmentLike, proposed: AssignmentLike) -> PlanStats:
    """Per-broker replica and preferred-leader counts before and after, and how much would move.
    Vectorized (numpy) when every partition has the same replica count before and after, as usual."""
    matrices, old_block, old_rows, new_rows = _aligned(current, proposed)
    if matrices is not None:
        st = PlanStats(partitions=len(matrices[1]))
        _matrix_stats(st, *matrices)
        return st
    st = PlanStats(partitions=len(new_rows))
    if not new_rows:
        return st
    if old_block is not None:
        old_rows = old_block.tolist()
    st.replicas_before = _count(_flat(old_rows))
    st.replicas_after = _count(_flat(new_rows))
    st.leaders_before.update(r[0] for r in old_rows if r)
    st.leaders_after.update(r[0] for r in new_rows if r)
    for old, new in zip(old_rows, new_rows, strict=True):
        if list(old) != list(new):
            st.partitions_changed += 1
            if not old or not new or old[0] != new[0]:
                st.leaders_changed += 1
            st.replicas_moved += len(set(new).difference(old))
    return st


def _matrix_stats(st: PlanStats, o: np.ndarray, m: np.ndarray) -> None:
    """The statistics of old rows `o` and new rows `m`, one partition per row (int64 matrices)."""
    st.replicas_before, st.replicas_after = _count(o.ravel()), _count(m.ravel())
    st.leaders_before, st.leaders_after = _count(o[:, 0]), _count(m[:, 0])
    changed = (o != m).any(axis=1) if o.shape == m.shape else np.ones(len(m), dtype=bool)
    st.partitions_changed = int(np.count_nonzero(changed))
    st.leaders_changed = int(np.count_nonzero(o[:, 0] != m[:, 0]))
    # a new replica "moves" when no old replica of its partition is on that broker
    st.replicas_moved = int((m[:, :, None] != o[:, None, :]).all(axis=2).sum())
