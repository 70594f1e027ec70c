"""The balanced planner's goals and bands, in one place. Pure (numpy).

`--balance bytes` (planning/balanced/bytes.py) plans with them, and the autopilot's decision
(core/autopilot.py) judges a cluster with the same rules at a wider fraction, so that a plan made at
`--tolerance` is never judged out of balance at `--trigger` (no flapping). The contract they implement:
docs/balanced.md ("The contract", points 2 and 3, and "Utilization").

- A broker's **goal** in bytes is the mean bytes over B, or with every capacity known its share of them
  (the mean utilization times its capacity).
- Its **band** is goal × (1 ± tolerance); its **outer band** goal ± max(tolerance × goal, the largest
  partition): a broker within the outer band is as balanced as the plan promises.
- Its **count band** is the mean replica count (or its capacity's share of it) ± COUNT_BAND, rounded out
  to integers and never narrower than the mean's floor and ceiling.
"""

from __future__ import annotations

import numpy as np

COUNT_BAND = 0.10  # replica counts end within mean ± this share (or no more spread than before)


def capacity_shares(capacity: np.ndarray) -> np.ndarray:
    """Each broker's capacity over the mean capacity (exactly 1.0 each when all are equal)."""
    return capacity / (float(capacity.sum()) / len(capacity))


def byte_goals(mean: float, share: np.ndarray | None, n: int) -> np.ndarray:
    """(n,) each broker's goal: the mean bytes, or with capacities (`share`) mean × its share."""
    return np.full(n, mean) if share is None else mean * share


def byte_band(goal: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high): goal × (1 - tolerance), goal × (1 + tolerance)."""
    return goal * (1 - tolerance), goal * (1 + tolerance)


def outer_band(goal: np.ndarray, tolerance: float, largest: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high): goal ± max(tolerance × goal, the largest partition)."""
    slack = np.maximum(goal * (1 + tolerance) - goal, largest)
    return goal - slack, goal + slack


def count_band(mean_counts: np.ndarray, fraction: float = COUNT_BAND) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) integer counts: mean ± fraction rounded out, at least floor(mean) .. ceil(mean)."""
    m = mean_counts
    low = np.minimum(np.ceil(m * (1 - fraction) - 1e-9), np.floor(m)).astype(np.int64)
    high = np.maximum(np.floor(m * (1 + fraction) + 1e-9), np.ceil(m)).astype(np.int64)
    return low, high
