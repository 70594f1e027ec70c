"""`snapshot` records each broker's log dirs (issue 27, item 1) on a real JBOD cluster (`scripts/cluster up
--jbod`: every log dir a tmpfs of its own, 64 MiB and 96 MiB), in ZooKeeper mode (Kafka 3.9.2) and KRaft
(Kafka 4.3.1), each a private cluster of its own state dir ($CLUSTER_DIR-disks-<mode>), brought down at the
end (its tmpfs unmounted) because the test breaks a log dir.

Replicas are put on chosen dirs by Kafka's own kafka-reassign-partitions (a `log_dirs` plan). The judges:
- Kafka's own kafka-log-dirs --describe: each dir's bytes held (its current replicas' sizes summed), the
  replica -> dir mapping, and which dirs are offline (an error);
- statvfs on each tmpfs mount: total and usable bytes (f_blocks and f_bavail times f_frsize, what the JVM's
  FileStore reads), within a page;
- on 4.3.1, a dir cordoned with kafka-configs (`cordoned.log.dirs`, dynamic per broker: KIP-1066) and
  DescribeLogDirs v5's IsCordoned (raw kafka-python); on 3.9.2 the config does not exist: unknown (null);
- an offline dir: broker 3 stopped, its second dir's tmpfs replaced by an empty one whose meta.properties is
  a directory (Kafka cannot read it), broker 3 started: Kafka starts it with that dir offline
  (KAFKA_STORAGE_ERROR), on both versions. (An empty dir instead makes a KRaft broker refuse to start, "No
  meta.properties found"; a read-only one makes either refuse to start: it cannot write its checkpoints.)
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import KAFKA4_VERSION
from tests.conftest import cluster_dir
from tests.helpers import CLUSTER_SCRIPT, read_env_file, wait_until
from tests.integration.kraft_support import Admin, cli
from tests.integration.test_cluster_jbod import PAGE, configured_log_dirs, described_log_dirs, jbod_script

SIZES = "64M,96M"
ASSIGNMENT = {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]}


def chosen_dir(p: int, b: int) -> int:
    """Which of broker b's two dirs holds its replica of partition p: broker 1 has p0, p2 on d1 and p3 on
    d0; broker 2 p0 on d0, p1 on d1; broker 3 p1, p3 on d0 and p2 on d1."""
    return (p + b) % 2


def place(bootstrap: str, tmp_path: Path, topic: str, dirs: dict[int, list[str]]) -> None:
    """Kafka's own tool moves every replica of `topic` to its chosen dir (replicas unchanged)."""
    plan = tmp_path / "place.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": reps, "log_dirs": [dirs[b][chosen_dir(p, b)] for b in reps]}
        for p, reps in ASSIGNMENT.items()
    ]}))  # fmt: skip
    args = ("--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan))
    run = kafka_tool("reassign-partitions", *args, "--execute")
    assert run.returncode == 0, run.stdout + run.stderr

    def done() -> bool:
        verify = kafka_tool("reassign-partitions", *args, "--verify")
        return verify.returncode == 0 and "is still in progress" not in verify.stdout

    wait_until(done, timeout=180, message="the log-dir moves to finish (kafka-reassign-partitions --verify)")


def kafka_tool(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLUSTER_SCRIPT), "kafka-tool", tool, *args], capture_output=True, text=True,
                          timeout=180, stdin=subprocess.DEVNULL)  # fmt: skip


def kafka_log_dirs(bootstrap: str) -> dict[int, dict[str, dict[str, Any]]]:
    """Kafka's kafka-log-dirs --describe: {broker: {dir: {"error": ..., "partitions": {(topic, p, future):
    size}}}}."""
    r = kafka_tool("log-dirs", "--bootstrap-server", bootstrap, "--describe")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout.strip().splitlines()[-1])
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for b in doc["brokers"]:
        out[b["broker"]] = {}
        for d in b["logDirs"]:
            parts = {}
            for p in d["partitions"]:
                name, _, index = p["partition"].rpartition("-")
                parts[(name, int(index), p["isFuture"])] = p["size"]
            out[b["broker"]][d["logDir"]] = {"error": d["error"], "partitions": parts}
    return out


def snapshot(bootstrap: str, path: Path) -> tuple[dict[str, Any], str]:
    r = cli(bootstrap, "snapshot", "-o", path)
    assert r.returncode == 0, r.stderr
    return json.loads(path.read_text()), r.stderr


