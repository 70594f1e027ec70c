"""`kafka-reassign list`: what is reassigning now, from /admin/reassign_partitions and the AR/RR in topic
znodes, in Kafka 3.9's --list format."""

from __future__ import annotations

from typing import Any

import click

from reassign_cli.cli.common import Options, connection_options, open_backend
from reassign_cli.cli.plan_ctl import list_standing, list_stored, standing_pause_report, stored_plan_report
from reassign_cli.core.in_flight import Row, active_reassignments
from reassign_cli.core.model import ClusterState
from reassign_cli.core.progress import anything_reassigning
from reassign_cli.core.throttle import recorded_entities


@click.command("list", short_help="List the partition reassignments running now.")
@connection_options
def command(opts: Options) -> int:
    """List the partition reassignments running now (the trigger znode and the topic znodes' AR/RR; with
    --bootstrap-server, ListPartitionReassignments), then the plan a paced execute stored in the cluster, if
    any: its state, moves, bytes, ETA, who stored it, who drives it, its last step."""
    from reassign_cli.render import Output

    out = Output(color=opts.color, quiet=opts.quiet, verbose=opts.verbose)
    with open_backend(opts) as backend:
        state = backend.read_state()
        recorded = recorded_entities(backend.read_priors())
        stored = stored_plan_report(backend, recorded)
        standing = standing_pause_report(backend)
    rows = active_reassignments(state)
    orphans = orphans_of(recorded, reassigning=anything_reassigning(state), stored=stored)
    if opts.json:
        doc = _list_json(state, rows, orphans)
        doc = doc if stored is None else {**doc, "stored_plan": stored}
        out.result_json(doc if standing is None else {**doc, "standing_pause": standing})
        return 0
    _list_text(out, state, rows, orphans)
    list_stored(out, stored)
    list_standing(out, standing)
    return 0


def orphans_of(
    recorded: tuple[list[int], list[str]], *, reassigning: bool, stored: dict[str, Any] | None
) -> tuple[list[int], list[str]] | None:
    """The recorded throttles list warns of: while nothing reassigns, those no stored plan keeps for its
    moves (its `throttles`, core.plan_view.throttles_held: a stored plan between two moves keeps them
    legitimately). None: nothing to warn of."""
    if reassigning:
        return None
    brokers, topics = recorded
    held = (stored or {}).get("throttles") or {"brokers": [], "topics": []}
    left = ([b for b in brokers if b not in held["brokers"]], [t for t in topics if t not in held["topics"]])
    return left if left[0] or left[1] else None


def _list_json(state: ClusterState, rows: list[Row], orphans: tuple[list[int], list[str]] | None) -> dict:
    return {
        "znode": state.reassignment is not None,
        "reassignments": [
            {
                "topic": r.topic,
                "partition": r.partition,
                "replicas": r.replicas,
                "adding": r.adding,
                "removing": r.removing,
                "source": r.source,
            }
            for r in rows
        ],
        "orphaned_throttles": None if orphans is None else {"brokers": orphans[0], "topics": orphans[1]},
    }


def _list_text(
    out: Any, state: ClusterState, rows: list[Row], orphans: tuple[list[int], list[str]] | None
) -> None:
    from reassign_cli.core.names import NAMES_SHOWN
    from reassign_cli.render.progress import entities_text, list_line

    if not rows:
        out.result("No partition reassignments found.")
    else:
        out.result("Current partition reassignments:")
        for r in rows:
            out.result(list_line(r.topic, r.partition, r.replicas, r.adding, r.removing))
    if state.trigger_problem is not None:
        out.warn(
            f"/admin/reassign_partitions cannot be used by the controller ({state.trigger_problem}); "
            "it blocks new reassignments until it is deleted"
        )
    elif state.reassignment is not None and not state.reassignment:
        out.warn(
            "/admin/reassign_partitions exists but holds no entries the controller can read; "
            "it blocks new reassignments until it is deleted"
        )
    if orphans is not None:
        where = entities_text(*orphans, limit=None if out.verbose else NAMES_SHOWN)
        out.warn(
            f"throttles set by kafka-reassign are still in place on {where}, and nothing is reassigning "
            "(an interrupted execute?); kafka-reassign verify with the plan removes them"
        )
