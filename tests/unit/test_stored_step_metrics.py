"""Issues 25 (item 8) and 28: `verify --metrics-file` with no plan file, the cron job's step of the stored
plan. What the file holds for each outcome, read back with prometheus_client's parser. Fakes only sequence the
run: the backend is never opened, the store is read through `read_stored` (before the step) and
`ops/verify_metrics.stored_plan` (after it), and the step itself returns or raises what the test says.
Expected values are worked out by hand from the plan built here."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reassign_cli.backends.plan_store import Versioned
from reassign_cli.cli import main
from reassign_cli.cli import stored as cli_stored
from reassign_cli.core import autothrottle as at
from reassign_cli.core import health as hc
from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import PlanEntry
from reassign_cli.errors import BusyError, OperationalError
from reassign_cli.ops import stored_rates as sr
from reassign_cli.ops import verify_metrics
from reassign_cli.ops.rate_loop import RateLoop
from reassign_cli.ops.step import StepResult
from tests.unit.test_metrics import parse

MB = 1_000_000
T0 = 1_796_086_800.0
SHA = "ab" * 32  # the stored plan's SHA-256 as the test sets it: the label takes its first 12 hex digits
RATES = {(3, "follower"): 2_500_000, (1, "leader"): 2_500_000}


def _plan(loop: bool = True) -> sp.StoredPlan:
    """Three moves of 100, 200 and 300 bytes: t-0 done, t-1 running, t-2 queued; a step at T0 + 100, so
    100 B done in 100 s: 1 B/s, the 500 B of t-1 and t-2 left (a running move counted whole): ETA 500 s."""
    entries = [PlanEntry("t", p, [3, 2], None) for p in range(3)]
    plan = sp.new_plan(b"{}", entries, pc.Pace(1, None, 20000), sp.Origin("h", "u", T0), [100, 200, 300])
    plan = sp.mark_started(plan, [("t", 0), ("t", 1)], T0)
    plan = sp.mark_done(plan, [("t", 0)], T0)
    plan = sp.stepped(plan, T0 + 100, 1)
    schedule: dict[str, Any] = {"hours": None}
    if loop:
        auto = at.State(RATES, dict.fromkeys(RATES, at.BOUND))
        schedule = sr.with_loop(
            schedule, RateLoop(settings=at.Settings(at.Bounds(2 * MB, 16 * MB, 2 * MB), None, 5.0), auto=auto)
        )
    return dataclasses.replace(plan, plan_sha256=SHA, schedule=schedule)


class FakeBackend:
    """Only what the nothing-stored path reads: the cluster's state (`elsewhere`: partitions reassigning)."""

    elsewhere: tuple[tuple[str, int], ...] = ()

    def read_state(self, _topics: Any) -> Any:
        state = dataclasses.make_dataclass("State", [("topics", dict), ("reassigning_elsewhere", list)])
        return state({}, list(self.elsewhere))


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """run(before, step, after, *args): the plan read before the step (None: nothing stored), what the step
    returns (or raises), the plan read after it; returns (exit code, the metrics file parsed, the step's
    keyword arguments)."""
    for k in [k for k in __import__("os").environ if k.startswith("KAFKA_REASSIGN_")]:
        monkeypatch.delenv(k)

    def go(
        before: Any, step: Any, after: Any, *args: str
    ) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
        calls: list[dict[str, Any]] = []

        @contextlib.contextmanager
        def backend(_opts: Any, **_kw: Any) -> Iterator[FakeBackend]:
            yield FakeBackend()

        def step_with(_opts: Any, _backend: Any, **kw: Any) -> StepResult:
            calls.append(kw)
            if isinstance(step, BaseException):
                raise step
            return step

        monkeypatch.setattr("reassign_cli.cli.common.open_backend", backend)
        monkeypatch.setattr(cli_stored, "read_stored", lambda _b: before and Versioned(before, 7))
        monkeypatch.setattr(cli_stored, "step_with", step_with)
        monkeypatch.setattr(verify_metrics, "stored_plan", lambda _b: after)
        prom = tmp_path / "m.prom"
        argv = ["verify", "--zookeeper", "zk:2181", "--metrics-file", str(prom), *args]
        with pytest.raises(SystemExit) as e:
            main(argv)
        return int(e.value.code or 0), parse(prom.read_text()), calls

    return go


def key(sha: str = SHA[:12], **extra: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"plan": "stored", "plan_sha256": sha, **extra}.items()))


