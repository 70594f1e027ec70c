"""scripts/docker without docker: its daemon.json rule and its env file (the names of scripts/cluster's)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(REPO / "scripts"))


dk = load("_docker")
cl = dk.cl


class ScriptCluster:
    """What scripts/_cluster.py's write_env reads of a Cluster."""

    def __init__(self, root: Path, mode: str, version: str) -> None:
        self.root, self.mode, self.version = root, mode, version
        self.env_file, self.secrets = root / "env", root / "secrets"

    def ports(self) -> tuple[int, dict[int, int]]:
        return 2181, {1: 19092, 2: 19093, 3: 19094}

    def controller_ports(self) -> dict[int, int]:
        return {1: 19292, 2: 19293, 3: 19294} if self.mode == "kraft" else {}

    def sasl_ports(self) -> dict[int, int]:
        return {}

    def broker_log_dirs(self, broker_id: int) -> list[str]:
        return list(dk.CONTAINER_LOG_DIRS)  # the compose brokers' log.dirs, as the brokers name them


@pytest.mark.parametrize("mode", ["zk", "kraft"])
def test_env_file_has_exactly_the_names_and_values_of_scripts_cluster(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = "4.3.1" if mode == "kraft" else "3.9.2"
    cl.write_env(ScriptCluster(tmp_path, mode, version))
    theirs = (tmp_path / "env").read_text()
    monkeypatch.setenv("CLUSTER_DIR", str(tmp_path))
    ports: dict[str, int] = {"RC_ZK_PORT": 2181} | {f"RC_BROKER_{i}_PORT": 19091 + i for i in (1, 2, 3)}
    if mode == "kraft":
        ports = {f"RC_KRAFT_{i}_PORT": 19091 + i for i in (1, 2, 3)}
        ports |= {f"RC_CONTROLLER_{i}_PORT": 19291 + i for i in (1, 2, 3)}
    dk.write_env({"mode": mode, "ports": ports, "project": "p", "base": "b"})
    assert (tmp_path / "env").read_text() == theirs  # the same lines, in the same order


@pytest.mark.parametrize(
    "settings",
    [
        {},  # docker's default: a docker0 bridge with iptables NAT
        {"bridge": "docker0", "iptables": False, "ip6tables": False, "ip-forward": False, "ip-masq": False},
        {"bridge": "none", "iptables": True, "ip6tables": False, "ip-forward": False, "ip-masq": False},
        {"bridge": "none", "iptables": False, "ip6tables": False, "ip-forward": False},
    ],
)
def test_an_existing_daemon_json_that_allows_bridges_is_refused(
    settings: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps(settings))
    monkeypatch.setattr(dk, "DAEMON_JSON", path)
    with pytest.raises(cl.ClusterError, match="allows bridged networking"):
        dk.check_daemon_json()
    assert json.loads(path.read_text()) == settings  # left as it was


def test_daemon_json_written_when_absent_and_kept_when_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "etc" / "docker" / "daemon.json"
    monkeypatch.setattr(dk, "DAEMON_JSON", path)
    dk.check_daemon_json()
    written = json.loads(path.read_text())
    assert written == {
        "bridge": "none",
        "iptables": False,
        "ip6tables": False,
        "ip-forward": False,
        "ip-masq": False,
    }
    path.write_text(json.dumps({**written, "log-level": "warn"}))  # other settings are the user's
    dk.check_daemon_json()
    assert json.loads(path.read_text())["log-level"] == "warn"
