"""`--balance bytes` disk by disk: after the broker-level plan (planning/balanced/bytes.py), place each
replica on a log dir and move replicas between the dirs of one broker until every disk is within its
band. Pure (numpy); deterministic (no draw: the same inputs give the same placement). ops/generate.py's
BalancedStrategy runs it after `plan_bytes` when a broker of B has several log dirs (or with --disks);
the contract: docs/balanced.md ("Disks").

It never changes the broker-level plan (replica sets, leaders, counts, racks, bytes copied between
brokers): it only chooses `log_dirs`.

- A **disk** is one live log dir of a broker of B, or with --shared-log-dirs (the broker's capacity
  recorded `shared`) the live dirs of one broker that report the same total bytes and usable bytes
  within SAME_VOLUME of it (one filesystem). Offline dirs are no disk: nothing is placed there.
- Each disk's **goal** is the cluster's goal utilization (bytes after the plan over the disks' total
  bytes, over every disk of B) times its size; without every disk's size known, each disk weighs 1 (the
  mean bytes per disk). Its **band**: goal × (1 ± tolerance); it is **within** when inside
  goal ± max(tolerance × goal, the largest planned partition on it) (core/bands.outer_band).
- **Peak accounting per disk**: a disk's peak is its bytes in use now (its replicas and future
  replicas, or the filesystem's used bytes, the larger) plus every byte placed on it by the plan; bytes
  leaving it are counted as still there until the plan ends. No replica is placed where the peak would
  pass `max_utilization` × its size (when its size is known).
1. Placement: each replica arriving on a broker, largest first, goes to the broker's disk that is not
   cordoned and whose peak takes it under the limit, the one whose utilization after the plan is then
   the lowest (ties: the most usable bytes left after those already in flight to it, then path order).
   A replica that stays on its broker keeps its dir. None fits: the plan cannot be made (`unplaced`).
2. Moves within a broker: while one of its disks is outside its band, the move of one replica of a
   planned partition between two of its disks that most reduces the bytes outside the bands (the peak
   limit kept; ties: the smaller replica, then plan order); when no move reduces them, the exchange
   of two replicas between two of its disks that does (_best_swap; a broker at the edge of its own
   band needs it: a move from a disk just inside to one just outside only swaps which is out); none
   that reduces them: done. A disk may still end outside its band: generate names it and why
   (band_note). A replica arriving on the broker is only
   placed elsewhere (no move within the broker); one that stays is moved from its dir to another.
The log dirs written (`explicit`): for a partition whose replica set changes, every replica's (the dir it
goes to, or the dir it stays in; "any" only where that is not known); for one whose replicas stay, the new
dir of each replica moved within its broker and "any" for the others (nothing to do there).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, pairwise

import numpy as np

from reassign_cli.core import bands
from reassign_cli.core.model import Broker, Capacity, LogDir, Topic
from reassign_cli.core.replicas import TopicReplicas, stack
from reassign_cli.planning.balanced.disk_texts import PAD as _PAD
from reassign_cli.planning.balanced.disk_texts import RowTexts, row_texts
from reassign_cli.planning.balanced.planner import Balanced, _flatten, targets_of

SAME_VOLUME = 0.001  # dirs of one total whose usable bytes differ by less (x total): one filesystem
MAX_STEPS_PER_BROKER = 10_000  # moves within one broker (a bound; far more than a disk band needs)


@dataclass(slots=True)
class _Disk:
    broker: int  # broker id
    dirs: list[int]  # global dir indices (into DiskPlan.paths), path order
    total: int | None
    usable: int | None
    eligible: bool  # some dir of it is not cordoned: replicas may be placed there
    before: int = 0  # bytes of its replicas now
    after: int = 0  # after the plan
    base: int = 0  # in use now (see the module docstring)
    peak: int = 0
    goal: float = 0.0
    largest: int = 0  # the largest planned partition on it after the plan


@dataclass(slots=True)
class DiskPlan:
    """Where each replica of the plan goes, and what that does to every disk of B."""

    paths: list[tuple[int, str]]  # global dir index -> (broker, path)
    disks: list[_Disk]
    tolerance: float
    limit: float
    weighted: bool  # every disk's size known: balanced by utilization, else by bytes per disk
    goal_utilization: float  # or the goal bytes per disk when not weighted
    # (topic, partition) -> log_dirs for every replica, for the partitions that change or move within:
    # `explicit`, built on first use by `pending` (entries' fast path, `texts`, does without it)
    given: dict[tuple[str, int], list[str]] | None = None
    pending: Callable[[], dict[tuple[str, int], list[str]]] | None = None
    texts: RowTexts | None = None  # each planned row's log dirs as JSON (plan_disks; entries)
    by_topic: dict[str, list[tuple[int, list[str]]]] | None = None  # `explicit` by topic (entries)
    quoted: dict[str, str] = field(default_factory=dict)  # each path (and "any") as JSON (entries)
    moves_within: int = 0  # replicas moved from one disk of a broker to another
    bytes_within: int = 0
    unplaced: list[tuple[str, int, int]] = field(default_factory=list)  # (topic, partition, broker)
    cordoned: set[int] = field(default_factory=set)  # global dir indices in cordoned.log.dirs

    @property
    def explicit(self) -> dict[tuple[str, int], list[str]]:
        if self.given is None:
            self.given = self.pending() if self.pending is not None else {}
            self.pending = None
        return self.given

    def within(self) -> bool:
        return all(self._within(d) for d in self.disks)

    def _within(self, d: _Disk) -> bool:
        low, high = bands.outer_band(np.array([d.goal]), self.tolerance, float(d.largest))
        return bool(low[0] - 1e-6 <= d.after <= high[0] + 1e-6)

    def worst_peak(self) -> _Disk | None:
        """The disk whose peak passes the limit the most (it receives bytes); None when none."""
        bad = [d for d in self.disks if d.total and d.peak > d.base and d.peak > self.limit * d.total]
        return max(bad, key=lambda d: d.peak / (d.total or 1)) if bad else None

    def name(self, d: _Disk) -> str:
        return f"{d.broker}:" + "+".join(self.paths[g][1] for g in d.dirs)

    def as_dict(self) -> dict[str, object]:
        def per(value: Iterable[float]) -> dict[str, float]:
            return {self.name(d): round(float(v), 4) for d, v in zip(self.disks, value, strict=True)}

        scale = [float(d.total) if self.weighted and d.total else 1.0 for d in self.disks]
        out: dict[str, object] = {
            "bytes_moved_within_brokers": self.bytes_within,
            "moves_within_brokers": self.moves_within,
            "disks_balanced_by": "utilization" if self.weighted else "bytes",
            "disks_goal": round(self.goal_utilization, 4),
            "disks_within_tolerance": self.within(),
            "disks_outside_band": sum(1 for d in self.disks if not self._within(d)),
            "disk_bytes_before": {self.name(d): d.before for d in self.disks},
            "disk_bytes_after": {self.name(d): d.after for d in self.disks},
        }
        if self.weighted:
            out["disk_utilization_per_dir_before"] = per(
                d.before / s for d, s in zip(self.disks, scale, strict=True)
            )
            out["disk_utilization_per_dir_after"] = per(
                d.after / s for d, s in zip(self.disks, scale, strict=True)
            )
            out["disk_peak_utilization_per_dir"] = per(
                d.peak / s for d, s in zip(self.disks, scale, strict=True)
            )
        return out

    def entries(self, assignment: Mapping[str, Mapping[int, Sequence[int]]]) -> str:
        """Kafka's reassignment entries of `assignment` (as model.format_partition_entries), with the
        log dirs chosen here where given, "any" elsewhere."""
        out: list[str] = []
        quoted = self.quoted  # each path's JSON once (a few paths, many replicas)
        if not quoted:
            quoted["any"] = '"any"'
            for _, path in self.paths:
                _quote(quoted, path)
        anys: dict[int, str] = {}  # '"any","any",...' by replica count
        texts, by_topic = self.texts, self.by_topic
        whole = None if texts is None else texts.chunk(assignment)
        if whole is not None:  # the fast path: a regular chunk as planned
            return whole
        run: dict[str, Mapping[int, Sequence[int]]] = {}  # topics without dirs in a row, names ascending
        for topic, parts in assignment.items():
            text = None if texts is None else texts.topic(topic, parts)
            if text is not None:  # the fast path: a topic as planned
                _flush(run, out)
                out.append(text)
                continue
            if by_topic is None:  # built once (entries runs once per slice of the document)
                by_topic = self.by_topic = {}
                for (t, p), chosen in self.explicit.items():
                    by_topic.setdefault(t, []).append((p, chosen))
            mine = by_topic.get(topic)
            if mine is None or not any(p in parts for p, _ in mine):
                if run and topic <= next(reversed(run)):  # out of name order: formatted apart
                    _flush(run, out)
                run[topic] = parts
                continue
            _flush(run, out)
            out.append(self._topic(topic, parts, mine, anys))
        _flush(run, out)
        return ",".join(out)

    def _topic(
        self,
        topic: str,
        parts: Mapping[int, Sequence[int]],
        mine: Sequence[tuple[int, list[str]]],
        anys: dict[int, str],
    ) -> str:
        """The entries of one topic with log dirs given (entries)."""
        quoted, explicit = self.quoted, self.explicit
        tq = json.dumps(topic, ensure_ascii=False)
        regular = _regular_entries(tq, parts, mine, quoted)
        if regular is not None:
            return regular
        out: list[str] = []
        head = '{"topic":' + tq + ',"partition":'
        reps_of = dict(parts.items())  # a snapshot's view: every row from one numpy read
        for p in sorted(reps_of):
            reps = reps_of[p]
            dirs = explicit.get((topic, p))
            if dirs:
                given = ",".join(
                    [quoted.get(d) or quoted.setdefault(d, json.dumps(d, ensure_ascii=False)) for d in dirs]
                )
            else:
                n = len(reps)
                given = anys.get(n) or anys.setdefault(n, ",".join(['"any"'] * n))
            out.append(f'{head}{p},"replicas":[{",".join(map(str, reps))}],"log_dirs":[{given}]}}')
        return ",".join(out)


def _flush(run: dict[str, Mapping[int, Sequence[int]]], out: list[str]) -> None:
    """The entries of `run` (topics without log dirs given, in name order) appended to `out` in one
    format_partition_entries call (its cost is mostly per call: one per topic was most of entries'),
    then `run` emptied."""
    from reassign_cli.core.model import format_partition_entries

    if run:
        text = format_partition_entries(run)
        if text:
            out.append(text)
        run.clear()


_MARK = "\x00"  # the topic's JSON name in a template (no % there: it may hold one)
_TEMPLATES: dict[tuple[int, int], str] = {}


def _quote(quoted: dict[str, str], d: str) -> str:
    return quoted.get(d) or quoted.setdefault(d, json.dumps(d, ensure_ascii=False))


def _regular_entries(
    tq: str,
    parts: Mapping[int, Sequence[int]],
    mine: Sequence[tuple[int, list[str]]],
    quoted: dict[str, str],
) -> str | None:
    """The entries of a topic of partitions 0..n-1 with rf replicas each (a snapshot's TopicReplicas),
    from one template: the replica ids in one % pass, then the quoted log dirs in a second; None when
    the topic is not regular (the caller writes it partition by partition)."""
    block = parts.regular_block() if isinstance(parts, TopicReplicas) else None
    if block is None:
        return None
    n, rf = block.shape
    dirs = ['"any"'] * (n * rf)
    for p, given in mine:  # the topic's partitions with log dirs (those of 0..n-1 count)
        if given and 0 <= p < n:
            if len(given) != rf:
                return None
            try:  # every dir written is one of the plan's paths or "any": quoted already (entries)
                dirs[p * rf : (p + 1) * rf] = map(quoted.__getitem__, given)
            except KeyError:
                dirs[p * rf : (p + 1) * rf] = [_quote(quoted, d) for d in given]
    template = _TEMPLATES.get((n, rf))
    if template is None:
        reps, marks = ",".join(["%d"] * rf), ",".join(["%%s"] * rf)
        template = ",".join(
            f'{{"topic":{_MARK},"partition":{p},"replicas":[{reps}],"log_dirs":[{marks}]}}' for p in range(n)
        )
        if len(_TEMPLATES) >= 4096:
            _TEMPLATES.clear()
        _TEMPLATES[n, rf] = template
    return ((template % tuple(block.ravel().tolist())) % tuple(dirs)).replace(_MARK, tq)


def wanted(
    disks: Mapping[int, Sequence[LogDir]], brokers: Sequence[Broker], capacities: Mapping[int, Capacity]
) -> bool:
    """Whether the plan is made disk by disk without --disks: some broker of B has several disks. Log dirs
    declared on one filesystem (--shared-log-dirs) are one disk: a broker whose dirs all share one has
    nothing to balance between them, and its plan names no dir (Kafka picks one, as without disks)."""
    for b in brokers:
        dirs = disks.get(b.id, ())
        if len(dirs) > 1:
            cap = capacities.get(b.id)
            if len(_groups(dirs, cap is not None and cap.shared is True)) > 1:
                return True
    return False


# ---------------------------------------------------------------------------------------------
# The disks of B
# ---------------------------------------------------------------------------------------------


def _layout(
    disks: Mapping[int, Sequence[LogDir]],
    ids: Sequence[int],
    capacities: Mapping[int, Capacity],
    shared: bool,
) -> tuple[list[tuple[int, str]], dict[int, int], list[_Disk], dict[int, int], set[int]]:
    """(paths, broker -> first global dir index, disks, global dir -> disk index (absent: offline))."""
    paths: list[tuple[int, str]] = []
    start: dict[int, int] = {}
    out: list[_Disk] = []
    disk_of: dict[int, int] = {}
    cordoned: set[int] = set()
    for b in ids:
        start[b] = len(paths)
        dirs = list(disks.get(b, ()))
        paths.extend((b, d.path) for d in dirs)
        cordoned.update(start[b] + i for i, d in enumerate(dirs) if d.cordoned is True)
        cap = capacities.get(b)
        groups = _groups(dirs, shared or (cap is not None and cap.shared is True))
        for group in groups:
            first = dirs[group[0]]
            disk = _Disk(
                b,
                [start[b] + i for i in group],
                first.total,
                first.usable,
                any(dirs[i].cordoned is not True for i in group),
            )
            held = sum(dirs[i].held or 0 for i in group)
            future = sum(dirs[i].future_held or 0 for i in group)
            used = first.total - first.usable if first.total is not None and first.usable is not None else 0
            disk.before = disk.after = held
            disk.base = disk.peak = max(held + future, used)
            for i in group:
                disk_of[start[b] + i] = len(out)
            out.append(disk)
    return paths, start, out, disk_of, cordoned


def _groups(dirs: Sequence[LogDir], shared: bool) -> list[list[int]]:
    """Live dirs as disks: each its own, or with `shared` those of one filesystem together."""
    live = [i for i, d in enumerate(dirs) if not d.offline]
    if not shared:
        return [[i] for i in live]
    groups: list[list[int]] = []
    for i in live:
        d = dirs[i]
        for g in groups:
            e = dirs[g[0]]
            if (
                d.total is not None
                and d.usable is not None
                and e.total == d.total
                and e.usable is not None
                and abs(e.usable - d.usable) <= SAME_VOLUME * d.total
            ):
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


# ---------------------------------------------------------------------------------------------
# The plan's rows, with the replicas' current dirs
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Rows:
    names: list[str]
    tix: np.ndarray  # (P,) topic index of each row
    pid: np.ndarray  # (P,)
    new: np.ndarray  # (P, W) broker ids, -1 pad
    size: np.ndarray  # (P,) bytes (0 unknown)
    old: np.ndarray  # (P, V) current (target) replicas, -1 pad
    old_dir: np.ndarray  # (P, V) local dir index of each current replica, -1 unknown (and pad)
    old_len: np.ndarray  # (P,) replica count of `old`
    sizes: list[int]  # `size` as Python ints (read row by row)


def _rows(topics: Mapping[str, Topic], result: Balanced) -> _Rows:
    names = result.names
    counts = np.diff(result.starts)
    tix = np.repeat(np.arange(len(names), dtype=np.int64), counts)
    pids = result.pid.astype(np.int64)
    maps = [targets_of(topics[n]) for n in names]
    fpids, lens, flat = _flatten(maps)  # in bulk: one numpy read of a snapshot's replicas
    aligned = np.array_equal(fpids, pids)
    if aligned:
        old_lens, old_flat = lens, flat
    else:
        cur_rows = [list(maps[i][p]) for i, p in zip(tix.tolist(), pids.tolist(), strict=True)]
        old_lens = np.fromiter(map(len, cur_rows), dtype=np.int64, count=len(cur_rows))
        old_flat = np.fromiter(chain.from_iterable(cur_rows), dtype=np.int64, count=int(old_lens.sum()))
    bounds = np.concatenate([[0], np.cumsum(old_lens)]).astype(np.int64)
    block = (
        _dir_block([topics[n] for n in names], maps, old_lens)
        if aligned and result.size is not None
        else None
    )
    if block is not None:
        return _rows_of(
            names, result, (tix, pids, old_lens, old_flat, bounds), block.ravel().astype(np.int64)
        )
    held_bytes: list[int] = []
    where_rows: list[Sequence[int | None]] = []  # per row: a dir (or None) for each current replica
    starts, plist, llist = result.starts.tolist(), pids.tolist(), old_lens.tolist()
    for i, name in enumerate(names):
        t = topics[name]
        lo, hi = starts[i], starts[i + 1]
        seg = plist[lo:hi]
        if result.size is None:
            held_bytes.extend(map(t.sizes.get, seg, [0] * len(seg)))
        if not t.removing:  # the dirs index the current replicas, in order (read only: shared)
            got = list(map(t.dirs.get, seg))
            if None in got:
                got = [[None] * llist[lo + j] if w is None else w for j, w in enumerate(got)]
            where_rows.extend(got)  # type: ignore[arg-type]  # no None left
            continue
        for r, p in zip(range(lo, hi), seg, strict=True):
            where = t.dirs.get(p)
            cur = old_flat[bounds[r] : bounds[r + 1]].tolist()
            if where is None:
                where_rows.append([None] * len(cur))
            else:
                held = dict(zip(t.replicas[p], where, strict=False))
                where_rows.append([held.get(b) for b in cur])
    flat_dirs = list(chain.from_iterable(where_rows))
    if None in flat_dirs:
        dflat = np.array(flat_dirs, dtype=np.float64)  # None: nan
        dflat = np.where(np.isnan(dflat), -1, dflat).astype(np.int64)
    else:  # every dir known (a snapshot from the brokers): no float pass
        dflat = np.array(flat_dirs, dtype=np.int64)
    del flat_dirs
    size = np.array(held_bytes, dtype=np.int64) if result.size is None else result.size.astype(np.int64)
    return _rows_of(names, result, (tix, pids, old_lens, old_flat, bounds), dflat, size)


def _dir_block(
    ts: list[Topic], maps: list[Mapping[int, Sequence[int]]], lens: np.ndarray
) -> np.ndarray | None:
    """Every row's current dirs as one (rows x rf) block, when the loader kept every topic's as a view
    over one store (snapshot._dir_views) in the layout of its replicas (`maps`, `lens` as _flatten read
    them, no reassignment running): one numpy slice, no Python list per partition. Else None."""
    if not ts or any(t.removing for t in ts):
        return None
    views = [t.dirs for t in ts]
    if not all(len(v) == len(m) for v, m in zip(views, maps, strict=True)):
        return None
    block = stack(views)  # type: ignore[arg-type]  # TopicReplicas views (a dict: None, read row by row)
    if block is None or block.size != len(lens) * block.shape[1] or not (lens == block.shape[1]).all():
        return None
    return block


def _rows_of(
    names: Sequence[str],
    result: Balanced,
    flat: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    dflat: np.ndarray,
    size: np.ndarray | None = None,
) -> _Rows:
    """_Rows from the flat current replicas and their dirs (`flat`: tix, pids, old_lens, old_flat,
    bounds as _rows read them); `size`: each row's bytes, else the plan's (Balanced.size)."""
    tix, pids, old_lens, old_flat, bounds = flat
    n_rows, width = len(pids), int(old_lens.max()) if len(old_lens) else 0
    if len(old_flat) == n_rows * width:  # every row of `width` replicas: no padding to scatter into
        old = old_flat.reshape(n_rows, width).astype(np.int64)
        old_dir = dflat.reshape(n_rows, width).astype(np.int64)
    else:
        row = np.repeat(np.arange(n_rows, dtype=np.int64), old_lens)
        col = np.arange(len(old_flat), dtype=np.int64) - np.repeat(bounds[:-1], old_lens)
        old = np.full((n_rows, width), -1, dtype=np.int64)
        old_dir = np.full((n_rows, width), -1, dtype=np.int64)
        old[row, col] = old_flat
        old_dir[row, col] = dflat
    new = result.rows.astype(np.int64)
    if size is None:
        assert result.size is not None
        size = result.size.astype(np.int64)
    return _Rows(list(names), tix, pids, new, size, old, old_dir, old_lens, size.tolist())


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------


def plan_disks(
    topics: Mapping[str, Topic],
    brokers: Sequence[Broker],
    result: Balanced,
    disks: Mapping[int, Sequence[LogDir]],
    capacities: Mapping[int, Capacity],
    tolerance: float,
    max_utilization: float,
    shared: bool = False,
) -> DiskPlan:
    """The disk placement of `result` (the broker-level plan of `topics`), see the module docstring."""
    ids = sorted(b.id for b in brokers)
    paths, start, dl, disk_of, cordoned = _layout(disks, ids, capacities, shared)
    rows = _rows(topics, result)
    weighted = bool(dl) and all(d.total for d in dl)
    plan = DiskPlan(paths, dl, tolerance, max_utilization, weighted, 0.0, cordoned=cordoned)
    which = np.full(len(paths) + 1, -1, dtype=np.int64)  # global dir -> disk, -1 offline (index -1: none)
    if disk_of:
        which[list(disk_of)] = list(disk_of.values())
    final, arrivals, moved = _start(rows, ids, [start[b] for b in ids], which, plan)
    by_broker: dict[int, list[int]] = {}
    for k, d in enumerate(dl):
        by_broker.setdefault(d.broker, []).append(k)
    placed = np.isin(arrivals[:, 2], np.array(list(by_broker), dtype=np.int64))
    arriving = int(rows.size[arrivals[placed, 0]].sum())
    weight = [float(d.total) if weighted and d.total else 1.0 for d in dl]
    plan.goal_utilization = (sum(d.after for d in dl) + arriving) / sum(weight) if dl else 0.0
    for d, w in zip(dl, weight, strict=True):
        d.goal = plan.goal_utilization * w
    _place(plan, rows, final, arrivals, by_broker, weight)
    moved_rows = set(np.flatnonzero(moved).tolist())
    changed = set(moved_rows)
    arrived = set(zip(arrivals[:, 0].tolist(), arrivals[:, 1].tolist(), strict=True))
    origin = _within_brokers(plan, rows, final, by_broker, disk_of, moved_rows, arrived)
    _largest(plan, rows, final, which)
    ch = np.array(sorted(changed), dtype=np.int64)
    within = _within_cells(plan, final, origin, disk_of, ch)
    plan.pending = partial(_explicit, plan, rows, final, ch, within)
    plan.texts = row_texts(plan.paths, (rows.names, rows.tix, rows.pid), final, ch, within)
    return plan


def _start(
    rows: _Rows, ids: list[int], firsts: list[int], which: np.ndarray, plan: DiskPlan
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(final, arrivals, moved): final[r, c] the global dir of the c-th new replica of row r (-1: any,
    _PAD beyond the row), where it stays (the dir it is in), arrivals (row, column, broker) the replicas
    arriving on a broker of B (to place), moved the rows that gain a replica; the bytes of the replicas
    leaving a disk taken off its `after`. In numpy over every row; what only the rows whose replicas
    change need (a few in ten), over those alone (_changed)."""
    new, old, old_len = rows.new, rows.old, rows.old_len
    n_rows, width = new.shape
    span = max(width, old.shape[1])
    oldp, newp = _padded(old, span), _padded(new, span)
    valid = np.arange(span, dtype=np.int64)[None, :] < old_len[:, None]  # (P, span)
    # global dir of each current replica: its broker's first dir + its local index, -1 unknown / not in B
    key = np.array(ids, dtype=np.int64)
    firsts_a = np.array(firsts, dtype=np.int64)
    at = np.minimum(np.searchsorted(key, oldp), max(len(ids) - 1, 0))
    in_b = (key[at] == oldp) & valid if len(ids) else np.zeros_like(valid)
    dirp = _padded(rows.old_dir, span)
    gold = np.where(in_b & (dirp >= 0), firsts_a[at] + dirp if len(ids) else -1, -1)
    # the same replicas: row[:n] == cur and (len(row) == n or row[n] < 0)
    eq = (newp == oldp) | ~valid
    nxt = newp[np.arange(n_rows), np.minimum(old_len, span - 1)]
    same = (old_len <= width) & eq.all(axis=1) & ((old_len == width) | (nxt < 0))
    final = np.where(valid[:, :width], gold[:, :width], _PAD)  # the same replicas: where they are
    ch = np.flatnonzero(~same)
    final[ch], arrive, leave, gains = _changed(new[ch], oldp[ch], valid[ch], gold[ch], key)
    r_a, c_a = ch[arrive[0]], arrive[1]
    arrivals = np.stack([r_a, c_a, new[r_a, c_a]], axis=1).astype(np.int64).reshape(-1, 3)
    r_l, g_l = ch[leave[0]], leave[1]
    gdisk = which[np.where(g_l >= 0, g_l, len(which) - 1)]
    keep = gdisk >= 0
    delta = np.zeros(len(plan.disks), dtype=np.int64)
    np.add.at(delta, gdisk[keep], rows.size[r_l[keep]])
    for k in np.flatnonzero(delta).tolist():
        plan.disks[k].after -= int(delta[k])
    moved = np.zeros(n_rows, dtype=bool)
    moved[ch[gains]] = True
    return final, arrivals, moved


def _padded(a: np.ndarray, span: int) -> np.ndarray:
    """`a` (rows x columns) with -1 columns up to `span`."""
    if a.shape[1] == span:
        return a
    out = np.full((a.shape[0], span), -1, dtype=np.int64)
    out[:, : a.shape[1]] = a
    return out


def _changed(
    new: np.ndarray, oldp: np.ndarray, valid: np.ndarray, gold: np.ndarray, key: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], np.ndarray]:
    """For rows whose replicas change (new, and the current replicas padded to `span` columns: oldp,
    valid, gold as in _start): (final, arrivals as (rows, columns), the leaving replicas of the rows that
    gain one as (rows, global dirs), those rows)."""
    n_rows, width = new.shape
    span = oldp.shape[1]
    # new replica c of a row: its match among the current replicas (the last, as a dict keeps it)
    match = (new[:, :, None] == oldp[:, None, :]) & valid[:, None, :]  # (P, W, span)
    found = match.any(axis=2)
    last = span - 1 - np.argmax(match[:, :, ::-1], axis=2)
    stay = np.take_along_axis(gold, last, axis=1)
    neg = new < 0
    nlen = np.where(neg.any(axis=1), np.argmax(neg, axis=1), width)
    live = np.arange(width)[None, :] < nlen[:, None]
    final = np.where(live, np.where(found, stay, -1), _PAD)
    gains = ((new >= 0) & ~found).any(axis=1)
    at_new = np.minimum(np.searchsorted(key, new), max(len(key) - 1, 0))
    new_in_b = (key[at_new] == new) if len(key) else np.zeros_like(neg)
    r_a, c_a = np.nonzero(live & ~found & new_in_b)
    # leaving replicas of the rows that gain one: their bytes leave their disk once the plan ends
    dup_later = np.zeros((n_rows, span), dtype=bool)  # a broker listed again later (the dict's last)
    for j in range(span - 1):
        dup_later[:, j] = ((oldp[:, j + 1 :] == oldp[:, j : j + 1]) & valid[:, j + 1 :]).any(axis=1)
    in_new = (oldp[:, :, None] == new[:, None, :]).any(axis=2)
    r_l, c_l = np.nonzero(gains[:, None] & valid & ~dup_later & ~in_new & (gold >= 0))
    return final, (r_a, c_a), (r_l, gold[r_l, c_l]), np.flatnonzero(gains)


def _explicit(
    plan: DiskPlan,
    rows: _Rows,
    final: np.ndarray,
    ch: np.ndarray,
    within: tuple[np.ndarray, np.ndarray],
) -> dict[tuple[str, int], list[str]]:
    """The log dirs written (see the module docstring), by (topic, partition): every replica's for the
    rows whose replica set changes (`ch`, sorted); for the others, those of the staying replicas moved
    within their broker that end on another disk (`within`, _within_cells)."""
    paths = plan.paths
    label = np.array([p for _, p in paths] + ["any"], dtype=object)  # "any": no dir (and _PAD, cut)
    got = final[ch]
    every = label[np.where(got >= 0, got, len(paths))].tolist()  # the changed rows: every replica
    short = np.flatnonzero((got == _PAD).any(axis=1)).tolist() if got.size else []
    for i in short:
        every[i] = every[i][: int((got[i] != _PAD).sum())]
    bulk = dict(zip(ch.tolist(), every, strict=True))
    bulk.update(_within_dirs(plan, final, within))
    order = sorted(bulk)
    at = np.array(order, dtype=np.int64)
    keys = zip([rows.names[t] for t in rows.tix[at].tolist()], rows.pid[at].tolist(), strict=True)
    return dict(zip(keys, map(bulk.__getitem__, order), strict=True))


def _within_cells(
    plan: DiskPlan,
    final: np.ndarray,
    origin: dict[tuple[int, int], int],
    disk_of: dict[int, int],
    ch: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the staying replicas moved within their broker that end on another disk than
    they were on (`origin`), in the rows whose replicas stay (not in `ch`): their log dirs are written."""
    if not origin:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    n = len(plan.paths)
    changed = np.zeros(len(final), dtype=bool)
    changed[ch] = True
    rc = np.array(list(origin), dtype=np.int64).reshape(-1, 2)
    src = np.fromiter(origin.values(), dtype=np.int64, count=len(origin))
    disk = np.full(n + 1, -1, dtype=np.int64)  # global dir -> disk (index n: none)
    disk[list(disk_of)] = list(disk_of.values())
    g = final[rc[:, 0], rc[:, 1]]
    keep = ~changed[rc[:, 0]] & (disk[np.where((g >= 0) & (g < n), g, n)] != src)
    return rc[keep, 0], rc[keep, 1]


def _within_dirs(
    plan: DiskPlan, final: np.ndarray, within: tuple[np.ndarray, np.ndarray]
) -> dict[int, list[str]]:
    """_explicit's log dirs of the rows of `within` (_within_cells): the new dir of each replica moved,
    "any" for the others. In numpy over the moved replicas (a Python pass per row cost 0.2 s at 1M)."""
    if not len(within[0]):
        return {}
    n = len(plan.paths)
    rows, at = np.unique(within[0], return_inverse=True)
    got = final[rows]
    moved = np.zeros(got.shape, dtype=bool)
    moved[at.ravel(), within[1]] = True
    label = np.array([p for _, p in plan.paths] + ["any"], dtype=object)
    text = np.where(moved, label[np.where(got >= 0, got, n)], "any").tolist()
    lens = (got != _PAD).sum(axis=1).tolist()  # _PAD only after a row's replicas
    return {r: text[i][: lens[i]] for i, r in enumerate(rows.tolist())}


def _fits(d: _Disk, s: int, limit: float) -> bool:
    return d.total is None or d.peak + s <= limit * d.total


def _place(
    plan: DiskPlan,
    rows: _Rows,
    final: np.ndarray,
    arrivals: np.ndarray,
    by_broker: dict[int, list[int]],
    weight: list[float],
) -> None:
    """Step 1: each arriving replica, largest first, on its broker's disk (see the module docstring).
    The brokers' disks are apart, so the i-th arrival of every broker is placed at once (numpy over
    the brokers), i = 0, 1, ...: the same choices as one replica after the other."""
    dl = plan.disks
    if not len(arrivals) or not dl:
        return
    owners = np.array(sorted(by_broker), dtype=np.int64)
    at = np.minimum(np.searchsorted(owners, arrivals[:, 2]), len(owners) - 1)
    keep = owners[at] == arrivals[:, 2]  # brokers without a live disk: nothing to place, nothing said
    arr, bix = arrivals[keep], at[keep]
    size = rows.size[arr[:, 0]]
    order = np.lexsort((arr[:, 1], arr[:, 0], -size))  # largest first, then plan order
    arr, bix, size = arr[order], bix[order], size[order]
    by = np.argsort(bix, kind="stable")  # each broker's arrivals in that order
    firsts = np.searchsorted(bix[by], bix[by])
    rank = np.empty(len(by), dtype=np.int64)
    rank[by] = np.arange(len(by)) - firsts
    rounds = np.argsort(rank, kind="stable")
    cuts = np.concatenate([[0], np.cumsum(np.bincount(rank))]).tolist()
    width = max(len(by_broker[int(b)]) for b in owners.tolist())
    mat = np.full((len(owners), width + 1), len(dl), dtype=np.int64)  # len(dl): no disk (a dummy)
    for i, b in enumerate(owners.tolist()):
        mat[i, : len(by_broker[b])] = by_broker[b]
    after, peak, sized, total, ok, wt, cap, dir_in = _disk_arrays(plan, weight)
    unplaced: list[int] = []
    for a, b in pairwise(cuts):
        idx = rounds[a:b]
        disks, s = mat[bix[idx]], size[idx][:, None]
        valid = ok[disks] & (~sized[disks] | (peak[disks] + s <= cap[disks]))
        k1 = np.where(valid, (after[disks] + s) / wt[disks], np.inf)
        k2 = np.where(sized[disks], -(total[disks] - peak[disks]).astype(np.float64), -0.0)
        tie = valid & (k1 == k1.min(axis=1, keepdims=True))
        k2 = np.where(tie, k2, np.inf)
        best = np.argmax(tie & (k2 == k2.min(axis=1, keepdims=True)), axis=1)
        chosen = disks[np.arange(len(idx)), best]
        placed = valid.any(axis=1)
        unplaced.extend(idx[~placed].tolist())
        got, k = idx[placed], chosen[placed]
        after[k] += size[got]
        peak[k] += size[got]
        final[arr[got, 0], arr[got, 1]] = dir_in[k]
    for d, x, y in zip(dl, after.tolist(), peak.tolist(), strict=False):
        d.after, d.peak = x, y
    for i in sorted(unplaced):
        r, _, b = arr[i].tolist()
        plan.unplaced.append((rows.names[int(rows.tix[r])], int(rows.pid[r]), b))


def _disk_arrays(plan: DiskPlan, weight: list[float]) -> tuple[np.ndarray, ...]:
    """The disks' (after, peak, size known, total, eligible, weight, peak limit in bytes, dir a replica
    goes to), each with one dummy disk last (no disk: never eligible)."""
    dl = plan.disks
    total = np.array([d.total or 0 for d in dl] + [0], dtype=np.int64)
    return (
        np.array([d.after for d in dl] + [0], dtype=np.int64),
        np.array([d.peak for d in dl] + [0], dtype=np.int64),
        np.array([d.total is not None for d in dl] + [False]),
        total,
        np.array([d.eligible for d in dl] + [False]),
        np.array([*weight, 1.0], dtype=np.float64),
        plan.limit * total.astype(np.float64),
        np.array([_dir_in(plan, d) for d in dl] + [-1], dtype=np.int64),
    )


def _dir_in(plan: DiskPlan, d: _Disk) -> int:
    """The dir of the disk a replica goes to: its first dir not cordoned (one filesystem: any will do)."""
    return next(g for g in d.dirs if not _cordoned(plan, g)) if d.eligible else d.dirs[0]


def _cordoned(plan: DiskPlan, g: int) -> bool:
    return g in plan.cordoned


def _out(x: float, d: _Disk, tol: float) -> float:
    low, high = d.goal * (1 - tol), d.goal * (1 + tol)
    return max(0.0, x - high) + max(0.0, low - x)


def _within_brokers(
    plan: DiskPlan,
    rows: _Rows,
    final: np.ndarray,
    by_broker: dict[int, list[int]],
    disk_of: dict[int, int],
    moved_rows: set[int],
    arrived: set[tuple[int, int]],
) -> dict[tuple[int, int], int]:
    """Step 2: moves between the disks of one broker (see the module docstring). Returns the staying
    replicas moved, (row, column) -> the disk they were on."""
    dl, tol = plan.disks, plan.tolerance
    needy = sorted(
        b for b, ks in by_broker.items() if len(ks) > 1 and any(_out(dl[k].after, dl[k], tol) > 0 for k in ks)
    )
    if not needy:
        return {}
    # Movable replicas per disk, sorted by (size, row, column): the replicas of planned partitions
    # (arrivals, which are placed anew at no cost, and staying ones); their sizes alongside (bisected).
    want = set(needy)
    movable, sizes = _movable(
        plan, rows, final, {g: k for g, k in disk_of.items() if plan.paths[g][0] in want}
    )
    search = _Search(plan, movable, sizes, final.shape[1])
    origin: dict[tuple[int, int], int] = {}  # staying replica moved -> the disk it was on
    for b in needy:
        ks = by_broker[b]
        for _ in range(MAX_STEPS_PER_BROKER):
            step = search.move(ks, search.measure(ks)) or search.move(ks)
            if step is not None:
                src, tgt, i = step
                item = (sizes[src][i], movable[src][i])
                search.shift(final, (src, tgt), item, (arrived, origin, moved_rows))
                continue
            swap = _best_swap(plan, ks, movable, sizes)
            if swap is None:
                break
            p, q, x, y = swap  # x from p to q, then y from q to p
            search.shift(final, (p, q), x, (arrived, origin, moved_rows))
            search.shift(final, (q, p), y, (arrived, origin, moved_rows))
    _count_within(plan, rows.sizes, final, origin, disk_of)
    return origin


def _count_within(
    plan: DiskPlan,
    sizes: list[int],
    final: np.ndarray,
    origin: dict[tuple[int, int], int],
    disk_of: dict[int, int],
) -> None:
    """Counts the staying replicas moved that end on another disk than they were on (one moved on from
    where it went first, or even back, counts once): their disks compared in numpy, bytes summed exactly."""
    if not origin:
        return
    rc = np.array(list(origin), dtype=np.int64).reshape(-1, 2)
    src = np.fromiter(origin.values(), dtype=np.int64, count=len(origin))
    disk = np.full(len(plan.paths), -1, dtype=np.int64)  # global dir -> disk
    disk[list(disk_of)] = list(disk_of.values())
    moved = rc[disk[final[rc[:, 0], rc[:, 1]]] != src, 0].tolist()
    plan.moves_within += len(moved)
    plan.bytes_within += sum(map(sizes.__getitem__, moved))


def _movable(
    plan: DiskPlan, rows: _Rows, final: np.ndarray, on: dict[int, int]
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Disk -> its replicas (row x width + column into `final`) sorted by (size, row, column), and disk ->
    their sizes alongside, for the disks of `on` (global dir -> disk): numpy finds and orders them (one
    pass over the plan's replicas, no Python loop or tuple per replica)."""
    n = len(plan.paths)
    which = np.full(n + 1, -1, dtype=np.int64)  # index n: no dir (-1, "any"), out of range or _PAD
    if on:
        which[list(on)] = list(on.values())
    width = final.shape[1]
    by_size = np.argsort(rows.size, kind="stable")  # the rows by size, then plan order
    where = which[np.where((final >= 0) & (final < n), final, n)][by_size].ravel()
    flat = np.flatnonzero(where >= 0)  # by (size, row, column)
    if not len(flat):
        return {}, {}
    disk = where[flat]
    # then by disk, stable (a radix sort for a few thousand disks): (disk, size, row, column)
    order = np.argsort(disk.astype(np.uint16) if len(plan.disks) < 2**16 else disk, kind="stable")
    flat, disk = flat[order], disk[order]  # one gather each: the rows and columns follow from flat
    at = flat // width
    row = by_size[at]
    items = row * width + (flat - at * width)
    cuts = np.flatnonzero(np.diff(disk)) + 1
    keys = disk[[0, *cuts.tolist()]].tolist()
    # each disk's lists straight from numpy: no list of every replica sliced again
    return (
        dict(zip(keys, [x.tolist() for x in np.split(items, cuts)], strict=True)),
        dict(zip(keys, [x.tolist() for x in np.split(rows.size[row], cuts)], strict=True)),
    )


