"""The whole workflow through the admin API (`--bootstrap-server`) on KRaft clusters, Kafka 3.9 and the
newest 4.x: snapshot, generate, execute --throttle --wait, verify, list, cancel in mid-move, elect-leaders;
every message read back afterwards; bad input refused with nothing written; Kafka 4.x's own
kafka-reassign-partitions as the judge both ways; the record topic's read-modify-write raced by real
processes. Each KRaft cluster is started once per session (tests/conftest.py kraft_cluster) and every test
makes its own topics."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import KRAFT_VERSIONS, ExtraCluster
from tests.helpers import PYTHON, REPO, consume_all, wait_until
from tests.integration.kraft_support import (
    EMPTY,
    FR,
    FREP,
    LR,
    LREP,
    Admin,
    admin,
    cli,
    eventually,
    idle,
    kafka_tool,
    plan,
    record_messages,
    replayed_record,
)


@pytest.fixture(scope="module", params=KRAFT_VERSIONS, ids=lambda v: f"kraft-{v}")
def kc(request: pytest.FixtureRequest, kraft_cluster: Any) -> ExtraCluster:
    c: ExtraCluster = kraft_cluster(request.param)
    assert c.mode == "kraft" and c.version == request.param
    return c


@pytest.fixture
def ka(kc: ExtraCluster, tmp_path: Path) -> Any:
    """The raw admin client; the cluster idle, and no throttle of ours left by an earlier failed test (its
    record entries would be taken for the priors of the keys this test writes)."""
    with admin(kc.bootstrap) as a:
        idle(a)
        if a.record_end() and replayed_record(record_messages(kc.bootstrap)) != EMPTY:
            r = cli(kc.bootstrap, "verify", "--reassignment-json-file", _empty_plan(tmp_path))
            assert r.returncode == 0, r.stderr
        yield a


def rollback_block(entries: str) -> list[str]:
    return [
        "Current partition replica assignment",
        "",
        '{"version":1,"partitions":[' + entries + "]}",
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
    ]


def test_workflow(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    topic, values = ka.make_topic("flow", {0: [1, 2], 1: [2, 3], 2: [3, 1]}, messages=100)
    ka.alter("brokers", 2, {LR: "777"})  # an operator's own throttle, to be put back
    try:
        _workflow(kc, ka, topic, tmp_path)
    finally:
        ka.alter("brokers", 2, {LR: None})
    assert consume_all(kc.bootstrap, topic) == values


def _workflow(kc: ExtraCluster, ka: Admin, topic: str, tmp: Path) -> None:
    # snapshot: brokers with racks, the assignment, leaders and ISRs as created
    snap = cli(kc.bootstrap, "snapshot", "--topic", topic, "-o", tmp / "snap.json")
    assert snap.returncode == 0, snap.stderr
    doc = json.loads((tmp / "snap.json").read_text())
    # Each broker's disk (DescribeLogDirs' total and usable bytes, KIP-827, both versions here have it);
    # checked against statvfs in test_capacity.py.
    disks = [(b.pop("disk_total_bytes"), b.pop("disk_usable_bytes")) for b in doc["brokers"]]
    assert all(type(t) is int and type(u) is int and 0 < u <= t for t, u in disks), disks
    # each log dir its own disk unless --shared-log-dirs was given (recorded per broker)
    assert [b.pop("disk_shared_log_dirs") for b in doc["brokers"]] == [False, False, False]
    # each broker's two log dirs, live (issue 27; checked against kafka-log-dirs in test_snapshot_disks.py);
    # cordoned is known on Kafka 4.3+ only (null before)
    dirs = [b.pop("log_dirs") for b in doc["brokers"]]
    assert all(
        len(ds) == 2 and all(not d["offline"] and d["cordoned"] in (None, False) for d in ds) for ds in dirs
    )
    assert doc["brokers"] == [{"id": 1, "rack": "r1"}, {"id": 2, "rack": "r2"}, {"id": 3, "rack": "r3"}]
    parts = [p for t in doc["topics"] for p in t["partitions"]]
    # Each partition's size (DescribeLogDirs): 100 records went in, so every partition holds some bytes.
    assert all(type(p["size"]) is int and p.pop("size") > 0 for p in parts), parts
    # which of its broker's log dirs holds each replica
    assert all(len(p["dirs"]) == len(p["replicas"]) and set(p.pop("dirs")) <= {0, 1} for p in parts), parts
    assert parts == [
        {"partition": 0, "replicas": [1, 2], "isr": [1, 2], "leader": 1},
        {"partition": 1, "replicas": [2, 3], "isr": [2, 3], "leader": 2},
        {"partition": 2, "replicas": [3, 1], "isr": [3, 1], "leader": 3},
    ]
    # generate: live through the admin API and from the snapshot, the same bytes
    gen = ["generate", "--topic", topic, "--broker-list", "1,2,3", "--seed", "7"]
    live, offline = cli(kc.bootstrap, *gen), cli(kc.bootstrap, *gen, "--snapshot", tmp / "snap.json")
    assert live.returncode == offline.returncode == 0, live.stderr + offline.stderr
    assert live.stdout == offline.stdout and topic in live.stdout

    # execute: A-0 moves (data), A-1 is reordered, A-2 grows to 3 replicas
    p = plan(tmp / "plan.json", {(topic, 0): [2, 3], (topic, 1): [3, 2], (topic, 2): [1, 3, 2]})
    r = cli(
        kc.bootstrap,
        "execute",
        "--reassignment-json-file",
        p,
        "--throttle",
        "50000000",
        "--wait",
        "--poll-interval",
        "0.3",
        cwd=tmp,
    )
    assert r.returncode == 0, r.stderr
    current = ",".join(
        f'{{"topic":"{topic}","partition":{i},"replicas":[{a},{b}],"log_dirs":["any","any"]}}'
        for i, (a, b) in enumerate([(1, 2), (2, 3), (3, 1)])
    )
    assert r.stdout.splitlines() == [
        *rollback_block(current),
        "The inter-broker throttle limit was set to 50000000 B/s",
        f"Successfully started partition reassignments for {topic}-0,{topic}-1,{topic}-2",
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    eventually(
        lambda: ka.throttles([1, 2, 3], [topic]),
        {"broker 1": {}, "broker 2": {LR: "777"}, "broker 3": {}, f"topic {topic}": {}},
        "throttles restored",
    )
    assert replayed_record(record_messages(kc.bootstrap)) == EMPTY
    eventually(
        lambda: {t: reps for t, (reps, _, _) in ka.partitions(topic).items()},
        {0: [2, 3], 1: [3, 2], 2: [1, 3, 2]},
        "the new replicas",
    )

    # verify and list, ours and Kafka's
    v = cli(kc.bootstrap, "verify", "--reassignment-json-file", p)
    assert v.returncode == 0, v.stderr
    assert v.stdout.splitlines() == [
        "Status of partition reassignment:",
        *(f"Reassignment of partition {topic}-{i} is completed." for i in range(3)),
        "",
        "No throttles set by this tool were found: nothing cleared.",  # execute --wait cleared ours
    ]
    assert (
        f"  broker 2: {LR}=777; to remove: kafka-configs --bootstrap-server {kc.bootstrap} --entity-type brokers "
        f"--entity-name 2 --alter --delete-config {LR}"
    ) in v.stderr
    listed = cli(kc.bootstrap, "list")
    assert (listed.returncode, listed.stdout) == (0, "No partition reassignments found.\n")

    # elect-leaders: A-0's old leader 1 left, so 2 (its first in-sync target replica) leads already;
    # kept their leaders 2 and 3, which are not their preferred replicas 3 and 1.
    e = cli(kc.bootstrap, "elect-leaders", "--topic", topic, "--timeout", "60", "--poll-interval", "0.2")
    assert e.returncode == 0, e.stderr
    assert e.stdout.splitlines() == [
        f"Successfully completed leader election (PREFERRED) for partitions {topic}-1, {topic}-2",
        f"Valid replica already elected for partitions {topic}-0",
    ]
    # (each broker's metadata follows the controller's on its own: the one asked here may lag a moment)
    eventually(
        lambda: {t: ld for t, (_, ld, _) in ka.partitions(topic).items()}, {0: 2, 1: 3, 2: 1}, "leaders"
    )


def test_cancel_in_mid_move_with_kafka_as_the_judge(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    # 2.5 MB at 10 kB/s: the first fetch takes up to 1 MB, the rest would need minutes.
    topic, values = ka.make_topic("cancel", {0: [1, 2]}, messages=2500)
    p = plan(tmp_path / "move.json", {(topic, 0): [3, 2]})
    r = cli(kc.bootstrap, "execute", "--reassignment-json-file", p, "--throttle", "10000", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"Successfully started partition reassignment for {topic}-0" in r.stdout.splitlines()
    assert ka.reassignments() == {
        (topic, 0): {"replicas": [3, 2, 1], "adding_replicas": [3], "removing_replicas": [1]}
    }
    rates = {LR: "10000", FR: "10000"}
    eventually(
        lambda: ka.throttles([1, 2, 3], [topic]),
        {
            "broker 1": rates,
            "broker 2": rates,
            "broker 3": rates,
            f"topic {topic}": {LREP: "0:1,0:2", FREP: "0:3"},
        },
        "throttles set",
    )
    # list and verify: ours and Kafka 4.x's, line for line
    ours, theirs = cli(kc.bootstrap, "list"), kafka_tool(kc.bootstrap, "--list")
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert (
        ours.stdout.splitlines()
        == theirs.stdout.splitlines()
        == [
            "Current partition reassignments:",
            f"{topic}-0: replicas: 3,2,1. adding: 3. removing: 1.",
        ]
    )
    ours = cli(kc.bootstrap, "verify", "--reassignment-json-file", p, "--preserve-throttles")
    theirs = kafka_tool(kc.bootstrap, "--verify", "--reassignment-json-file", p, "--preserve-throttles")
    assert ours.returncode == 4
    assert ours.stdout == theirs.stdout
    assert ours.stdout.splitlines() == [
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is still in progress.",
        "",
    ]
    # cancel: back to the original replicas (in RS order), throttles off, the record empty again
    c = cli(kc.bootstrap, "cancel", "--reassignment-json-file", p)
    assert c.returncode == 0, c.stderr
    assert c.stdout.splitlines() == [
        f"Successfully cancelled partition reassignment for: {topic}-0",
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    assert ka.reassignments() == {}
    eventually(lambda: ka.partitions(topic)[0][0], [2, 1], "the reverted replicas")
    eventually(
        lambda: ka.throttles([1, 2, 3], [topic]),
        {"broker 1": {}, "broker 2": {}, "broker 3": {}, f"topic {topic}": {}},
        "no throttles",
    )
    assert replayed_record(record_messages(kc.bootstrap)) == EMPTY
    assert consume_all(kc.bootstrap, topic) == values


def test_a_move_kafka_started_is_verified_and_listed_by_us(
    kc: ExtraCluster, ka: Admin, tmp_path: Path
) -> None:
    topic, values = ka.make_topic("judged", {0: [1, 2]}, messages=2500)
    p = plan(tmp_path / "move.json", {(topic, 0): [3, 1]})
    started = kafka_tool(kc.bootstrap, "--execute", "--reassignment-json-file", p, "--throttle", "10000")
    assert started.returncode == 0, started.stderr
    try:
        # (Kafka's own --list gives these lines for a move: test_cancel_in_mid_move_with_kafka_as_the_judge)
        ours = cli(kc.bootstrap, "list")
        assert ours.stdout.splitlines() == [
            "Current partition reassignments:",
            f"{topic}-0: replicas: 3,1,2. adding: 3. removing: 2.",
        ]
        v = cli(kc.bootstrap, "verify", "--reassignment-json-file", p)
        assert v.returncode == 4
        assert v.stdout.splitlines() == [
            "Status of partition reassignment:",
            f"Reassignment of partition {topic}-0 is still in progress.",
            "",
        ]
        assert f"{topic}-0: replicas 3 not yet in ISR [1,2]" in v.stderr
        # Kafka's throttles are not ours: execute refuses to run beside its move, nothing written
        other = plan(tmp_path / "other.json", {(topic, 0): [1, 2]})
        before = ka.throttles([1, 2, 3], [topic])
        busy = cli(
            kc.bootstrap, "execute", "--reassignment-json-file", other, "--throttle", "5", cwd=tmp_path
        )
        assert busy.returncode == 4
        assert busy.stderr.startswith(
            "Error: Cannot execute because there is an existing partition assignment."
        )
        assert ka.throttles([1, 2, 3], [topic]) == before
    finally:
        kafka_tool(kc.bootstrap, "--cancel", "--reassignment-json-file", p)  # also removes its throttles
    after = cli(kc.bootstrap, "verify", "--reassignment-json-file", p)
    assert after.returncode == 5
    assert after.stdout.splitlines()[1] == (
        f"There is no active reassignment of partition {topic}-0, but replica set is 1,2 rather than 3,1."
    )
    assert consume_all(kc.bootstrap, topic) == values


BAD = {
    "unknown broker": ('[{"topic":"T","partition":0,"replicas":[1,9]}]', "non-existent brokerIDs: 9"),
    "unknown partition": ('[{"topic":"T","partition":5,"replicas":[1,2]}]', "non-existent partitions: T-5"),
    "repeated broker": (
        '[{"topic":"T","partition":0,"replicas":[2,2]}]',
        "Partition replica lists may not contain duplicate entries",
    ),
    "log dirs without a broker to carry them": (
        '[{"topic":"T","partition":0,"replicas":[1,2],"log_dirs":["/x","any"]}]',
        "",
    ),
}


def test_bad_input_is_refused_with_nothing_written(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    topic, _ = ka.make_topic("bad", {0: [1, 2]})
    before = (ka.throttles([1, 2, 3], [topic]), ka.reassignments(), ka.record_end(), ka.partitions(topic))
    for name, (entries, message) in BAD.items():
        f = tmp_path / f"{name}.json"
        f.write_text('{"version":1,"partitions":' + entries.replace("T", topic) + "}")
        r = cli(kc.bootstrap, "execute", "--reassignment-json-file", f, "--throttle", "1000", cwd=tmp_path)
        if name.startswith("log dirs"):  # the brokers are known here, so log dirs are fine: a bad dir fails
            assert r.returncode == 1, (name, r.stderr)
            assert f"log-dir move of replica {topic}-0 on broker 1 failed: " in r.stderr
        else:
            assert (r.returncode, r.stdout) == (3, ""), (name, r.stderr)
            assert message.replace("T", topic) in r.stderr, (name, r.stderr)
            assert not list(tmp_path.glob("rollback-*"))
            assert ka.record_end() == before[2], name  # not even the record of prior values
        eventually(
            lambda: (ka.throttles([1, 2, 3], [topic]), ka.reassignments(), before[2], ka.partitions(topic)),
            before,
            name,
        )
    # The failed log-dir move undid its throttle writes; the record is back to empty (two more messages).
    assert replayed_record(record_messages(kc.bootstrap)) == EMPTY


RACER = """
import pathlib, sys, time
from reassign_cli.core import throttle as th
from reassign_cli.backends.admin import record_topic as record
from reassign_cli.core import record_log
from reassign_cli.backends.admin.backend import open_admin_backend
from reassign_cli.core.client_config import AdminOptions

