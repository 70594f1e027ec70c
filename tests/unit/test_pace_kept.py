"""The cap kept for `execute --resume` (core.pacing dump_pace/load_pace, ops.pacing PaceFile and
resumed_pace): kept for this very plan only, read back when --resume leaves the cap out, replaced (and said)
when a new cap is given, refused in one line when --order has no cap to go with."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from reassign_cli.core import pacing as pc
from reassign_cli.errors import UsageError
from reassign_cli.ops.pace_file import PaceFile, resumed_pace
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


def test_a_resume_refuses_a_pace_kept_for_other_plan_bytes(tmp_path: Path) -> None:
    # Issue 30 item 22: the plan edited since (or the pace file copied from elsewhere). Read as "nothing
    # kept", --resume ran unpaced and started every remaining move at once. Now: exit 3, nothing started.
    from reassign_cli.errors import ExitCode, InvalidInputError

    PaceFile.beside(str(tmp_path / "plan.json"), PLAN).save(pc.Pace(2, None), _report())
    edited = PaceFile.beside(str(tmp_path / "plan.json"), PLAN.replace(b"[3]", b"[2]"))
    with pytest.raises(InvalidInputError) as e:
        resumed_pace(edited, None, None, True, _report())
    assert e.value.exit_code == ExitCode.INVALID and e.value.hint is None
    assert str(e.value) == (
        f"Cannot resume: {edited.path} was kept for other plan bytes (the plan was edited since, or the file "
        "comes from another directory or host); nothing was started. Give --max-moves-per-broker N to "
        "resume paced with that cap, or remove the file to resume unpaced"
    )
    # a file that is no kept pace at all: the same refusal
    edited.path.write_text("{}")
    with pytest.raises(InvalidInputError, match="is not a pace this version keeps"):
        resumed_pace(edited, None, None, True, _report())


def test_a_cap_given_with_a_foreign_pace_file_is_used_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    PaceFile.beside(str(tmp_path / "plan.json"), PLAN).save(pc.Pace(2, "smallest-first", 5), _report())
    edited = PaceFile.beside(str(tmp_path / "plan.json"), PLAN + b"\n")
    assert resumed_pace(edited, 3, None, True, _report()) == pc.Pace(3, None)  # nothing of the foreign one
    err = capsys.readouterr().err
    assert f"Not using {edited.path}: it was kept for other plan bytes" in err
    assert "the cap given, 3, holds from now on" in err


def test_the_rates_are_kept_with_the_cap_and_come_back_on_resume(tmp_path: Path) -> None:
    doc = orjson.loads(pc.dump_pace(pc.Pace(2, None, 1_000_000, 5_000), PLAN))
    assert (doc["throttle"], doc["replica_alter_log_dirs_throttle"]) == (1_000_000, 5_000)
    keep = PaceFile.beside(str(tmp_path / "plan.json"), PLAN)
    keep.save(pc.Pace(2, None, 1_000_000), _report())
    assert resumed_pace(keep, None, None, True, _report()) == pc.Pace(2, None, 1_000_000)
    assert resumed_pace(keep, 4, None, True, _report()) == pc.Pace(4, None, 1_000_000)
    bad = pc.dump_pace(pc.Pace(2, None), PLAN).replace(b'"version"', b'"throttle":-1,"version"')
    assert pc.load_pace(bad, PLAN) is None


def test_work_left_is_the_pace_kept_for_this_very_plan(tmp_path: Path) -> None:
    from reassign_cli.ops.pace_file import work_left

    name = str(tmp_path / "plan.json")
    assert work_left(name, PLAN) is None
    PaceFile.beside(name, PLAN).save(pc.Pace(2, None, 7), _report())
    assert work_left(name, PLAN) == pc.Pace(2, None, 7)
    assert work_left(name, PLAN + b" ") is None  # another plan's: not this one's run
    PaceFile.beside(name, PLAN).forget()
    assert work_left(name, PLAN) is None


def test_a_cancelled_run_is_forgotten_only_when_the_pace_is_this_plans(tmp_path: Path) -> None:
    from reassign_cli.ops.pace_file import forget_run, work_left

    name = str(tmp_path / "plan.json")
    assert forget_run(name, PLAN) is False  # nothing kept
    PaceFile.beside(name, PLAN).save(pc.Pace(2, None), _report())
    assert forget_run(name, PLAN + b" ") is False  # another plan's pace: left alone
    assert work_left(name, PLAN) is not None
    assert forget_run(name, PLAN) is True
    assert work_left(name, PLAN) is None


def test_a_batch_size_run_is_kept_and_resumed_the_same_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 30 item 10b: a --batch-size run is kept too, so that verify can tell its batches not started
    # (queued) from partitions not as planned.
    batched = pc.Pace(None, None, 5000, batch_size=2)
    doc = orjson.loads(pc.dump_pace(batched, PLAN))
    assert doc == {
        "version": 1,
        "batch_size": 2,
        "throttle": 5000,
        "plan_sha256": __import__("hashlib").sha256(PLAN).hexdigest(),
    }
    assert pc.load_pace(pc.dump_pace(batched, PLAN), PLAN) == batched
    keep = PaceFile.beside(str(tmp_path / "plan.json"), PLAN)
    keep.save(batched, _report())
    assert resumed_pace(keep, None, None, True, _report()) == batched
    assert f"Resuming with --batch-size 2, as kept in {keep.path}" in capsys.readouterr().err
    # a cap given instead paces the rest, and says what it replaces
    assert resumed_pace(keep, 3, None, True, _report()) == pc.Pace(3, None, 5000)
    assert "--max-moves-per-broker 3 instead of the --batch-size 2 this plan started with" in (
        capsys.readouterr().err
    )
    with pytest.raises(UsageError, match="keeps a --batch-size run"):
        resumed_pace(keep, None, "as-planned", True, _report())
    # both, or neither: not a kept run
    both = pc.dump_pace(pc.Pace(2, None), PLAN).replace(b'"version"', b'"batch_size":2,"version"')
    assert pc.load_pace(both, PLAN) is None
