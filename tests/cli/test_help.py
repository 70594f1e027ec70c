"""--help reads right (issue 30 item 15): no docstring indent garbles a command's text, the top-level list
shows each summary whole, the wait timeout has one name (the old one still works), --report NAME writes
exactly NAME.md and NAME.html, and shell completion works as documented."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from reassign_cli.cli import cli
from tests.cli.test_generate_sizes import _doc, _snap
from tests.helpers import PYTHON, REPO, run_cli

COMMANDS = sorted(cli.commands)


def _help(*args: str) -> str:
    r = CliRunner().invoke(cli, [*args, "--help"], terminal_width=100)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("name", COMMANDS)
def test_description_has_no_stray_indent(name: str) -> None:
    text = _help(name).split("\nOptions:")[0]
    garbled = [
        line for line in text.splitlines() if re.search(r"\S {2,}\S", line) or line.startswith("      ")
    ]
    assert not garbled, garbled


def test_top_level_summaries_are_whole() -> None:
    listing = _help().split("Commands:")[1].split("Exit codes:")[0]
    assert "..." not in listing, listing
    for name in COMMANDS:
        assert re.search(rf"^  {name} +\S", listing, re.M), name


@pytest.mark.parametrize("name", ["execute", "cancel", "elect-leaders"])
def test_the_wait_timeout_has_one_name_in_help(name: str) -> None:
    text = _help(name)
    assert "--wait-timeout SECONDS" in text
    assert not re.search(r"^\s+--timeout\b", text, re.M)  # the old spelling: mentioned, not listed


@pytest.mark.parametrize("spelling", ["--wait-timeout", "--timeout"])
def test_both_spellings_of_the_wait_timeout_are_taken(spelling: str, tmp_path: Path) -> None:
    r = run_cli(
        "execute", "--reassignment-json-file", str(tmp_path / "p.json"), spelling, "5", "--zookeeper", "z:1"
    )
    assert r.returncode == 2
    assert "Error: --wait-timeout needs --wait (or --batch-size, which waits)" in r.stderr


@pytest.mark.parametrize("given", ["plan", "plan.html", "plan.md"])
def test_report_name_gives_exactly_two_files(given: str, tmp_path: Path) -> None:
    snap = _snap(tmp_path, _doc(True), "s.json")
    out = tmp_path / "out"
    out.mkdir()
    r = run_cli("generate", "--snapshot", snap, "--topic", "a", "--seed", "3", "--report", str(out / given))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["plan.html", "plan.md"]


def test_shell_completion_as_documented() -> None:
    readme = (REPO / "README.md").read_text() + (REPO / "docs" / "cli.md").read_text()
    assert "_KAFKA_REASSIGN_COMPLETE=bash_source kafka-reassign" in readme
    env = dict(os.environ, _KAFKA_REASSIGN_COMPLETE="bash_source")
    r = subprocess.run([PYTHON, "-m", "reassign_cli"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "_kafka_reassign_completion()" in r.stdout, r.stderr
    env = dict(
        env,
        _KAFKA_REASSIGN_COMPLETE="bash_complete",
        COMP_WORDS="kafka-reassign execute --wait-t",
        COMP_CWORD="2",
    )
    r = subprocess.run([PYTHON, "-m", "reassign_cli"], env=env, capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["plain,--wait-timeout"]
