"""Validation of a reassignment file against the cluster, and batching of the trigger znode."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.core.model import (
    Broker,
    ClusterState,
    PlanEntry,
    ReassignmentFile,
    Topic,
    format_plan_entries,
)
from reassign_cli.core.validate import (
    Violation,
    entry_bytes,
    max_trigger_bytes,
    split_batches,
    validate_reassignment,
)
from reassign_cli.errors import ExitCode, InvalidInputError, UsageError


def cluster(deleting: frozenset[str] = frozenset()) -> ClusterState:
    return ClusterState(
        [Broker(1, "r1"), Broker(2, "r2"), Broker(3, "r3")],
        {
            "foo": Topic("foo", {0: [1, 2], 1: [2, 3], 2: [3, 1]}),
            "bar": Topic("bar", {0: [1, 2, 3]}),
        },
        deleting=deleting,
    )


def plan(*entries: tuple[str, int, list[int]] | PlanEntry) -> ReassignmentFile:
    return ReassignmentFile([e if isinstance(e, PlanEntry) else PlanEntry(*e) for e in entries])


def messages(violations: list[Violation]) -> list[str]:
    return [v.message for v in violations]


def test_a_valid_plan_has_no_violations() -> None:
    p = plan(("foo", 0, [3, 2]), ("foo", 1, [1, 2, 3]), PlanEntry("bar", 0, [3, 2, 1], ["any", "any", "any"]))
    assert validate_reassignment(p, cluster(), bootstrap_server=False) == []


def test_empty_plan() -> None:
    assert validate_reassignment(plan(), cluster(), bootstrap_server=False) == [
        Violation(None, "Partition reassignment list cannot be empty")
    ]


def test_each_check_with_kafkas_wording() -> None:
    cases: list[tuple[ReassignmentFile, Violation]] = [
        (plan(("foo", 0, [])), Violation(("foo", 0), "Partition replica list cannot be empty: foo-0")),
        (
            plan(("foo", 1, [1]), ("foo", 0, [1]), ("foo", 1, [2])),
            Violation(("foo", 1), "Partition reassignment contains duplicate topic partitions: foo-1"),
        ),
        (
            plan(("foo", 0, [1, 2, 1, 2, 3])),
            Violation(
                ("foo", 0),
                "Partition replica lists may not contain duplicate entries: foo-0 contains multiple entries for 1,2",
            ),
        ),
        (
            plan(("foo", 0, [1, -1])),
            Violation(("foo", 0), "Invalid broker id in replica list of partition foo-0: -1"),
        ),
        (
            plan(PlanEntry("foo", 0, [1, 2], ["any", "/data/d2"])),
            Violation(None, "bootstrap-server needs to be provided when replica reassignments are present."),
        ),
        (
            plan(("foo", 7, [1])),
            Violation(("foo", 7), "The proposed assignment contains non-existent partitions: foo-7"),
        ),
        (
            plan(("nope", 0, [1])),
            Violation(
                ("nope", 0),
                "The proposed assignment contains non-existent partitions: nope-0 (topic nope does not exist)",
            ),
        ),
        (
            plan(("foo", 0, [5, 1]), ("foo", 1, [4, 5])),
            Violation(None, "The proposed assignment contains non-existent brokerIDs: 4,5 (in foo-0, foo-1)"),
        ),
    ]
    for p, expected in cases:
        assert validate_reassignment(p, cluster(), bootstrap_server=False) == [expected]


def test_log_dir_moves_pass_with_bootstrap_server() -> None:
    p = plan(PlanEntry("foo", 0, [1, 2], ["any", "/data/d2"]))
    assert validate_reassignment(p, cluster(), bootstrap_server=True) == []


def test_topic_queued_for_deletion_is_refused_once_per_topic() -> None:
    p = plan(("foo", 0, [1]), ("foo", 1, [2]), ("bar", 0, [1]))
    violations = validate_reassignment(p, cluster(frozenset({"foo"})), bootstrap_server=False)
    assert len(violations) == 1
    assert violations[0].partition is None
    assert violations[0].message.startswith("Topic foo is queued for deletion")


def test_all_violations_in_kafkas_order() -> None:
    p = plan(
        ("nope", 3, [9]),
        ("foo", 0, [1, 1]),
        ("foo", 1, []),
        PlanEntry("foo", 2, [-2, 8], ["/a", "any"]),
        ("foo", 1, [1]),
    )
    violations = validate_reassignment(p, cluster(frozenset({"nope"})), bootstrap_server=False)
    assert messages(violations) == [
        "Partition replica list cannot be empty: foo-1",
        "Partition reassignment contains duplicate topic partitions: foo-1",
        "Partition replica lists may not contain duplicate entries: foo-0 contains multiple entries for 1",
        "Invalid broker id in replica list of partition foo-2: -2",
        "bootstrap-server needs to be provided when replica reassignments are present.",
        "The proposed assignment contains non-existent partitions: nope-3 (topic nope does not exist)",
        # A negative id is reported once, as invalid, not again as non-existent.
        "The proposed assignment contains non-existent brokerIDs: 8,9 (in foo-2, nope-3)",
        "Topic nope is queued for deletion (/admin/delete_topics/nope): the controller would drop its reassignment",
    ]
    assert all("\n" not in m for m in messages(violations))


# ----- batching ---------------------------------------------------------------------------------


def test_max_trigger_bytes_is_under_jute_maxbuffer() -> None:
    assert 1_000_000 < max_trigger_bytes() < 0xFFFFF


def test_batches_are_sorted_and_complete() -> None:
    entries = [
        PlanEntry("b", 1, [1]),
        PlanEntry("a", 10, [2]),
        PlanEntry("a", 2, [3]),
        PlanEntry("b", 0, [1]),
    ]
    batches = split_batches(entries, 3, max_trigger_bytes())
    assert [[(e.topic, e.partition) for e in b] for b in batches] == [
        [("a", 2), ("a", 10), ("b", 0)],
        [("b", 1)],
    ]
    assert split_batches(entries, None, max_trigger_bytes()) == [batches[0] + batches[1]]
    assert split_batches([], None, 100) == []


def test_batches_fit_the_byte_limit_exactly() -> None:
    entries = [PlanEntry("t", p, [1, 2, 3]) for p in range(10)]
    one = len(format_plan_entries(entries[:1]))
    two = len(format_plan_entries(entries[:2]))
    assert [len(b) for b in split_batches(entries, None, two)] == [2] * 5
    assert [len(b) for b in split_batches(entries, None, two - 1)] == [1] * 10
    assert [len(b) for b in split_batches(entries, None, one)] == [1] * 10


def test_an_entry_too_big_on_its_own_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="t-0") as info:
        split_batches([PlanEntry("t", 0, [1, 2, 3])], None, 40)
    assert info.value.exit_code == ExitCode.INVALID


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(UsageError):
        split_batches([PlanEntry("t", 0, [1])], 0, max_trigger_bytes())


plan_entries = st.lists(
    st.builds(
        PlanEntry,
        st.text(alphabet="abz._-é", min_size=1, max_size=8),
        st.integers(0, 100_000),
        st.lists(st.integers(0, 1_000_000), max_size=5),
    ),
    max_size=40,
    unique_by=lambda e: (e.topic, e.partition),
)


@settings(max_examples=200, deadline=None)
@given(plan_entries, st.one_of(st.none(), st.integers(1, 7)), st.integers(150, 2000))
def test_batches_property(entries: list[PlanEntry], batch_size: int | None, max_bytes: int) -> None:
    for e in entries:
        assert entry_bytes(e) == len(format_plan_entries([e]).encode()) - len(
            format_plan_entries([]).encode()
        )
    try:
        batches = split_batches(entries, batch_size, max_bytes)
    except InvalidInputError:
        assert any(len(format_plan_entries([e]).encode()) > max_bytes for e in entries)
        return
    flat = [e for b in batches for e in b]
    assert flat == sorted(entries, key=lambda e: (e.topic, e.partition))
    for i, batch in enumerate(batches):
        assert batch
        assert len(format_plan_entries(batch).encode()) <= max_bytes
        if batch_size is not None:
            assert len(batch) <= batch_size
        if i + 1 < len(batches):  # greedy: the next entry did not fit
            grown = [*batch, batches[i + 1][0]]
            assert len(format_plan_entries(grown).encode()) > max_bytes or len(grown) > (
                batch_size or len(grown)
            )