@dataclass(slots=True)
class _Found:
    """The best move of one _Search.move call so far: its gain (a move must gain more than 1e-9), its key
    (size, row x width + column, source, target, index in movable[source]), and each source's
    breakpoints bisected (_near_full), once a call."""

    top: float = 1e-9
    best: tuple[int, int, int, int, int] | None = None
    near: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)


class _Search:
    """The moves within a broker: each disk's band edges computed once (the same floats as _out), and
    each disk's movable replicas (row x width + column, see _movable) with their sizes alongside."""

    __slots__ = ("dir_in", "hi", "lo", "movable", "out", "plan", "scale", "sizes", "width")

    def __init__(
        self, plan: DiskPlan, movable: dict[int, list[int]], sizes: dict[int, list[int]], width: int
    ) -> None:
        tol = plan.tolerance
        self.plan, self.movable, self.sizes, self.width = plan, movable, sizes, width
        self.lo = [d.goal * (1 - tol) for d in plan.disks]
        self.hi = [d.goal * (1 + tol) for d in plan.disks]
        self.dir_in = [_dir_in(plan, d) for d in plan.disks]  # where a replica moved there goes
        self.out = [0.0] * len(plan.disks)  # bytes outside the band, of the disks of `measure`
        self.scale = 0.0  # the largest of their bytes and band tops (measure)

    def measure(self, ks: list[int]) -> int:
        """The bytes outside its band of each disk of ks (as _out), once a step for move and _pair, and
        the bytes in play (`scale`, see move); returns the disk farthest over (or under) its band (ties:
        the lowest index). One loop: it runs every step."""
        dl, lo, hi, out = self.plan.disks, self.lo, self.hi, self.out
        best, far = ks[0], -1.0
        top: float = max(dl[best].after, hi[best])
        for k in ks:
            x, a, b = dl[k].after, lo[k], hi[k]
            o = out[k] = (x - b if x > b else 0.0) + (a - x if a > x else 0.0)
            if o > far or (o == far and k < best):
                best, far = k, o
            if x > top or b > top:
                top = b if b > x else x
        self.scale = top
        return best

    def shift(
        self,
        final: np.ndarray,
        pair: tuple[int, int],
        item: tuple[int, int],
        book: tuple[set[tuple[int, int]], dict[tuple[int, int], int], set[int]],
    ) -> None:
        """Moves the replica `item` (size, row x width + column) from disk pair[0] to disk pair[1] of its
        broker; each disk's lists stay in (size, row, column) order."""
        plan, movable, sizes = self.plan, self.movable, self.sizes
        dl = plan.disks
        src, tgt = pair
        arrived, origin, moved_rows = book
        s, rc = item
        ids, sz = movable[src], sizes[src]
        lo = bisect.bisect_left(sz, s)
        i = bisect.bisect_left(ids, rc, lo, bisect.bisect_right(sz, s, lo))
        del ids[i]
        del sz[i]
        r, c = divmod(rc, self.width)
        dl[src].after -= s
        dl[tgt].after += s
        dl[tgt].peak += s
        final[r, c] = self.dir_in[tgt]
        ids, sz = movable.setdefault(tgt, []), sizes.setdefault(tgt, [])
        lo = bisect.bisect_left(sz, s)
        j = bisect.bisect_left(ids, rc, lo, bisect.bisect_right(sz, s, lo))
        ids.insert(j, rc)
        sz.insert(j, s)
        if (r, c) in arrived:  # placed elsewhere: not a move within the broker, nothing lands on src
            dl[src].peak -= s
            return
        origin.setdefault((r, c), src)
        moved_rows.add(r)

    def move(self, ks: list[int], only: int | None = None) -> tuple[int, int, int] | None:
        """(source disk, target disk, index in movable[source]) of the best move, None when none gains.

        The gain of moving s bytes, out(a) + out(t) - out(a - s) - out(t + s), is concave in s (out is
        convex), so its best over the sorted sizes is next to one of its four breakpoints: only those
        candidates are weighed (ties: the smaller replica, then plan order; _pair). `only`: the pairs
        with that disk. A pair into a disk above its band, or out of one below it, gains nothing (out is
        1-Lipschitz: out(a) - out(a - s) <= s = out(t + s) - out(t)) but rounding: it is weighed only
        when no other pair gains more than any rounding could (a billionth of the bytes in play)."""
        dl, lo, hi, out, sizes = self.plan.disks, self.lo, self.hi, self.out, self.sizes
        found = _Found()
        later: list[tuple[int, int]] = []
        if only is None:
            pairs = [(src, tgt) for src in ks for tgt in ks if src != tgt]
        else:
            pairs = [(only, k) for k in ks if k != only] + [(k, only) for k in ks if k != only]
        for src, tgt in pairs:
            # both inside their band: _pair would weigh nothing
            if not sizes.get(src) or not dl[tgt].eligible or (out[src] <= 0 and out[tgt] <= 0):
                continue
            if dl[tgt].after > hi[tgt] or dl[src].after < lo[src]:
                later.append((src, tgt))
                continue
            self._pair(src, tgt, found)
        if later and not found.top > 1e-9 * self.scale + 1e-9:
            for src, tgt in later:
                self._pair(src, tgt, found)
        best = found.best
        return None if best is None else (best[2], best[3], best[4])

    def _pair(self, src: int, tgt: int, found: _Found) -> None:
        """The candidates of the moves from disk src to disk tgt (_near_cap) weighed into `found`: the
        largest gain, then the smallest key. After `measure`; one of the two is outside its band."""
        dl, limit, lo, hi = self.plan.disks, self.plan.limit, self.lo, self.hi
        sz, t = self.sizes[src], dl[tgt]
        aa, alo, ahi = dl[src].after, lo[src], hi[src]
        ta, tlo, thi = t.after, lo[tgt], hi[tgt]
        out_a, out_t = self.out[src], self.out[tgt]
        cap = len(sz)
        if t.total is not None:  # sizes above the target's room under the limit cannot go
            room = limit * t.total - t.peak
            cap = bisect.bisect_right(sz, int(room) if room >= 0 else -1)
        if cap == 0:
            return
        near_a = found.near.get(src)
        if near_a is None:
            near_a = found.near[src] = _near_full(sz, (aa - ahi, aa - alo))
        top, best, cands = found.top, found.best, self.movable[src]
        for i in _near_cap(sz, cap, near_a, (thi - ta, tlo - ta)):
            s = sz[i]
            x, y = aa - s, ta + s
            gain = (
                out_a
                + out_t
                - ((x - ahi if x > ahi else 0.0) + (alo - x if alo > x else 0.0))
                - ((y - thi if y > thi else 0.0) + (tlo - y if tlo > y else 0.0))
            )
            if gain < top or gain <= 1e-9:
                continue
            key = (s, cands[i], src, tgt, i)  # cands[i]: (row, column) in order
            if gain > top or best is None or key < best:
                top, best = gain, key
        found.top, found.best = top, best


