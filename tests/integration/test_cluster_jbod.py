"""scripts/cluster up --jbod on PRIVATE clusters (their own CLUSTER_DIR): each broker's two log dirs are
tmpfs mounts of their own. Checked with the operating system (statvfs, st_dev, /proc/mounts), raw
kafka-python (DescribeLogDirs) and Kafka 4.x's own kafka-reassign-partitions; no reassign_cli code.
At most one JBOD cluster runs at a time (tmpfs counts against RAM): each test brings its own down."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import KAFKA4_VERSION, kafka_tool, read_properties
from tests.helpers import CLUSTER_SCRIPT, read_env_file, unique_name, wait_until

MiB = 2**20
PAGE = os.sysconf("SC_PAGE_SIZE")


def jbod_script(
    *args: str, directory: Path, sizes: str | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """scripts/cluster ARGS with CLUSTER_DIR=directory and CLUSTER_JBOD_SIZES=sizes (none of the
    caller's other CLUSTER_* settings); `prefix` runs it under another command (setpriv)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUSTER_")}
    env["CLUSTER_DIR"] = str(directory)
    if prefix:  # uid 65534 cannot enter root's home, where the usual python3 may live
        env["CLUSTER_PYTHON"] = "/usr/bin/python3"
    if sizes:
        env["CLUSTER_JBOD_SIZES"] = sizes
    return subprocess.run(
        [*prefix, str(CLUSTER_SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        stdin=subprocess.DEVNULL,
    )


def mounts_under(directory: Path) -> list[str]:
    """Every mount point under directory, from /proc/mounts (whoever made it)."""
    prefix = str(directory.resolve()) + "/"
    points = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    points = [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), p) for p in points]
    return [p for p in points if p.startswith(prefix)]


def configured_log_dirs(directory: Path) -> dict[int, list[str]]:
    """Each broker's log.dirs, from its server.properties."""
    return {
        i: read_properties(directory / "config" / f"broker-{i}.properties")["log.dirs"].split(",")
        for i in (1, 2, 3)
    }


def described_log_dirs(bootstrap: str) -> dict[int, dict[str, dict[str, Any]]]:
    """DescribeLogDirs from every broker (kafka-python): {broker: {log dir: result as a dict}}."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        return {r["broker"]: {d["log_dir"]: d for d in r["log_dirs"]} for r in admin.describe_log_dirs()}
    finally:
        admin.close()


def replica_dir(bootstrap: str, broker: int, topic: str) -> str | None:
    """The log dir holding broker's replica of topic-0 (no future copy pending), from DescribeLogDirs."""
    for path, d in described_log_dirs(bootstrap)[broker].items():
        for t in d["topics"]:
            if t["name"] == topic and any(
                p["partition_index"] == 0 and not p["is_future_key"] for p in t["partitions"]
            ):
                return path
    return None


def create_topic(bootstrap: str, topic: str) -> None:
    """topic-0 on brokers 1 and 2, ten records (acks=all)."""
    from kafka import KafkaAdminClient, KafkaProducer

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics({topic: {"assignments": {0: [1, 2]}}}, timeout_ms=30000)
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=30000)
    try:
        for f in [producer.send(topic, f"v{i}".encode(), partition=0) for i in range(10)]:
            f.get(timeout=60)
    finally:
        producer.close(timeout=10)


