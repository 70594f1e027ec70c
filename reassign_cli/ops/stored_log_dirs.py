"""The log-dir moves of a stored plan (issue 27 item 3 with issue 25): `execute --detach` of a plan that
names log dirs, carried on by cron `verify` steps (ops/step.py calls the hooks here).

Kept in the stored plan's `schedule` object under its own key, `log_dir_moves` (as `throttle_loop` and
`on_under_min_isr` are kept there; the head's format does not change): `{"cap": N | null, "one_broker":
bool, "started": ["topic:partition:broker", ...], "done": [...]}`. `cap` is --max-moves-per-disk (null: no
cap, every move starts at once), `one_broker` --one-broker-at-a-time. The moves are the plan's replicas with
a log dir other than "any" (`planned`); started/done are recorded through the step's fence; running =
started - done, queued = the rest.

What the step does with them, as a foreground execute does:
- before a partition move is submitted (`tell`), the brokers that receive a replica are told its log dir
  (AlterReplicaLogDirs: a replica not there yet answers ReplicaNotAvailable, and its broker remembers the
  dir for when it creates it). A replica its broker already holds is not told then: that is an
  intra-broker move, paced later.
- once every partition move is done (`phase`): each planned replica is read with DescribeLogDirs; in its
  dir with no future copy: done; its future copy in the planned dir: running (adopted if not recorded);
  recorded started but neither: started again. Then, while no pause, hours or health hold, the queued
  moves that fit under the cap (core/logdir_pacing.DiskQueue: at most `cap` per disk, one broker at a
  time) are recorded started through the fence, the log-dir throttle written through execute's fenced
  commit (prior values recorded: verify's clear at the end restores them), then AlterReplicaLogDirs.
- when every planned replica is in its dir, the step's usual end (verify with the dirs, throttles
  cleared, the stored plan deleted).

A foreground paced execute's stored plan (cli/stored.foreground, with --max-moves-per-disk) keeps the same
key: ops/log_dirs._Run records each move through ops/stored.Keeper (`mark_started` before it starts,
`mark_done` when seen done). verify of the stored plan's own file calls a move not started yet queued
(`queued_moves`); list shows `counts`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from reassign_cli.core import logdir_pacing as lp
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.model import ClusterState, PlanEntry, ReassignmentFile
from reassign_cli.core.progress import MoveStatus, ReplicaMoveProgress
from reassign_cli.errors import OperationalError

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import ReplicaDirs, ReplicaKey

KEY = "log_dir_moves"


class StepEnv(Protocol):
    """What the hooks use of ops/step.StepEnv (not imported: step imports this module)."""

    backend: Any
    store: Any
    sizer: Any
    throttle_settle: float


def _rk(k: ReplicaKey) -> str:
    t, p, b = k
    return f"{t}:{p}:{b}"


def _unrk(text: str) -> ReplicaKey:
    t, p, b = text.rsplit(":", 2)
    return (t, int(p), int(b))


@dataclass(frozen=True, slots=True)
class DirPace:
    """The stored state of a plan's log-dir moves."""

    cap: int | None = None
    one_broker: bool = False
    started: frozenset[ReplicaKey] = frozenset()
    done: frozenset[ReplicaKey] = frozenset()

    def doc(self) -> dict[str, Any]:
        return {
            "cap": self.cap,
            "one_broker": self.one_broker,
            "started": sorted(_rk(k) for k in self.started),
            "done": sorted(_rk(k) for k in self.done),
        }


def with_dirs(schedule: Mapping[str, Any], cap: int | None, one_broker: bool) -> dict[str, Any]:
    """The plan's schedule object with its log-dir pace kept under KEY (its other keys kept)."""
    return {**schedule, KEY: DirPace(cap, one_broker).doc()}


def stored(plan: sp.StoredPlan) -> DirPace | None:
    """The plan's log-dir pace (None: a plan stored without one). StoredPlanError when it does not parse."""
    doc = plan.schedule.get(KEY)
    if doc is None:
        return None
    try:
        cap = doc["cap"]
        if cap is not None and (type(cap) is not int or cap < 1):
            raise ValueError(f"cap {cap!r}")
        started = frozenset(_unrk(str(x)) for x in doc["started"])
        done = frozenset(_unrk(str(x)) for x in doc["done"])
        return DirPace(cap, bool(doc["one_broker"]), started | done, done)
    except (KeyError, TypeError, ValueError) as e:
        raise sp.StoredPlanError(f"{sp.WHAT}'s log-dir moves do not parse: {e}") from None


def keep(plan: sp.StoredPlan, pace: DirPace) -> sp.StoredPlan:
    return replace(plan, schedule={**plan.schedule, KEY: pace.doc()})


