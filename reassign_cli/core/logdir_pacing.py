"""Paced moves of replicas between the log dirs of one broker (`execute --max-moves-per-disk N`,
`--one-broker-at-a-time`): which moves may start, their byte progress and stalls. Pure: no I/O; time is
passed in. ops/log_dirs.py runs them.

A log-dir move (an intra-broker move: AlterReplicaLogDirs of a replica its broker already holds) reads
its source disk and writes its target disk, both on its broker. A disk is (broker, log dir). A move counts
against both its disks; at most `cap` moves count against any disk at once. With `one_broker`, the moves
of one broker run at a time: the lowest broker id with moves queued first, until none of its moves is
queued or running. Among the moves that fit, the plan's order ((topic, partition, broker)) decides.

A move's bytes: its future replica (the copy growing in the target dir) against its current replica.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

ReplicaKey = tuple[str, int, int]  # (topic, partition, broker)
Disk = tuple[int, str]  # (broker, log dir)


@dataclass(frozen=True, slots=True)
class DirMove:
    """One replica's move from `source` to `target`, two log dirs of its broker (key[2])."""

    key: ReplicaKey
    source: str
    target: str

    @property
    def broker(self) -> int:
        return self.key[2]

    @property
    def disks(self) -> tuple[Disk, ...]:
        """The disks this move counts against: its source and its target (once if they are one)."""
        return tuple(dict.fromkeys(((self.broker, self.source), (self.broker, self.target))))


class DiskQueue:
    """The log-dir moves still to start, in plan order."""

    def __init__(self, moves: Iterable[DirMove]) -> None:
        self._queued: list[DirMove] = sorted(moves, key=lambda m: m.key)

    def __len__(self) -> int:
        return len(self._queued)

    def moves(self) -> list[DirMove]:
        return list(self._queued)

    def discard(self, key: ReplicaKey) -> None:
        """Leave a move out (it finished, or is found started)."""
        self._queued = [m for m in self._queued if m.key != key]

    def put_back(self, moves: Sequence[DirMove]) -> None:
        """Moves taken but not started queue again, in plan order."""
        self._queued = sorted([*self._queued, *moves], key=lambda m: m.key)

    def take(self, running: Iterable[DirMove], cap: int | None, one_broker: bool = False) -> list[DirMove]:
        """The moves to start now, given those running: in plan order, each that keeps every disk at or
        under `cap` moves (None: no cap); with `one_broker`, only moves of the broker that has moves running (none
        running: the lowest broker id queued). With nothing running, at least one move is taken."""
        load: Counter[Disk] = Counter()
        brokers: set[int] = set()
        for m in running:
            load.update(m.disks)
            brokers.add(m.broker)
        if one_broker and not brokers and self._queued:
            brokers = {min(m.broker for m in self._queued)}
        picked: list[DirMove] = []
        for m in self._queued:
            if one_broker and m.broker not in brokers:
                continue
            if cap is not None and any(load[d] >= cap for d in m.disks):
                continue
            load.update(m.disks)
            picked.append(m)
        taken = {m.key for m in picked}
        self._queued = [m for m in self._queued if m.key not in taken]
        return picked


def per_disk(moves: Iterable[DirMove]) -> dict[Disk, int]:
    """Moves counted against each disk."""
    load: Counter[Disk] = Counter()
    for m in moves:
        load.update(m.disks)
    return dict(sorted(load.items()))


# ---------------------------------------------------------------------------------------------
# where a replica is, from its broker's DescribeLogDirs, and its bytes
# ---------------------------------------------------------------------------------------------

# A replica's copies as its broker reports them: (log dir, is future, size in bytes).
Copy = tuple[str, bool, int]


@dataclass(frozen=True, slots=True)
class DirState:
    """A replica's current and future copies: dirs and sizes (None: no such copy)."""

    current: str | None
    future: str | None
    current_bytes: int | None
    future_bytes: int | None


def dir_state(copies: Sequence[Copy], target: str) -> DirState:
    """Where a replica is. A replica named current in two dirs is a finished copy being swapped in (see
    admin.log_dirs.replica_dirs): the copy in the target dir is read as the future one."""
    current = [(d, s) for d, fut, s in copies if not fut]
    future = [(d, s) for d, fut, s in copies if fut]
    if len(current) > 1:
        cur = next(c for c in current if c[0] != target)
        fut = next((c for c in current if c[0] == target), current[-1])
        return DirState(cur[0], fut[0], cur[1], fut[1])
    cur2 = current[0] if current else (None, None)
    fut2 = future[0] if future else (None, None)
    return DirState(cur2[0], fut2[0], cur2[1], fut2[1])


def copied(state: DirState) -> tuple[int, int]:
    """(bytes copied, bytes to copy) of a running move: its future replica against its current one (a
    future replica longer than the current one, which keeps growing, counts as caught up)."""
    total = state.current_bytes or 0
    got = state.future_bytes or 0
    return min(got, total), total


@dataclass(frozen=True, slots=True)
class DirProgress:
    """The log-dir moves of a run at one poll."""

    copied: int
    total: int
    running: int
    queued: int
    done: int


def progress_line(p: DirProgress) -> str:
    """`log-dir moves: copied 1.2 MiB of 4.7 MiB (26%); 1 moving, 2 queued, 1 done`."""
    share = f" ({p.copied / p.total:.0%})" if p.total else ""
    head = f"log-dir moves: copied {human_bytes(p.copied)} of {human_bytes(p.total)}{share}"
    if p.running == 0 and p.queued == 0:
        return f"{head}; {p.done} done"
    return f"{head}; {p.running} moving, {p.queued} queued, {p.done} done"


def human_bytes(n: float) -> str:
    """1.2 GiB, 48.1 MiB, 512 B (as core.pacing.human_bytes)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


class FutureStalls:
    """Running log-dir moves whose future replica has not grown for `limit` seconds: each reported once
    per stall (again after it grew and stalled again)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._best: dict[ReplicaKey, tuple[int, float]] = {}
        self._told: set[ReplicaKey] = set()

    def update(self, sizes: Mapping[ReplicaKey, int], now: float) -> list[tuple[ReplicaKey, float]]:
        """(move, seconds without growth) for each running move that has just passed the limit."""
        out = []
        best = {}
        for key, size in sizes.items():
            last = self._best.get(key)
            if last is None or size > last[0]:
                best[key] = (size, now)
                self._told.discard(key)
                continue
            best[key] = last
            if now - last[1] >= self.limit and key not in self._told:
                self._told.add(key)
                out.append((key, now - last[1]))
        self._best = best
        self._told &= set(sizes)
        return sorted(out)


def stalled_line(m: DirMove, got: int, total: int, secs: float, cancel: str) -> str:
    """The stall warning of a log-dir move (in the style of ops.pacing.stalled_line)."""
    t, p, b = m.key
    return (
        f"{t}-{p} on broker {b} is stuck: its future replica in {m.target} has not grown for {secs:.0f} s "
        f"({human_bytes(got)} of {human_bytes(total)} copied); check broker {b} (its log, disk {m.target} "
        f"and replica.alter.log.dirs.io.max.bytes.per.second), or cancel the move: {cancel}"
    )
