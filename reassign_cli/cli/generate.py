"""`kafka-reassign generate`: Kafka's --generate (a candidate plan), seeded, from ZooKeeper or a snapshot."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from reassign_cli.cli.common import Options, connection_options, keep_until_exit, require_zookeeper
from reassign_cli.errors import InvalidInputError, OperationalError, ReassignError, UsageError
from reassign_cli.model import ClusterState, duplicates, format_reassignment_json, parse_topics_to_move
from reassign_cli.render import Output


def _parse_broker_list(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    """Kafka's parsing: split on ',' and parse each as an integer, no trimming."""
    if value is None:
        return None
    ids: list[int] = []
    for item in value.split(","):
        try:
            if item.strip() != item or not item:
                raise ValueError
            ids.append(int(item))
        except ValueError:
            raise click.BadParameter(
                f"{item!r} is not a broker id (expected comma-separated integers, e.g. 1,2,3)"
            ) from None
    return ids


def _read_text(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise OperationalError(f"cannot read {what} {path}: {e.strerror or e}") from None


def _from_command_line(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE


@click.command(
    "generate",
    short_help="Propose a new assignment for some topics (nothing is written).",
    epilog="\b\nExamples:\n"
    "  kafka-reassign generate --topic orders --topic payments --broker-list 1,2,3 --seed 42\n"
    "  kafka-reassign generate --topics-to-move-json-file topics.json --broker-list 4,5,6 "
    "--output-dir plan/\n"
    "  kafka-reassign generate --snapshot cluster.json --topic orders --broker-list 1,2,3",
)
@click.option(
    "--topics-to-move-json-file",
    "topics_file",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help='Kafka\'s topics file: {"topics":[{"topic":"foo"}],"version":1}.',
)
@click.option("--topic", "topic_opts", multiple=True, metavar="TOPIC", help="A topic to move (repeatable).")
@click.option(
    "--broker-list",
    callback=_parse_broker_list,
    metavar="ID,ID,...",
    help="Brokers to assign to, e.g. 1,2,3 [default: every registered broker]. Unregistered ids are "
    "dropped with a warning.",
)
@click.option("--disable-rack-aware", is_flag=True, help="Ignore racks (Kafka's rack-unaware assignment).")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    metavar="N",
    help="Seed of the per-topic random draws; the same seed gives the same plan [default: a random one, "
    "printed on stderr].",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write DIR/current.json (rollback) and DIR/proposed.json instead of printing the JSON.",
)
@click.option(
    "--snapshot",
    "snapshot_file",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="Plan from a `kafka-reassign snapshot` file instead of ZooKeeper.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="Where the proposed assignment is computed (spark needs the [spark] extra).",
)
@click.option(
    "--spark-master",
    default="local[*]",
    show_default=True,
    metavar="URL",
    help="Spark master for --engine spark.",
)
@connection_options
def command(
    opts: Options,
    topics_file: str | None,
    topic_opts: tuple[str, ...],
    broker_list: list[int] | None,
    disable_rack_aware: bool,
    seed: int | None,
    output_dir: str | None,
    snapshot_file: str | None,
    engine: str,
    spark_master: str,
) -> None:
    """Propose a new replica assignment for the given topics over the given brokers.

    Kafka's --generate: prints the current assignment (keep it: it is the rollback plan) and the
    proposed one, both in Kafka's JSON format. Nothing is written to ZooKeeper. The plan is random per
    topic as in Kafka, but drawn from --seed, so it can be reproduced exactly.
    """
    ctx = click.get_current_context()
    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)

    # -- options ---------------------------------------------------------------------------------
    if not topics_file and not topic_opts:
        raise UsageError("one of --topics-to-move-json-file or --topic is required")
    if _from_command_line(ctx, "spark_master") and engine != "spark":
        raise UsageError("--spark-master needs --engine spark")
    if snapshot_file and _from_command_line(ctx, "zookeeper"):
        raise UsageError("--snapshot and --zookeeper cannot be used together")
    topics: list[str] = []
    if topics_file:
        topics += parse_topics_to_move(_read_text(topics_file, "topics-to-move file"))
    topics += topic_opts
    dups = duplicates(topics)
    if dups:
        raise InvalidInputError(f"List of topics to reassign contains duplicate entries: {','.join(dups)}")

    # -- state -----------------------------------------------------------------------------------
    state = _load_state(opts, out, snapshot_file, topics)

    # -- plan ------------------------------------------------------------------------------------
    from reassign_cli import plan

    # Broker selection first, so that its warnings (unregistered ids) show even when planning then fails.
    brokers, warnings = plan.select_brokers(state, broker_list, not disable_rack_aware)
    for w in warnings:
        out.warn(w)
    from reassign_cli.render.generate import CURRENT_HEADER, PROPOSED_HEADER, output_frame

    used_seed = plan.random_seed() if seed is None else seed  # chosen here: the early writer needs it
    before, between, after = output_frame(opts.json, used_seed)
    current_path = os.path.join(output_dir, "current.json") if output_dir else ""
    proposed_path: str | None = os.path.join(output_dir, "proposed.json") if output_dir else None

    def write_current(text: str) -> None:
        if output_dir:
            _make_dir(output_dir)
            _write(current_path, text)
        else:
            _stdout([before, text, between])

    # Large local plans use the second core: a forked child formats the current document while this
    # process plans, and writes it only once the plan succeeded (so an error never leaves output).
    writer = None
    if engine == "local":
        early = {t: state.topics[t].replicas for t in topics if t in state.topics}
        if _forkable(early):
            writer = _spawn(lambda: format_reassignment_json(early), then=write_current, gated=True)
        try:
            result = plan.generate_plan(
                state, plan.GenerateRequest(topics, broker_list, not disable_rack_aware, used_seed)
            )
        except BaseException:
            if writer is not None:
                _release(writer, False)
                _join(writer)
            raise
        specs, current, proposed = result.specs, result.current, result.proposed
    else:
        specs = plan.topic_specs(state, topics)
        # Kafka's argument checks (RF vs brokers, racks) before starting Spark: the errors generate_plan gives.
        plan.assign_topics(
            [plan.TopicSpec(s.name, 1, s.replication_factor) for s in specs], brokers, used_seed
        )
        current = {s.name: state.topics[s.name].replicas for s in specs}
        proposed = None
    if seed is None:
        # Always shown (even with -q): without it the plan could not be reproduced.
        out.err.print(
            f"Using seed {used_seed}; pass --seed {used_seed} to reproduce this plan.", markup=False
        )
    # The summary statistics too are computed in a forked child for large plans, while this process
    # formats the proposed document.
    summary = None
    if writer is not None and not opts.quiet:
        assert proposed is not None
        summary = _spawn(lambda: _render_summary(out, current, proposed, brokers), what="the summary")

    proposed_json: str | None = None
    if proposed is None:
        # Spark can fail: it runs before anything is written, so a failure never leaves half an output.
        if output_dir:
            _make_dir(output_dir)  # Spark's executors write proposed.json into it
        proposed_json = _proposed_json(
            None, specs, brokers, used_seed, spark_master, opts.verbose, proposed_path
        )
    if writer is not None:
        _release(writer, True)
    else:
        write_current(format_reassignment_json(current))
    if proposed_json is None and proposed is not None:
        # Each document is written before the next is formatted when inline (a 1M-partition document
        # is ~80 MB: never hold both, nor a concatenation).
        proposed_json = format_reassignment_json(proposed)
    if writer is not None:
        _join(writer)  # the current document is out: the proposed one may follow
    if not output_dir:
        assert proposed_json is not None
        _stdout([proposed_json, after])
    else:
        assert proposed_path is not None
        if proposed_json is not None:
            _write(proposed_path, proposed_json)
        else:  # Spark wrote it, without the final newline
            _append_newline(proposed_path)
        if opts.json:
            out.result_json({"seed": used_seed, "current_file": current_path, "proposed_file": proposed_path})
        else:
            out.result(f"{CURRENT_HEADER} written to {current_path}")
            out.result(f"{PROPOSED_HEADER} written to {proposed_path}")

    if summary is not None:
        sys.stderr.write(_join(summary))
        sys.stderr.flush()
    elif not opts.quiet:
        if proposed is None:  # Spark: read the proposal back from its JSON
            if proposed_json is None:
                assert proposed_path is not None
                proposed_json = _read_text(proposed_path, "proposed plan").decode()
            proposed = _assignment_of(proposed_json)
        del proposed_json
        sys.stderr.write(_render_summary(out, current, proposed, brokers))
        sys.stderr.flush()
    # Freeing a 1M-partition state object by object takes ~0.3 s; the process is about to exit anyway.
    keep_until_exit(state, current, proposed)


