"""Which backend a command uses (cli.common.connection): flags against environment variables, the two
commands where --bootstrap-server may stand beside --zookeeper, and the usage errors (exit 2, nothing
contacted). The rules are the README's table."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.cli.common import Options, connection
from reassign_cli.errors import UsageError
from tests.helpers import run_cli

ZK, BS = "zk1:2181/kafka", "k1:9092,k2:9092"


def opts(
    zk: str | None = None, bs: str | None = None, explicit: tuple[str, ...] = (), **kw: object
) -> Options:
    return Options(
        zookeeper=zk,
        zk_timeout=10.0,
        format="text",
        color=False,
        verbose=False,
        bootstrap=bs,
        command_config=kw.get("command_config"),  # type: ignore[arg-type]
        quiet=bool(kw.get("quiet")),
        explicit=frozenset(explicit),
    )


# The rule (docs/kraft.md): a flag replaces its own variable, never the other one; ZooKeeper alone, the brokers
# alone, or both (ZooKeeper mode with the brokers beside it), the same for every subcommand.
CASES = {
    # name: (zookeeper, bootstrap, typed) -> (ZooKeeper used?, admin bootstrap or None)
    "--zookeeper": ((ZK, None, ("zookeeper",)), (True, None)),
    "--bootstrap-server": ((None, BS, ("bootstrap",)), (False, BS)),
    "only KAFKA_REASSIGN_ZOOKEEPER": ((ZK, None, ()), (True, None)),
    "only KAFKA_REASSIGN_BOOTSTRAP": ((None, BS, ()), (False, BS)),
    "both typed": ((ZK, BS, ("zookeeper", "bootstrap")), (True, BS)),
    "both from the environment": ((ZK, BS, ()), (True, BS)),
    "typed --bootstrap-server beside KAFKA_REASSIGN_ZOOKEEPER": ((ZK, BS, ("bootstrap",)), (True, BS)),
    "typed --zookeeper beside KAFKA_REASSIGN_BOOTSTRAP": ((ZK, BS, ("zookeeper",)), (True, BS)),
    "--zookeeper '' hides KAFKA_REASSIGN_ZOOKEEPER": (("", BS, ("zookeeper", "bootstrap")), (False, BS)),
    "--bootstrap-server '' hides KAFKA_REASSIGN_BOOTSTRAP": (
        (ZK, "", ("zookeeper", "bootstrap")),
        (True, None),
    ),
}


@pytest.mark.parametrize(("given", "expected"), CASES.values(), ids=CASES.keys())
def test_backend_choice(
    given: tuple[str | None, str | None, tuple[str, ...]], expected: tuple[bool, str | None]
) -> None:
    zk, bs, typed = given
    conn = connection(opts(zk, bs, typed))
    assert (conn.zk is not None, conn.admin.bootstrap if conn.admin else None) == expected
    if conn.zk is not None:
        assert conn.zk.connect == ZK


@given(
    zk=st.sampled_from([None, "", ZK]),
    bs=st.sampled_from([None, "", BS]),
    typed=st.sets(st.sampled_from(["zookeeper", "bootstrap"])),
)
def test_a_flag_and_its_variable_never_pick_different_backends(
    zk: str | None, bs: str | None, typed: set[str]
) -> None:
    """The same values, typed or from the environment, in any mix: the same connection (issue 30 item 1)."""

    def choice(explicit: tuple[str, ...]) -> tuple[str | None, str | None] | str:
        try:
            conn = connection(opts(zk, bs, explicit, quiet=True))
        except UsageError as e:
            return str(e)
        return (conn.zk.connect if conn.zk else None, conn.admin.bootstrap if conn.admin else None)

    assert choice(tuple(sorted(typed))) == choice(())


def test_which_one_was_used_is_said_once_when_a_variable_is_involved(
    capsys: pytest.CaptureFixture[str],
) -> None:
    o = opts(ZK, BS, ())
    connection(o)
    connection(o)
    err = capsys.readouterr().err
    assert err == (
        f"Using ZooKeeper mode: ZooKeeper {ZK} (KAFKA_REASSIGN_ZOOKEEPER), with the brokers {BS} "
        "(KAFKA_REASSIGN_BOOTSTRAP) beside it; to use only one, unset KAFKA_REASSIGN_ZOOKEEPER or give its "
        "option as ''.\n"
    )
    connection(opts(ZK, BS, ("zookeeper", "bootstrap")))  # both typed: nothing to point out
    assert capsys.readouterr().err == ""


USAGE = {
    "neither": ((None, None, ()), "--zookeeper or --bootstrap-server is required"),
    "both empty": (("", "", ("zookeeper", "bootstrap")), "--zookeeper or --bootstrap-server is required"),
    "--command-config without the admin API": (
        (ZK, None, ("zookeeper", "command_config")),
        "--command-config configures --bootstrap-server",
    ),
}


@pytest.mark.parametrize(("given", "message"), USAGE.values(), ids=USAGE.keys())
def test_usage_errors(given: tuple[str | None, str | None, tuple[str, ...]], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        connection(opts(*given, command_config="x.properties"))


def test_the_connect_timeout_reaches_the_brokers() -> None:
    """--connect-timeout (old name --zk-timeout) is the brokers' bootstrap timeout too (issue 30 item 8)."""
    o = opts(None, BS, ("bootstrap", "zk_timeout"))
    o.zk_timeout = 2.5
    admin = connection(o).admin
    assert admin is not None
    assert (admin.connect_timeout, admin.client_settings()["bootstrap_timeout_ms"]) == (2.5, 2500)


def test_the_command_config_file_is_read_and_mapped(tmp_path: Path) -> None:
    f = tmp_path / "client.properties"
    f.write_text("security.protocol=SSL\nssl.truststore.location=/ca.pem\n")
    conn = connection(opts(None, BS, ("bootstrap",), command_config=str(f)))
    assert conn.admin is not None
    assert conn.admin.client_settings()["ssl_cafile"] == "/ca.pem"


def test_through_the_real_command_line(tmp_path: Path) -> None:
    # Usage errors come before any connection (the addresses do not exist) and before any file is read.
    snap = run_cli("generate", "--snapshot", "s.json", "--topic", "t", "--bootstrap-server", "127.0.0.1:1")
    assert (snap.returncode, snap.stderr.splitlines()[0]) == (
        2,
        "Error: --snapshot and --bootstrap-server cannot be used together",
    )
    bad = tmp_path / "bad.properties"
    bad.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=broken password=hunter2\n"
    )
    r = run_cli("list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(bad))
    assert r.returncode == 3
    assert r.stderr.startswith("Error: command config: sasl.jaas.config must be one login module")
    assert "hunter2" not in r.stderr
