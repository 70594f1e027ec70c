"""Where each planned partition stands: complete, in progress, or not as planned. Pure: no I/O.

KAFKA-SPEC §4.5 and DESIGN §5. Kafka 2.8's ZooKeeper verify looks only at /admin/reassign_partitions
and the topic znode; we also count a partition as in progress while its topic znode has adding or
removing replicas (what 3.9's ListPartitionReassignments reports), which covers API-started
reassignments and a trigger znode deleted by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition
from reassign_cli.errors import ExitCode


class Status(StrEnum):
    COMPLETE = "complete"
    IN_PROGRESS = "in_progress"
    NOT_AS_PLANNED = "not_as_planned"
    # Not started yet by a run of this plan that has work left (a paced or batched execute, interrupted or
    # between two moves): still to come, not a failure. Only `queued` (verify) gives it.
    QUEUED = "queued"


@dataclass(slots=True)
class PartitionProgress:
    topic: str
    partition: int
    target: list[int]
    current: list[int]  # the topic znode's replicas ([] if the topic or partition is missing)
    status: Status
    reason: str | None  # what we can say about why it is not complete; None when nothing useful
    adding: list[int]
    removing: list[int]
    isr: list[int] | None  # None when the partition state znode was not read

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def classify(targets: Mapping[TopicPartition, list[int]], state: ClusterState) -> list[PartitionProgress]:
    """One result per planned partition, sorted by (topic, partition).

    in progress: the partition is in /admin/reassign_partitions or its topic znode has AR/RR;
    complete: neither, and the replicas equal the target in order;
    not as planned: neither, and the replicas differ (or the partition does not exist).
    """
    registered = set(state.broker_ids)
    znode = state.reassignment or {}
    topics = state.topics
    complete, in_progress, not_as_planned = Status.COMPLETE, Status.IN_PROGRESS, Status.NOT_AS_PLANNED
    out: list[PartitionProgress] = []
    append = out.append
    for tp in sorted(targets):
        target = list(targets[tp])
        t, p = tp
        topic = topics.get(t)
        if topic is None:
            current: list[int] = []
            adding: list[int] = []
            removing: list[int] = []
            isr: list[int] | None = None
            exists = False
        else:
            reps = topic.replicas.get(p)
            exists = reps is not None
            current = list(reps) if reps is not None else []
            adding = list(topic.adding[p]) if topic.adding and p in topic.adding else []
            removing = list(topic.removing[p]) if topic.removing and p in topic.removing else []
            isr = list(topic.isr[p]) if topic.isr and p in topic.isr else None

        if adding or removing or tp in znode:
            status = in_progress
            reason = _in_progress_reason(
                target, current, adding, removing, isr, znode.get(tp), registered, exists
            )
        elif exists and current == target:
            status, reason = complete, None
        else:
            status = not_as_planned
            reason = _not_as_planned_reason(target, current, topic is not None, exists)
        append(PartitionProgress(t, p, target, current, status, reason, adding, removing, isr))
    return out


def _ints(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def _in_progress_reason(
    target: list[int],
    current: list[int],
    adding: list[int],
    removing: list[int],
    isr: list[int] | None,
    znode_entry: list[int] | None,
    registered: set[int],
    exists: bool,
) -> str | None:
    if not exists:
        return "partition does not exist yet; the controller will drop the entry"
    if znode_entry is not None and znode_entry != target:
        return f"a different reassignment is running: to {_ints(znode_entry)}"
    if (adding or removing) and [b for b in current if b not in removing] != target:
        running = [b for b in current if b not in removing]
        return f"a different reassignment is running: to {_ints(running)}"
    missing = [b for b in target if b not in registered]
    if missing:
        word = "broker" if len(missing) == 1 else "brokers"
        verb = "is" if len(missing) == 1 else "are"
        return f"{word} {_ints(missing)} {verb} not registered"
    if isr is not None:
        lagging = [b for b in target if b not in isr]
        if lagging:
            return f"replicas {_ints(lagging)} not yet in ISR [{_ints(isr)}]"
        if adding or removing:
            return "all target replicas are in the ISR; waiting for the controller to finish"
    if znode_entry is not None and not adding and not removing:
        if current == target:
            return "replicas are at the target; waiting for the controller to remove the entry"
        return "waiting for the controller to start it"
    return None


def _not_as_planned_reason(
    target: list[int], current: list[int], topic_exists: bool, exists: bool
) -> str | None:
    if not topic_exists:
        return "topic does not exist"
    if not exists:
        return "partition does not exist"
    if sorted(current) == sorted(target):
        return "same replicas in a different order"
    return None


def queued(results: Iterable[PartitionProgress]) -> list[PartitionProgress]:
    """The results of a plan whose run has work left (ops.pace_file.work_left): a partition that is neither
    moving nor at its target has not been started yet, so it is queued, not "not as planned". The others
    are unchanged."""
    out = []
    for r in results:
        if r.status is Status.NOT_AS_PLANNED:
            r = dataclasses.replace(r, status=Status.QUEUED, reason=None)
        out.append(r)
    return out


def passing_through(target: Sequence[int], current: Sequence[int]) -> bool:
    """`current` is the replica set a move to `target` passes through, as Kafka writes it while the move
    runs: the target first, in its order, then the replicas being removed. A broker's metadata that still
    shows it after the controller has ended the move is trailing; a partition at its origin (a move never
    started, or cancelled) is not."""
    return len(current) > len(target) and list(current[: len(target)]) == list(target)


def overall_status(results: Iterable[PartitionProgress]) -> Status:
    """complete if every partition is; in progress if any is (or is queued: the plan's run goes on);
    otherwise not as planned."""
    statuses = {r.status for r in results}
    if Status.IN_PROGRESS in statuses or Status.QUEUED in statuses:
        return Status.IN_PROGRESS
    if Status.NOT_AS_PLANNED in statuses:
        return Status.NOT_AS_PLANNED
    return Status.COMPLETE


_EXIT = {
    Status.COMPLETE: ExitCode.OK,
    Status.IN_PROGRESS: ExitCode.BUSY,
    Status.NOT_AS_PLANNED: ExitCode.NOT_AS_PLANNED,
    Status.QUEUED: ExitCode.BUSY,
}


def overall_exit(results: Iterable[PartitionProgress]) -> int:
    """0 all complete; 4 any in progress; 5 otherwise (DESIGN §2)."""
    return _EXIT[overall_status(results)]


def anything_reassigning(state: ClusterState) -> bool:
    """True while the trigger znode has entries, any topic in `state` has AR/RR, or the read saw
    reassignments in other topics: throttles stay.

    Only what the read saw counts: read every topic's AR/RR for the cluster-wide answer (Kafka 3.9
    removes throttles only when no reassignment is active anywhere).
    """
    if state.reassignment or state.reassigning_elsewhere:
        return True
    return any(t.adding or t.removing for t in state.topics.values())


def kafka_line(p: PartitionProgress) -> str:
    """Kafka 3.9's verify line for the partition."""
    if p.status is Status.IN_PROGRESS:
        return f"Reassignment of partition {p.name} is still in progress."
    if p.status is Status.COMPLETE:
        return f"Reassignment of partition {p.name} is completed."
    if p.status is Status.QUEUED:
        # Kafka's in-progress sentence first (scripts match it), then why nothing moves
        return f"Reassignment of partition {p.name} is still in progress (queued: not started yet)."
    return (
        f"There is no active reassignment of partition {p.name}, "
        f"but replica set is {_ints(p.current)} rather than {_ints(p.target)}."
    )


