"""`execute --dry-run` lists what the run would do, and the run does it (issue 30 item 5): the partitions
skipped (already at their target), the batches, or the window's first starts and its order. Against the
in-memory fake; each dry run's list is compared with what a real run on an identical cluster started, and
the expected lists are worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import reassign_cli.ops.execute as executor
from reassign_cli.core.model import PlanEntry
from reassign_cli.errors import ExitCode
from reassign_cli.ops.execute import execute
from reassign_cli.ops.pacing import Pacer
from reassign_cli.ops.request import ExecuteRequest
from reassign_cli.render import Output
from reassign_cli.render.progress import ExecuteReport
from tests.fakes import FakeBackend, FakeCluster, make_state
from tests.unit.test_sequencing_pacing import WindowBackend, _plan


@pytest.fixture(autouse=True)
def _no_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "THROTTLE_SETTLE_SECONDS", 0.0)
    monkeypatch.setattr("reassign_cli.ops.pacing.THROTTLE_SETTLE_SECONDS", 0.0)


class _DryWindow(FakeBackend):
    """The admin API's dry run: it can add moves (so the window is a window), but a dry run adds none."""

    def add_reassignment(self, entries: Sequence[PlanEntry]) -> None:
        raise AssertionError("a dry run adds no move")


class _Window(WindowBackend):
    def as_dry_run(self) -> FakeBackend:
        return _DryWindow(self.cluster, dry_run=True)


def _execute(be: FakeBackend, tmp_path: Path, targets: Any, dry: bool, **kw: Any) -> dict[str, Any]:
    cap = kw.pop("max_moves", None)
    req = ExecuteRequest(
        "plan.json", _plan(targets), rollback_file=str(tmp_path / "rb.json"), dry_run=dry, poll_interval=0.1,
        timeout=30, max_moves=cap, wait=cap is not None or kw.get("batch_size") is not None, **kw,
    )  # fmt: skip
    report = ExecuteReport(Output(color=False), json=True)
    pacer = (
        None if cap is None else Pacer(cap, None, report, sizer=be if isinstance(be, WindowBackend) else None)
    )
    assert execute(be, req, report, pacer=pacer) == ExitCode.OK
    return report.doc


def _creates(c: FakeCluster) -> list[list[str]]:
    return [[f"{x[0]}-{x[1]}" for x in op[1]] for op in c.writes() if op[0] == "create_reassignment"]


def _cluster() -> FakeCluster:
    """t-0..t-4 on broker 1; t-2 is planned where it is already (a no-op)."""
    return FakeCluster(make_state({"t": {p: [1] for p in range(5)}}))


TARGETS = {("t", 0): [2], ("t", 1): [3], ("t", 2): [1], ("t", 3): [2], ("t", 4): [3]}


def test_batches_skip_what_is_at_its_target_as_the_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--batch-size 1 over 5 partitions of which t-2 is a no-op: the run submits 4 batches (t-2 skipped);
    the dry run said 5 before."""
    dry = _execute(FakeBackend(c := _cluster()), tmp_path, TARGETS, True, batch_size=1)
    assert c.writes() == []
    assert dry["run_plan"] == {
        "skipped": ["t-2"],
        "waits_for": [],
        "batches": [["t-0"], ["t-1"], ["t-3"], ["t-4"]],
    }
    _execute(FakeBackend(c := _cluster()), tmp_path, TARGETS, False, batch_size=1)
    assert _creates(c) == dry["run_plan"]["batches"]


def test_zookeeper_window_batches_are_the_run_s(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--max-moves-per-broker 2 through ZooKeeper alone: batches that each fill an empty window. Every
    move counts against broker 1 (the leader): 2 per batch, in plan order (no sizes): [t-0, t-1], [t-3,
    t-4]; t-2 is skipped."""
    dry = _execute(FakeBackend(c := _cluster()), tmp_path, TARGETS, True, max_moves=2)
    assert c.writes() == []
    assert dry["run_plan"]["skipped"] == ["t-2"]
    assert dry["run_plan"]["batches"] == [["t-0", "t-1"], ["t-3", "t-4"]]
    _execute(FakeBackend(c := _cluster()), tmp_path, TARGETS, False, max_moves=2)
    assert _creates(c) == dry["run_plan"]["batches"]


def test_the_admin_window_lists_its_first_starts_and_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The admin API runs a window, not batches: the dry run lists the first starts and the queue's order.
    a-0..a-3 go broker 1 -> 3, b-0..b-3 broker 2 -> 1; sizes 12/1 out of phase (a-0: 12, b-1: 12, ...);
    cap 2, largest-first. Broker 1 carries a's leader and b's receiver: a-0 and b-1 (each the largest
    for its receiver) fill it. Queued, largest first, ties in plan order: a-2, b-3 (12), then a-1, a-3,
    b-0, b-2 (1)."""

    def cluster() -> FakeCluster:
        return FakeCluster(make_state({"a": {p: [1] for p in range(4)}, "b": {p: [2] for p in range(4)}}))

    sizes = {("a", p): 12 if p % 2 == 0 else 1 for p in range(4)} | {
        ("b", p): 1 if p % 2 == 0 else 12 for p in range(4)
    }
    targets = {("a", p): [3] for p in range(4)} | {("b", p): [1] for p in range(4)}
    be = _Window(c := cluster(), sizes)
    dry = _execute(be, tmp_path, targets, True, max_moves=2, throttle=2_000_000)
    assert c.writes() == [] and be.order == []
    assert dry["run_plan"]["window"] == {
        "max_moves_per_broker": 2,
        "order": "largest-first",
        "first": ["a-0", "b-1"],
        "queued": ["a-2", "b-3", "a-1", "a-3", "b-0", "b-2"],
    }
    assert "batches" not in dry["run_plan"]
    # the dry run's writes are the first starts' (one trigger, as the run's first start)
    assert [w["path"] for w in dry["dry_run"]].count("reassignment") == 1
    real = _Window(c := cluster(), sizes)
    _execute(real, tmp_path, targets, False, max_moves=2, throttle=2_000_000)
    # the real run's first start is the dry run's (every start is a step's submit: a create beside the
    # running moves, each move once)
    creates = _creates(c)
    assert creates[0] == dry["run_plan"]["window"]["first"]
    assert sorted(tp for batch in creates for tp in batch) == sorted(f"{t}-{p}" for t, p in targets)
