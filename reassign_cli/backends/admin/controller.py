"""A client of a KRaft cluster's controller listener (`--bootstrap-controller`, KIP-919): a broker's dynamic
config changed through the active controller, for a broker that is down.

Hand-built on kafka-python's own protocol layer (its connection manager, which does ApiVersions and the
SASL/TLS handshake of `--command-config`, and its DescribeCluster and IncrementalAlterConfigs request
classes): kafka-python 3.0's KafkaAdminClient cannot bootstrap to a controller. It bootstraps with Metadata,
which a controller listener does not answer (a controller answers the KIP-919 set: ApiVersions,
DescribeCluster, DescribeConfigs, IncrementalAlterConfigs, ...), and it sends a broker's config to that
broker, which is what cannot be done while the broker is down.

The flow: DescribeCluster with endpoint type 2 (controllers, version 1+) to the first address that answers
gives the active controller (ControllerId) and its endpoint; IncrementalAlterConfigs of the BROKER resource
goes to it; a NOT_CONTROLLER answer (the quorum's leader moved) asks again. The broker applies the change
from the metadata log when it is registered again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reassign_cli.core.client_config import AdminOptions
from reassign_cli.errors import OperationalError

BROKER_RESOURCE = 4  # ConfigResource type BROKER
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
CONTROLLERS = 2  # DescribeCluster endpoint type: the controllers (KIP-919)
NOT_CONTROLLER = 41
LEADER_TRIES = 5  # DescribeCluster + IncrementalAlterConfigs rounds while the quorum's leader moves

Send = Callable[[str, Any], Any]  # (HOST:PORT, request) -> response


class ControllerClient:
    """IncrementalAlterConfigs of a broker's keys through the active KRaft controller."""

    def __init__(self, options: AdminOptions, send: Send | None = None) -> None:
        self.options = options  # .bootstrap: the controller addresses
        self._send = send or _Link(options).send

    @property
    def servers(self) -> list[str]:
        return self.options.servers

    def active(self) -> str:
        """HOST:PORT of the active controller, from the first given address that answers DescribeCluster."""
        from kafka.protocol.admin import DescribeClusterRequest

        errors: list[str] = []
        for address in self.servers:
            request = DescribeClusterRequest(
                include_cluster_authorized_operations=False, endpoint_type=CONTROLLERS, min_version=1
            )
            try:
                answer = self._send(address, request)
            except Exception as e:
                errors.append(f"{address}: {e}")
                continue
            if answer.error_code:
                errors.append(f"{address}: DescribeCluster error {answer.error_code} {answer.error_message}")
                continue
            for node in answer.brokers:
                if node.broker_id == answer.controller_id:
                    return f"{node.host}:{node.port}"
            errors.append(f"{address}: no active controller known (ControllerId {answer.controller_id})")
        raise OperationalError(
            f"no KRaft controller answered at {self.options.bootstrap}: {'; '.join(errors) or 'no address'}"
        )

    def alter_broker(self, broker: int, ops: Mapping[str, str | None]) -> None:
        """Set (a value) or delete (None) `ops`' keys of broker `broker`'s own dynamic config."""
        from kafka.protocol.admin import IncrementalAlterConfigsRequest

        entries = [(k, SET, v) if v is not None else (k, DELETE, None) for k, v in sorted(ops.items())]
        last = ""
        for _ in range(LEADER_TRIES):
            address = self.active()
            request = IncrementalAlterConfigsRequest(
                resources=[(BROKER_RESOURCE, str(broker), entries)], validate_only=False
            )
            try:
                answer = self._send(address, request)
            except Exception as e:
                last = str(e)
                continue
            codes = [(r.error_code, r.error_message) for r in answer.responses]
            if codes and codes[0][0] == NOT_CONTROLLER:
                last = "NOT_CONTROLLER"
                continue
            if len(codes) != 1 or codes[0][0]:
                code, message = codes[0] if codes else (-1, "no answer")
                raise OperationalError(
                    f"IncrementalAlterConfigs on broker {broker} through the controller at {address} failed: "
                    f"error {code} {message or ''}".rstrip()
                )
            return
        raise OperationalError(
            f"IncrementalAlterConfigs on broker {broker} through the controller failed {LEADER_TRIES} times, "
            f"the last with: {last}"
        )


class _Link:
    """One request to one HOST:PORT over kafka-python's connection manager: a connection of its own (with
    ApiVersions and the SASL/TLS handshake of the command config), closed after the answer."""

    def __init__(self, options: AdminOptions) -> None:
        self.settings = options.client_settings()

    def send(self, address: str, request: Any) -> Any:
        from kafka.net.manager import KafkaConnectionManager
        from kafka.net.selector import NetworkSelector

        settings = dict(self.settings, bootstrap_servers=[address])
        timeout_ms = settings["request_timeout_ms"]
        net = NetworkSelector(**settings)
        manager = KafkaConnectionManager(net, **settings)
        net.start()
        try:
            node = manager.cluster.bootstrap_brokers()[0]

            async def once() -> Any:
                conn = manager.get_connection(node.node_id, timeout_ms=timeout_ms)
                await conn
                return await manager.wait_for(conn.send_request(request), timeout_ms)

            return manager.run(once)
        finally:
            manager.close()
            net.stop(timeout_ms=timeout_ms)
            net.close()
