"""Test helpers usable without fixtures (the fixtures in tests/conftest.py are built on these).

from tests.helpers import wait_until, zk_dump, consume_all, run_cli
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parent.parent
CLUSTER_SCRIPT = REPO / "scripts" / "cluster"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PYTHON = str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable

T = TypeVar("T")


def load_cluster_script() -> ModuleType:
    """scripts/_cluster.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("_cluster", REPO / "scripts" / "_cluster.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 60,
    interval: float = 0.2,
    message: str | Callable[[], str] = "condition",
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """Call predicate until it returns something truthy and return that; AssertionError after timeout.

    Exceptions of the types in `ignore` count as "not yet" (the last one is named in the failure).
    `message` may be a callable, evaluated only on failure (to show the state that was reached).
    """
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except ignore as e:
            last_exc = e
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            extra = f" (last error: {last_exc!r})" if last_exc is not None else ""
            raise AssertionError(f"timed out after {timeout:g}s waiting for {text}{extra}")
        time.sleep(interval)


def unique_name(prefix: str = "t", hint: str = "") -> str:
    """A topic/chroot-safe unique name, e.g. t-test_move_one-1a2b3c4d."""
    hint = re.sub(r"[^A-Za-z0-9._-]+", "_", hint).strip("_")[:60]
    return "-".join(p for p in (prefix, hint, uuid.uuid4().hex[:8]) if p)


def read_env_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            out[key] = " ".join(shlex.split(value))  # the writers quote as the shell does
    return out


def zk_dump(client: Any, roots: Iterable[str] = ("/admin", "/config", "/brokers/topics")) -> dict[str, bytes]:
    """Every znode under the roots (roots included when they exist) -> its data, for before/after
    "nothing was written" comparisons. Missing roots contribute nothing."""
    from kazoo.exceptions import NoNodeError

    out: dict[str, bytes] = {}

    def walk(path: str) -> None:
        try:
            data, _ = client.get(path)
            children = client.get_children(path)
        except NoNodeError:
            return
        out[path] = data or b""
        for child in sorted(children):
            walk(f"{path.rstrip('/')}/{child}")

    for root in roots:
        walk(root)
    return out


def consume_records(bootstrap: str, topic: str, timeout: float = 60) -> list[tuple[int, int, bytes, bytes]]:
    """Every record of topic as (partition, offset, key, value), read from the beginning to the end
    offsets taken at the start; manual assignment, no consumer group. Sorted by (partition, offset)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=30000,
    )
    try:
        parts = wait_until(
            lambda: consumer.partitions_for_topic(topic), timeout, message=f"metadata of topic {topic}"
        )
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        out: list[tuple[int, int, bytes, bytes]] = []

        def done() -> bool:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend((r.partition, r.offset, r.key, r.value) for r in records)
            return all(consumer.position(tp) >= end[tp] for tp in tps)

        wait_until(done, timeout, interval=0, message=f"reading {topic} to its end offsets {end}")
        return sorted(out)
    finally:
        consumer.close()


def consume_all(bootstrap: str, topic: str, timeout: float = 60) -> list[bytes]:
    """The values of every record of topic, ordered by (partition, offset)."""
    return [value for _, _, _, value in consume_records(bootstrap, topic, timeout)]


def run_cli(
    *args: str,
    zookeeper: str | None = None,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """`python -m reassign_cli ARGS` as a real subprocess (text mode, stdout and stderr captured apart).

    zookeeper sets KAFKA_REASSIGN_ZOOKEEPER; env entries override the inherited environment
    (a value of None removes the variable). KAFKA_REASSIGN_BOOTSTRAP and KAFKA_REASSIGN_COMMAND_CONFIG are
    removed from the inherited environment: pass them in env."""
    full = dict(os.environ)
    for name in ("KAFKA_REASSIGN_ZOOKEEPER", "KAFKA_REASSIGN_BOOTSTRAP", "KAFKA_REASSIGN_COMMAND_CONFIG"):
        full.pop(name, None)  # only what the test sets: the shell's own settings must not leak in
    if zookeeper is not None:
        full["KAFKA_REASSIGN_ZOOKEEPER"] = zookeeper
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    return subprocess.run(
        [PYTHON, "-m", "reassign_cli", *args],
        env=full,
        input=input,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def run_dropin(
    *args: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`kafka-reassign-partitions ARGS` (Kafka's syntax) as a real subprocess, with no KAFKA_REASSIGN_*
    variable: Kafka's tool reads none, so every connection option is on the command line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    return subprocess.run(
        [PYTHON, "-m", "reassign_cli.cli.dropin", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
