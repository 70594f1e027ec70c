"""The replica sets of the balanced strategy: trim, fill, move. Pure (numpy).

Order of work on a `Work` whose rows hold the current replicas on B (replicas off B already removed):
1. `trim`: rows with more replicas than their RF, or whose replicas cannot reach the racks they must
   span, drop replicas: those on the brokers most over their target first, the rack rule kept.
2. `fill_holes`: every empty slot below the row's RF gets a broker: under-full brokers first.
3. `move`: replicas go from brokers over their target to brokers under it, in rows where the move keeps
   the rack spread and the per-topic cap.
Steps 2 and 3 run in seeded random rounds over whole arrays first (the bulk of the work at any size),
then a scalar pass handles what the rounds could not place (including chains of moves through brokers at
their target, for small clusters).
"""

from __future__ import annotations

import numpy as np

from reassign_cli.balance_state import Work, first_of, group_rank, spans, tokens

ROUNDS = 64  # bulk rounds before the scalar pass takes over
CHAIN_BUDGET = 20_000_000  # chains of moves are searched only when brokers x slots stays below this


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
    t = w.tix[rows]
    under_cap = w.pairs.get(t * w.stride + v) < w.cap[t]
    return absent & rack_ok, under_cap


def can_move(w: Work, rows: np.ndarray, cols: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Whether the replica in (row, col) may move to broker v: v not in the row, the row still spans
    the racks it must (or no fewer than now), v under the topic's cap."""
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
    t = w.tix[rows]
    under_cap = w.pairs.get(t * w.stride + v) < w.cap[t]
    return absent & rack_ok & under_cap


def _cap_room(w: Work, rows: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Among candidate additions (in order), those that keep every (topic, broker) within its cap."""
    t = w.tix[rows]
    key = t * w.stride + v
    return w.pairs.get(key) + group_rank(key) < w.cap[t]


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


def trim(w: Work, rows: np.ndarray) -> None:
    """Drop replicas of `rows` (see rows_to_trim): keep those on the brokers least over their target
    (the earlier slot on ties), accepting a second replica in a rack only while the slots left can still
    reach the racks the row must span. Excess rows are compacted (kept replicas first, in their order);
    others keep their slots, the dropped ones becoming holes in place."""
    over = (w.count - w.target).tolist()
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
                over[b] -= 1
                w.count[b] -= 1
                w.pairs.add1(t * w.stride + b, -1)
        if len(present) > rf:
            kept = [b for b in row if b in keep]
            w.rep[r] = kept + [-1] * (len(row) - len(kept))
        else:
            w.rep[r] = [b if b in keep else -1 for b in row]


# ---------------------------------------------------------------------------------------------
# 2. Holes
# ---------------------------------------------------------------------------------------------


def fill_holes(w: Work) -> None:
    for _ in range(ROUNDS):
        if _fill_round(w) == 0:
            break
    for r in np.flatnonzero(w.holes()).tolist():
        for _ in range(int(w.holes(np.array([r]))[0])):
            _fill_one(w, r)


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
    _add(w, rows, v)
    return len(rows)


def _fill_one(w: Work, r: int) -> None:
    """A hole filled with the most under-full broker that fits (over the topic cap only if none else)."""
    every = np.arange(w.n)
    rows = np.full(w.n, r)
    valid, under_cap = can_add(w, rows, every)
    deficit = w.target - w.count
    order = np.lexsort((every, w.count, -deficit))
    for mask in (valid & under_cap, valid):
        fits = order[mask[order]]
        if len(fits):
            _add(w, np.array([r]), fits[:1])
            return
    raise AssertionError(f"no broker fits row {r}")  # pragma: no cover - RF <= brokers is checked first


# ---------------------------------------------------------------------------------------------
# 3. Moves
# ---------------------------------------------------------------------------------------------


def move(w: Work) -> None:
    for _ in range(ROUNDS):
        if _move_round(w) == 0:
            break
    while _direct_move(w) or _chain_move(w):
        pass


def _move_round(w: Work, tries: int = 2) -> int:
    """One seeded round: each unit of deficit is offered `tries` random replicas of over-full brokers;
    at most one move per row, per deficit unit, within each broker's excess and each topic's cap."""
    excess = w.count - w.target
    offer = tokens(-excess, w.rng)
    flat = w.rep.ravel()
    slots = np.flatnonzero(np.append(excess > 0, False)[flat])
    if len(offer) == 0 or len(slots) == 0:
        return 0
    token = np.tile(np.arange(len(offer)), tries)
    pick = slots[w.rng.integers(0, len(slots), size=len(token))]
    rows, cols = np.divmod(pick, w.rep.shape[1])
    v = offer[token]
    ok = can_move(w, rows, cols, v)
    rows, cols, v, token = rows[ok], cols[ok], v[ok], token[ok]
    ok = first_of(rows)
    rows, cols, v, token = rows[ok], cols[ok], v[ok], token[ok]
    ok = first_of(token)
    rows, cols, v = rows[ok], cols[ok], v[ok]
    u = w.rep[rows, cols]
    ok = group_rank(u) < excess[u]
    rows, cols, v = rows[ok], cols[ok], v[ok]
    ok = _cap_room(w, rows, v)
    _move(w, rows[ok], cols[ok], v[ok])
    return int(ok.sum())


def _slots_of(w: Work, u: int) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.nonzero(w.rep == u)
    order = w.rng.permutation(len(rows))
    return rows[order], cols[order]


def _feasible(w: Work, u: int, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (row, col, v) move of a replica of u to one of the brokers v that is allowed now."""
    rows, cols = _slots_of(w, u)
    rr, cc = np.repeat(rows, len(v)), np.repeat(cols, len(v))
    vv = np.tile(v, len(rows))
    ok = can_move(w, rr, cc, vv)
    return rr[ok], cc[ok], vv[ok]


def _direct_move(w: Work) -> bool:
    """One move from an over-full to an under-full broker (the largest excess and deficit first)."""
    excess = w.count - w.target
    every = np.arange(w.n)
    givers = every[np.lexsort((every, -excess))]
    givers = givers[excess[givers] > 0]
    takers = every[np.lexsort((every, excess))]
    takers = takers[excess[takers] < 0]
    if len(givers) == 0 or len(takers) == 0:
        return False
    for u in givers.tolist():
        rows, cols, vv = _feasible(w, u, takers)
        if len(rows):
            best = int(np.argmax(-excess[vv]))  # the taker with the largest deficit; ties: first found
            _move(w, rows[best : best + 1], cols[best : best + 1], vv[best : best + 1])
            return True
    return False


def _chain_move(w: Work) -> bool:
    """A chain of moves u0 -> u1 -> ... -> uk (each in its own row) from an over-full broker to an
    under-full one through brokers at their target, found breadth first; small clusters only."""
    excess = w.count - w.target
    if w.n * w.rep.size > CHAIN_BUDGET or not (excess > 0).any() or not (excess < 0).any():
        return False
    parent: dict[int, tuple[int, int, int] | None] = {b: None for b in np.flatnonzero(excess > 0).tolist()}
    frontier = list(parent)
    while frontier:
        nxt: list[int] = []
        for x in frontier:
            rest = np.array([b for b in range(w.n) if b not in parent], dtype=np.int64)
            if len(rest) == 0:
                return False
            rows, cols, vv = _feasible(w, x, rest)
            for r, c, y in zip(rows.tolist(), cols.tolist(), vv.tolist(), strict=True):
                if y in parent:
                    continue
                parent[y] = (x, r, c)
                if excess[y] < 0:
                    return _apply_chain(w, parent, y)
                nxt.append(y)
        frontier = nxt
    return False


def _apply_chain(w: Work, parent: dict[int, tuple[int, int, int] | None], end: int) -> bool:
    steps: list[tuple[int, int, int]] = []
    y = end
    while (link := parent[y]) is not None:
        _, r, c = link
        steps.append((r, c, y))
        y = link[0]
    done: list[tuple[int, int, int]] = []
    for r, c, y in reversed(steps):
        rows, cols, v = np.array([r]), np.array([c]), np.array([y])
        if not can_move(w, rows, cols, v)[0]:
            for r0, c0, u0 in reversed(done):  # undo: the steps met in one row; give up on chains
                _move(w, np.array([r0]), np.array([c0]), np.array([u0]))
            return False
        done.append((r, c, int(w.rep[r, c])))
        _move(w, rows, cols, v)
    return True
