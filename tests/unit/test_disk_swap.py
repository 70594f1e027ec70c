"""Issue 27's measure: the exchange of two replicas between two disks of a broker (disks._best_swap) is
searched in numpy (_swap_pair) with the same comparisons and floats as replica by replica (_swap_loop,
the search as it was): the same exchange chosen, or none, on random disks, sizes and limits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.planning.balanced.disks import DiskPlan, _Disk, _swap_loop, _swap_pair

_SIZE = st.integers(min_value=1, max_value=10_000)


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[DiskPlan, tuple[list[int], list[int], list[int], list[int]]]:
    """Two disks of one broker with their movable replicas (sizes sorted, ids in (size, id) order), and
    the bands (around their mean), peaks and limit."""
    xsz = sorted(draw(st.lists(_SIZE, min_size=1, max_size=40)))
    ysz = sorted(draw(st.lists(_SIZE, min_size=1, max_size=40)))
    xs, ys = list(range(len(xsz))), list(range(100, 100 + len(ysz)))
    disks = []
    for i, held in enumerate((sum(xsz), sum(ysz))):
        extra = draw(st.integers(min_value=0, max_value=50_000))
        total = draw(st.none() | st.integers(min_value=held + extra, max_value=4 * (held + extra) + 1))
        d = _Disk(broker=1, dirs=[i], total=total, usable=None, eligible=True)
        d.after = held + extra
        d.peak = d.after + draw(st.integers(min_value=0, max_value=5_000))
        disks.append(d)
    mean = (disks[0].after + disks[1].after) / 2  # goals near it: most exchanges weighed gain something
    for d in disks:
        d.goal = mean * draw(st.floats(min_value=0.6, max_value=1.4))
    tol = draw(st.sampled_from([0.0, 0.01, 0.05, 0.2]))
    limit = draw(st.sampled_from([0.5, 0.85, 1.0]))
    plan = DiskPlan([(1, "/a"), (1, "/b")], disks, tol, limit, weighted=True, goal_utilization=0.0)
    return plan, (xs, xsz, ys, ysz)


@settings(max_examples=400, deadline=None)
@given(_pairs())
def test_numpy_swap_search_chooses_as_the_loop(case: tuple[DiskPlan, tuple[list[int], ...]]) -> None:
    plan, lists = case
    a, t, tol = plan.disks[0], plan.disks[1], plan.tolerance
    outs = (
        max(0.0, a.after - a.goal * (1 + tol)) + max(0.0, a.goal * (1 - tol) - a.after),
        max(0.0, t.after - t.goal * (1 + tol)) + max(0.0, t.goal * (1 - tol) - t.after),
    )
    xs, xsz, ys, ysz = lists
    assert _swap_pair(plan, (0, 1), (xs, xsz, ys, ysz), outs) == _swap_loop(
        plan, (0, 1), (xs, xsz, ys, ysz), outs
    )


def test_sizes_of_2_to_the_53_take_the_loop() -> None:
    """Above 2**53 an int64 compared with a float64 rounds: the exact loop decides (the same answer)."""
    big = 2**60
    disks = [_Disk(broker=1, dirs=[i], total=None, usable=None, eligible=True) for i in range(2)]
    disks[0].after, disks[0].goal = 3 * big, float(2 * big)
    disks[1].after, disks[1].goal = big, float(2 * big)
    plan = DiskPlan([(1, "/a"), (1, "/b")], disks, 0.05, 1.0, weighted=False, goal_utilization=0.0)
    lists = ([0, 1], [big // 2, big], [100], [big // 4])
    outs = (3 * big - 2 * big * 1.05, 2 * big * 0.95 - big)
    got = _swap_pair(plan, (0, 1), lists, outs)
    assert got == _swap_loop(plan, (0, 1), lists, outs)
    assert got is not None and got[1] == (0, 1, (big, 1), (big // 4, 100))