def caught_up(p: PartitionProgress) -> tuple[int, int]:
    """(target replicas in the ISR, target size), for progress bars. Complete counts as all caught up;
    an unknown ISR as none."""
    n = len(p.target)
    if p.status is Status.COMPLETE:
        return n, n
    if p.isr is None:
        return 0, n
    isr = set(p.isr)
    return sum(1 for b in p.target if b in isr), n


def partition_json(p: PartitionProgress) -> dict[str, Any]:
    return {
        "topic": p.topic,
        "partition": p.partition,
        "status": str(p.status),
        "target": p.target,
        "current": p.current,
        "adding": p.adding,
        "removing": p.removing,
        "isr": p.isr,
        "reason": p.reason,
    }


def report_json(results: Iterable[PartitionProgress]) -> dict[str, Any]:
    """The --format json verify document: overall status plus one object per partition, in order."""
    items = list(results)
    return {"status": str(overall_status(items)), "partitions": [partition_json(p) for p in items]}


@dataclass(slots=True)
class Resume:
    """A plan run again (`execute --batch-size` or `--resume` after an interruption), split by where each
    partition stands: `done` already on its target with nothing moving, `running` moving right now to the
    target this plan gives it (a batch the interrupted run had started), `todo` the rest."""

    done: list[PlanEntry]
    running: list[PlanEntry]
    todo: list[PlanEntry]


