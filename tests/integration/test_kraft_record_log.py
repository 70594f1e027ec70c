"""The record log's writes as real OS processes on KRaft (Kafka 4.x), each stopped at a chosen step of a
record write by tests/integration/record_step.py (the real CLI in a process that stops itself there):
- kill -9 at every step of an execute's record writes (before each chunk, before and after the commit, before
  and after the compaction): what is left always replays, and the next run ends clean;
- an execute and a verify that read the same log end and then both write: the first to end wins, the other
  finds that it lost, reads again and acts on what the winner wrote (in both orders);
- a record over 1 MB (one message cannot hold it): written in chunks by execute, cleared by verify.
What is checked is read raw (kraft_support: an independent reading of the log)."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from reassign_cli.core import record_log
from tests.clusters import ExtraCluster
from tests.helpers import PYTHON, REPO, unique_name, wait_until
from tests.integration.kraft_support import (
    EMPTY,
    FREP,
    LREP,
    Admin,
    cli,
    eventually,
    idle,
    plan,
    record_messages,
    replayed_record,
)

STEP = str(REPO / "tests" / "integration" / "record_step.py")
# Chunks of at most 400 bytes (an execute's record of one topic takes three), a compaction after every
# write that counts, leases of dead runs over after 10 s.
SMALL = {
    "RECORD_STEP_CHUNK_BYTES": "400",
    "RECORD_STEP_COMPACT_AFTER": "0",
    "RECORD_STEP_LEASE_SECONDS": "10",
}


def stepped(bootstrap: str, step: str, *args: str | Path, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    env.update(SMALL, KAFKA_REASSIGN_BOOTSTRAP=bootstrap)
    return subprocess.Popen(
        [PYTHON, STEP, step, "--", *map(str, args)],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=180)
    return proc.returncode, out, err


def run_stepped(bootstrap: str, step: str, *args: str | Path, cwd: Path) -> tuple[int, str, str]:
    return finish(stepped(bootstrap, step, *args, cwd=cwd))


def wait_stopped(proc: subprocess.Popen[str], name: str, timeout: float = 120) -> None:
    """Until the process has printed `STOPPED name` and stopped itself (SIGSTOP)."""
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline, seen = time.monotonic() + timeout, []
    while f"STOPPED {name}" not in seen:
        assert time.monotonic() < deadline, f"{name} not reached: {seen}"
        if sel.select(timeout=1):
            line = proc.stderr.readline()
            assert line, f"the process ended before {name}: {seen} {proc.wait()}"
            seen.append(line.strip())
    sel.close()
    stat = Path(f"/proc/{proc.pid}/stat")
    wait_until(lambda: stat.read_text().rsplit(")", 1)[1].split()[0] == "T", timeout=30, interval=0.01)


def _kill_points(trace: list[str]) -> list[str]:
    """The steps to kill at: before each message and compaction, and after each (after a message is the same
    point as before the next one, so only the last message's "-done" of a write is kept)."""
    points = []
    for i, name in enumerate(trace):
        following = trace[i + 1] if i + 1 < len(trace) else ""
        if name.startswith("produce-") and name.endswith("-done") and following.startswith("produce-"):
            continue
        points.append(name)
    return points


def _clean(ka: Admin, kc: ExtraCluster, topic: str, target: list[int]) -> None:
    eventually(lambda: ka.partitions(topic)[0][0], target, "replicas as planned", timeout=120)
    eventually(lambda: ka.throttles([1, 2, 3], [topic]), _no_throttles(topic), "no throttle of ours")
    assert replayed_record(record_messages(kc.bootstrap)) == EMPTY


def _no_throttles(topic: str) -> dict[str, dict[str, str]]:
    return {"broker 1": {}, "broker 2": {}, "broker 3": {}, f"topic {topic}": {}}


def test_kill_9_at_every_step_of_a_record_write(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    def execute(step: str, topic: str) -> subprocess.Popen[str]:
        p = plan(tmp_path / f"{topic}.json", {(topic, 0): [2, 3]})
        return stepped(
            kc.bootstrap,
            step,
            "execute",
            "--reassignment-json-file",
            p,
            "--throttle",
            "50000000",
            cwd=tmp_path,
        )

    def verify(topic: str) -> None:
        p = tmp_path / f"{topic}.json"
        code, _, err = run_stepped(
            kc.bootstrap, "none", "verify", "--reassignment-json-file", p, cwd=tmp_path
        )
        assert code == 0, err

    first, _ = ka.make_topic("trace", {0: [1, 2]})
    code, _, err = finish(execute("trace", first))
    assert code == 0, err
    trace = [line.split()[1] for line in err.splitlines() if line.startswith("STEP ")]
    idle(ka)
    verify(first)
    _clean(ka, kc, first, [2, 3])
    points = _kill_points(trace)
    # The record writes (the priors with the setup lease first) are chunked, and compacted.
    # Its first record write (the priors, with the setup lease: always there, whatever the timing) is three
    # chunks and a commit, then a compaction: a kill at each point of it.
    points = points[: points.index("compact-1-done") + 1]
    assert points == [
        "produce-1",
        "produce-2",
        "produce-3",
        "produce-4",
        "produce-4-done",
        "compact-1",
        "compact-1-done",
    ], " ".join(trace)
    for point in points:
        topic, _ = ka.make_topic("kill", {0: [1, 2]})
        proc = execute(point, topic)
        wait_stopped(proc, point)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # Whatever was written, the log replays (no partial write counted) and names only this topic.
        assert set(replayed_record(record_messages(kc.bootstrap))["topics"]) <= {topic}, point
        if not ka.reassignments():  # killed before its reassignment: the next execute does it all
            code, _, err = finish(execute("none", topic))
            assert code == 0, (point, err)
        idle(ka)
        verify(topic)
        _clean(ka, kc, topic, [2, 3])


@pytest.mark.parametrize("first", ["execute", "verify"])
def test_an_execute_and_a_verify_racing_one_record_write(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, first: str
) -> None:
    old, _ = ka.make_topic("old", {0: [1, 2]})
    fresh, _ = ka.make_topic("fresh", {0: [1, 2]}, messages=2500)  # a move that lasts at 1 B/s
    done = plan(tmp_path / f"{old}.json", {(old, 0): [1, 3]})  # a finished plan, its throttles still on
    code, _, err = run_stepped(
        kc.bootstrap,
        "none",
        "execute",
        "--reassignment-json-file",
        done,
        "--throttle",
        "1000000000",
        cwd=tmp_path,
    )
    assert code == 0, err
    idle(ka)
    assert ka.throttles([], [old])[f"topic {old}"], "the finished plan's throttles"
    move = plan(tmp_path / f"{fresh}.json", {(fresh, 0): [2, 3]})
    # Both read the same log end and stop before their first message: the same base.
    verify = stepped(kc.bootstrap, "produce-1", "verify", "--reassignment-json-file", done, cwd=tmp_path)
    wait_stopped(verify, "produce-1")
    execute = stepped(
        kc.bootstrap,
        "produce-1",
        "execute",
        "--reassignment-json-file",
        move,
        "--throttle",
        "1",
        cwd=tmp_path,
    )
    wait_stopped(execute, "produce-1")
    winner, loser = (execute, verify) if first == "execute" else (verify, execute)
    winner.send_signal(signal.SIGCONT)
    w_code, w_out, w_err = finish(winner)
    assert w_code == 0, w_err
    loser.send_signal(signal.SIGCONT)
    l_code, l_out, l_err = finish(loser)
    assert l_code == 0, l_err
    v_out = w_out if first == "verify" else l_out
    if first == "execute":  # the verify lost, read again, found the move running: keeps every throttle
        assert "Clearing" not in v_out
        assert ka.throttles([], [old])[f"topic {old}"]
    else:  # the verify cleared the finished plan's throttles; the execute lost, read again, went on
        assert f"Clearing topic-level throttles on topic {old}" in v_out.splitlines()
        eventually(lambda: ka.throttles([], [old]), {f"topic {old}": {}}, "old throttles off")
    assert f"Successfully started partition reassignment for {fresh}-0" in (
        (l_out if first == "verify" else w_out).splitlines()
    )
    assert ka.throttles([], [fresh])[f"topic {fresh}"] == {LREP: "0:1,0:2", FREP: "0:3"}
    assert fresh in replayed_record(record_messages(kc.bootstrap))["topics"]
    # Sped up, the move ends; a verify takes everything off.
    code, _, err = run_stepped(
        kc.bootstrap,
        "none",
        "execute",
        "--reassignment-json-file",
        move,
        "--throttle",
        "1000000000",
        cwd=tmp_path,
    )
    assert code == 0, err
    idle(ka)
    code, _, err = run_stepped(kc.bootstrap, "none", "verify", "--reassignment-json-file", move, cwd=tmp_path)
    assert code == 0, err
    _clean(ka, kc, fresh, [2, 3])
    eventually(lambda: ka.throttles([], [old]), {f"topic {old}": {}}, "old throttles off")


def test_the_compaction_keeps_the_log_short(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    """With the default settings, a compaction cuts the log once COMPACT_AFTER messages precede the last
    write that counted: many executes leave a short log that still replays."""
    for _ in range(4):
        topic, _ = ka.make_topic("compact", {0: [1, 2]})
        p = plan(tmp_path / f"{topic}.json", {(topic, 0): [2, 3]})
        for args in (("execute", "--throttle", "50000000"), ("verify",)):
            r = cli(kc.bootstrap, args[0], "--reassignment-json-file", p, *args[1:], cwd=tmp_path)
            assert r.returncode == 0, r.stderr
            idle(ka)
        _clean(ka, kc, topic, [2, 3])
    messages = record_messages(kc.bootstrap)
    assert messages[0][0] > 0, "a prefix was removed"
    assert len(messages) <= record_log.COMPACT_AFTER + 12, [o for o, _ in messages]


BIG_TOPICS = 3600  # with names of 220 characters, the record of their throttles is about 1.15 MB


def _make_many(ka: Admin, n: int) -> list[str]:
    from kafka.admin import NewTopic

    stem = unique_name("big")
    names = [f"{stem}-{i:05d}-".ljust(220, "x") for i in range(n)]
    for i in range(0, n, 500):
        batch = names[i : i + 500]
        ka.client.create_topics(
            [NewTopic(t, replica_assignments={0: [1, 2]}) for t in batch], timeout_ms=120000
        )
        ka.made.extend(batch)
    # Every broker's metadata, not just the one kafka-python would ask: the CLI may ask any of them, and one
    # that trails the controller calls the newest topics non-existent (exit 3; seen in a full suite run).
    for node in (1, 2, 3):
        wait_until(
            lambda n=node: _all_known(ka, names, n), timeout=300, message=f"every topic on broker {node}"
        )
    return names


def _all_known(ka: Admin, names: list[str], node: int) -> bool:
    from kafka.protocol.metadata.metadata import MetadataRequest

    topic = MetadataRequest.MetadataRequestTopic
    request = MetadataRequest(topics=[topic(name=t) for t in names], allow_auto_topic_creation=False)

    async def ask() -> Any:
        return (await ka.client._manager.send(request, node_id=node)).to_dict()

    answer = ka.client._manager.run(ask)
    return len(answer["topics"]) == len(names) and all(
        t["error_code"] == 0 and t["partitions"] for t in answer["topics"]
    )


def test_a_record_over_one_megabyte_is_written_in_chunks(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    names = _make_many(ka, BIG_TOPICS)
    p = plan(tmp_path / "big.json", {(t, 0): [2, 3] for t in names})
    start = ka.record_end()
    r = cli(kc.bootstrap, "execute", "--reassignment-json-file", p, "--throttle", "50000000", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    messages = [(o, v) for o, v in record_messages(kc.bootstrap) if o >= start]
    # The first write (the priors of 2 keys on each of 3600 topics, and the setup lease) did not fit in one
    # message: chunks, each well under the broker's message.max.bytes (1048588 by default), then a commit.
    chunks = [v for _, v in messages if b'"chunk":' in v]
    assert len(chunks) >= 2 and all(len(v) <= record_log.CHUNK_BYTES for v in chunks)
    assert sum(len(v) for v in chunks) > 1024 * 1024
    recorded = replayed_record(record_messages(kc.bootstrap))["topics"]
    assert sorted(recorded) == sorted(names)
    assert recorded[names[0]] == {LREP: None, FREP: None}
    idle(ka)

    def not_moved() -> list[str]:
        metas = ka.client.describe_topics(names)
        return [m["name"] for m in metas if [list(x["replica_nodes"]) for x in m["partitions"]] != [[2, 3]]]

    eventually(lambda: not_moved()[:3], [], "every partition on 2,3", timeout=120)
    r = cli(kc.bootstrap, "verify", "--reassignment-json-file", p, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1500:]
    assert replayed_record(record_messages(kc.bootstrap)) == EMPTY
    sample = names[:: BIG_TOPICS // 40]
    expected = {f"topic {t}": {} for t in sample} | {f"broker {b}": {} for b in (1, 2, 3)}
    eventually(lambda: ka.throttles([1, 2, 3], sample), expected, "no throttle of ours")
    assert all(ka.partitions(t)[0][0] == [2, 3] for t in sample)
