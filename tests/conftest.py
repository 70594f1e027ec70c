"""Shared fixtures: the real ZooKeeper + Kafka cluster (scripts/cluster) and helpers around it.

Fixtures
    cluster      (session) the running cluster: .zookeeper ("127.0.0.1:P/kafka"), .zk_hosts, .chroot,
                 .bootstrap, .broker_ids, .broker_ports, .directory, .stop_broker(n), .start_broker(n),
                 .broker_stopped(n) (context manager). Uses $CLUSTER_DIR/env if ZooKeeper answers,
                 else runs `scripts/cluster up` (and `down` at the end: under pytest-xdist, once every worker
                 ended). Fails (never skips) if it can't.
    zk           a started KazooClient rooted at the cluster chroot (function scope)
    zk_chroot    "127.0.0.1:P/t-<uuid>": a fresh empty chroot, deleted recursively afterwards
    make_topic   make_topic(assignment, messages=0, name=None, configs=None) -> topic name
    consume_all  consume_all(topic) -> list[bytes] (values, by partition then offset)
    run_cli      run_cli(*args, env=None, input=None, cwd=None) -> CompletedProcess (real subprocess,
                 KAFKA_REASSIGN_ZOOKEEPER set to the cluster's)
    zk_dump      zk_dump(client, roots=("/admin", "/config", "/brokers/topics")) -> {path: data}

Plain functions (no fixture needed): `from tests.helpers import wait_until, zk_dump, consume_all, run_cli`
(wait_until is also importable from tests.conftest).

Tests that use `cluster` (directly or through another fixture) and every test under tests/integration
are marked `integration` automatically.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests import helpers
from tests.clusters import ServerControl, kazoo_session, script, started_kazoo
from tests.helpers import REPO, read_env_file, unique_name, wait_until

# CI (CI=true, as .ci/run is called) draws the property tests' examples from a fixed seed, so a run is
# reproducible: the unequal-rack gaps hypothesis finds by chance (pinned in tests/unit/test_balance.py as
# expected failures) must not decide whether a submission lands. Elsewhere every run draws anew.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")

__all__ = ["Cluster", "wait_until"]


def cluster_dir() -> Path:
    return Path(os.environ.get("CLUSTER_DIR") or REPO / ".cluster")


def zk_answers(hosts: str, timeout: float = 3.0) -> bool:
    """ZooKeeper's `srvr` four-letter word on the first host."""
    host, _, port = hosts.split(",")[0].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.sendall(b"srvr")
            return s.recv(64).startswith(b"Zookeeper version")
    except OSError:
        return False


@dataclass
class Cluster(ServerControl):
    zookeeper: str  # connect string with chroot, e.g. 127.0.0.1:2181/kafka
    zk_hosts: str  # without chroot
    chroot: str
    bootstrap: str
    broker_ids: list[int]
    broker_ports: dict[int, int]
    directory: Path
    env: dict[str, str]
    stopped: set[int] = field(default_factory=set)

    @classmethod
    def from_env(cls, directory: Path, env: dict[str, str]) -> Cluster:
        zookeeper = env["KAFKA_REASSIGN_ZOOKEEPER"]
        hosts, sep, chroot = zookeeper.partition("/")
        ids = [int(x) for x in env.get("CLUSTER_BROKER_IDS", "1,2,3").split(",")]
        ports = [int(hp.rpartition(":")[2]) for hp in env["KAFKA_BOOTSTRAP"].split(",")]
        return cls(
            zookeeper=zookeeper,
            zk_hosts=hosts,
            chroot="/" + chroot if sep else "",
            bootstrap=env["KAFKA_BOOTSTRAP"],
            broker_ids=ids,
            broker_ports=dict(zip(ids, ports, strict=False)),
            directory=directory,
            env=env,
        )

    def bootstrap_for(self, broker_id: int) -> str:
        return f"127.0.0.1:{self.broker_ports[broker_id]}"

    def registered_brokers(self) -> list[int]:
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=self.zookeeper, timeout=10)
        zk.start(timeout=15)
        try:
            return sorted(int(i) for i in zk.get_children("/brokers/ids"))
        finally:
            zk.stop()
            zk.close()


