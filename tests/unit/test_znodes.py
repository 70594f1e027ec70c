"""Decoders and encoders of Kafka's znode JSON (KAFKA-SPEC §1)."""

from __future__ import annotations

import orjson
import pytest

from reassign_cli.core import znodes
from reassign_cli.core.model import Broker, PlanEntry
from reassign_cli.core.znodes import ZnodeFormatError
from reassign_cli.errors import ExitCode, InvalidInputError

# -- brokers ---------------------------------------------------------------------------------

BROKER_V5 = (
    b'{"features":{"metadata.version":{"min_version":1,"max_version":21}},'
    b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://127.0.0.1:19091"],'
    b'"jmx_port":-1,"port":19091,"host":"127.0.0.1","version":5,"rack":"r1","timestamp":"1729000000000"}'
)


def test_broker_v5_with_rack() -> None:
    assert znodes.decode_broker(1, BROKER_V5) == Broker(1, "r1")
    assert znodes.broker_endpoints(BROKER_V5) == ["PLAINTEXT://127.0.0.1:19091"]


def test_broker_v1_has_no_rack() -> None:
    data = b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}'
    assert znodes.decode_broker(7, data) == Broker(7, None)
    assert znodes.broker_endpoints(data) == ["PLAINTEXT://h:9092"]


@pytest.mark.parametrize("version", [2, 3, 4, 5])
def test_broker_rack_absent_or_null(version: int) -> None:
    absent = orjson.dumps({"version": version, "endpoints": ["PLAINTEXT://h:1"], "host": "h", "port": 1})
    null = orjson.dumps({"version": version, "endpoints": ["PLAINTEXT://h:1"], "rack": None})
    assert znodes.decode_broker(2, absent) == Broker(2, None)
    assert znodes.decode_broker(2, null) == Broker(2, None)


def test_broker_version_zero_rejected() -> None:
    with pytest.raises(ZnodeFormatError, match=r"/brokers/ids/3: unsupported broker registration version 0"):
        znodes.decode_broker(3, b'{"version":0,"host":"h","port":1}')


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        (b"", "is empty"),
        (None, "is empty"),
        (b"{nope", "not valid JSON"),
        (b"[1]", "expected a JSON object"),
        (b'{"host":"h"}', '"version" must be an integer'),
        (b'{"version":5,"rack":3}', '"rack" must be a string or null'),
    ],
)
def test_broker_malformed(data: bytes | None, msg: str) -> None:
    with pytest.raises(ZnodeFormatError, match=msg) as ei:
        znodes.decode_broker(1, data)
    assert ei.value.exit_code == ExitCode.ERROR
    assert "/brokers/ids/1" in str(ei.value)


# -- topics ----------------------------------------------------------------------------------


def test_topic_v1() -> None:
    t = znodes.decode_topic("foo", b'{"version":1,"partitions":{"1":[2,3],"0":[1,2]}}')
    assert t.name == "foo"
    assert t.replicas == {0: [1, 2], 1: [2, 3]}
    assert t.adding == {} and t.removing == {} and t.topic_id is None


def test_topic_v2_reassigning_keeps_only_nonempty() -> None:
    data = (
        b'{"version":2,"partitions":{"0":[4,5,1,2],"1":[2,3]},'
        b'"adding_replicas":{"0":[4,5],"1":[]},"removing_replicas":{"0":[1,2]}}'
    )
    t = znodes.decode_topic("foo", data)
    assert t.replicas == {0: [4, 5, 1, 2], 1: [2, 3]}
    assert t.adding == {0: [4, 5]}
    assert t.removing == {0: [1, 2]}
    assert t.is_reassigning(0) and not t.is_reassigning(1)
    assert t.target(0) == [4, 5] and t.origin(0) == [1, 2]


def test_topic_v3_with_topic_id_and_empty_maps() -> None:
    data = (
        b'{"partitions":{"0":[1,2,3]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","adding_replicas":{},'
        b'"removing_replicas":{},"version":3}'
    )
    t = znodes.decode_topic("t", data)
    assert t.replicas == {0: [1, 2, 3]}
    assert t.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert t.adding == {} and t.removing == {}


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        (b'{"version":3}', 'no "partitions" field'),
        (b'{"version":3,"partitions":[]}', '"partitions" must be an object'),
        (b'{"version":3,"partitions":{"x":[1]}}', "non-integer partition key 'x'"),
        (b'{"version":3,"partitions":{"0":[1,"2"]}}', r'partitions\["0"\] must be a list of integers'),
        (b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{"0":7}}', "adding_replicas"),
        (b'{"version":0,"partitions":{}}', "unsupported topic znode version 0"),
        (b'{"version":3,"partitions":{},"topic_id":5}', "topic_id"),
    ],
)
def test_topic_malformed(data: bytes, msg: str) -> None:
    with pytest.raises(ZnodeFormatError, match=msg) as ei:
        znodes.decode_topic("foo", data)
    assert "/brokers/topics/foo" in str(ei.value)


# -- partition state -------------------------------------------------------------------------