def check_against_kafka(doc: dict[str, Any], oracle: dict[int, dict[str, dict[str, Any]]]) -> None:
    """Every broker's dirs, their bytes, offline state and the replica -> dir mapping as Kafka's tool says."""
    brokers = {b["id"]: b["log_dirs"] for b in doc["brokers"]}
    assert sorted(brokers) == sorted(oracle) == [1, 2, 3]
    for b, dirs in brokers.items():
        assert [d["path"] for d in dirs] == sorted(oracle[b]), (b, dirs)
        for d in dirs:
            seen = oracle[b][d["path"]]
            assert d["offline"] is (seen["error"] is not None), (b, d, seen)
            if d["offline"]:
                assert seen["error"] == "org.apache.kafka.common.errors.KafkaStorageException"
                assert d["error"] == "KAFKA_STORAGE_ERROR" and "bytes" not in d and "total_bytes" not in d
                continue
            parts = seen["partitions"]
            assert d["bytes"] == sum(size for (_, _, future), size in parts.items() if not future), (b, d)
            assert d["future_bytes"] == sum(size for (_, _, future), size in parts.items() if future), (b, d)
    expected = {(t, p, b): path for b, dirs in oracle.items() for path, d in dirs.items()
                for (t, p, future) in d["partitions"] if not future}  # fmt: skip
    got = {
        (t["topic"], e["partition"], b): brokers[b][i]["path"]
        for t in doc["topics"]
        for e in t["partitions"]
        for b, i in zip(e["replicas"], e.get("dirs", [None] * len(e["replicas"])), strict=True)
        if i is not None
    }
    assert got == expected


def check_filesystems(doc: dict[str, Any], before: dict[str, os.statvfs_result]) -> None:
    """Each live dir's total and usable bytes within a page of its tmpfs's statvfs (read before and after
    the snapshot: the usable bytes may move by a page while a checkpoint file is rewritten)."""
    for b in doc["brokers"]:
        for d in b["log_dirs"]:
            if d["offline"]:
                continue
            for st in (before[d["path"]], os.statvfs(d["path"])):
                assert abs(d["total_bytes"] - st.f_blocks * st.f_frsize) <= PAGE, (d, st)
            usable = [st.f_bavail * st.f_frsize for st in (before[d["path"]], os.statvfs(d["path"]))]
            assert min(usable) - PAGE <= d["usable_bytes"] <= max(usable) + PAGE, (d, usable)


def cordon(bootstrap: str, broker: int, value: str | None) -> None:
    change = (
        ("--add-config", f"cordoned.log.dirs=[{value}]")
        if value
        else ("--delete-config", "cordoned.log.dirs")
    )
    r = kafka_tool("configs", "--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-name",
                   str(broker), "--alter", *change)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr


def cordoned_by_kafka(bootstrap: str) -> dict[int, dict[str, bool]]:
    """DescribeLogDirs v5's IsCordoned per broker and dir (raw kafka-python)."""
    return {
        b: {p: bool(d.get("is_cordoned")) for p, d in dirs.items()}
        for b, dirs in described_log_dirs(bootstrap).items()
    }


