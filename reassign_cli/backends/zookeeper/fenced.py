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

import logging
from collections.abc import Sequence
from typing import Any, Literal

from reassign_cli.backends.protocol import (
    ConfigChange,
    Guard,
    PlannedWrite,
    SetupInProgress,
    SetupLost,
    ThrottlePlan,
)
from reassign_cli.backends.zookeeper.configs import (
    MAX_ATTEMPTS,
    PRIORS_PATH,
    ConfigStore,
    _diff,
    _Write,
    config_path,
    decode_config,
)
from reassign_cli.backends.zookeeper.record import (
    HEAD,
    HEAD_MAX,
    RecordChange,
    Stored,
    plan_change,
    read_stored,
)
from reassign_cli.backends.zookeeper.session import InDoubt, unknown_outcome
from reassign_cli.core.throttle import Entity
from reassign_cli.core.validate import JUTE_MAXBUFFER
from reassign_cli.core.znodes import (
    CONFIG_CHANGE_PREFIX,
    REASSIGN_PARTITIONS,
    encode_config_change,
    encode_entity_config,
)
from reassign_cli.errors import OperationalError

log = logging.getLogger(__name__)
SETUP_PATH = "/reassign_cli/executing"
SETUP_LOST = (
    "this execute lost its setup mark (its ZooKeeper session expired while it was paused, and other runs "
    "may have acted since): nothing was started, and its own throttle writes were taken back"
)
SETUP_LOST_HALFWAY = (
    "this execute lost its setup mark while writing its throttles (its ZooKeeper session expired): nothing "
    "was started; the throttles it wrote are recorded and verify takes them off"
)
SETUP_BUSY = (
    "another kafka-reassign execute is being set up right now (its throttles are written, its reassignment "
    "not yet created)"
)

# One operation of a transaction: ("create", path, data, ephemeral) ("set", path, data, version)
# ("delete", path, version) ("absent", path): absent now (created and deleted again in the transaction).
_Op = tuple[Any, ...]
_Item = _Write | _Op  # a config write (with its change notification) or a part of the record

TXN_LIMIT = 1_000_000  # bytes of one transaction request; ZooKeeper drops a connection past jute.maxbuffer
OP_OVERHEAD = 320  # per operation beyond path and data: headers, an ACL list, the chroot
DROPS_BEFORE_GIVING_UP = 3
TRIGGER_COMPANIONS = HEAD_MAX + 512  # the mark's delete and the head's rewrite, beside the trigger


class _Drops:
    """Transactions whose answer was lost with the connection and that, looked at once it was back, had
    not landed. Every request was checked against jute.maxbuffer before it was sent, so this is the
    connection (or a server set up with a smaller jute.maxbuffer than the default), not our size."""

    def __init__(self) -> None:
        self.count = 0
        self.size = 0

    def error(self, landed: Sequence[ConfigChange]) -> OperationalError:
        times = "once" if self.count == 1 else f"{self.count} times"
        done = (
            "nothing of this change was written"
            if not landed
            else f"{len(landed)} config change(s) of this change had landed before, with their prior values "
            "recorded (verify takes them off once nothing reassigns)"
        )
        return OperationalError(
            f"the connection to ZooKeeper dropped {times} while a throttle transaction of {self.size} bytes "
            f"was waiting for its answer; looked at after reconnecting, that transaction had not landed, "
            f"and {done}",
            hint="Check the ZooKeeper servers and the network to them (a server's log says why it closed "
            "a connection), then run the command again; kafka-reassign verify shows where things stand. "
            f"(A server whose jute.maxbuffer is set below the default, {JUTE_MAXBUFFER} bytes, also "
            "closes the connection on a request this large.)",
        )