_Swap = tuple[int, int, tuple[int, int], tuple[int, int]]
_SwapKey = tuple[float, int, int, int, int, int]
_EXACT = 2**53  # below it an int64 compares with a float64 as Python's int with float does (exactly)


def _best_swap(
    plan: DiskPlan, ks: list[int], movable: dict[int, list[int]], sizes: dict[int, list[int]]
) -> _Swap | None:
    """When no single move gains (a broker at the edge of its own band: its disks straddle theirs),
    the exchange of two replicas between two of its disks, x from p to q and y (smaller) from q to p,
    that most reduces the bytes outside the bands, both peaks kept under the limit (ties: the fewer
    bytes moved, then plan order of x, then of y); None when none gains. The net d = x - y is what
    counts: for each x, only the y nearest each breakpoint of the gain in d are weighed. Replicas as
    (size, row x width + column) (see _movable)."""
    dl, tol = plan.disks, plan.tolerance
    best: tuple[_SwapKey, _Swap] | None = None
    for p in ks:
        a, xs, xsz = dl[p], movable.get(p), sizes.get(p)
        if not xs or not xsz:
            continue
        out_a = _out(a.after, a, tol)
        for q in ks:
            t, ys, ysz = dl[q], movable.get(q), sizes.get(q)
            if q == p or not ys or not ysz or not t.eligible or not a.eligible:
                continue
            out_t = _out(t.after, t, tol)
            if out_a <= 0 and out_t <= 0:
                continue
            got = _swap_pair(plan, (p, q), (xs, xsz, ys, ysz), (out_a, out_t))
            if got is not None and (best is None or got[0] < best[0]):
                best = got
    return None if best is None else best[1]