def planned(entries: Iterable[PlanEntry]) -> ReplicaDirs:
    """Every replica the plan names a log dir for (other than "any"): its dir."""
    return ReassignmentFile(list(entries)).log_dir_targets()


@dataclass(frozen=True, slots=True)
class DirCounts:
    total: int
    moving: int
    queued: int
    done: int

    def line(self) -> str:
        return f"log-dir moves: {self.moving} moving, {self.queued} queued, {self.done} done of {self.total}"

    def doc(self) -> dict[str, int]:
        return {"total": self.total, "moving": self.moving, "queued": self.queued, "done": self.done}


def counts(plan: sp.StoredPlan) -> DirCounts | None:
    """The plan's log-dir moves: moving (started, not done), queued, done; None: the plan names no dir."""
    pace = stored(plan)
    if pace is None:
        return None
    keys = set(planned(plan.entries))
    done = len(pace.done & keys)
    moving = len((pace.started - pace.done) & keys)
    return DirCounts(len(keys), moving, len(keys) - moving - done, done)


# -- pure decisions ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DirSeen:
    """The planned replicas as DescribeLogDirs shows them."""

    done: frozenset[ReplicaKey]  # in the planned dir, no future copy
    running: dict[ReplicaKey, lp.DirMove]  # a future copy in the planned dir
    queued: list[lp.DirMove]  # in another dir, no future copy in the planned one
    unknown: frozenset[ReplicaKey]  # not found, or its broker did not answer


def observe(targets: Mapping[ReplicaKey, str], states: Mapping[ReplicaKey, lp.DirState]) -> DirSeen:
    done, running, queued, unknown = set(), {}, [], set()
    for key, target in sorted(targets.items()):
        st = states.get(key)
        if st is None or st.current is None:
            unknown.add(key)
        elif st.future == target:
            running[key] = lp.DirMove(key, st.current, target)
        elif st.current == target and st.future is None:
            done.add(key)
        else:
            queued.append(lp.DirMove(key, st.current, target))
    return DirSeen(frozenset(done), running, queued, frozenset(unknown))


def decide(pace: DirPace, seen: DirSeen, may_start: bool) -> tuple[DirPace, list[lp.DirMove]]:
    """The pace with what was seen recorded (done; running adopted; a started move neither running nor done
    queued again), and the moves to start now (none unless `may_start`)."""
    started = (pace.started - seen.done - {m.key for m in seen.queued}) | set(seen.running) | seen.done
    after = replace(pace, started=frozenset(started | pace.done), done=pace.done | seen.done)
    if not may_start or not seen.queued:
        return after, []
    cap = pace.cap if pace.cap is not None else max(1, len(seen.queued) + len(seen.running))
    new = lp.DiskQueue(seen.queued).take(seen.running.values(), cap, pace.one_broker)
    return replace(after, started=after.started | {m.key for m in new}), new


# -- the step's hooks --------------------------------------------------------------------------------
def _mover(env: StepEnv) -> Any:
    if env.sizer is None:
        raise OperationalError(
            "this stored plan names log dirs: its steps need the brokers (--bootstrap-server, also beside "
            "--zookeeper)"
        )
    return env.sizer


def tell(env: StepEnv, plan: sp.StoredPlan, state: ClusterState, batch: Sequence[PlanEntry]) -> None:
    """Before the batch is submitted: the brokers that receive a replica are told its planned log dir (a
    replica its broker already holds is an intra-broker move: paced by `phase`)."""
    if stored(plan) is None:
        return
    from reassign_cli.ops.dir_moves import raise_hard
    from reassign_cli.ops.log_dirs import intra_moves

    held = intra_moves(batch, state)
    arriving = {k: d for k, d in planned(batch).items() if k not in held}
    if arriving:
        raise_hard(_mover(env).attempt(arriving)[1])


@dataclass(slots=True)
class PhaseResult:
    """What `phase` did: the moves it started, and whether the fence was lost."""

    started: list[ReplicaKey]
    lost_fence: bool = False
    lines: list[str] = field(default_factory=list)  # the log-dir loop's changes and warnings
    changes: list[dict[str, Any]] = field(default_factory=list)  # its changes written, as --format json lists


