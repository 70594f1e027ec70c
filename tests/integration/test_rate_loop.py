"""The throttle that follows the cluster (issue 28 items 1 to 3 and 5) on the real cluster: execute
--max-moves-per-broker 1 through the admin API, one move of a partition led by broker 1, from [1, 2] to [1, 3].

- `--throttle auto --min-throttle 2MB --max-throttle 16MB --throttle-interval 5`: the rates read back from
  ZooKeeper rise above 2 MB/s (a fixed `--throttle 2MB` would hold 2 MB/s throughout), never above 16 MB/s at
  any sample; the move finishes; the operator's own follower rate on broker 3 is back exactly at the end.
- A follower that is not moving (broker 2, of a partition led by broker 1) stopped: the rates halve, and the
  line says why.
- kill -9 mid-move, then `--resume`: the rates read back never dip below the rate last written.
- `--throttle-schedule` whose boundary is the next UTC minute: the rate changes mid-move, and is read back.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reassign_cli.core import throttle as th
from tests.faults.support import Child
from tests.integration.reassign_support import Mover, await_idle, config, produce, set_config

MB = 1_000_000
AUTO = ("--throttle", "auto", "--min-throttle", "2MB", "--max-throttle", "16MB", "--throttle-interval", "5")
OPERATORS = "99000000"  # the operator's own follower rate on broker 3, before the run


class Sampler(threading.Thread):
    """The leader rate of broker 1 and the follower rate of broker 3, read back every 0.2 s."""

    def __init__(self, zk: Any) -> None:
        super().__init__(daemon=True)
        self.zk, self.stop, self.samples = zk, threading.Event(), []

    def run(self) -> None:
        while not self.stop.wait(0.2):
            lead = (config(self.zk, "brokers", 1) or {}).get(th.LEADER_RATE)
            follow = (config(self.zk, "brokers", 3) or {}).get(th.FOLLOWER_RATE)
            self.samples.append((lead, follow))

    def rates(self) -> list[int]:
        return [int(v) for pair in self.samples for v in pair if v is not None and v != OPERATORS]

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.join(timeout=10)


PACED = ("--max-moves-per-broker", "1")


def _paced(cluster: Any, mover: Mover, plan: Any, *args: str, way: tuple[str, ...] = PACED) -> Child:
    return Child(
        "",  # the admin API alone
        mover.tmp,
        *("execute", "--reassignment-json-file", plan, "--bootstrap-server", cluster.bootstrap),
        *(*way, "--poll-interval", "0.5", *args),
    )


def _setup(
    cluster: Any, make_topic: Any, mover: Mover, megabytes: int, name: str
) -> tuple[str, Any, list[bytes]]:
    """Partition 0 on [1, 2] (led by 1) to move to [1, 3]; partition 1 on [1, 2], led by 1, stays."""
    topic = make_topic({0: [1, 2], 1: [1, 2]})
    values = produce(cluster.bootstrap, topic, 0, megabytes * 10, 100_000)
    plan = mover.plan(name, {(topic, 0): [1, 3], (topic, 1): [1, 2]})
    mover.plans.append((plan, [topic]))
    await_idle(mover.zk)
    return topic, plan, values


def _operators_rate(mover: Mover) -> None:
    before = config(mover.zk, "brokers", 3)
    set_config(mover.zk, "brokers", 3, {**(before or {}), th.FOLLOWER_RATE: OPERATORS})
    mover.finally_do.append(lambda: set_config(mover.zk, "brokers", 3, before))


@pytest.mark.parametrize("way", [PACED, ("--wait",)], ids=["paced", "wait"])
def test_auto_rises_within_its_bounds_and_restores_the_operators_rate(
    cluster: Any, make_topic: Any, consume_all: Any, mover: Mover, way: tuple[str, ...]
) -> None:
    topic, plan, values = _setup(cluster, make_topic, mover, 60, "auto.json")  # 30 s at 2 MB/s
    _operators_rate(mover)
    with Sampler(mover.zk) as sampler:
        child = _paced(cluster, mover, plan, *AUTO, way=way)
        assert child.finish() == 0, child.stderr
    rates = sampler.rates()
    raised = [x for x in child.err if "(throttle-bound, guards green)" in x]
    print(f"\n{''.join(raised)}max read back {max(rates)}, {len(rates)} samples")
    assert "throttle on broker 3 (follower): none -> 2.0 MB/s (start)\n" in child.err, child.stderr
    assert (
        raised
        and raised[0] == "throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)\n"
    )
    assert max(rates) > 2 * MB  # a fixed --throttle 2MB holds 2 MB/s throughout
    assert max(rates) <= 16 * MB and min(rates) >= 2 * MB
    assert config(mover.zk, "brokers", 3) == {th.FOLLOWER_RATE: OPERATORS}  # item 5: exactly as before
    assert th.LEADER_RATE not in (config(mover.zk, "brokers", 1) or {})
    assert sorted(consume_all(topic)) == sorted(values)


def test_a_follower_that_leaves_the_isr_halves_the_rates(cluster: Any, make_topic: Any, mover: Mover) -> None:
    _, plan, _ = _setup(cluster, make_topic, mover, 80, "isr.json")
    mover.finally_do.append(lambda: cluster.start_broker(2) if 2 in cluster.stopped else None)
    child = _paced(cluster, mover, plan, *AUTO)
    child.wait_for_line("(follower): 2.0 -> 2.5 MB/s", timeout=120)
    cluster.stop_broker(2)  # broker 2 follows partition 1 (led by our source, broker 1) and is not moving
    child.wait_for_line("a follower left the ISR", timeout=120)
    line = next(x for x in child.err if "a follower left the ISR" in x)
    print(f"\n{line}")
    assert line.startswith("throttle on broker ") and f"broker 2 left the ISR of {plan_topic(plan)}-1" in line
    assert " -> 2.0 MB/s (a follower left the ISR" in line  # 2.5 or more, halved, never below 2 MB/s
    cluster.start_broker(2)  # it holds throttles of this run too (its replica of partition 0 is leaving)
    assert child.finish() == 0, child.stderr


def plan_topic(plan: Any) -> str:
    import json

    return str(json.loads(plan.read_text())["partitions"][0]["topic"])


def test_kill9_then_resume_starts_at_the_rate_last_written(
    cluster: Any, make_topic: Any, consume_all: Any, mover: Mover
) -> None:
    topic, plan, values = _setup(cluster, make_topic, mover, 100, "resume.json")
    child = _paced(cluster, mover, plan, *AUTO)
    child.wait_for_line("(follower): 2.0 -> 2.5 MB/s", timeout=120)
    child.kill9()
    last = int((config(mover.zk, "brokers", 3) or {})[th.FOLLOWER_RATE])
    assert last >= 2_500_000
    with Sampler(mover.zk) as sampler:
        again = _paced(cluster, mover, plan, "--resume", *AUTO)
        assert again.finish() == 0, again.stderr
    follower = [int(f) for _, f in sampler.samples if f is not None]
    print(
        f"\nlast written {last}; read back during the resumed run: min {min(follower)}, max {max(follower)}"
    )
    assert min(follower) >= last  # no dip to --min-throttle: the resumed run starts where the loop was
    assert "(start)" not in again.stderr
    assert sorted(consume_all(topic)) == sorted(values)


def test_the_schedule_changes_the_rate_at_its_boundary(
    cluster: Any, make_topic: Any, consume_all: Any, mover: Mover
) -> None:
    topic, plan, values = _setup(cluster, make_topic, mover, 40, "schedule.json")  # 133 s at 300 kB/s
    # the next UTC minute at least 40 s away (the run starts at the slow rate), at most 100 s
    start = (datetime.now(UTC) + timedelta(seconds=100)).replace(second=0, microsecond=0)
    end = start + timedelta(minutes=30)
    schedule = f"{start:%H:%M}-{end:%H:%M}=16MB,*=300kB"
    with Sampler(mover.zk) as sampler:
        child = _paced(cluster, mover, plan, "--throttle-schedule", schedule)
        assert child.finish() == 0, child.stderr
    follower = [f for _, f in sampler.samples if f is not None]
    changed = [x for x in child.err if "(throttle schedule)" in x and "0.3 -> 16.0 MB/s" in x]
    print(f"\n{''.join(changed)}")
    assert "300000" in follower and "16000000" in follower  # both read back, in that order
    assert follower.index("300000") < follower.index("16000000")
    assert "throttle on broker 3 (follower): 0.3 -> 16.0 MB/s (throttle schedule)\n" in child.err, (
        child.stderr
    )
    assert sorted(consume_all(topic)) == sorted(values)