def _swap_pair(
    plan: DiskPlan,
    pq: tuple[int, int],
    lists: tuple[list[int], list[int], list[int], list[int]],
    outs: tuple[float, float],
) -> tuple[_SwapKey, _Swap] | None:
    """_best_swap's best exchange between disks p and q (its key, the smallest wins, and the swap):
    in numpy over p's replicas when every integer involved is below 2**53 (the same comparisons and
    floats as one replica after the other), else replica by replica (_swap_loop)."""
    p, q = pq
    a, t, tol = plan.disks[p], plan.disks[q], plan.tolerance
    xs, xsz, ys, ysz = lists
    room_q = plan.limit * t.total - t.peak if t.total is not None else float("inf")
    room_p = plan.limit * a.total - a.peak if a.total is not None else float("inf")
    points = [x for x in (a.after - a.goal * (1 + tol), a.after - a.goal * (1 - tol),
                          t.goal * (1 + tol) - t.after, t.goal * (1 - tol) - t.after) if x > 0]  # fmt: skip
    big = max(abs(a.after), abs(t.after)) + max(xsz[-1], ysz[-1])
    if big >= _EXACT or any(x >= _EXACT for x in points):
        return _swap_loop(plan, pq, lists, outs)
    n = bisect.bisect_right(xsz, room_q)  # x fits in q: xsz sorted, the loop's break
    if n == 0 or not points:
        return None
    xa, ya = np.array(xsz[:n], dtype=np.int64), np.array(ysz, dtype=np.int64)
    js = [np.searchsorted(ya, xa - int(d)) for d in points]  # bisect_left, each x and breakpoint
    ix = np.tile(np.arange(n), 2 * len(js))
    ky = np.concatenate([k for j in js for k in (j - 1, j)])
    ok = (ky >= 0) & (ky < len(ya))
    ix, ky = ix[ok], ky[ok]
    x0, y0 = xa[ix], ya[ky]
    ok = (y0 < x0) & (y0 <= room_p)
    ix, ky, x0, y0 = ix[ok], ky[ok], x0[ok], y0[ok]
    gain = _swap_gain(plan, pq, outs, a.after - x0 + y0, t.after + x0 - y0)
    ok = gain > 1e-9
    if not ok.any():
        return None
    ix, ky, x0, y0, gain = ix[ok], ky[ok], x0[ok], y0[ok], gain[ok]
    xi, yk = np.array(xs[:n], dtype=np.int64)[ix], np.array(ys, dtype=np.int64)[ky]
    i = int(np.lexsort((yk, xi, x0 + y0, -gain))[0])
    key = (-float(gain[i]), int(x0[i] + y0[i]), int(xi[i]), int(yk[i]), p, q)
    return key, (p, q, (int(x0[i]), int(xi[i])), (int(y0[i]), int(yk[i])))


