"""A foreground paced or --batch-size run kept beside its plan: `<plan file>.pacing.json` holds the cap (or
batch size), order and rates the run started with, from before its first move until it ends. `execute
--resume` continues with them (`resumed_pace`), and verify and cancel ask `work_left` / `forget_run`
whether a run of the plan has not ended. ops/pacing.py writes it; cli/execute.py, cli/verify.py and
cli/cancel.py read it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reassign_cli.core import pacing as pc
from reassign_cli.errors import InvalidInputError, UsageError

if TYPE_CHECKING:
    from reassign_cli.ops.request import ExecuteReport


PACE_SUFFIX = ".pacing.json"


@dataclass(frozen=True, slots=True)
class PaceFile:
    """`<plan file>.pacing.json`, beside the plan: the cap and order a paced run started with, kept until
    the run ends, so that `execute --resume` continues with the same cap (core.pacing.dump_pace)."""

    path: Path
    plan: bytes

    @classmethod
    def beside(cls, file_name: str, plan: bytes) -> PaceFile:
        return cls(Path(file_name + PACE_SUFFIX), plan)

    def read(self) -> pc.Pace | None:
        """The pace kept for this very plan; None when there is none (or it is for another plan)."""
        return self.kept()[0]

    def kept(self) -> tuple[pc.Pace | None, str | None]:
        """(the pace kept for this plan, None) or (None, why the file there cannot be used); (None, None)
        when there is no file."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None, None
        except OSError as e:
            return None, f"cannot be read ({e.strerror or e})"
        found = pc.read_pace(data)
        if found is None:
            return None, "is not a pace this version keeps"
        if found[1] != pc.plan_digest(self.plan):
            return None, (
                "was kept for other plan bytes (the plan was edited since, or the file comes from "
                "another directory or host)"
            )
        return found[0], None

    def save(self, pace: pc.Pace, report: ExecuteReport) -> None:
        """Written whole (a temporary file renamed over it); a failure is a warning, not an error."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_bytes(pc.dump_pace(pace, self.plan))
            os.replace(tmp, self.path)
        except OSError as e:
            again = run_option(pace)
            report.warn(
                f"cannot keep the cap in {self.path} ({e.strerror or e}): execute --resume will need {again} again"
            )

    def forget(self) -> None:
        """The run ended: nothing to resume."""
        self.path.unlink(missing_ok=True)


def resumed_pace(
    keep: PaceFile, cap: int | None, order: pc.Order | None, resume: bool, report: ExecuteReport
) -> pc.Pace | None:
    """This run's pace: the options given; with --resume, what they leave out comes from the kept file (a
    cap given anew replaces the kept one, said on stderr). None: not paced. A kept file that is not this
    plan's (other bytes, unreadable) is refused unless a cap is given (then it is said, and replaced):
    resuming unpaced would start every remaining move at once."""
    kept, problem = keep.kept() if resume else (None, None)
    if problem is not None:
        if cap is None:
            raise InvalidInputError(
                f"Cannot resume: {keep.path} {problem}; nothing was started. Give --max-moves-per-broker N "
                "to resume paced with that cap, or remove the file to resume unpaced"
            )
        report.info(f"Not using {keep.path}: it {problem}; the cap given, {cap}, holds from now on")
    if cap is None and kept is None:
        if order is not None:
            where = f" (no cap is kept in {keep.path})" if resume else ""
            raise UsageError(f"--order needs --max-moves-per-broker{where}")
        return None
    if cap is None:
        assert kept is not None
        if kept.cap is None:  # a --batch-size run
            if order is not None:
                raise UsageError(
                    f"--order needs --max-moves-per-broker ({keep.path} keeps a --batch-size run)"
                )
            report.info(f"Resuming with {run_option(kept)}, as kept in {keep.path}")
            return kept
        pace = dataclasses.replace(kept, order=order or kept.order)
        how = f" --order {pace.order}" if pace.order else ""
        report.info(f"Resuming with --max-moves-per-broker {pace.cap}{how}, as kept in {keep.path}")
        return pace
    if kept is not None and kept.cap != cap:
        was = kept.cap if kept.cap is not None else run_option(kept)
        report.info(
            f"Resuming with --max-moves-per-broker {cap} instead of the {was} this plan started with "
            f"(kept in {keep.path}): the new cap holds from now on"
        )
    if kept is not None:
        return dataclasses.replace(kept, cap=cap, order=order or kept.order, batch_size=None)
    return pc.Pace(cap, order)


def run_option(pace: pc.Pace) -> str:
    """The option a kept run goes with: `--max-moves-per-broker N` or `--batch-size N`."""
    if pace.cap is not None:
        return f"--max-moves-per-broker {pace.cap}"
    return f"--batch-size {pace.batch_size}"


def work_left(file_name: str, plan: bytes) -> pc.Pace | None:
    """THE test of whether a run of this plan has not ended (a paced or --batch-size run, interrupted or
    between two moves or batches): its pace, or None. verify then calls what is not started "queued" and keeps the throttles.
    Today the pace file beside the plan (kept from before the first move until the run ends)."""
    return PaceFile.beside(file_name, plan).read()


def forget_run(file_name: str, plan: bytes) -> bool:
    """The run of this plan is over (cancelled): nothing of it is queued or to resume any more. True when
    a pace was kept for it (and is now gone)."""
    keep = PaceFile.beside(file_name, plan)
    if keep.read() is None:
        return False
    keep.forget()
    return True
