"""What the KRaft fault tests need beside tests/faults/support.py: the quorum's active controller as Kafka's
own kafka-metadata-quorum tool reports it, a node's process (to pause or kill -9 it), and the end state every
recovery must reach, read with raw kafka-python calls (tests/integration/kraft_support.py: no reassign_cli
code)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from tests.clusters import ExtraCluster
from tests.helpers import consume_all, wait_until
from tests.integration.kraft_support import (
    EMPTY,
    THROTTLE_KEYS,
    Admin,
    eventually,
    record_messages,
    replayed_record,
)

RECORDS, SIZE = 1000, 10_000  # 10 MB in a moving partition
RATE = "700000"  # B/s: a move of RECORDS x SIZE takes about 15 s
FAST = "1000000000"
T = TypeVar("T")


def active_controller(kc: ExtraCluster) -> int:
    """The quorum's leader (the active controller), from Kafka's `kafka-metadata-quorum describe --status`."""
    java = os.environ.get("JAVA") or shutil.which("java") or "/usr/bin/java"
    r = subprocess.run(
        [
            java,
            "-cp",
            kc.env["KAFKA_TOOLS_CLASSPATH"],
            "org.apache.kafka.tools.MetadataQuorumCommand",
            "--bootstrap-server",
            kc.bootstrap,
            "describe",
            "--status",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    m = re.search(r"^LeaderId:\s+(\d+)$", r.stdout, re.M)
    assert r.returncode == 0 and m, r.stdout + r.stderr
    return int(m.group(1))


def node_pid(kc: ExtraCluster, node: int) -> int:
    return int((kc.directory / "pids" / f"broker-{node}.pid").read_text().strip())


@contextlib.contextmanager
def paused(kc: ExtraCluster, node: int) -> Iterator[None]:
    """with paused(kc, 1): ...  node 1's process frozen (SIGSTOP: a long GC pause, a hung VM), then resumed."""
    pid = node_pid(kc, node)
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def kill9_node(kc: ExtraCluster, node: int) -> None:
    """kill -9 of a node (broker and controller); `kc.start_broker(node)` starts it again."""
    kc.stopped.add(node)
    pid = node_pid(kc, node)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), timeout=30, message=f"node {node} gone")


def steady(ka: Admin, fn: Callable[[], T], what: str, timeout: float = 60) -> T:
    """fn() (a raw call through ka) once the cluster answers it: the test's own kafka-python client has the
    weaknesses the product works around (backends/admin/backend.py `_call`): it keeps sending controller
    requests to a node that went down, and a node just back may be unknown to its metadata for a moment."""
    from kafka.errors import KafkaError

    out: list[T] = []

    def once() -> bool:
        try:
            out[:] = [fn()]
            return True
        except KafkaError:
            ka.client._controller_id = None
            ka.client._client.cluster.request_update()
            raise

    wait_until(once, timeout=timeout, interval=0.5, message=what, ignore=(KafkaError,))
    return out[0]


def fenced(ka: Admin, node: int) -> bool:
    """The controller no longer counts `node` as a live broker (its session expired, or it shut down)."""
    brokers = steady(ka, lambda: ka.client.describe_cluster()["brokers"], "DescribeCluster")
    return all(b["is_fenced"] for b in brokers if b["broker_id"] == node)


def plan_topics(planned: Mapping[tuple[str, int], list[int]]) -> list[str]:
    return sorted({t for t, _ in planned})


def assert_clean(
    ka: Admin,
    kc: ExtraCluster,
    planned: Mapping[tuple[str, int], list[int]],
    produced: Mapping[str, list[bytes]],
    operator: Mapping[str, Mapping[str, str]],
) -> None:
    """The end state every documented recovery must reach: nothing reassigning (ListPartitionReassignments
    empty); on every broker and planned topic no throttle key but the operator's own, with their values
    (`operator`: {"broker 2": {key: value}}); our record holds nothing; every partition on its planned
    replicas; every record produced read back intact."""
    steady(ka, lambda: ka.reassignments() == {} or None, "nothing reassigning")
    expected = {f"broker {b}": dict(operator.get(f"broker {b}", {})) for b in kc.broker_ids}
    expected.update({f"topic {t}": dict(operator.get(f"topic {t}", {})) for t in plan_topics(planned)})
    eventually(
        lambda: steady(ka, lambda: ka.throttles(kc.broker_ids, plan_topics(planned)), "configs"),
        expected,
        "throttle keys",
    )
    assert not set().union(*(set(v) for v in expected.values())) - set(THROTTLE_KEYS)
    assert replayed_record(record_messages(kc.bootstrap)) == EMPTY
    for t in plan_topics(planned):
        want = {p: reps for (topic, p), reps in planned.items() if topic == t}
        eventually(lambda t=t, w=want: {p: ka.partitions(t)[p][0] for p in w}, want, f"replicas of {t}")
    for topic, values in produced.items():
        assert sorted(consume_all(kc.bootstrap, topic)) == sorted(values), topic
