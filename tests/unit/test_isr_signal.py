"""The adaptive throttle's ISR signal (issue 28 item 5): "a follower that is not moving leaves the ISR of a
partition led by a source or receiver of ours" -- of ANY topic, not only the plan's. Worked by hand: t-0 moves
from broker 1 to broker 3 (1 leads); w-0, a topic outside the plan, on [3, 2] led by broker 3 (our receiver);
broker 2 leaves its ISR: every rate is halved (2.5 -> 1.25 MB/s, held at R1, 2.0), the line names w-0."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from reassign_cli.core import autothrottle as at
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.ops import stored_rates as sr
from reassign_cli.ops.rate_loop import Meter, RateLoop, Runner
from tests.fakes import FakeBackend, FakeCluster

MB = 1_000_000
SETTINGS = at.Settings(at.Bounds(2 * MB, 16 * MB, 2 * MB), None, 5.0)
TARGETS = {("t", 0): [3]}
RATES = {(3, "follower"): 2_500_000, (1, "leader"): 2_500_000}
WHY = "a follower left the ISR: broker 2 left the ISR of w-0"


def plan_topic() -> Topic:
    return Topic("t", {0: [3, 1]}, adding={0: [3]}, removing={0: [1]}, isr={0: [1]}, leader={0: 1})


def everything(isr_w: list[int]) -> ClusterState:
    w = Topic("w", {0: [3, 2]}, isr={0: isr_w}, leader={0: 3})
    return ClusterState([Broker(1), Broker(2), Broker(3)], {"t": plan_topic(), "w": w})


def plans_only() -> ClusterState:
    """What execute reads each poll: the plan's topics alone."""
    return ClusterState([Broker(1), Broker(2), Broker(3)], {"t": plan_topic()})


class Sizes:
    def __init__(self) -> None:
        self.now = {("t", 0, 1): 500 * MB, ("t", 0, 3): 0}

    def replica_sizes(self, keys: Any) -> tuple[dict[Any, int], list[int]]:
        return {k: v for k, v in self.now.items() if k in set(keys)}, []


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, line: str) -> None:
        self.lines.append(line)

    warn = info


def test_a_follower_leaving_the_isr_of_a_topic_outside_the_plan_led_by_our_receiver_halves_the_rates() -> (
    None
):
    c = FakeCluster(everything([3, 2]))
    backend, clock, sizes, report = FakeBackend(c), [0.0], Sizes(), Report()
    loop = RateLoop(settings=SETTINGS, auto=at.State(RATES, dict.fromkeys(RATES, at.BOUND)))
    wall = datetime(2026, 1, 1, 12, tzinfo=UTC)
    runner = Runner(loop, sizes, report, clock=lambda: clock[0], wall=lambda: wall)
    runner.poll(backend, plans_only(), TARGETS)  # the baseline
    c.state = everything([3])  # broker 2 leaves the ISR of w-0, led by broker 3
    clock[0], sizes.now[("t", 0, 3)] = 5.0, 1 * MB  # not throttle-bound: no raise either
    runner.poll(backend, plans_only(), TARGETS)
    assert report.lines == [
        f"throttle on broker 1 (leader): 2.5 -> 2.0 MB/s ({WHY})",
        f"throttle on broker 3 (follower): 2.5 -> 2.0 MB/s ({WHY})",
    ]


def test_the_stored_plans_step_sees_it_too() -> None:
    import dataclasses

    from reassign_cli.core import pacing as pc
    from reassign_cli.core import stored_plan as sp
    from reassign_cli.core.model import PlanEntry

    loop = RateLoop(settings=SETTINGS, auto=at.State(RATES, dict.fromkeys(RATES, at.BOUND)))
    meter = Meter(200.0, {("t", 0, 3): 0, ("t", 0, 1): 500 * MB}, set())
    plan = sp.new_plan(
        b"{}", [PlanEntry("t", 0, [3], None)], pc.Pace(1, "as-planned", 2 * MB), sp.Origin("h", "u", 1)
    )
    plan = dataclasses.replace(plan, schedule=sr.with_loop({}, loop, meter))
    ticked = sr.tick(plan, plans_only(), 205.0, Sizes(), None, lambda: everything([3]))
    assert [c.line() for c in ticked.changes] == [
        f"throttle on broker 1 (leader): 2.5 -> 2.0 MB/s ({WHY})",
        f"throttle on broker 3 (follower): 2.5 -> 2.0 MB/s ({WHY})",
    ]