def _render_summary(out: Output, current: Any, proposed: Any, brokers: Any) -> str:
    from reassign_cli.render.generate import plan_stats, summary_table

    stats = plan_stats(current, proposed)
    with out.err.capture() as captured:
        out.renderable(summary_table(stats, [b.id for b in brokers], every_broker=out.verbose))
    return captured.get()


# Below this many partitions a second process costs more than it saves (env override for tests).
FORK_MIN_PARTITIONS = int(os.environ.get("KAFKA_REASSIGN_FORK_MIN_PARTITIONS", "100000"))


def _forkable(current: Mapping[str, Mapping[int, Any]]) -> bool:
    import threading

    if not hasattr(os, "fork") or threading.active_count() > 1:  # forking with threads is unsafe
        return False
    return sum(len(parts) for parts in current.values()) >= FORK_MIN_PARTITIONS


@dataclass(slots=True)
class _Child:
    pid: int
    result: int  # read end: b"0" + text on success, b"1" + a one-line error
    gate: int | None  # write end: b"1" lets a gated child go on, anything else stops it


def _spawn(
    work: Callable[[], str | None],
    *,
    then: Callable[[str], None] | None = None,
    gated: bool = False,
    what: str = "",
) -> _Child:
    """Run work() in a forked child, which never returns into the caller's stack. Without `then`, its
    text result comes back through a pipe (see _join); with `then`, then(result) runs in the child,
    after _release(child, True) when gated (and not at all after _release(child, False))."""
    sys.stdout.flush()
    sys.stderr.flush()
    result_r, result_w = os.pipe()
    gate_r, gate_w = os.pipe() if gated else (-1, -1)
    pid = os.fork()
    if pid:
        os.close(result_w)
        if gated:
            os.close(gate_r)
        return _Child(pid, result_r, gate_w if gated else None)
    os.close(result_r)
    code = 0
    try:
        text = work()
        if gated:
            os.close(gate_w)
            with os.fdopen(gate_r, "rb") as gate:
                if gate.read(1) != b"1":
                    os._exit(0)
        if then is not None:
            then(text or "")
            text = ""
        payload = b"0" + (text or "").encode()
        sys.stdout.flush()
    except BaseException as e:
        code = 1
        msg = str(e) if isinstance(e, ReassignError) else f"{what or 'writing the output'} failed: {e}"
        payload = b"1" + msg.encode()
    with contextlib.suppress(BaseException):
        view = memoryview(payload)
        while view:
            view = view[os.write(result_w, view) :]
    os._exit(code)


