"""Throttle writes fenced on our record (`/reassign_cli/throttles`), and the setup mark of an execute.

One ZooKeeper transaction holds: the setup-mark operation (create it, delete it, or check that it is
absent by creating and deleting it), the record's write against the version it was read at (or a check of
that version, or of its absence), and every config write against its own version with its change
notification. Any conflict re-reads and re-plans, so two runs can never both act on the same record
state: the lost-create-race undo and a cron verify landing in an execute's settle pause cannot delete
values another run needs.

The setup mark `/reassign_cli/executing` is an ephemeral znode: held by an execute from its throttle
writes until its trigger exists. A clear refuses to run while it exists; if the execute was killed, the
mark goes with its ZooKeeper session (at most the session timeout later).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from reassign_cli.backends.protocol import ConfigChange, Guard, PlannedWrite, SetupInProgress, ThrottlePlan
from reassign_cli.backends.zookeeper.configs import (
    MAX_ATTEMPTS,
    PRIORS_PATH,
    ConfigStore,
    _chunks,
    _diff,
    _Write,
    config_path,
    decode_config,
)
from reassign_cli.backends.zookeeper.session import InDoubt, unknown_outcome
from reassign_cli.core import throttle as th
from reassign_cli.core.throttle import Entity
from reassign_cli.core.znodes import (
    CONFIG_CHANGE_PREFIX,
    REASSIGN_PARTITIONS,
    encode_config_change,
    encode_entity_config,
)
from reassign_cli.errors import OperationalError

SETUP_PATH = "/reassign_cli/executing"
SETUP_BUSY = (
    "another kafka-reassign execute is being set up right now (its throttles are written, its reassignment "
    "not yet created)"
)

# (op, path, payload, version): op "write" (set, or create when version is None, or delete when payload
# is b""), "check" (version; None: absent)
_RecordOp = tuple[Literal["write", "check"], bytes, int | None]


class FencedThrottles:
    """ConfigStore's reads and dry-run overlay, with commits that carry the record's version."""

    def __init__(self, store: ConfigStore) -> None:
        self.store = store
        self.session = store.session
        self.holding = False  # this run holds the setup mark

    # -- the one fenced commit ------------------------------------------------------------------
    def commit(
        self, plan: ThrottlePlan, guard: Guard, record_last: bool, create: bool
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        if not self.store.dry_run:
            self.session.ensure_path("/reassign_cli")
        for _ in range(MAX_ATTEMPTS):
            done, out = self._attempt(plan, guard, record_last, create)
            if done:
                return out
        raise OperationalError(f"{PRIORS_PATH} kept changing under us; gave up after {MAX_ATTEMPTS} attempts")

    def _attempt(
        self, plan: ThrottlePlan, guard: Guard, record_last: bool, create: bool
    ) -> tuple[bool, tuple[list[ConfigChange], dict[str, Any]] | None]:
        """(finished, result); not finished: a conflict, plan again from fresh reads."""
        data, version = self.store._get(PRIORS_PATH)
        record = th.load_record(data if version is not None else None, PRIORS_PATH)
        seen: dict[str, tuple[bytes | None, int | None]] = {}

        def read(entity: Entity, name: str) -> dict[str, str]:
            path = config_path(entity, name)
            if path not in seen:
                seen[path] = self.store._get(path)
            return decode_config(path, seen[path][0])

        planned = plan(record, read)
        if planned is None:
            return True, None
        updates, new_record = planned
        writes = self._writes(updates, read, seen, create)
        rec_op = self._record_op(data, version, new_record)
        result = ([w.change for w in writes], new_record)
        if not writes and rec_op[0] == "check" and guard in ("none", "idle"):
            return True, result
        self.store.ensure_zk_controller()
        if self.store.dry_run:
            self._plan_dry(writes, rec_op)
            return True, result
        if not self._commit(writes, rec_op, guard, record_last):
            return False, None
        if guard in ("begin", "end"):
            self.holding = guard == "begin"
        return True, result

    def _writes(self, updates: Sequence[Any], read: Any, seen: dict[str, Any], create: bool) -> list[_Write]:
        out: list[_Write] = []
        for entity, name, fn in updates:
            path = config_path(entity, name)
            current = read(entity, name)
            version = seen[path][1]
            if version is None and not create:
                continue
            new = fn(dict(current))
            if (new == current and version is not None) or (version is None and not new):
                continue
            change = _diff(entity, name, current, new)
            out.append(_Write(entity, name, fn, path, encode_entity_config(new), version, change))
        return out

    @staticmethod
    def _record_op(data: bytes | None, version: int | None, new: dict[str, Any]) -> _RecordOp:
        empty = th.record_is_empty(new)
        payload = b"" if empty else th.dump_record(new)
        if (version is None and empty) or (version is not None and not empty and payload == data):
            return ("check", b"", version)
        return ("write", payload, version)

    # -- the transaction --------------------------------------------------------------------------
    def _commit(self, writes: list[_Write], rec_op: _RecordOp, guard: Guard, record_last: bool) -> bool:
        """Everything in one transaction if it fits; else the record's chunk first (or last), each later
        chunk still checked against the record. False: a conflict, plan again."""
        chunks = _chunks(writes)
        order = range(len(chunks) - 1, -1, -1) if record_last else range(len(chunks))
        first = True
        for i in order:
            ops = [*self._guard_ops(guard), rec_op] if first else [("check", b"", self._version_now())]
            if not self._transaction(ops, chunks[i], guard if first else "none"):
                return False
            first = False
        return True

    def _version_now(self) -> int | None:
        return self.store._get(PRIORS_PATH)[1]

    @staticmethod
    def _guard_ops(guard: Guard) -> list[Any]:
        return [("guard", guard)] if guard != "none" else []

    def _transaction(self, ops: list[Any], writes: list[_Write], guard: Guard) -> bool:
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

        acl = self.session.acl
        t = self.session.client.transaction()
        for op in ops:
            self._add(t, op)
        for w in writes:
            if w.version is None:
                t.create(w.path, w.payload, acl=acl(w.path))
            else:
                t.set_data(w.path, w.payload, version=w.version)
            change = encode_config_change(w.entity, w.name)
            t.create(CONFIG_CHANGE_PREFIX, change, acl=acl(CONFIG_CHANGE_PREFIX), sequence=True)
        try:
            results = self.session.write(PRIORS_PATH, t.commit_async)
        except InDoubt:
            return self._landed(ops, writes)
        errors = [(i, r) for i, r in enumerate(results) if isinstance(r, Exception)]
        errors = [(i, r) for i, r in errors if not isinstance(r, RolledBackError)]
        if not errors:
            return True
        refused = self.session.refusal(t.operations, results)
        if refused:
            raise refused  # the whole transaction was rolled back: nothing half-written
        i, err = errors[0]
        if i == 0 and guard in ("begin", "idle") and isinstance(err, NodeExistsError):
            raise SetupInProgress(SETUP_BUSY, hint="Wait a moment and run it again.")
        if isinstance(err, BadVersionError | NodeExistsError | NoNodeError):
            if isinstance(err, NoNodeError):
                self.session.ensure_path("/config/changes")
                for w in writes:
                    self.session.ensure_path(w.path.rsplit("/", 1)[0])
            return False
        raise OperationalError(f"cannot write the throttles: {type(err).__name__}")

    def _add(self, t: Any, op: Any) -> None:
        setup_acl, record_acl = self.session.acl(SETUP_PATH), self.session.acl(PRIORS_PATH)
        if op[0] == "guard":
            if op[1] == "begin":
                t.create(SETUP_PATH, b"", acl=setup_acl, ephemeral=True)
            elif op[1] == "end":
                t.delete(SETUP_PATH)
            else:  # idle: absent (fails with NodeExists while an execute holds it)
                t.create(SETUP_PATH, b"", acl=setup_acl)
                t.delete(SETUP_PATH)
            return
        kind, payload, version = op
        if kind == "check":
            if version is None:  # absent: same trick
                t.create(PRIORS_PATH, b"", acl=record_acl)
                t.delete(PRIORS_PATH)
            else:
                t.check(PRIORS_PATH, version)
        elif not payload:
            t.delete(PRIORS_PATH, version=version)
        elif version is None:
            t.create(PRIORS_PATH, payload, acl=record_acl)
        else:
            t.set_data(PRIORS_PATH, payload, version=version)

    def _landed(self, ops: list[Any], writes: list[_Write]) -> bool:
        """A lost answer: the transaction landed whole or not at all; look at one write of it."""
        expect = [(w.path, w.payload, w.version) for w in writes]
        expect += [(PRIORS_PATH, op[1], op[2]) for op in ops if op[0] == "write"]
        if not expect:
            # Only guard ops: the begin mark is ours if it exists now (an ephemeral of our session).
            begin = any(op == ("guard", "begin") for op in ops)
            try:
                return begin and self.session.get(SETUP_PATH)[1] is not None
            except OperationalError:
                raise unknown_outcome(PRIORS_PATH) from None
        return self.store._landed(expect)

    def _plan_dry(self, writes: list[_Write], rec_op: _RecordOp) -> None:
        kind, payload, version = rec_op
        if kind == "write":
            self.store._plan_priors(payload, version)
        for w in writes:
            op: Literal["create", "set"] = "set" if w.version is not None else "create"
            self.store.planned.append(PlannedWrite(op, w.path, w.payload, w.version))
            self.store.planned.append(
                PlannedWrite(
                    "create", CONFIG_CHANGE_PREFIX, encode_config_change(w.entity, w.name), None, True
                )
            )
            self.store._overlay[w.path] = (w.payload, 0 if w.version is None else w.version + 1)

    # -- the trigger, ending the setup -------------------------------------------------------------
    def create_trigger(self, data: bytes) -> bool:
        """Create /admin/reassign_partitions; in the same transaction end our setup mark and move the
        record's version on (rewritten as it is). False: a reassignment exists already."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

        self.session.ensure_path("/admin")
        for _ in range(MAX_ATTEMPTS):
            rec, version = self.store._get(PRIORS_PATH)
            t = self.session.client.transaction()
            t.create(REASSIGN_PARTITIONS, data, acl=self.session.acl(REASSIGN_PARTITIONS))
            if self.holding:
                t.delete(SETUP_PATH)
            if version is not None and rec is not None:
                t.set_data(PRIORS_PATH, rec, version=version)
            try:
                results = self.session.write(REASSIGN_PARTITIONS, t.commit_async)
            except InDoubt:
                found, _ = self.session.get(REASSIGN_PARTITIONS)
                if found == data:
                    self.holding = False
                    return True
                if found is not None:
                    return False
                continue
            errors = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
            if not errors:
                self.holding = False
                return True
            refused = self.session.refusal(t.operations, results)
            if refused:
                raise refused
            if isinstance(results[0], NodeExistsError):
                return False
            if not isinstance(errors[0], BadVersionError | NoNodeError):
                raise OperationalError(f"cannot create {REASSIGN_PARTITIONS}: {type(errors[0]).__name__}")
        raise OperationalError(f"{PRIORS_PATH} kept changing under us; gave up after {MAX_ATTEMPTS} attempts")
