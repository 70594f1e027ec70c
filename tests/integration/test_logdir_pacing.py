"""`execute --max-moves-per-disk N` / `--one-broker-at-a-time` (issue 27 item 3) on a PRIVATE JBOD cluster
(`scripts/cluster up --jbod`, ZooKeeper mode, Kafka 3.9.2: each broker two tmpfs log dirs of 64 and 96 MiB,
state in $CLUSTER_DIR-logdirs-zk), brought down at the end (its tmpfs unmounted).

Replicas are put on chosen dirs first by Kafka's own kafka-reassign-partitions. The judges, none of them
reassign_cli code: a sampler thread polling DescribeLogDirs (raw kafka-python) all through the execute,
counting the future replicas per disk (broker, dir) and the brokers with one; Kafka's own kafka-log-dirs
for where every replica ends; the records read back; the broker's own dynamic config (DescribeConfigs).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clusters import KAFKA4_VERSION
from tests.conftest import cluster_dir
from tests.helpers import consume_all, read_env_file, wait_until
from tests.integration.kraft_support import Admin
from tests.integration.test_cluster_jbod import configured_log_dirs, jbod_script
from tests.integration.test_snapshot_disks import kafka_log_dirs, kafka_tool

SIZES = "64M,96M"
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
PYTHON = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python")


@pytest.fixture(scope="module")
def jbod() -> Iterator[tuple[str, str, dict[int, list[str]]]]:
    """(bootstrap, zookeeper, each broker's log dirs) of the private JBOD cluster; down at the end."""
    d = Path(f"{cluster_dir().resolve()}-logdirs-zk")
    try:
        up = jbod_script("up", "--jbod", directory=d, sizes=SIZES)
        assert up.returncode == 0, up.stderr
        env = read_env_file(d / "env")
        yield env["KAFKA_BOOTSTRAP"], env["KAFKA_REASSIGN_ZOOKEEPER"], configured_log_dirs(d)
    finally:
        down = jbod_script("down", directory=d)
        assert down.returncode == 0, down.stderr


@pytest.fixture
def admin(jbod: tuple[str, str, dict[int, list[str]]]) -> Iterator[Admin]:
    a = Admin(jbod[0])
    try:
        yield a
    finally:
        a.close()


def place(bootstrap: str, tmp_path: Path, topic: str, where: dict[int, tuple[list[int], list[str]]]) -> None:
    """Kafka's own tool puts each partition's replicas on the dirs given (unthrottled) and waits."""
    plan = tmp_path / f"place-{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": reps, "log_dirs": dirs} for p, (reps, dirs) in where.items()
    ]}))  # fmt: skip
    args = ("--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan))
    run = kafka_tool("reassign-partitions", *args, "--execute")
    assert run.returncode == 0, run.stdout + run.stderr

    def done() -> bool:
        verify = kafka_tool("reassign-partitions", *args, "--verify")
        return verify.returncode == 0 and "is still in progress" not in verify.stdout

    wait_until(done, timeout=180, message="Kafka's tool to place the replicas")


class Sampler:
    """DescribeLogDirs of every broker, over and over, in a thread of its own: each sample's future
    replicas of `topic` per disk (broker, dir)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from kafka.admin import KafkaAdminClient

        self.client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        self.topic = topic
        self.samples: list[Counter[tuple[int, str]]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            futures: Counter[tuple[int, str]] = Counter()
            for r in self.client.describe_log_dirs():
                for d in r["log_dirs"]:
                    for t in d["topics"]:
                        if t["name"] == self.topic:
                            n = sum(1 for p in t["partitions"] if p["is_future_key"])
                            if n:
                                futures[(r["broker"], d["log_dir"])] += n
            self.samples.append(futures)
            self.stop.wait(0.2)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=60)
        self.client.close()


def connection(zookeeper: str | None, bootstrap: str) -> list[str]:
    """ZooKeeper mode: --zookeeper, and the brokers for the log-dir moves; KRaft: the brokers alone."""
    return [*(("--zookeeper", zookeeper) if zookeeper else ()), "--bootstrap-server", bootstrap]


def own_env() -> dict[str, str]:
    """The environment without the shared cluster's KAFKA_REASSIGN_* (scripts/test exports them): each
    command names its own cluster, and a KRaft run must not be joined to the shared ZooKeeper."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}


def execute(
    zookeeper: str | None, bootstrap: str, plan: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    cmd = [PYTHON, "-m", "reassign_cli", "execute", *connection(zookeeper, bootstrap),
           "--reassignment-json-file", str(plan), "--rollback-file", str(plan) + ".rollback",
           "--poll-interval", "0.5", *args]  # fmt: skip
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=500, stdin=subprocess.DEVNULL, env=own_env()
    )


def verify(
    zookeeper: str | None, bootstrap: str, plan: Path, metrics: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, float]]:
    """kafka-reassign verify of the plan, with --metrics-file: (the run, log_dir_moves by status as
    prometheus_client's own parser reads the file back)."""
    from prometheus_client.parser import text_string_to_metric_families

    cmd = [PYTHON, "-m", "reassign_cli", "verify", *connection(zookeeper, bootstrap),
           "--reassignment-json-file", str(plan), "--metrics-file", str(metrics)]  # fmt: skip
    r = subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, env=own_env()
    )
    fams = [
        f for f in text_string_to_metric_families(metrics.read_text()) if f.name.endswith("log_dir_moves")
    ]
    return r, {s.labels["status"]: s.value for f in fams for s in f.samples}


