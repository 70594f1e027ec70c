"""The extra test clusters of scripts/cluster (secure ZooKeeper, KRaft 3.9 and 4.x) for the fixtures in
tests/conftest.py, and raw-client helpers for them (no reassign_cli code).

Each extra cluster has its own state directory derived from the main one ($CLUSTER_DIR-secure,
$CLUSTER_DIR-kraft-<version>), is started once per session on first use and stopped at the end of the
session (unless it was already running before the session).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CLUSTER_SCRIPT, REPO, read_env_file


def script(
    *args: str,
    directory: Path,
    timeout: float = 400,
    keep_settings: bool = False,
    program: Path = CLUSTER_SCRIPT,
    settings: tuple[str, ...] = ("CLUSTER_",),
    extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """scripts/cluster (or `program`, e.g. scripts/docker) ARGS with CLUSTER_DIR=directory. The caller's other
    `settings` variables (ports, timeouts) are kept only for the main cluster (keep_settings): an extra cluster
    must not reuse its ports. `extra`: variables set for this run only."""
    env = {k: v for k, v in os.environ.items() if keep_settings or not k.startswith(settings)}
    env.update(extra or {})
    env["CLUSTER_DIR"] = str(directory)
    return subprocess.run(
        [str(program), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def checked(*args: str, directory: Path) -> subprocess.CompletedProcess[str]:
    r = script(*args, directory=directory)
    if r.returncode != 0:
        pytest.fail(
            f"scripts/cluster {' '.join(args)} failed ({directory}):\n{r.stderr[-4000:]}", pytrace=False
        )
    return r


class ServerControl:
    """Stopping and starting one cluster's servers through scripts/cluster, for the cluster fixtures.

    Needs `directory` (the cluster's state dir) and `stopped` (the brokers a test stopped, restarted at
    the end of the session if still down)."""

    directory: Path
    stopped: set[int]

    def stop_broker(self, broker_id: int) -> None:
        """Stop one broker (controlled shutdown); returns once it has left the cluster."""
        self.stopped.add(broker_id)
        checked("stop-broker", str(broker_id), directory=self.directory)

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped broker; returns once it is registered again and serving metadata."""
        checked("start-broker", str(broker_id), directory=self.directory)
        self.stopped.discard(broker_id)

    @contextlib.contextmanager
    def broker_stopped(self, broker_id: int) -> Iterator[None]:
        """with c.broker_stopped(3): ...  (restarted afterwards, even if the block fails)"""
        self.stop_broker(broker_id)
        try:
            yield
        finally:
            self.start_broker(broker_id)

    def stop_zookeeper(self) -> None:
        """Stop the cluster's ZooKeeper only; its brokers keep running (and retry)."""
        checked("stop-zookeeper", directory=self.directory)

    def start_zookeeper(self) -> None:
        """Start it again; returns once every running broker is registered and a controller elected."""
        checked("start-zookeeper", directory=self.directory)

    @contextlib.contextmanager
    def zookeeper_stopped(self) -> Iterator[None]:
        """with c.zookeeper_stopped(): ...  (ZooKeeper restarted afterwards, even if the block fails)"""
        self.stop_zookeeper()
        try:
            yield
        finally:
            self.start_zookeeper()


def pom_version(name: str) -> str:
    text = (REPO / "scripts" / "maven" / name).read_text()
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", text)
    assert m, name
    return m.group(1).strip()


ZK_MODE_VERSION = pom_version("kafka-pom.xml")  # 3.9.x: ZooKeeper mode, and KRaft
KAFKA4_VERSION = pom_version("kafka4-pom.xml")  # the newest 4.x: KRaft only
KRAFT_VERSIONS = (ZK_MODE_VERSION, KAFKA4_VERSION)


