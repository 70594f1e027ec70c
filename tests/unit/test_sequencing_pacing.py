"""The window's sequencing (ops/pacing.py) against the in-memory fake: a partition is in its topic's
throttled-replica lists before its move starts, no broker carries more than the cap, moves are added while
others run (the admin API), the batches of ZooKeeper alone, and the throttles are gone at the end.
Expected values worked out by hand."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

import reassign_cli.ops.execute as executor
from reassign_cli.core.model import ClusterState, PlanEntry
from reassign_cli.errors import ExitCode
from reassign_cli.ops.execute import execute
from reassign_cli.ops.pacing import Pacer
from reassign_cli.ops.request import ExecuteRequest
from reassign_cli.render import Output
from reassign_cli.render.progress import ExecuteReport
from tests.fakes import FakeBackend, FakeCluster, make_state

FREP = "follower.replication.throttled.replicas"
LREP = "leader.replication.throttled.replicas"


@pytest.fixture(autouse=True)
def _no_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "THROTTLE_SETTLE_SECONDS", 0.0)
    monkeypatch.setattr("reassign_cli.ops.pacing.THROTTLE_SETTLE_SECONDS", 0.0)


class WindowBackend(FakeBackend):
    """The admin API's shape: moves are added beside running ones and show as AR/RR; each read ends the
    oldest running move (so the window refills one move at a time)."""

    def __init__(self, cluster: FakeCluster, sizes: dict[tuple[str, int], int] | None = None) -> None:
        super().__init__(cluster)
        self.order: list[tuple[str, int]] = []
        self.peak: dict[int, int] = {}
        self.sizes = sizes or {}

    def create_reassignment(self, entries: Sequence[PlanEntry], *, additional: bool = False) -> bool:
        self._log("create_reassignment", tuple((e.topic, e.partition) for e in entries), True)
        self.cluster.setup_held = False
        self._add(entries)
        return True

    def add_reassignment(self, entries: Sequence[PlanEntry]) -> None:
        self._log("add_reassignment", tuple((e.topic, e.partition) for e in entries))
        self._add(entries)

    def _add(self, entries: Sequence[PlanEntry]) -> None:
        for e in entries:
            topic = self.cluster.state.topics[e.topic]
            origin = list(topic.replicas[e.partition])
            adding = [b for b in e.replicas if b not in origin]
            # its partition is in the lists before it starts
            cfg = self.cluster.configs.get(("topics", e.topic), {})
            for b in adding:
                assert f"{e.partition}:{b}" in cfg.get(FREP, "").split(","), (e, cfg)
            topic.replicas[e.partition] = [*e.replicas, *(b for b in origin if b not in e.replicas)]  # type: ignore[index]
            topic.adding[e.partition] = adding
            topic.removing[e.partition] = [b for b in origin if b not in e.replicas]
            self.order.append((e.topic, e.partition))
        load: dict[int, int] = {}
        for topic in self.cluster.state.topics.values():
            for p in topic.replicas:
                if topic.is_reassigning(p):
                    for b in {*topic.adding[p], topic.origin(p)[0]}:
                        load[b] = load.get(b, 0) + 1
        for b, n in load.items():
            self.peak[b] = max(self.peak.get(b, 0), n)

    def read_state(
        self, topics: Iterable[str] | None = None, *, partition_state: bool = False
    ) -> ClusterState:
        running = [tp for tp in self.order if self.cluster.state.topics[tp[0]].is_reassigning(tp[1])]
        if running and partition_state:
            t, p = running[0]
            topic = self.cluster.state.topics[t]
            topic.replicas[p] = topic.target(p)  # type: ignore[index]
            topic.adding.pop(p, None)
            topic.removing.pop(p, None)
        return super().read_state(topics, partition_state=partition_state)

    def replica_sizes(self, replicas: Sequence[Any]) -> tuple[dict[Any, int], list[int]]:
        return {(t, p, b): self.sizes[(t, p)] for t, p, b in replicas if (t, p) in self.sizes}, []


def _plan(targets: dict[tuple[str, int], list[int]]) -> bytes:
    parts = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(targets.items())]
    return orjson.dumps({"version": 1, "partitions": parts})


def _run(backend: FakeBackend, tmp_path: Path, targets: Any, cap: int, sizer: Any = None, **kw: Any) -> int:
    req = ExecuteRequest(
        "plan.json", _plan(targets), rollback_file=str(tmp_path / "rb.json"), max_moves=cap, wait=True,
        poll_interval=0.1, timeout=30, **kw,
    )  # fmt: skip
    report = ExecuteReport(Output(color=False))
    return execute(backend, req, report, pacer=Pacer(cap, None, report, sizer=sizer))


def test_window_two_directions_largest_first(tmp_path: Path) -> None:
    # a: broker 1 -> 3, b: broker 2 -> 1, sizes 12/1 out of phase; cap 2: broker 1 carries one each way
    c = FakeCluster(make_state({"a": {p: [1] for p in range(4)}, "b": {p: [2] for p in range(4)}}))
    sizes = {("a", p): 12 if p % 2 == 0 else 1 for p in range(4)} | {
        ("b", p): 1 if p % 2 == 0 else 12 for p in range(4)
    }
    be = WindowBackend(c, sizes)
    targets = {("a", p): [3] for p in range(4)} | {("b", p): [1] for p in range(4)}
    assert _run(be, tmp_path, targets, 2, sizer=be, throttle=2_000_000) == ExitCode.OK
    assert max(be.peak.values()) <= 2
    # a-0 and b-1 first (the largest of each receiver), then, each time one ends, the largest for the
    # receiver with the fewest moves coming in
    assert be.order[:2] == [("a", 0), ("b", 1)]
    assert sorted(be.order) == sorted(targets)
    assert {("a", 2), ("b", 3)} == set(be.order[2:4])
    # every throttle of this run removed at the end, the record gone
    assert all(FREP not in cfg and LREP not in cfg for (e, _), cfg in c.configs.items() if e == "topics")
    assert c.record is None


def test_zookeeper_alone_sends_the_window_as_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = FakeCluster(make_state({"t": {0: [1], 1: [1], 2: [1], 3: [2]}}))
    targets = {("t", 0): [3], ("t", 1): [3], ("t", 2): [2], ("t", 3): [3]}
    assert _run(FakeBackend(c), tmp_path, targets, 2) == ExitCode.OK
    creates = [op[1] for op in c.writes() if op[0] == "create_reassignment"]
    assert [[p for _, p, _ in batch] for batch in creates] == [[0, 2, 3], [1]]
    err = capsys.readouterr().err
    assert err.count("the brokers would allow a window") == 1


def test_the_cap_is_kept_before_the_first_move_starts(tmp_path: Path) -> None:
    from reassign_cli.core.pacing import Pace, load_pace
    from reassign_cli.ops.pace_file import PaceFile

    plan = _plan({("t", 0): [3], ("t", 1): [3]})
    keep = PaceFile.beside(str(tmp_path / "plan.json"), plan)
    seen: list[Pace | None] = []

    class Watching(WindowBackend):
        def create_reassignment(self, entries: Sequence[PlanEntry], *, additional: bool = False) -> bool:
            seen.append(load_pace(keep.path.read_bytes(), plan))
            return super().create_reassignment(entries, additional=additional)

    be = Watching(FakeCluster(make_state({"t": {0: [1], 1: [1]}})))
    req = ExecuteRequest(
        "plan.json", plan, rollback_file=str(tmp_path / "rb.json"), max_moves=1, wait=True,
        poll_interval=0.1, timeout=30, throttle=1000,
    )  # fmt: skip
    report = ExecuteReport(Output(color=False))
    assert execute(be, req, report, pacer=Pacer(1, "smallest-first", report, keep=keep)) == ExitCode.OK
    # the rate too, for a resume and verify's hint; every start is a step's submit (create_reassignment
    # beside the running moves), each sees it kept, the first one included
    assert seen and set(seen) == {Pace(1, "smallest-first", 1000)}


def test_metadata_that_trails_the_end_of_a_move_is_read_again(tmp_path: Path) -> None:
    """A broker's metadata may still show a move's replica set (target and origin, no AR/RR) after the
    controller has finished it: the window reads again before it reports, instead of "not as planned"."""
    import dataclasses

    class Trailing(WindowBackend):
        def __init__(self, cluster: FakeCluster) -> None:
            super().__init__(cluster)
            self.stale_reads = 0

        def read_state(
            self, topics: Iterable[str] | None = None, *, partition_state: bool = False
        ) -> ClusterState:
            state = super().read_state(topics, partition_state=partition_state)
            topic = state.topics["t"]
            if (
                partition_state
                and not topic.is_reassigning(0)
                and topic.replicas[0] == [3]
                and self.stale_reads < 2
            ):
                self.stale_reads += 1  # the two reads after the move ended: the set it passed through
                stale = dataclasses.replace(topic, replicas={**topic.replicas, 0: [3, 1]})
                return dataclasses.replace(state, topics={**state.topics, "t": stale})
            return state

    be = Trailing(FakeCluster(make_state({"t": {0: [1]}})))
    assert _run(be, tmp_path, {("t", 0): [3]}, 1, throttle=1000) == ExitCode.OK
    assert be.stale_reads == 2


def test_a_move_listed_ahead_is_listed_again_before_it_starts(tmp_path: Path) -> None:
    """Issue 30 item 17: the lists written for the move next in line may be gone by the time it starts (a
    verify of old took the throttles off between two moves, or an operator did): the window writes them
    before every start, never after. WindowBackend asserts at each start that the move is listed."""
    FREP_KEYS = (FREP, LREP)

    class Cleared(WindowBackend):
        def read_state(
            self, topics: Iterable[str] | None = None, *, partition_state: bool = False
        ) -> ClusterState:
            state = super().read_state(topics, partition_state=partition_state)
            if partition_state and not any(t.adding for t in self.cluster.state.topics.values()):
                # nothing moves: someone takes the topic lists off here
                cfg = self.cluster.configs.get(("topics", "t"), {})
                for k in FREP_KEYS:
                    cfg.pop(k, None)
            return state

    c = FakeCluster(make_state({"t": {0: [1], 1: [1], 2: [1]}}))
    be = Cleared(c)
    targets = {("t", p): [3] for p in range(3)}
    assert _run(be, tmp_path, targets, 1, throttle=1000) == ExitCode.OK
    assert sorted(be.order) == sorted(targets)


def test_the_foreground_window_starts_nothing_while_a_health_check_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25 item 4: the foreground window is a loop over ops/step.step, so the health guards hold it as
    they hold a stored plan's steps. Broker 3 (the receiver) reads as not registered for the first three
    steps: nothing starts, the hold is said once; then the plan runs to its end."""
    from reassign_cli.backends.plan_store import MemoryPlanStore, take_lease
    from reassign_cli.core import health as hc
    from reassign_cli.core import pacing as pc
    from reassign_cli.core import stored_plan as sp
    from reassign_cli.core.model import parse_reassignment
    from reassign_cli.ops.execute import sorted_entries
    from reassign_cli.ops.step import StepEnv

    c = FakeCluster(make_state({"t": {0: [1], 1: [1]}}))
    be = WindowBackend(c)
    targets = {("t", 0): [3], ("t", 1): [3]}
    data = _plan(targets)
    store = MemoryPlanStore()
    entries = sorted_entries(parse_reassignment(data))
    store.create(sp.new_plan(data, entries, pc.Pace(1, None, 1000), sp.Origin("h", "u", 0.0)))
    lease = sp.Lease("run", "h", 1)
    assert take_lease(store, lease, sp.watch(), lambda: 0.0)[0]
    started_before: list[int] = []  # at each step's health check: the moves started so far
    calls = 0

    def health() -> hc.Signals:
        nonlocal calls
        calls += 1
        held = calls <= 3
        started_before.append(len(be.order))
        registered = frozenset({1, 2} if held else {1, 2, 3})
        return hc.Signals(registered, None, {}, {}, None)

    req = ExecuteRequest(
        "plan.json", data, rollback_file=str(tmp_path / "rb.json"), max_moves=1, wait=True,
        poll_interval=0.05, timeout=30, throttle=1000,
    )  # fmt: skip
    report = ExecuteReport(Output(color=False))
    pacer = Pacer(1, None, report, env=StepEnv(be, store, health=health), lease=lease)
    assert execute(be, req, report, pacer=pacer) == ExitCode.OK
    # the three steps that saw broker 3 missing started nothing: the fourth finds nothing started
    assert started_before[:4] == [0, 0, 0, 0]
    assert sorted(be.order) == sorted(targets) and calls > 3
    err = capsys.readouterr().err
    assert err.count("held: broker 3 is not registered") == 1