def _release(child: _Child, go: bool) -> None:
    if child.gate is not None:
        with contextlib.suppress(OSError):
            os.write(child.gate, b"1" if go else b"0")
        os.close(child.gate)
        child.gate = None


def _join(child: _Child) -> str:
    with os.fdopen(child.result, "rb") as f:
        data = f.read()
    _, status = os.waitpid(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or (data and not data.startswith(b"0")):
        raise OperationalError(data[1:].decode(errors="replace") or "a helper process failed")
    return data[1:].decode()


def _proposed_json(
    proposed: Any,
    specs: Any,
    brokers: Any,
    seed: int,
    spark_master: str,
    verbose: bool,
    out_path: str | None,
) -> str | None:
    """The proposed document: formatted here (local engine), or by Spark (which with out_path writes it
    there itself and returns None)."""
    if proposed is not None:
        return format_reassignment_json(proposed)
    from reassign_cli import spark_engine

    return spark_engine.proposed_json(
        specs, brokers, seed, master=spark_master, verbose=verbose, out_path=out_path
    )


def _assignment_of(doc: str | bytes) -> dict[str, dict[int, list[int]]]:
    import orjson

    assignment: dict[str, dict[int, list[int]]] = {}
    for e in orjson.loads(doc)["partitions"]:
        assignment.setdefault(e["topic"], {})[e["partition"]] = e["replicas"]
    return assignment


def _load_state(opts: Options, out: Output, snapshot_file: str | None, topics: list[str]) -> ClusterState:
    if snapshot_file:
        from reassign_cli import snapshot

        if opts.zookeeper:
            out.detail("Planning from the snapshot; KAFKA_REASSIGN_ZOOKEEPER is not used.")
        # Everything loaded stays alive until exit: freeze keeps the cyclic GC from rescanning it.
        return snapshot.loads(_read_text(snapshot_file, "snapshot file"), partition_state=False, freeze=True)
    from reassign_cli.zookeeper.connect import connect
    from reassign_cli.zookeeper.read import read_state

    with connect(require_zookeeper(opts), opts.zk_timeout) as client:
        return read_state(client, topics=topics, timeout=opts.zk_timeout)


def _make_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise OperationalError(f"cannot create directory {path}: {e.strerror or e}") from None


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
            f.write("\n")
    except OSError as e:
        raise OperationalError(f"cannot write {path}: {e.strerror or e}") from None


def _append_newline(path: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n")
    except OSError as e:
        raise OperationalError(f"cannot write {path}: {e.strerror or e}") from None


def _stdout(pieces: list[str]) -> None:
    """Write the pieces one by one: no 100 MB concatenation for 1M-partition plans."""
    import sys

    for piece in pieces:
        sys.stdout.write(piece)
    sys.stdout.flush()