# Under pytest-xdist each worker has its own session: the worker that started the cluster cannot know when
# the others are done with it (its `down` at its own end stopped the cluster under another worker's tests:
# reproduced with `-n 2 --dist loadfile tests/cli/test_snapshot.py tests/cli/test_generate.py` and no cluster
# up). So a worker leaves it running and names the controller (its parent) here; the controller stops it
# once every worker has ended (pytest_sessionfinish below).
XDIST_STARTED = "started-by-pytest-xdist"


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    directory = cluster_dir().resolve()
    env_file = directory / "env"
    started = False
    worker = bool(os.environ.get("PYTEST_XDIST_WORKER"))
    env = read_env_file(env_file) if env_file.exists() else {}
    if not (
        env.get("KAFKA_REASSIGN_ZOOKEEPER") and zk_answers(env["KAFKA_REASSIGN_ZOOKEEPER"].split("/")[0])
    ):
        r = script("up", directory=directory, keep_settings=True)
        if r.returncode != 0:
            pytest.fail(
                f"could not start the cluster (scripts/cluster up):\n{r.stderr[-4000:]}", pytrace=False
            )
        started = True
        env = read_env_file(env_file)
        if worker:
            (directory / XDIST_STARTED).write_text(str(os.getppid()))
    c = Cluster.from_env(directory, env)
    # Someone (another test run) may have a broker stopped for a moment: wait for all of them.
    wait_until(
        lambda: c.registered_brokers() == sorted(c.broker_ids),
        timeout=120,
        message=lambda: f"brokers {c.broker_ids} registered in {c.zookeeper}",
        ignore=(Exception,),
    )
    try:
        yield c
    finally:
        if started and not worker:
            script("down", directory=directory, keep_settings=True)
        else:
            for broker_id in sorted(c.stopped):  # never leave the shared cluster short of a broker
                script("start-broker", str(broker_id), directory=directory, keep_settings=True)


@pytest.fixture(autouse=True)
def no_rollback_file_in_the_cwd() -> Iterator[None]:
    """execute (and a rebalance tick) writes rollback-<time>.json into its working directory when no
    --rollback-file is given: a test runs such a command in its tmp_path (cwd=), never in the repo (a CI
    clone gathered a dozen at its root). A file a test leaves there is removed and fails the test."""
    before = set(Path.cwd().glob("rollback-*.json"))
    yield
    left = sorted(set(Path.cwd().glob("rollback-*.json")) - before)
    for f in left:
        f.unlink(missing_ok=True)
    assert not left, (
        f"the test wrote {[f.name for f in left]} into {Path.cwd()}: run the CLI with cwd=tmp_path"
    )


@pytest.fixture
def zk(cluster: Cluster) -> Iterator[Any]:
    """A started KazooClient on the cluster chroot."""
    with kazoo_session(cluster.zookeeper) as client:
        yield client


