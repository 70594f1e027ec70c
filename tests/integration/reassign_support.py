"""Helpers for the execute / verify / list integration tests (issue 4).

The trigger znode is cluster-wide and other people's tests use the same cluster: every test waits until
no reassignment is running before it starts one, and `Mover.cleanup` (run in teardown) speeds up and
waits for whatever the test started, then removes its throttles.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests.helpers import wait_until

REASSIGN = "/admin/reassign_partitions"
RECORD = "/reassign_cli/throttles"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
FAST = "1000000000"  # bytes/s: "unthrottled" for cleanup


def write_plan(
    path: Path,
    targets: Mapping[tuple[str, int], list[int]],
    log_dirs: Mapping[tuple[str, int], list[str]] | None = None,
) -> Path:
    parts = []
    for (t, p), reps in targets.items():
        entry: dict[str, Any] = {"topic": t, "partition": p, "replicas": reps}
        if log_dirs and (t, p) in log_dirs:
            entry["log_dirs"] = log_dirs[(t, p)]
        parts.append(entry)
    path.write_text(json.dumps({"version": 1, "partitions": parts}))
    return path


def get_json(zk: Any, path: str) -> Any:
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    return json.loads(data) if data else None


def get_raw(zk: Any, path: str) -> bytes | None:
    from kazoo.exceptions import NoNodeError

    try:
        return zk.get(path)[0]
    except NoNodeError:
        return None


def config(zk: Any, entity: str, name: str | int) -> dict[str, str] | None:
    doc = get_json(zk, f"/config/{entity}/{name}")
    return None if doc is None else doc.get("config", {})


def set_config(zk: Any, entity: str, name: str | int, cfg: dict[str, str] | None) -> None:
    """Write a config znode the way an operator's kafka-configs would (with a notification);
    cfg None: leave it as {"version":1,"config":{}} if it exists."""
    path = f"/config/{entity}/{name}"
    data = json.dumps({"version": 1, "config": cfg or {}}, separators=(",", ":")).encode()
    if zk.exists(path):
        zk.set(path, data)
    else:
        zk.create(path, data, makepath=True)
    zk.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": f"{entity}/{name}"}, separators=(",", ":")).encode(),
        sequence=True,
    )


def change_nodes(zk: Any) -> set[str]:
    return set(zk.get_children("/config/changes"))


def notifications_since(zk: Any, before: set[str], about: set[str] | None = None) -> list[str]:
    """entity_path of every config_change_ node created since `before` (sequence order), only those in
    `about` when given (other people's tests on the shared cluster write notifications too)."""
    out = []
    for child in sorted(change_nodes(zk) - before):
        doc = get_json(zk, f"/config/changes/{child}")
        if doc is not None and (about is None or doc["entity_path"] in about):
            out.append(doc["entity_path"])
    return out


def reassigning(zk: Any, topic: str) -> bool:
    """Our topic still has a partition in the trigger znode or AR/RR in its topic znode."""
    trig = get_json(zk, REASSIGN)
    if trig and any(e["topic"] == topic for e in trig.get("partitions", [])):
        return True
    doc = get_json(zk, f"/brokers/topics/{topic}")
    return bool(
        doc
        and (any(doc.get("adding_replicas", {}).values()) or any(doc.get("removing_replicas", {}).values()))
    )


def await_idle(zk: Any, timeout: float = 300) -> None:
    """Wait until no reassignment runs (someone else's test may be moving partitions right now)."""
    wait_until(
        lambda: not zk.exists(REASSIGN),
        timeout=timeout,
        interval=0.5,
        message="no /admin/reassign_partitions",
    )


def relevant_diff(
    before: Mapping[str, bytes],
    after: Mapping[str, bytes],
    topics: list[str],
    brokers: list[int] | None = None,
    *,
    topic_znodes: bool = True,
) -> dict[str, tuple[bytes | None, bytes | None]]:
    """Differences between two zk_dumps that this tool could have caused for `topics`: the trigger, our
    record, the topics' configs and znodes, broker configs, and change notifications naming them. Other
    engineers' tests on the shared cluster change unrelated znodes meanwhile; those are ignored."""
    brokers = brokers or [1, 2, 3]
    names = {f"topics/{t}" for t in topics} | {f"brokers/{b}" for b in brokers}
    out = {}
    for path in sorted(set(before) | set(after)):
        b, a = before.get(path), after.get(path)
        if a == b:
            continue
        ours = (
            path.startswith(REASSIGN)
            or path.startswith("/reassign_cli")
            or any(path == f"/config/topics/{t}" for t in topics)
            or (topic_znodes and any(path.startswith(f"/brokers/topics/{t}") for t in topics))
            or any(path == f"/config/brokers/{x}" for x in brokers)
        )
        if path.startswith("/config/changes/config_change_") and a is not None:
            with contextlib.suppress(ValueError):
                ours = json.loads(a).get("entity_path") in names
        if ours:
            out[path] = (b, a)
    return out


def produce(bootstrap: str, topic: str, partition: int, count: int, size: int = 1000) -> list[bytes]:
    """count records of `size` bytes into one partition (acks=all); returns the values."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=256 * 1024)
    values = [f"{topic}-{partition}-{i:08d}-".encode().ljust(size, b"x") for i in range(count)]
    try:
        futures = [producer.send(topic, value=v, partition=partition) for v in values]
        producer.flush(timeout=120)
        for f in futures:
            f.get(timeout=60)
    finally:
        producer.close(timeout=10)
    return values


LOCK_PATH = "/reassign_cli_tests/lock"


class Mover:
    """Runs the CLI for one test and cleans up after it: whatever the test left moving is sped up and
    waited for, then verified (which clears the throttles).

    While it lives it holds a ZooKeeper lock, so two pytest runs on the shared cluster (two engineers at
    once) do not interleave these tests: the trigger znode, the broker rates and our prior-values record
    are cluster-wide, and the tests check them exactly.
    """

    def __init__(self, run_cli: Callable[..., subprocess.CompletedProcess[str]], zk: Any, tmp: Path) -> None:
        self.run_cli = run_cli
        self.zk = zk
        self.tmp = tmp
        self.plans: list[tuple[Path, list[str]]] = []  # executed plans and their topics
        self.finally_do: list[Callable[[], None]] = []  # run after cleanup, before the lock is released
        self._lock = zk.Lock(LOCK_PATH, f"pid {os.getpid()} {tmp.name}")
        if not self._lock.acquire(timeout=900):
            raise AssertionError(f"could not get {LOCK_PATH} within 900 s")

    def cli(self, *args: str | os.PathLike[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return self.run_cli(*map(str, args), cwd=str(cwd or self.tmp))

    def plan(self, name: str, targets: Mapping[tuple[str, int], list[int]], **kw: Any) -> Path:
        return write_plan(self.tmp / name, targets, **kw)

    def execute(self, plan: Path, *args: str) -> subprocess.CompletedProcess[str]:
        try:
            topics = sorted({e["topic"] for e in json.loads(plan.read_text())["partitions"]})
        except (ValueError, KeyError, TypeError):
            topics = []  # a deliberately broken file: nothing to clean up
        if topics and not any(p == plan for p, _ in self.plans):
            self.plans.append((plan, topics))
        return self.cli("execute", "--reassignment-json-file", plan, *args)

    def verify(self, plan: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return self.cli("verify", "--reassignment-json-file", plan, *args)

    def wait_complete(self, plan: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Poll verify until it stops saying "in progress" (exit 4); returns the last verify."""
        last: list[subprocess.CompletedProcess[str]] = []

        def done() -> bool:
            r = self.verify(plan, "--preserve-throttles")
            last[:] = [r]
            return r.returncode != 4

        wait_until(
            done, timeout=timeout, interval=1, message=lambda: f"completion of {plan.name}: {last[0].stdout}"
        )
        return last[0]

    def cleanup(self) -> None:
        for plan, topics in self.plans:
            if any(reassigning(self.zk, t) for t in topics):
                # Speed it up (same file + --throttle only changes the rates), then wait.
                self.execute(plan, "--throttle", FAST)
                with contextlib.suppress(AssertionError):
                    wait_until(
                        lambda ts=topics: not any(reassigning(self.zk, t) for t in ts),
                        timeout=240,
                        interval=1,
                        message="cleanup: reassignment done",
                    )
            self.verify(plan)

    def release(self) -> None:
        with contextlib.suppress(Exception):
            self._lock.release()

    def close(self) -> None:
        try:
            self.cleanup()
            for action in self.finally_do:
                action()
        finally:
            self.release()


def fake_cluster(
    client: Any,
    brokers: Mapping[int, str | None],
    topics: Mapping[str, Mapping[str, Any]],
    isr: Mapping[tuple[str, int], list[int]] | None = None,
    trigger: Mapping[tuple[str, int], list[int]] | None = None,
) -> None:
    """Write Kafka-format znodes into an empty chroot (no controller acts on them): broker registrations
    (id -> rack), topic znodes ({"partitions": {p: [..]}, "adding": {...}, "removing": {...}}), partition
    state znodes (leader = first ISR member), and optionally /admin/reassign_partitions."""

    def put(path: str, doc: Any) -> None:
        client.create(path, json.dumps(doc, separators=(",", ":")).encode(), makepath=True)

    for b, rack in brokers.items():
        reg: dict[str, Any] = {
            "version": 5,
            "host": "127.0.0.1",
            "port": 9090 + b,
            "jmx_port": -1,
            "endpoints": [f"PLAINTEXT://127.0.0.1:{9090 + b}"],
            "timestamp": "1",
        }
        if rack:
            reg["rack"] = rack
        put(f"/brokers/ids/{b}", reg)
    client.ensure_path("/admin/delete_topics")
    client.ensure_path("/config/changes")
    for name, t in topics.items():
        parts = {str(p): r for p, r in t["partitions"].items()}
        put(
            f"/brokers/topics/{name}",
            {
                "version": 3,
                "partitions": parts,
                "adding_replicas": {str(p): r for p, r in t.get("adding", {}).items()},
                "removing_replicas": {str(p): r for p, r in t.get("removing", {}).items()},
            },
        )
        put(f"/config/topics/{name}", {"version": 1, "config": t.get("config", {})})
        for p, reps in t["partitions"].items():
            members = (isr or {}).get((name, p), reps)
            put(
                f"/brokers/topics/{name}/partitions/{p}/state",
                {
                    "controller_epoch": 1,
                    "leader": members[0] if members else -1,
                    "version": 1,
                    "leader_epoch": 0,
                    "isr": members,
                },
            )
    if trigger is not None:
        put(
            REASSIGN,
            {
                "version": 1,
                "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in trigger.items()],
            },
        )


def fenced_write(session: Any, updates: list[Any], record_fn: Any = None) -> tuple[list[Any], dict[str, Any]]:
    """One fenced throttle commit through reassign_cli's ZooKeeper code (config updates, and the record
    changed by record_fn if given): what the lost-answer and outage tests drive."""
    from reassign_cli.backends.zookeeper.configs import ConfigStore
    from reassign_cli.backends.zookeeper.fenced import FencedThrottles

    done = FencedThrottles(ConfigStore(session)).commit(
        lambda rec, _read: (updates, record_fn(rec) if record_fn else rec), "none", False, True
    )
    assert done is not None
    return done