def write_plan(path: Path, topic: str, moves: dict[int, tuple[list[int], list[str]]]) -> Path:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": reps, "log_dirs": dirs} for p, (reps, dirs) in moves.items()
    ]}))  # fmt: skip
    return path


def dirs_of(bootstrap: str, topic: str) -> dict[tuple[int, int], str]:
    """(partition, broker) -> the dir holding its current replica, from Kafka's own kafka-log-dirs; no
    future replica of `topic` may be left anywhere."""
    out = {}
    for b, dirs in kafka_log_dirs(bootstrap).items():
        for path, d in dirs.items():
            for t, p, future in d["partitions"]:
                if t == topic:
                    assert not future, (b, path, p)
                    out[(p, b)] = path
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_one_move_per_disk_under_the_log_dir_throttle(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    one_move_per_disk(jbod, admin, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_foreground_disk_plan_given_the_brokers_is_stored_in_zookeeper_mode(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """ZooKeeper mode (Kafka 3.9.2) with the brokers: the foreground window stores a log-dir plan in znodes
    as it does through the admin API alone (it ran as batches and stored nothing)."""
    bootstrap, zookeeper, dirs = jbod
    foreground_stored_then_cancelled(bootstrap, admin, dirs, tmp_path, zookeeper=zookeeper)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_foreground_disk_plan_in_batches_is_stored(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """The same with `--batch-size 1` (ZooKeeper mode given the brokers): a batched log-dir plan is stored
    too, its log-dir queue with it (before 2026-11-28 only the window's was; in batches it was not stored,
    and the verify between two moves had no queue to read)."""
    bootstrap, zookeeper, dirs = jbod
    foreground_stored_then_cancelled(
        bootstrap, admin, dirs, tmp_path, zookeeper=zookeeper, pace=("--batch-size", "1")
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_foreground_disk_plan_paced_per_disk_alone_is_stored(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """The same with `--max-moves-per-disk 1` alone (no window, no batches): it runs as one batch of the
    whole plan and is stored with its log-dir queue (before 2026-11-29 it ran in the execute's memory only:
    the verify between two moves had no queue to read, and a kill -9 lost the rest of the plan)."""
    bootstrap, zookeeper, dirs = jbod
    foreground_stored_then_cancelled(bootstrap, admin, dirs, tmp_path, zookeeper=zookeeper, pace=())


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`kafka-reassign ARGS` in a process of its own, without the shared cluster's variables."""
    return subprocess.run([PYTHON, "-m", "reassign_cli", *args], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env=own_env(), cwd=cwd)  # fmt: skip


def nothing_left(bootstrap: str, admin: Admin, conn: list[str], topic: str, values: list[bytes]) -> None:
    """Every record read back, no log-dir rate left on broker 1, no plan stored."""
    assert consume_all(bootstrap, topic) == values
    assert LOG_DIR_RATE not in admin.configs("brokers", 1)
    gone = cli("verify", *conn)
    assert gone.returncode == 0 and "No plan is stored in the cluster" in gone.stderr, gone.stderr


@contextlib.contextmanager
def between_two_moves(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path, name: str
) -> Iterator[tuple[subprocess.Popen[str], Path, str, list[bytes]]]:
    """Three partitions on broker 1's d0 moved to its d1 by `execute --max-moves-per-disk 1` alone, under a
    200 kB/s log-dir throttle: (the execute, its plan, the topic, its records) once its progress says one move
    runs and two are queued. The execute is killed at the end if it still runs."""
    bootstrap, zookeeper, dirs = jbod
    d0, d1 = dirs[1]
    topic, values = admin.make_topic(name, {p: [1] for p in range(3)}, messages=900, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([1], [d0]) for p in range(3)})
    plan = write_plan(tmp_path / "plan.json", topic, {p: ([1], [d1]) for p in range(3)})
    err = tmp_path / "execute.err"
    cmd = [PYTHON, "-m", "reassign_cli", "execute", *connection(zookeeper, bootstrap), "--reassignment-json-file",
           str(plan), "--rollback-file", str(plan) + ".rollback", "--poll-interval", "0.5", "--max-moves-per-disk",
           "1", "--replica-alter-log-dirs-throttle", "200000"]  # fmt: skip
    with err.open("w") as f:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=f, text=True, stdin=subprocess.DEVNULL,
                                env=own_env())  # fmt: skip
    try:
        wait_until(
            lambda: "1 moving, 2 queued" in err.read_text(), timeout=300, message=lambda: err.read_text()
        )
        yield proc, plan, topic, values
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_killed_foreground_disk_plan_paced_per_disk_alone_is_carried_on_by_verify(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """kill -9 of `execute --max-moves-per-disk 1` (alone: one batch of the whole plan) between two of its
    log-dir moves: `verify` processes from another directory with no plan file take its lease over once stale
    and carry the log-dir queue on to exit 0; every replica in its planned dir, every record read back, the
    log-dir rate removed, the stored plan gone."""
    bootstrap, zookeeper, dirs = jbod
    conn = connection(zookeeper, bootstrap)
    with between_two_moves(jbod, admin, tmp_path, "killed") as (proc, _, topic, values):
        proc.kill()
        proc.wait(timeout=60)
    ls = cli("list", *conn)
    assert re.search(r"  log-dir moves: [01] moving, [12] queued", ls.stdout), ls.stdout + ls.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outputs: list[str] = []
    for _ in range(300):
        v = cli("verify", *conn, cwd=elsewhere)
        outputs.append(v.stdout + v.stderr)
        assert v.returncode in (0, 4), outputs[-1]
        if v.returncode == 0:
            break
    assert v.returncode == 0 and "The stored plan is done" in outputs[-1], outputs
    assert not [o for o in outputs if "not being moved" in o], outputs
    assert dirs_of(bootstrap, topic) == {(p, 1): dirs[1][1] for p in range(3)}
    nothing_left(bootstrap, admin, conn, topic, values)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_an_interrupted_disk_plan_resumed_without_its_per_disk_cap_keeps_it(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT) of `execute --max-moves-per-disk 1` between two log-dir moves, then `execute --resume`
    of the file without --max-moves-per-disk: it goes on at one move per disk, as kept beside the plan (before
    2026-11-29 the pace file kept no log-dir pacing, and such a resume started the rest at once)."""
    bootstrap, zookeeper, dirs = jbod
    with between_two_moves(jbod, admin, tmp_path, "resumed") as (proc, plan, topic, values):
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130, (tmp_path / "execute.err").read_text()
    kept = json.loads(Path(str(plan) + ".pacing.json").read_text())
    assert (kept["max_moves_per_disk"], kept["batch_size"]) == (1, 3), kept
    with Sampler(bootstrap, topic) as sampler:
        r = execute(zookeeper, bootstrap, plan, "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Resuming with --replica-alter-log-dirs-throttle 200000 --max-moves-per-disk 1" in r.stderr, (
        r.stderr
    )
    per_disk = [n for s in sampler.samples for n in s.values()]
    assert per_disk and max(per_disk) == 1, sampler.samples
    assert dirs_of(bootstrap, topic) == {(p, 1): dirs[1][1] for p in range(3)}
    assert consume_all(bootstrap, topic) == values
    assert LOG_DIR_RATE not in admin.configs("brokers", 1)
    assert not Path(str(plan) + ".pacing.json").exists()


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_one_move_per_disk_kraft(tmp_path: Path) -> None:
    """The same on KRaft, Kafka 4.3.1 (its own private JBOD cluster, down at the end); then, on the same
    cluster, the detached disk plan carried on by verify alone (its plan stored in the record topic), and a
    foreground paced log-dir run stored, verified between two moves, then cancelled through the stored plan;
    the same in batches (--batch-size 1)."""
    d = Path(f"{cluster_dir().resolve()}-logdirs-kraft")
    try:
        up = jbod_script(
            "up", "--kraft", "--kafka-version", KAFKA4_VERSION, "--jbod", directory=d, sizes=SIZES
        )
        assert up.returncode == 0, up.stderr
        bootstrap = read_env_file(d / "env")["KAFKA_BOOTSTRAP"]
        a = Admin(bootstrap)
        try:
            one_move_per_disk((bootstrap, None, configured_log_dirs(d)), a, tmp_path)
            detached_disk_plan((bootstrap, None, configured_log_dirs(d)), a, tmp_path / "detached")
            foreground_stored_then_cancelled(bootstrap, a, configured_log_dirs(d), tmp_path / "foreground")
            foreground_stored_then_cancelled(
                bootstrap, a, configured_log_dirs(d), tmp_path / "batches", pace=("--batch-size", "1")
            )
        finally:
            a.close()
    finally:
        down = jbod_script("down", directory=d)
        assert down.returncode == 0, down.stderr


def one_move_per_disk(
    jbod: tuple[str, str | None, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """Four partitions on broker 1's d0; three moved to d1 at --max-moves-per-disk 1 under a 300 kB/s
    log-dir throttle, over the operator's own log-dir rate of 777777 on broker 1."""
    bootstrap, zookeeper, dirs = jbod
    d0, d1 = dirs[1]
    topic, values = admin.make_topic("perdisk", {p: [1] for p in range(4)}, messages=600, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([1], [d0]) for p in range(4)})
    assert set(dirs_of(bootstrap, topic).values()) == {d0}
    # the operator's own log-dir rate on broker 1, which must be back exactly at the end
    admin.alter("brokers", 1, {LOG_DIR_RATE: "777777"})
    try:
        plan = write_plan(tmp_path / "plan.json", topic, {p: ([1], [d1]) for p in range(3)})
        with Sampler(bootstrap, topic) as sampler:
            r = execute(zookeeper, bootstrap, plan, "--max-moves-per-disk", "1", "--format", "json",
                        "--replica-alter-log-dirs-throttle", "300000")  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        doc = json.loads(r.stdout)
        # never more than one future replica per disk (at most one into d1 at once), and some were seen
        per_disk = [n for s in sampler.samples for n in s.values()]
        assert per_disk and max(per_disk) == 1, sampler.samples
        assert dirs_of(bootstrap, topic) == {(0, 1): d1, (1, 1): d1, (2, 1): d1, (3, 1): d0}
        started = [m for m in doc["messages"] if m.startswith("Successfully started moving log directory to")]
        assert len(started) == 3, doc["messages"]
        # the bytes copied: the three replicas' sizes as Kafka's kafka-log-dirs reports them (no writes since)
        sizes = {p: n for path, d in kafka_log_dirs(bootstrap)[1].items() for (t, p, _), n in d["partitions"].items()
                 if t == topic}  # fmt: skip
        summary = doc["log_dir_moves"]
        assert (summary["moves"], summary["max_per_disk"], summary["max_brokers_at_once"]) == (3, 1, 1)
        assert summary["bytes_copied"] == sizes[0] + sizes[1] + sizes[2], (summary, sizes)
        assert [m["status"] for m in doc["replica_moves"]] == ["complete"] * 3, doc["replica_moves"]
        assert "3/3 replica log-dir moves done" in r.stderr, r.stderr
        assert "log-dir moves: copied" in r.stderr and "3 done" in r.stderr, r.stderr
        assert consume_all(bootstrap, topic) == values
        assert admin.configs("brokers", 1).get(LOG_DIR_RATE) == "777777"
        v, counts = verify(zookeeper, bootstrap, plan, tmp_path / "m.prom")
        assert v.returncode == 0, v.stdout + v.stderr
        for p in range(3):
            assert f"Reassignment of replica {topic}-{p}-1 completed successfully." in v.stdout, v.stdout
        assert counts == {"complete": 3, "in_progress": 0, "elsewhere": 0, "not_moving": 0, "missing": 0,
                          "unknown": 0, "queued": 0}  # fmt: skip
    finally:
        admin.alter("brokers", 1, {LOG_DIR_RATE: None})


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_one_broker_at_a_time_with_a_replica_placed_on_arrival(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    bootstrap, zookeeper, dirs = jbod
    topic, values = admin.make_topic("onebroker", {p: [2, 3] for p in range(4)}, messages=400, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([2, 3], [dirs[2][0], dirs[3][0]]) for p in range(4)})
    # p0-p2: both replicas to d1 (six moves within brokers 2 and 3); p3: broker 1 joins, into its d1 (an
    # inter-broker copy, placed on arrival), broker 2's replica stays in d0
    moves = {p: ([2, 3], [dirs[2][1], dirs[3][1]]) for p in range(3)}
    moves[3] = ([2, 3, 1], ["any", "any", dirs[1][1]])
    plan = write_plan(tmp_path / "plan.json", topic, moves)
    with Sampler(bootstrap, topic) as sampler:
        r = execute(zookeeper, bootstrap, plan, "--max-moves-per-disk", "2", "--one-broker-at-a-time",
                    "--replica-alter-log-dirs-throttle", "400000", "--throttle", "10000000")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    futures = [s for s in sampler.samples if s]
    assert futures, sampler.samples
    assert all(len({b for b, _ in s}) == 1 for s in futures), futures  # one broker at a time
    assert max(n for s in futures for n in s.values()) <= 2, futures
    seen = {b for s in futures for b, _ in s}
    assert seen <= {2, 3}, futures
    expected = {(p, b): dirs[b][1] for p in range(3) for b in (2, 3)}
    expected |= {(3, 2): dirs[2][0], (3, 3): dirs[3][0], (3, 1): dirs[1][1]}
    assert dirs_of(bootstrap, topic) == expected
    assert consume_all(bootstrap, topic) == values
    # the throttles this run set are off again (there were none before)
    for b in (1, 2, 3):
        assert not {k for k in admin.configs("brokers", b) if "throttled.rate" in k or k == LOG_DIR_RATE}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_stalled_log_dir_move_warned_and_its_cancel_stops_the_queue(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """At 1 KiB/s the broker copies a first fetch (up to 1 MiB, before its quota has measured any) and
    then waits about ten seconds for each next one: the future replica stops growing, longer than
    --stuck-after 2. The warning's cancel command, pasted, stops that move; execute then starts none of the
    queued ones and ends not as planned (5); every replica stays in its dir, the throttle is off."""
    bootstrap, zookeeper, dirs = jbod
    d0, d1 = dirs[1]
    topic, values = admin.make_topic("stall", {p: [1] for p in range(3)}, messages=1600, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([1], [d0]) for p in range(3)})
    plan = write_plan(tmp_path / "plan.json", topic, {p: ([1], [d1]) for p in range(3)})
    err = tmp_path / "execute.err"
    cmd = [PYTHON, "-m", "reassign_cli", "execute", *connection(zookeeper, bootstrap),
           "--reassignment-json-file", str(plan), "--rollback-file", str(plan) + ".rollback", "--poll-interval",
           "0.5", "--max-moves-per-disk", "1", "--replica-alter-log-dirs-throttle", "1024", "--stuck-after", "2"]  # fmt: skip
    with err.open("w") as f:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=f, text=True, stdin=subprocess.DEVNULL)
    try:
        line = wait_until(lambda: next((x for x in err.read_text().splitlines() if " is stuck: " in x), None),
                          timeout=300, message=lambda: err.read_text())  # fmt: skip
        assert line.startswith(
            f"Warning: {topic}-0 on broker 1 is stuck: its future replica in {d1} has not grown for"
        ), line
        pasted = line.split("cancel the move: ", 1)[1]
        assert pasted.startswith("kafka-reassign cancel --reassignment-json-file "), pasted
        cancel = subprocess.run([PYTHON, "-m", "reassign_cli", *shlex.split(pasted)[1:]], capture_output=True,
                                text=True, timeout=300, stdin=subprocess.DEVNULL, env=own_env())  # fmt: skip
        assert cancel.returncode == 0, cancel.stdout + cancel.stderr
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = err.read_text()
    assert proc.returncode == 5, out + stderr
    assert (
        f"not starting the 2 log-dir moves queued: {topic}-1 on broker 1, {topic}-2 on broker 1" in stderr
    ), stderr
    assert out.count("Successfully started moving log directory to") == 1, out
    assert dirs_of(bootstrap, topic) == {(p, 1): d0 for p in range(3)}
    assert consume_all(bootstrap, topic) == values
    assert LOG_DIR_RATE not in admin.configs("brokers", 1)
    # verify: each replica is in its old dir, no longer moving: not as planned (5), in the metrics too
    v, counts = verify(zookeeper, bootstrap, plan, tmp_path / "m.prom")
    assert v.returncode == 5, v.stdout + v.stderr
    for p in range(3):
        assert f"Partition {topic}-{p} on broker 1 is not being moved from log dir {d0} to {d1}." in v.stdout
    assert counts == {"complete": 0, "in_progress": 0, "elsewhere": 0, "not_moving": 3, "missing": 0,
                      "unknown": 0, "queued": 0}  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_timed_out_run_goes_on_when_run_again(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """--wait-timeout while the first move crawls at 1 KiB/s: exit 4, that move keeps copying, the other two
    are not started. The same execute again (a higher rate) adopts the move still copying, starts the two
    others one at a time and ends with all three in d1."""
    bootstrap, zookeeper, dirs = jbod
    d0, d1 = dirs[1]
    topic, values = admin.make_topic("again", {p: [1] for p in range(3)}, messages=1200, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([1], [d0]) for p in range(3)})
    plan = write_plan(tmp_path / "plan.json", topic, {p: ([1], [d1]) for p in range(3)})
    first = execute(zookeeper, bootstrap, plan, "--max-moves-per-disk", "1", "--replica-alter-log-dirs-throttle",
                    "1024", "--wait-timeout", "5")  # fmt: skip
    assert first.returncode == 4, first.stdout + first.stderr
    assert "1 log-dir move running, 2 not started" in first.stderr, first.stderr
    assert first.stdout.count("Successfully started moving log directory to") == 1, first.stdout
    futures = {(p, b): path for b, ds in kafka_log_dirs(bootstrap).items() for path, d in ds.items()
               for (t, p, future) in d["partitions"] if t == topic and future}  # fmt: skip
    assert futures == {(0, 1): d1}, futures
    with Sampler(bootstrap, topic) as sampler:
        again = execute(zookeeper, bootstrap, plan, "--max-moves-per-disk", "1",
                        "--replica-alter-log-dirs-throttle", "10000000")  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Moving 3 replicas between log dirs, at most 1 per disk" in again.stderr, again.stderr
    assert again.stdout.count("Successfully started moving log directory to") == 2, again.stdout  # t-1, t-2
    assert max((n for s in sampler.samples for n in s.values()), default=0) <= 1, sampler.samples
    assert dirs_of(bootstrap, topic) == {(p, 1): d1 for p in range(3)}
    assert consume_all(bootstrap, topic) == values
    assert LOG_DIR_RATE not in admin.configs("brokers", 1)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_detached_disk_plan_carried_on_by_verify_alone(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    detached_disk_plan(jbod, admin, tmp_path)


def detached_disk_plan(
    jbod: tuple[str, str | None, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """`execute --detach` of a disk plan (issue 27 item 3 with issue 25): two replicas moved from broker 1's
    d0 to its d1 (intra-broker, --max-moves-per-disk 1 under a 200 kB/s log-dir throttle, over the operator's
    own rate of 777777 on broker 1) and one partition moved from broker 2 to broker 3's d1 (placed on
    arrival). Then only `verify` processes, from another directory with no plan file, until exit 0."""
    bootstrap, zookeeper, dirs = jbod
    d0, d1 = dirs[1]
    tmp_path.mkdir(exist_ok=True)
    topic, values = admin.make_topic("stored", {0: [1], 1: [1], 2: [2]}, messages=600, size=2500)
    place(bootstrap, tmp_path, topic, {0: ([1], [d0]), 1: ([1], [d0]), 2: ([2], [dirs[2][0]])})
    admin.alter("brokers", 1, {LOG_DIR_RATE: "777777"})
    try:
        plan = write_plan(
            tmp_path / "plan.json", topic, {0: ([1], [d1]), 1: ([1], [d1]), 2: ([3], [dirs[3][1]])}
        )
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        outputs: list[str] = []
        listed: list[str] = []
        with Sampler(bootstrap, topic) as sampler:
            r = execute(zookeeper, bootstrap, plan, "--detach", "--max-moves-per-broker", "1",
                        "--max-moves-per-disk", "1", "--replica-alter-log-dirs-throttle", "200000",
                        "--throttle", "10000000")  # fmt: skip
            assert r.returncode == 0, r.stdout + r.stderr
            # verify of the plan's file (no step: --metrics-file): the two moves on broker 1 are queued
            v, counts = verify(zookeeper, bootstrap, plan, tmp_path / "m.prom")
            assert v.returncode == 4, v.stdout + v.stderr
            assert (counts["queued"], counts["not_moving"]) == (2, 0), counts
            assert (
                f"Reassignment of replica {topic}-0-1 is still in progress (queued: not started yet)."
                in v.stdout
            )
            ls = subprocess.run([PYTHON, "-m", "reassign_cli", "list", *connection(zookeeper, bootstrap)],
                                capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                                env=own_env())  # fmt: skip
            assert (
                ls.returncode in (0, 4) and "  log-dir moves: 0 moving, 3 queued, 0 done of 3" in ls.stdout
            ), ls
            plan.unlink()
            for _ in range(300):
                v = subprocess.run([PYTHON, "-m", "reassign_cli", "verify", *connection(zookeeper, bootstrap)],
                                   capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                                   env=own_env(), cwd=elsewhere)  # fmt: skip
                outputs.append(v.stdout + v.stderr)
                assert v.returncode in (0, 4), outputs[-1]
                if v.returncode == 0:
                    break
                listed += list_in_dirs_phase(zookeeper, bootstrap, outputs[-1]) if not listed else []
        assert v.returncode == 0, outputs
        assert listed, outputs  # list ran once, between two steps of the log-dir phase
        assert "The stored plan is done" in outputs[-1], outputs[-1]
        assert not [o for o in outputs if "not being moved" in o], outputs
        assert any("log-dir moves: 1 moving, 1 queued" in o for o in outputs), outputs
        per_disk = [n for s in sampler.samples for n in s.values()]
        assert per_disk and max(per_disk) == 1, sampler.samples
        assert dirs_of(bootstrap, topic) == {(0, 1): d1, (1, 1): d1, (2, 3): dirs[3][1]}
        assert consume_all(bootstrap, topic) == values
        assert admin.configs("brokers", 1).get(LOG_DIR_RATE) == "777777"
        for b in (2, 3):
            assert LOG_DIR_RATE not in admin.configs("brokers", b)
        gone = subprocess.run([PYTHON, "-m", "reassign_cli", "verify", *connection(zookeeper, bootstrap)],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                              env=own_env(), cwd=elsewhere)  # fmt: skip
        assert gone.returncode == 0 and "No plan is stored in the cluster" in gone.stderr, gone.stderr
    finally:
        admin.alter("brokers", 1, {LOG_DIR_RATE: None})


def list_in_dirs_phase(zookeeper: str | None, bootstrap: str, step: str) -> list[str]:
    """After a step that left every partition move done and log-dir moves to go (no step runs until the
    next verify: the stored marks stay as that step wrote them), `list` says the plan moves log dirs, not
    that it is finished: its stdout. Otherwise nothing runs: []."""
    dirs = re.search(r"log-dir moves: (\d+) moving, (\d+) queued", step)
    if (
        "Stored plan: 0 moving, 0 queued, 3 done of 3" not in step
        or dirs is None
        or dirs.groups() == ("0", "0")
    ):
        return []
    ls = subprocess.run([PYTHON, "-m", "reassign_cli", "list", *connection(zookeeper, bootstrap)],
                        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                        env=own_env())  # fmt: skip
    assert ls.returncode == 0, ls.stderr
    assert "  state: moving log dirs" in ls.stdout.splitlines(), ls.stdout
    assert f"  log-dir moves: {dirs[1]} moving, {dirs[2]} queued" in ls.stdout, ls.stdout
    return [ls.stdout]


def foreground_stored_then_cancelled(
    bootstrap: str,
    admin: Admin,
    dirs: dict[int, list[str]],
    tmp_path: Path,
    zookeeper: str | None = None,
    pace: tuple[str, ...] = ("--max-moves-per-broker", "1"),
) -> None:
    """A foreground `execute --max-moves-per-broker 1 --max-moves-per-disk 1` (or `pace`: `--batch-size 1`) of
    a log-dir plan given the brokers (ZooKeeper mode too, `zookeeper`) stores its plan, log-dir queue included: a verify of the file
    between two of its moves calls the queued ones queued (exit 4), not "not being moved"; `list` says them;
    `cancel` of the stored plan stops the running log-dir move (1 KiB/s: it crawls) and the execute starts
    no other."""
    conn = connection(zookeeper, bootstrap)
    d0, d1 = dirs[1]
    tmp_path.mkdir(exist_ok=True)
    topic, values = admin.make_topic("fgstored", {p: [1] for p in range(3)}, messages=1600, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([1], [d0]) for p in range(3)})
    plan = write_plan(tmp_path / "plan.json", topic, {p: ([1], [d1]) for p in range(3)})
    err = tmp_path / "execute.err"
    cmd = [PYTHON, "-m", "reassign_cli", "execute", *conn, "--reassignment-json-file",
           str(plan), "--rollback-file", str(plan) + ".rollback", "--poll-interval", "0.5", *pace,
           "--max-moves-per-disk", "1", "--replica-alter-log-dirs-throttle", "1024"]  # fmt: skip
    with err.open("w") as f:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=f, text=True, stdin=subprocess.DEVNULL,
                                env=own_env())  # fmt: skip
    try:
        wait_until(lambda: "log-dir moves: copied" in err.read_text() and "1 moving, 2 queued" in err.read_text(),
                   timeout=300, message=lambda: err.read_text())  # fmt: skip
        v, counts = verify(zookeeper, bootstrap, plan, tmp_path / "m.prom")
        assert v.returncode == 4, v.stdout + v.stderr
        assert (counts["in_progress"], counts["queued"], counts["not_moving"]) == (1, 2, 0), counts
        assert "not being moved" not in v.stdout, v.stdout
        ls = cli("list", *conn)
        assert "  log-dir moves: 1 moving, 2 queued, 0 done of 3" in ls.stdout, ls.stdout + ls.stderr
        cancel = cli("cancel", *conn)
        assert cancel.returncode == 0, cancel.stdout + cancel.stderr
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = err.read_text()
    assert proc.returncode != 0, out + stderr
    assert out.count("Successfully started moving log directory to") == 1, out
    assert dirs_of(bootstrap, topic) == {(p, 1): d0 for p in range(3)}
    nothing_left(bootstrap, admin, conn, topic, values)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_window_of_a_disk_plan_without_per_disk_pacing_puts_every_replica_in_its_dir(
    jbod: tuple[str, str, dict[int, list[str]]], admin: Admin, tmp_path: Path
) -> None:
    """`execute --max-moves-per-broker 1` of a plan naming log dirs, without --max-moves-per-disk (ZooKeeper
    mode given the brokers): each arriving replica's dir is asked before its move, and the move within broker
    1 starts after the partition moves, uncapped. Before 2026-11-28 the window (its plan then kept in the
    run's memory) asked no dir, and never started the move within broker 1 (its partition is at its target
    replicas, so the window skipped it): exit 5, two replicas "not being moved"."""
    bootstrap, zookeeper, dirs = jbod
    d0, d1 = dirs[1]
    _, e1 = dirs[2]
    topic, values = admin.make_topic("window", {p: [1] for p in range(3)}, messages=300, size=2500)
    place(bootstrap, tmp_path, topic, {p: ([1], [d0]) for p in range(3)})
    # t-0 and t-1 to broker 2's second dir (both defaults differ by the broker's choice), t-2 within broker 1
    plan = write_plan(tmp_path / "plan.json", topic, {0: ([2], [e1]), 1: ([2], [e1]), 2: ([1], [d1])})
    r = execute(zookeeper, bootstrap, plan, "--max-moves-per-broker", "1", "--throttle", "10000000")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Moving 1 replica between log dirs, all at once" in r.stderr, r.stderr
    assert dirs_of(bootstrap, topic) == {(0, 2): e1, (1, 2): e1, (2, 1): d1}
    assert consume_all(bootstrap, topic) == values