def test_a_step_that_leaves_work_writes_exit_4_and_the_plans_gauges_after_it(run: Any) -> None:
    held = hc.Verdict((hc.Hold("min-isr", "t-1 has 1 in sync of 2"),), frozenset(), False, 1)
    before = dataclasses.replace(_plan(), last_step=None)  # the step's write: the plan read after it
    code, got, calls = run(
        before,
        StepResult(moving=1, queued=1, done=1, verdict=held),
        _plan(),
        "--metrics-label",
        "cluster=eu1",
    )
    assert code == 4 and calls == [{"advance": True, "ignore": frozenset()}]
    k = key(cluster="eu1")
    assert got["kafka_reassign_verify_exit_code"] == {k: 4}
    assert list(got["kafka_reassign_verify_last_run_timestamp_seconds"]) == [k]
    moves = got["kafka_reassign_plan_moves"]
    assert {dict(lk)["state"]: v for lk, v in moves.items()} == {"running": 1, "queued": 1, "done": 1}
    assert got["kafka_reassign_plan_bytes_remaining"] == {k: 500}
    assert got["kafka_reassign_plan_eta_seconds"] == {k: 500}
    assert got["kafka_reassign_plan_paused"] == {k: 0}
    assert got["kafka_reassign_plan_last_step_timestamp_seconds"] == {k: T0 + 100}
    reasons = {dict(lk)["reason"]: v for lk, v in got["kafka_reassign_plan_held"].items()}
    checks = dict.fromkeys(hc.CHECKS, 0.0) | {"min-isr": 1.0}  # every check the step applied, 0 included
    assert reasons == {**checks, "hours": 0, "not_before": 0}
    rates = {
        (dict(lk)["broker"], dict(lk)["role"]): v
        for lk, v in got["kafka_reassign_plan_throttle_rate_bytes"].items()
    }
    assert rates == {("3", "follower"): 2_500_000, ("1", "leader"): 2_500_000}
    # no verify partition counts: a stored step classifies no file
    assert "kafka_reassign_verify_partitions" not in got


def test_no_advance_reports_without_a_rate_loop_series_when_the_plan_keeps_none(run: Any) -> None:
    plan = _plan(loop=False)
    code, got, calls = run(plan, StepResult(moving=1, queued=1, done=1), plan, "--no-advance")
    assert code == 4 and calls == [{"advance": False, "ignore": frozenset()}]
    assert "kafka_reassign_plan_throttle_rate_bytes" not in got
    reasons = {dict(lk)["reason"] for lk in got["kafka_reassign_plan_held"]}
    assert reasons == {"hours", "not_before"}  # no health verdict: only the schedule's reasons
    assert got["kafka_reassign_verify_exit_code"] == {key(): 4}


def test_the_step_that_finishes_writes_exit_0_and_no_plan_series(run: Any) -> None:
    code, got, _ = run(_plan(), StepResult(done=3, total=3, finished=True), None)
    assert code == 0
    assert got["kafka_reassign_verify_exit_code"] == {key(): 0}
    assert not [name for name in got if name.startswith("kafka_reassign_plan_")]


@pytest.mark.parametrize(
    ("error", "exit_code"), [(OperationalError("store unreachable"), 1), (BusyError("lease lost"), 4)]
)
def test_a_step_that_fails_still_writes_its_exit_code_under_the_plans_labels(
    run: Any, error: Exception, exit_code: int
) -> None:
    code, got, _ = run(_plan(), error, _plan())
    assert code == exit_code
    assert got == {
        "kafka_reassign_verify_exit_code": {key(): exit_code},
        "kafka_reassign_verify_last_run_timestamp_seconds": got[
            "kafka_reassign_verify_last_run_timestamp_seconds"
        ],
    }
    assert list(got["kafka_reassign_verify_last_run_timestamp_seconds"]) == [key()]


def test_nothing_stored_writes_the_exit_code_alone(run: Any) -> None:
    code, got, calls = run(None, StepResult(), None)
    assert code == 0 and calls == []
    assert set(got) == {"kafka_reassign_verify_exit_code", "kafka_reassign_verify_last_run_timestamp_seconds"}
    assert got["kafka_reassign_verify_exit_code"] == {key(sha=""): 0}


def test_usage_errors_write_nothing(run: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args, said in (
        (["--metrics-label", "plan=x"], "verify's own"),
        (["--metrics-label", "no-equals"], "NAME=VALUE"),
        (["--ignore-health", "nonsense"], "nonsense"),
    ):
        with pytest.raises(SystemExit) as e:
            main(["verify", "--zookeeper", "zk:2181", "--metrics-file", str(tmp_path / "u.prom"), *args])
        assert e.value.code == 2 and said in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["verify", "--zookeeper", "zk:2181", "--metrics-label", "a=b"])
    assert e.value.code == 2 and "--metrics-label needs --metrics-file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["verify", "--zookeeper", "zk:2181", "--metrics-file", str(tmp_path / "no" / "m.prom")])
    assert e.value.code == 2 and "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "u.prom").exists() and not (tmp_path / "no").exists()


def test_nothing_stored_while_something_reassigns_writes_exit_4(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeBackend, "elsewhere", (("other", 0),))
    code, got, _ = run(None, StepResult(), None)
    assert code == 4
    assert got["kafka_reassign_verify_exit_code"] == {key(sha=""): 4}
    assert not [name for name in got if name.startswith("kafka_reassign_plan_")]


def test_a_check_silenced_by_ignore_health_does_not_hold() -> None:
    silenced = hc.Hold("under-replicated", "t-0 has 1 in sync of 2")
    verdict = hc.Verdict((), frozenset(), False, None, ignored=(silenced,))
    assert verify_metrics.held_checks(verdict) == dict.fromkeys(hc.CHECKS, False)
    assert verify_metrics.held_checks(None) == {}  # no health verdict: no health reasons written