def _swap_gain(
    plan: DiskPlan, pq: tuple[int, int], outs: tuple[float, float], x: np.ndarray, y: np.ndarray
) -> np.ndarray:
    """The gains of exchanges leaving p at x bytes and q at y (_swap_loop's floats, elementwise)."""
    a, t, tol = plan.disks[pq[0]], plan.disks[pq[1]], plan.tolerance
    alo, ahi = a.goal * (1 - tol), a.goal * (1 + tol)
    tlo, thi = t.goal * (1 - tol), t.goal * (1 + tol)
    out_x = np.where(x > ahi, x - ahi, 0.0) + np.where(alo > x, alo - x, 0.0)
    out_y = np.where(y > thi, y - thi, 0.0) + np.where(tlo > y, tlo - y, 0.0)
    return (outs[0] + outs[1]) - out_x - out_y


def _swap_loop(
    plan: DiskPlan,
    pq: tuple[int, int],
    lists: tuple[list[int], list[int], list[int], list[int]],
    outs: tuple[float, float],
) -> tuple[_SwapKey, _Swap] | None:
    """_swap_pair replica by replica (integers of 2**53 and more)."""
    p, q = pq
    a, t, tol = plan.disks[p], plan.disks[q], plan.tolerance
    xs, xsz, ys, ysz = lists
    out_a, out_t = outs
    best: tuple[_SwapKey, _Swap] | None = None
    alo, ahi = a.goal * (1 - tol), a.goal * (1 + tol)  # the bands as _out computes them
    tlo, thi = t.goal * (1 - tol), t.goal * (1 + tol)
    room_q = plan.limit * t.total - t.peak if t.total is not None else float("inf")
    room_p = plan.limit * a.total - a.peak if a.total is not None else float("inf")
    points = [x for x in (a.after - a.goal * (1 + tol), a.after - a.goal * (1 - tol),
                          t.goal * (1 + tol) - t.after, t.goal * (1 - tol) - t.after) if x > 0]  # fmt: skip
    for xi, xs0 in zip(xs, xsz, strict=True):
        if xs0 > room_q:
            break
        for d in points:
            j = bisect.bisect_left(ysz, xs0 - int(d))
            for k in (j - 1, j):
                if not 0 <= k < len(ysz):
                    continue
                ys0 = ysz[k]
                if ys0 >= xs0 or ys0 > room_p:
                    continue
                x, y = a.after - xs0 + ys0, t.after + xs0 - ys0  # net xs0 - ys0 moved (_out's floats)
                gain = (
                    out_a
                    + out_t
                    - ((x - ahi if x > ahi else 0.0) + (alo - x if alo > x else 0.0))
                    - ((y - thi if y > thi else 0.0) + (tlo - y if tlo > y else 0.0))
                )
                if gain <= 1e-9:
                    continue
                key = (-gain, xs0 + ys0, xi, ys[k], p, q)
                if best is None or key < best[0]:
                    best = key, (p, q, (xs0, xi), (ys0, ys[k]))
    return best


