"""An input file that cannot be read gives the same answer in every subcommand: one line naming the file,
exit 3, and no connection attempted (the ZooKeeper given here does not exist)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli

MISSING = "no-such-file.json"


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["generate", "--topics-to-move-json-file", MISSING], "topics-to-move file "),
        (["generate", "--topic", "t", "--snapshot", MISSING], "snapshot file "),
        (["execute", "--reassignment-json-file", MISSING], ""),
        (["verify", "--reassignment-json-file", MISSING], ""),
        (["elect-leaders", "--reassignment-json-file", MISSING], ""),
        (["cancel", "--reassignment-json-file", MISSING, "--bootstrap-server", "127.0.0.1:1"], ""),
    ],
    ids=["generate-topics", "generate-snapshot", "execute", "verify", "elect-leaders", "cancel"],
)
def test_unreadable_input_file_is_exit_3(tmp_path: Path, args: list[str], what: str) -> None:
    r = run_cli(*args, zookeeper="127.0.0.1:1", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr == f"Error: cannot read {what}{MISSING}: No such file or directory\n"
    assert list(tmp_path.iterdir()) == []
