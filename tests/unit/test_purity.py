"""The pure core imports nothing that does I/O: each module, alone, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "reassign_cli"
# The pure packages (every module in them, found on disk: a new module is checked without being listed
# here) and the pure modules that live beside edges in their package.
PURE_PACKAGES = ["core", "planning"]
PURE_SINGLE = ["errors", "backends.protocol", "spark.split"]


def _modules_under(package: str) -> list[str]:
    root = PACKAGE / package.replace(".", "/")
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        found.append(".".join(parts))
    return found


PURE_MODULES = [m for p in PURE_PACKAGES for m in _modules_under(p)] + PURE_SINGLE
# Sequencing modules reach the cluster only through a backend.Backend: nothing of kazoo, kafka-python or
# the zookeeper package is imported with them (an admin-API backend can take ZooKeeper's place).
BACKEND_AGNOSTIC = [
    "ops.execute",
    "ops.request",
    "ops.watch",
    "ops.throttle_writes",
    "ops.dir_moves",
    "ops.unthrottle",
    "ops.elect",
    "ops.verify",
    "ops.cancel",
]
FORBIDDEN = ["kazoo", "kafka", "click", "rich", "pyspark"]

PROBE = """
import importlib, sys
importlib.import_module(sys.argv[1])
forbidden = sys.argv[2].split(",")
loaded = sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in forbidden))
print(",".join(loaded))
"""


def imported(module: str, forbidden: list[str]) -> str:
    """The forbidden modules (packages and everything under them) that importing `module` loads."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, module, ",".join(forbidden)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.strip().splitlines()[-1:]
    return proc.stdout.strip()


@pytest.mark.parametrize("name", PURE_MODULES)
def test_pure_module_imports_no_io_library(name: str) -> None:
    # A module that does not exist fails here on purpose: the layout promises it.
    loaded = imported(f"reassign_cli.{name}", FORBIDDEN)
    assert loaded == "", f"reassign_cli.{name} imports {loaded}"


@pytest.mark.parametrize("name", BACKEND_AGNOSTIC)
def test_sequencing_module_imports_no_backend(name: str) -> None:
    loaded = imported(f"reassign_cli.{name}", [*FORBIDDEN, "reassign_cli.backends.zookeeper"])
    assert loaded == "", f"reassign_cli.{name} imports {loaded}"


def test_the_probe_sees_an_impure_import() -> None:
    # The check itself works: an import of a forbidden library, or of a forbidden subpackage, is reported.
    assert "click" in imported("click", FORBIDDEN).split(",")
    assert "reassign_cli.backends.zookeeper.session" in imported(
        "reassign_cli.backends.zookeeper.backend", ["reassign_cli.backends.zookeeper"]
    )
