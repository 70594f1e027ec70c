"""The replica sets of the balanced strategy: trim, fill, move. Pure (numpy).

Order of work on a `Work` whose rows hold the current replicas on B (replicas off B already removed):
1. `trim`: rows with more replicas than their RF, or whose replicas cannot reach the racks they must
   span, drop replicas: those on the brokers most over their target first, the rack rule kept.
2. `fill_holes`: every empty slot below the row's RF gets a broker: under-full brokers first.
3. `move`: replicas go from brokers over their target to brokers under it, in rows where the move keeps
   the rack spread and the per-topic cap.
Steps 2 and 3 run in seeded random rounds over whole arrays first (the bulk of the work at any size),
then a scalar pass handles what the rounds could not place, including chains of moves through brokers at
their target, at any size: a chain search expands a broker CHAIN_CHUNK replicas at a time and stops once
every broker is reached, so its cost follows what it must look at, not brokers x slots.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from reassign_cli.planning.balanced.state import Work, first_of, group_rank, spans, tokens

ROUNDS = 64  # bulk rounds before the scalar pass takes over
Node = int | tuple[int, int]  # a broker, or (topic, broker): the broker must pass on a replica of the topic
HOLE = -1  # the node a chain that fills a hole starts from
# Replicas of a broker a chain search tries at once (the next ones only while brokers remain unreached).
CHAIN_CHUNK = 256
SMALLEST = 4  # with sizes: candidates per deficit unit among the smallest replicas of over-full brokers


# ---------------------------------------------------------------------------------------------
# Feasibility, vectorized over candidate (row, broker) pairs
# ---------------------------------------------------------------------------------------------


def can_add(w: Work, rows: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(valid, under the topic cap) for putting broker v into an empty slot of each row."""
    rep = w.rep[rows]
    absent = ~(rep == v[:, None]).any(axis=1)
    racks = w.rack_ext[rep]
    fresh = ~(racks == w.rack[v][:, None]).any(axis=1)
    rack_ok = w.required_racks(rows) - (spans(racks) + fresh) <= w.holes(rows) - 1
    return absent & rack_ok, under_cap(w, rows, v)


def can_move(w: Work, rows: np.ndarray, cols: np.ndarray, v: np.ndarray, capped: bool = True) -> np.ndarray:
    """Whether the replica in (row, col) may move to broker v: v not in the row, the row still spans
    the racks it must (or no fewer than now), v under the topic's cap (unless not `capped`)."""
    rep = w.rep[rows]
    u = rep[np.arange(len(rows)), cols]
    absent = ~(rep == v[:, None]).any(axis=1)
    racks = w.rack_ext[rep]
    ru, rv = w.rack[u], w.rack[v]
    span = spans(racks)
    alone = (racks == ru[:, None]).sum(axis=1) == 1
    fresh = ~(racks == rv[:, None]).any(axis=1)
    after = np.where(ru == rv, span, span - alone + fresh)
    rack_ok = (w.required_racks(rows) - after <= w.holes(rows)) | (after >= span)
    if not capped:
        return absent & rack_ok
    ok = absent & rack_ok & under_cap(w, rows, v)
    if w.tight:  # only from a broker holding more of the topic than its even share
        t = w.tix[rows]
        ok &= w.pairs.get(t * w.stride + u) > w.cap[t, w.rack[u]]
    return ok


def under_cap(w: Work, rows: np.ndarray, v: np.ndarray) -> np.ndarray:
    t = w.tix[rows]
    return w.pairs.get(t * w.stride + v) < w.cap[t, w.rack[v]]