class FencedThrottles:
    """ConfigStore's reads and dry-run overlay, with commits fenced on the record's head."""

    def __init__(self, store: ConfigStore) -> None:
        self.store = store
        self.session = store.session
        self.holding = False  # this run holds the setup mark
        self.drops = _Drops()

    # -- the fenced commit ------------------------------------------------------------------
    def commit(
        self, plan: ThrottlePlan, guard: Guard, record_last: bool, create: bool
    ) -> tuple[list[ConfigChange], dict[str, Any]] | None:
        if not self.store.dry_run:
            self.session.ensure_path("/reassign_cli")
        self.drops = _Drops()
        landed: list[ConfigChange] = []  # written by transactions of an attempt that a conflict cut short
        for _ in range(MAX_ATTEMPTS):
            done, out = self._attempt(plan, guard, record_last, create, landed)
            if done:
                return None if out is None else (_merge(landed, out[0]), out[1])
            if self.drops.count >= DROPS_BEFORE_GIVING_UP:
                raise self.drops.error(landed)
        if self.drops.count:
            raise self.drops.error(landed)
        raise OperationalError(f"{PRIORS_PATH} kept changing under us; gave up after {MAX_ATTEMPTS} attempts")

    def _attempt(
        self, plan: ThrottlePlan, guard: Guard, record_last: bool, create: bool, landed: list[ConfigChange]
    ) -> tuple[bool, tuple[list[ConfigChange], dict[str, Any]] | None]:
        """(finished, result); not finished: a conflict, plan again from fresh reads."""
        stored = read_stored(self.store._get, self.store.children)
        seen: dict[str, tuple[bytes | None, int | None]] = {}

        def read(entity: Entity, name: str) -> dict[str, str]:
            path = config_path(entity, name)
            if path not in seen:
                seen[path] = self.store._get(path)
            return decode_config(path, seen[path][0])

        planned = plan(stored.record(), read)
        if planned is None:
            return True, None
        updates, new_record = planned
        writes = self._writes(updates, read, seen, create)
        change = plan_change(stored, new_record)
        result = ([w.change for w in writes], new_record)
        if not writes and not change.changed and guard in ("none", "idle"):
            return True, result
        self.store.ensure_zk_controller()
        if self.store.dry_run:
            self._plan_dry(writes, change, stored)
            return True, result
        txns = _pack(writes, change, stored, record_last)
        if guard == "end" and not self.session.owned(SETUP_PATH):
            guard = "none"  # our mark went with an expired session: another execute's may stand there now
        mine: list[ConfigChange] = []  # this attempt's, kept in `landed` when a later transaction conflicts
        for i, (items, head_op) in enumerate(txns):
            if guard == "begin" and self.holding:
                self.ensure_holding(SETUP_LOST_HALFWAY)
            ops = self._guard_ops("none" if guard == "begin" and self.holding else guard, i, len(txns))
            if not self._transaction(ops, items, head_op, guard if i == 0 else "none"):
                landed += mine  # written: the next attempt plans from them, the caller must know them
                return False, None
            mine += [w.change for w in items if isinstance(w, _Write)]
            if guard == "begin":
                self.holding = True  # a conflict in a later transaction: the mark stays ours
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
    def _guard_ops(guard: Guard, i: int, n: int) -> list[_Op]:
        """The mark: created by the first transaction of a setup, deleted by the last of an undo, and
        checked absent by every transaction of a clear."""
        if guard == "begin" and i == 0:
            return [("create", SETUP_PATH, b"", True)]
        if guard == "end" and i == n - 1:
            return [("delete", SETUP_PATH, -1)]
        if guard == "idle":
            return [("absent", SETUP_PATH)]
        return []

    # -- one transaction ------------------------------------------------------------------------
    def _transaction(self, ops: list[_Op], items: list[_Item], head_op: _Op, guard: Guard) -> bool:
        """ops (the mark), then the head (first, or last when deleting it), the record's parts and the
        configs with their notifications. False: a conflict (or a dropped request), plan again."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

        t = self.session.client.transaction()
        body: list[_Op] = [op for op in items if not isinstance(op, _Write)]
        seq = [*ops, *([head_op] if head_op[0] != "delete" else [])]
        for op in seq:
            self._add(t, op)
        for item in items:
            if isinstance(item, _Write):
                self._add_write(t, item)
            else:
                self._add(t, item)
        if head_op[0] == "delete":
            self._add(t, head_op)
        size = _request_bytes(t.operations)
        if size > JUTE_MAXBUFFER:
            raise OperationalError(
                f"a throttle change needs a ZooKeeper transaction of {size} bytes, more than ZooKeeper's "
                f"jute.maxbuffer ({JUTE_MAXBUFFER}); nothing was written"
            )
        try:
            results = self.session.write(PRIORS_PATH, t.commit_async)
        except InDoubt:
            if self._landed(seq + body + ([head_op] if head_op[0] == "delete" else []), items):
                return True
            self.drops.count += 1
            self.drops.size = size
            return False
        errors = [(i, r) for i, r in enumerate(results) if isinstance(r, Exception)]
        errors = [(i, r) for i, r in errors if not isinstance(r, RolledBackError)]
        if not errors:
            return True
        refused = self.session.refusal(t.operations, results)
        if refused:
            raise refused  # the whole transaction was rolled back: nothing half-written
        i, err = errors[0]
        if i == 0 and guard in ("begin", "idle") and isinstance(err, NodeExistsError) and ops:
            raise SetupInProgress(SETUP_BUSY, hint="Wait a moment and run it again.")
        if isinstance(err, BadVersionError | NodeExistsError | NoNodeError):
            log.debug("conflict: %s at %s", type(err).__name__, t.operations[i])
            if isinstance(err, NoNodeError):
                self.session.ensure_path("/config/changes")
                for w in items:
                    if isinstance(w, _Write):
                        self.session.ensure_path(w.path.rsplit("/", 1)[0])
            return False
        raise OperationalError(f"cannot write the throttles: {type(err).__name__}")

    def _add_write(self, t: Any, w: _Write) -> None:
        acl = self.session.acl
        if w.version is None:
            t.create(w.path, w.payload, acl=acl(w.path))
        else:
            t.set_data(w.path, w.payload, version=w.version)
        change = encode_config_change(w.entity, w.name)
        t.create(CONFIG_CHANGE_PREFIX, change, acl=acl(CONFIG_CHANGE_PREFIX), sequence=True)

    def _add(self, t: Any, op: _Op) -> None:
        kind, path = op[0], op[1]
        if kind == "create":
            t.create(path, op[2], acl=self.session.acl(path), ephemeral=op[3])
        elif kind == "set":
            t.set_data(path, op[2], version=op[3])
        elif kind == "delete":
            t.delete(path, version=op[2])
        else:  # absent: fails with NodeExists while it exists
            t.create(path, b"", acl=self.session.acl(path))
            t.delete(path)

    def _landed(self, ops: list[_Op], items: list[_Item]) -> bool:
        """A lost answer: the transaction landed whole or not at all; look at its writes."""
        expect = [(w.path, w.payload, w.version) for w in items if isinstance(w, _Write)]
        for op in ops:
            if op[0] == "set":
                expect.append((op[1], op[2], op[3]))
            elif op[0] == "create" and op[1] != SETUP_PATH:
                expect.append((op[1], op[2], None))
            elif op[0] == "delete" and op[1] != SETUP_PATH:
                expect.append((op[1], b"", op[2]))
        if not expect:
            # Only the mark: the begin mark is ours if it exists now (an ephemeral of our session).
            begin = any(op[0] == "create" and op[1] == SETUP_PATH for op in ops)
            try:
                return begin and self.session.get(SETUP_PATH)[1] is not None
            except OperationalError:
                raise unknown_outcome(PRIORS_PATH) from None
        return self.store._landed(expect)

    def _plan_dry(self, writes: list[_Write], change: RecordChange, stored: Stored) -> None:
        if change.changed:
            self.store._plan_priors(change.head or b"", stored.version)
        for path, payload, version in change.parts:
            self.store._plan_znode(path, payload, version)
        for w in writes:
            op: Literal["create", "set"] = "set" if w.version is not None else "create"
            self.store.planned.append(PlannedWrite(op, w.path, w.payload, w.version))
            self.store.planned.append(
                PlannedWrite(
                    "create", CONFIG_CHANGE_PREFIX, encode_config_change(w.entity, w.name), None, True
                )
            )
            self.store._overlay[w.path] = (w.payload, 0 if w.version is None else w.version + 1)

    def ensure_holding(self, message: str = SETUP_LOST) -> None:
        """SetupLost unless the mark is still an ephemeral of this session: after a session expiry it is
        gone (or another execute's), and so is the promise that nobody touched our throttles."""
        if not self.session.owned(SETUP_PATH):
            self.holding = False
            raise SetupLost(message, hint="Run execute again once verify shows where things stand.")

    # -- the trigger, ending the setup -------------------------------------------------------------
    def create_trigger(self, data: bytes) -> bool:
        """Create /admin/reassign_partitions; in the same transaction end our setup mark and move the
        record's version on (rewritten as it is). False: a reassignment exists already."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

        self.session.ensure_path("/admin")
        for _ in range(MAX_ATTEMPTS):
            if self.holding:
                self.ensure_holding()
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


# -- packing a change into transactions ----------------------------------------------------------


def _item_bytes(item: _Item) -> int:
    if isinstance(item, _Write):
        return 2 * OP_OVERHEAD + len(item.path) + len(item.payload) + len(CONFIG_CHANGE_PREFIX) + 80
    data = item[2] if len(item) > 2 and isinstance(item[2], bytes) else b""
    return OP_OVERHEAD + len(item[1]) + len(data)


def _part_op(path: str, payload: bytes, version: int | None) -> _Op:
    if not payload:
        return ("delete", path, version)
    if version is None:
        return ("create", path, payload, False)
    return ("set", path, payload, version)


def _head_final(new: bytes | None, version: int | None) -> tuple[_Op, int | None]:
    if new is None:
        return (("delete", HEAD, version) if version is not None else ("absent", HEAD)), None
    if version is None:
        return ("create", HEAD, new, False), 0
    return ("set", HEAD, new, version), version + 1


def _pack(
    writes: list[_Write], change: RecordChange, stored: Stored, record_last: bool
) -> list[tuple[list[_Item], _Op]]:
    """The transactions of one change, each under TXN_LIMIT with its mark and head operations: the
    record's parts before the configs (record_last: after them); the head's new content in the first
    transaction (record_last: the last), every other one rewriting the head as it stands, so that each
    transaction is fenced on the version the one before it wrote."""
    parts = [_part_op(*p) for p in change.parts]
    seq: list[_Item] = [*writes, *parts] if record_last else [*parts, *writes]
    old_head = stored.head if stored.version is not None else None
    head_bytes = max(len(old_head or b""), len(change.head or b""), HEAD_MAX)
    budget = TXN_LIMIT - (4 * OP_OVERHEAD + 2 * len(SETUP_PATH) + len(HEAD) + head_bytes)
    chunks: list[list[_Item]] = [[]]
    size = 0
    for item in seq:
        n = _item_bytes(item)
        if n > budget:
            what = item.path if isinstance(item, _Write) else item[1]
            raise OperationalError(
                f"{what} needs {n} bytes, more than one ZooKeeper transaction holds ({budget})"
            )
        if chunks[-1] and size + n > budget:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += n
    final = len(chunks) - 1 if record_last else 0
    out: list[tuple[list[_Item], _Op]] = []
    version, data = stored.version, old_head
    for i, chunk in enumerate(chunks):
        op: _Op
        if i == final:
            op, version = _head_final(change.head, version)
            data = change.head
        elif version is not None:
            op, version = ("set", HEAD, data, version), version + 1
        else:
            op = ("absent", HEAD)
        out.append((chunk, op))
    return out


def _request_bytes(operations: Sequence[Any]) -> int:
    """The exact size of a multi request: its operations, the end marker and the request header."""
    from kazoo.protocol.serialization import Transaction

    return len(Transaction(list(operations)).serialize()) + 12


def _merge(first: list[ConfigChange], then: list[ConfigChange]) -> list[ConfigChange]:
    """Changes of transactions that landed before a conflict, and those of the attempt that finished."""
    out: dict[tuple[str, str], ConfigChange] = {}
    for ch in [*first, *then]:
        key = (ch.entity, ch.name)
        prev = out.get(key)
        if prev is None:
            out[key] = ConfigChange(ch.entity, ch.name, dict(ch.before), dict(ch.after))
            continue
        for k, v in ch.before.items():
            prev.before.setdefault(k, v)
        prev.after.update(ch.after)
    return list(out.values())
