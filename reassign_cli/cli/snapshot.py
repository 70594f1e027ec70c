"""`kafka-reassign snapshot`: the cluster state as one JSON file, for offline planning and review."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable

import click

from reassign_cli.cli.common import Options, connection_options, open_backend
from reassign_cli.errors import OperationalError
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
    help="Only these topics (repeatable) [default: all].",
)
@connection_options
def command(opts: Options, output: str | None, jsonl: bool, topic_opts: tuple[str, ...]) -> None:
    """Save the cluster state read from ZooKeeper or the admin API: registered brokers and racks, every topic's replica
    assignment (with adding/removing replicas during a reassignment), leader and ISR per partition, topics
    queued for deletion and the pending /admin/reassign_partitions.

    `generate --snapshot FILE` plans from it without ZooKeeper, with the same result as live, whichever
    of the two layouts it has.
    """
    from reassign_cli import snapshot, snapshot_lines

    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts) as backend:
        state = backend.read_state(topic_opts or None, partition_state=True)
    if jsonl or (output is not None and output.endswith(".jsonl")):
        blocks: Iterable[bytes] = snapshot_lines.dump_lines(state)
    else:
        blocks = [snapshot.dumps(state)]
    n_parts = sum(len(t.replicas) for t in state.topics.values())
    counts = {"brokers": len(state.brokers), "topics": len(state.topics), "partitions": n_parts}

    if output is None or output == "-":
        for block in blocks:
            sys.stdout.buffer.write(block)
        sys.stdout.flush()
        out.info(f"Snapshot: {counts['brokers']} brokers, {counts['topics']} topics, {n_parts} partitions.")
        return
    size = _write_atomic(output, blocks)
    if opts.json:
        out.result_json({"file": output, "bytes": size, **counts})
    else:
        out.info(
            f"Wrote {output}: {counts['brokers']} brokers, {counts['topics']} topics, {n_parts} partitions "
            f"({size} bytes)."
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