def move_replica_to_other_dir(bootstrap: str, tmp_path: Path, topic: str, dirs: list[str]) -> tuple[str, str]:
    """Kafka's own tool moves broker 1's replica of topic-0 to its other log dir; (from, to)."""
    source = wait_until(lambda: replica_dir(bootstrap, 1, topic), timeout=60, message="broker 1's replica")
    target = dirs[1 - dirs.index(source)]
    plan = tmp_path / "log-dirs.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": [target, "any"]}
                ],
            }
        )
    )
    args = ("--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan))
    run = kafka_tool(*args, "--execute")
    assert run.returncode == 0, run.stdout + run.stderr

    def done() -> bool:
        verify = kafka_tool(*args, "--verify")
        return verify.returncode == 0 and "is still in progress" not in verify.stdout

    wait_until(done, timeout=120, message="the log-dir move to finish (kafka-reassign-partitions --verify)")
    return source, target


def check_separate_filesystems(directory: Path, expected: tuple[int, int]) -> dict[int, list[str]]:
    dirs = configured_log_dirs(directory)
    devices = set()
    for paths in dirs.values():
        assert len(paths) == 2
        for path, size in zip(paths, expected, strict=True):
            st = os.statvfs(path)
            assert abs(st.f_blocks * st.f_frsize - size) < PAGE, (path, st.f_blocks * st.f_frsize, size)
            devices.add(os.stat(path).st_dev)
    assert len(devices) == 6, "every log dir on a file system of its own"
    assert os.stat(directory).st_dev not in devices
    assert sorted(mounts_under(directory)) == sorted(p for paths in dirs.values() for p in paths)
    return dirs


def restart_after_kill_everything(d: Path, sizes: str | None, dirs: dict[int, list[str]]) -> None:
    """Every process killed (no `down`): the next `up --jbod` replaces the stale mounts with fresh, empty
    ones rather than stacking new mounts on them."""
    pids = [int(p.read_text()) for p in (d / "pids").glob("*.pid")]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids), timeout=30, message="killed")
    assert len(mounts_under(d)) == 6  # left behind
    up = jbod_script("up", "--jbod", directory=d, sizes=sizes)
    assert up.returncode == 0, up.stderr
    assert sorted(mounts_under(d)) == sorted(p for paths in dirs.values() for p in paths)
    assert not [p for paths in dirs.values() for p in paths if any(Path(p).glob("t-jbod-*"))]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "sizes", "expected"),
    [
        ((), "64M,96M", (64 * MiB, 96 * MiB)),  # ZooKeeper mode, sizes from CLUSTER_JBOD_SIZES
        (("--kraft", "--kafka-version", KAFKA4_VERSION), None, (256 * MiB, 512 * MiB)),  # the defaults
    ],
    ids=["zk", f"kraft-{KAFKA4_VERSION}"],
)
def test_jbod_cluster(
    tmp_path: Path, mode: tuple[str, ...], sizes: str | None, expected: tuple[int, int]
) -> None:
    d = tmp_path / "jbod"
    try:
        up = jbod_script("up", *mode, "--jbod", directory=d, sizes=sizes)
        assert up.returncode == 0, up.stderr
        env = read_env_file(d / "env")
        bootstrap = env["KAFKA_BOOTSTRAP"]
        dirs = check_separate_filesystems(d, expected)
        assert env["CLUSTER_LOG_DIRS"] == ";".join(f"{i}:{','.join(dirs[i])}" for i in (1, 2, 3))

        # DescribeLogDirs: each dir's total bytes are its own tmpfs's
        described = described_log_dirs(bootstrap)
        for i in (1, 2, 3):
            assert set(described[i]) == set(dirs[i])
            for path, size in zip(dirs[i], expected, strict=True):
                assert abs(described[i][path]["total_bytes"] - size) < PAGE, (i, path, described[i][path])

        status = jbod_script("status", directory=d)
        assert status.returncode == 0, status.stdout
        mib = [f"{n // MiB} MiB" for n in expected]
        assert f"JBOD {mib[0]}+{mib[1]}" in status.stdout
        assert f"broker-2 d1 {dirs[2][1]} ({mib[1]}): tmpfs {mib[1]}," in status.stdout, status.stdout

        # the same state dir without --jbod is another cluster: refused like another mode
        plain = jbod_script("up", *mode, directory=d)
        assert plain.returncode == 1 and "JBOD" in plain.stderr, plain.stderr

        topic = unique_name("t-jbod")
        create_topic(bootstrap, topic)
        source, target = move_replica_to_other_dir(bootstrap, tmp_path, topic, dirs[1])
        moved = Path(target) / f"{topic}-0"
        assert moved.is_dir() and os.stat(moved).st_dev == os.stat(target).st_dev != os.stat(source).st_dev
        assert not (Path(source) / f"{topic}-0").exists()

        if not mode:  # ZooKeeper mode only (one more start): a cluster killed outright, then `up` again
            restart_after_kill_everything(d, sizes, dirs)
        # a broker that crashed: down still unmounts everything
        os.kill(int((d / "pids" / "broker-3.pid").read_text()), signal.SIGKILL)
    finally:
        down = jbod_script("down", directory=d)
    assert down.returncode == 0, down.stderr
    assert mounts_under(d) == []
    assert jbod_script("down", directory=d).returncode == 0  # harmless again


