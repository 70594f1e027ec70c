"""The executors' side of a JSON-lines snapshot (reassign_cli/spark/split.py), without Spark: for any cut of
the file into splits, the combined answers equal the local engine's (the same first error, or the same
documents and statistics)."""

from __future__ import annotations

import dataclasses
import itertools
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli import errors
from reassign_cli.core import snapshot_lines
from reassign_cli.core.model import Broker, ClusterState, Topic, format_partition_entries
from reassign_cli.planning import plan
from reassign_cli.spark import split as split_plan
from tests.unit.test_snapshot_lines import H, files


def cut(lines: list[bytes], cuts: Sequence[int]) -> list[list[bytes]]:
    """The file's lines (header first) cut into splits; split 0 always holds the header, as the split that
    starts at byte 0 does in Hadoop's reader (later splits may be empty)."""
    bounds = [0, *sorted(min(max(c, 1), len(lines)) for c in cuts), len(lines)]
    return [lines[lo:hi] for lo, hi in itertools.pairwise(bounds)]


def scans_of(splits: list[list[bytes]], sel: split_plan.Selection, chunk: int) -> list[split_plan.SplitScan]:
    # the answers come back in any order; the driver orders them by split index
    return [split_plan.scan_split(i, lines, sel, chunk) for i, lines in reversed(list(enumerate(splits)))]


@settings(max_examples=300, deadline=None)
@given(files(), st.integers(1, 300))
def test_first_line_error_is_the_whole_files(case: tuple[list[bytes], list[int]], chunk: int) -> None:
    lines, cuts = case
    data = b"\n".join([H, *lines]) + b"\n"
    try:
        snapshot_lines.loads(data)
        expected = None
    except errors.InvalidInputError as e:
        expected = str(e)
    sel = split_plan.Selection(None, ((1, None),))
    scans = scans_of(cut([H, *lines], cuts), sel, chunk)
    error = split_plan.first_line_error(scans)
    assert (None if error is None else str(error)) == expected


