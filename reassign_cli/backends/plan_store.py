"""Where the stored plan (core/stored_plan.py) lives: the one interface of its two stores, and the lease
on top of it. Pure (no kazoo, no kafka): backends/zookeeper/stored_plan.py implements it with znodes under
/reassign_cli/plan, backends/admin/plan_topic.py with the topic __reassign_cli_plan. The step of ops/
(a later session) uses only this interface.

The fence is the stored state's version (ZooKeeper: the head znode's version; the topic: the offset of the
last write that counted). Every change is a compare-and-set on it: `replace` writes only if the version is
still the one read, so of two writers that read the same version one wins and the other learns it lost.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from reassign_cli.core import hints
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.record_log import LeaseWatch
from reassign_cli.errors import OperationalError

MAX_ATTEMPTS = 50  # compare-and-set attempts of one `update` before giving up


@dataclass(frozen=True, slots=True)
class Versioned:
    """The stored plan as read, and the version it was read at (the fence of a `replace`)."""

    plan: sp.StoredPlan
    version: int


PlanFn = Callable[[sp.StoredPlan], "sp.StoredPlan | None"]


class PlanStore(Protocol):
    def read(self) -> Versioned | None:
        """The stored plan (a consistent view), or None when none is stored."""
        ...

    def create(
        self, plan: sp.StoredPlan, connection: Iterable[hints.ConnectionOption] = ()
    ) -> tuple[Versioned, bool]:
        """Store `plan` unless one is stored: (it, True). A stored plan of the same plan bytes: (that one,
        False), a resume. One of other bytes: PlanConflict (exit 4), naming it and how to cancel it."""
        ...

    def replace(self, seen: Versioned, new: sp.StoredPlan) -> Versioned | None:
        """One compare-and-set: `new` written if the stored version is still `seen.version`; None: it was
        not (another writer won, or the plan was deleted), nothing was written. The content (entries,
        sizes, plan digest) never changes: ValueError if `new`'s differs."""
        ...

    def delete(self, seen: Versioned | None = None) -> bool:
        """Remove the stored plan (only if still at `seen.version` when given). False: nothing removed."""
        ...


def update(store: PlanStore, fn: PlanFn, attempts: int = MAX_ATTEMPTS) -> tuple[bool, Versioned | None]:
    """Read-modify-compare-and-set until it wins: `fn(plan)` gives the new plan (None: write nothing), and
    is called again on what another writer wrote when the set loses. (True, written) when `fn`'s plan was
    written, (False, as read) when `fn` declined, (False, None) when no plan is stored."""
    for _ in range(attempts):
        seen = store.read()
        if seen is None:
            return False, None
        new = fn(seen.plan)
        if new is None:
            return False, seen
        if new == seen.plan:
            return True, seen
        written = store.replace(seen, new)
        if written is not None:
            return True, written
    raise OperationalError(f"the stored plan kept changing under us; gave up after {attempts} attempts")


def take_lease(
    store: PlanStore, me: sp.Lease, observer: LeaseWatch, now: Callable[[], float]
) -> tuple[bool, Versioned | None]:
    """Take the driver lease (free, ours already, or stale to `observer` on its clock `now`): (True, the
    plan written). (False, the plan as read) while another run holds it; (False, None): nothing stored."""
    return update(store, lambda p: sp.take_lease(p, me, observer, now()))


def renew_lease(store: PlanStore, run: str) -> Versioned:
    """The holder's renewal; LeaseLost when another run took the lease over, OperationalError when no plan
    is stored any more."""
    _, written = update(store, lambda p: sp.renew_lease(p, run))
    if written is None:
        raise OperationalError("the stored plan is gone (cancelled, or finished by another run)")
    return written


def release_lease(store: PlanStore, run: str) -> None:
    """Give the lease up (nothing happens when another run holds it, or nothing is stored)."""
    update(store, lambda p: sp.release_lease(p, run))


def lost_create(
    stored: Versioned | None, plan: sp.StoredPlan, connection: Iterable[hints.ConnectionOption], where: str
) -> tuple[Versioned, bool]:
    """A create that found a plan stored, or lost its race to one (`stored`: what was read then): the same
    plan's bytes are a resume of it; other bytes are its conflict; nothing stored means a plan was created and
    deleted again meanwhile."""
    if stored is None:
        raise OperationalError(f"{where} changed while this plan was being stored; run the command again")
    found = sp.conflict(stored.plan, plan.plan_sha256, connection)
    if found is not None:
        raise found
    return stored, False


class MemoryPlanStore:
    """A PlanStore in this process's memory, fenced by a version as the cluster's stores are: where a run
    steps a plan that is not stored in the cluster (ops/pacing._Window without ops/stored.Keeper: a plan
    that names log dirs without --max-moves-per-disk, or a caller with no store), so one step function
    serves them too."""

    def __init__(self) -> None:
        self.plan: sp.StoredPlan | None = None
        self.version = 0

    def read(self) -> Versioned | None:
        return None if self.plan is None else Versioned(self.plan, self.version)

    def create(
        self, plan: sp.StoredPlan, connection: Iterable[hints.ConnectionOption] = ()
    ) -> tuple[Versioned, bool]:
        if self.plan is not None:
            return lost_create(self.read(), plan, connection, "this run's memory")
        self.plan, self.version = plan, self.version + 1
        return Versioned(plan, self.version), True

    def replace(self, seen: Versioned, new: sp.StoredPlan) -> Versioned | None:
        if self.plan is None or seen.version != self.version:
            return None
        self.plan, self.version = new, self.version + 1
        return Versioned(new, self.version)

    def delete(self, seen: Versioned | None = None) -> bool:
        if self.plan is None or (seen is not None and seen.version != self.version):
            return False
        self.plan = None
        return True


def me() -> sp.Lease:
    """This run's lease: a random run id, the host and the pid."""
    return sp.Lease(secrets.token_hex(8), socket.gethostname(), os.getpid())


def in_memory(plan: sp.StoredPlan, observer: LeaseWatch) -> tuple[MemoryPlanStore, sp.Lease]:
    """`plan` kept in this process's memory, this run's lease on it (taken)."""
    store = MemoryPlanStore()
    store.create(plan)
    lease = me()
    take_lease(store, lease, observer, time.monotonic)
    return store, lease