def phase(
    env: StepEnv, seen: Any, plan: sp.StoredPlan, may_start: bool, now: float, tripped: str | None = None
) -> tuple[sp.StoredPlan, PhaseResult] | None:
    """Every partition move done: the log-dir moves stepped (see the module docstring). None: every planned
    replica is in its dir (the step's usual end follows). `plan` is the step's plan (its marks, stepped,
    lease renewed), written here in ONE compare-and-set with the log-dir marks before any start."""
    from reassign_cli.ops.log_dirs import dir_states

    pace = stored(plan)
    if pace is None:
        return None
    targets = {k: d for k, d in planned(plan.entries).items() if k not in pace.done}
    mover = _mover(env)
    states = dir_states(mover, targets) if targets else {}
    view = observe(targets, states)
    if not targets or (not view.running and not view.queued and not view.unknown):
        return None  # every planned replica in its dir: the end's verify checks them again
    after, new = decide(pace, view, may_start)
    before = plan
    ticked = _tick(keep(plan, after), states, view, now, tripped)
    plan = ticked.plan
    written = env.store.replace(seen, plan)
    if written is None:
        return plan, PhaseResult([], lost_fence=True)
    lines, changes = _settle(env, written, before, ticked, now)
    plan = written.plan
    if new:
        _start(env, plan, new)
    return plan, PhaseResult([m.key for m in new], lines=lines, changes=changes)


def _tick(
    plan: sp.StoredPlan,
    states: Mapping[ReplicaKey, lp.DirState],
    view: DirSeen,
    now: float,
    tripped: str | None = None,
) -> Any:
    """The adaptive log-dir throttle kept with the plan (ops/stored_logdir_rates.py) ticked on the running
    moves' sizes as read now; `tripped`: the step's health hold, which halves it as it halves the
    replication loop."""
    from reassign_cli.ops import stored_logdir_rates as lr

    sizes = {
        k: (st.future_bytes, st.current_bytes)
        for k in view.running
        if (st := states[k]).future_bytes is not None and st.current_bytes is not None
    }
    return lr.tick(plan, sizes, now, tripped)


def _settle(
    env: StepEnv, written: Any, before: sp.StoredPlan, ticked: Any, now: float
) -> tuple[list[str], list[dict[str, Any]]]:
    """After the compare-and-set: the loop's changes written (fenced), one line each, and as --format json
    lists them; a write that fails puts the loop back as it was through one more compare-and-set (the next
    step decides again)."""
    from datetime import UTC, datetime

    from reassign_cli.ops import stored_logdir_rates as lr

    when = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
    try:
        lines = [*ticked.warnings, *lr.write(env.backend, ticked.changes)]
        return lines, [{"time": when, **c.to_dict()} for c in ticked.changes]
    except OperationalError as e:
        env.store.replace(written, lr.unwritten(written.plan, before))
        line = f"{e}; the log-dir throttle rates were not written, the next step decides again"
        return [*ticked.warnings, line], []


def _start(env: StepEnv, plan: sp.StoredPlan, new: list[lp.DirMove]) -> None:
    """The log-dir throttle through execute's fenced commit (prior values recorded), then the moves."""
    from reassign_cli.ops.dir_moves import raise_hard
    from reassign_cli.ops.stored_logdir_rates import overrides
    from reassign_cli.ops.throttle_writes import apply_throttles

    rate = plan.pace.log_dir_throttle
    if rate is not None:
        entries = [PlanEntry(m.key[0], m.key[1], [m.broker], [m.target]) for m in new]
        state = env.backend.read_state([])  # the brokers registered: a rate is set through its broker
        writes = apply_throttles(env.backend, state, entries, None, rate, overrides=overrides(plan))
        if writes.changes:
            time.sleep(env.throttle_settle)
    started, failed = _mover(env).attempt({m.key: m.target for m in new})
    raise_hard(failed)
    if len(started) < len(new):  # not there (yet): the next step sees it queued and starts it again
        return


def queued_moves(moves: Sequence[ReplicaMoveProgress], plan: sp.StoredPlan) -> list[ReplicaMoveProgress]:
    """verify of the stored plan's own file: a planned replica in another dir with no copy under way is
    queued (its steps start it later), not "not being moved", while the stored plan keeps log-dir moves."""
    if stored(plan) is None:
        return list(moves)
    return [replace(m, status=MoveStatus.QUEUED) if m.status is MoveStatus.NOT_MOVING else m for m in moves]


# -- a foreground paced execute's stored plan (ops/stored.Keeper, ops/log_dirs._Run) ------------------
def mark_started(plan: sp.StoredPlan, keys: Iterable[ReplicaKey]) -> sp.StoredPlan:
    """The log-dir moves `keys` recorded as started (before they are started)."""
    pace = stored(plan)
    if pace is None:
        return plan
    return keep(plan, replace(pace, started=pace.started | frozenset(keys)))


def mark_done(plan: sp.StoredPlan, keys: Iterable[ReplicaKey]) -> sp.StoredPlan:
    """The log-dir moves `keys` recorded as done (and started)."""
    pace = stored(plan)
    if pace is None:
        return plan
    new = frozenset(keys)
    return keep(plan, replace(pace, started=pace.started | new, done=pace.done | new))
