"""Output of execute / verify / list: Kafka's text on stdout, one JSON document with --format json,
progress (Rich bar on a terminal, plain lines otherwise) and reasons on stderr."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import orjson

from reassign_cli.core import pacing as pc
from reassign_cli.core.elect_rules import LeaderStatus, result_lines, status_json
from reassign_cli.core.names import NAMES_SHOWN, shorten
from reassign_cli.core.progress import (
    MoveStatus,
    PartitionProgress,
    ReplicaMoveProgress,
    Status,
    caught_up,
    kafka_line,
    move_json,
    report_json,
)

if TYPE_CHECKING:
    from reassign_cli.backends.protocol import ClearResult, PlannedWrite
    from reassign_cli.render import Output

PLAIN_EVERY = 30.0  # seconds between plain progress lines when nothing changes


class ProgressView:
    """What execute --wait shows while it polls."""

    def __init__(self, out: Output, total: int) -> None:
        self.out = out
        self.total = total
        self._bar: Any = None
        self._task: Any = None
        self._last_line = ""
        self._last_time = 0.0

    def __enter__(self) -> ProgressView:
        if self.out.interactive:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("partitions"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("replicas caught up {task.fields[replicas]}"),
                TextColumn("elapsed"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.out.err,
                transient=False,
                refresh_per_second=2,
                redirect_stdout=False,  # Kafka's lines stay on stdout while the bar runs
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("reassigning", total=self.total, replicas="0/0")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def update(self, results: Sequence[PartitionProgress], elapsed: float) -> None:
        ended = sum(1 for r in results if r.status is not Status.IN_PROGRESS)
        done = sum(1 for r in results if r.status is Status.COMPLETE)
        have = need = 0
        for r in results:
            a, b = caught_up(r)
            have += a
            need += b
        if self._bar is not None:
            self._bar.update(self._task, completed=ended, replicas=f"{have}/{need}")
            return
        if self.out.quiet:
            return
        # a partition that ended elsewhere (cancelled, replaced) is not "done": said apart
        other = f", {ended - done} not as planned" if ended > done else ""
        line = f"{done}/{len(results)} partitions done{other}, {have}/{need} target replicas in sync"
        now = time.monotonic()
        if line != self._last_line or now - self._last_time >= PLAIN_EVERY:
            self.out.info(f"[{_clock(elapsed)}] {line}")
            self._last_line, self._last_time = line, now


class PaceView:
    """What a paced execute shows while it polls: bytes copied of the total, the moving-average rate, the
    ETA and the moves running / queued / done; a Rich bar on a terminal, otherwise a plain line at most
    once per poll (when the percentage or the moves change) and at least every PLAIN_EVERY seconds.
    Without sizes, only the moves are counted."""

    def __init__(self, out: Output, total: int) -> None:
        self.out = out
        self.total = total
        self._bar: Any = None
        self._task: Any = None
        self._last_key: tuple[Any, ...] = ()
        self._last_time = 0.0

    def __enter__(self) -> PaceView:
        if self.out.interactive:
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

            self._bar = Progress(
                TextColumn("copied"),
                BarColumn(),
                DownloadColumn(binary_units=True),
                TextColumn("{task.fields[rate]}{task.fields[eta]}; {task.fields[moves]}"),
                console=self.out.err,
                transient=False,
                refresh_per_second=2,
                redirect_stdout=False,  # Kafka's lines stay on stdout while the bar runs
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("pacing", total=None, rate="", eta="", moves="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def update(self, snap: pc.Snapshot, elapsed: float) -> None:
        moves = pc.moves_text(snap)
        if self._bar is not None:
            eta = f", {pc.eta_text(snap.eta)}" if snap.running or snap.queued else ""
            self._bar.update(
                self._task,
                completed=snap.copied,
                total=snap.total or None,
                rate=pc.rate_text(snap.rate),
                eta=eta,
                moves=moves,
            )
            return
        if self.out.quiet:
            return
        line = pc.progress_line(snap) if snap.total else moves
        key = (int(100 * snap.fraction), snap.running, snap.queued, snap.done)
        now = time.monotonic()
        if key != self._last_key or now - self._last_time >= PLAIN_EVERY:
            self.out.info(f"[{_clock(elapsed)}] {line}")
            self._last_key, self._last_time = key, now


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class ExecuteReport:
    """execute's output: Kafka's lines on stdout (text), or gathered into one JSON document."""

    def __init__(self, out: Output, *, json: bool = False) -> None:
        self.out = out
        self.json = json
        self.doc: dict[str, Any] = {"messages": []}
        self._moves_line = ""
        self._moves_time = 0.0

    def result(self, line: str) -> None:
        if self.json:
            self.doc["messages"].append(line)
        else:
            self.out.result(line)

    def info(self, line: str) -> None:
        self.out.info(line)

    def warn(self, line: str) -> None:
        self.out.warn(line)

    def rollback(self, js: str) -> None:
        if self.json:
            self.doc["rollback"] = orjson.loads(js)
            return
        self.out.result(rollback_block(js))

    def rollback_saved(self, path: str) -> None:
        self.doc["rollback_file"] = path
        self.out.info(f"Rollback JSON saved to {path}")

    def dry_run(self, planned: Sequence[PlannedWrite]) -> None:
        if self.json:
            self.doc["dry_run"] = [
                {
                    "op": w.op,
                    "path": w.path,
                    "data": w.data.decode() if w.op != "delete" else None,
                    "version": w.version,
                    "sequential": w.sequential,
                }
                for w in planned
            ]
            return
        what = "znode writes" if all(w.kind == "znode" for w in planned) else "admin API requests"
        self.out.result(f"Dry run: nothing was written. {len(planned)} {what} would be made:")
        for w in planned:
            self.out.result(w.describe())

    def run_plan(self, lines: Sequence[str], doc: dict[str, Any]) -> None:
        """A dry run's account of what the run would do (ops.execute, from core.run_plan): what it skips,
        waits for and starts, batch by batch or the window's first starts; lines on stdout, and the
        same in the JSON document's `run_plan`."""
        self.doc.setdefault("run_plan", {}).update(doc)
        if not self.json:
            for line in lines:
                self.out.result(line)

    def cleared(self, result: ClearResult | None) -> None:
        if result is None:
            self.info("Throttles kept: another reassignment is still running in the cluster.")
            self.doc["throttles_cleared"] = None
            return
        self.doc["throttles_cleared"] = cleared_json(result)
        for line in clearing_lines(result):
            self.result(line)
        for line in kept_lines(result):
            self.info(line)

    def log_dir_progress(self, moves: Sequence[ReplicaMoveProgress], elapsed: float) -> None:
        """`execute --wait` polling the replica moves between log dirs: a line on stderr when it changes
        (or every PLAIN_EVERY seconds), the last state in the JSON document."""
        self.doc["replica_moves"] = [move_json(m) for m in moves]
        done = sum(1 for m in moves if m.status is MoveStatus.COMPLETE)
        copying = [m for m in moves if m.future is not None]
        line = f"{done}/{len(moves)} replica log-dir moves done"
        if copying:
            first = copying[0]
            more = f" and {len(copying) - 1} more" if len(copying) > 1 else ""
            line += (
                f"; copying {first.topic}-{first.partition} on broker {first.broker} to {first.future}{more}"
            )
        now = time.monotonic()
        if not self.out.quiet and (line != self._moves_line or now - self._moves_time >= PLAIN_EVERY):
            self.out.info(f"[{_clock(elapsed)}] {line}")
            self._moves_line, self._moves_time = line, now

    def election(self, initial: Sequence[LeaderStatus], final: Sequence[LeaderStatus]) -> None:
        self.doc["leader_election"] = status_json(final)
        for line in result_lines(initial, final):
            self.result(line)

    def throttle_changes(self, history: list[dict[str, Any]], rates: dict[str, int]) -> None:
        """The rate loop's changes so far (ops.rate_loop), and the rate per broker/role it holds now."""
        self.doc["throttle_changes"] = list(history)
        self.doc["throttle_rates"] = dict(rates)

    def finished(self, results: Sequence[PartitionProgress] | None) -> None:
        if results is not None:
            self.doc.update(report_json(results))
        if self.json:
            self.out.result_json(self.doc)

    @contextmanager
    def progress(self, total: int) -> Iterator[ProgressView]:
        with ProgressView(self.out, total) as view:
            yield view

    @contextmanager
    def pacing(self, total: int) -> Iterator[PaceView]:
        with PaceView(self.out, total) as view:
            yield view

    def paced(self, summary: dict[str, Any]) -> None:
        """A paced run's totals, in the JSON document: bytes_copied, seconds, max_in_flight_per_broker."""
        self.doc.update(summary)

    def moved(self, partitions: int, seconds: float) -> None:
        """The closing line of a waiting run, on stderr: `8 partitions, 6.5 MiB in 0:00:38` (the bytes when
        a paced run measured them)."""
        self.out.info(pc.closing_line(partitions, seconds, self.doc.get("bytes_copied")))