def test_up_jbod_refuses_a_running_cluster_without_jbod(kraft_cluster: Any) -> None:
    c = kraft_cluster(KAFKA4_VERSION)
    r = jbod_script("up", "--kraft", "--kafka-version", KAFKA4_VERSION, "--jbod", directory=c.directory)
    assert r.returncode == 1 and "a kraft cluster (Kafka" in r.stderr and "JBOD" in r.stderr, r.stderr
    assert mounts_under(c.directory) == []


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        # root without CAP_SYS_ADMIN: the kernel refuses the mount
        (
            ("setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin"),
            "cannot mount a 256 MiB tmpfs at ",
        ),
        # not root at all: refused before anything is touched
        (
            ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"),
            "needs root (running as uid 65534)",
        ),
    ],
    ids=["mount-refused", "not-root"],
)
def test_up_jbod_without_mount_permission_is_one_error_line(prefix: tuple[str, ...], message: str) -> None:
    if os.geteuid() != 0:
        pytest.fail("these tests drop root's rights with setpriv: run them as root (as CI does)")
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="jbod-noperm-"))  # under /tmp, which uid 65534 may enter
    os.chmod(base, 0o777)
    d = base / "cluster"
    try:
        r = jbod_script("up", "--jbod", directory=d, prefix=prefix)
        assert r.returncode == 1, r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("cluster: error: ") and message in lines[0], r.stderr
        assert mounts_under(d) == []
        assert not (d / "pids").exists() or not list((d / "pids").glob("*.pid"))
        assert not (d / "env").exists()
    finally:
        jbod_script("down", directory=d)
        subprocess.run(["rm", "-rf", str(base)], check=False)


def test_up_jbod_unmounts_its_mounts_when_a_later_mount_fails(tmp_path: Path) -> None:
    """A `mount` in front of the real one refuses broker 2's d1 only (the fourth of six): the three
    made before are unmounted again, and the error is one line."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "mount").write_text(
        f'#!/bin/sh\necho "$6" >> {tmp_path}/calls\n'
        'case "$6" in *broker-2/d1) echo "mount: $6: refused by the test" >&2; exit 32;; esac\n'
        'exec /usr/bin/mount "$@"\n'
    )
    (fake / "mount").chmod(0o755)
    d = tmp_path / "cluster"
    try:
        r = jbod_script("up", "--jbod", directory=d, prefix=("env", f"PATH={fake}:{os.environ['PATH']}"))
        assert r.returncode == 1, r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and "cannot mount a 512 MiB tmpfs at " in lines[0], r.stderr
        assert "broker-2/d1: mount: " in lines[0] and "refused by the test" in lines[0], r.stderr
        called = (tmp_path / "calls").read_text().split()
        assert [p.split("/data/")[1] for p in called] == [
            "broker-1/d0",
            "broker-1/d1",
            "broker-2/d0",
            "broker-2/d1",
        ]
        assert mounts_under(d) == []
        assert not (d / "env").exists()
    finally:
        jbod_script("down", directory=d)
