"""SIGINT before the command's own handling is in place (reassign_cli.entry): one line, exit 130."""

from __future__ import annotations

import os
import signal
from typing import Any

INTERRUPTED = 130  # errors.ExitCode.INTERRUPTED, not imported: this module must load in microseconds


def interrupted(signum: int, frame: Any) -> None:
    os.write(2, b"Interrupted.\n")
    os._exit(INTERRUPTED)


def guard() -> None:
    """Answer SIGINT with `interrupted` (nothing has been written yet: nothing to clean up). A SIGINT ignored
    by the parent (nohup, a background job of a non-interactive shell) stays ignored."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)


def restore() -> None:
    """Python's own SIGINT handling (KeyboardInterrupt) again, if `guard` replaced it: cli.main calls this
    inside the block that turns KeyboardInterrupt into the same line and exit code."""
    if signal.getsignal(signal.SIGINT) is interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)
