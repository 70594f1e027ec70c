"""What the foreground window (ops/pacing._Window) watches of its running moves: their leaders' sizes
(DescribeLogDirs), the bytes each has copied over time, and what it says of them once: a receiving broker
copying at the throttle's rate, a move whose leader's log outgrows its copy, a move that copies nothing,
and how many moves keep running or wait when the run is interrupted. ops/stored.py sizes a stored plan's
moves with `leader_sizes` too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from reassign_cli.core import pacing as pc
from reassign_cli.core.model import ClusterState, PlanEntry, TopicPartition, tp_str

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import ReplicaKey


class SizeReader(Protocol):
    """DescribeLogDirs sizes (admin.log_dirs.LogDirMover.replica_sizes)."""

    def replica_sizes(self, replicas: Sequence[ReplicaKey]) -> tuple[dict[ReplicaKey, int], list[int]]: ...


def leader_sizes(
    sizer: SizeReader | None, state: ClusterState, entries: Sequence[PlanEntry]
) -> dict[TopicPartition, int] | None:
    """Each moving partition's leader's log size (DescribeLogDirs); None without a size reader."""
    if sizer is None:
        return None
    keys = [(m.tp[0], m.tp[1], m.source) for m in pc.make_moves(entries, state)]
    sizes, _ = sizer.replica_sizes(keys)
    return {(t, p): s for (t, p, _), s in sizes.items()}


@dataclass(slots=True)
class Bytes:
    """Byte bookkeeping of the running moves: what each has copied, and its leader's log over time."""

    copied: dict[TopicPartition, int] = field(default_factory=dict)
    total: dict[TopicPartition, int] = field(default_factory=dict)
    leader: dict[TopicPartition, pc.Meter] = field(default_factory=dict)
    move: dict[TopicPartition, pc.Meter] = field(default_factory=dict)
    done: int = 0  # bytes of the moves that ended


def _long_enough(meter: pc.Meter | None) -> bool:
    """Enough samples behind a rate to judge a move by it (a third of the rate window)."""
    return (
        meter is not None
        and len(meter.samples) >= 3
        and meter.samples[-1][0] - meter.samples[0][0] >= pc.RATE_WINDOW / 3
    )


def diagnose(
    running: Mapping[TopicPartition, pc.Move], bytes_: Bytes, throttle: int | None, told: set[str]
) -> list[tuple[str, str]]:
    """What the window says once of its running moves, as (level, line): a receiving broker copying at
    the throttle's rate (info), a move whose leader's log outgrows its copy (warn). `told` keeps what was
    said (a broker's "throttle", a partition's name) so that each is said once per run."""
    out: list[tuple[str, str]] = []
    into: dict[int, list[pc.Span]] = {}
    copies: dict[TopicPartition, pc.Span] = {}
    for tp, m in running.items():
        moved = pc.span(bytes_.move.get(tp))
        if moved is None or not m.receivers or not _long_enough(bytes_.move.get(tp)):
            continue  # a new move's first fetches pass before the quota measures them
        copies[tp] = pc.Span(moved.gained / len(m.receivers), moved.seconds)  # per receiver
        for b in m.receivers:
            into.setdefault(b, []).append(copies[tp])
    for b, spans in sorted(into.items()):
        if "throttle" not in told and pc.at_throttle(spans, throttle):
            told.add("throttle")
            r = sum(s.rate for s in spans)
            out.append(
                (
                    "info",
                    f"Broker {b} receives at {pc.human_bytes(r)}/s, the throttle's rate ({throttle} B/s): "
                    "the throttle is the limit. To go faster, run this execute again with a higher --throttle "
                    "(it changes the rate of the running moves)",
                )
            )
    for tp, copy in copies.items():
        m, grew = running[tp], pc.span(bytes_.leader.get(tp))
        if grew is None or tp_str(tp) in told:
            continue
        sharing = sum(1 for o in running.values() if set(o.receivers) & set(m.receivers))
        limit = pc.copy_limit(copy, throttle, sharing)
        need = pc.catch_up_throttle(grew.rate, limit, throttle, sharing)
        if need is not None:
            told.add(tp_str(tp))
            out.append(("warn", grows_line(tp_str(tp), grew.rate, limit, need, throttle)))
    return out


def moves_phrase(n: int, many: str, one: str) -> str:
    """ "2 moves started keep", "1 move started keeps"."""
    return f"{n} move {one}" if n == 1 else f"{n} moves {many}"


def grows_line(name: str, growth: float, limit: float, need: int, throttle: int | None = None) -> str:
    """The "cannot catch up" warning: a --throttle to use only when the throttle is the limit (need > 0);
    otherwise the brokers are, and a throttle cannot help."""
    head = (
        f"{name}: its leader's log grows at {pc.human_bytes(growth)}/s, faster than the copy can go "
        f"({pc.human_bytes(limit)}/s at most): it cannot catch up"
    )
    if need > 0:
        return f"{head} at this throttle; --throttle {need} would let it finish"
    below = (
        f" (the copy goes slower than the throttle, {pc.human_bytes(throttle)}/s, allows)"
        if throttle is not None and throttle > 0
        else ""
    )
    return (
        f"{head}; the brokers (disk or network), not the throttle, are the limit{below}: a higher --throttle "
        "will not help. Lower the writes to the topic, or move this partition when its traffic is lower"
    )


def stalled_line(name: str, m: pc.Move, down: Sequence[int], secs: float, cancel: str) -> str:
    if down:
        why = f"its target broker {','.join(map(str, down))} is not registered: start it, or "
    else:
        who = ",".join(map(str, m.receivers))
        why = f"check broker {who} (its log and the replica fetcher) and broker {m.source} (the leader), or "
    return (
        f"{name} is stuck: no bytes copied to broker {','.join(map(str, m.receivers))} for {secs:.0f} s; {why}"
        f"cancel the move: {cancel}"
    )
