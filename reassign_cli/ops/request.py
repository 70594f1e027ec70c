"""What an execute runs with and tells: the request (ExecuteRequest), the report it writes to (ExecuteReport, a
Protocol that render.progress.ExecuteReport implements), a wait's clock, Ctrl-C while waiting, and the
command lines a run suggests (verify, cancel, resume: pasteable, with this run's connection options).

Below ops/execute.py, ops/pacing.py, ops/step.py and the modules they call, so each can name them
without importing the sequencing itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reassign_cli.core.hints import ConnectionOption, command_line
from reassign_cli.errors import Interrupted

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from reassign_cli.backends.protocol import ClearResult, PlannedWrite
    from reassign_cli.core.elect_rules import LeaderStatus
    from reassign_cli.core.progress import PartitionProgress, ReplicaMoveProgress


class ProgressSink(Protocol):
    """Where a wait shows its polls (render.progress.ProgressView)."""

    def update(self, results: Sequence[PartitionProgress], elapsed: float) -> None: ...


class ExecuteReport(Protocol):
    """What execute tells the operator; render.progress.ExecuteReport draws it (the CLI passes one in)."""

    def result(self, line: str) -> None: ...
    def info(self, line: str) -> None: ...
    def warn(self, line: str) -> None: ...
    def rollback(self, js: str) -> None: ...
    def rollback_saved(self, path: str) -> None: ...
    def dry_run(self, planned: Sequence[PlannedWrite]) -> None: ...
    def run_plan(self, lines: Sequence[str], doc: dict[str, Any]) -> None: ...
    def cleared(self, result: ClearResult | None) -> None: ...
    def log_dir_progress(self, moves: Sequence[ReplicaMoveProgress], elapsed: float) -> None: ...
    def election(self, initial: Sequence[LeaderStatus], final: Sequence[LeaderStatus]) -> None: ...
    def finished(self, results: Sequence[PartitionProgress] | None) -> None: ...
    def moved(self, partitions: int, seconds: float) -> None: ...
    def progress(self, total: int) -> AbstractContextManager[ProgressSink]: ...


class WaitInterrupted(Interrupted):
    """Ctrl-C while waiting: the reassignment keeps running in the cluster."""


@dataclass(slots=True)
class ExecuteRequest:
    file_name: str
    data: bytes
    throttle: int | None = None
    log_dir_throttle: int | None = None
    bootstrap_server: str | None = None
    dry_run: bool = False
    wait: bool = False
    poll_interval: float = 5.0
    timeout: float | None = None
    rollback_file: str | None = None
    batch_size: int | None = None
    log_dir_timeout: float = 10.0
    elect_leaders: bool = False  # after waiting: move leadership to the preferred replicas
    resume: bool = False  # skip what is done, wait for our own batch still moving (also with batch_size)
    stuck_after: float = 300.0  # while waiting: warn once a target broker is unregistered this long
    connection: tuple[ConnectionOption, ...] = ()  # the connection options given as flags (core.hints)
    max_moves: int | None = None  # --max-moves-per-broker: a window (ops.pacing), implies waiting
    additional: bool = False  # --additional: add to the reassignments running (KIP-455) instead of refusing
    disallow_rf_change: bool = False  # --disallow-replication-factor-change: refuse a plan that changes one
    ignore_health: frozenset[str] = (
        frozenset()
    )  # --ignore-health: stored with the plan (ops/stored_health.py)
    stored: Any = (
        None  # ops/stored.Keeper: ZooKeeper mode's batches marked in the stored plan (cli/stored.py)
    )
    rate_loop: Any = None  # --throttle auto / --max-throttle / --throttle-schedule: ops.rate_loop.Runner
    dir_cap: int | None = None  # --max-moves-per-disk N: the log-dir moves paced (ops/log_dirs.py)
    one_broker: bool = False  # --one-broker-at-a-time


class Clock:
    """One wait's --timeout and --poll-interval."""

    def __init__(self, req: ExecuteRequest) -> None:
        self.start = time.monotonic()
        self.timeout = req.timeout
        self.interval = req.poll_interval

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def expired(self) -> bool:
        return self.timeout is not None and self.elapsed() >= self.timeout

    def pause(self) -> None:
        left = self.interval if self.timeout is None else self.timeout - self.elapsed()
        time.sleep(max(min(self.interval, left), 0.05))


def verify_command(req: ExecuteRequest) -> str:
    """The verify to paste: this plan, this run's connection options."""
    return command_line(["verify", "--reassignment-json-file", req.file_name], req.connection)


def cancel_command(req: ExecuteRequest) -> str:
    """cancel goes through the admin API: without brokers known to this run (ZooKeeper alone), the hint
    names the option to fill in."""
    brokers = () if req.bootstrap_server else (("--bootstrap-server", "HOST:PORT"),)
    return command_line(["cancel", "--reassignment-json-file", req.file_name], (*req.connection, *brokers))


def resume_command(
    file_name: str,
    connection: Sequence[ConnectionOption] = (),
    *,
    cap: int | None = None,
    batch_size: int | None = None,
    throttle: int | None = None,
    log_dir_throttle: int | None = None,
    loop: Sequence[str] = (),
    dir_cap: int | None = None,
    one_broker: bool = False,
) -> str:
    """`kafka-reassign execute --resume ...` to paste: the plan, its cap or batch size and its rates (a
    resumed run without them would start its moves unthrottled; `loop`: the options of a rate loop, in
    place of --throttle), and the connection flags given."""
    args = ["execute", "--resume", "--reassignment-json-file", file_name]
    for flag, value in (
        ("--max-moves-per-broker", cap),
        ("--batch-size", batch_size),
        ("--throttle", throttle),
        ("--replica-alter-log-dirs-throttle", log_dir_throttle),
        ("--max-moves-per-disk", dir_cap),
    ):
        if value is not None:
            args += [flag, str(value)]
    args += ["--one-broker-at-a-time"] if one_broker else []
    return command_line([*args, *loop], connection)


def request_resume_command(req: ExecuteRequest) -> str:
    """resume_command for this run: its cap or batch size, its rates, its log-dir pacing, its connection
    flags."""
    return resume_command(
        req.file_name,
        req.connection,
        cap=req.max_moves,
        batch_size=req.batch_size,
        throttle=req.throttle if req.rate_loop is None else None,
        log_dir_throttle=req.log_dir_throttle,
        loop=() if req.rate_loop is None else req.rate_loop.resume_args(),
        dir_cap=req.dir_cap,
        one_broker=req.one_broker,
    )


def stuck_line(name: str, broker: int, gone: float, req: ExecuteRequest) -> str:
    return (
        f"{name} is stuck: its target broker {broker} has not been registered for {gone:.0f} s. Start "
        f"broker {broker}, or cancel the move: {cancel_command(req)}"
    )


def describe_moving(moving: Sequence[PartitionProgress], limit: int = 10) -> str:
    parts = [f"{p.name} ({p.reason})" if p.reason else p.name for p in moving[:limit]]
    if len(moving) > limit:
        parts.append(f"and {len(moving) - limit} more")
    return ", ".join(parts)


def default_rollback_path(now: datetime | None = None) -> str:
    now = now or datetime.now()
    base = f"rollback-{now:%Y%m%d-%H%M%S}"
    path = Path(f"{base}.json")
    n = 1
    while path.exists():
        path = Path(f"{base}-{n}.json")
        n += 1
    return str(path)
