"""`--balance bytes`: every broker within ±tolerance of the mean bytes, at close to the fewest bytes
copied, counts and leaders still even. Pure (numpy). The contract and the choices: docs/balanced.md.

It runs on the balanced strategy's machinery (planner._problem / _work: the rows, racks, per-topic caps;
replicas.trim / can_add / can_move; leaders.choose_leaders), with each row's size beside it:
1. trim (replicas off B, RF decreases): drop the replicas on the brokers most over the mean bytes;
2. holes (RF increases, drained brokers): largest partitions first, each to the valid broker with the
   fewest bytes (the count machinery's seeded rounds when there are very many);
3. counts into their band (±10% of the mean count): moves from the brokers above it to those below,
   each picking the partition best for the bytes (seeded rounds first when very many units must move);
4. bytes: while some broker is outside mean × (1 ± tolerance), the move (or swap, when a move would
   take a count out of its band) that most reduces the bytes outside the band, net of ALPHA × the bytes
   it copies; none left (or none that gains more than it copies): done. A broker is brought to the
   band's edge, not to the mean;
5. leaders, as for --balance replicas.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reassign_cli.core import bands
from reassign_cli.core.model import Broker, Capacity, Topic
from reassign_cli.planning.balanced import leaders as balance_leaders
from reassign_cli.planning.balanced import planner
from reassign_cli.planning.balanced import replicas as balance_replicas
from reassign_cli.planning.balanced.state import DiskRoom, Work, spans
from reassign_cli.planning.plan import TopicSpec

ALPHA = 0.9  # a move must cut the bytes outside the band by more than this share of the bytes it copies
ALPHA_HALF = 0.25  # ... or by this share, when it takes at least half of one broker's bytes outside
PARTNERS = 64  # brokers a needy broker trades with per step (the farthest from it in bytes)
PER_PARTNER = 512  # replicas of a giver tried per step (a seeded random sample beyond)
SWAP_SIDE = 24  # largest (smallest) candidates each side of a swap
BULK = 1_000  # holes or count units beyond which the seeded rounds of --balance replicas go first
COUNT_BAND = bands.COUNT_BAND  # replica counts end within mean ± this share (or no more spread than before)


MAX_DISK_UTILIZATION = 0.85  # --max-disk-utilization's default


@dataclass(frozen=True, slots=True)
class DiskStats:
    """With every broker's capacity known: what the plan does to the disks (see `disks`)."""

    total: np.ndarray  # (n,) capacity: its log dirs' volumes' total bytes
    base: np.ndarray  # (n,) bytes in use now: its partitions' bytes or the volumes' used bytes, the larger
    peak: np.ndarray  # (n,) base + every byte it receives in the plan (deleted only once the plan ends)
    limit: float  # --max-disk-utilization

    def worst(self) -> int | None:
        """The index of the broker whose peak breaks the limit the most (utilization, then lowest id);
        None when none does. A broker receiving nothing never breaks it (the plan adds nothing to it)."""
        util = self.peak / self.total
        bad = (util > self.limit) & (self.peak > self.base)
        if not bad.any():
            return None
        idx = np.flatnonzero(bad)
        return int(idx[np.argmax(util[idx])])


@dataclass(frozen=True, slots=True)
class BytesStats:
    tolerance: float
    mean: float
    lower_bound: int  # bytes (see lower_bound)
    before: np.ndarray  # (n,) bytes per broker of B now
    after: np.ndarray  # (n,) once the plan is done
    ids: np.ndarray  # (n,) broker ids
    # (n,) each broker's goal: the mean bytes, or with capacities its share of the bytes (utilization)
    goal: np.ndarray | None = None
    disks: DiskStats | None = None  # None: some broker of B has no known capacity (raw bytes balanced)
    # The least worst deviation any plan of the selected topics reaches (see `reachable`), and the
    # broker that sets it (-1: none, 0.0)
    reachable: tuple[float, int] = (0.0, -1)

    def worst_after(self) -> int:
        """The id of the broker farthest from its goal once the plan is done (the lowest on ties)."""
        goal = (
            self.goal
            if self.goal is not None and self.disks is not None
            else np.full(len(self.ids), self.mean)
        )
        dev = np.abs(self.after - goal) / np.where(goal > 0, goal, 1)
        return int(self.ids[int(np.argmax(dev))]) if len(dev) else -1

    def within(self) -> bool:
        """Whether every broker ends within the tolerance of its goal."""
        return self.max_dev(self.after) <= self.tolerance + 1e-9

    def max_dev(self, loads: np.ndarray) -> float:
        if self.goal is not None and self.disks is not None:
            if not len(loads) or self.mean <= 0:
                return 0.0
            return float((np.abs(loads - self.goal) / self.goal).max())
        return float(np.abs(loads - self.mean).max() / self.mean) if self.mean > 0 and len(loads) else 0.0

    def as_dict(self) -> dict[str, object]:
        out = self._bytes_dict()
        if self.disks is not None:
            out.update(self._disk_dict(self.disks))
        return out

    def _disk_dict(self, d: DiskStats) -> dict[str, object]:
        ids = list(map(str, self.ids.tolist()))

        def per(values: np.ndarray) -> dict[str, float]:
            return dict(zip(ids, [round(float(x), 4) for x in values / d.total], strict=True))

        return {
            "bytes_balanced_by": "utilization",
            "disk_capacity_per_broker": dict(zip(ids, d.total.tolist(), strict=True)),
            "disk_utilization_mean": round(float(self.before.sum() / d.total.sum()), 4),
            "disk_utilization_before": per(self.before),
            "disk_utilization_after": per(self.after),
            "disk_in_use_before": per(d.base),
            "disk_peak_utilization": per(d.peak),
            "max_disk_utilization": d.limit,
        }

    def _bytes_dict(self) -> dict[str, object]:
        return {
            "bytes_lower_bound": self.lower_bound,
            "bytes_max_dev_before": round(self.max_dev(self.before), 4),
            "bytes_max_dev_after": round(self.max_dev(self.after), 4),
            "bytes_max_dev_after_broker": self.worst_after(),
            "bytes_within_tolerance": self.within(),
            "bytes_best_reachable_dev": round(self.reachable[0], 4),
            "bytes_tolerance": self.tolerance,
            "bytes_mean": round(self.mean),
            "bytes_per_broker_before": dict(
                zip(map(str, self.ids.tolist()), self.before.tolist(), strict=True)
            ),
            "bytes_per_broker_after": dict(
                zip(map(str, self.ids.tolist()), self.after.tolist(), strict=True)
            ),
        }