@pytest.fixture
def zk_chroot(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty chroot connect string on the cluster's ZooKeeper, deleted afterwards."""
    path = "/" + unique_name("t", request.node.name)
    root = started_kazoo(cluster.zk_hosts)
    try:
        root.create(path)
        yield f"{cluster.zk_hosts}{path}"
    finally:
        with contextlib.suppress(Exception):
            root.delete(path, recursive=True)
        root.stop()
        root.close()


@pytest.fixture
def zk_dump() -> Callable[..., dict[str, bytes]]:
    """zk_dump(client, roots=("/admin", "/config", "/brokers/topics")) -> {path: data}"""
    return helpers.zk_dump


def partitions_ready(client: Any, topic: str, assignment: dict[int, list[int]]) -> bool:
    """Every partition has a leader and its ISR holds all of its replicas (read from ZooKeeper)."""
    from kazoo.exceptions import NoNodeError

    for p, replicas in assignment.items():
        try:
            data, _ = client.get(f"/brokers/topics/{topic}/partitions/{p}/state")
        except NoNodeError:
            return False
        state = json.loads(data)
        if state.get("leader", -1) < 0 or set(state.get("isr", [])) != set(replicas):
            return False
    return True


@pytest.fixture
def make_topic(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """make_topic({0: [1, 2], 1: [2, 3]}, messages=10) -> a new topic with exactly that assignment,
    every partition led and fully in sync, holding `messages` records (key b"key-<i>", value
    b"<topic>-value-<i>", spread round-robin over the partitions, acks=all). Deleted after the test."""
    from kafka import KafkaAdminClient, KafkaProducer

    created: list[str] = []
    admin: list[Any] = []
    client = started_kazoo(cluster.zookeeper)

    def make(
        assignment: dict[int, list[int]],
        messages: int = 0,
        name: str | None = None,
        configs: dict[str, str] | None = None,
    ) -> str:
        topic = name or unique_name("t", request.node.name)
        if sorted(assignment) != list(range(len(assignment))):
            raise ValueError(f"partitions must be 0..n-1, got {sorted(assignment)}")
        # A concurrent run may have a broker stopped for a moment (stop_broker): wait for ours.
        wanted = {b for r in assignment.values() for b in r}
        wait_until(
            lambda: wanted <= {int(i) for i in client.get_children("/brokers/ids")},
            timeout=60,
            message=f"brokers {sorted(wanted)} registered",
        )
        if not admin:
            admin.append(KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000))
        spec = {
            "assignments": {p: list(r) for p, r in assignment.items()},
            "configs": {k: str(v) for k, v in (configs or {}).items()},
        }
        admin[0].create_topics({topic: spec}, timeout_ms=30000)
        created.append(topic)
        wait_until(
            lambda: partitions_ready(client, topic, assignment),
            timeout=60,
            message=f"topic {topic}: every partition led with a full ISR",
        )
        if messages:
            producer = KafkaProducer(
                bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=5, request_timeout_ms=30000
            )
            try:
                n = len(assignment)
                futures = [
                    producer.send(
                        topic, key=f"key-{i}".encode(), value=f"{topic}-value-{i}".encode(), partition=i % n
                    )
                    for i in range(messages)
                ]
                producer.flush(timeout=60)
                for f in futures:
                    f.get(timeout=60)
            finally:
                producer.close(timeout=10)
        return topic

    try:
        yield make
    finally:
        try:
            if created and admin:
                with contextlib.suppress(Exception):
                    admin[0].delete_topics(created, timeout_ms=30000)
                _deleted(cluster.zookeeper, created)
        finally:
            for a in admin:
                with contextlib.suppress(Exception):
                    a.close()
            client.stop()
            client.close()


def _deleted(zookeeper: str, topics: list[str]) -> None:
    """Wait until the controller has deleted `topics`. A topic left behind trips later tests' health checks
    (CI run ci14: a min.insync.replicas=3 topic of test_pacing_faults, its DeleteTopics lost, named first in
    test_step_faults' hold line), so a request that did not land is made again through ZooKeeper's own
    marker (/admin/delete_topics/<topic>, what the controller watches), and a topic still there after 120 s
    fails this test's teardown rather than a later test. It reads through a session of its own: the
    fixture's may have expired while the test had ZooKeeper stopped (CI stop 36: test_4_zookeeper_down_...)."""
    from kazoo.exceptions import NodeExistsError

    def gone() -> bool:
        left = [t for t in topics if client.exists(f"/brokers/topics/{t}")]
        for t in left:
            if not client.exists(f"/admin/delete_topics/{t}"):
                with contextlib.suppress(NodeExistsError):
                    client.create(f"/admin/delete_topics/{t}", makepath=True)
        return not left

    with kazoo_session(zookeeper) as client:
        wait_until(gone, timeout=120, interval=0.5, message=f"topics {topics} deleted by the controller")


@pytest.fixture
def consume_all(cluster: Cluster) -> Callable[..., list[bytes]]:
    """consume_all(topic, timeout=60) -> every value in topic (by partition, then offset)."""

    def consume(topic: str, timeout: float = 60) -> list[bytes]:
        return helpers.consume_all(cluster.bootstrap, topic, timeout)

    return consume


@pytest.fixture
def run_cli(cluster: Cluster) -> Callable[..., subprocess.CompletedProcess[str]]:
    """run_cli("verify", "--reassignment-json-file", f) -> CompletedProcess (text; stdout/stderr apart)
    with KAFKA_REASSIGN_ZOOKEEPER set to the cluster's (override or remove it through env=)."""

    def run(
        *args: str,
        env: dict[str, str | None] | None = None,
        input: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = 600,
    ) -> subprocess.CompletedProcess[str]:
        return helpers.run_cli(
            *map(str, args), zookeeper=cluster.zookeeper, env=env, input=input, cwd=cwd, timeout=timeout
        )

    return run


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration_dir = REPO / "tests" / "integration"
    for item in items:
        uses_cluster = "cluster" in getattr(item, "fixturenames", ())
        if uses_cluster or integration_dir in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
    _select_half(config, items, os.environ.get("REASSIGN_TEST_HALF", ""))


def uses_shared_cluster(item: pytest.Item) -> bool:
    """Whether `item` needs the shared cluster: this file's `cluster` fixture (tests/faults and tests/docker
    define a `cluster` of their own, on clusters of their own)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.get("cluster") if info is not None else None
    return bool(defs) and defs[-1].baseid in ("", "tests")  # tests/conftest.py, seen from the rootdir


def _in_shared_half(item: pytest.Item) -> bool:
    """The shared cluster's tests, and to even out the halves' times: tests/spark (no Kafka cluster) and the
    fault suite's ZooKeeper-mode tests (on its own `$CLUSTER_DIR-faults`; its KRaft tests, on `kc`, stay in
    the private half)."""
    parents = Path(str(item.fspath)).parents
    if (REPO / "tests" / "faults") in parents:
        return "kc" not in getattr(item, "fixturenames", ())
    return uses_shared_cluster(item) or (REPO / "tests" / "spark") in parents


def _select_half(config: pytest.Config, items: list[pytest.Item], half: str) -> None:
    """REASSIGN_TEST_HALF=shared keeps the tests on the shared cluster (and tests/spark), =private the others
    (their own clusters, docker): scripts/test runs the two halves at once, each in its own pytest, since both
    wait on clusters far more than they compute. The private half runs with CLUSTER_DIR=$CLUSTER_DIR-p so the
    clusters it derives from it never meet the shared half's (which starts its own KRaft cluster for the two
    tests that use both)."""
    if not half:
        return
    if half not in ("shared", "private"):
        raise pytest.UsageError(f"REASSIGN_TEST_HALF={half!r}: expected shared or private")
    keep = [i for i in items if _in_shared_half(i) == (half == "shared")]
    dropped = [i for i in items if _in_shared_half(i) != (half == "shared")]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


MARKERS = {
    "integration": "needs the real ZooKeeper + Kafka cluster (scripts/cluster)",
    "spark": "needs pyspark and Java",
    "spark_cluster": "needs a standalone Spark master + worker (scripts/spark-cluster)",
    "slow": "takes more than a few seconds",
    "docker": "the compose cluster (scripts/docker; runs only with REASSIGN_DOCKER_TESTS=1)",
}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The xdist controller stops the cluster one of its workers started (see XDIST_STARTED)."""
    if hasattr(session.config, "workerinput"):
        return
    directory = cluster_dir().resolve()
    mark = directory / XDIST_STARTED
    try:
        owner = int(mark.read_text())
    except (OSError, ValueError):
        return
    if owner == os.getpid():
        mark.unlink(missing_ok=True)
        script("down", directory=directory, keep_settings=True)