def verify_lines(
    results: Sequence[PartitionProgress], moves: Sequence[ReplicaMoveProgress] = ()
) -> list[str]:
    """Kafka's verify output: header, one line per partition, then the log-dir section: one line per replica
    move, or an empty line when the plan has none."""
    section = [m.line() for m in moves] or [""]
    return ["Status of partition reassignment:", *(kafka_line(r) for r in results), *section]


def reason_lines(results: Sequence[PartitionProgress], limit: int | None = 20) -> list[str]:
    """Why partitions are not complete, one line each; at most `limit` (None: all) plus a count."""
    lines = [f"{r.name}: {r.reason}" for r in results if r.status is not Status.COMPLETE and r.reason]
    if limit is not None and len(lines) > limit:
        return [*lines[:limit], f"... and {len(lines) - limit} more (all with -v or --format json)"]
    return lines


def list_line(
    topic: str, partition: int, replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int]
) -> str:
    """Kafka's --list line: "foo-0: replicas: 1,2,3,4. adding: 4. removing: 1." (empty parts left out)."""
    line = f"{topic}-{partition}: replicas: {','.join(map(str, replicas))}."
    if adding:
        line += f" adding: {','.join(map(str, adding))}."
    if removing:
        line += f" removing: {','.join(map(str, removing))}."
    return line


