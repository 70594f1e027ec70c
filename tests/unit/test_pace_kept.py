"""The cap kept for `execute --resume` (core.pacing dump_pace/load_pace, ops.pacing PaceFile and
resumed_pace): kept for this very plan only, read back when --resume leaves the cap out, replaced (and said)
when a new cap is given, refused in one line when --order has no cap to go with."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from reassign_cli.core import pacing as pc
from reassign_cli.errors import UsageError
from reassign_cli.ops.pacing import PaceFile, resumed_pace
from reassign_cli.render import Output
from reassign_cli.render.progress import ExecuteReport

PLAN = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3]}]}\n'


def _report() -> ExecuteReport:
    return ExecuteReport(Output(color=False))


def test_dump_is_compact_sorted_and_names_the_plan() -> None:
    doc = orjson.loads(pc.dump_pace(pc.Pace(2, "smallest-first"), PLAN))
    assert doc == {
        "version": 1,
        "max_moves_per_broker": 2,
        "order": "smallest-first",
        "plan_sha256": __import__("hashlib").sha256(PLAN).hexdigest(),
    }
    assert pc.load_pace(pc.dump_pace(pc.Pace(2, None), PLAN), PLAN) == pc.Pace(2, None)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[]",
        b'{"version":2,"max_moves_per_broker":2,"order":null}',
        b'{"version":1,"max_moves_per_broker":0,"order":null}',
        b'{"version":1,"max_moves_per_broker":true,"order":null}',
        b'{"version":1,"max_moves_per_broker":2,"order":"random"}',
    ],
)
def test_anything_else_is_not_a_kept_pace(data: bytes) -> None:
    assert pc.load_pace(data, PLAN) is None


def test_a_pace_kept_for_another_plan_is_not_used() -> None:
    assert pc.load_pace(pc.dump_pace(pc.Pace(2, None), PLAN), PLAN + b" ") is None


def test_resume_without_a_cap_uses_the_kept_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = PaceFile.beside(str(tmp_path / "plan.json"), PLAN)
    keep.save(pc.Pace(2, "as-planned"), _report())
    assert keep.path == tmp_path / "plan.json.pacing.json"
    assert resumed_pace(keep, None, None, True, _report()) == pc.Pace(2, "as-planned")
    assert capsys.readouterr().err.strip() == (
        f"Resuming with --max-moves-per-broker 2 --order as-planned, as kept in {keep.path}"
    )
    # an --order given again wins over the kept one
    assert resumed_pace(keep, None, "largest-first", True, _report()) == pc.Pace(2, "largest-first")
    keep.forget()
    assert not keep.path.exists()
    assert resumed_pace(keep, None, None, True, _report()) is None  # nothing kept: not paced


def test_a_new_cap_replaces_the_kept_one_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = PaceFile.beside(str(tmp_path / "plan.json"), PLAN)
    keep.save(pc.Pace(2, None), _report())
    assert resumed_pace(keep, 3, None, True, _report()) == pc.Pace(3, None)
    assert "--max-moves-per-broker 3 instead of the 2 this plan started with" in capsys.readouterr().err
    # the same cap again: nothing to say
    assert resumed_pace(keep, 2, None, True, _report()) == pc.Pace(2, None)
    assert capsys.readouterr().err == ""
    # without --resume the kept file is not read at all
    assert resumed_pace(keep, None, None, False, _report()) is None


def test_order_without_any_cap_is_a_usage_error(tmp_path: Path) -> None:
    keep = PaceFile.beside(str(tmp_path / "plan.json"), PLAN)
    with pytest.raises(UsageError, match=r"^--order needs --max-moves-per-broker \(no cap is kept in "):
        resumed_pace(keep, None, "smallest-first", True, _report())


def test_a_cap_that_cannot_be_kept_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = PaceFile.beside(str(tmp_path / "missing-dir" / "plan.json"), PLAN)
    keep.save(pc.Pace(2, None), _report())
    err = capsys.readouterr().err
    assert "cannot keep the cap in" in err and "will need --max-moves-per-broker 2 again" in err
