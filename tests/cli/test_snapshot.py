"""`kafka-reassign snapshot` and zookeeper/read.py against the real ZooKeeper (shared cluster and fresh chroots)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from reassign_cli.backends.zookeeper.read import read_state
from reassign_cli.backends.zookeeper.session import ZkOptions, ZkSession, open_session
from reassign_cli.core.model import Broker
from reassign_cli.errors import OperationalError
from tests.clusters import kazoo_session

RunCli = Callable[..., Any]


def broker_v5(broker_id: int, rack: str | None) -> bytes:
    doc: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [f"PLAINTEXT://127.0.0.1:{9090 + broker_id}"],
        "jmx_port": -1,
        "port": 9090 + broker_id,
        "host": "127.0.0.1",
        "version": 5,
        "timestamp": "1729000000000",
    }
    if rack is not None:
        doc["rack"] = rack
    return orjson.dumps(doc)


def state_znode(leader: int, isr: list[int]) -> bytes:
    return orjson.dumps(
        {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 3, "isr": isr}
    )


def fill_synthetic(connect_string: str) -> None:
    """A fake cluster (no real brokers): v1, v2 and v3 topic znodes, a v1 broker (no rack field), a rack
    given as null, a reassignment in flight, a topic queued for deletion."""
    with kazoo_session(connect_string) as zk:
        for path in ("/brokers/ids", "/brokers/topics", "/admin/delete_topics"):
            zk.ensure_path(path)
        zk.create("/brokers/ids/1", broker_v5(1, "r1"))
        zk.create("/brokers/ids/2", b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}')
        zk.create("/brokers/ids/10", b'{"version":4,"endpoints":["PLAINTEXT://h:1"],"rack":null}')
        zk.create("/brokers/topics/v1", b'{"version":1,"partitions":{"1":[2,1],"0":[1,2]}}')
        zk.create(
            "/brokers/topics/v2",
            b'{"version":2,"partitions":{"0":[10,1,2]},"adding_replicas":{"0":[10]},'
            b'"removing_replicas":{"0":[2]}}',
        )
        zk.create(
            "/brokers/topics/v3",
            b'{"partitions":{"0":[1]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","adding_replicas":{},'
            b'"removing_replicas":{},"version":3}',
        )
        zk.create("/brokers/topics/v1/partitions/0/state", state_znode(1, [1, 2]), makepath=True)
        zk.create("/brokers/topics/v2/partitions/0/state", state_znode(1, [1, 2]), makepath=True)
        zk.create("/admin/delete_topics/v3")
        zk.create(
            "/admin/reassign_partitions",
            b'{"version":1,"partitions":[{"topic":"v2","partition":0,"replicas":[10,1]}]}',
        )


SYNTHETIC_SNAPSHOT = {
    "version": 1,
    "brokers": [{"id": 1, "rack": "r1"}, {"id": 2}, {"id": 10}],
    "deleting": ["v3"],
    "reassignment": [{"topic": "v2", "partition": 0, "replicas": [10, 1]}],
    "topics": [
        {
            "topic": "v1",
            "partitions": [
                {"partition": 0, "replicas": [1, 2], "isr": [1, 2], "leader": 1},
                {"partition": 1, "replicas": [2, 1]},
            ],
        },
        {
            "topic": "v2",
            "partitions": [
                {
                    "partition": 0,
                    "replicas": [10, 1, 2],
                    "isr": [1, 2],
                    "leader": 1,
                    "adding_replicas": [10],
                    "removing_replicas": [2],
                }
            ],
        },
        {
            "topic": "v3",
            "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ",
            "partitions": [{"partition": 0, "replicas": [1]}],
        },
    ],
}


def test_snapshot_of_synthetic_chroot_exact(zk_chroot: str, run_cli: RunCli, tmp_path: Path) -> None:
    fill_synthetic(zk_chroot)
    out = tmp_path / "snap.json"
    r = run_cli("snapshot", "--zookeeper", zk_chroot, "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert "Wrote" in r.stderr and "3 brokers, 3 topics, 4 partitions" in r.stderr
    assert out.read_bytes() == orjson.dumps(SYNTHETIC_SNAPSHOT) + b"\n"
    # stdout mode gives the same bytes; --topic limits the topics (brokers etc. stay)
    r2 = run_cli("snapshot", "--zookeeper", zk_chroot, "-q")
    assert r2.returncode == 0 and r2.stdout == out.read_text() and r2.stderr == ""
    r3 = run_cli("snapshot", "--zookeeper", zk_chroot, "--topic", "v1", "-o", "-")
    doc = orjson.loads(r3.stdout)
    assert [t["topic"] for t in doc["topics"]] == ["v1"]
    assert doc["brokers"] == SYNTHETIC_SNAPSHOT["brokers"]


def test_snapshot_of_a_missing_topic_is_an_input_error(
    zk_chroot: str, cluster: Any, run_cli: RunCli, tmp_path: Path
) -> None:
    """`--topic nope` exits 3 with generate's message (issue 30 item 11), through ZooKeeper and through the
    admin API, and writes nothing."""
    fill_synthetic(zk_chroot)
    out = tmp_path / "snap.json"
    r = run_cli("snapshot", "--zookeeper", zk_chroot, "--topic", "v1", "--topic", "nope", "-o", out)
    assert (r.returncode, r.stdout, r.stderr) == (3, "", "Error: Topic nope not found.\n")
    r = run_cli(
        "snapshot",
        "--bootstrap-server",
        cluster.bootstrap,
        "--topic",
        "nope",
        "--topic",
        "nope2",
        "-o",
        out,
        env={"KAFKA_REASSIGN_ZOOKEEPER": None},
    )
    assert (r.returncode, r.stdout, r.stderr) == (3, "", "Error: Topics not found: nope,nope2\n")
    assert not out.exists()


def test_snapshot_jsonl_of_synthetic_chroot(zk_chroot: str, run_cli: RunCli, tmp_path: Path) -> None:
    """JSON lines by the .jsonl name or by --jsonl (to a file or stdout): the header is the document's
    fields but "topics", "format" first; then each topic entry on its own line, in name order."""
    fill_synthetic(zk_chroot)
    header = {"format": "jsonl", **{k: v for k, v in SYNTHETIC_SNAPSHOT.items() if k != "topics"}}
    topics: Any = SYNTHETIC_SNAPSHOT["topics"]
    expected = b"".join(orjson.dumps(x) + b"\n" for x in [header, *topics])
    assert expected.count(b"\n") == 4 and expected.startswith(b'{"format":"jsonl","version":1,"brokers":[')
    by_name = tmp_path / "s.jsonl"
    r = run_cli("snapshot", "--zookeeper", zk_chroot, "-o", by_name)
    assert r.returncode == 0, r.stderr
    assert by_name.read_bytes() == expected
    by_flag = tmp_path / "s.data"
    r = run_cli("snapshot", "--zookeeper", zk_chroot, "--jsonl", "-o", by_flag, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert by_flag.read_bytes() == expected
    assert orjson.loads(r.stdout) == {
        "file": str(by_flag),
        "bytes": len(expected),
        "brokers": 3,
        "topics": 3,
        "partitions": 4,
    }
    r = run_cli("snapshot", "--zookeeper", zk_chroot, "--jsonl", "-q")
    assert (r.returncode, r.stdout, r.stderr) == (0, expected.decode(), "")
    # generate plans the same from either layout
    document = tmp_path / "s.json"
    assert run_cli("snapshot", "--zookeeper", zk_chroot, "-o", document).returncode == 0
    plans = [
        run_cli(
            "generate",
            "--snapshot",
            str(f),
            "--topic",
            "v1",
            "--topic",
            "v2",
            "--seed",
            "3",
            "--disable-rack-aware",
        )
        for f in (document, by_name)
    ]
    assert plans[0].returncode == 0, plans[0].stderr
    assert (plans[1].returncode, plans[1].stdout, plans[1].stderr) == (0, plans[0].stdout, plans[0].stderr)


def test_snapshot_json_format_reports_counts(zk_chroot: str, run_cli: RunCli, tmp_path: Path) -> None:
    fill_synthetic(zk_chroot)
    out = tmp_path / "s.json"
    r = run_cli("snapshot", "--zookeeper", zk_chroot, "-o", out, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = orjson.loads(r.stdout)
    assert doc == {"file": str(out), "bytes": out.stat().st_size, "brokers": 3, "topics": 3, "partitions": 4}


def test_snapshot_of_live_cluster(make_topic: Callable[..., str], run_cli: RunCli, tmp_path: Path) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1]})
    out = tmp_path / "live.json"
    r = run_cli("snapshot", "-o", out)
    assert r.returncode == 0, r.stderr
    doc = orjson.loads(out.read_bytes())
    assert doc["version"] == 1
    assert doc["brokers"] == [{"id": 1, "rack": "r1"}, {"id": 2, "rack": "r2"}, {"id": 3, "rack": "r3"}]
    (t,) = [t for t in doc["topics"] if t["topic"] == topic]
    assert isinstance(t["topic_id"], str) and t["topic_id"]
    assert [(p["partition"], p["replicas"]) for p in t["partitions"]] == [
        (0, [1, 2]),
        (1, [2, 3]),
        (2, [3, 1]),
    ]
    for p in t["partitions"]:
        assert sorted(p["isr"]) == sorted(p["replicas"])  # make_topic waits for a full ISR
        assert p["leader"] in p["replicas"]
        assert "adding_replicas" not in p and "removing_replicas" not in p
    names = [t["topic"] for t in doc["topics"]]
    assert names == sorted(names)


def test_read_state_window_and_filter(zk_chroot: str) -> None:
    """Tiny windows (many refills) give the same state as one big wave; named topics only; missing ones absent."""
    fill_synthetic(zk_chroot)
    with open_session(ZkOptions(zk_chroot)) as session:
        big = read_state(session, partition_state=True)
        singles = read_state(session, partition_state=True, batch=1, window=1)  # plain get_async path
        small = read_state(session, partition_state=True, batch=2, window=1)  # multiReads of 2
        some = read_state(session, topics=["v2", "nope", "a/b", ".."])
    assert big == singles == small
    assert big.brokers == [Broker(1, "r1"), Broker(2, None), Broker(10, None)]
    assert big.deleting == frozenset({"v3"})
    assert big.reassignment == {("v2", 0): [10, 1]}
    assert big.topics["v1"].isr == {0: [1, 2]} and big.topics["v1"].leader == {0: 1}
    assert big.topics["v2"].target(0) == [10, 1]
    assert set(some.topics) == {"v2"} and some.topics["v2"].isr == {}


def test_read_state_unparseable_reassignment_reads_as_empty(zk_chroot: str) -> None:
    fill_synthetic(zk_chroot)
    with kazoo_session(zk_chroot) as zk:
        zk.set("/admin/reassign_partitions", b"not json")
    with open_session(ZkOptions(zk_chroot)) as session:
        assert read_state(session).reassignment == {}


# -- error paths -------------------------------------------------------------------------------


def test_unreachable_zookeeper(run_cli: RunCli, tmp_path: Path) -> None:
    r = run_cli("snapshot", "--zookeeper", "127.0.0.1:1", "--zk-timeout", "1", "-o", tmp_path / "x.json")
    assert r.returncode == 1
    assert r.stderr.startswith("Error: cannot connect to ZooKeeper at 127.0.0.1:1 within 1s\n")
    assert not (tmp_path / "x.json").exists()


def test_missing_chroot(cluster: Any, run_cli: RunCli) -> None:
    r = run_cli("snapshot", "--zookeeper", f"{cluster.zk_hosts}/no-such-chroot-h3")
    assert r.returncode == 1
    assert r.stderr.startswith("Error: ZooKeeper chroot /no-such-chroot-h3 does not exist")
    assert r.stdout == ""


def test_chroot_without_brokers_ids(zk_chroot: str, run_cli: RunCli) -> None:
    r = run_cli("snapshot", "--zookeeper", zk_chroot)
    assert r.returncode == 1
    chroot = "/" + zk_chroot.split("/", 1)[1]
    first = r.stderr.splitlines()[0]
    assert first == (
        f"Error: ZooKeeper has no /brokers/ids (chroot {chroot}): this is not a Kafka cluster's ZooKeeper root"
    )


def test_malformed_topic_znode_is_named(zk_chroot: str, run_cli: RunCli) -> None:
    fill_synthetic(zk_chroot)
    with kazoo_session(zk_chroot) as zk:
        zk.create("/brokers/topics/bad", b'{"version":3,"partitions":{"x":[1]}}')
    r = run_cli("snapshot", "--zookeeper", zk_chroot)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "Error: znode /brokers/topics/bad: \"partitions\" has a non-integer partition key 'x'"
    ]


def test_missing_zookeeper_option(run_cli: RunCli) -> None:
    r = run_cli("snapshot", env={"KAFKA_REASSIGN_ZOOKEEPER": None})
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "Error: --zookeeper or --bootstrap-server is required "
        "(or set KAFKA_REASSIGN_ZOOKEEPER or KAFKA_REASSIGN_BOOTSTRAP)"
    ]


def test_unwritable_output(zk_chroot: str, run_cli: RunCli, tmp_path: Path) -> None:
    fill_synthetic(zk_chroot)
    target = tmp_path / "no-dir" / "s.json"
    r = run_cli("snapshot", "--zookeeper", zk_chroot, "-o", target)
    assert r.returncode == 1
    assert r.stderr.startswith(f"Error: cannot write {target}: ")


class BrokenMultiRead:
    """A kazoo client whose multiRead fails with a connection loss: not "unsupported"."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _call(self, request: Any, async_object: Any) -> None:
        from kazoo.exceptions import ConnectionLoss

        if request.type == 22:
            async_object.set_exception(ConnectionLoss())
            return
        self._client._call(request, async_object)


