"""Suggested commands (issue 30 item 4): the connection options typed on the command line, and only they,
shell-quoted, never a secret (core.hints, cli.common.typed_connection)."""

from __future__ import annotations

import shlex
from typing import Any

import click
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.cli.common import Options, connection_options
from reassign_cli.core.hints import command_line, connection_words

words = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)


@given(st.lists(words, max_size=5), st.lists(st.tuples(st.sampled_from(["--zookeeper", "--x"]), words)))
def test_a_pasted_hint_is_read_back_word_for_word(args: list[str], conn: list[tuple[str, str]]) -> None:
    line = command_line(args, conn)
    assert shlex.split(line) == ["kafka-reassign", *args, *(w for pair in conn for w in pair)]


def test_quoting_and_secrets_by_hand() -> None:
    conn = [
        ("--bootstrap-server", "k1:9092"),
        ("--command-config", "my dir/admin.properties"),
        ("--sasl-password", "hunter2"),
        ("--zk-client-secret", "s3"),
        ("--insecure", None),
    ]
    assert command_line(["verify", "--reassignment-json-file", "plan's.json"], conn) == (
        "kafka-reassign verify --reassignment-json-file 'plan'\"'\"'s.json' --bootstrap-server k1:9092 "
        "--command-config 'my dir/admin.properties' --insecure"
    )
    assert "hunter2" not in " ".join(connection_words(conn))


def _typed(args: list[str], env: dict[str, str]) -> Any:
    seen: list[Options] = []

    @click.command()
    @click.option("--reassignment-json-file")
    @connection_options
    def probe(opts: Options, **kw: Any) -> None:
        seen.append(opts)

    r = CliRunner().invoke(probe, args, env=env, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return seen[0].typed


def test_only_what_was_typed_is_carried() -> None:
    env = {"KAFKA_REASSIGN_BOOTSTRAP": "env:9092", "KAFKA_REASSIGN_COMMAND_CONFIG": "env.properties"}
    typed = _typed(
        ["--reassignment-json-file", "p.json", "--zookeeper", "zk:2181/kafka", "-q", "--format", "json"], env
    )
    assert typed == (("--zookeeper", "zk:2181/kafka"),)
    typed = _typed(["--bootstrap-server=k:1", "--command-config", "a b.properties", "--zk-timeout", "3"], {})
    assert set(typed) == {
        ("--bootstrap-server", "k:1"),
        ("--command-config", "a b.properties"),
        ("--connect-timeout", "3.0"),  # --zk-timeout is its older spelling
    }
    assert _typed([], env) == ()


def test_cancel_timeout_hint_carries_the_typed_connection() -> None:
    from reassign_cli.cli.cancel import _not_reverted_hint

    o = Options(None, 10.0, "text", False, False, False, "k:1", None, typed=(("--bootstrap-server", "k:1"),))
    hint = _not_reverted_hint(o, "my plan.json")
    check, verify = hint.removeprefix("Check with: ").split(
        "; once they have reverted, remove the throttles with: "
    )
    assert shlex.split(check) == ["kafka-reassign", "list", "--bootstrap-server", "k:1"]
    assert shlex.split(verify) == [
        "kafka-reassign",
        "verify",
        "--reassignment-json-file",
        "my plan.json",
        "--bootstrap-server",
        "k:1",
    ]
    assert _not_reverted_hint(o, None) == "Check with: kafka-reassign list --bootstrap-server k:1"


def test_cancel_hint_names_the_brokers_it_needs() -> None:
    from reassign_cli.ops.request import ExecuteRequest, cancel_command

    zk_only = ExecuteRequest("p.json", b"", connection=(("--zookeeper", "zk:1/k"),))
    assert cancel_command(zk_only) == (
        "kafka-reassign cancel --reassignment-json-file p.json --zookeeper zk:1/k --bootstrap-server HOST:PORT"
    )
    with_brokers = ExecuteRequest(
        "p.json", b"", bootstrap_server="k:1", connection=(("--bootstrap-server", "k:1"),)
    )
    assert (
        cancel_command(with_brokers)
        == "kafka-reassign cancel --reassignment-json-file p.json --bootstrap-server k:1"
    )