def _near_full(sz: list[int], points: tuple[float, float]) -> list[tuple[int, int, int]]:
    """For each breakpoint x > 0 of the source side: (j, the first index of sz[j - 1]'s size (-1: none),
    j + 1 when it is the first of its size (else -1)), j = bisect_left(sz, int(x)) over all of `sz`;
    _near_cap clips them to a target's cap."""
    out: list[tuple[int, int, int]] = []
    n = len(sz)
    for x in points:
        if x <= 0:
            continue
        j = bisect.bisect_left(sz, int(x))
        first = bisect.bisect_left(sz, sz[j - 1]) if j > 0 else -1
        out.append((j, first, j + 1 if j + 1 < n and sz[j + 1] != sz[j] else -1))
    return out


def _near_cap(
    sz: list[int], cap: int, near_a: list[tuple[int, int, int]], points: tuple[float, float]
) -> set[int]:
    """The indices of the candidates (sizes `sz`, below `cap`) on each side of the gain's breakpoints:
    the first candidate of each size (the smallest replica first, then plan order). `near_a`: the source
    side's breakpoints bisected over all of `sz` (_near_full): the same indices as bisecting below
    `cap` (one past cap: the largest that fits, added anyway); `points`: the target side's."""
    out = {0, bisect.bisect_left(sz, sz[cap - 1], 0, cap)}  # the smallest, the largest that fits
    for j, first, nxt in near_a:
        if j <= cap:
            if j > 0:
                out.add(first)
            if j < cap:
                out.add(j)
                if 0 <= nxt < cap:
                    out.add(nxt)
    for x in points:
        if x <= 0:
            continue
        j = bisect.bisect_left(sz, int(x), 0, cap)
        if j > 0:
            out.add(bisect.bisect_left(sz, sz[j - 1], 0, cap))
        if j < cap:
            out.add(j)  # sz[j - 1] < int(x) <= sz[j]: j is the first of its size
            if j + 1 < cap:
                out.add(j if sz[j + 1] == sz[j] else j + 1)
    return out