def pytest_configure(config: pytest.Config) -> None:
    # Declared in pyproject.toml; registered here too for runs whose rootdir is elsewhere.
    declared = {str(line).split(":")[0].strip() for line in config.getini("markers")}
    for name, text in MARKERS.items():
        if name not in declared:
            config.addinivalue_line("markers", f"{name}: {text}")
    # kafka-python 3.0 loads its protocol schemas through deprecated importlib.resources calls.
    config.addinivalue_line("filterwarnings", "ignore:read_text is deprecated:DeprecationWarning")
    config.addinivalue_line("filterwarnings", "ignore:open_text is deprecated:DeprecationWarning")


# ======================================================================= extra clusters (scripts/cluster)
# One block, kept apart from the fixtures above: the secure and KRaft clusters (session scope, started
# on first use, each in its own state dir derived from $CLUSTER_DIR, stopped at the end of the session,
# never skipped: a cluster that cannot start fails the tests that want it), and ZooKeeper stop/start on
# the main cluster. Helpers and raw clients: tests/clusters.py.

from tests import clusters as _clusters  # noqa: E402


@pytest.fixture(scope="session")
def secure_cluster() -> Iterator[_clusters.ExtraCluster]:
    """ZooKeeper with SASL DIGEST-MD5 on a TLS-only port, brokers with zookeeper.set.acl=true
    ($CLUSTER_DIR-secure). .zookeeper, .jaas_file, .tls_config_file, .env, .kazoo(authenticated=...),
    .bootstrap, .broker_ids, .stop_broker(n)/.start_broker(n), .zookeeper_stopped(), ..."""
    c = _clusters.start_extra(Path(f"{cluster_dir().resolve()}-secure"), "--secure")
    try:
        yield c
    finally:
        _clusters.stop_extra(c)


@pytest.fixture(scope="session")
def kraft_cluster() -> Iterator[Callable[..., _clusters.ExtraCluster]]:
    """kraft_cluster(version=newest 4.x) -> a KRaft cluster of that Kafka version ($CLUSTER_DIR-kraft-V):
    three combined broker+controller nodes 1-3, racks r1-r3. Started on the first call per version."""
    started: dict[str, _clusters.ExtraCluster] = {}
    failed: dict[str, str] = {}

    def get(version: str = _clusters.KAFKA4_VERSION) -> _clusters.ExtraCluster:
        if version in failed:  # one attempt per session
            pytest.fail(failed[version], pytrace=False)
        if version not in started:
            directory = Path(f"{cluster_dir().resolve()}-kraft-{version}")
            try:
                started[version] = _clusters.start_extra(directory, "--kraft", "--kafka-version", version)
            except pytest.fail.Exception as e:
                failed[version] = str(e)
                raise
        return started[version]

    try:
        yield get
    finally:
        errors = []
        for c in started.values():  # every cluster is stopped even if one `down` fails
            try:
                _clusters.stop_extra(c)
            except AssertionError as e:
                errors.append(str(e))
        assert not errors, "\n".join(errors)
