"""Target counts for the balanced strategy: water-filling over brokers (and racks). Pure.

`fill` spreads `total` units over brokers that already hold `base` units and can take at most `cap` more:
everyone is raised to a common level L - 1, and the remaining units raise some brokers to L, the brokers
that hold the most now (`pref`) first, so that the fewest units have to move. Brokers above the level
keep their base. With racks, `rack_fill` first finds how many units each rack takes, within the bounds
the rack rule sets (a rack cannot hold two replicas of a partition while another rack holds none), then
fills each rack's brokers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Targets:
    target: np.ndarray  # (n,) the count each broker ends with
    low: np.ndarray  # (n,) the least it could end with in an equally balanced result
    high: np.ndarray  # (n,) the most


def _level(amount: Callable[[int], int], total: int, lo: int, hi: int) -> int:
    """The smallest L in [lo, hi] with amount(L) >= total (amount non-decreasing; hi must satisfy it)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if amount(mid) >= total:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _by_preference(cands: np.ndarray, pref: np.ndarray) -> np.ndarray:
    """Candidates sorted by preference, highest first; ties by index."""
    return cands[np.lexsort((cands, -pref[cands]))]


def fill(base: np.ndarray, cap: np.ndarray, total: int, pref: np.ndarray) -> Targets:
    base = base.astype(np.int64)
    cap = np.maximum(cap.astype(np.int64), 0)
    total = min(int(total), int(cap.sum()))
    if len(base) == 0:
        return Targets(base, base, base)

    def amount(level: int) -> int:
        return int(np.clip(level - base, 0, cap).sum())

    top = int((base + cap).max())
    level = _level(amount, total, int(base.min()), top)
    below = np.clip(level - 1 - base, 0, cap)
    at = np.clip(level - base, 0, cap)
    cands = np.flatnonzero(at > below)
    extra = total - int(below.sum())
    chosen = _by_preference(cands, pref)[:extra]
    target = base + below
    target[chosen] += 1
    if extra == len(cands):
        return Targets(target, target, target)
    return Targets(target, base + below, base + at)


def rack_fill(
    base: np.ndarray,
    cap: np.ndarray,
    total: int,
    pref: np.ndarray,
    rack: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
) -> Targets:
    """`fill` where rack r's brokers together take between bounds[0][r] and bounds[1][r] units."""
    n_racks = len(bounds[0])
    base = base.astype(np.int64)
    cap = np.maximum(cap.astype(np.int64), 0)
    level, total, g0, g1 = _rack_levels(base, cap, total, rack, bounds)
    room = g1 - g0
    extra = total - int(g0.sum())
    rising = np.flatnonzero(np.clip(level - base, 0, cap) > np.clip(level - 1 - base, 0, cap))
    taken = np.zeros(n_racks, dtype=np.int64)
    for b in _by_preference(rising, pref).tolist():
        if extra == 0:
            break
        r = int(rack[b])
        if taken[r] < room[r]:
            taken[r] += 1
            extra -= 1
    x = g0 + taken
    target, low, high = (np.empty(len(base), dtype=np.int64) for _ in range(3))
    for r in range(n_racks):
        m = np.flatnonzero(rack == r)
        bm, cm, pm = base[m], cap[m], pref[m]
        target[m] = fill(bm, cm, int(x[r]), pm).target
        low[m] = fill(bm, cm, int(g0[r]), pm).low
        high[m] = fill(bm, cm, int(g1[r]), pm).high
    return Targets(target, low, high)


def _rack_levels(
    base: np.ndarray, cap: np.ndarray, total: int, rack: np.ndarray, bounds: tuple[np.ndarray, np.ndarray]
) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(the level L, the total that fits, each rack's units at L - 1 and at L) of `rack_fill`."""
    rmin, rmax = bounds
    n_racks = len(rmin)
    total = min(int(total), int(np.minimum(np.bincount(rack, cap, n_racks), rmax).sum()))

    def per_rack(level: int) -> np.ndarray:
        raw = np.bincount(rack, np.clip(level - base, 0, cap), n_racks).astype(np.int64)
        return np.clip(raw, rmin, rmax)

    top = int((base + cap).max()) if len(base) else 0
    level = _level(lambda lv: int(per_rack(lv).sum()), total, int(base.min()) if len(base) else 0, top)
    return level, total, per_rack(level - 1), per_rack(level)


def rack_range(
    base: np.ndarray, cap: np.ndarray, total: int, rack: np.ndarray, bounds: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(n,) x 2: the least and the most each broker holds in any result of `rack_fill`, whichever way its
    ties go (`pref` aside): rack r takes between g0[r] and g1[r] units and the racks together `total`,
    so at least total - (what the other racks take at most) and at most total - (their least); within
    the rack, `fill`'s low at its least and high at its most. Unlike `rack_fill`'s low and high, it does
    not depend on the counts now, so a plan cannot change it (--balance bytes' count band)."""
    base = base.astype(np.int64)
    cap = np.maximum(cap.astype(np.int64), 0)
    _, total, g0, g1 = _rack_levels(base, cap, total, rack, bounds)
    least = np.maximum(g0, total - (int(g1.sum()) - g1))
    most = np.maximum(np.minimum(g1, total - (int(g0.sum()) - g0)), least)
    low, high = np.empty(len(base), dtype=np.int64), np.empty(len(base), dtype=np.int64)
    for r in range(len(g0)):
        m = np.flatnonzero(rack == r)
        low[m] = fill(base[m], cap[m], int(least[r]), base[m]).low
        high[m] = fill(base[m], cap[m], int(most[r]), base[m]).high
    return low, high


def rack_bounds(rf_counts: dict[int, int], rack_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fewest and most replicas each rack can hold, given how many partitions have each RF: a
    partition spans min(RF, racks) racks, so with RF <= racks a rack holds at most one of its replicas,
    and with RF > racks every rack holds at least one and at most RF - (racks - 1)."""
    n_racks = len(rack_sizes)
    rmin = np.zeros(n_racks, dtype=np.int64)
    rmax = np.zeros(n_racks, dtype=np.int64)
    for rf, count in sorted(rf_counts.items()):
        hi = np.minimum(rack_sizes, 1 if rf <= n_racks else rf - n_racks + 1)
        lo = np.maximum(int(rf >= n_racks), rf - (int(hi.sum()) - hi))
        rmin += count * np.minimum(lo, hi)
        rmax += count * hi
    return rmin, rmax