def _largest(plan: DiskPlan, rows: _Rows, final: np.ndarray, which: np.ndarray) -> None:
    """Each disk's largest planned partition as placed (which: global dir -> disk, -1 none, last: none)."""
    n = len(plan.paths)
    where = which[np.where((final >= 0) & (final < n), final, n)]
    row, col = np.nonzero(where >= 0)
    top = np.zeros(len(plan.disks), dtype=np.int64)
    np.maximum.at(top, where[row, col], rows.size[row])
    for d, s in zip(plan.disks, top.tolist(), strict=True):
        d.largest = max(d.largest, s)


# ---------------------------------------------------------------------------------------------
# What generate says about it
# ---------------------------------------------------------------------------------------------


def unplaced_refusal(plan: DiskPlan) -> str:
    """The one line refusing a plan whose replica fits on no disk of its broker."""
    topic, p, b = plan.unplaced[0]
    more = f" (and {len(plan.unplaced) - 1} more)" if len(plan.unplaced) > 1 else ""
    return (
        f"--max-disk-utilization {plan.limit:g}: the replica of {topic}-{p} planned for broker {b} fits on "
        f"none of its log dirs that is live and not cordoned without passing the limit during the move{more}"
    )


def band_note(plan: DiskPlan) -> str:
    """The disks left outside their band (the first few named, each with why: see band_reason)."""
    out = [f"{plan.name(d)} ({band_reason(plan, d)})" for d in plan.disks if not plan._within(d)]
    shown = "; ".join(out[:5]) + (f"; and {len(out) - 5} more" if len(out) > 5 else "")
    return (
        f"--balance bytes: {len(out)} disk(s) end outside the tolerance {100 * plan.tolerance:g}% of the "
        f"goal: {shown}"
    )


