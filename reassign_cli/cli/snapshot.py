"""`kafka-reassign snapshot`: the cluster state as one JSON file, for offline planning and review."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence

import click

from reassign_cli.backends.protocol import Backend
from reassign_cli.cli.common import Options, connection_options, log_dir_mover, open_backend
from reassign_cli.core.model import ClusterState
from reassign_cli.errors import OperationalError
from reassign_cli.planning.sizes import SizeReport
from reassign_cli.render import Output


@click.command(
    "snapshot",
    short_help="Save brokers, racks, assignments and ISR as a JSON file.",
    epilog="\b\nExamples:\n"
    "  kafka-reassign snapshot -o cluster.json\n"
    "  kafka-reassign generate --snapshot cluster.json --topic orders --broker-list 1,2,3 --seed 7",
)
@click.option(
    "-o",
    "--output",
    "output",
    metavar="FILE",
    help="Where to write the snapshot (replaced atomically) [default: stdout]. A name ending in .jsonl "
    "gives JSON lines (see --jsonl).",
)
@click.option(
    "--jsonl",
    is_flag=True,
    help="Write JSON lines: a header line, then one line per topic, sorted. The same content, in a file "
    "that Spark's executors split and read in parallel (generate --engine spark) [default: when FILE "
    "ends in .jsonl].",
)
@click.option(
    "--topic",
    "topic_opts",
    multiple=True,
    metavar="TOPIC",
    help="Only these topics (repeatable; one the cluster does not have exits 3) [default: all].",
)
@click.option(
    "--no-sizes",
    is_flag=True,
    help="Do not ask the brokers for the partitions' sizes, their disks' capacity nor their log dirs "
    "(recorded by default whenever the brokers are at hand: --bootstrap-server, alone or beside "
    "--zookeeper; capacity on Kafka 3.3 and later).",
)
@click.option(
    "--shared-log-dirs",
    is_flag=True,
    help="A broker's log dirs that report the same total and usable bytes share one filesystem: count it "
    "once in the broker's disk capacity [default: each log dir is its own disk]. Recorded in the file.",
)
@connection_options
def command(
    opts: Options,
    output: str | None,
    jsonl: bool,
    topic_opts: tuple[str, ...],
    no_sizes: bool,
    shared_log_dirs: bool = False,
) -> None:
    """Save the cluster state read from ZooKeeper or the admin API: registered brokers and racks, every topic's replica
    assignment (with adding/removing replicas during a reassignment), leader and ISR per partition, topics
    queued for deletion and the pending /admin/reassign_partitions. With the brokers at hand
    (--bootstrap-server, also beside --zookeeper), each partition's size in bytes: its largest replica's,
    from DescribeLogDirs; generate then reports the bytes a plan copies. On Kafka 3.3 and later, each
    broker's disk capacity too (its log dirs' volumes, total and usable bytes): generate --balance bytes
    then balances disk utilization. And each broker's log dirs (bytes held, total and usable bytes,
    offline, cordoned on Kafka 4.3+) with the dir holding each replica.

    `generate --snapshot FILE` plans from it without ZooKeeper, with the same result as live, whichever
    of the two layouts it has.
    """
    from reassign_cli.core import snapshot, snapshot_lines

    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts, admin_too=True) as backend:
        state = backend.read_state(topic_opts or None, partition_state=True)
        _check_topics(topic_opts, state)
        report = None if no_sizes else _record_sizes(backend, state, out, shared_log_dirs)
    if report is not None and report.unknown:
        out.warn(_unknown_sizes(report))
    if jsonl or (output is not None and output.endswith(".jsonl")):
        blocks: Iterable[bytes] = snapshot_lines.dump_lines(state)
    else:
        blocks = [snapshot.dumps(state)]
    n_parts = sum(len(t.replicas) for t in state.topics.values())
    counts = {"brokers": len(state.brokers), "topics": len(state.topics), "partitions": n_parts}
    if report is not None:
        counts["sizes"] = report.known
    if state.capacities:
        counts["capacities"] = len(state.capacities)

    if output is None or output == "-":
        for block in blocks:
            sys.stdout.buffer.write(block)
        sys.stdout.flush()
        out.info(
            f"Snapshot: {counts['brokers']} brokers, {counts['topics']} topics, {n_parts} partitions"
            f"{_sizes_note(report, state)}."
        )
        return
    size = _write_atomic(output, blocks)
    if opts.json:
        out.result_json({"file": output, "bytes": size, **counts})
    else:
        out.info(
            f"Wrote {output}: {counts['brokers']} brokers, {counts['topics']} topics, {n_parts} partitions"
            f"{_sizes_note(report, state)} ({size} bytes)."
        )


def _check_topics(names: Sequence[str], state: ClusterState) -> None:
    """A --topic the cluster does not have is an input error (exit 3), as in generate and elect-leaders."""
    from reassign_cli.planning.plan import missing_topics_error

    missing = sorted({t for t in names if t not in state.topics})
    if missing:
        raise missing_topics_error(missing)


def _record_sizes(
    backend: Backend, state: ClusterState, out: Output, shared: bool = False
) -> SizeReport | None:
    """Each partition's size from the brokers (DescribeLogDirs, the call verify's log-dir checks make),
    each broker's disk capacity where the brokers report it (Kafka 3.3+), its log dirs and which one
    holds each replica (core/disks.py); None when only ZooKeeper is at hand, or when the brokers beside it cannot be reached (the snapshot
    is still written, without sizes: they only inform generate's summary)."""
    from reassign_cli.core import disks
    from reassign_cli.planning import sizes

    mover = log_dir_mover(backend)
    if mover is None:
        out.detail("No partition sizes: give --bootstrap-server as well to record them.")
        return None
    try:
        survey = mover.survey(state.broker_ids, shared)
        report = sizes.record(state, survey.replica_sizes)
        state.capacities = survey.capacities
        disks.locate(state, survey.dirs, survey.located)
        if mover.looks_shared:
            from reassign_cli.backends.admin.log_dirs import shared_note

            out.warn(shared_note(mover.looks_shared))
        return report
    except OperationalError as e:
        out.warn(f"partition sizes not recorded: {e}")
        return None
    finally:
        mover.close()


def _sizes_note(report: SizeReport | None, state: ClusterState) -> str:
    note = "" if report is None else f", {report.known} with sizes"
    if state.capacities:
        note += f", {len(state.capacities)} brokers with disk capacity"
    return note


def _unknown_sizes(report: SizeReport) -> str:
    from reassign_cli.core.names import shorten

    silent = shorten(report.silent_brokers, sep=", ")
    return (
        f"no size for {report.unknown} partitions: none of their replicas is on a broker that answered "
        "DescribeLogDirs with a live log dir"
        + (f" (brokers {silent} did not answer)" if silent else "")
        + "; generate counts their copies apart"
    )


def _write_atomic(path: str, blocks: Iterable[bytes]) -> int:
    """Write the blocks to `path` through a temporary file renamed into place; the bytes written."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    size = 0
    try:
        fd, tmp = tempfile.mkstemp(prefix=".snapshot-", dir=directory)
        with os.fdopen(fd, "wb") as f:
            for block in blocks:
                f.write(block)
                size += len(block)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 is not what a plain open() would give
        os.replace(tmp, path)
        tmp = None
        return size
    except OSError as e:
        raise OperationalError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
