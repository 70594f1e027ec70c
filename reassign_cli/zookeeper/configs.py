"""Entity configs (`/config/topics/<t>`, `/config/brokers/<id>`), their change notifications, and this
tool's own record of the throttle values that existed before it wrote any.

Every config write is read-modify-write against the znode version: `set(version=stat.version)`, and on
BadVersion re-read and retry; a missing znode is created (retry on NodeExists). Each write goes in ONE
kazoo transaction with its `config_change_` notification (a PERSISTENT_SEQUENTIAL node under
/config/changes), so a broker never sees a config without being told. Unrelated keys are kept, values
are strings (KAFKA-SPEC §1.8, §1.9).

Requests go through the session (`zookeeper.session`): each has a deadline, reads are retried across a
dropped connection, and a write whose answer was lost is looked up (`_landed`) instead of guessed.

With dry_run=True nothing is written: each write is recorded in `planned` (path and exact content) and
later reads in the same run see the planned content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from reassign_cli import throttle as th
from reassign_cli.backend import ConfigChange, ConfigFn, ConfigUpdate, PlannedWrite, RecordFn
from reassign_cli.errors import OperationalError
from reassign_cli.throttle import Entity
from reassign_cli.znodes import (
    CONFIG_CHANGE_PREFIX,
    CONFIG_CHANGES,
    decode_entity_config,
    encode_config_change,
    encode_entity_config,
    entity_config_path,
)
from reassign_cli.zookeeper.session import InDoubt, ZkSession, unknown_outcome

PRIORS_PATH = "/reassign_cli/throttles"  # under the chroot, like every other path here
CONTROLLER_PATH = "/controller"
MAX_ATTEMPTS = 25
TXN_BYTES = 512 * 1024  # keep one multi well under ZooKeeper's jute.maxbuffer (~1 MB)


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

    # -- config read-modify-write -------------------------------------------------------------
    def update_configs(self, updates: Sequence[ConfigUpdate], *, create: bool = True) -> list[ConfigChange]:
        """Several read-modify-writes committed together: every changed config with its notification in
        one transaction (split only if it would exceed TXN_BYTES), so brokers see the whole change in one
        notification pass. A BadVersion/NodeExists re-reads and retries that transaction's configs.
        Configs whose content does not change are not written. Returns the changes, in write order.
        """
        pending = list(updates)
        done: list[ConfigChange] = []
        for _ in range(MAX_ATTEMPTS):
            planned: list[_Write] = []
            for entity, name, fn in pending:
                path = config_path(entity, name)
                data, version = self._get(path)
                if version is None and not create:
                    continue
                current = decode_config(path, data)
                new = fn(dict(current))
                if (new == current and version is not None) or (version is None and not new):
                    continue
                planned.append(
                    _Write(
                        entity,
                        name,
                        fn,
                        path,
                        encode_entity_config(new),
                        version,
                        _diff(entity, name, current, new),
                    )
                )
            if not planned:
                return done
            self.ensure_zk_controller()
            if self.dry_run:
                for w in planned:
                    op: Literal["create", "set"] = "set" if w.version is not None else "create"
                    self.planned.append(PlannedWrite(op, w.path, w.payload, w.version))
                    self.planned.append(
                        PlannedWrite(
                            "create", CONFIG_CHANGE_PREFIX, encode_config_change(w.entity, w.name), None, True
                        )
                    )
                    self._overlay[w.path] = (w.payload, 0 if w.version is None else w.version + 1)
                return done + [w.change for w in planned]
            retry: list[ConfigUpdate] = []
            for chunk in _chunks(planned):
                if self._commit(chunk):
                    done += [w.change for w in chunk]
                else:
                    retry += [(w.entity, w.name, w.fn) for w in chunk]
            if not retry:
                return done
            pending = retry
        raise OperationalError(
            f"{config_path(pending[0][0], pending[0][1])} kept changing under us; gave up after {MAX_ATTEMPTS} attempts"
        )

    def _commit(self, writes: Sequence[_Write]) -> bool:
        """One transaction: each config write followed by its notification. False: lost a race, re-read."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

        t = self.session.client.transaction()
        for w in writes:
            if w.version is None:
                t.create(w.path, w.payload)
            else:
                t.set_data(w.path, w.payload, version=w.version)
            t.create(CONFIG_CHANGE_PREFIX, encode_config_change(w.entity, w.name), sequence=True)
        try:
            results = self.session.write(writes[0].path, t.commit_async)
        except InDoubt:
            return self._landed([(w.path, w.payload, w.version) for w in writes])
        errors = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
        if not errors:
            return True
        err = errors[0]
        if isinstance(err, BadVersionError | NodeExistsError):
            return False
        if isinstance(err, NoNodeError):
            # A missing parent (/config/changes, /config/brokers) or a config znode that vanished: make
            # the parents and try again from the read.
            self.session.ensure_path(CONFIG_CHANGES)
            for w in writes:
                self.session.ensure_path(w.path.rsplit("/", 1)[0])
            return False
        raise OperationalError(f"cannot write {writes[0].path}: {type(err).__name__}")

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
    def read_priors(self) -> dict[str, Any]:
        data, version = self._get(PRIORS_PATH)
        return th.load_record(data if version is not None else None, PRIORS_PATH)

    def update_priors(self, fn: RecordFn) -> dict[str, Any]:
        """Read-modify-write of the record against its version; an empty record deletes the znode."""
        for _ in range(MAX_ATTEMPTS):
            data, version = self._get(PRIORS_PATH)
            current = th.load_record(data if version is not None else None, PRIORS_PATH)
            new = fn(current)
            empty = th.record_is_empty(new)
            payload = b"" if empty else th.dump_record(new)
            if (version is None and empty) or (version is not None and not empty and payload == data):
                return new
            if self.dry_run:
                self._plan_priors(payload, version)
                return new
            if self._write_priors(payload, version):
                return new
        raise OperationalError(f"{PRIORS_PATH} kept changing under us; gave up after {MAX_ATTEMPTS} attempts")

    def _plan_priors(self, payload: bytes, version: int | None) -> None:
        if not payload:
            self.planned.append(PlannedWrite("delete", PRIORS_PATH, b"", version))
            self._overlay[PRIORS_PATH] = (None, None)
            return
        op: Literal["create", "set"] = "set" if version is not None else "create"
        self.planned.append(PlannedWrite(op, PRIORS_PATH, payload, version))
        self._overlay[PRIORS_PATH] = (payload, 0 if version is None else version + 1)

    def _write_priors(self, payload: bytes, version: int | None) -> bool:
        """The record written (b"": deleted) if still at `version`. False: someone changed it, or our
        write whose answer was lost did not land; re-read and recompute."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        client = self.session.client
        try:
            if not payload:
                self.session.write(PRIORS_PATH, lambda: client.delete_async(PRIORS_PATH, version=version))
            elif version is None:
                self.session.write(
                    PRIORS_PATH, lambda: client.create_async(PRIORS_PATH, payload, makepath=True)
                )
            else:
                self.session.write(
                    PRIORS_PATH, lambda: client.set_async(PRIORS_PATH, payload, version=version)
                )
        except (BadVersionError, NodeExistsError, NoNodeError):
            return False
        except InDoubt:
            return self._landed([(PRIORS_PATH, payload, version)])
        return True


@dataclass(slots=True)
class _Write:
    entity: Entity
    name: str
    fn: ConfigFn
    path: str
    payload: bytes
    version: int | None
    change: ConfigChange


def _chunks(writes: Sequence[_Write]) -> list[list[_Write]]:
    out: list[list[_Write]] = [[]]
    size = 0
    for w in writes:
        n = len(w.payload) + len(w.path) + 100
        if out[-1] and size + n > TXN_BYTES:
            out.append([])
            size = 0
        out[-1].append(w)
        size += n
    return out


def _diff(entity: Entity, name: str, before: Mapping[str, str], after: Mapping[str, str]) -> ConfigChange:
    keys = [k for k in after if before.get(k) != after[k]] + [k for k in before if k not in after]
    return ConfigChange(
        entity, name, {k: before.get(k) for k in keys}, {k: after[k] for k in keys if k in after}
    )
