"""The CLI contract that does not need a cluster: help, version, and how errors become exit codes."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

import reassign_cli.cli as cli_mod
from reassign_cli import __version__
from reassign_cli.errors import BusyError, ExitCode, InvalidInputError, OperationalError


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassign_cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_version_and_help() -> None:
    r = run("--version")
    assert r.returncode == 0 and __version__ in r.stdout
    r = run("--help")
    assert r.returncode == 0
    assert "Exit codes:" in r.stdout and "130" in r.stdout
    for name in cli_mod.cli.commands:
        assert name in r.stdout


def test_unknown_command_is_a_usage_error() -> None:
    r = run("frobnicate")
    assert r.returncode == ExitCode.USAGE
    assert "No such command" in r.stderr and r.stdout == ""


def _exit_code_of(
    exc: BaseException, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> int:
    def boom(*a: object, **k: object) -> None:
        raise exc

    monkeypatch.setattr(cli_mod.cli, "main", boom)
    with pytest.raises(SystemExit) as info:
        cli_mod.main([])
    return int(info.value.code or 0)


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (OperationalError("cannot connect"), ExitCode.ERROR, "Error: cannot connect"),
        (InvalidInputError("bad plan"), ExitCode.INVALID, "Error: bad plan"),
        (BusyError("busy"), ExitCode.BUSY, "Error: busy"),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "Interrupted."),
        (click.UsageError("bad flag"), ExitCode.USAGE, "bad flag"),
    ],
)
def test_errors_become_one_line_and_exit_code(
    exc: BaseException,
    code: int,
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _exit_code_of(exc, monkeypatch, capsys) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert line in err


def test_hint_goes_on_a_second_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_code_of(OperationalError("x", hint="try y"), monkeypatch, capsys) == 1
    assert capsys.readouterr().err.splitlines() == ["Error: x", "try y"]


def test_returned_exit_code_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_mod.cli, "main", lambda *a, **k: ExitCode.NOT_AS_PLANNED)
    with pytest.raises(SystemExit) as info:
        cli_mod.main([])
    assert info.value.code == ExitCode.NOT_AS_PLANNED


def test_unreachable_zookeeper_is_one_line_exit_1() -> None:
    from reassign_cli.backends.zookeeper.session import ZkOptions, open_session

    # Port 1 on loopback: nothing listens there, the connection is refused at once.
    with (
        pytest.raises(OperationalError, match=r"cannot connect to ZooKeeper at 127\.0\.0\.1:1"),
        open_session(ZkOptions("127.0.0.1:1/kafka", timeout=1.0)),
    ):
        pass


@pytest.mark.parametrize("bad", ["", "/kafka", "host", "host:port", "h:1,h2/x"])
def test_bad_connect_string_is_a_usage_error(bad: str) -> None:
    from reassign_cli.backends.zookeeper.session import split_connect_string
    from reassign_cli.errors import UsageError

    with pytest.raises(UsageError):
        split_connect_string(bad)


def test_connect_string_chroot() -> None:
    from reassign_cli.backends.zookeeper.session import split_connect_string

    assert split_connect_string("a:1,b:2/kafka/") == ("a:1,b:2", "/kafka")
    assert split_connect_string("a:1") == ("a:1", "")
    assert split_connect_string("a:1/") == ("a:1", "")


def test_unexpected_exception_is_one_line_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KAFKA_REASSIGN_DEBUG", raising=False)
    assert _exit_code_of(RuntimeError("disk on fire"), monkeypatch, capsys) == ExitCode.ERROR
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "Error: unexpected RuntimeError: disk on fire"
    assert "Traceback" not in "\n".join(err)


def test_output_is_flushed_before_the_fast_exit() -> None:
    # run() leaves through os._exit: a large result must still reach a pipe completely.
    r = run("--help")
    assert r.returncode == 0 and r.stdout.rstrip().endswith("130  interrupted")
