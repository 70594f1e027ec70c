"""The balanced strategy: the fewest copies to a balanced, rack-aware assignment. Pure (numpy).

B is the brokers given (as plan.select_brokers returns them: sorted by id, racks dropped when not
rack-aware). Counts are per broker of B over ALL topics: unselected topics count but never move; their
replicas off B are ignored. Each selected partition ends with RF distinct brokers of B spanning
min(RF, racks of B) racks (see docs/balanced.md for the whole contract). The work, in order:

1. targets: each broker's final replica count, by water-filling the selected replicas over B on top of the
   unselected ones (balance_targets), the extra unit of an uneven split going to the brokers that hold
   the most now, so that the fewest replicas move; with racks, each rack's share within what the rack
   rule allows first.
2. replica sets (balance_replicas): replicas off B dropped, RF decreases and rack repairs drop from the
   brokers most over their target, holes filled from the brokers most under it, then replicas moved from
   over-full to under-full brokers in rows where the move keeps the rack spread and the topic's cap
   (no broker above the larger of the topic's even share rounded up and the most one broker held of it
   before).
3. leaders (balance_leaders): the first replica of each row, balanced over B (all topics counted) and
   within each topic where the sets allow, the current leader kept unless it left or must move.

Deterministic: rows in (topic name, partition) order, brokers by id, ties broken by a generator seeded
with `seed` only; the dict order of the input never matters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, pairwise

import numpy as np

from reassign_cli.core.model import Assignment, Broker, Topic
from reassign_cli.core.replicas import ReplicaStore, TopicReplicas, stack
from reassign_cli.planning.balanced import leaders as balance_leaders
from reassign_cli.planning.balanced import replicas as balance_replicas
from reassign_cli.planning.balanced.state import PairCounts, Work, spans
from reassign_cli.planning.balanced.targets import Targets, fill, rack_bounds, rack_fill, rack_range
from reassign_cli.planning.plan import AssignmentLike, TopicSpec

__all__ = [
    "BalanceStats",
    "Balanced",
    "OtherCounts",
    "count_range",
    "lower_bound",
    "plan_balanced",
    "target_ids",
    "targets_of",
]


@dataclass(frozen=True, slots=True)
class BalanceStats:
    copies: int  # brokers added to replica sets: the replicas that cross the network
    lower_bound: int
    leader_changes: int  # partitions whose preferred leader changes
    replicas_spread: tuple[int, int]  # max - min of replicas per broker of B, all topics: before, after
    leaders_spread: tuple[int, int]  # the same for preferred leaders

    def as_dict(self) -> dict[str, int | float]:
        return {
            "copies": self.copies,
            "lower_bound": self.lower_bound,
            "copies_over_lower_bound": round(self.copies / self.lower_bound, 4) if self.lower_bound else 1.0,
            "leader_changes": self.leader_changes,
            "replicas_max_min_before": self.replicas_spread[0],
            "replicas_max_min_after": self.replicas_spread[1],
            "leaders_max_min_before": self.leaders_spread[0],
            "leaders_max_min_after": self.leaders_spread[1],
        }


@dataclass(frozen=True, slots=True)
class Balanced:
    """The plan: rows of broker ids (leader first) for every selected partition, in (topic, pid) order."""

    names: list[str]
    starts: np.ndarray  # (topics + 1,) first row of each topic
    pid: np.ndarray  # (P,) partition id of each row
    rows: np.ndarray  # (P, W) broker ids, -1 beyond the row's RF
    rf: np.ndarray  # (P,)
    stats: BalanceStats
    # (P,) bytes of each row, when the planner read them (--balance bytes): planning/balanced/disks.py
    # reads them from here rather than from every topic again
    size: np.ndarray | None = None

    def cut(self, n: int) -> list[Balanced]:
        """The plan in at most n pieces of whole topics, in order, of about equal partition counts: each a
        Balanced of its own (replica ids as int32 when they fit), to be formatted elsewhere (Spark)."""
        n_topics, total = len(self.names), int(self.starts[-1])
        if n_topics == 0 or n <= 0:
            return []
        marks = np.searchsorted(self.starts[:-1], np.arange(1, n, dtype=np.int64) * total // n)
        cuts = np.unique(np.concatenate([[0], marks, [n_topics]])).tolist()
        return [self._piece(a, b) for a, b in pairwise(cuts)]

    def _piece(self, first: int, last: int) -> Balanced:
        lo, hi = int(self.starts[first]), int(self.starts[last])
        rows, pid, rf = (_small(a[lo:hi]) for a in (self.rows, self.pid, self.rf))
        starts = self.starts[first : last + 1] - lo
        return Balanced(self.names[first:last], starts, pid, rows, rf, self.stats)

    def chunks(self, max_partitions: int) -> Iterator[AssignmentLike]:
        """The assignment, topics in name order, in pieces of about `max_partitions` partitions."""
        first = 0
        while first < len(self.names):
            last = first + 1
            while last < len(self.names) and self.starts[last + 1] - self.starts[first] <= max_partitions:
                last += 1
            yield self._assignment(first, last)
            first = last

    def _assignment(self, first: int, last: int) -> AssignmentLike:
        lo, hi = int(self.starts[first]), int(self.starts[last])
        rf = self.rf[lo:hi]
        sizes = np.diff(self.starts[first : last + 1])
        if len(rf) and (rf == rf[0]).all() and (sizes == sizes[0]).all():
            per, k = int(sizes[0]), int(rf[0])  # one partition count and RF, partitions 0..P-1
            if (self.pid[lo:hi].reshape(-1, per) == np.arange(per)).all():
                # Views over one store: the formatter reads them with one numpy call, no Python lists.
                store = ReplicaStore.of(np.ascontiguousarray(self.rows[lo:hi, :k]).ravel())
                return {
                    name: TopicReplicas(store, i * per * k, per, k)
                    for i, name in enumerate(self.names[first:last])
                }
        if len(rf) and (rf == rf[0]).all():
            reps = self.rows[lo:hi, : int(rf[0])].tolist()
        else:
            reps = [row[:k] for row, k in zip(self.rows[lo:hi].tolist(), rf.tolist(), strict=True)]
        pids = self.pid[lo:hi].tolist()
        bounds = (self.starts[first : last + 1] - lo).tolist()
        out: Assignment = {}
        for i, name in enumerate(self.names[first:last]):
            a, b = bounds[i], bounds[i + 1]
            out[name] = dict(zip(pids[a:b], reps[a:b], strict=True))
        return out


def _small(a: np.ndarray) -> np.ndarray:
    """`a` as int32 when its values fit (Kafka's ids are int32): half the bytes to ship."""
    if a.size and int(a.min()) >= -(1 << 31) and int(a.max()) < 1 << 31:
        return a.astype(np.int32)
    return a


# ---------------------------------------------------------------------------------------------
# The problem, read from the cluster state
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Problem:
    ids: np.ndarray  # (n,) broker ids of B, sorted
    rack: np.ndarray  # (n,) rack index
    n_racks: int
    names: list[str]
    starts: np.ndarray
    tix: np.ndarray  # (P,)
    pid: np.ndarray  # (P,)
    rf: np.ndarray  # (P,) target RF
    old: np.ndarray  # (P, W0) current replicas as broker indices, -1 off B (or empty)
    old_len: np.ndarray  # (P,) current replica count, off-B included
    stride: int  # key stride of (topic, broker) pairs: brokers of B, then every other id seen
    pair_keys: np.ndarray  # topic * stride + broker for every current replica (off B included)
    fixed: np.ndarray  # (n,) replicas of unselected topics per broker
    fixed_leaders: np.ndarray  # (n,) preferred leaders of unselected topics per broker
    before: np.ndarray  # (n,) replicas per broker now, all topics
    targets: Targets


def targets_of(topic: Topic) -> Mapping[int, Sequence[int]]:
    """The replicas a partition will have once a running reassignment ends (RS minus RR)."""
    if not topic.removing:
        return topic.replicas
    return {p: topic.target(p) for p in topic.replicas}


def _flatten(maps: list[Mapping[int, Sequence[int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(partition ids, replica counts, replica ids flattened), in the given order."""
    block = stack(maps)  # regular topics of one store (a loaded snapshot): numpy slices, no Python ints
    if block is not None:
        per = np.array([len(m) for m in maps], dtype=np.int64)
        first = np.repeat(np.cumsum(per) - per, per)
        pids = np.arange(len(block), dtype=np.int64) - first
        lens = np.full(len(block), block.shape[1], dtype=np.int64)
        return pids, lens, block.ravel().astype(np.int64)
    n_parts = sum(map(len, maps))
    pids = np.fromiter(chain.from_iterable(m.keys() for m in maps), dtype=np.int64, count=n_parts)
    lens = np.fromiter(map(len, chain.from_iterable(m.values() for m in maps)), dtype=np.int64, count=n_parts)
    flat = np.fromiter(
        chain.from_iterable(chain.from_iterable(m.values() for m in maps)),
        dtype=np.int64,
        count=int(lens.sum()),
    )
    return pids, lens, flat


def _index(ids: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Position of each id in the sorted `ids`, -1 when absent."""
    if len(ids) == 0:
        return np.full(len(flat), -1, dtype=np.int64)
    top = int(ids[-1])
    if int(ids[0]) >= 0 and top < 1 << 22:  # usual broker ids: a lookup table beats a binary search
        table = np.full(top + 2, -1, dtype=np.int64)
        table[ids] = np.arange(len(ids))
        return table[np.where((flat >= 0) & (flat <= top), flat, top + 1)]
    pos = np.searchsorted(ids, flat)
    pos[pos == len(ids)] = 0
    return np.where(ids[pos] == flat, pos, -1)


def _fixed_counts(
    topics: Mapping[str, Topic], selected: set[str], ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Replicas and preferred leaders of the unselected topics on each broker of B."""
    n = len(ids)
    maps = [targets_of(t) for name, t in topics.items() if name not in selected]
    _, lens, flat = _flatten(maps)
    idx = _index(ids, flat)
    replicas = np.bincount(idx[idx >= 0], minlength=n)
    firsts = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1], out=firsts[1:])
    lead = idx[firsts[lens > 0]]
    return replicas, np.bincount(lead[lead >= 0], minlength=n)


@dataclass(frozen=True, slots=True)
class OtherCounts:
    """The unselected topics as the balancer sees them: replicas and preferred leaders per broker id
    (any id; those off B are ignored), each partition counted with its target replicas (RS minus RR).
    Counted where the topics are read (Spark executors, per split) and added up (`plus`)."""

    replicas: Mapping[int, int]
    leaders: Mapping[int, int]

    @classmethod
    def of(cls, maps: Sequence[Mapping[int, Sequence[int]]]) -> OtherCounts:
        """The counts of these partitions (each mapping: partition -> target replicas)."""
        return cls.of_ids(*target_ids(maps))

    @classmethod
    def of_ids(cls, replicas: np.ndarray, leaders: np.ndarray) -> OtherCounts:
        """The counts of these replica ids and preferred leader ids (see target_ids)."""
        return cls(_tally(replicas), _tally(leaders))

    def plus(self, other: OtherCounts) -> OtherCounts:
        return OtherCounts(_added(self.replicas, other.replicas), _added(self.leaders, other.leaders))

    def on(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(replicas, leaders) on each broker of the sorted `ids`."""
        return (
            np.array([self.replicas.get(b, 0) for b in ids.tolist()], dtype=np.int64),
            np.array([self.leaders.get(b, 0) for b in ids.tolist()], dtype=np.int64),
        )


def target_ids(maps: Sequence[Mapping[int, Sequence[int]]]) -> tuple[np.ndarray, np.ndarray]:
    """(every replica id, the first replica id of each non-empty partition) of these partitions."""
    _, lens, flat = _flatten(list(maps))
    firsts = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1], out=firsts[1:])
    return flat, flat[firsts[lens > 0]]


def _tally(ids: np.ndarray) -> dict[int, int]:
    values, counts = np.unique(ids, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist(), strict=True))


def _added(a: Mapping[int, int], b: Mapping[int, int]) -> dict[int, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def _racks(brokers: list[Broker]) -> tuple[np.ndarray, int]:
    """Rack index of each broker (racks in name order); no racks: one rack for all."""
    names = sorted({b.rack for b in brokers if b.rack is not None})
    if not names:
        return np.zeros(len(brokers), dtype=np.int64), 1
    where = {r: i for i, r in enumerate(names)}
    return np.array([where[b.rack] for b in brokers if b.rack is not None], dtype=np.int64), len(names)


def _rows(tix: np.ndarray, pids: np.ndarray, lens: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """The (P, W0) matrix of current replicas, rows sorted by (topic, partition id)."""
    n_rows = len(lens)
    width = int(lens.max()) if n_rows else 0
    if n_rows and width > 0 and int(lens.min()) == width:  # one RF everywhere, as usual: a reshape
        old = idx.reshape(n_rows, width)
    else:
        old = np.full((n_rows, max(width, 1)), -1, dtype=np.int64)
        starts = np.zeros(n_rows, dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        row = np.repeat(np.arange(n_rows), lens)
        old[row, np.arange(len(idx)) - np.repeat(starts, lens)] = idx
    key = (tix << 32) | pids
    if n_rows > 1 and not (key[1:] > key[:-1]).all():
        order = np.argsort(key, kind="stable")
        old, pids, lens = old[order], pids[order], lens[order]
    return old, pids, lens


def _problem(
    topics: Mapping[str, Topic],
    brokers: Sequence[Broker],
    specs: Sequence[TopicSpec],
    others: OtherCounts | None = None,
) -> _Problem:
    bs = sorted(brokers, key=lambda b: b.id)
    ids = np.array([b.id for b in bs], dtype=np.int64)
    rack, n_racks = _racks(bs)
    ordered = sorted(specs, key=lambda s: s.name)
    names = [s.name for s in ordered]
    maps = [targets_of(topics[name]) for name in names]
    per_topic = np.array([len(m) for m in maps], dtype=np.int64)
    pids, lens, flat = _flatten(maps)
    tix = np.repeat(np.arange(len(names), dtype=np.int64), per_topic)
    idx = _index(ids, flat)
    outside = np.unique(flat[idx < 0])
    gid = np.where(idx >= 0, idx, len(ids) + np.searchsorted(outside, flat)) if len(outside) else idx
    stride = len(ids) + len(outside)
    pair_keys = np.repeat(tix, lens) * stride + gid
    old, pids, lens = _rows(tix, pids, lens, idx)
    rf = np.repeat(np.array([s.replication_factor for s in ordered], dtype=np.int64), per_topic)
    if others is None:
        fixed, fixed_leaders = _fixed_counts(topics, set(names), ids)
    else:
        fixed, fixed_leaders = others.on(ids)
    before = fixed + np.bincount(idx[idx >= 0], minlength=len(ids))
    starts = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(per_topic, out=starts[1:])
    targets = _replica_targets(fixed, before, rf, rack, n_racks)
    return _Problem(
        ids, rack, n_racks, names, starts, tix, pids, rf, old, lens, stride, pair_keys, fixed,
        fixed_leaders, before, targets,
    )  # fmt: skip


def _replica_targets(
    fixed: np.ndarray, before: np.ndarray, rf: np.ndarray, rack: np.ndarray, n_racks: int
) -> Targets:
    """Each broker's final count: at most one replica of a partition per broker; with racks, each
    rack's total within what the rack rule allows."""
    cap = np.full(len(fixed), len(rf), dtype=np.int64)
    total = int(rf.sum())
    if n_racks == 1:
        return fill(fixed, cap, total, before)
    values, counts = np.unique(rf, return_counts=True)
    bounds = rack_bounds(dict(zip(values.tolist(), counts.tolist(), strict=True)), np.bincount(rack))
    return rack_fill(fixed, cap, total, before, rack, bounds)


def replica_range(prob: _Problem) -> tuple[np.ndarray, np.ndarray]:
    """(n,) x 2: the least and the most replicas each broker ends with in any result `_replica_targets`
    may aim at, whichever way its ties (the counts now) go: the same for a plan and for its result."""
    cap = np.full(len(prob.fixed), len(prob.rf), dtype=np.int64)
    total = int(prob.rf.sum())
    if prob.n_racks == 1:
        t = fill(prob.fixed, cap, total, prob.fixed)
        return t.low, t.high
    values, counts = np.unique(prob.rf, return_counts=True)
    bounds = rack_bounds(dict(zip(values.tolist(), counts.tolist(), strict=True)), np.bincount(prob.rack))
    return rack_range(prob.fixed, cap, total, prob.rack, bounds)


def count_range(
    topics: Mapping[str, Topic], brokers: Sequence[Broker], specs: Sequence[TopicSpec]
) -> dict[int, tuple[int, int]]:
    """Per broker id of B: the least and most replicas it ends with in any result the balanced strategy
    may aim at (`replica_range`: what the rack rule forces). The autopilot's BrokerState.forced_counts
    (core/autopilot.py), so that it judges counts against the band the planner plans to."""
    prob = _problem(topics, brokers, specs)
    low, high = replica_range(prob)
    return {
        int(b): (int(lo), int(hi))
        for b, lo, hi in zip(prob.ids.tolist(), low.tolist(), high.tolist(), strict=True)
    }


def _dedup(old: np.ndarray) -> np.ndarray:
    """The current rows with repeated brokers (and brokers off B) blanked."""
    rep = old.copy()
    for j in range(1, rep.shape[1]):
        seen = (rep[:, :j] == rep[:, j : j + 1]).any(axis=1)
        rep[seen & (rep[:, j] >= 0), j] = -1
    return rep


def _caps(prob: _Problem, pairs: PairCounts, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(topics, racks) x 3: the most replicas of a topic one broker of a rack may hold (no concentration),
    from the tightest to the contract's, tried in that order (balance_replicas.phases):
    - share: the highest count of an even spread of the topic alone under the rack rule:
      ceil(RF x partitions / brokers) with no racks or equal racks, more on a small rack that the rule
      forces to hold a replica of every partition, less on a large one;
    - cap: the larger of the share and the most one broker held of it before beyond its own rack's share
      (leaving out what the rule forced keeps a replan from loosening the cap elsewhere);
    - loose: the cap, or ceil(RF x partitions / brokers) where that is more (a large rack's share is
      below it): what the counts may need with racks of unequal size. Not the most any broker held
      before, as point 4 would allow: that counts what the rack rule forced on a small rack, which a
      plan can create, so a replan would find a looser cap and move again (idempotence first)."""
    n_topics, n_racks = len(prob.names), prob.n_racks
    parts = np.diff(prob.starts)
    rf_of = prob.rf[prob.starts[:-1]] if n_topics else np.zeros(0, dtype=np.int64)
    share = np.zeros((n_topics, n_racks), dtype=np.int64)
    shapes = np.unique(np.column_stack([parts, rf_of]), axis=0) if n_topics else np.zeros((0, 2), int)
    for n_parts, rf in shapes.tolist():
        share[(parts == n_parts) & (rf_of == rf)] = _even_share(prob, n, n_parts, rf)
    keys = prob.pair_keys  # every current replica: its pair's count, against its rack's share
    counts = pairs.get(keys)
    if len(share) and int(share.min()) >= 1:  # a pair held once is within every share: look at the rest
        keys, counts = keys[counts > 1], counts[counts > 1]
    topic, broker = np.divmod(keys, prob.stride)
    on_b = broker < n
    own = np.where(on_b, share[topic, prob.rack[np.where(on_b, broker, 0)]], 0)
    beyond = counts > own
    held = np.zeros(n_topics, dtype=np.int64)
    np.maximum.at(held, topic[beyond], counts[beyond])
    cap = np.maximum(share, held[:, None])
    even = -(-(parts * rf_of) // max(n, 1))
    return share, cap, np.maximum(cap, even[:, None])


def _even_share(prob: _Problem, n: int, n_parts: int, rf: int) -> np.ndarray:
    """Per rack: the most replicas a broker holds in the most even spread of one topic of n_parts
    partitions and this RF (water-filling under the rack rule)."""
    zero = np.zeros(n, dtype=np.int64)
    cap = np.full(n, n_parts, dtype=np.int64)
    total = rf * n_parts
    if prob.n_racks == 1:
        return np.array([fill(zero, cap, total, zero).high.max()], dtype=np.int64)
    bounds = rack_bounds({rf: n_parts}, np.bincount(prob.rack, minlength=prob.n_racks))
    high = rack_fill(zero, cap, total, zero, prob.rack, bounds).high
    share = np.zeros(prob.n_racks, dtype=np.int64)
    np.maximum.at(share, prob.rack, high)
    return share


def _work(prob: _Problem, seed: int) -> Work:
    n = len(prob.ids)
    cur = _dedup(prob.old)
    width = max(int(prob.rf.max()) if len(prob.rf) else 1, cur.shape[1])
    rep = np.full((len(cur), width), -1, dtype=np.int64)
    rep[:, : cur.shape[1]] = cur
    moved = np.flatnonzero(prob.old_len != prob.rf)  # RF changes: kept replicas first, holes after
    part = cur[moved]
    rep[moved, : cur.shape[1]] = np.take_along_axis(part, np.argsort(part < 0, axis=1, kind="stable"), axis=1)
    count = prob.fixed + np.bincount(rep[rep >= 0], minlength=n)
    most = int(np.diff(prob.starts).max()) if len(prob.names) else 0
    pairs = PairCounts(prob.pair_keys, len(prob.names) * prob.stride, most)
    share, cap, loose = _caps(prob, pairs, n)
    return Work(
        n=n,
        rack=prob.rack,
        n_racks=prob.n_racks,
        tix=prob.tix,
        rf=prob.rf,
        rep=rep,
        count=count,
        target=prob.targets.target.copy(),
        pairs=pairs,
        stride=prob.stride,
        cap=cap,
        caps=(share, cap, loose),
        rng=np.random.Generator(np.random.PCG64(seed & ((1 << 64) - 1))),
    )


# ---------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------


def plan_balanced(
    topics: Mapping[str, Topic],
    brokers: Sequence[Broker],
    specs: Sequence[TopicSpec],
    seed: int,
    others: OtherCounts | None = None,
) -> Balanced:
    """The balanced assignment of the topics of `specs` (with their target RF) over `brokers`.
    `topics`: every topic of the cluster (unselected ones count towards the brokers' load), or, with
    `others` (the unselected topics' counts, made elsewhere), at least the selected ones.
    The caller has checked the specs against the brokers (plan.check_specs: RF <= brokers).
    When every selected partition's size is known (`Topic.sizes`), a second plan prefers the smaller
    partitions among moves of equal count; it is kept when it copies fewer bytes at the same copies and
    no wider replica or leader spread, else the plan without sizes is (never more bytes, same copies)."""
    prob = _problem(topics, brokers, specs, others)
    plain, before = _solve(prob, seed, None)
    size = row_sizes(prob, topics)
    if size is None:
        return plain
    small, after = _solve(prob, seed, size)
    a, b = small.stats, plain.stats
    keep = a.copies == b.copies and _bytes(prob, after, size) < _bytes(prob, before, size)
    keep &= a.replicas_spread[1] <= b.replicas_spread[1] and a.leaders_spread[1] <= b.leaders_spread[1]
    return small if keep else plain


def _solve(prob: _Problem, seed: int, size: np.ndarray | None) -> tuple[Balanced, np.ndarray]:
    """The plan and its rows as broker indices; with `size` (each row's bytes), the smaller partitions
    preferred among moves of equal count."""
    w = _work(prob, seed)
    w.size = size
    balance_replicas.trim(w, balance_replicas.rows_to_trim(w))
    balance_replicas.fill_holes(w)
    balance_replicas.move(w)
    lead = balance_leaders.choose_leaders(w, prob.fixed_leaders, prob.old[:, 0])
    ordered = _leader_first(w.rep, lead)
    stats = _stats(prob, w, ordered, lead)
    rows = np.where(ordered >= 0, prob.ids[np.maximum(ordered, 0)], -1)
    return Balanced(prob.names, prob.starts, prob.pid, rows, prob.rf, stats), ordered


def _bytes(prob: _Problem, ordered: np.ndarray, size: np.ndarray) -> int:
    """Bytes copied by the plan `ordered` (broker indices)."""
    fresh = (ordered[:, :, None] != prob.old[:, None, :]).all(axis=2) & (ordered >= 0)
    return int((fresh.sum(axis=1) * size).sum())


def row_sizes(prob: _Problem, topics: Mapping[str, Topic]) -> np.ndarray | None:
    """Each row's size when every selected partition's size is known, else None."""
    parts = [topics[name] for name in prob.names]
    if not all(len(t.sizes) >= len(t.replicas) for t in parts):  # most often: a topic with none, at once
        return None
    size = np.zeros(len(prob.pid), dtype=np.int64)
    for i, t in enumerate(parts):
        a, b = int(prob.starts[i]), int(prob.starts[i + 1])
        known = t.sizes
        got = [known.get(p, -1) for p in prob.pid[a:b].tolist()]
        if min(got, default=0) < 0:
            return None
        size[a:b] = got
    return size


def _leader_first(rep: np.ndarray, lead: np.ndarray) -> np.ndarray:
    """Each row with its leader first and the other replicas in their order (empty slots last)."""
    packed = np.take_along_axis(rep, np.argsort(rep < 0, axis=1, kind="stable"), axis=1)
    j = np.argmax(packed == lead[:, None], axis=1)
    width = packed.shape[1]
    others = packed[np.arange(width)[None, :] != j[:, None]].reshape(len(packed), width - 1)
    return np.column_stack([lead, others])


def _stats(prob: _Problem, w: Work, ordered: np.ndarray, lead: np.ndarray) -> BalanceStats:
    old = prob.old
    fresh = (ordered[:, :, None] != old[:, None, :]).all(axis=2) & (ordered >= 0)
    n = len(prob.ids)
    first = old[:, 0]
    led_before = prob.fixed_leaders + np.bincount(first[first >= 0], minlength=n)
    led_after = prob.fixed_leaders + np.bincount(lead, minlength=n)
    return BalanceStats(
        copies=int(fresh.sum()),
        lower_bound=_lower_bound(prob),
        leader_changes=int((first != lead).sum()),
        replicas_spread=(_spread(prob.before), _spread(w.count)),
        leaders_spread=(_spread(led_before), _spread(led_after)),
    )


def _spread(counts: np.ndarray) -> int:
    return int(counts.max() - counts.min()) if len(counts) else 0


def _lower_bound(prob: _Problem) -> int:
    """The larger of: (a) what brokers below their lowest balanced count must receive; (b) what must
    leave brokers above their highest balanced count, plus the slots each partition must gain (RF
    increases, replicas off B) net of RF decreases; (c) per partition, the slots it must gain or the
    racks it lacks, whichever is more."""
    before, t = prob.before, prob.targets
    cur = _dedup(prob.old)
    kept = (cur >= 0).sum(axis=1)
    racks = spans(np.append(prob.rack, -1)[cur])
    need = np.minimum(prob.rf, prob.n_racks)
    a = int(np.clip(t.low - before, 0, None).sum())
    b = int(np.clip(before - t.high, 0, None).sum() + (prob.rf - kept).sum())
    c = int(np.maximum(np.maximum(prob.rf - kept, need - racks), 0).sum())
    return max(a, b, c)


def lower_bound(topics: Mapping[str, Topic], brokers: Sequence[Broker], specs: Sequence[TopicSpec]) -> int:
    """The fewest copies any balanced plan needs (the contract's point 5; see _lower_bound)."""
    return _lower_bound(_problem(topics, brokers, specs))