# The connection options of Kafka's kafka-configs for the commands printed beside kept throttles: set by the
# CLI (cli/common.py) for the command that runs, read only when a throttle was kept.
CONFIGS_CONNECTION: Callable[[], list[str]] = lambda: ["--bootstrap-server", "HOST:PORT"]  # noqa: E731


def kept_lines(result: ClearResult, limit: int | None = NAMES_SHOWN) -> list[str]:
    """The throttles a clear left alone, and why: per entity (at most `limit`; None: all) its keys and the
    kafka-configs command that removes them, then a count."""
    kept = list(result.kept_keys.items())
    shown = kept if limit is None else kept[:limit]
    lines: list[str] = []
    if shown:
        where = f" through {result.record_name}" if result.record_name else ""
        lines.append(
            f"Kept throttles that are not in this tool's record of those it set{where}: set by hand, by "
            "Kafka's own tools, or by kafka-reassign through the other connection (--zookeeper / "
            "--bootstrap-server alone), whose record this one does not read. Each is left in place:"
        )
    connection = CONFIGS_CONNECTION() if shown else []
    for (entity, name), keys in shown:
        values = ", ".join(f"{k}={v}" for k, v in keys.items())
        target = ["--entity-type", entity, "--entity-name", name]
        command = shlex.join(
            ["kafka-configs", *connection, *target, "--alter", "--delete-config", ",".join(keys)]
        )
        lines.append(f"  {entity[:-1]} {name}: {values}; to remove: {command}")
    if len(shown) < len(kept):
        lines.append(f"... and {len(kept) - len(shown)} more kept (all with -v)")
    if result.pending:
        b = result.pending
        lines.append(
            f"Throttles this tool set on broker{'' if len(b) == 1 else 's'} {shorten(b, limit)} stay until "
            f"{'it is' if len(b) == 1 else 'they are'} registered again (a broker's config is changed through "
            "that broker): run verify again then"
        )
    return lines


def entities_text(brokers: Sequence[int], topics: Sequence[str], limit: int | None = NAMES_SHOWN) -> str:
    """ "brokers 1,2 and topics a,b" (either part left out when empty); each list cut after `limit`
    names with "and N more" (None: whole)."""
    parts = [
        f"brokers {shorten(brokers, limit)}" if brokers else "",
        f"topics {shorten(topics, limit)}" if topics else "",
    ]
    cut = limit is not None and len(brokers) > limit  # "... and 3 more and topics" would not read
    return ("; " if cut else " and ").join(x for x in parts if x)


def orphans_line(brokers: Sequence[int], topics: Sequence[str], limit: int | None = NAMES_SHOWN) -> str:
    """verify's warning before it removes throttles of ours that nothing accounts for."""
    return (
        f"throttles set by kafka-reassign were left in place on {entities_text(brokers, topics, limit)} with nothing "
        "reassigning (an interrupted execute?); removing them"
    )


def rollback_block(js: str) -> str:
    """Kafka's block, byte for byte: no empty line after it (Kafka 4.3.1's tool, side by side)."""
    return (
        "Current partition replica assignment\n\n"
        f"{js}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )


def clearing_lines(result: ClearResult) -> list[str]:
    """Kafka's two lines, for what was really cleared: the brokers and topics whose throttles of ours were
    restored (an empty list: its line left out); one line when there was nothing of ours to clear."""
    b, t = result.cleared_brokers, result.cleared_topics
    lines = [f"Clearing broker-level throttles on broker{'' if len(b) == 1 else 's'} {','.join(map(str, b))}"]
    lines = lines if b else []
    if t:
        lines.append(f"Clearing topic-level throttles on topic{'' if len(t) == 1 else 's'} {','.join(t)}")
    return lines or ["No throttles set by this tool were found: nothing cleared."]


def cleared_json(result: ClearResult | None) -> dict[str, object] | None:
    """`throttles_cleared` of the JSON documents: what was really cleared."""
    if result is None:
        return None
    return {"brokers": result.cleared_brokers, "topics": result.cleared_topics}
