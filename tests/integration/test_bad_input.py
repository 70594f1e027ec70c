"""execute refuses every bad plan with exit 3, one error line naming the problem, and writes nothing:
the znode tree (zk_dump) is the same before and after."""

from __future__ import annotations

import json
from typing import Any

from tests.integration.reassign_support import Mover, await_idle, relevant_diff


def _entry(topic: str, p: int, reps: list[int], **extra: Any) -> dict[str, Any]:
    return {"topic": topic, "partition": p, "replicas": reps, **extra}


def _doc(*entries: dict[str, Any], version: int = 1) -> str:
    return json.dumps({"version": version, "partitions": list(entries)})


# (case id, file text built from the topic name, text the one error line must contain)
CASES: list[tuple[str, Any, str]] = [
    ("malformed JSON", lambda t: '{"version":1,"partitions":[{"topic":"' + t + '",', "is not valid JSON"),
    (
        "unsupported version",
        lambda t: _doc(_entry(t, 0, [2, 3]), version=2),
        "Not supported version field value 2",
    ),
    (
        "missing replicas field",
        lambda t: _doc({"topic": t, "partition": 0}),
        "No such field exists: `replicas`",
    ),
    (
        "missing partition field",
        lambda t: _doc({"topic": t, "replicas": [1]}),
        "No such field exists: `partition`",
    ),
    ("empty list", lambda t: _doc(), "Partition reassignment list cannot be empty"),
    ("empty replicas", lambda t: _doc(_entry(t, 0, [])), "Partition replica list cannot be empty: {t}-0"),
    (
        "duplicate replicas",
        lambda t: _doc(_entry(t, 0, [2, 2])),
        "Partition replica lists may not contain duplicate entries: {t}-0 contains multiple entries for 2",
    ),
    ("negative replica", lambda t: _doc(_entry(t, 0, [-1, 2])), "{t}-0: -1"),
    (
        "unregistered broker",
        lambda t: _doc(_entry(t, 0, [1, 4])),
        "The proposed assignment contains non-existent brokerIDs: 4 (in {t}-0)",
    ),
    (
        "missing partition",
        lambda t: _doc(_entry(t, 7, [1, 2])),
        "The proposed assignment contains non-existent partitions: {t}-7",
    ),
    (
        "missing topic",
        lambda t: _doc(_entry(t + "-nope", 0, [1, 2])),
        "The proposed assignment contains non-existent partitions: {t}-nope-0",
    ),
    (
        "same partition twice",
        lambda t: _doc(_entry(t, 0, [2, 3]), _entry(t, 0, [3, 1])),
        "Partition reassignment contains duplicate topic partitions: {t}-0",
    ),
    (
        "log_dirs length mismatch",
        lambda t: _doc(_entry(t, 0, [2, 3], log_dirs=["any"])),
        "Size of replicas list [2, 3] is different from size of log dirs list [any] for partition {t}-0",
    ),
    (
        "log_dirs without --bootstrap-server",
        lambda t: _doc(_entry(t, 0, [2, 3], log_dirs=["/tmp/x", "any"])),
        "bootstrap-server needs to be provided when replica reassignments are present.",
    ),
]


def test_every_bad_plan_exits_3_with_one_line_and_writes_nothing(
    make_topic: Any, zk: Any, zk_dump: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3]})
    await_idle(zk)
    for case, build, expected in CASES:
        plan = mover.tmp / "plan.json"
        plan.write_text(build(topic))
        before = zk_dump(zk)
        r = mover.execute(plan, "--throttle", "1000")
        after = zk_dump(zk)
        assert r.returncode == 3, f"{case}: exit {r.returncode}\n{r.stderr}"
        lines = r.stderr.strip().splitlines()
        assert lines == [lines[0]] and lines[0].startswith("Error: "), f"{case}: {r.stderr!r}"
        assert expected.format(t=topic) in lines[0], f"{case}: {lines[0]!r}"
        assert r.stdout == "", f"{case}: nothing on stdout when refused, got {r.stdout!r}"
        assert relevant_diff(before, after, [topic]) == {}, case
        assert not list(mover.tmp.glob("rollback-*.json")), f"{case}: a rollback file was written"


def test_several_problems_first_is_the_error_others_follow(
    make_topic: Any, zk: Any, zk_dump: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3]})
    plan = mover.tmp / "plan.json"
    plan.write_text(_doc(_entry(topic, 0, [2, 2]), _entry(topic, 1, [1, 5]), _entry(topic, 9, [1, 2])))
    before = zk_dump(zk)
    r = mover.execute(plan)
    assert r.returncode == 3, r.stderr
    assert r.stderr.splitlines() == [
        f"Error: Partition replica lists may not contain duplicate entries: {topic}-0 contains multiple "
        "entries for 2",
        f"The proposed assignment contains non-existent partitions: {topic}-9",
        f"The proposed assignment contains non-existent brokerIDs: 5 (in {topic}-1)",
    ]
    assert relevant_diff(before, zk_dump(zk), [topic]) == {}


def test_missing_file_is_an_input_error(mover: Mover) -> None:
    r = mover.cli("execute", "--reassignment-json-file", mover.tmp / "absent.json")
    assert r.returncode == 3
    assert r.stderr.startswith("Error: cannot read ") and len(r.stderr.splitlines()) == 1


def test_out_of_range_throttle_is_a_usage_error_before_anything(
    make_topic: Any, zk: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1, 2]})
    plan = mover.tmp / "plan.json"
    plan.write_text(_doc(_entry(topic, 0, [2, 1])))
    r = mover.execute(plan, "--throttle", str(2**63))
    assert r.returncode == 2
    # click's usage error for a rate option (core.rates: B/s or a unit), its one "Error:" line last
    assert r.stderr.splitlines()[-1] == (
        f"Error: Invalid value for '--throttle': '{2**63}' is more than {2**63 - 1} bytes/s"
    )
    assert not list(mover.tmp.glob("rollback-*.json"))
