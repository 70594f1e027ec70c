"""The stored plan (core/stored_plan.py) in ZooKeeper, written with kazoo (also when the brokers are given):
backends/plan_store.PlanStore over these znodes (under the chroot):

    /reassign_cli/plan                              the head: small, rewritten by every change
    /reassign_cli/plan-content/<id>/0000000000 ...  the content's chunks (CHUNK_BYTES each at most),
                                                    written once, never changed while the head names <id>
    /reassign_cli/plan-content/<id>/writing         ephemeral: the content is being written

The head's znode version is the fence: every change is one setData with the version read (compare-and-
set), so of two writers that read the same version exactly one wins. The driver lease is inside the head
(not a znode of its own): taking, renewing and releasing it are such compare-and-sets too, so the lease and
the state move together, and a holder whose lease was taken over fails its very next write.

A plan of 20,000 partitions is about 1.7 MB of content, more than one znode or one transaction holds
(jute.maxbuffer, 1 MB). So `create` writes the content first, chunk by chunk under a new <id> holding the
ephemeral `writing` mark, then creates the head naming <id> in one transaction that also removes the mark.
The head appears whole or not at all: a reader never sees a half-written plan, and of two creators only
one creates the head (the other removes its content and reports the stored plan). A creator killed on the
way leaves content that no head names and no mark guards (the mark goes with its session): the next
create or delete removes it, in a transaction fenced on the head, so content a head names is never removed.

A read is consistent: the head, then the chunks it names (their SHA-256 checked against the head's), then
the head again, the same version.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterable
from typing import Any

from reassign_cli.backends.plan_store import Versioned, lost_create
from reassign_cli.backends.zookeeper.session import InDoubt, ZkSession, unknown_outcome
from reassign_cli.core import hints
from reassign_cli.core import stored_plan as sp
from reassign_cli.core import zk_security as zs
from reassign_cli.errors import OperationalError

HEAD = "/reassign_cli/plan"
CONTENT = "/reassign_cli/plan-content"
MARK = "writing"
CHUNK_BYTES = 512 * 1024  # one chunk per transaction, well under jute.maxbuffer (1 MB)
READ_ATTEMPTS = 25


def chunk_path(content_id: str, i: int) -> str:
    return f"{CONTENT}/{content_id}/{i:010d}"


class ZkPlanStore:
    def __init__(self, session: ZkSession, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.session = session
        self.chunk_bytes = chunk_bytes

    # -- reading ------------------------------------------------------------------------------------
    def read(self) -> Versioned | None:
        """A consistent read, made again as a whole across a dropped connection (ZkSession.reading)."""
        return self.session.reading(self._read)

    def _read(self) -> Versioned | None:
        # The head read at `version` and the content it names (checked against its SHA-256 and size) are
        # that version's plan, whatever the head became since: the content never changes under a ref, and a
        # stale version only loses the caller's compare-and-set. Read again only when the content is gone
        # (the plan deleted or replaced meanwhile). (Re-reading the head's version too starved a reader of
        # ten steppers writing in a loop on a loaded machine: 25 attempts, never the same version twice.)
        for _ in range(READ_ATTEMPTS):
            head, version = self.session.get(HEAD)
            if version is None or head is None:
                return None
            ref = sp.content_ref(head)
            content = self._content(ref)
            if content is not None:
                return Versioned(sp.decode(head, content), version)
        raise OperationalError(
            f"{HEAD} kept changing while it was read; gave up after {READ_ATTEMPTS} attempts"
        )

    def _content(self, ref: sp.ContentRef) -> bytes | None:
        """The chunks the head names, joined (fetched in one pipeline); None when one is missing or they do
        not match the head (the plan was deleted, or replaced, meanwhile: read again)."""
        from kazoo.exceptions import KazooException, NoAuthError, NoNodeError

        client = self.session.client
        pending = [client.get_async(chunk_path(ref.where, i)) for i in range(ref.chunks)]
        parts = []
        for i, ar in enumerate(pending):
            try:
                data, _ = self.session.answer(ar, f"a read of {chunk_path(ref.where, i)}")
            except NoNodeError:
                return None
            except NoAuthError:
                raise self.session.denied(chunk_path(ref.where, i), zs.READ) from None
            except KazooException as e:
                raise self.session.failed(f"reading {chunk_path(ref.where, i)} from ZooKeeper", e) from None
            parts.append(data)
        content = b"".join(parts)
        return content if sp.matches(ref, content) else None

    # -- writing ------------------------------------------------------------------------------------
    def create(
        self, plan: sp.StoredPlan, connection: Iterable[hints.ConnectionOption] = ()
    ) -> tuple[Versioned, bool]:
        stored = self.read()
        if stored is None:
            self.sweep()
            content_id = secrets.token_hex(8)
            head, chunks = sp.encode(plan, self.chunk_bytes, where=content_id)
            self._write_content(content_id, chunks)
            if self._create_head(content_id, head):
                return Versioned(dataclasses.replace(plan, content_ref=sp.content_ref(head)), 0), True
            self._remove(content_id, ("none", -1))  # ours, and the head names another
            stored = self.read()
        return lost_create(stored, plan, connection, HEAD)

    def _write_content(self, content_id: str, chunks: list[bytes]) -> None:
        self.session.ensure_path(CONTENT)
        base = f"{CONTENT}/{content_id}"
        for i, chunk in enumerate(chunks):
            t = self.session.client.transaction()
            if i == 0:
                t.create(base, b"", acl=self.session.acl(base))
                t.create(f"{base}/{MARK}", b"", acl=self.session.acl(base), ephemeral=True)
            t.create(chunk_path(content_id, i), chunk, acl=self.session.acl(base))
            self._commit(
                t, base, lambda i=i, chunk=chunk: self.session.get(chunk_path(content_id, i))[0] == chunk
            )

    def _create_head(self, content_id: str, head: bytes) -> bool:
        from kazoo.exceptions import NodeExistsError

        t = self.session.client.transaction()
        t.create(HEAD, head, acl=self.session.acl(HEAD))
        t.delete(f"{CONTENT}/{content_id}/{MARK}")
        return self._commit(t, HEAD, lambda: self.session.get(HEAD)[0] == head, conflicts=(NodeExistsError,))

    def replace(self, seen: Versioned, new: sp.StoredPlan) -> Versioned | None:
        from kazoo.exceptions import BadVersionError, NoNodeError

        if not sp.same_content(new, seen.plan):
            raise ValueError("the content of a stored plan never changes")
        new = dataclasses.replace(new, content_ref=seen.plan.content_ref)
        data = sp.encode_head(new)
        t = self.session.client.transaction()
        t.set_data(HEAD, data, version=seen.version)
        landed = self._commit(
            t,
            HEAD,
            lambda: self.session.get(HEAD) == (data, seen.version + 1),
            conflicts=(BadVersionError, NoNodeError),
        )
        return Versioned(new, seen.version + 1) if landed else None

    def delete(self, seen: Versioned | None = None) -> bool:
        head, version = self.session.get(HEAD)
        if version is None or head is None:
            self.sweep()
            return False
        if seen is not None and version != seen.version:
            return False
        done = self._remove(sp.content_ref(head).where, ("delete", version))
        self.sweep()
        return done

    def _remove(self, content_id: str, head_op: tuple[str, int]) -> bool:
        """Delete `content_id`'s znodes in one transaction with `head_op` on the head: ("delete", v) the
        head at version v; ("check", v) the head still at v; ("absent", -1) no head (created and deleted in
        the transaction); ("none", -1) none (content of our own that no head names). False: the head moved on (or the
        content changed), nothing was deleted."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

        base = f"{CONTENT}/{content_id}"
        t = self.session.client.transaction()
        if head_op[0] == "absent":
            t.create(HEAD, b"", acl=self.session.acl(HEAD))
            t.delete(HEAD)
        elif head_op[0] == "check":
            t.check(HEAD, head_op[1])
        for name in sorted(self.session.children(base)):
            t.delete(f"{base}/{name}")
        if self.session.get(base)[1] is not None:
            t.delete(base)
        if head_op[0] == "delete":
            t.delete(HEAD, version=head_op[1])
        conflicts = (BadVersionError, NodeExistsError, NoNodeError, NotEmptyError)
        deleting = head_op[0] == "delete"

        def landed() -> bool:
            return (not deleting or self.session.get(HEAD)[1] is None) and self.session.get(base)[1] is None

        return self._commit(t, base, landed, conflicts)

    def sweep(self) -> int:
        """Remove content no head names and no live writer guards (a creator killed on the way: its mark
        went with its session). The head fences each removal, so content a head names (or comes to name
        meanwhile) stays. Returns how many were removed."""
        head, version = self.session.get(HEAD)
        named = sp.content_ref(head).where if head is not None and version is not None else None
        removed = 0
        for content_id in self.session.children(CONTENT):
            if content_id == named or MARK in self.session.children(f"{CONTENT}/{content_id}"):
                continue
            fence = ("absent", -1) if version is None else ("check", version)
            removed += self._remove(content_id, fence)
        return removed

    def _commit(self, t: Any, path: str, landed: Any, conflicts: tuple[type[Exception], ...] = ()) -> bool:
        """Commit one transaction: True when it landed, False on one of `conflicts` (nothing was written).
        A lost answer: `landed()` looks whether it did (InDoubt when it cannot tell)."""
        from kazoo.exceptions import RolledBackError

        try:
            results = self.session.write(path, t.commit_async)
        except InDoubt:
            try:
                if landed():
                    return True
            except OperationalError:
                raise unknown_outcome(path) from None
            return False
        errors = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
        if not errors:
            return True
        refused = self.session.refusal(t.operations, results)
        if refused:
            raise refused
        if isinstance(errors[0], conflicts):
            return False
        raise OperationalError(f"cannot write {path}: {type(errors[0]).__name__}")
