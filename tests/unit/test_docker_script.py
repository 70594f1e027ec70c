"""scripts/docker without docker: its daemon.json rule and its env file (the names of scripts/cluster's)."""

from __future__ import annotations

import importlib.util
import json
import os
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


# --------------------------------------------------------------------------- RC_COMPOSE


def test_rc_compose_v1_is_docker_compose_and_refused_without_it() -> None:
    assert dk.compose_command("v1", "/usr/bin/docker-compose", True, None) == ["/usr/bin/docker-compose"]
    with pytest.raises(cl.ClusterError, match="RC_COMPOSE=v1 but no docker-compose"):
        dk.compose_command("v1", None, True, None)


def test_rc_compose_v2_is_the_plugin_else_the_cached_binary_else_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RC_DOCKER", "/usr/bin/docker")
    v1, cached = "/usr/bin/docker-compose", Path("/c/compose-v2/docker-compose")
    assert dk.compose_command("v2", v1, True, cached) == ["/usr/bin/docker", "compose"]
    assert dk.compose_command("v2", v1, False, cached) == [str(cached)]  # standalone v2, not v1
    with pytest.raises(cl.ClusterError, match="RC_COMPOSE=v2 but no compose v2"):
        dk.compose_command("v2", v1, False, None)


def test_rc_compose_auto_prefers_v1_and_a_command_is_taken_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RC_DOCKER", "/usr/bin/docker")
    cached = Path("/c/docker-compose")
    assert dk.compose_command("auto", "/usr/bin/docker-compose", True, cached) == ["/usr/bin/docker-compose"]
    assert dk.compose_command("auto", None, True, None) == ["/usr/bin/docker", "compose"]
    assert dk.compose_command("auto", None, False, cached) == [str(cached)]
    assert dk.compose_command("docker compose", None, False, None) == ["docker", "compose"]


def test_the_compose_up_used_is_kept_for_the_later_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RC_COMPOSE", raising=False)
    assert dk.state_compose({"compose": ["/c/docker-compose"]}) == ["/c/docker-compose"]
    monkeypatch.setenv("RC_COMPOSE", "docker compose")  # said explicitly: wins
    assert dk.state_compose({"compose": ["/c/docker-compose"]}) == ["docker", "compose"]


# --------------------------------------------------------------------------- users of our dockerd


def test_a_user_is_live_while_its_project_runs_or_its_up_runs() -> None:
    users = {
        "/a": {"project": "rc-a", "up": {"pid": 1, "start": "x"}},  # containers running
        "/b": {"project": "rc-b", "up": {"pid": 2, "start": "y"}},  # `up` under way, no container yet
        "/c": {"project": "rc-c", "up": {"pid": 3, "start": "z"}},  # up killed, no container: stale
        "/d": "garbage",
    }
    live, stale = dk.split_users(
        users, {"rc-a", "rc-other"}, alive=lambda ident: ident == {"pid": 2, "start": "y"}
    )
    assert sorted(live) == ["/a", "/b"]
    assert sorted(stale) == ["/c", "/d"]


def test_a_process_is_its_pid_and_start_time() -> None:
    me = dk.proc_ident(os.getpid())
    assert dk.same_process(me)
    assert not dk.same_process({**me, "start": me["start"] + "0"})  # the pid reused by another process
    assert not dk.same_process(None)


def test_down_never_stops_a_dockerd_it_did_not_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTER_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(dk, "CACHE", tmp_path)
    monkeypatch.setattr(dk, "DOCKERD_LOCK", tmp_path / "dockerd.lock")
    monkeypatch.setattr(dk, "DOCKERD_RECORD", tmp_path / "dockerd.json")
    killed: list[int] = []
    real_kill = os.kill

    def kill(pid: int, sig: int) -> None:
        if sig:  # signal 0 only asks whether a process is alive
            killed.append(pid)
        else:
            real_kill(pid, sig)

    monkeypatch.setattr(dk.os, "kill", kill)
    dk.stop_dockerd()  # no record: whatever dockerd runs is not ours
    # a record whose dockerd is gone, its pid now another process's (this one, started at another time)
    me = dk.proc_ident(os.getpid())
    record = {"dockerd": {**me, "start": me["start"] + "0"}, "users": {str(tmp_path / "c"): {"project": "p"}}}
    (tmp_path / "dockerd.json").write_text(json.dumps(record))
    dk.stop_dockerd()
    assert killed == []
    assert not (tmp_path / "dockerd.json").exists()  # the record of a dockerd that is gone is dropped