def test_first_multiread_failing_otherwise_is_that_error(zk_chroot: str) -> None:
    fill_synthetic(zk_chroot)
    with open_session(ZkOptions(zk_chroot)) as session, pytest.raises(OperationalError) as e:
        read_state(ZkSession(BrokenMultiRead(session.client), session.options), retry_for=1)
    # Not a silent fallback to single reads (which would have succeeded): the failure, retried, then named.
    assert str(e.value) == (
        "lost the connection to ZooKeeper and could not get it back within 1s "
        "(reading from ZooKeeper failed: ConnectionLoss)"
    )


class NoMultiRead:
    """A kazoo client whose server "does not know" multiRead (as ZooKeeper < 3.6): every request with
    OpCode 22 fails with UnimplementedError; everything else goes to the real client."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _call(self, request: Any, async_object: Any) -> None:
        from kazoo.exceptions import UnimplementedError

        if request.type == 22:
            self.refused += 1
            async_object.set_exception(UnimplementedError())
            return
        self._client._call(request, async_object)


def test_read_state_falls_back_without_multiread(zk_chroot: str) -> None:
    fill_synthetic(zk_chroot)
    with open_session(ZkOptions(zk_chroot)) as session:
        expected = read_state(session, partition_state=True)
        proxy = NoMultiRead(session.client)
        got = read_state(ZkSession(proxy, session.options), partition_state=True)
    assert proxy.refused >= 3  # one per wave, then single requests
    assert got == expected


@pytest.mark.parametrize(("batch", "window"), [(1, 5), (7, 2), (500, 8)])
def test_read_state_many_topics_pipelined(zk_chroot: str, batch: int, window: int) -> None:
    """200 topics x 3 partitions read through small windows: every partition's state lands on its topic."""
    with kazoo_session(zk_chroot) as zk:
        zk.ensure_path("/brokers/ids")
        zk.create("/brokers/ids/1", broker_v5(1, None))
        ops = []
        for i in range(200):
            ops.append(
                zk.create_async(
                    f"/brokers/topics/m{i:03d}",
                    orjson.dumps({"version": 3, "partitions": {str(p): [1] for p in range(3)}}),
                    makepath=True,
                )
            )
        for op in ops:
            op.get(timeout=30)
        ops = [
            zk.create_async(
                f"/brokers/topics/m{i:03d}/partitions/{p}/state", state_znode(1, [1, i, p]), makepath=True
            )
            for i in range(200)
            for p in range(3)
        ]
        for op in ops:
            op.get(timeout=30)
    with open_session(ZkOptions(zk_chroot)) as session:
        st = read_state(session, partition_state=True, batch=batch, window=window)
    assert len(st.topics) == 200
    for i in range(200):
        t = st.topics[f"m{i:03d}"]
        assert t.isr == {p: [1, i, p] for p in range(3)}
