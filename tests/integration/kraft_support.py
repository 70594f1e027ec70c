"""Helpers for the admin-API tests (KRaft 3.9 and 4.x, and ZooKeeper-mode brokers): raw kafka-python calls to
set up and inspect a cluster, and an independent reading of our record topic. Nothing here uses
reassign_cli's own code, so what the tests compare against is not what they test."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import REPO, consume_records, run_cli, unique_name, wait_until
from tests.integration.reassign_support import produce, write_plan

RECORD_TOPIC = "__reassign_cli_throttles"
LR = "leader.replication.throttled.rate"
FR = "follower.replication.throttled.rate"
LDR = "replica.alter.log.dirs.io.max.bytes.per.second"
LREP = "leader.replication.throttled.replicas"
FREP = "follower.replication.throttled.replicas"
THROTTLE_KEYS = (LR, FR, LDR, LREP, FREP)
EMPTY = {"brokers": {}, "topics": {}}  # the record of prior values with nothing in it


@dataclass
class Admin:
    """One raw KafkaAdminClient on a cluster, and the topics a test made (deleted by `close`)."""

    bootstrap: str
    client: Any = None
    made: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from kafka.admin import KafkaAdminClient

        self.client = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=30000)

    def close(self) -> None:
        """Cancel what the test's topics still move (a failed test), then delete them."""
        from kafka import TopicPartition

        moving = [TopicPartition(t, p) for t, p in self.reassignments() if t in self.made]
        with contextlib.suppress(Exception):
            if moving:
                self.client.alter_partition_reassignments(dict.fromkeys(moving))
        if self.made:
            with contextlib.suppress(Exception):
                self.client.delete_topics(self.made)
        self.client.close()

    # -- topics ----------------------------------------------------------------------------------
    def make_topic(
        self, hint: str, assignment: dict[int, list[int]], messages: int = 0, size: int = 1000
    ) -> tuple[str, list[bytes]]:
        """A new topic with exactly `assignment`, led and fully in sync, `messages` records of `size` bytes
        in each partition; (name, every value in partition then offset order)."""
        topic = unique_name("k", hint)
        self.client.create_topics({topic: {"assignments": {p: list(r) for p, r in assignment.items()}}})
        self.made.append(topic)
        wait_until(
            lambda: (
                all(
                    leader == reps[0] and sorted(isr) == sorted(reps)
                    for p, (reps, leader, isr) in self.partitions(topic).items()
                )
                and len(self.partitions(topic)) == len(assignment)
            ),
            timeout=60,
            message=f"{topic} led by its preferred replicas with full ISRs",
            ignore=(Exception,),
        )
        values: list[bytes] = []
        for p in sorted(assignment):
            values += produce(self.bootstrap, topic, p, messages, size) if messages else []
        return topic, values

    def partitions(self, topic: str) -> dict[int, tuple[list[int], int, list[int]]]:
        """partition -> (replicas, leader, ISR) from Metadata."""
        meta = self.client.describe_topics([topic])[0]
        return {
            p["partition_index"]: (list(p["replica_nodes"]), p["leader_id"], list(p["isr_nodes"]))
            for p in meta["partitions"]
        }

    def sizes(self, topic: str, partition: int = 0) -> dict[int, int]:
        """broker -> the size of its current (not future) replica of the partition, from DescribeLogDirs."""
        out: dict[int, int] = {}
        for broker in (1, 2, 3):
            for answer in self.client.describe_log_dirs({topic: [partition]}, brokers=[broker]):
                for d in answer["log_dirs"]:
                    for t in d["topics"]:
                        for p in t["partitions"]:
                            if not p["is_future_key"]:
                                out[broker] = int(p["partition_size"])
        return out

    def reassignments(self) -> dict[tuple[str, int], dict[str, list[int]]]:
        return {(tp.topic, tp.partition): r for tp, r in self.client.list_partition_reassignments().items()}

    # -- configs ---------------------------------------------------------------------------------
    def configs(self, entity: str, name: str | int) -> dict[str, str]:
        """The entity's own dynamic config keys (what kafka-configs --describe lists for it)."""
        from kafka.admin import ConfigResource

        kind = {"brokers": "BROKER", "topics": "TOPIC"}[entity]
        answer = self.client.describe_configs([ConfigResource(kind, str(name))])
        own = {"brokers": "DYNAMIC_BROKER_CONFIG", "topics": "DYNAMIC_TOPIC_CONFIG"}[entity]
        return {
            k: v["value"] for k, v in answer[kind.lower()][str(name)].items() if v["config_source"] == own
        }

    def alter(self, entity: str, name: str | int, changes: Mapping[str, str | None]) -> None:
        """Set (value) or delete (None) keys, as an operator's kafka-configs would."""
        from kafka.admin import AlterConfigOp, ConfigResource

        kind = {"brokers": "BROKER", "topics": "TOPIC"}[entity]
        ops = {
            k: (AlterConfigOp.SET, v) if v is not None else (AlterConfigOp.DELETE, None)
            for k, v in changes.items()
        }
        result = self.client.alter_configs(
            [ConfigResource(kind, str(name), ops)], raise_on_unknown=False, incremental=True
        )
        assert result[kind.lower()][str(name)] == "OK", result

    def throttles(self, brokers: list[int], topics: list[str]) -> dict[str, dict[str, str]]:
        """Every throttle key on these brokers and topics: {"broker 1": {...}, "topic t": {...}}."""
        out = {f"broker {b}": self.configs("brokers", b) for b in brokers}
        out.update({f"topic {t}": self.configs("topics", t) for t in topics})
        return {k: {x: v for x, v in cfg.items() if x in THROTTLE_KEYS} for k, cfg in out.items()}

    def record_end(self) -> int:
        """The end offset of our record topic (0 when it does not exist)."""
        from kafka import KafkaConsumer, TopicPartition

        meta = self.client.describe_topics([RECORD_TOPIC])[0]
        if meta["error_code"]:
            return 0
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False)
        try:
            tp = TopicPartition(RECORD_TOPIC, 0)
            return int(consumer.end_offsets([tp])[tp])
        finally:
            consumer.close()


