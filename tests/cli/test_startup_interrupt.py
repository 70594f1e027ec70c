"""Ctrl-C during start-up (issue 30 item 16): while click, rich and the subcommands import, a SIGINT must end
the process as a later one does: exit 130 and the one line "Interrupted.", no traceback.

Not timing-dependent: KAFKA_REASSIGN_TEST_SIGINT_AT makes the process send itself SIGINT just before it
imports the named module (or, `main`, once everything is loaded, just before the command starts)."""

from __future__ import annotations

import os
import signal
import subprocess
import tomllib

import pytest

from reassign_cli import entry
from tests.helpers import PYTHON, REPO

# From the first import of the package's CLI to the moment the command runs: the click/rich imports, the
# subcommand modules, and the gap before cli.main takes over.
POINTS = ["reassign_cli.cli", "click", "rich", "reassign_cli.cli.common", "reassign_cli.cli.verify", "main"]


@pytest.mark.parametrize("point", POINTS)
def test_sigint_during_startup_exits_130_with_one_line(point: str) -> None:
    env = {**os.environ, entry.SIGINT_AT: point}
    r = subprocess.run(
        [PYTHON, "-m", "reassign_cli", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert (r.returncode, r.stderr, r.stdout) == (130, "Interrupted.\n", "")


def test_console_script_goes_through_the_guarded_entry() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kafka-reassign"] == "reassign_cli.entry:run"
    assert scripts["kafka-reassign-partitions"] == "reassign_cli.entry:run_dropin"


@pytest.mark.parametrize("point", ["click", "reassign_cli.cli.dropin", "main"])
def test_sigint_during_the_dropins_startup_exits_130_with_one_line(point: str) -> None:
    """kafka-reassign-partitions goes through the same guard (its console script is entry.run_dropin)."""
    r = subprocess.run(
        [PYTHON, "-c", "from reassign_cli.entry import run_dropin; run_dropin()", "--list"],
        env={**os.environ, entry.SIGINT_AT: point},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert (r.returncode, r.stderr, r.stdout) == (130, "Interrupted.\n", "")


@pytest.mark.parametrize("point", ["click", "reassign_cli.cli.execute"])
def test_sigint_from_outside_while_importing(point: str) -> None:
    """A real Ctrl-C from another process: the CLI pauses just before importing `point`, says so on stderr,
    and the test sends SIGINT then."""
    env = {**os.environ, entry.PAUSE_AT: point}
    proc = subprocess.Popen(
        [PYTHON, "-m", "reassign_cli", "--version"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stderr is not None
    assert proc.stderr.readline() == b"paused\n"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err, out) == (130, b"Interrupted.\n", b"")