def resume_split(entries: Sequence[PlanEntry], state: ClusterState) -> Resume:
    """Split `entries` (in order) for a resumed run. The caller has checked that whatever is running is
    this plan's (executor.same_reassignment); a partition moving elsewhere counts as todo."""
    znode = state.reassignment or {}
    out = Resume([], [], [])
    for e in entries:
        topic = state.topics.get(e.topic)
        moving = (e.topic, e.partition) in znode or (topic is not None and topic.is_reassigning(e.partition))
        if moving:
            target = znode.get((e.topic, e.partition)) or (topic.target(e.partition) if topic else None)
            (out.running if target == e.replicas else out.todo).append(e)
        elif topic is not None and list(topic.replicas.get(e.partition) or ()) == e.replicas:
            out.done.append(e)
        else:
            out.todo.append(e)
    return out


class StuckWatch:
    """Notices moves that cannot finish because a target broker is not registered, once that has lasted
    `limit` seconds; each (partition, broker) is reported once. Time is passed in (pure)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._since: dict[tuple[TopicPartition, int], float] = {}
        self._told: set[tuple[TopicPartition, int]] = set()

    def update(
        self, results: Iterable[PartitionProgress], registered: Iterable[int], now: float
    ) -> list[tuple[PartitionProgress, int, float]]:
        """(partition, missing broker, seconds missing) for every pair that has just passed the limit."""
        live = set(registered)
        missing: dict[tuple[TopicPartition, int], PartitionProgress] = {}
        for r in results:
            if r.status is Status.IN_PROGRESS:
                for b in r.target:
                    if b not in live:
                        missing[((r.topic, r.partition), b)] = r
        self._since = {k: self._since.get(k, now) for k in missing}
        self._told &= set(missing)  # a broker that came back and left again is reported again
        out = []
        for key, r in missing.items():
            gone = now - self._since[key]
            if gone >= self.limit and key not in self._told:
                self._told.add(key)
                out.append((r, key[1], gone))
        return out


# ---------------------------------------------------------------------------------------------
# Replica moves between log dirs (the plan's log_dirs other than "any"), from DescribeLogDirs
# ---------------------------------------------------------------------------------------------

ReplicaDirInfo = tuple[str | None, str | None]  # (current log dir, future log dir); None: none found


class MoveStatus(StrEnum):
    COMPLETE = "complete"  # in the target dir, no future replica
    IN_PROGRESS = "in_progress"  # a future replica in the target dir
    ELSEWHERE = "elsewhere"  # a future replica in another dir
    NOT_MOVING = "not_moving"  # in another dir, no future replica
    MISSING = "missing"  # in no live log dir of the broker
    UNKNOWN = "unknown"  # its broker did not answer DescribeLogDirs: it may still be copying
    # in another dir, no future replica, and the plan stored in the cluster starts it later (its log-dir
    # moves are paced): still to come, not a failure. Only `queued_moves` (ops/stored_log_dirs.py) gives it.
    QUEUED = "queued"


@dataclass(slots=True)
class ReplicaMoveProgress:
    topic: str
    partition: int
    broker: int
    target: str
    current: str | None
    future: str | None
    status: MoveStatus

    def line(self) -> str:
        """Kafka's verify line for the replica move (Kafka 4.3.1's wording, each checked against its tool)."""
        tp = f"{self.topic}-{self.partition}"
        if self.status is MoveStatus.COMPLETE:
            return f"Reassignment of replica {tp}-{self.broker} completed successfully."
        if self.status is MoveStatus.IN_PROGRESS:
            return f"Reassignment of replica {tp}-{self.broker} is still in progress."
        if self.status is MoveStatus.ELSEWHERE:
            return (
                f"Partition {tp} on broker {self.broker} is being moved to log dir {self.future} "
                f"instead of {self.target}."
            )
        if self.status is MoveStatus.QUEUED:
            return (
                f"Reassignment of replica {tp}-{self.broker} is still in progress (queued: not started yet)."
            )
        if self.status is MoveStatus.UNKNOWN:
            return (
                f"Partition {tp} on broker {self.broker}: the broker did not answer DescribeLogDirs, so "
                f"whether it still moves to log dir {self.target} is unknown."
            )
        if self.status is MoveStatus.NOT_MOVING:
            return (
                f"Partition {tp} on broker {self.broker} is not being moved from log dir {self.current} "
                f"to {self.target}."
            )
        return (
            f"Partition {tp} is not found in any live log dir on broker {self.broker}. "
            "There is likely an offline log directory on the broker."
        )


def classify_moves(
    moves: Mapping[tuple[str, int, int], str],
    dirs: Mapping[tuple[str, int, int], ReplicaDirInfo],
    unanswered: Iterable[int] = (),
) -> list[ReplicaMoveProgress]:
    """One result per planned replica move, sorted by (topic, partition, broker). `dirs` has what each
    broker reports for the replica; a replica it does not name is in no live log dir. A replica on a
    broker in `unanswered` (it did not answer) is unknown: never taken for "not moving"."""
    out = []
    silent = set(unanswered)
    for key in sorted(moves):
        target = moves[key]
        current, future = dirs.get(key, (None, None))
        if key[2] in silent and key not in dirs:
            status = MoveStatus.UNKNOWN
        elif future is not None:
            status = MoveStatus.IN_PROGRESS if future == target else MoveStatus.ELSEWHERE
        elif current is None:
            status = MoveStatus.MISSING
        else:
            status = MoveStatus.COMPLETE if current == target else MoveStatus.NOT_MOVING
        out.append(ReplicaMoveProgress(*key, target, current, future, status))
    return out


def orphaned_throttles(
    recorded: tuple[list[int], list[str]], results: Iterable[PartitionProgress]
) -> tuple[list[int], list[str]] | None:
    """The throttles of ours (recorded brokers, topics) that nothing accounts for, found while nothing
    reassigns: all of them when the plan is not where it should be (its execute was interrupted before
    the trigger, or between batches); otherwise the recorded topics outside the plan (another plan's
    interrupted execute; broker rates cannot be told apart, they are shared). None: none."""
    brokers, topics = recorded
    results = list(results)
    if any(r.status is not Status.COMPLETE for r in results):
        found = (list(brokers), list(topics))
    else:
        planned = {r.topic for r in results}
        found = ([], [t for t in topics if t not in planned])
    return found if found[0] or found[1] else None


def moves_ongoing(moves: Iterable[ReplicaMoveProgress]) -> bool:
    """A future replica exists somewhere, or may (its broker did not answer): the log-dir throttle is, or
    may be, still at work."""
    return any(m.status in (MoveStatus.IN_PROGRESS, MoveStatus.ELSEWHERE, MoveStatus.UNKNOWN) for m in moves)


def verify_exit(results: Iterable[PartitionProgress], moves: Iterable[ReplicaMoveProgress] = ()) -> int:
    """overall_exit, with the replica moves counted: one still moving is in progress (4), one that is not
    where the plan says and not moving there is not as planned (5)."""
    code = overall_exit(results)
    moves = list(moves)
    if code == ExitCode.BUSY or moves_ongoing(moves) or any(m.status is MoveStatus.QUEUED for m in moves):
        return ExitCode.BUSY
    if code == ExitCode.NOT_AS_PLANNED or any(m.status is not MoveStatus.COMPLETE for m in moves):
        return ExitCode.NOT_AS_PLANNED
    return ExitCode.OK


def move_json(m: ReplicaMoveProgress) -> dict[str, Any]:
    return {
        "topic": m.topic,
        "partition": m.partition,
        "broker": m.broker,
        "status": str(m.status),
        "target": m.target,
        "current": m.current,
        "future": m.future,
    }
