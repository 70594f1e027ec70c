"""kafka-reassign-partitions, the drop-in for Kafka's own command line: Kafka's argument checks, messages and
exit codes (read from Kafka 4.3.1's and 2.8's ReassignPartitionsCommand and checked against the 4.3.1 tool,
see tests/integration/test_dropin.py), and the subcommand each action becomes."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from reassign_cli.cli.dropin import kafka_exit, translate
from reassign_cli.cli.kafka_syntax import action_hint
from tests.helpers import run_cli, run_dropin


def dropin(*args: str) -> subprocess.CompletedProcess[str]:
    return run_dropin(*args, timeout=120)


# (argv, the first line Kafka's tool prints on stderr) - every one exits 1, as Kafka's does.
USAGE = [
    (["--execute", "--verify", "--bootstrap-server", "x:1"],
     "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"),
    (["--bootstrap-server", "x:1"],
     "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"),
    (["--list"], "Please specify either --bootstrap-server or --bootstrap-controller"),
    (["--list", "--bootstrap-server", "a:1", "--bootstrap-controller", "b:1"],
     "Please don't specify both --bootstrap-server and --bootstrap-controller"),
    (["--execute", "--bootstrap-server", "x:1"], 'Missing required argument "[reassignment-json-file]"'),
    (["--generate", "--bootstrap-server", "x:1", "--broker-list", "1"],
     'Missing required argument "[topics-to-move-json-file]"'),
    (["--verify", "--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--throttle", "5"],
     'Option "[throttle]" can\'t be used with action "[verify]"'),
    (["--execute", "--bootstrap-controller", "x:1", "--reassignment-json-file", "f"],
     'Option "[bootstrap-controller]" can\'t be used with action "[execute]"'),
    (["--verify", "--reassignment-json-file", "f", "--bootstrap-server", "x:1", "--additional"],
     'Option "[additional]" can\'t be used with action "[verify]"'),
    # Kafka 2.8's --zookeeper: refused with list, and these needed --bootstrap-server
    (["--list", "--zookeeper", "z:1"], 'Option "[zookeeper]" can\'t be used with action "[list]"'),
    (["--execute", "--zookeeper", "z:1", "--reassignment-json-file", "f", "--additional"],
     'You must specify --bootstrap-server when using "[additional]"'),
    (["--execute", "--zookeeper", "z:1", "--reassignment-json-file", "f", "--timeout", "5"],
     'You must specify --bootstrap-server when using "[timeout]"'),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "first"), USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_usage_errors_are_kafkas_and_exit_1(argv: list[str], first: str) -> None:
    r = dropin(*argv)
    assert (r.returncode, r.stderr.splitlines()[0], r.stdout) == (1, first, "")


def test_help_and_no_arguments_exit_1_as_kafkas() -> None:
    for argv in ([], ["--help"]):
        r = dropin(*argv)
        assert r.returncode == 1 and "--reassignment-json-file" in r.stderr and r.stdout == ""


def test_version_exits_0() -> None:
    assert dropin("--version").returncode == 0


def test_bootstrap_controller_is_refused_with_a_reason() -> None:
    r = dropin("--list", "--bootstrap-controller", "c:1")
    assert r.returncode == 1 and "give --bootstrap-server" in r.stderr


def kw(**given: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "reassignment_json_file": None,
        "topics_to_move_json_file": None,
        "broker_list": None,
        "disable_rack_aware": False,
        "throttle": -1,
        "replica_alter_log_dirs_throttle": -1,
        "timeout": 10000,
        "additional": False,
        "disallow_replication_factor_change": False,
        "preserve_throttles": False,
        "bootstrap_server": None,
        "zookeeper": None,
        "command_config": None,
    }
    return {**base, **given}


def test_execute_maps_onto_our_execute() -> None:
    args = kw(
        reassignment_json_file="p.json",
        throttle=50000000,
        timeout=2500,
        additional=True,
        disallow_replication_factor_change=True,
        bootstrap_server="b:9092",
        command_config="c.properties",
    )
    assert translate("execute", args) == [
        "execute", "--reassignment-json-file", "p.json", "--throttle", "50000000",
        "--log-dir-timeout", "2.5", "--additional", "--disallow-replication-factor-change",
        "--bootstrap-server", "b:9092", "--command-config", "c.properties",
    ]  # fmt: skip


def test_negative_throttles_are_none_as_in_kafka() -> None:
    args = kw(
        reassignment_json_file="p.json", throttle=-1, replica_alter_log_dirs_throttle=-5, zookeeper="z/k"
    )
    assert translate("execute", args) == [
        "execute", "--reassignment-json-file", "p.json", "--log-dir-timeout", "10", "--zookeeper", "z/k",
    ]  # fmt: skip


def test_the_other_actions_map_onto_their_subcommands() -> None:
    assert translate(
        "generate", kw(topics_to_move_json_file="t.json", broker_list="1,2", disable_rack_aware=True, zookeeper="z")
    ) == [
        "generate", "--topics-to-move-json-file", "t.json", "--broker-list", "1,2", "--disable-rack-aware",
        "--zookeeper", "z",
    ]  # fmt: skip
    assert translate("verify", kw(reassignment_json_file="p", preserve_throttles=True, bootstrap_server="b")) == [
        "verify", "--reassignment-json-file", "p", "--preserve-throttles", "--bootstrap-server", "b",
    ]  # fmt: skip
    assert translate("list", kw(bootstrap_server="b")) == ["list", "--bootstrap-server", "b"]
    cancel = kw(reassignment_json_file="p", timeout=2500, timeout_given=True, bootstrap_server="b")
    assert translate("cancel", cancel) == [
        "cancel", "--reassignment-json-file", "p", "--timeout", "2.5", "--bootstrap-server", "b",
    ]  # fmt: skip
    assert "--timeout" not in translate("cancel", {**cancel, "timeout_given": False})


def test_exit_codes_are_kafkas() -> None:
    # Kafka's tool: 0 on success, 1 on any failure; verify exits 0 while in progress or not as planned.
    assert [kafka_exit("verify", c) for c in (0, 1, 2, 3, 4, 5, 130)] == [0, 1, 1, 1, 0, 0, 130]
    assert [kafka_exit("execute", c) for c in (0, 1, 2, 3, 4, 130)] == [0, 1, 1, 1, 1, 130]


def test_a_missing_plan_file_exits_1() -> None:
    r = dropin(
        "--verify", "--bootstrap-server", "127.0.0.1:1", "--reassignment-json-file", "/nonexistent.json"
    )
    assert r.returncode == 1 and "/nonexistent.json" in r.stderr


@pytest.mark.parametrize("action", ["execute", "verify", "generate", "list", "cancel"])
def test_kafka_reassign_names_the_subcommand_for_kafkas_action_flags(action: str) -> None:
    r = run_cli("--bootstrap-server", "b:1", f"--{action}", "--reassignment-json-file", "p.json")
    assert r.returncode == 2
    assert f"use the subcommand `{action}`" in r.stderr and "No such option" not in r.stderr


def test_action_hint_only_before_a_subcommand() -> None:
    subs = ["verify", "execute"]
    assert action_hint(["--verify", "--reassignment-json-file", "p"], subs) is not None
    assert action_hint(["verify", "--verify"], subs) is None
    assert action_hint(["--bogus"], subs) is None


@pytest.mark.parametrize("action", ["generate", "execute", "verify", "cancel", "list"])
def test_every_translated_command_line_parses(action: str) -> None:
    """Our subcommands take what the drop-in hands them, every option set (a renamed option fails here)."""
    from reassign_cli.cli import cli

    args = kw(
        reassignment_json_file="p.json",
        topics_to_move_json_file="t.json",
        broker_list="1,2",
        disable_rack_aware=True,
        throttle=1000,
        replica_alter_log_dirs_throttle=1000,
        timeout=2500,
        additional=True,
        disallow_replication_factor_change=True,
        preserve_throttles=True,
        bootstrap_server="b:1",
        command_config="c.properties",
        timeout_given=True,
    )
    argv = translate(action, args)
    assert argv[0] == action
    cli.commands[action].make_context(action, argv[1:])  # raises click.UsageError on an unknown option