def _shares(share: np.ndarray, total: int) -> np.ndarray:
    """`total` units split in proportion to `share` (largest remainders first, then the lower index)."""
    raw = share * (total / float(share.sum()))
    out = np.floor(raw).astype(np.int64)
    left = total - int(out.sum())
    if left > 0:
        order = np.lexsort((np.arange(len(raw)), -(raw - out)))
        out[order[:left]] += 1
    return out


def disks(
    capacities: Mapping[int, Capacity], ids: np.ndarray, before: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(capacity, bytes in use now) of each broker of `ids`, or None unless every one has a known capacity
    above zero. In use now: its partitions' bytes (`before`), or what its volumes report in use (total -
    usable) when that is more (other data on the disk counts against the limit too)."""
    caps = [capacities.get(b) for b in ids.tolist()]
    if not caps or any(c is None or c.total <= 0 for c in caps):
        return None
    total = np.array([c.total for c in caps if c is not None], dtype=np.int64)
    used = np.array([c.total - c.usable for c in caps if c is not None], dtype=np.int64)
    return total, np.maximum(before.astype(np.int64), used)


def reachable(fixed: np.ndarray, size: np.ndarray, goal: np.ndarray, ids: np.ndarray) -> tuple[float, int]:
    """(a bound below the worst deviation any plan reaches, the broker that sets it): the bytes of the
    topics not selected stay where they are, and a broker holds each selected partition once at most,
    so broker b ends between fixed[b] and fixed[b] + every selected partition's size; its deviation is
    at least the distance from that range to its goal. Racks, caps and partition sizes aside (the
    bound can be below what is reachable, never above)."""
    if not len(goal):
        return 0.0, -1
    top = fixed + float(size.sum())
    gap = np.maximum(np.maximum(fixed - goal, goal - top), 0) / np.where(goal > 0, goal, 1)
    i = int(np.argmax(gap))
    return float(gap[i]), int(ids[i]) if gap[i] > 0 else -1


def unknown_sizes(topics: Mapping[str, Topic], names: Sequence[str]) -> int:
    """How many partitions of the selected topics have no known size."""
    return sum(sum(1 for p in topics[n].replicas if p not in topics[n].sizes) for n in names)


# ---------------------------------------------------------------------------------------------
# The problem in bytes
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Bytes:
    """The bytes problem. Each broker has its own goal (`mean`): the mean bytes, or with capacities known
    its share of the bytes (mean utilization x its capacity), and its band around it; without capacities
    every broker's is the same, and the plan is the plain bytes one."""

    size: np.ndarray  # (P,) bytes of each row
    load: np.ndarray  # (n,) bytes per broker of B, all topics (kept current as replicas move)
    lo: np.ndarray  # (n,) goal × (1 - tolerance)
    hi: np.ndarray
    cmin: np.ndarray  # (n,) the replica count band of each broker
    cmax: np.ndarray
    fixed: np.ndarray  # (n,) bytes of the unselected topics
    # The contract's outer band, goal ± max(tolerance × goal, the largest partition): a broker beyond it
    # takes any move that brings it closer and cuts the bytes outside [lo, hi] (ALPHA aside).
    hard: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0))
    mean: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    weighted: bool = False  # goals differ (capacities): partners are ranked by bytes over their goal
    # (n,) each broker's share of the mean replica count, with disks of different sizes only (None: the
    # count step compares raw counts, as every broker's goal is the mean)
    count_goal: np.ndarray | None = None
    # --max-disk-utilization: (P, W0) the current replicas and (n,) the bytes each broker may still
    # receive before its peak reaches the limit; None: no limit (no capacities).
    old: np.ndarray | None = None
    room: np.ndarray | None = None
    limit: np.ndarray | None = None  # (n,) limit x capacity - bytes in use now

    def refresh(self, w: Work) -> None:
        self.load = _loads(w.rep, self.size, self.fixed)
        if self.old is not None and self.limit is not None:
            self.room = self.limit - received(w.rep, self.old, self.size, w.n)

    def key(self) -> np.ndarray:
        """What ranks brokers from the emptiest to the fullest: bytes, or bytes over the goal."""
        return self.load - self.mean if self.weighted else self.load

    def fits(self, rows: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Whether each replica of `rows` may go to the broker `v` under the peak limit: v held it before
        the plan (no copy), or it still has room for the partition's bytes."""
        if self.room is None or self.old is None:
            return np.ones(len(rows), dtype=bool)
        back = (self.old[rows] == np.asarray(v)[:, None]).any(axis=1)
        return back | (self.size[rows] <= self.room[v])

    def moved(self, rows: np.ndarray, u: np.ndarray, v: np.ndarray) -> None:
        """Keep the room current after replicas of `rows` moved from u (-1: a hole filled) to v."""
        if self.room is None or self.old is None:
            return
        for r, a, b in zip(rows.tolist(), np.asarray(u).tolist(), np.asarray(v).tolist(), strict=True):
            held = self.old[r].tolist()
            if a >= 0 and a not in held:
                self.room[a] += self.size[r]
            if b not in held:
                self.room[b] -= self.size[r]

    def gain(self, u: np.ndarray, v: np.ndarray, s: np.ndarray) -> np.ndarray:
        """How much moving s bytes from u to v cuts the bytes outside [lo, hi] (u, v distinct)."""
        lu, lv = self.load[u].astype(np.float64), self.load[v].astype(np.float64)
        return self.out(lu, u) - self.out(lu - s, u) + self.out(lv, v) - self.out(lv + s, v)

    def out(self, x: np.ndarray, at: np.ndarray | None = None) -> np.ndarray:
        """The bytes outside the band of x, the loads of the brokers `at` (default: every broker)."""
        lo, hi = (self.lo, self.hi) if at is None else (self.lo[at], self.hi[at])
        return np.maximum(x - hi, 0) + np.maximum(lo - x, 0)

    def hard_gain(self, u: np.ndarray, v: np.ndarray, s: np.ndarray) -> np.ndarray:
        """How much the move cuts the bytes outside the outer band."""
        lo, hi = self.hard
        lu, lv = self.load[u].astype(np.float64), self.load[v].astype(np.float64)

        def out(x: np.ndarray, at: np.ndarray) -> np.ndarray:
            return np.maximum(x - hi[at], 0) + np.maximum(lo[at] - x, 0)

        return out(lu, u) - out(lu - s, u) + out(lv, v) - out(lv + s, v)

    def worth(
        self, u: np.ndarray, v: np.ndarray, net: np.ndarray, copied: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(whether a move of `net` bytes from u to v copying `copied` is worth it, its rank). Worth it
        when it cuts the bytes outside the band: by more than ALPHA x the bytes copied; or by more than
        ALPHA_HALF x the bytes copied and at least half of what u or v has outside (large partitions: no
        move of one gains as much as it copies); or bringing u or v into the band without taking the other
        out of it, copying at most tolerance x mean (the last step to the band's edge); or taking bytes
        out of the outer band. Ranked by the bytes it takes out of the outer band, then
        out of [lo, hi] net of ALPHA x the bytes copied."""
        lu, lv = self.load[u].astype(np.float64), self.load[v].astype(np.float64)
        ou, ov = self.out(lu, u), self.out(lv, v)
        gu, gv = ou - self.out(lu - net, u), ov - self.out(lv + net, v)
        gain, hard = gu + gv, self.hard_gain(u, v, net)
        score = gain - ALPHA * copied
        half = ((ou > 0) & (2 * gu >= ou)) | ((ov > 0) & (2 * gv >= ov))
        into = ((ou > 0) & (gu == ou)) | ((ov > 0) & (gv == ov))
        step = np.minimum((self.hi - self.mean)[u], (self.hi - self.mean)[v])
        edge = (gu >= 0) & (gv >= 0) & (gain > 0) & into & (copied <= step)
        ok = (score > 0) | ((hard > 0) & (gain > 0)) | (half & (gain > ALPHA_HALF * copied)) | edge
        return ok, hard * 4.0 + score


def _row_sizes(prob: planner._Problem, topics: Mapping[str, Topic]) -> np.ndarray:
    size = np.zeros(len(prob.pid), dtype=np.int64)
    for i, name in enumerate(prob.names):
        a, b = int(prob.starts[i]), int(prob.starts[i + 1])
        known = topics[name].sizes
        size[a:b] = [known[p] for p in prob.pid[a:b].tolist()]
    return size


def fixed_bytes(topics: Mapping[str, Topic], selected: set[str], ids: np.ndarray) -> np.ndarray:
    """Bytes of the unselected topics on each broker of `ids` (partitions of unknown size count 0)."""
    where = {b: i for i, b in enumerate(ids.tolist())}
    out = np.zeros(len(ids), dtype=np.int64)
    for name, t in topics.items():
        if name in selected or not t.sizes:
            continue
        for p, reps in planner.targets_of(t).items():
            s = t.sizes.get(p, 0)
            for b in reps:
                i = where.get(b)
                if i is not None:
                    out[i] += s
    return out


def received(rep: np.ndarray, old: np.ndarray, size: np.ndarray, n: int) -> np.ndarray:
    """(n,) the bytes each broker receives: the sizes of the rows it holds in `rep` and not in `old`."""
    new = (rep >= 0) & ~(rep[:, :, None] == old[:, None, :]).any(axis=2)
    rows = np.broadcast_to(np.arange(len(rep))[:, None], rep.shape)[new]
    return np.bincount(rep[new], weights=size[rows], minlength=n).astype(np.int64)


def _loads(rep: np.ndarray, size: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    load = fixed.astype(np.int64).copy()
    on = rep >= 0
    np.add.at(load, rep[on], np.broadcast_to(size[:, None], rep.shape)[on])
    return load


def _band(
    prob: planner._Problem, size: np.ndarray, fixed: np.ndarray, share: np.ndarray | None = None
) -> tuple[float, np.ndarray, np.ndarray]:
    """(the mean bytes, each broker's count band). The band is mean count ± COUNT_BAND; with capacities
    (`share`: each broker's capacity over the mean capacity), its share of the count ± COUNT_BAND.
    Widened to what the rack rule forces: each broker's counts over every result --balance replicas may
    aim at (planner.replica_range). Not its one target, whose ties go to the brokers holding the most
    now: a plan changes those, and its replan found another band and moved again."""
    n = len(prob.ids)
    mean = (float(fixed.sum()) + float((size * prob.rf).sum())) / n
    mc = (float(prob.fixed.sum()) + float(prob.rf.sum())) / n
    m = np.full(n, mc) if share is None else mc * share
    low, high = bands.count_band(m, COUNT_BAND)
    forced_low, forced_high = planner.replica_range(prob)
    if share is not None and np.ptp(share) > 0 and prob.n_racks == 1:
        # No rack rule: only the unselected topics force a count (they never move). Where the range
        # --balance replicas may aim at is the mean's floor..ceil, that is evenness, not force: widening
        # a small disk's band to it let the count step stop at the even count, and the bytes step
        # could not always finish from there (test_autopilot's CAPACITY_COUNT_STOP, worked by hand).
        even_low, even_high = bands.count_band(np.full(n, mc), 0.0)
        forced_low = np.where(forced_low < even_low, forced_low, low)
        forced_high = np.maximum(np.where(forced_high > even_high, forced_high, high), prob.fixed)
    return mean, np.minimum(low, forced_low), np.maximum(high, forced_high)


def _count_goal(prob: planner._Problem, share: np.ndarray | None) -> np.ndarray | None:
    """Each broker's share of the mean replica count, where disks differ in size and the racks (if any)
    are of equal capacity per broker (the contract's "racks of equal size"): there the rack rule leaves
    each rack its capacity's share of the count. None elsewhere: the count step compares raw counts."""
    if share is None or np.ptp(share) == 0:
        return None
    if prob.n_racks > 1:
        per_rack = np.bincount(prob.rack, share, prob.n_racks) / np.bincount(
            prob.rack, minlength=prob.n_racks
        )
        if np.ptp(per_rack) > 1e-9:
            return None
    return share * (float(prob.fixed.sum()) + float(prob.rf.sum())) / len(prob.ids)


def receivable(w: Work, cur: np.ndarray) -> np.ndarray:
    """(n,) the most replicas each broker may take under the topics' loosest caps, `cur` the current
    rows: for each selected topic, its cap on the broker's rack less what the broker holds of it."""
    cap = w.caps[-1] if w.caps else w.cap
    on = cur >= 0
    b = cur[on]
    keys = np.broadcast_to(w.tix[:, None], cur.shape)[on] * w.n + b
    uk, cnt = np.unique(keys, return_counts=True)
    t, bb = np.divmod(uk, w.n)
    held = np.minimum(cnt, cap[t, w.rack[bb]])
    out = cap.sum(axis=0)[w.rack] - np.bincount(bb, weights=held, minlength=w.n).astype(np.int64)
    return np.maximum(out, 0)


def copies_bound(prob: planner._Problem, recv: np.ndarray, cmin: np.ndarray, cmax: np.ndarray) -> int:
    """The fewest copies a plan with every count in [cmin, cmax] makes, as far as the topics' caps
    (`recv`: what each broker may take) and the replicas selected (a broker gives only those) allow:
    the larger of (a) what brokers below cmin must receive; (b) what must leave brokers above cmax
    (at most what the others may take) plus the slots partitions must gain, net of what RF decreases
    drop; (c) per partition, the slots
    it must gain or the racks it lacks. --balance replicas' bound (planner._lower_bound) counts against
    its even counts, which a bytes plan does not aim at: a plan beat it by 6x."""
    cur = planner._dedup(prob.old)
    kept = (cur >= 0).sum(axis=1)
    racks = spans(np.append(prob.rack, -1)[cur])
    need = np.minimum(prob.rf, prob.n_racks)
    selected = prob.before - prob.fixed
    a = int(np.minimum(np.clip(cmin - prob.before, 0, None), recv).sum())
    give = int(np.minimum(np.clip(prob.before - cmax, 0, None), selected).sum())
    b = min(give, int(recv.sum())) + int((prob.rf - kept).sum())
    c = int(np.maximum(np.maximum(prob.rf - kept, need - racks), 0).sum())
    return max(a, b, c)


def lower_bound(
    prob: planner._Problem,
    size: np.ndarray,
    before: np.ndarray,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
) -> int:
    """The fewest bytes any plan within the band copies: the larger of (a) what must leave brokers above
    hi, plus what each partition must gain (replicas off B, RF increases) net of what RF decreases drop;
    (b) what must enter brokers below lo; (c) per partition, its size times the slots it must gain or
    the racks it lacks, whichever is more."""
    cur = planner._dedup(prob.old)
    gain = prob.rf - (cur >= 0).sum(axis=1)
    lack = np.minimum(prob.rf, prob.n_racks) - spans(np.append(prob.rack, -1)[cur])
    a = float(np.clip(before - hi, 0, None).sum()) + float((size * gain).sum())
    b = float(np.clip(lo - before, 0, None).sum())
    c = float((size * np.maximum(np.maximum(gain, lack), 0)).sum())
    return int(np.ceil(max(a, b, c, 0.0) - 1e-6))


# ---------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------


def plan_bytes(
    topics: Mapping[str, Topic],
    brokers: Sequence[Broker],
    specs: Sequence[TopicSpec],
    seed: int,
    tolerance: float = 0.05,
    others: planner.OtherCounts | None = None,
    other_bytes: np.ndarray | None = None,
    capacities: Mapping[int, Capacity] | None = None,
    max_utilization: float = MAX_DISK_UTILIZATION,
) -> tuple[planner.Balanced, BytesStats]:
    """The --balance bytes plan of the topics of `specs` over `brokers` (see plan_balanced for `topics`
    and `others`; `other_bytes`: the unselected topics' bytes per broker of B, sorted by id, when
    `topics` holds only the selected ones). Every selected partition must have a known size.
    `capacities`: when every broker of B has one, utilization (bytes / capacity) is balanced instead of
    bytes, and no broker receives a copy that would take its peak (bytes in use now + every byte it
    receives) above `max_utilization` of its capacity, where any plan can avoid it; the stats' `disks`
    say whether the plan kept within it."""
    prob = planner._problem(topics, brokers, specs, others)
    size = _row_sizes(prob, topics)
    fixed = other_bytes if other_bytes is not None else fixed_bytes(topics, set(prob.names), prob.ids)
    old = planner._dedup(prob.old)
    before = _loads(old, size, fixed)
    disk = disks(capacities or {}, prob.ids, before)
    # Each broker's capacity over the mean capacity (exactly 1.0 when all are equal: the raw bytes plan).
    share = None if disk is None else bands.capacity_shares(disk[0])
    mean, cmin, cmax = _band(prob, size, fixed, share)
    goal = bands.byte_goals(mean, share, len(prob.ids))
    lo, hi = bands.byte_band(goal, tolerance)
    w = planner._work(prob, seed)
    recv = receivable(w, old)
    target = prob.targets.target
    if share is not None and np.ptp(share) > 0:
        # Disks of different sizes: the seeded bulk rounds of --balance replicas aim at each one's share
        # of the count, not at even counts (which the later steps would then have to undo, copy by copy).
        w.target = _shares(share, int(target.sum()))
    bx = _Bytes(size, before.copy(), lo, hi, cmin, cmax, fixed)
    bx.hard = bands.outer_band(goal, tolerance, float(size.max()) if len(size) else 0.0)
    bx.mean, bx.weighted = goal, disk is not None
    bx.count_goal = _count_goal(prob, share)
    if disk is not None:
        bx.old, bx.limit = old, np.floor(max_utilization * disk[0]) - disk[1]
        bx.room = bx.limit.copy()
    _trim(w, bx, goal)
    w.cap = w.caps[2]
    _fill(w, bx)
    w.cap, w.tight = w.caps[2], False
    _bulk_counts(w, bx)
    _settle(w, bx)
    result = _result(prob, w, bx, recv)
    lb = lower_bound(prob, size, before, lo, hi)
    after = _loads(w.rep, size, fixed)
    reach = reachable(fixed, size, goal, prob.ids)
    if disk is None:
        return result, BytesStats(tolerance, mean, lb, before, after, prob.ids, reachable=reach)
    peak = disk[1] + received(w.rep, old, size, w.n)
    on_disk = DiskStats(disk[0], disk[1], peak, max_utilization)
    return result, BytesStats(tolerance, mean, lb, before, after, prob.ids, goal, on_disk, reach)


def _result(prob: planner._Problem, w: Work, bx: _Bytes, recv: np.ndarray) -> planner.Balanced:
    """The plan's rows, leaders chosen, and its stats with the bytes plan's own copies bound."""
    lead = balance_leaders.choose_leaders(w, prob.fixed_leaders, prob.old[:, 0])
    ordered = planner._leader_first(w.rep, lead)
    stats = planner._stats(prob, w, ordered, lead)
    # Against the count band, widened to the counts the plan ends with where it could not reach it.
    band = (np.minimum(bx.cmin, w.count), np.maximum(bx.cmax, w.count))
    stats = dataclasses.replace(stats, lower_bound=copies_bound(prob, recv, *band))
    rows = np.where(ordered >= 0, prob.ids[np.maximum(ordered, 0)], -1)
    return planner.Balanced(prob.names, prob.starts, prob.pid, rows, prob.rf, stats, bx.size)


def _trim(w: Work, bx: _Bytes, mean: np.ndarray) -> None:
    rows = balance_replicas.rows_to_trim(w)
    if len(rows):
        bx.refresh(w)
        balance_replicas.trim(w, rows, (bx.load - mean, bx.size))


def _fill(w: Work, bx: _Bytes) -> None:
    """Every hole: the largest partitions first, each to the valid broker with the fewest bytes within
    the topic's cap (and the count band when one fits); none: --balance replicas' chain of moves."""
    holes = w.holes()
    if int(holes.sum()) > BULK:
        _bulk(w, bx, balance_replicas.fill_holes)
        return
    bx.refresh(w)
    every = np.arange(w.n)
    rows = np.flatnonzero(holes)
    for r in rows[np.lexsort((rows, -bx.size[rows]))].tolist():
        for _ in range(int(holes[r])):
            valid, capped = balance_replicas.can_add(w, np.full(w.n, r), every)
            order = np.lexsort((every, bx.key()))
            room = bx.fits(np.full(w.n, r), every)
            banded = w.count < bx.cmax
            # Within the peak limit first; beyond it only when no broker has room (the plan is refused).
            tries = (
                valid & capped & room & banded,
                valid & capped & room,
                valid & capped & banded,
                valid & capped,
            )
            for ok in tries:
                fits = order[ok[order]]
                if len(fits):
                    balance_replicas._add(w, np.array([r]), fits[:1])
                    bx.load[fits[0]] += bx.size[r]
                    bx.moved(np.array([r]), np.array([-1]), fits[:1])
                    break
            else:  # every broker that fits is at the topic's cap: a chain of moves passes one on
                balance_replicas._fill_one(w, r)
                bx.refresh(w)


# ---------------------------------------------------------------------------------------------
# Counts into their band, then bytes into theirs
# ---------------------------------------------------------------------------------------------


def _violation(count: np.ndarray, bx: _Bytes) -> np.ndarray:
    return np.maximum(count - bx.cmax, 0) + np.maximum(bx.cmin - count, 0)


def _bulk_counts(w: Work, bx: _Bytes) -> None:
    """When many count units must move: the seeded rounds of --balance replicas (towards its even
    counts: at scale the bytes then land near the mean too, and the later steps finish the job)."""
    if int(_violation(w.count, bx).sum()) > BULK:
        _bulk(w, bx, _count_rounds)
        w.cap, w.tight = w.caps[2], False


def _count_rounds(w: Work) -> None:
    """Towards the even counts of --balance replicas: at scale the bytes then land near the mean too."""
    for _ in balance_replicas.phases(w):
        followers = True
        for _ in range(balance_replicas.ROUNDS):
            if balance_replicas._move_round(w, followers) == 0:
                if not followers:
                    break
                followers = False


def _bulk(w: Work, bx: _Bytes, rounds: Callable[[Work], None]) -> None:
    """The seeded rounds of --balance replicas, within each broker's disk room (the peak limit) when
    capacities are known: a copy the rounds made beyond it could not be undone (a broker's peak counts
    every byte it receives), and the plan would be refused although one within the limit exists."""
    bx.refresh(w)
    if bx.room is not None and bx.old is not None:
        w.disk = DiskRoom(bx.old, bx.size, bx.room.copy())
    try:
        rounds(w)
    finally:
        w.disk = None
    bx.refresh(w)


def _settle(w: Work, bx: _Bytes) -> None:
    """Counts into their band one move at a time (each the best for the bytes among the moves that
    bring a count closer to it), then bytes into theirs (no count leaving its band), again until a
    bytes pass moves nothing. Each move lowers (count units outside the band, bytes outside the band)
    in that order, so this ends, and a plan planned again finds nothing to move."""
    bx.refresh(w)
    slots = balance_replicas._Slots(w)
    while True:
        while _count_step(w, bx, slots):
            pass
        moved = False
        while _bytes_step(w, bx, slots):
            moved = True
        if not moved:
            return


def _count_step(w: Work, bx: _Bytes, slots: balance_replicas._Slots) -> bool:
    count, every = w.count, np.arange(w.n)
    # A partner more than one replica nearer its count goal than x (the mean count, or with disks of
    # different sizes its capacity's share of it), so that the move brings the two closer to their goals
    # (their squared distances fall): in raw counts, as before, "two fewer" where every goal is the mean;
    # raw counts would keep a large disk from taking from a small one holding fewer (test_autopilot's
    # CAPACITY_PARTNERS and CAPACITY_FRACTION, worked by hand).
    excess = count if bx.count_goal is None else count - bx.count_goal
    viol = _violation(count, bx)
    for x in every[np.lexsort((every, -viol))][: int((viol > 0).sum())].tolist():
        if count[x] > bx.cmax[x]:
            vs = every[(count < bx.cmax) & (excess < excess[x] - 1)]
            vs = vs[np.lexsort((vs, bx.key()[vs], excess[vs]))][:PARTNERS]
            found = _best_single(w, bx, slots, [x], vs, need_gain=False)
        else:
            us = every[(count > bx.cmin) & (excess > excess[x] + 1)]
            us = us[np.lexsort((us, -bx.key()[us], -excess[us]))][:PARTNERS]
            found = _best_single(w, bx, slots, us.tolist(), np.array([x]), need_gain=False)
            if not found and bx.room is not None and bx.room[x] < bx.size.max():
                _yield_count(w, bx, x)
        if found:
            return True
    return False


def _yield_count(w: Work, bx: _Bytes, x: int) -> None:
    """Broker x is below its count band and the peak limit leaves it too little room to take more: the
    limit wins. Its count may fall further (its bytes may then go where they fit), and the other
    brokers' bands widen to hold what it would have held (as if it ended with none)."""
    total = float(w.count.sum())
    share = (bx.cmin[x] + bx.cmax[x]) / 2.0
    bx.cmin[x] = 0
    if total > share:
        rest = np.arange(w.n) != x
        bx.cmax[rest] = np.maximum(bx.cmax[rest], np.ceil(bx.cmax[rest] * total / (total - share)))


def _bytes_step(w: Work, bx: _Bytes, slots: balance_replicas._Slots) -> bool:
    every = np.arange(w.n)
    out = bx.out(bx.load.astype(np.float64))
    for x in every[np.lexsort((every, -out))][: int((out > 0).sum())].tolist():
        rest = every[every != x]
        key = bx.key()
        if bx.load[x] > bx.hi[x]:
            vs = rest[np.lexsort((rest, key[rest]))][:PARTNERS]
            moves = _best_single(w, bx, slots, [x], vs, need_gain=True)
            pairs = [(x, int(v)) for v in vs[: PARTNERS // 4].tolist()]
        else:
            us = rest[np.lexsort((rest, -key[rest]))][:PARTNERS]
            moves = _best_single(w, bx, slots, us.tolist(), np.array([x]), need_gain=True)
            pairs = [(int(u), x) for u in us[: PARTNERS // 4].tolist()]
        if moves or _best_swap(w, bx, slots, pairs):
            return True
    return False


def _candidates(
    w: Work, slots: balance_replicas._Slots, us: Sequence[int], vs: np.ndarray
) -> tuple[np.ndarray, ...]:
    """(rows, cols, from, to) of every replica of the brokers `us` towards each broker of `vs` (not
    checked), in a seeded random order within each giver."""
    parts = []
    for u in us:
        rows, cols = slots.of(u)
        rows, cols = rows[:PER_PARTNER], cols[:PER_PARTNER]
        to = vs[vs != u]
        parts.append(
            (
                np.repeat(rows, len(to)),
                np.repeat(cols, len(to)),
                np.full(len(rows) * len(to), u),
                np.tile(to, len(rows)),
            )
        )
    if not parts:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
    return tuple(np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(4))


def _first_valid(w: Work, order: np.ndarray, rows: np.ndarray, cols: np.ndarray, v: np.ndarray) -> int:
    """The first candidate, in `order`, that may move (valid, racks, the topic's cap); -1 when none."""
    for start in range(0, len(order), 256):
        part = order[start : start + 256]
        ok = balance_replicas.can_move(w, rows[part], cols[part], v[part])
        if ok.any():
            return int(part[int(np.argmax(ok))])
    return -1


def _best_single(
    w: Work, bx: _Bytes, slots: balance_replicas._Slots, us: Sequence[int], vs: np.ndarray, need_gain: bool
) -> bool:
    """Make the best move of a replica from one of `us` to one of `vs`: the most bytes taken out of the
    band net of ALPHA × its size, followers before leaders; with `need_gain`, only if that is positive
    and the counts stay in their band. Reports whether a move was made."""
    rows, cols, u, v = _candidates(w, slots, us, vs)
    if need_gain:
        cu, cv = w.count[u], w.count[v]
        keep = ((cu - 1 >= bx.cmin[u]) | (cu > bx.cmax[u])) & ((cv + 1 <= bx.cmax[v]) | (cv < bx.cmin[v]))
        rows, cols, u, v = rows[keep], cols[keep], u[keep], v[keep]
    if bx.room is not None:
        keep = bx.fits(rows, v)
        rows, cols, u, v = rows[keep], cols[keep], u[keep], v[keep]
    s = bx.size[rows]
    ok, score = bx.worth(u, v, s.astype(np.float64), s)
    if need_gain:
        rows, cols, u, v, s, score = rows[ok], cols[ok], u[ok], v[ok], s[ok], score[ok]
    order = np.lexsort((np.arange(len(rows)), cols == 0, s, -score))
    i = _first_valid(w, order, rows, cols, v)
    if i < 0:
        return False
    slots.move(rows[i : i + 1], cols[i : i + 1], v[i : i + 1])
    bx.load[u[i]] -= s[i]
    bx.load[v[i]] += s[i]
    bx.moved(rows[i : i + 1], u[i : i + 1], v[i : i + 1])
    return True


def _movable(
    w: Work, bx: _Bytes, slots: balance_replicas._Slots, a: int, b: int, largest: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, under the topic's cap at b) of up to SWAP_SIDE replicas of a that may move to b
    (the cap aside), the largest (or smallest) first."""
    rows, cols = slots.of(a)
    to = np.full(len(rows), b)
    ok = balance_replicas.can_move(w, rows, cols, to, capped=False) if len(rows) else np.zeros(0, dtype=bool)
    rows, cols, to = rows[ok], cols[ok], to[ok]
    if bx.room is not None:
        keep = bx.fits(rows, to)  # each side within the peak limit on its own (the other's bytes aside)
        rows, cols, to = rows[keep], cols[keep], to[keep]
    s = bx.size[rows]
    order = np.lexsort((np.arange(len(rows)), cols == 0, -s if largest else s))[:SWAP_SIDE]
    return rows[order], cols[order], balance_replicas.under_cap(w, rows[order], to[order])


def _best_swap(w: Work, bx: _Bytes, slots: balance_replicas._Slots, pairs: list[tuple[int, int]]) -> bool:
    """The best swap over the (giver a, taker b) pairs: a large replica of a to b, a small one of b to a
    (counts unchanged; a topic's count unchanged when both are of it), if it takes more bytes out of the
    band than ALPHA x the bytes both copy."""
    best: tuple[float, int, int, int, int, int, int] | None = None
    for a, b in pairs:
        pr, pc, p_cap = _movable(w, bx, slots, a, b, largest=True)
        qr, qc, q_cap = _movable(w, bx, slots, b, a, largest=False)
        if len(pr) == 0 or len(qr) == 0:
            continue
        sp, sq = bx.size[pr][:, None], bx.size[qr][None, :]
        net = (sp - sq).astype(np.float64)
        ok, score = bx.worth(np.full(net.shape, a), np.full(net.shape, b), net, sp + sq)
        same = w.tix[pr][:, None] == w.tix[qr][None, :]
        score[(net <= 0) | ~ok | ~((p_cap[:, None] & q_cap[None, :]) | same)] = -np.inf
        i, j = np.unravel_index(int(np.argmax(score)), score.shape)
        if score[i, j] > -np.inf and (best is None or score[i, j] > best[0]):
            best = (float(score[i, j]), a, b, int(pr[i]), int(pc[i]), int(qr[j]), int(qc[j]))
    if best is None:
        return False
    _, a, b, r1, c1, r2, c2 = best
    slots.move(np.array([r1]), np.array([c1]), np.array([b]))
    slots.move(np.array([r2]), np.array([c2]), np.array([a]))
    bx.moved(np.array([r1, r2]), np.array([a, b]), np.array([b, a]))
    net_bytes = int(bx.size[r1] - bx.size[r2])
    bx.load[a] -= net_bytes
    bx.load[b] += net_bytes
    return True
