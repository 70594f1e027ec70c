"""The pure core imports nothing that does I/O: each module, alone, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

PURE_MODULES = [
    "errors",
    "model",
    "assign",
    "plan",
    "snapshot",
    "znodes",
    "validate",
    "throttle",
    "progress",
    "elect",
    "cancel",
    "balance",
    "balance_state",
    "balance_targets",
    "balance_replicas",
    "balance_leaders",
]
FORBIDDEN = ["kazoo", "kafka", "click", "rich", "pyspark"]

PROBE = """
import importlib, sys
importlib.import_module(sys.argv[1])
forbidden = sys.argv[2].split(",")
loaded = sorted(m for m in sys.modules if m.split(".")[0] in forbidden)
print(",".join(loaded))
"""


@pytest.mark.parametrize("name", PURE_MODULES)
def test_pure_module_imports_no_io_library(name: str) -> None:
    # A module that does not exist fails here on purpose: the layout promises it.
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, f"reassign_cli.{name}", ",".join(FORBIDDEN)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.strip().splitlines()[-1:]
    assert proc.stdout.strip() == "", f"reassign_cli.{name} imports {proc.stdout.strip()}"


def test_the_probe_sees_an_impure_import() -> None:
    # The check itself works: an import of a forbidden library is reported.
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "click", ",".join(FORBIDDEN)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "click" in proc.stdout.strip().split(",")
