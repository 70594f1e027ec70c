"""The standing pause (issue 26, "`pause` stops autopilot too"; docs/autopilot.md): `kafka-reassign pause`
with no plan stored records a pause (who, when, why) in the autopilot's ledger document, beside the stored
plan (ZooKeeper mode: the znode /reassign_cli/autopilot-brokers; the admin API alone: the topic
__reassign_cli_autopilot; ops/ledger.ledger_store). While it stands:
- every `rebalance` tick with no plan stored says `skipped: paused since T by USER@HOST: REASON`, starts
  nothing, exit 4 (as a paused stored plan's `verify`);
- a plan stored by `execute --detach` (or a tick) is stored paused with the same pause (`pause_new_plan`),
  so its first step starts nothing;
- `continue` removes it (with the stored plan's pause, when one is stored), `list` shows it.

Used by cli/plan_ctl.py (pause, continue, list), ops/autopilot.tick and ops/stored.detach.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from reassign_cli.core import autopilot as ap
from reassign_cli.core import schedule as sch


def read(backend: Any) -> sch.Paused | None:
    """The standing pause, or None (reads only: opening the store writes nothing)."""
    from reassign_cli.ops.ledger import _read, ledger_store

    with ledger_store(backend) as store:
        ledger = _read(store)
    return of(ledger)


def of(ledger: ap.Ledger) -> sch.Paused | None:
    return sch.Paused.from_dict(ledger.paused) if ledger.paused else None


def pause(backend: Any, now: datetime, user: str, host: str, reason: str | None) -> tuple[sch.Paused, bool]:
    """Record the standing pause (fenced): (the pause standing now, True when one stood already: kept as
    it was, the first pause wins as a stored plan's)."""
    from reassign_cli.ops.ledger import ledger_store

    found: list[tuple[sch.Paused, bool]] = []

    def fn(ledger: ap.Ledger) -> ap.Ledger:
        current = of(ledger)
        new = sch.pause(current, now, user, host, reason)
        found[:] = [(new, current is not None)]
        return ledger if current is not None else dataclasses.replace(ledger, paused=new.to_dict())

    with ledger_store(backend) as store:
        store.update(fn)
    return found[0]


def lift(backend: Any) -> sch.Paused | None:
    """Remove the standing pause (fenced): the pause removed, None when none stood (nothing written)."""
    from reassign_cli.ops.ledger import ledger_store

    found: list[sch.Paused | None] = [None]

    def fn(ledger: ap.Ledger) -> ap.Ledger:
        found[0] = of(ledger)
        return ledger if ledger.paused is None else dataclasses.replace(ledger, paused=None)

    if read(backend) is None:  # the common case: nothing to remove, nothing written (no topic created)
        return None
    with ledger_store(backend) as store:
        store.update(fn)
    return found[0]


def pause_new_plan(backend: Any, store: Any) -> sch.Paused | None:
    """A plan just stored (execute --detach, a tick's plan) while the standing pause stands: the stored
    plan paused with it (fenced; a plan paused already is left as it is). Called after the plan is created
    and before its first step, so a `pause` racing the store is seen either here or by `pause` itself (it
    records the standing pause, then pauses a plan stored meanwhile). The pause applied, or None."""
    from reassign_cli.backends import plan_store as ps

    standing = read(backend)
    if standing is None:
        return None

    def fn(plan: Any) -> Any:
        if plan.paused:
            return None
        return dataclasses.replace(plan, paused=standing.to_dict())

    ps.update(store, fn)
    return standing