def test_line_numbers_count_across_splits_hand_worked() -> None:
    """Line 1 header, 2 a, 3 blank, 4 c, 5 b (out of order): split 0 = lines 1-3, split 1 = lines 4-5."""
    p = b'{"partition":0,"replicas":[1]}'
    lines = [H, b'{"topic":"a","partitions":[' + p + b"]}", b"", b'{"topic":"c","partitions":[]}']
    lines.append(b'{"topic":"b","partitions":[]}')
    sel = split_plan.Selection(None, ((1, None),))
    s0, s1 = scans_of([lines[:3], lines[3:]], sel, 1 << 20)[::-1]
    assert (s0.lines, s0.first, s0.last, s0.error) == (3, (1, "a"), "a", None)
    assert (s1.lines, s1.first, s1.last, s1.error) == (
        2,
        (0, "c"),
        None,
        (1, "topic b comes after c: the topic lines must be sorted by name"),
    )
    assert str(split_plan.first_line_error([s1, s0])) == (
        "snapshot file: line 5: topic b comes after c: the topic lines must be sorted by name"
    )
    # the order is checked where splits meet too: c then a
    swapped = [lines[0], lines[3], lines[1]]
    assert str(split_plan.first_line_error(scans_of([swapped[:2], swapped[2:]], sel, 1))) == (
        "snapshot file: line 3: topic a comes after c: the topic lines must be sorted by name"
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Planning: the same error, or the same documents and statistics, as plan.topic_specs + check_specs +
# assign_topics on the whole state
# ---------------------------------------------------------------------------------------------

RACKED = ((1, "r1"), (2, "r2"), (3, "r1"), (5, "r3"), (8, "r2"))
UNRACKED = ((0, None), (1, None), (4, None), (7, None))
MIXED = ((1, "r1"), (2, None), (3, "r1"))


@st.composite
def clusters(
    draw: st.DrawFn,
) -> tuple[ClusterState, list[str], tuple[tuple[int, str | None], ...], int | None]:
    """A state (some topics empty, some with mixed RFs, some mid-reassignment, some being deleted), the
    topics asked for (some unknown), the brokers and perhaps an RF override."""
    names = sorted(draw(st.sets(st.text("abcdXYZ09._-", min_size=1, max_size=5), min_size=1, max_size=25)))
    topics = {}
    for name in names:
        n = (
            draw(st.sampled_from([0, 1, 2, 3, 7]))
            if draw(st.integers(0, 9)) == 0
            else draw(st.integers(1, 7))
        )
        rf = draw(st.integers(1, 4))
        replicas = {p: [1 + (p + i) % 9 for i in range(rf)] for p in range(n)}
        removing: dict[int, list[int]] = {}
        kind = draw(st.integers(0, 10))
        if kind in (0, 1) and n > 1:  # mixed RF
            replicas[n - 1] = replicas[n - 1] + [99]
        elif kind == 3:  # partition ids not 0..P-1 (current.json shows them as they are)
            replicas = {3 * p + 1: r for p, r in reversed(list(replicas.items()))}
        elif kind == 2 and n:  # mid-reassignment: RS is target + origin, RR the origin
            replicas[0] = [*replicas[0], 42]
            removing = {0: [42]}
        topics[name] = Topic(name, replicas, removing=removing)
    deleting = frozenset(n for n in names if draw(st.integers(0, 15)) == 0)
    asked = [n for n in names if draw(st.booleans())] or names[:1]
    if draw(st.integers(0, 5)) == 0:
        asked.append(draw(st.sampled_from(["nope", "zz-missing", "a.b.c.d.e.f"])))
    brokers = draw(st.sampled_from([RACKED, UNRACKED, MIXED, RACKED[:2]]))
    rf = draw(st.sampled_from([None, None, 1, 3, 5]))
    return ClusterState(brokers=[], topics=topics, deleting=deleting), asked, brokers, rf


def checked_specs(state: ClusterState, asked: list[str], brokers: Any, rf: int | None) -> Any:
    """The local engine's specs, or its error as a comparable tuple."""
    try:
        specs = plan.topic_specs(state, asked)
        if rf is not None:
            specs = [dataclasses.replace(s, replication_factor=rf) for s in specs]
        plan.check_specs(specs, brokers)
    except errors.ReassignError as e:
        return ("error", type(e), str(e), e.hint)
    return specs


def scan_splits(
    state: ClusterState,
    asked: list[str],
    brokers: Any,
    rf: int | None,
    cuts: list[int],
    chunk: int,
    others: bool = False,
) -> Any:
    """The state as JSON lines cut into splits and scanned: (selection, each split's records, its scan),
    or the error the driver raises, as a comparable tuple."""
    lines = b"".join(snapshot_lines.dump_lines(state)).splitlines()
    splits = cut(lines, [c for c in cuts if c <= len(lines)])
    sel = split_plan.Selection(sorted(set(asked)), brokers, rf, state.deleting, others=others)
    passes = [list(split_plan.iter_scan(i, part, sel, chunk)) for i, part in enumerate(splits)]
    scans = [p[-1] for p in passes]
    assert all(isinstance(s, split_plan.SplitScan) for s in scans)
    assert all(isinstance(t, split_plan.SplitTopics) for p in passes for t in p[:-1])
    assert split_plan.first_line_error(scans) is None  # type: ignore[arg-type]
    error = split_plan.first_plan_error(scans, sel)  # type: ignore[arg-type]
    if error is not None:
        return ("error", type(error), str(error), error.hint)
    return sel, passes, scans


def local_engine(state: ClusterState, asked: list[str], brokers: Any, rf: int | None, seed: int) -> Any:
    specs = checked_specs(state, asked, brokers, rf)
    if isinstance(specs, tuple):
        return specs
    current = {s.name: state.topics[s.name].replicas for s in specs}
    proposed = plan.assign_topics(specs, brokers, seed)
    return (
        "ok",
        format_partition_entries(current),
        format_partition_entries(proposed),
        plan.plan_stats(current, proposed),
    )


def split_engine(
    state: ClusterState,
    asked: list[str],
    brokers: Any,
    rf: int | None,
    seed: int,
    cuts: list[int],
    chunk: int,
) -> Any:
    scanned = scan_splits(state, asked, brokers, rf, cuts, chunk)
    if scanned[0] == "error":
        return scanned
    sel, passes, _ = scanned
    current, proposed, stats = [], [], plan.PlanStats()
    for kept in passes:  # each split's compact topics, as Spark caches them (pickled)
        cached = pickle.loads(pickle.dumps(kept[:-1]))
        for piece in split_plan.plan_split(cached, sel, seed, True, plan_partitions=chunk % 7 + 1):
            current += [piece.current] if piece.current else []
            proposed += [piece.proposed] if piece.proposed else []
            assert piece.stats is not None
            stats.add(piece.stats)
    return ("ok", ",".join(current), ",".join(proposed), stats)


@settings(max_examples=400, deadline=None)
@given(clusters(), st.lists(st.integers(0, 40), max_size=5), st.integers(1, 2000), st.integers(0, 2**64))
def test_splits_answer_as_the_local_engine(case: Any, cuts: list[int], chunk: int, seed: int) -> None:
    state, asked, brokers, rf = case
    assert split_engine(state, asked, brokers, rf, seed, cuts, chunk) == local_engine(
        state, asked, brokers, rf, seed
    )


def test_errors_rank_as_the_local_engine_hand_worked() -> None:
    """Split 1 has a topic with mixed RFs, split 2 one without partitions: the latter is reported (the
    local engine checks for empty topics before mixed RFs); an RF over the broker count comes last."""
    topics = {
        "a": Topic("a", {0: [1, 2], 1: [2]}),
        "b": Topic("b", {0: [1, 2, 3]}),
        "c": Topic("c", {}),
    }
    state = ClusterState(brokers=[], topics=topics)
    lines = b"".join(snapshot_lines.dump_lines(state)).splitlines()
    splits = [lines[:2], lines[2:3], lines[3:]]
    pairs = ((1, None), (2, None))
    sel = split_plan.Selection(["a", "b", "c"], pairs)
    err = split_plan.first_plan_error(scans_of(splits, sel, 1), sel)
    assert type(err) is errors.InvalidInputError and str(err) == "Topic c has no partitions"
    sel = split_plan.Selection(["a", "b"], pairs)
    err = split_plan.first_plan_error(scans_of(splits, sel, 1), sel)
    assert (
        str(err)
        == "Topic a has partitions with different replication factors (1,2); generate needs one replication factor per topic"
    )
    sel = split_plan.Selection(["b"], pairs)
    err = split_plan.first_plan_error(scans_of(splits, sel, 1), sel)
    assert type(err) is errors.InvalidReplicationFactorError
    assert (str(err), err.hint) == (
        "Replication factor: 3 larger than available brokers: 2.",
        "topic b has replication factor 3",
    )
    sel = split_plan.Selection(["b", "d", "x"], pairs)
    assert str(split_plan.first_plan_error(scans_of(splits, sel, 1), sel)) == "Topics not found: d,x"
    sel = split_plan.Selection(["b"], pairs, replication_factor=2)
    assert split_plan.first_plan_error(scans_of(splits, sel, 1), sel) is None  # fmt: skip


def test_every_topic_when_no_names_are_given() -> None:
    topics = {n: Topic(n, {0: [1], 1: [2]}) for n in ("x", "y", "z")}
    lines = b"".join(snapshot_lines.dump_lines(ClusterState([], topics))).splitlines()
    sel = split_plan.Selection(None, ((1, None), (2, None)))
    scans = scans_of([lines[:2], lines[2:]], sel, 1)
    assert [s.topics for s in sorted(scans, key=lambda s: s.index)] == [1, 2]
    assert split_plan.first_plan_error(scans, sel) is None
    kept = [t for i, part in enumerate([lines[:2], lines[2:]]) for t in split_plan.iter_scan(i, part, sel, 1)]
    batches = [t for t in kept if isinstance(t, split_plan.SplitTopics)]
    text = ",".join(p.proposed for p in split_plan.plan_split(batches, sel, 3, False))
    assert text == format_partition_entries(plan.assign_topics([plan.TopicSpec(n, 2, 1) for n in "xyz"], [Broker(1), Broker(2)], 3))  # fmt: skip


def test_found_indexes_point_into_the_names() -> None:
    topics = {n: Topic(n, {0: [1]}) for n in ("b", "d", "f")}
    lines = b"".join(snapshot_lines.dump_lines(ClusterState([], topics))).splitlines()
    sel = split_plan.Selection(["a", "b", "c", "f"], ((1, None),))
    (scan,) = scans_of([lines], sel, 1 << 20)
    assert scan.found.tolist() == [1, 3] and scan.found.dtype == np.int32
    assert str(split_plan.first_plan_error([scan], sel)) == "Topics not found: a,c"


@pytest.mark.parametrize("index", [0, 1])
def test_a_split_without_lines(index: int) -> None:
    sel = split_plan.Selection(["a"], ((1, None),))
    scan = split_plan.scan_split(index, [], sel)
    assert (scan.lines, scan.first, scan.last, scan.error, scan.topics) == (0, None, None, None, 0)
    assert [type(x) for x in split_plan.iter_scan(index, [], sel)] == [split_plan.SplitScan]  # no topics kept
    assert list(split_plan.plan_split([], sel, 1, True)) == []