def band_reason(plan: DiskPlan, d: _Disk) -> str:
    """Why disk `d` ends outside its band. Its broker's bytes after the plan (fixed by the plan between
    brokers) outside the sum of its disks' bands (each widened by its largest partition as placed): no
    placement of these replicas reaches them. Otherwise the
    broker sits within a few bytes of that sum's edge (the plan between brokers stops at the edge of
    the broker's own band), and its disks' bytes would have to split nearly exactly: no move of one
    replica and no exchange of two between its disks (within the limit) brings it closer."""
    mine = [x for x in plan.disks if x.broker == d.broker]
    held = sum(x.after for x in mine)
    wide = [max(plan.tolerance * x.goal, x.largest) for x in mine]  # each band's half width
    low = sum(x.goal - w for x, w in zip(mine, wide, strict=True))
    high = sum(x.goal + w for x, w in zip(mine, wide, strict=True))
    if held < low or held > high:
        return (
            f"broker {d.broker} holds {held} bytes after the plan, outside the sum of its disks' bands "
            f"{low:.0f}..{high:.0f}: no choice of its log dirs reaches them"
        )
    spare = min(held - low, high - held)
    return (
        f"broker {d.broker} is {spare:.0f} bytes from the edge of its disks' bands together; no move or "
        "exchange of replicas between its disks within --max-disk-utilization brings it closer"
    )


def skipped_note(disks: Mapping[int, Sequence[LogDir]], brokers: Sequence[Broker]) -> str | None:
    """The one line naming the log dirs of B the plan places no replica in, and why (offline: the error
    DescribeLogDirs answered; cordoned: in the broker's cordoned.log.dirs); None when there are none."""
    out: list[str] = []
    for b in sorted(x.id for x in brokers):
        for d in disks.get(b, ()):
            if d.offline:
                out.append(f"broker {b}'s {d.path} (offline: {d.error or 'unknown error'})")
            elif d.cordoned is True:
                out.append(f"broker {b}'s {d.path} (cordoned.log.dirs)")
    if not out:
        return None
    shown = ", ".join(out[:5]) + (f" and {len(out) - 5} more" if len(out) > 5 else "")
    return f"--balance bytes: no replica placed in {len(out)} log dir(s): {shown}"


def look_shared(
    disks: Mapping[int, Sequence[LogDir]], capacities: Mapping[int, Capacity], brokers: Sequence[Broker]
) -> list[int]:
    """The brokers of B not declared --shared-log-dirs with two live log dirs of byte-identical total and
    usable bytes: one filesystem, most likely (DescribeLogDirs cannot tell twin disks equally full)."""
    out: list[int] = []
    for b in sorted(x.id for x in brokers):
        cap = capacities.get(b)
        if cap is not None and cap.shared is True:
            continue
        seen = [(d.total, d.usable) for d in disks.get(b, ()) if not d.offline and d.total is not None]
        if len(set(seen)) < len(seen):
            out.append(b)
    return out