@dataclass
class ExtraCluster(ServerControl):
    """A cluster of scripts/cluster started for the session: `env` is its env file."""

    directory: Path
    env: dict[str, str]
    owned: bool  # started by this session (so stopped at its end)
    stopped: set[int] = field(default_factory=set)

    @property
    def mode(self) -> str:
        return self.env["CLUSTER_MODE"]

    @property
    def version(self) -> str:
        return self.env["CLUSTER_KAFKA_VERSION"]

    @property
    def bootstrap(self) -> str:
        return self.env["KAFKA_BOOTSTRAP"]

    @property
    def broker_ids(self) -> list[int]:
        return [int(x) for x in self.env["CLUSTER_BROKER_IDS"].split(",")]

    @property
    def broker_ports(self) -> dict[int, int]:
        ports = [int(p) for p in self.env["CLUSTER_BROKER_PORTS"].split(",")]
        return dict(zip(self.broker_ids, ports, strict=True))

    def bootstrap_for(self, broker_id: int) -> str:
        return f"127.0.0.1:{self.broker_ports[broker_id]}"

    @property
    def zookeeper(self) -> str | None:
        """ZooKeeper connect string with the chroot (None for KRaft)."""
        return self.env.get("KAFKA_REASSIGN_ZOOKEEPER")

    @property
    def zk_hosts(self) -> str | None:
        return self.env.get("CLUSTER_ZK_HOSTS")

    @property
    def chroot(self) -> str | None:
        return self.env.get("CLUSTER_ZK_CHROOT")

    @property
    def jaas_file(self) -> Path | None:
        f = self.env.get("KAFKA_REASSIGN_ZK_JAAS_FILE")
        return Path(f) if f else None

    @property
    def tls_config_file(self) -> Path | None:
        f = self.env.get("KAFKA_REASSIGN_ZK_TLS_CONFIG_FILE")
        return Path(f) if f else None

    def kazoo(self, chroot: bool = True, authenticated: bool = True) -> Any:
        """A started KazooClient; on the secure cluster it speaks TLS and, if authenticated, SASL."""
        assert self.zookeeper and self.zk_hosts
        hosts = self.zookeeper if chroot else self.zk_hosts
        if self.jaas_file and self.tls_config_file:
            return secure_kazoo(hosts, self.jaas_file if authenticated else None, self.tls_config_file)
        return started_kazoo(hosts)


def start_extra(directory: Path, *up_args: str) -> ExtraCluster:
    """`scripts/cluster up ARGS` in directory; fails the test (never skips) if it cannot start."""
    was_up = script("status", directory=directory).returncode == 0
    r = script("up", *up_args, directory=directory)
    if r.returncode != 0:
        pytest.fail(
            f"could not start the cluster (scripts/cluster up {' '.join(up_args)} in {directory}):\n"
            f"{r.stderr[-4000:]}",
            pytrace=False,
        )
    return ExtraCluster(directory, read_env_file(directory / "env"), owned=not was_up)


def stop_extra(c: ExtraCluster) -> None:
    """Session end: `down` if this session started it (a failing `down` is reported), else restart
    the brokers the session left stopped."""
    if c.owned:
        r = script("down", directory=c.directory)
        assert r.returncode == 0, f"scripts/cluster down ({c.directory}) failed:\n{r.stderr[-2000:]}"
    else:
        for broker_id in sorted(c.stopped):
            script("start-broker", str(broker_id), directory=c.directory)


# --------------------------------------------------------------------------- raw clients


def read_properties(path: Path) -> dict[str, str]:
    """A Java .properties file (what scripts/cluster writes), as Java reads it."""
    import javaproperties

    return dict(javaproperties.loads(path.read_text()))


def read_jaas_client(path: Path, section: str = "Client") -> tuple[str, str]:
    """(username, password) of a JAAS file's DigestLoginModule section."""
    m = re.search(section + r"\s*\{(.*?)\}\s*;", path.read_text(), re.S)
    assert m, f"no {section} section in {path}"
    opts = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', m.group(1)))
    return opts["username"], opts["password"]


def started_kazoo(hosts: str, **kwargs: Any) -> Any:
    from kazoo.client import KazooClient

    client = KazooClient(hosts=hosts, timeout=10, **kwargs)
    try:
        client.start(timeout=20)
    except Exception:
        client.close()
        raise
    return client


@contextlib.contextmanager
def kazoo_session(hosts: str, **kwargs: Any) -> Iterator[Any]:
    """with kazoo_session("127.0.0.1:2181/chroot") as zk: ...  (a started raw KazooClient, closed after)"""
    client = started_kazoo(hosts, **kwargs)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def secure_kazoo(hosts: str, jaas_file: Path | None, tls_config_file: Path) -> Any:
    """kazoo over TLS from Kafka's --zk-tls-config-file properties (PEM keystore holding the encrypted
    key and the certificate, PEM truststore), with SASL DIGEST-MD5 from the JAAS Client section unless
    jaas_file is None."""
    tls = read_properties(tls_config_file)
    assert tls["zookeeper.ssl.keystore.type"] == tls["zookeeper.ssl.truststore.type"] == "PEM"
    kwargs: dict[str, Any] = {
        "use_ssl": True,
        "ca": tls["zookeeper.ssl.truststore.location"],
        "certfile": tls["zookeeper.ssl.keystore.location"],
        "keyfile": tls["zookeeper.ssl.keystore.location"],
        "keyfile_password": tls.get("zookeeper.ssl.keystore.password") or None,
        "verify_certs": True,
    }
    if jaas_file is not None:
        user, password = read_jaas_client(jaas_file)
        kwargs["sasl_options"] = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    return started_kazoo(hosts, **kwargs)


def kafka_tool(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Kafka 4.x's own kafka-reassign-partitions (through scripts/cluster kafka-tool)."""
    return subprocess.run(
        [str(CLUSTER_SCRIPT), "kafka-tool", "reassign-partitions", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
