"""The console script's first module: a Ctrl-C while the rest loads ends the process as a later one does.

Importing click, rich and the subcommands takes about 0.5 s (seconds on a loaded machine). Until the
command's own handling is in place (cli.main), SIGINT prints the one line and exits 130 here: nothing has
been written yet, so there is nothing to clean up. Kept free of imports beyond the standard library.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from importlib.abc import MetaPathFinder
from typing import Any, NoReturn

from reassign_cli import sigint

# Tests: interrupt this process just before it imports the module named here (`reassign_cli.cli`,
# `click`, ...), or `main` just before the command runs: a Ctrl-C at an exact point of the start-up.
SIGINT_AT = "KAFKA_REASSIGN_TEST_SIGINT_AT"
# Tests: just before importing the module named here, write "paused" to stderr and wait for a signal
# (the test sends SIGINT from outside, as a terminal does).
PAUSE_AT = "KAFKA_REASSIGN_TEST_PAUSE_AT"


class _Before(MetaPathFinder):
    """Acts when the named module is about to be imported (finds nothing itself): SIGINT to this process,
    or a pause until a signal comes."""

    def __init__(self, name: str, pause: bool) -> None:
        self.name, self.pause = name, pause

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname != self.name:
            return
        sys.meta_path.remove(self)
        if self.pause:
            os.write(2, b"paused\n")
            signal.pause()
        else:
            os.kill(os.getpid(), signal.SIGINT)


def _test_hook() -> str | None:
    at, pause = os.environ.get(SIGINT_AT), os.environ.get(PAUSE_AT)
    if at and at != "main":
        sys.meta_path.insert(0, _Before(at, False))
    if pause:
        sys.meta_path.insert(0, _Before(pause, True))
    return at


def run() -> NoReturn:
    """`kafka-reassign` and `python -m reassign_cli`: cli.run() once loaded."""
    _guarded("reassign_cli.cli")


def run_dropin() -> NoReturn:
    """`kafka-reassign-partitions` (Kafka's own syntax): cli.dropin.run() once loaded, with the same guard."""
    _guarded("reassign_cli.cli.dropin")


def _guarded(module: str) -> NoReturn:
    sigint.guard()
    at = _test_hook()
    run_command = importlib.import_module(module).run
    if at == "main":
        os.kill(os.getpid(), signal.SIGINT)
    run_command()
    raise SystemExit(0)  # pragma: no cover - run_command exits