def _cap_room(w: Work, rows: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Among candidate additions (in order), those that keep every (topic, broker) within its cap."""
    t = w.tix[rows]
    key = t * w.stride + v
    return w.pairs.get(key) + group_rank(key) < w.cap[t, w.rack[v]]


def _add(w: Work, rows: np.ndarray, v: np.ndarray) -> None:
    rep = w.rep[rows]
    cols = np.argmax((rep < 0) & (np.arange(rep.shape[1])[None, :] < w.rf[rows][:, None]), axis=1)
    w.rep[rows, cols] = v
    np.add.at(w.count, v, 1)
    w.pairs.add(w.tix[rows] * w.stride + v, 1)


def _move(w: Work, rows: np.ndarray, cols: np.ndarray, v: np.ndarray) -> None:
    u = w.rep[rows, cols]
    w.rep[rows, cols] = v
    np.add.at(w.count, u, -1)
    np.add.at(w.count, v, 1)
    t = w.tix[rows] * w.stride
    w.pairs.add(t + u, -1)
    w.pairs.add(t + v, 1)


# ---------------------------------------------------------------------------------------------
# 1. Trim
# ---------------------------------------------------------------------------------------------


def rows_to_trim(w: Work) -> np.ndarray:
    """Rows with more replicas than their RF, or that cannot reach their racks by filling holes."""
    rep = w.rep
    kept = (rep >= 0).sum(axis=1)
    short = w.required_racks() - spans(w.rack_ext[rep]) > np.maximum(w.rf - kept, 0)
    return np.flatnonzero((kept > w.rf) | short)


def trim(w: Work, rows: np.ndarray, over_bytes: tuple[np.ndarray, np.ndarray] | None = None) -> None:
    """Drop replicas of `rows` (see rows_to_trim): keep those on the brokers least over their target
    (the earlier slot on ties), accepting a second replica in a rack only while the slots left can still
    reach the racks the row must span. Excess rows are compacted (kept replicas first, in their order);
    others keep their slots, the dropped ones becoming holes in place. `over_bytes`: (each broker's bytes
    over its goal, each row's size): "most over" counts bytes instead of replicas (--balance bytes)."""
    over = (w.count - w.target).tolist() if over_bytes is None else over_bytes[0].tolist()
    weight = None if over_bytes is None else over_bytes[1]
    rack = w.rack.tolist()
    for r in rows.tolist():
        row = w.rep[r].tolist()
        rf, t = int(w.rf[r]), int(w.tix[r])
        need = min(rf, w.n_racks)
        present = [(over[b], j, b) for j, b in enumerate(row) if b >= 0]
        keep: set[int] = set()
        racks: set[int] = set()
        for _, _, b in sorted(present):
            fresh = rack[b] not in racks
            if len(keep) < rf and (fresh or rf - len(keep) - 1 >= need - len(racks)):
                keep.add(b)
                racks.add(rack[b])
        for _, _, b in present:
            if b not in keep:
                over[b] -= 1 if weight is None else int(weight[r])
                w.count[b] -= 1
                w.pairs.add1(t * w.stride + b, -1)
        if len(present) > rf:
            kept = [b for b in row if b in keep]
            w.rep[r] = kept + [-1] * (len(row) - len(kept))
        else:
            w.rep[r] = [b if b in keep else -1 for b in row]


def phases(w: Work) -> Iterator[None]:
    """The phases of filling and moving, each under its cap (balance.py's _caps):
    1. each topic's even share, moving only replicas a broker holds beyond that share: every move evens
       out its topic, so what a broker receives spreads over the topics (and their partition sizes)
       instead of coming from the topics already concentrated;
    2. the cap (the share, or the most one broker held before beyond its rack's share);
    3. the contract's cap, looser where racks of unequal size need it for the counts to even out (left
       out when it is the cap). The last one stays in force."""
    steps = [(w.caps[0], True), (w.caps[1], False), (w.caps[2], False)] if w.caps else [(w.cap, False)]
    for i, (cap, tight) in enumerate(steps):
        if i == 2 and np.array_equal(cap, steps[1][0]):
            continue
        w.cap, w.tight = cap, tight
        yield
    w.tight = False


# ---------------------------------------------------------------------------------------------
# 2. Holes
# ---------------------------------------------------------------------------------------------


def fill_holes(w: Work) -> None:
    if not w.holes().any():
        return
    for _ in phases(w):
        for _ in range(ROUNDS):
            if _fill_round(w) == 0:
                break
    slots = _Slots(w)  # built on first use, shared by the holes' chain searches
    for r in np.flatnonzero(w.holes()).tolist():
        for _ in range(int(w.holes(np.array([r]))[0])):
            _fill_one(w, r, slots)


def _fill_round(w: Work) -> int:
    """One seeded round: each row with a hole is offered one unit of an under-full broker's deficit."""
    rows = np.flatnonzero(w.holes())
    offer = tokens(w.target - w.count, w.rng)
    m = min(len(rows), len(offer))
    if m == 0:
        return 0
    rows, v = w.rng.permutation(rows)[:m], offer[:m]
    valid, under_cap = can_add(w, rows, v)
    ok = valid & under_cap
    rows, v = rows[ok], v[ok]
    ok = _cap_room(w, rows, v)
    rows, v = rows[ok], v[ok]
    if w.disk is not None:
        ok = w.disk.within(rows, v)
        rows, v = rows[ok], v[ok]
        w.disk.take(rows, v)
    _add(w, rows, v)
    return len(rows)


def _fill_one(w: Work, r: int, slots: _Slots | None = None) -> None:
    """A hole filled with the most under-full broker that fits; when every broker that fits is at the
    topic's cap, through a chain of moves that passes a replica of the topic on (over the cap only if no
    chain exists: the topic's replica sets allow nothing else). The search moves only replicas of the
    topic, so it stays small at any size. `slots`: an index shared by several calls (one is made if not)."""
    slots = _Slots(w) if slots is None else slots
    every = np.arange(w.n)
    rows = np.full(w.n, r)
    valid, capped = can_add(w, rows, every)
    order = np.lexsort((every, w.count, w.count - w.target))
    fits = order[(valid & capped)[order]]
    if w.disk is not None:  # those within the disk room first (beyond it only if none has room: refused)
        short = w.disk.cost(np.full(len(fits), r), fits) > w.disk.room[fits]
        fits = fits[np.argsort(short, kind="stable")]
    if len(fits) == 0:
        fits = order[valid[order]]
        t = int(w.tix[r])
        start: dict[Node, tuple[Node, int, int] | None] = {(t, y): (HOLE, r, -1) for y in fits.tolist()}
        end = _search(w, slots, start, lambda y: True)
        if end is not None and _apply_chain(w, slots, start, end):
            return
    _add(w, np.array([r]), fits[:1])
    if len(fits):
        slots.added(r, int(fits[0]))
        if w.disk is not None:
            w.disk.take(np.array([r]), fits[:1])


# ---------------------------------------------------------------------------------------------
# 3. Moves
# ---------------------------------------------------------------------------------------------


def move(w: Work) -> None:
    # Followers first: moving a leader's replica also moves its leadership, a change balancing may not
    # need. Leaders' replicas move only once followers cannot do the job. With sizes, both from the
    # start: a smaller partition is worth a preferred leader change (which costs no copy).
    for _ in phases(w):
        followers = w.size is None  # with sizes, the smaller partitions matter more than leaders kept
        for _ in range(ROUNDS):
            if _move_round(w, followers) == 0:
                if not followers:
                    break
                followers = False
        if int(w.count.max() - w.count.min()) < 2:
            continue
        slots = _Slots(w)
        while _even_direct(w, slots) or _even_chain(w, slots):
            pass


def _move_round(w: Work, followers: bool, tries: int = 2) -> int:
    """One seeded round: each unit of deficit is offered `tries` random replicas of over-full brokers
    (not in slot 0, the leader's, when `followers`); at most one move per row, per deficit unit, within
    each broker's excess and each topic's cap."""
    excess = w.count - w.target
    offer = tokens(-excess, w.rng)
    flat = w.rep.ravel()
    mask = np.append(excess > 0, False)[flat]
    if followers:
        mask = mask.reshape(w.rep.shape)
        mask[:, 0] = False
        mask = mask.ravel()
    slots = np.flatnonzero(mask)
    if len(offer) == 0 or len(slots) == 0:
        return 0
    token = np.tile(np.arange(len(offer)), tries)
    pick = slots[w.rng.integers(0, len(slots), size=len(token))]
    if w.size is not None:
        token, pick = _smallest_first(w, slots, len(offer), token, pick)
    rows, cols = np.divmod(pick, w.rep.shape[1])
    v = offer[token]
    ok = w.count[flat[pick]] >= w.count[v] + 2  # each move evens the pair out
    rows, cols, v, token = rows[ok], cols[ok], v[ok], token[ok]
    ok = can_move(w, rows, cols, v)
    rows, cols, v, token = rows[ok], cols[ok], v[ok], token[ok]
    if w.size is not None:  # the smallest valid candidates first (ties: the order drawn)
        ok = np.argsort(w.size[rows], kind="stable")
        rows, cols, v, token = rows[ok], cols[ok], v[ok], token[ok]
    ok = first_of(rows)
    rows, cols, v, token = rows[ok], cols[ok], v[ok], token[ok]
    if w.size is None:
        ok = first_of(token)
        rows, cols, v = rows[ok], cols[ok], v[ok]
        rows, cols, v = _excess_room(w, rows, cols, v, excess)
        rows, cols, v = _topic_room(w, rows, cols, v)
    else:
        # Smallest first through every budget: the topic caps before the counts, so that a small
        # candidate a cap turns away uses up no giver's excess; a receiver's units are alike, so it
        # takes its smallest candidates whichever unit drew them.
        rows, cols, v = _topic_room(w, rows, cols, v)
        ok = group_rank(v) < np.bincount(offer, minlength=w.n)[v]
        rows, cols, v = _excess_room(w, rows[ok], cols[ok], v[ok], excess)
    if w.disk is not None:
        ok = w.disk.within(rows, v)
        rows, cols, v = rows[ok], cols[ok], v[ok]
        w.disk.take(rows, v)
    _move(w, rows, cols, v)
    return len(rows)


def _excess_room(
    w: Work, rows: np.ndarray, cols: np.ndarray, v: np.ndarray, excess: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Among candidate moves (in order), those within each giver's excess."""
    u = w.rep[rows, cols]
    ok = group_rank(u) < excess[u]
    return rows[ok], cols[ok], v[ok]


def _topic_room(
    w: Work, rows: np.ndarray, cols: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Among candidate moves (in order), those within the receivers' topic caps and, under the share
    (`tight`), each beyond the giver's share of the topic."""
    ok = _cap_room(w, rows, v)
    rows, cols, v = rows[ok], cols[ok], v[ok]
    if w.tight:  # several moves of one round from one (topic, broker): each beyond the share
        key = w.tix[rows] * w.stride + w.rep[rows, cols]
        ok = w.pairs.get(key) - group_rank(key) > w.cap[w.tix[rows], w.rack[w.rep[rows, cols]]]
        rows, cols, v = rows[ok], cols[ok], v[ok]
    return rows, cols, v


def _smallest_first(
    w: Work, slots: np.ndarray, units: int, token: np.ndarray, pick: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """With sizes: ahead of the random candidates, the SMALLEST x `units` smallest replicas of the
    over-full brokers (equal sizes in a seeded random order), dealt out to the deficit units in turn."""
    assert w.size is not None
    slots = w.rng.permutation(slots)
    size = w.size[slots // w.rep.shape[1]]
    k = min(SMALLEST * units, len(slots))
    if k < len(slots):
        near = np.argpartition(size, k - 1)[:k]
        near = near[np.lexsort((near, size[near]))]
    else:
        near = np.argsort(size, kind="stable")
    small = slots[near[np.arange(SMALLEST * units) % k]]
    first = np.arange(SMALLEST * units) % units
    return np.concatenate([first, token]), np.concatenate([small, pick])


class _Slots:
    """Where each broker's replicas are: an index made on first use, kept current as replicas move."""

    def __init__(self, w: Work) -> None:
        self.w = w
        self.order = self.bounds = np.zeros(0, dtype=np.int64)
        self.built = False
        self.gained: dict[int, list[int]] = {}

    def of(self, u: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols) of broker u's replicas, in a seeded random order."""
        w = self.w
        if not self.built:
            flat = w.rep.ravel()
            self.order = np.argsort(flat, kind="stable")
            self.bounds = np.searchsorted(flat[self.order], np.arange(w.n + 1))
            self.built = True
        flat = np.concatenate(
            [
                self.order[self.bounds[u] : self.bounds[u + 1]],
                np.array(self.gained.get(u, []), dtype=np.int64),
            ]
        )
        flat = flat[w.rep.ravel()[flat] == u]
        flat = w.rng.permutation(np.unique(flat))
        return np.divmod(flat, w.rep.shape[1])

    def move(self, rows: np.ndarray, cols: np.ndarray, v: np.ndarray) -> None:
        _move(self.w, rows, cols, v)
        width = self.w.rep.shape[1]
        for r, c, b in zip(rows.tolist(), cols.tolist(), v.tolist(), strict=True):
            self.gained.setdefault(b, []).append(r * width + c)

    def added(self, r: int, b: int) -> None:
        """Broker b was just put into a hole of row r."""
        width = self.w.rep.shape[1]
        for c in np.flatnonzero(self.w.rep[r] == b).tolist():
            self.gained.setdefault(b, []).append(r * width + c)


def _feasible(w: Work, slots: _Slots, u: int, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (row, col, v) move of a replica of u to one of the brokers v that is allowed now."""
    rows, cols = slots.of(u)
    rr, cc = np.repeat(rows, len(v)), np.repeat(cols, len(v))
    vv = np.tile(v, len(rows))
    ok = can_move(w, rr, cc, vv)
    return rr[ok], cc[ok], vv[ok]


def _even_direct(w: Work, slots: _Slots) -> bool:
    """One move from a broker to one holding at least 2 fewer replicas (each move lowers the sum of
    squared counts, so this ends; the fullest brokers first, to the brokers most under target)."""
    count, every = w.count, np.arange(w.n)
    deficit = w.target - count
    low = int(count.min())
    for u in every[np.lexsort((every, deficit, -count))].tolist():
        if count[u] < low + 2:
            return False
        takers = every[count <= count[u] - 2]
        takers = takers[np.lexsort((takers, count[takers], -deficit[takers]))]
        for part in (takers[:64], takers[64:]):
            if len(part) == 0:
                continue
            rows, cols, vv = _feasible(w, slots, u, part)
            if len(rows):
                rank = np.empty(w.n, dtype=np.int64)
                rank[part] = np.arange(len(part))
                best = _best(w, rows, rank[vv])
                slots.move(rows[best : best + 1], cols[best : best + 1], vv[best : best + 1])
                return True
    return False


def _best(w: Work, rows: np.ndarray, rank: np.ndarray) -> int:
    """The move to the most preferred taker; among those, the smallest partition when sizes are known;
    ties: the first found (the seeded order)."""
    if w.size is None:
        return int(np.argmin(rank))
    first = np.flatnonzero(rank == rank.min())
    return int(first[np.argmin(w.size[rows[first]])])


def _even_chain(w: Work, slots: _Slots) -> bool:
    """A chain of moves u0 -> u1 -> ... -> uk, each in its own row, from a broker holding L replicas to
    one holding L - 2 or fewer through brokers whose counts do not change; found breadth first, from the
    fullest brokers down."""
    count = w.count
    low = int(count.min())
    for level in sorted(set(count.tolist()), reverse=True):
        if level < low + 2:
            return False
        sources = np.flatnonzero(count == level).tolist()
        if _chain_from(w, slots, sources, level - 2):
            return True
    return False


def _chain_from(w: Work, slots: _Slots, sources: list[int], goal: int) -> bool:
    parent: dict[Node, tuple[Node, int, int] | None] = dict.fromkeys(sources)
    end = _search(w, slots, parent, lambda y: bool(w.count[y] <= goal))
    return end is not None and _apply_chain(w, slots, parent, end)


def _search(
    w: Work, slots: _Slots, parent: dict[Node, tuple[Node, int, int] | None], goal: Callable[[int], bool]
) -> Node | None:
    """Breadth first over the moves' residual graph from the nodes of `parent` (filled in as it goes)
    to a broker for which `goal` holds. From a broker node any of its replicas may move; a move onto a
    broker already at the topic's cap leads to the node (topic, broker), from which only a replica of that
    topic may move on (the broker's count of the topic is then unchanged). A (topic, broker) node can reach
    no more than the broker's own node, so once every broker is reached as a broker node, the rest of a
    node's replicas need not be tried: the search finds a chain exactly when trying them all would."""
    reached = np.zeros(w.n, dtype=bool)
    reached[[x for x in parent if isinstance(x, int)]] = True
    frontier: list[Node] = list(parent)
    while frontier:
        nxt: list[Node] = []
        for node in frontier:
            for r, c, y, capped in _steps(w, slots, node, reached):
                child: Node = y if capped else (int(w.tix[r]), y)
                if child in parent:
                    continue
                parent[child] = (node, r, c)
                if capped:
                    reached[y] = True
                    if goal(y):
                        return child
                nxt.append(child)
        frontier = nxt
    return None


def _steps(w: Work, slots: _Slots, node: Node, reached: np.ndarray) -> Iterable[tuple[int, int, int, bool]]:
    """The moves out of a node, CHAIN_CHUNK of its replicas at a time, to the brokers not yet reached as
    broker nodes when the chunk starts: (row, col, to broker, under the topic's cap there)."""
    x = node if isinstance(node, int) else node[1]
    rows, cols = slots.of(x)
    if not isinstance(node, int):
        keep = w.tix[rows] == node[0]
        rows, cols = rows[keep], cols[keep]
    for lo in range(0, len(rows), CHAIN_CHUNK):
        rest = np.flatnonzero(~reached)
        if len(rest) == 0:
            return
        part_r, part_c = rows[lo : lo + CHAIN_CHUNK], cols[lo : lo + CHAIN_CHUNK]
        rr, cc = np.repeat(part_r, len(rest)), np.repeat(part_c, len(rest))
        vv = np.tile(rest, len(part_r))
        ok = can_move(w, rr, cc, vv, capped=False)
        rr, cc, vv = rr[ok], cc[ok], vv[ok]
        yield from zip(rr.tolist(), cc.tolist(), vv.tolist(), under_cap(w, rr, vv).tolist(), strict=True)


def _apply_chain(
    w: Work, slots: _Slots | None, parent: dict[Node, tuple[Node, int, int] | None], end: Node
) -> bool:
    """Make the moves of the path to `end`, first to last (a first step from HOLE fills that row's hole);
    if a step is no longer allowed (two steps met in one row), undo and report False."""
    steps: list[tuple[int, int, int]] = []
    node = end
    while (link := parent[node]) is not None:
        prev, r, c = link
        steps.append((r, c, node if isinstance(node, int) else node[1]))
        if prev == HOLE:
            break
        node = prev
    done: list[tuple[int, int, int]] = []
    for r, c, y in reversed(steps):
        rows, cols, v = np.array([r]), np.array([c]), np.array([y])
        if c < 0:
            _add(w, rows, v)
            if slots is not None:
                slots.added(r, y)
            done.append((r, -1, y))
            continue
        if not can_move(w, rows, cols, v, capped=False)[0]:
            for r0, c0, u0 in reversed(done):
                if c0 < 0:
                    w.rep[r0][w.rep[r0] == u0] = -1
                    w.count[u0] -= 1
                    w.pairs.add1(int(w.tix[r0]) * w.stride + u0, -1)
                else:
                    _move(w, np.array([r0]), np.array([c0]), np.array([u0]))
            return False
        done.append((r, c, int(w.rep[r, c])))
        if slots is None:
            _move(w, rows, cols, v)
        else:
            slots.move(rows, cols, v)
    return True
