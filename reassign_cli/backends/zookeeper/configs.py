"""Entity configs (`/config/topics/<t>`, `/config/brokers/<id>`) and this tool's own record of the throttle
values that existed before it wrote any: reads (through the session: deadlines, retried across a dropped
connection), the dry-run overlay, the look-up of writes whose answer was lost (`_landed`), and the
migration guard. Every write is in zookeeper/fenced.py: one transaction per throttle change, each config
with its `config_change_` notification, fenced on the record's version (KAFKA-SPEC §1.8, §1.9).

With dry_run=True nothing is written: each write is recorded in `planned` (path and exact content) and
later reads in the same run see the planned content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from reassign_cli.backends.protocol import ConfigChange, ConfigFn, PlannedWrite
from reassign_cli.backends.zookeeper.session import ZkSession, unknown_outcome
from reassign_cli.core.throttle import Entity
from reassign_cli.core.znodes import (
    decode_entity_config,
    entity_config_path,
)
from reassign_cli.errors import OperationalError

PRIORS_PATH = "/reassign_cli/throttles"  # under the chroot, like every other path here
CONTROLLER_PATH = "/controller"
MAX_ATTEMPTS = 25


def config_path(entity: Entity, name: str) -> str:
    return entity_config_path(entity, name)


def decode_config(path: str, data: bytes | None) -> dict[str, str]:
    return dict(decode_entity_config(path, data))


@dataclass
class ConfigStore:
    session: ZkSession
    dry_run: bool = False
    planned: list[PlannedWrite] = field(default_factory=list)
    _overlay: dict[str, tuple[bytes | None, int | None]] = field(default_factory=dict)
    _zk_checked: bool = False

    # -- guards ----------------------------------------------------------------------------------
    def ensure_zk_controller(self) -> None:
        """Refuse config writes once a KRaft controller has taken over (KAFKA-SPEC §1.7)."""
        if self._zk_checked:
            return
        data, _ = self.session.get(CONTROLLER_PATH)
        epoch = -1
        if data:
            try:
                doc = orjson.loads(data)
                epoch = int(doc.get("kraftControllerEpoch", -1)) if isinstance(doc, dict) else -1
            except (orjson.JSONDecodeError, TypeError, ValueError):
                epoch = -1
        if epoch > 0:
            raise OperationalError(
                f"refusing to write to ZooKeeper: a KRaft controller has taken over (/controller has "
                f"kraftControllerEpoch {epoch}); use --bootstrap-server (the admin API) instead of --zookeeper",
                hint="A migrating or migrated cluster is written through its brokers: kafka-reassign "
                "--bootstrap-server HOST:PORT (or KAFKA_REASSIGN_BOOTSTRAP).",
            )
        self._zk_checked = True

    # -- raw reads -------------------------------------------------------------------------------
    def _get(self, path: str) -> tuple[bytes | None, int | None]:
        """(data, version); (None, None) when absent. The dry-run overlay wins."""
        if path in self._overlay:
            return self._overlay[path]
        return self.session.get(path)

    def get_config(self, entity: Entity, name: str) -> dict[str, str] | None:
        data, version = self._get(config_path(entity, name))
        return None if version is None else decode_config(config_path(entity, name), data)

    def _landed(self, writes: Sequence[tuple[str, bytes, int | None]]) -> bool:
        """After a lost answer: did our versioned writes (path, payload, expected version; payload b""
        for a delete) land? Each znode then holds our bytes at the version our write gave it (ZooKeeper
        applies a transaction whole or not at all). False: they did not; the caller re-reads and
        recomputes, and its update functions are idempotent."""
        try:
            for path, payload, version in writes:
                data, now = self.session.get(path)
                if not payload:
                    if now is not None:
                        return False
                elif data != payload or now != (0 if version is None else version + 1):
                    return False
        except OperationalError:
            raise unknown_outcome(writes[0][0]) from None
        return True

    # -- our prior-values record -------------------------------------------------------------
    def children(self, path: str) -> list[str]:
        """The children's names; the dry-run overlay's creates and deletes under `path` applied."""
        names = set(self.session.children(path))
        prefix = path + "/"
        for p, (_, version) in self._overlay.items():
            if p.startswith(prefix) and "/" not in p[len(prefix) :]:
                (names.add if version is not None else names.discard)(p[len(prefix) :])
        return sorted(names)

    def read_priors(self) -> dict[str, Any]:
        """The whole record: its head and parts (zookeeper/record.py), read consistently."""
        from reassign_cli.backends.zookeeper.record import read_stored

        return read_stored(self._get, self.children).record()

    def _plan_priors(self, payload: bytes, version: int | None) -> None:
        self._plan_znode(PRIORS_PATH, payload, version)

    def _plan_znode(self, path: str, payload: bytes, version: int | None) -> None:
        """Dry run: a write of `path` (payload b"": its delete) planned, and seen by later reads."""
        if not payload:
            self.planned.append(PlannedWrite("delete", path, b"", version))
            self._overlay[path] = (None, None)
            return
        op: Literal["create", "set"] = "set" if version is not None else "create"
        self.planned.append(PlannedWrite(op, path, payload, version))
        self._overlay[path] = (payload, 0 if version is None else version + 1)


@dataclass(slots=True)
class _Write:
    entity: Entity
    name: str
    fn: ConfigFn
    path: str
    payload: bytes
    version: int | None
    change: ConfigChange


def _diff(entity: Entity, name: str, before: Mapping[str, str], after: Mapping[str, str]) -> ConfigChange:
    keys = [k for k in after if before.get(k) != after[k]] + [k for k in before if k not in after]
    return ConfigChange(
        entity, name, {k: before.get(k) for k in keys}, {k: after[k] for k in keys if k in after}
    )