def test_partition_state() -> None:
    data = b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":4,"isr":[2,3]}'
    assert znodes.decode_partition_state("foo", 0, data) == znodes.PartitionState(2, [2, 3], 4)


def test_partition_state_no_leader() -> None:
    data = b'{"controller_epoch":1,"leader":-1,"version":1,"leader_epoch":9,"isr":[]}'
    st = znodes.decode_partition_state("foo", 3, data)
    assert st.leader == -1 and st.isr == []


def test_partition_state_malformed_names_path() -> None:
    with pytest.raises(ZnodeFormatError, match=r"/brokers/topics/foo/partitions/3/state: \"isr\""):
        znodes.decode_partition_state("foo", 3, b'{"leader":1,"isr":"1"}')


# -- /admin/reassign_partitions --------------------------------------------------------------


def test_reassignment_decode() -> None:
    data = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]},{"topic":"b","partition":"3","replicas":[3]}]}'
    assert znodes.decode_reassignment(data) == {("foo", 0): [1, 2], ("b", 3): [3]}
    assert znodes.reassignment_problem(data) is None


def test_reassignment_decode_malformed() -> None:
    with pytest.raises(ZnodeFormatError, match="partitions"):
        znodes.decode_reassignment(b'{"version":1}')
    with pytest.raises(ZnodeFormatError, match=r"partitions\[0\] needs"):
        znodes.decode_reassignment(b'{"version":1,"partitions":[{"topic":"a","replicas":[1]}]}')


def test_reassignment_problem_log_dirs() -> None:
    data = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1],"log_dirs":["any"]}]}'
    assert znodes.decode_reassignment(data) == {("foo", 0): [1]}
    assert znodes.reassignment_problem(data) == "partitions[0] has unknown field 'log_dirs'"
    assert "not valid JSON" in (znodes.reassignment_problem(b"{") or "")


def test_reassignment_encode_exact_and_never_log_dirs() -> None:
    entries = [PlanEntry("foo", 0, [1, 2], ["any", "/d"]), PlanEntry("bar", 1, [3])]
    assert znodes.encode_reassignment(entries) == (
        b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]},'
        b'{"topic":"bar","partition":1,"replicas":[3]}]}'
    )
    assert znodes.encode_reassignment_assignment({"foo": {1: [2], 0: [1, 2]}}) == (
        b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]},'
        b'{"topic":"foo","partition":1,"replicas":[2]}]}'
    )
    # round trip
    assert znodes.decode_reassignment(znodes.encode_reassignment(entries)) == {
        ("foo", 0): [1, 2],
        ("bar", 1): [3],
    }


# -- configs ---------------------------------------------------------------------------------


def test_entity_config_encode_decode() -> None:
    cfg = {"leader.replication.throttled.replicas": "0:1,0:2", "retention.ms": "1000"}
    data = znodes.encode_entity_config(cfg)
    assert data == (
        b'{"version":1,"config":{"leader.replication.throttled.replicas":"0:1,0:2","retention.ms":"1000"}}'
    )
    assert znodes.decode_entity_config("/config/topics/foo", data) == cfg
    assert znodes.encode_entity_config({}) == b'{"version":1,"config":{}}'


def test_entity_config_rejects_non_string_values() -> None:
    with pytest.raises(
        InvalidInputError, match=r"config value of follower\.replication\.throttled\.rate must be a string"
    ):
        znodes.encode_entity_config({"follower.replication.throttled.rate": 10000000})  # type: ignore[dict-item]


def test_entity_config_decode_edge_cases() -> None:
    assert znodes.decode_entity_config("/config/brokers/1", None) == {}
    assert znodes.decode_entity_config("/config/brokers/1", b"") == {}
    with pytest.raises(ZnodeFormatError, match="/config/brokers/1: config value of a must be a string"):
        znodes.decode_entity_config("/config/brokers/1", b'{"version":1,"config":{"a":1}}')


def test_config_change_notification() -> None:
    assert znodes.encode_config_change("topics", "foo") == b'{"version":2,"entity_path":"topics/foo"}'
    assert znodes.encode_config_change("brokers", 1) == b'{"version":2,"entity_path":"brokers/1"}'
    assert (
        znodes.encode_config_change("brokers", "<default>")
        == b'{"version":2,"entity_path":"brokers/<default>"}'
    )
    assert znodes.decode_config_change(b'{"version":2,"entity_path":"brokers/1"}') == ("brokers", "1")
    assert znodes.decode_config_change(b'{"version":1,"entity_type":"topics","entity_name":"x"}') == (
        "topics",
        "x",
    )
    with pytest.raises(InvalidInputError, match="unknown config entity type"):
        znodes.encode_config_change("topic", "foo")
    with pytest.raises(InvalidInputError, match="invalid config entity name"):
        znodes.encode_config_change("topics", "")


def test_paths() -> None:
    assert znodes.partition_state_path("foo", 3) == "/brokers/topics/foo/partitions/3/state"
    assert znodes.entity_config_path("brokers", 2) == "/config/brokers/2"
    assert znodes.broker_path(1) == "/brokers/ids/1"
