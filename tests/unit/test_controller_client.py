"""The KRaft controller client of --bootstrap-controller (backends/admin/controller.py) with a scripted
connection: which address each request goes to, and the IncrementalAlterConfigs bytes (worked out by hand
from the request's v0 layout in Kafka's IncrementalAlterConfigsRequest.json)."""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any

import pytest

from reassign_cli.backends.admin.backend import _blind_change
from reassign_cli.backends.admin.controller import ControllerClient
from reassign_cli.core import throttle as th
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.errors import OperationalError

LR, FR, LD = th.BROKER_KEYS


def _described(controller_id: int, nodes: dict[int, int]) -> Any:
    brokers = [SimpleNamespace(broker_id=i, host="h", port=p) for i, p in nodes.items()]
    return SimpleNamespace(error_code=0, error_message=None, controller_id=controller_id, brokers=brokers)


def _altered(code: int = 0, message: str | None = None) -> Any:
    return SimpleNamespace(responses=[SimpleNamespace(error_code=code, error_message=message)])


class Script:
    """Answers by (address, request name) from a list of steps; records each request sent."""

    def __init__(self, steps: list[tuple[str, str, Any]]) -> None:
        self.steps = steps
        self.sent: list[tuple[str, Any]] = []

    def __call__(self, address: str, request: Any) -> Any:
        self.sent.append((address, request))
        want_address, want_name, answer = self.steps.pop(0)
        assert (address, type(request).__name__) == (want_address, want_name)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _client(script: Script) -> ControllerClient:
    return ControllerClient(AdminOptions("h:9101,h:9102"), send=script)


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def test_alter_broker_goes_to_the_active_controller_past_a_down_address() -> None:
    script = Script(
        [
            ("h:9101", "DescribeClusterRequest", ConnectionRefusedError("down")),
            ("h:9102", "DescribeClusterRequest", _described(3, {2: 9102, 3: 9103})),
            ("h:9103", "IncrementalAlterConfigsRequest", _altered()),
        ]
    )
    _client(script).alter_broker(1, {LR: "4242424", FR: None})
    assert not script.steps
    described = script.sent[1][1]
    assert described.endpoint_type == 2  # the controllers (KIP-919)
    request = script.sent[2][1]
    # v0: resources [int32 n] (int8 type, string name, configs [int32 n] (string name, int8 op,
    # nullable string value)), boolean validate_only. Keys in name order: follower (DELETE, null), leader (SET).
    expected = (
        struct.pack(">i", 1)
        + struct.pack(">b", 4)  # BROKER
        + _string("1")
        + struct.pack(">i", 2)
        + _string(FR)
        + struct.pack(">b", 1)  # DELETE
        + struct.pack(">h", -1)  # null
        + _string(LR)
        + struct.pack(">b", 0)  # SET
        + _string("4242424")
        + struct.pack(">b", 0)  # validate_only false
    )
    assert request.encode(version=0) == expected


def test_not_controller_asks_again() -> None:
    script = Script(
        [
            ("h:9101", "DescribeClusterRequest", _described(2, {2: 9102})),
            ("h:9102", "IncrementalAlterConfigsRequest", _altered(41, "not the controller")),
            ("h:9101", "DescribeClusterRequest", _described(3, {3: 9103})),
            ("h:9103", "IncrementalAlterConfigsRequest", _altered()),
        ]
    )
    _client(script).alter_broker(1, {LR: None})
    assert not script.steps


def test_a_refused_change_fails_with_the_error() -> None:
    script = Script(
        [
            ("h:9101", "DescribeClusterRequest", _described(2, {2: 9102})),
            ("h:9102", "IncrementalAlterConfigsRequest", _altered(42, "bad value")),
        ]
    )
    with pytest.raises(OperationalError, match=r"broker 1 .* failed: error 42 bad value"):
        _client(script).alter_broker(1, {LR: "x"})


def test_no_controller_answers() -> None:
    script = Script(
        [
            ("h:9101", "DescribeClusterRequest", ConnectionRefusedError("down")),
            ("h:9102", "DescribeClusterRequest", ConnectionRefusedError("down")),
        ]
    )
    with pytest.raises(OperationalError, match="no KRaft controller answered at h:9101,h:9102"):
        _client(script).alter_broker(1, {LR: None})


def test_blind_change_of_a_restore_is_exact() -> None:
    """A down broker's restore, without reading it: the recorded prior put back, a recorded absence deleted,
    the key not recorded (the log-dir rate) left alone."""
    priors: dict[str, str | None] = {LR: "4242424", FR: None}
    change = _blind_change("1", lambda cur: th.restore_config(cur, list(priors), priors))
    assert change is not None
    assert (change.entity, change.name) == ("brokers", "1")
    assert sorted(change.before) == sorted([LR, FR])
    assert change.after == {LR: "4242424"}
    assert LD not in change.before