def break_dir(d: Path, broker: int, path: str) -> None:
    """Broker stopped, its dir's tmpfs replaced by an empty one (ours: `down` unmounts it) whose
    meta.properties is a directory, broker started again."""
    stop = jbod_script("stop-broker", str(broker), directory=d)
    assert stop.returncode == 0, stop.stderr
    subprocess.run(["umount", path], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M,mode=0755", "reassign-cli-jbod", path], check=True)
    os.mkdir(os.path.join(path, "meta.properties"))
    start = jbod_script("start-broker", str(broker), directory=d)
    assert start.returncode == 0, start.stderr


LOG_DIR_THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"


def check_future_copy(bootstrap: str, tmp_path: Path, dirs: dict[int, list[str]], a: Any) -> None:
    """A log-dir move held back: Kafka's tool moves broker 1's replica of a 2.5 MB partition to its other
    dir under a 1 KiB/s log-dir throttle; the broker copies a first fetch (1 MiB at most) and then waits.
    The snapshot shows the future copy apart (`future_bytes` of the target dir, `future_dirs`), its size
    between kafka-log-dirs' readings before and after it, the current copy still where it was."""
    topic, _ = a.make_topic("future", {0: [1, 2]}, messages=800, size=3200)
    source = next(p for p, d in kafka_log_dirs(bootstrap)[1].items() if (topic, 0, False) in d["partitions"])
    target = dirs[1][1 - dirs[1].index(source)]
    plan = tmp_path / "future.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": [target, "any"]}]}))  # fmt: skip
    args = ("--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan))
    # The throttle in force on broker 1 before the move starts (its own DescribeConfigs says so): set by the
    # tool alone, it reaches the broker a moment after the move may have copied everything.
    a.alter("brokers", 1, {LOG_DIR_THROTTLE: "1024"})
    wait_until(lambda: a.configs("brokers", 1).get(LOG_DIR_THROTTLE) == "1024", timeout=60,
               message="broker 1's log-dir throttle")  # fmt: skip
    run = kafka_tool("reassign-partitions", *args, "--execute", "--replica-alter-log-dirs-throttle", "1024")
    assert run.returncode == 0, run.stdout + run.stderr
    try:
        key = (topic, 0, True)
        wait_until(lambda: kafka_log_dirs(bootstrap)[1][target]["partitions"].get(key, 0) > 0, timeout=120,
                   message="a future copy with bytes in it")  # fmt: skip
        before = kafka_log_dirs(bootstrap)
        doc, _ = snapshot(bootstrap, tmp_path / "future-snap.json")
        after = kafka_log_dirs(bootstrap)
        (d,) = [x for b in doc["brokers"] if b["id"] == 1 for x in b["log_dirs"] if x["path"] == target]
        sizes = [o[1][target]["partitions"][key] for o in (before, after)]
        assert sizes[0] <= d["future_bytes"] <= sizes[1], (d, sizes)  # the only future copy in that dir
        current = before[1][source]["partitions"][(topic, 0, False)]
        assert 0 < d["future_bytes"] < current, (d, current)  # still held back
        (t,) = [t for t in doc["topics"] if t["topic"] == topic]
        (e,) = t["partitions"]
        brokers = {b["id"]: [x["path"] for x in b["log_dirs"]] for b in doc["brokers"]}
        assert e["future_dirs"] == [brokers[1].index(target), None]
        assert brokers[1][e["dirs"][0]] == source
    finally:
        change = (
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--alter",
            "--delete-config",
            LOG_DIR_THROTTLE,
        )
        kafka_tool("configs", "--bootstrap-server", bootstrap, *change)

        def done() -> bool:
            verify = kafka_tool("reassign-partitions", *args, "--verify")
            return verify.returncode == 0 and "is still in progress" not in verify.stdout

        wait_until(done, timeout=180, message="the held-back log-dir move to finish once unthrottled")


@contextlib.contextmanager
def client(bootstrap: str) -> Iterator[Admin]:
    """An admin client for the private cluster, closed without Admin.close's clean-up (the cluster and its
    topics go down next; and after broker 3's restart the client may still name it as the controller it
    cannot reach yet: UnknownBrokerIdError)."""
    a = Admin(bootstrap)
    try:
        yield a
    finally:
        a.client.close()


def statvfs_all(dirs: dict[int, list[str]]) -> dict[str, os.statvfs_result]:
    return {p: os.statvfs(p) for paths in dirs.values() for p in paths}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", [(), ("--kraft", "--kafka-version", KAFKA4_VERSION)], ids=["zk", "kraft"])
def test_snapshot_records_each_log_dir(mode: tuple[str, ...], tmp_path: Path) -> None:
    d = Path(f"{cluster_dir().resolve()}-disks-{'kraft' if mode else 'zk'}")
    kraft = bool(mode)
    try:
        up = jbod_script("up", *mode, "--jbod", directory=d, sizes=SIZES)
        assert up.returncode == 0, up.stderr
        bootstrap = read_env_file(d / "env")["KAFKA_BOOTSTRAP"]
        dirs = configured_log_dirs(d)
        with client(bootstrap) as a:
            topic, _ = a.make_topic("disks", ASSIGNMENT, messages=30, size=3000)
            place(bootstrap, tmp_path, topic, dirs)

            before = statvfs_all(dirs)
            doc, stderr = snapshot(bootstrap, tmp_path / "snap.json")
            check_filesystems(doc, before)
            check_against_kafka(doc, kafka_log_dirs(bootstrap))
            assert "--shared-log-dirs" not in stderr  # two filesystems of different sizes: no warning
            (t,) = [t for t in doc["topics"] if t["topic"] == topic]
            assert [e["dirs"] for e in t["partitions"]] == [
                [chosen_dir(p, b) for b in reps] for p, reps in ASSIGNMENT.items()
            ]
            # every dir of ours holds bytes now
            assert all(d["bytes"] > 0 for b in doc["brokers"] for d in b["log_dirs"]), doc["brokers"]

            cordoned = {b["id"]: [d["cordoned"] for d in b["log_dirs"]] for b in doc["brokers"]}
            if not kraft:  # Kafka 3.9.2 has no cordoned.log.dirs: unknown
                assert cordoned == {1: [None, None], 2: [None, None], 3: [None, None]}
            else:
                assert cordoned == {1: [False, False], 2: [False, False], 3: [False, False]}
                cordon(bootstrap, 2, dirs[2][1])
                cordon(bootstrap, 1, "*")
                expected = {1: dict.fromkeys(dirs[1], True), 2: {dirs[2][0]: False, dirs[2][1]: True},
                            3: dict.fromkeys(dirs[3], False)}  # fmt: skip
                wait_until(lambda: cordoned_by_kafka(bootstrap) == expected, timeout=60, message="cordoned")
                doc, _ = snapshot(bootstrap, tmp_path / "cordoned.json")
                got = {b["id"]: {d["path"]: d["cordoned"] for d in b["log_dirs"]} for b in doc["brokers"]}
                assert got == expected
                cordon(bootstrap, 2, None)
                cordon(bootstrap, 1, None)

            check_future_copy(bootstrap, tmp_path, dirs, a)
            break_dir(d, 3, dirs[3][1])  # it holds broker 3's replica of partition 2
            oracle = kafka_log_dirs(bootstrap)
            assert oracle[3][dirs[3][1]]["error"] is not None, oracle[3]  # offline, as Kafka says
            before = statvfs_all(dirs)
            doc, _ = snapshot(bootstrap, tmp_path / "offline.json")
            check_against_kafka(doc, oracle)
            check_filesystems(doc, before)
            broker3 = next(b for b in doc["brokers"] if b["id"] == 3)["log_dirs"]
            assert [x["offline"] for x in broker3] == [False, True]
            (t,) = [t for t in doc["topics"] if t["topic"] == topic]
            assert t["partitions"][2]["replicas"] == [3, 1] and t["partitions"][2]["dirs"] == [None, 1]
    finally:
        down = jbod_script("down", directory=d)
        assert down.returncode == 0, down.stderr


def test_log_dirs_of_one_filesystem_one_warning_line(
    cluster: Any, make_topic: Any, run_cli: Any, tmp_path: Path
) -> None:
    """Item 2's warning, on the plain cluster (both log dirs of a broker on one filesystem, so
    DescribeLogDirs reports the same total and usable bytes for both): `snapshot` and live `generate
    --balance bytes` each print one line for all brokers, naming --shared-log-dirs; the snapshot's log dirs
    show why (the same total for both dirs, as statvfs says)."""
    topic = make_topic({0: [1, 2]})
    path = tmp_path / "snap.json"
    snap = run_cli("snapshot", "-o", str(path), "--topic", topic, "--bootstrap-server", cluster.bootstrap)
    gen = run_cli("generate", "--topic", topic, "--strategy", "balanced", "--balance", "bytes", "--seed", "1",
                  "--bootstrap-server", cluster.bootstrap)  # fmt: skip
    for r in (snap, gen):
        assert r.returncode == 0, r.stderr
        flagged = [line for line in r.stderr.splitlines() if "--shared-log-dirs" in line]
        assert len(flagged) == 1, r.stderr
        assert flagged[0].startswith("Warning: broker(s) 1, 2, 3: two or more log dirs report the same total")
        assert "as log dirs on one filesystem do" in flagged[0] and flagged[0].endswith(
            "give --shared-log-dirs"
        )
    for b in json.loads(path.read_text())["brokers"]:
        totals = {d["total_bytes"] for d in b["log_dirs"]}
        assert len(b["log_dirs"]) == 2 and len(totals) == 1, b
        st = os.statvfs(b["log_dirs"][0]["path"])
        assert totals == {st.f_blocks * st.f_frsize}
