"""Issue 28 item 6: a source feeding several receivers shares its one leader rate among them, so each
receiver copies a share of it and none looks throttle-bound against its own follower rate; before the fix
nothing was ever raised (the source's throttle capped the copy unseen). The source is now judged too, from the
bytes it sent against its leader rate. Worked by hand, rates 2 MB/s, interval 10 s:

- t-0 moves to broker 3, t-1 to broker 4, both led by broker 1. Broker 1 sends 2 MB/s in all, 1 MB/s to each.
- Receiver 3: 10 MB copied of the 20 MB its rate allowed (min(2, 2) MB/s x 10 s); 10 + 1.05 (a fetch) <
  0.85 x 20 = 17: not bound. The same for receiver 4.
- Source 1: 20 MB sent of the 20 MB its leader rate allowed (min(2, 2 + 2) MB/s x 10 s); two fetches of slack
  (2.1 MB), 2 x 2.1 <= 0.4 x 20: judged; 20 + 2.1 >= 17: bound. Its leader rate rises 25%: 2.0 -> 2.5 MB/s.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from reassign_cli.core import autothrottle as at
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.core.throttle import LEADER_RATE
from reassign_cli.ops.rate_loop import RateLoop, Runner
from tests.fakes import FakeBackend, FakeCluster
from tests.unit.test_isr_signal import Report

MB = 1_000_000
TARGETS = {("t", 0): [3], ("t", 1): [4]}


def state() -> ClusterState:
    t = Topic(
        "t",
        {0: [3, 1], 1: [4, 1]},
        adding={0: [3], 1: [4]},
        removing={0: [1], 1: [1]},
        isr={0: [1], 1: [1]},
        leader={0: 1, 1: 1},
    )
    return ClusterState([Broker(1), Broker(3), Broker(4)], {"t": t})


class Sizes:
    def __init__(self) -> None:
        self.now = {("t", 0, 1): 500 * MB, ("t", 1, 1): 500 * MB, ("t", 0, 3): 0, ("t", 1, 4): 0}

    def replica_sizes(self, keys: Any) -> tuple[dict[Any, int], list[int]]:
        return {k: v for k, v in self.now.items() if k in set(keys)}, []


def test_a_source_capped_by_its_own_leader_rate_is_raised() -> None:
    c = FakeCluster(state())
    backend, clock, sizes, report = FakeBackend(c), [0.0], Sizes(), Report()
    settings = at.Settings(at.Bounds(2 * MB, 16 * MB, 2 * MB), None, 10.0)
    wall = datetime(2026, 1, 1, 12, tzinfo=UTC)
    runner = Runner(RateLoop(settings=settings), sizes, report, clock=lambda: clock[0], wall=lambda: wall)
    runner.poll(backend, state(), TARGETS)  # the baseline
    clock[0] = 10.0
    runner.poll(backend, state(), TARGETS)  # the start rates, not judged
    assert report.lines == [
        "throttle on broker 3 (follower): none -> 2.0 MB/s (start)",
        "throttle on broker 4 (follower): none -> 2.0 MB/s (start)",
        "throttle on broker 1 (leader): none -> 2.0 MB/s (start)",
    ]
    clock[0] = 20.0
    sizes.now[("t", 0, 3)], sizes.now[("t", 1, 4)] = 10 * MB, 10 * MB  # 1 MB/s each: 2 MB/s out of broker 1
    runner.poll(backend, state(), TARGETS)
    assert report.lines[3:] == [
        "throttle on broker 1 (leader): 2.0 -> 2.5 MB/s (throttle-bound, guards green)"
    ]
    assert c.configs[("brokers", "1")][LEADER_RATE] == "2500000"
