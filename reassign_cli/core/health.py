"""Health holds of a stored plan's step (issue 25, item 5): whether a step may start new moves, and why not.

Pure: plain data in (`Signals`, gathered by backends/admin/health.py or backends/zookeeper/health.py, and
what the step knows of its plan), plain data out (`Verdict`); time is passed in. Holds explain themselves
and never destroy: they only keep new moves from starting. Running moves go on; nothing here cancels.

Used by the step of a stored plan (DESIGN.md §5a, step 3), which a later change wires in: it gathers the
signals, calls `check`, starts no move while `Verdict.held`, starts no move in `Verdict.waiting`, re-lists
the reassignments and re-submits the plan's vanished moves when `Verdict.resubmit`, records
`Verdict.epoch` for the next step, keeps `seen_since` with the plan, and prints `render_line` (or
`to_json` under --format json).

The checks (`CHECKS`, the names `--ignore-health` takes), in the order they read:
- broker-missing: a broker of the plan is not registered;
- broker-fenced: a broker of the plan is registered but fenced (KIP-1073; unknown before Kafka 4.0, and in
  ZooKeeper mode, where a broker is registered or not);
- leaderless: a partition has no leader;
- offline-replicas: a partition has replicas its leader reports offline (a broker down, a failed log dir);
- min-isr: a partition has fewer in-sync replicas than its topic's min.insync.replicas, and it is short of
  a replica (a topic whose replication factor is below its min.insync.replicas is configuration, not
  ill health: it does not hold);
- under-replicated: a partition has a replica out of its ISR, the in-flight moves' adding replicas
  (ListPartitionReassignments) excepted: a replica still copying is not a lost one;
- controller-change: the controller's epoch differs from the one the previous step recorded (a plan's
  first step has none: no hold). It holds for one step, since that step records the new epoch.

Partition checks cover the whole cluster, except `skip_topics` (by default our own topics, OWN_TOPICS: the tool's
business). Broker checks cover the plan's brokers only.

Besides holds, a queued move whose partition is short of a replica and at or under its min.insync.replicas
waits (`Verdict.waiting`) even while nothing holds: e.g. with `--ignore-health under-replicated` for a
long-standing under-replicated partition elsewhere, the rest of the plan goes on and that move waits.
`--ignore-health min-isr` lifts these waits too. An ignored check still counts in `Verdict.ignored`, and a
controller change still asks for `resubmit` when its hold is ignored: re-submitting vanished moves is
repair, not a hold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reassign_cli.core.model import TopicPartition, tp_str
from reassign_cli.core.record_log import TOPIC as RECORD_TOPIC
from reassign_cli.core.stored_plan import TOPIC as PLAN_TOPIC

CHECKS: tuple[str, ...] = (
    "broker-missing",
    "broker-fenced",
    "leaderless",
    "offline-replicas",
    "min-isr",
    "under-replicated",
    "controller-change",
)
# The tool's own topics are its business, not a hold (issue 25 item 5): the throttle record, the stored
# plan and autopilot's ledger (backends/admin/ledger_topic.TOPIC, kept equal by a unit test).
LEDGER_TOPIC = "__reassign_cli_autopilot"
OWN_TOPICS = (RECORD_TOPIC, PLAN_TOPIC, LEDGER_TOPIC)
DEFAULT_MIN_ISR = 1  # Kafka's default min.insync.replicas, for a topic whose value is not known


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    """One partition as the cluster reports it. leader: -1 for none; offline: the replicas reported offline
    (Metadata v5+ OfflineReplicas; in ZooKeeper mode, the replicas on brokers not registered); adding: the
    replicas an in-flight move is adding (ListPartitionReassignments, or the topic znode's adding_replicas)."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()

    def missing(self) -> tuple[int, ...]:
        """Replicas out of the ISR, other than the ones a move is adding, in replica order."""
        return tuple(b for b in self.replicas if b not in self.isr and b not in self.adding)


@dataclass(frozen=True, slots=True)
class Signals:
    """What a backend gathers for a step. registered: the registered brokers (fenced ones included when
    `fenced` is known); fenced: None when the cluster cannot say (before Kafka 4.0, ZooKeeper mode);
    min_isr: per topic, its min.insync.replicas (the topic's or the brokers' default); controller_epoch:
    ZooKeeper's /controller_epoch, or the KRaft quorum's leader epoch, None when unknown; notes: what could
    not be read, one line each (the step shows them; they do not hold)."""

    registered: frozenset[int]
    fenced: frozenset[int] | None
    partitions: Mapping[TopicPartition, PartitionHealth]
    min_isr: Mapping[str, int]
    controller_epoch: int | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Hold:
    """One reason not to start moves: the check, what it is about (`broker` or `partition`, or neither
    for the controller) and a one-line reason."""

    check: str
    reason: str
    broker: int | None = None
    partition: TopicPartition | None = None

    @property
    def subject(self) -> str:
        if self.broker is not None:
            return f"broker {self.broker}"
        if self.partition is not None:
            return f"partition {tp_str(self.partition)}"
        return "controller"

    @property
    def key(self) -> str:
        """Stable across steps (for `seen_since`): check and subject."""
        return f"{self.check}:{self.subject}"

    def sort_key(self) -> tuple[int, int, str, int]:
        t, p = self.partition or ("", -1)
        return (CHECKS.index(self.check), -1 if self.broker is None else self.broker, t, p)


@dataclass(frozen=True, slots=True)
class Verdict:
    """holds: in CHECKS order, then by broker or partition; waiting: queued moves' partitions that wait
    for min ISR; resubmit: the controller changed, re-list and re-submit the plan's vanished moves;
    epoch: the controller epoch to record for the next step; ignored: the holds --ignore-health silenced."""

    holds: tuple[Hold, ...]
    waiting: frozenset[TopicPartition]
    resubmit: bool
    epoch: int | None
    ignored: tuple[Hold, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def held(self) -> bool:
        return bool(self.holds)

    def may_start(self, tp: TopicPartition) -> bool:
        return not self.holds and tp not in self.waiting


def parse_ignore(names: Iterable[str]) -> frozenset[str]:
    """`--ignore-health` values (repeatable; "all" for every check). ValueError names an unknown one."""
    out: set[str] = set()
    for name in names:
        n = name.strip().lower()
        if n == "all":
            out |= set(CHECKS)
        elif n in CHECKS:
            out.add(n)
        else:
            raise ValueError(f"unknown health check {name!r}; the checks are: {', '.join(CHECKS)}, all")
    return frozenset(out)


def check(
    signals: Signals,
    *,
    plan_brokers: Iterable[int],
    queued: Iterable[TopicPartition],
    previous_epoch: int | None,
    ignore: Iterable[str] = (),
    skip_topics: Iterable[str] = OWN_TOPICS,
) -> Verdict:
    """The holds of one step (see the module docstring for each check)."""
    ignored_checks = frozenset(ignore)
    skip = frozenset(skip_topics)
    queued_set = frozenset(queued)
    found = _broker_holds(signals, frozenset(plan_brokers))
    waiting: set[TopicPartition] = set()
    for tp in sorted(signals.partitions):
        if tp[0] in skip:
            continue
        ph = signals.partitions[tp]
        found += _partition_holds(tp, ph, signals.min_isr.get(tp[0], DEFAULT_MIN_ISR))
        if tp in queued_set and _at_min_isr(ph, signals.min_isr.get(tp[0], DEFAULT_MIN_ISR)):
            waiting.add(tp)
    now, before = signals.controller_epoch, previous_epoch
    changed = now is not None and before is not None and now != before
    if changed:
        found.append(Hold("controller-change", f"the controller changed (epoch {now}, was {before})"))
    found.sort(key=Hold.sort_key)
    return Verdict(
        holds=tuple(h for h in found if h.check not in ignored_checks),
        waiting=frozenset() if "min-isr" in ignored_checks else frozenset(waiting),
        resubmit=changed,
        epoch=now if now is not None else before,
        ignored=tuple(h for h in found if h.check in ignored_checks),
        notes=signals.notes,
    )


def _broker_holds(signals: Signals, plan_brokers: frozenset[int]) -> list[Hold]:
    holds: list[Hold] = []
    fenced = signals.fenced or frozenset()
    for b in sorted(plan_brokers):
        if b in fenced:
            holds.append(Hold("broker-fenced", f"broker {b} is fenced", broker=b))
        elif b not in signals.registered:
            holds.append(Hold("broker-missing", f"broker {b} is not registered", broker=b))
    return holds


def _brokers(ids: Iterable[int]) -> str:
    ids = list(ids)
    return f"broker {ids[0]}" if len(ids) == 1 else "brokers " + ", ".join(str(b) for b in ids)


def _partition_holds(tp: TopicPartition, ph: PartitionHealth, min_isr: int) -> list[Hold]:
    name = tp_str(tp)
    holds: list[Hold] = []
    if ph.leader < 0:
        holds.append(Hold("leaderless", f"partition {name} has no leader", partition=tp))
    if ph.offline:
        holds.append(
            Hold(
                "offline-replicas",
                f"partition {name} has offline replicas on {_brokers(ph.offline)}",
                partition=tp,
            )
        )
    missing = ph.missing()
    if missing and len(ph.isr) < min_isr:
        reason = f"partition {name} is under min.insync.replicas ({len(ph.isr)} in sync of {min_isr})"
        holds.append(Hold("min-isr", reason, partition=tp))
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        reason = f"partition {name} is under-replicated ({_brokers(missing)} {verb} out of its ISR)"
        holds.append(Hold("under-replicated", reason, partition=tp))
    return holds


def _at_min_isr(ph: PartitionHealth, min_isr: int) -> bool:
    """Short of a replica, and at or under min ISR: one more loss and acks=all producers fail."""
    return bool(ph.missing()) and len(ph.isr) <= min_isr


def seen_since(verdict: Verdict, previous: Mapping[str, float], now: float) -> dict[str, float]:
    """When each of the verdict's holds was first seen (Hold.key -> time): kept from `previous` for a hold
    seen before, `now` for a new one; holds gone are dropped. The step stores it with the plan."""
    return {h.key: previous.get(h.key, now) for h in verdict.holds}


def _duration(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def render_line(
    verdict: Verdict,
    *,
    first_seen: Mapping[str, float],
    now: float,
    moving: int,
    queued: int,
    of_log_dirs: bool = False,
) -> str | None:
    """The step's one line, or None when nothing holds and nothing waits.

    One hold: `held: broker 3 is not registered (since 40 s); 2 moving, 5 queued`. Several: the first (in
    CHECKS order, then broker or partition) and how many more of which checks, e.g. `held: broker 3 is not
    registered (since 40 s), and 4 more (offline-replicas 2, under-replicated 2); 2 moving, 5 queued`.
    Nothing held but min-ISR waits: `waiting: partition t-0 is at min.insync.replicas, a queued move waits
    (and 1 more); 2 moving, 5 queued`.

    `of_log_dirs`: the counts are of a stored plan's log-dir moves (its partition moves all done):
    `held: broker 3 is not registered (since 40 s); log-dir moves: 1 moving, 2 queued`."""
    counts = f"{'log-dir moves: ' if of_log_dirs else ''}{moving} moving, {queued} queued"
    if verdict.holds:
        first = verdict.holds[0]
        since = _duration(now - first_seen.get(first.key, now))
        line = f"held: {first.reason} (since {since})"
        rest = verdict.holds[1:]
        if rest:
            by_check = Counter(h.check for h in rest)
            detail = ", ".join(f"{c} {by_check[c]}" for c in CHECKS if c in by_check)
            line += f", and {len(rest)} more ({detail})"
        return f"{line}; {counts}"
    if verdict.waiting:
        first_tp, *others = sorted(verdict.waiting)
        more = f" (and {len(others)} more)" if others else ""
        return f"waiting: partition {tp_str(first_tp)} is at min.insync.replicas, a queued move waits{more}; {counts}"
    return None


def to_json(
    verdict: Verdict,
    *,
    first_seen: Mapping[str, float],
    now: float,
    moving: int,
    queued: int,
    of_log_dirs: bool = False,
) -> dict[str, Any]:
    """The same for --format json: every hold (check, subject, broker, partition, reason, since_seconds),
    the waiting partitions, the ignored holds, resubmit, the epoch recorded and the line (`of_log_dirs`:
    moving and queued count log-dir moves, as in render_line)."""

    def hold(h: Hold, since: bool) -> dict[str, Any]:
        d: dict[str, Any] = {
            "check": h.check,
            "subject": h.subject,
            "broker": h.broker,
            "partition": None
            if h.partition is None
            else {"topic": h.partition[0], "partition": h.partition[1]},
            "reason": h.reason,
        }
        if since:
            d["since_seconds"] = round(max(0.0, now - first_seen.get(h.key, now)), 1)
        return d

    return {
        "held": verdict.held,
        "line": render_line(
            verdict, first_seen=first_seen, now=now, moving=moving, queued=queued, of_log_dirs=of_log_dirs
        ),
        "holds": [hold(h, True) for h in verdict.holds],
        "waiting": [{"topic": t, "partition": p} for t, p in sorted(verdict.waiting)],
        "ignored": [hold(h, False) for h in verdict.ignored],
        "resubmit": verdict.resubmit,
        "controller_epoch": verdict.epoch,
        "notes": list(verdict.notes),
        "moving": moving,
        "queued": queued,
    }