def record_messages(bootstrap: str) -> list[tuple[int, bytes]]:
    """(offset, value) of every message left in our record topic (a compaction removes a prefix)."""
    return [(offset, value) for _, offset, _, value in consume_records(bootstrap, RECORD_TOPIC, timeout=30)]


def replayed_record(messages: list[tuple[int, bytes]]) -> dict[str, Any]:
    """The record the log holds, read by the rules of docs/kraft.md, written out here independently. A write
    ends with a message holding "base" (its one message, or the commit after its chunks). Such a message
    with "v" 2 counts when no other write ended after its base (the offset of the last write end its writer
    had read) and, with "chunks": n, its chunks 0..n-1 came before it; one without "v" (the first format)
    counts when its base is the offset of the last write that counted. The log may start above offset 0
    (a compaction): the first write that counts must then have its base at or after the start - 1."""
    start = messages[0][0] if messages else 0
    last_end = last_counted = -1
    record: dict[str, Any] | None = {"brokers": {}, "topics": {}} if start == 0 else None
    chunks: dict[str, dict[int, str]] = {}
    for offset, value in messages:
        doc = json.loads(value)
        if "chunk" in doc:
            chunks.setdefault(doc["id"], {})[doc["chunk"]] = doc["part"]
            continue
        if doc.get("v") == 2:
            parts = chunks.get(doc["id"], {})
            whole = sorted(parts) == list(range(doc.get("chunks", 0)))
            counts = last_end <= doc["base"] and doc["base"] + 1 >= start and whole
            body = json.loads("".join(parts[i] for i in sorted(parts))) if "chunks" in doc else doc["record"]
        else:
            counts, body = record is not None and doc["base"] == last_counted, doc["record"]
        if counts:
            last_counted, record = offset, {"brokers": body["brokers"], "topics": body["topics"]}
        last_end, chunks = offset, {}
    assert record is not None, f"no write that counts after the start offset {start}"
    return record


# ------------------------------------------------------------------------------------------- the CLI


def cli(
    bootstrap: str,
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
    env: dict[str, str | None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """kafka-reassign ARGS through the admin API (KAFKA_REASSIGN_BOOTSTRAP; no ZooKeeper in the environment)."""
    return run_cli(*map(str, args), env={"KAFKA_REASSIGN_BOOTSTRAP": bootstrap, **(env or {})}, cwd=cwd)


def kafka_tool(bootstrap: str, *args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """Kafka 4.x's own kafka-reassign-partitions against `bootstrap`."""
    return subprocess.run(
        [
            str(REPO / "scripts" / "cluster"),
            "kafka-tool",
            "reassign-partitions",
            "--bootstrap-server",
            bootstrap,
            *map(str, args),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def any_dirs(text: str) -> str:
    """Kafka 4.x's tool prints each replica's current log dir in its current assignment; we print "any"."""
    return re.sub(r'"log_dirs":\[[^\]]*\]', lambda m: '"log_dirs":[' + _anys(m.group(0)) + "]", text)


def _anys(log_dirs: str) -> str:
    return ",".join('"any"' for _ in json.loads("{" + log_dirs + "}")["log_dirs"])


def plan(path: Path, targets: Mapping[tuple[str, int], list[int]], **kw: Any) -> Path:
    return write_plan(path, targets, **kw)


def replica_sizes(bootstrap: str, topic: str) -> dict[int, int]:
    """broker -> the size of its current replica of topic-0 (DescribeLogDirs, through kafka-python)."""
    with admin(bootstrap) as a:
        return a.sizes(topic)


@contextlib.contextmanager
def admin(bootstrap: str) -> Iterator[Admin]:
    a = Admin(bootstrap)
    try:
        yield a
    finally:
        a.close()


def eventually(get: Callable[[], Any], expected: Any, what: str, timeout: float = 30) -> None:
    """get() == expected, now or within `timeout`: each broker's metadata (replicas, leaders, configs)
    follows the controller's on its own, so a raw read right after a command may trail it a moment."""
    seen: list[Any] = []

    def same() -> bool:
        seen[:] = [get()]
        return bool(seen[0] == expected)

    wait_until(same, timeout=timeout, interval=0.2, message=lambda: f"{what}: {seen[0]!r} != {expected!r}")


def idle(a: Admin) -> None:
    wait_until(lambda: not a.reassignments(), timeout=300, interval=0.5, message="no reassignment running")
