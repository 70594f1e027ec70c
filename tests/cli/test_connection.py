"""Which backend a command uses (cli.common.connection): flags against environment variables, the two
commands where --bootstrap-server may stand beside --zookeeper, and the usage errors (exit 2, nothing
contacted). The rules are the README's table."""

from __future__ import annotations

from pathlib import Path

import pytest

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
        quiet=False,
        verbose=False,
        bootstrap=bs,
        command_config=kw.get("command_config"),  # type: ignore[arg-type]
        explicit=frozenset(explicit),
    )


CASES = {
    # name: (zookeeper, bootstrap, typed, admin_too) -> (ZooKeeper used?, admin bootstrap or None)
    "--zookeeper": ((ZK, None, ("zookeeper",), False), (True, None)),
    "--bootstrap-server": ((None, BS, ("bootstrap",), False), (False, BS)),
    "both from the environment: ZooKeeper": ((ZK, BS, (), False), (True, None)),
    "both from the environment, execute/cancel: ZooKeeper, brokers beside": ((ZK, BS, (), True), (True, BS)),
    "only KAFKA_REASSIGN_BOOTSTRAP": ((None, BS, (), False), (False, BS)),
    "typed --bootstrap-server wins over KAFKA_REASSIGN_ZOOKEEPER": (
        (ZK, BS, ("bootstrap",), False),
        (False, BS),
    ),
    "the same for cancel": ((ZK, BS, ("bootstrap",), True), (False, BS)),
    "typed --zookeeper wins over KAFKA_REASSIGN_BOOTSTRAP": ((ZK, BS, ("zookeeper",), False), (True, None)),
    "cancel: --zookeeper, brokers from the environment": ((ZK, BS, ("zookeeper",), True), (True, BS)),
    "cancel/execute: both typed": ((ZK, BS, ("zookeeper", "bootstrap"), True), (True, BS)),
}


@pytest.mark.parametrize(("given", "expected"), CASES.values(), ids=CASES.keys())
def test_backend_choice(
    given: tuple[str | None, str | None, tuple[str, ...], bool], expected: tuple[bool, str | None]
) -> None:
    zk, bs, typed, admin_too = given
    conn = connection(opts(zk, bs, typed), admin_too=admin_too)
    assert (conn.zk is not None, conn.admin.bootstrap if conn.admin else None) == expected
    if conn.zk is not None:
        assert conn.zk.connect == ZK


USAGE = {
    "both typed": (
        (ZK, BS, ("zookeeper", "bootstrap")),
        "--zookeeper and --bootstrap-server cannot be used together",
    ),
    "neither": ((None, None, ()), "--zookeeper or --bootstrap-server is required"),
    "--command-config without the admin API": (
        (ZK, None, ("zookeeper", "command_config")),
        "--command-config configures --bootstrap-server",
    ),
    "--zk-timeout with the admin API": (
        (None, BS, ("bootstrap", "zk_timeout")),
        "--zk-timeout is for --zookeeper",
    ),
}


@pytest.mark.parametrize(("given", "message"), USAGE.values(), ids=USAGE.keys())
def test_usage_errors(given: tuple[str | None, str | None, tuple[str, ...]], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        connection(opts(*given, command_config="x.properties"))


def test_the_command_config_file_is_read_and_mapped(tmp_path: Path) -> None:
    f = tmp_path / "client.properties"
    f.write_text("security.protocol=SSL\nssl.truststore.location=/ca.pem\n")
    conn = connection(opts(None, BS, ("bootstrap",), command_config=str(f)))
    assert conn.admin is not None
    assert conn.admin.client_settings()["ssl_cafile"] == "/ca.pem"


def test_through_the_real_command_line(tmp_path: Path) -> None:
    # Usage errors come before any connection (the addresses do not exist) and before any file is read.
    both = run_cli("list", "--zookeeper", "127.0.0.1:1", "--bootstrap-server", "127.0.0.1:1")
    assert (both.returncode, both.stdout) == (2, "")
    assert both.stderr.startswith("Error: --zookeeper and --bootstrap-server cannot be used together")
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
