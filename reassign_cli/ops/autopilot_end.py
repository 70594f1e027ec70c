"""A broker dies while the autopilot's own plan runs (issue 26): the tick ends that plan early, safely, so
the heal is not held behind it (docs/autopilot.md, "A broker dies while the autopilot's plan runs").

Used by cli/rebalance.py before it steps a stored plan. A plan the autopilot stored carries `AUTOPILOT` in
its schedule object (ops/autopilot.start: the kind, rebalance or heal, and the dead brokers a heal is for);
a plan an operator stored has none and is never ended here ("stepped, never replaced").

The ledger is kept while a plan is stored too (`note_missing`: only the registered brokers are read, so the
missing times of the known brokers keep counting; nothing joins or is forgotten until the next tick with no
plan stored). When a broker is dead (past --dead-after) that the stored plan was not made for (a rebalance,
or a heal of other brokers), `end_early` marks through the fence, as done, so never started:
- every queued move (not started): the plan was made for a cluster that no longer exists;
- every running move whose target holds a dead broker: it can never complete (the dead broker never joins
  the ISR); it is then cancelled, its target saved to a rollback file (ops/isr_cancel.cancel_moves). A
  replica it was copying onto a live broker is dropped with it: Kafka keeps no part of a cancelled move;
- running moves onto live brokers are left to finish: nothing they copied is thrown away.
The step then ends the plan as every plan ends (its last running move done: throttles cleared, the plan
deleted; the moves dropped reported as not as planned), and the same tick plans the heal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reassign_cli.core import autopilot as ap
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import TopicPartition, tp_str

AUTOPILOT = "autopilot"  # the stored plan's schedule key: {"kind": "rebalance"|"heal", "dead": [ids]}


def marker(kind: str, dead: Iterable[int]) -> dict[str, Any]:
    """The schedule entry of a plan the autopilot stores."""
    return {AUTOPILOT: {"kind": kind, "dead": sorted(dead)}}


def made_for(plan: sp.StoredPlan) -> frozenset[int] | None:
    """The dead brokers the autopilot's plan was made for (empty: a rebalance); None: not the autopilot's."""
    mark = plan.schedule.get(AUTOPILOT)
    if not isinstance(mark, Mapping):
        return None
    return frozenset(int(b) for b in mark.get("dead", ()))


def note_missing(backend: Any, now: float) -> ap.Ledger:
    """The ledger with each known broker's missing time kept (a registered one cleared), from the
    registered brokers alone: cheap enough for every tick that steps a plan."""
    from reassign_cli.ops.ledger import ledger_store

    registered = [b.id for b in backend.read_state([]).brokers]

    def fn(ledger: ap.Ledger) -> ap.Ledger:
        return ap.update(ledger, registered, ledger.missing_since.keys(), now)

    with ledger_store(backend) as store:
        return store.update(fn)


@dataclass(frozen=True, slots=True)
class Ended:
    dead: frozenset[int]  # the dead brokers the plan was not made for
    dropped: tuple[TopicPartition, ...]  # queued moves never started
    cancelled: tuple[TopicPartition, ...]  # running moves onto a dead broker, cancelled
    left: tuple[TopicPartition, ...]  # running moves onto live brokers, left to finish
    rollback: str | None  # where the cancelled moves' targets were saved

    def line(self) -> str:
        head = ", ".join(str(b) for b in sorted(self.dead))
        parts = [f"{len(self.dropped)} queued move(s) dropped"]
        if self.cancelled:
            shown = ",".join(tp_str(tp) for tp in self.cancelled[:10])
            parts.append(
                f"{len(self.cancelled)} running move(s) onto a dead broker cancelled ({shown}; targets saved "
                f"to {self.rollback})"
            )
        parts.append(f"{len(self.left)} running move(s) onto live brokers left to finish")
        return (
            f"broker(s) {head} dead while the autopilot's plan runs: it ends early, then the heal is planned: "
            + "; ".join(parts)
        )


def to_end(plan: sp.StoredPlan, dead: frozenset[int]) -> tuple[list[TopicPartition], list[TopicPartition]]:
    """(queued moves to drop, running moves to cancel) of the autopilot's plan with `dead` dead."""
    running = plan.started - plan.done
    queued = [e for e in plan.entries if (e.topic, e.partition) not in plan.started]
    doomed = [
        (e.topic, e.partition)
        for e in plan.entries
        if (e.topic, e.partition) in running and set(e.replicas) & dead
    ]
    return [(e.topic, e.partition) for e in queued], doomed


def end_early(backend: Any, store: Any, dead: frozenset[int], now: float) -> Ended | None:
    """End the autopilot's stored plan early when a broker it was not made for is dead (see the module's
    docstring). None: nothing to do (no plan, an operator's plan, no new dead broker, or already ended)."""
    from reassign_cli.backends import plan_store as ps
    from reassign_cli.ops import isr_cancel

    seen = store.read()
    if seen is None:
        return None
    mine = made_for(seen.plan)
    if mine is None or not dead - mine:
        return None
    found: list[tuple[list[TopicPartition], list[TopicPartition]]] = []

    def fn(plan: sp.StoredPlan) -> sp.StoredPlan | None:
        drop, doomed = to_end(plan, dead)
        found[:] = [(drop, doomed)]
        return sp.mark_done(plan, [*drop, *doomed], now) if drop or doomed else None

    written, after = ps.update(store, fn)
    if not written or after is None:
        return None
    drop, doomed = found[0]
    rollback = str(isr_cancel.cancel_moves(backend, after.plan, doomed)) if doomed else None
    left = tuple(sorted(after.plan.started - after.plan.done))
    return Ended(dead - mine, tuple(drop), tuple(doomed), left, rollback)