bootstrap, me, n, gate = sys.argv[1], sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4])
produce, sends = record.RecordLog._produce, []
record_log.COMPACT_AFTER = 10**9  # every message of the race stays, to be counted

def gated(self, value):
    # The first append of every racer waits until all have read and computed: they all write on the
    # same base, so all but one must find they lost, read again and write again.
    if not sends:
        (gate / me).touch()
        deadline = time.monotonic() + 120
        while len(list(gate.iterdir())) < n and time.monotonic() < deadline:
            time.sleep(0.01)
    sends.append(value)
    return produce(self, value)

record.RecordLog._produce = gated
with open_admin_backend(AdminOptions(bootstrap)) as backend:
    backend.update_priors(lambda r: th.record_priors(r, "topics", "race-" + me, {}, ["x"]))
print(len(sends))
"""


def test_concurrent_record_writers_lose_no_change(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    n = 5
    gate = tmp_path / "gate"
    gate.mkdir()
    start = ka.record_end()
    procs = [
        subprocess.Popen(
            [PYTHON, "-c", RACER, kc.bootstrap, str(i), str(n), str(gate)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    outs = [proc.communicate(timeout=300) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), [err for _, err in outs]
    sends = [int(out) for out, _ in outs]
    values = record_messages(kc.bootstrap)
    try:
        mine = [value for offset, value in values if offset >= start]
        # All five first writes carried the same base: exactly one counted. Every loser wrote again.
        assert len(mine) == sum(sends) >= 2 * n - 1
        assert sorted(replayed_record(values)["topics"]) == [f"race-{i}" for i in range(n)]
    finally:
        cleanup = cli(kc.bootstrap, "verify", "--reassignment-json-file", _empty_plan(tmp_path), env={})
        assert cleanup.returncode == 0, cleanup.stderr  # the race-* topics do not exist: forgotten
    assert replayed_record(record_messages(kc.bootstrap)) == EMPTY


def _empty_plan(tmp: Path) -> Path:
    f = tmp / "empty.json"
    f.write_text('{"version":1,"partitions":[]}')
    return f


def test_log_dir_move_seen_alike_by_us_and_by_kafka(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    # 2.5 MB moving to broker 1's other log dir at 1000 B/s: minutes after the first MB.
    topic, values = ka.make_topic("dirs", {0: [1, 2]}, messages=2500)
    base = kc.directory / "data" / "broker-1"
    src = [d for d in ("d0", "d1") if (base / d / f"{topic}-0").is_dir()]
    assert len(src) == 1, src
    target = base / ("d1" if src == ["d0"] else "d0")
    p = plan(tmp_path / "dirs.json", {(topic, 0): [1, 2]}, log_dirs={(topic, 0): [str(target), "any"]})
    args = ["--reassignment-json-file", p, "--replica-alter-log-dirs-throttle", "1000"]
    r = cli(kc.bootstrap, "execute", *args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "The replica-alter-dir throttle limit was set to 1000 B/s" in lines
    assert (
        f"Successfully started moving log directory to {target} for replica {topic}-0 with broker 1 " in lines
    )
    # While it moves: our lines are Kafka's; verify keeps the throttle
    ours = cli(kc.bootstrap, "verify", "--reassignment-json-file", p, "--preserve-throttles")
    theirs = kafka_tool(kc.bootstrap, "--verify", "--reassignment-json-file", p, "--preserve-throttles")
    assert ours.returncode == 4, ours.stderr
    assert ours.stdout == theirs.stdout
    assert ours.stdout.splitlines() == [
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is completed.",
        f"Reassignment of replica {topic}-0-1 is still in progress.",
    ]
    kept = cli(kc.bootstrap, "verify", "--reassignment-json-file", p)
    assert kept.returncode == 4
    assert "Throttles kept: a replica is still moving between log dirs." in kept.stderr
    assert ka.throttles([1], [])["broker 1"] == {"replica.alter.log.dirs.io.max.bytes.per.second": "1000"}
    # The operator speeds it up; once moved, verify says so (as Kafka does) and takes our rate off.
    ka.alter("brokers", 1, {"replica.alter.log.dirs.io.max.bytes.per.second": "100000000"})
    wait_until(
        lambda: (target / f"{topic}-0").is_dir() and not (base / src[0] / f"{topic}-0").is_dir(),
        timeout=120,
        message="broker 1 moved the log dir",
    )
    done = cli(kc.bootstrap, "verify", "--reassignment-json-file", p)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is completed.",
        f"Reassignment of replica {topic}-0-1 completed successfully.",
        # What was cleared: the log-dir rate execute set on broker 1 (Kafka names every broker and topic)
        "Clearing broker-level throttles on broker 1",
    ]
    eventually(lambda: ka.throttles([1, 2], []), {"broker 1": {}, "broker 2": {}}, "no log-dir rate")
    assert consume_all(kc.bootstrap, topic) == values
