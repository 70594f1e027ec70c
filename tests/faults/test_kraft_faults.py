"""The fault suite on KRaft (Kafka 4.x), through the admin API: docs/faults.md's KRaft table, one test per row.

A cluster of its own ($CLUSTER_DIR-faults-kraft: three combined broker+controller nodes, a three-voter
quorum), since these tests pause, kill -9 and stop its nodes. Real processes: the CLI as a child process
killed with SIGKILL, nodes frozen with SIGSTOP or killed with SIGKILL and started again by scripts/cluster.
Every test ends in assert_clean (tests/faults/kraft_support.py): nothing reassigning, no throttle key of ours
on any broker or planned topic, the operator's own broker rate kept exactly, our record empty, replicas as
planned, every message produced read back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import ExtraCluster
from tests.faults.kraft_support import (
    FAST,
    RATE,
    RECORDS,
    SIZE,
    active_controller,
    assert_clean,
    fenced,
    kill9_node,
    paused,
    steady,
)
from tests.faults.support import Child, error_lines
from tests.helpers import wait_until
from tests.integration.kraft_support import (
    EMPTY,
    FREP,
    LR,
    RECORD_TOPIC,
    Admin,
    admin,
    cli,
    eventually,
    kafka_tool,
    plan,
    record_messages,
    replayed_record,
)

OPERATOR_BROKER, OPERATOR_RATE = 2, "4242424"
SLOWER = "400000"  # B/s: about 25 s for a move  # an operator's own leader rate, set before each test


@pytest.fixture
def ka(kc: ExtraCluster, tmp_path: Path) -> Iterator[Admin]:
    """A raw admin client; the cluster idle and our record empty before the test (a failed test's leftovers
    taken off by a verify), the operator's rate set on OPERATOR_BROKER during it."""
    with admin(kc.bootstrap) as a:
        steady(a, lambda: a.reassignments() == {} or None, "nothing reassigning", timeout=300)
        if a.record_end() and replayed_record(record_messages(kc.bootstrap)) != EMPTY:
            (tmp_path / "none.json").write_text('{"version":1,"partitions":[]}')
            r = cli(kc.bootstrap, "verify", "--reassignment-json-file", tmp_path / "none.json")
            assert r.returncode == 0, r.stderr
        steady(
            a, lambda: a.alter("brokers", OPERATOR_BROKER, {LR: OPERATOR_RATE}) or True, "the operator's rate"
        )
        try:
            yield a
        finally:
            steady(a, lambda: a.alter("brokers", OPERATOR_BROKER, {LR: None}) or True, "no operator's rate")


OPERATOR = {f"broker {OPERATOR_BROKER}": {LR: OPERATOR_RATE}}


@pytest.fixture
def children() -> Iterator[list[Child]]:
    """The CLI processes a test starts; any still running at the end is killed."""
    started: list[Child] = []
    yield started
    for c in started:
        if c.proc.poll() is None:
            c.proc.kill()
            c.finish(timeout=30)


def _start(kc: ExtraCluster, tmp: Path, children: list[Child], *args: Any, point: str | None = None) -> Child:
    module = "reassign_cli" if point is None else "tests.faults.kraft_runner"
    lead = () if point is None else (point,)
    child = Child(None, tmp, *lead, *args, bootstrap=kc.bootstrap, module=module)
    children.append(child)
    return child


def _execute(kc: ExtraCluster, tmp: Path, p: Path, *args: str) -> Any:
    return cli(kc.bootstrap, "execute", "--reassignment-json-file", p, *args, cwd=tmp)


def _verify(kc: ExtraCluster, tmp: Path, p: Path) -> Any:
    return cli(kc.bootstrap, "verify", "--reassignment-json-file", p, cwd=tmp)


def _waiting(kc: ExtraCluster, tmp: Path, children: list[Child], p: Path, rate: str = RATE) -> Child:
    """`execute --wait` in the background, once its wait loop runs (the move is under way)."""
    child = _start(
        kc, tmp, children, "execute", "--reassignment-json-file", p, "--throttle", rate, "--wait",
        "--poll-interval", "0.5",
    )  # fmt: skip
    child.wait_for_line("partitions done")
    return child


def _moving(ka: Admin, hint: str, replicas: list[int]) -> tuple[str, list[bytes]]:
    return ka.make_topic(hint, {0: replicas}, messages=RECORDS, size=SIZE)


def test_1_kill9_of_execute_wait_in_mid_move_then_verify(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]
) -> None:
    topic, values = _moving(ka, "kill", [1, 2])
    planned = {(topic, 0): [3, 2]}
    p = plan(tmp_path / "move.json", planned)
    child = _waiting(kc, tmp_path, children, p)
    assert (topic, 0) in ka.reassignments()
    child.kill9()

    # The move goes on in the cluster; verify says so (exit 4) and keeps the throttles.
    v = _verify(kc, tmp_path, p)
    assert v.returncode == 4, v.stdout + v.stderr
    assert f"Reassignment of partition {topic}-0 is still in progress." in v.stdout
    assert ka.throttles([], [topic])[f"topic {topic}"][FREP] == "0:3"
    # Recovery: verify again (cron does) until it exits 0; that one takes the throttles off.
    seen: list[Any] = []

    def completed() -> bool:
        seen.append(_verify(kc, tmp_path, p))
        assert seen[-1].returncode in (0, 4), seen[-1].stdout + seen[-1].stderr
        return bool(seen[-1].returncode == 0)

    wait_until(completed, timeout=180, interval=1, message=lambda: seen[-1].stdout + seen[-1].stderr)
    assert f"Reassignment of partition {topic}-0 is completed." in seen[-1].stdout
    # The verify that took the throttles off names them (once the controller lists nothing, a broker's
    # metadata may still trail for a verify or two, which then say "in progress"); a later one finds nothing.
    cleared = [v.stdout for v in seen if "Clearing broker-level throttles on brokers 1,2,3" in v.stdout]
    assert len(cleared) == 1, [v.stdout for v in seen]
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)


def test_1b_kill9_of_execute_wait_in_mid_move_then_resume(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]
) -> None:
    topic, values = _moving(ka, "resume", [1, 2])
    planned = {(topic, 0): [3, 2]}
    p = plan(tmp_path / "move.json", planned)
    _waiting(kc, tmp_path, children, p).kill9()
    assert (topic, 0) in ka.reassignments()
    # Recovery: the same execute with --resume (here faster): it waits for the move that runs (never
    # starts a second one), then takes the throttles off.
    r = _execute(kc, tmp_path, p, "--resume", "--throttle", FAST, "--poll-interval", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Waiting for the batch already running ({topic}-0)" in r.stderr
    assert "Successfully started" not in r.stdout
    assert "Clearing broker-level throttles on brokers 1,2,3" in r.stdout
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)


def test_2_two_executes_at_once(kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]) -> None:
    t1, v1 = _moving(ka, "a", [1, 2])
    t2, v2 = _moving(ka, "b", [2, 3])
    planned = {(t1, 0): [3, 2], (t2, 0): [1, 3]}
    plans = {
        t1: (plan(tmp_path / "a.json", {(t1, 0): [3, 2]}), "700001"),
        t2: (plan(tmp_path / "b.json", {(t2, 0): [1, 3]}), "700002"),
    }
    racing = {
        t: _start(kc, tmp_path, children, "execute", "--reassignment-json-file", p, "--throttle", rate)
        for t, (p, rate) in plans.items()
    }
    codes = {t: c.finish() for t, c in racing.items()}
    assert sorted(codes.values()) == [0, 4], {t: racing[t].stderr for t in racing}
    winner = next(t for t, code in codes.items() if code == 0)
    loser = t2 if winner == t1 else t1
    errors = error_lines(racing[loser].stderr)
    assert len(errors) == 1 and "existing partition assignment" in errors[0], racing[loser].stderr

    # The loser left nothing of its own and took nothing of the winner's: the winner's rate on the brokers
    # of its move (the operator's rate recorded as their prior), its topic throttled, the loser's not.
    assert set(ka.reassignments()) == {(winner, 0)}
    rate = plans[winner][1]
    involved = sorted({*planned[(winner, 0)], *ka.partitions(winner)[0][0]})
    got = ka.throttles(involved, [winner, loser])
    assert all(got[f"broker {b}"][LR] == rate for b in involved), got
    assert FREP in got[f"topic {winner}"] and got[f"topic {loser}"] == {}, got
    record = replayed_record(record_messages(kc.bootstrap))
    assert winner in record["topics"] and loser not in record["topics"], record
    assert record["brokers"][str(OPERATOR_BROKER)][LR] == OPERATOR_RATE, record

    # The winner's move, sped up and verified; then the loser again: it succeeds.
    r = _execute(kc, tmp_path, plans[winner][0], "--resume", "--throttle", FAST, "--poll-interval", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ka.configs("brokers", OPERATOR_BROKER)[LR] == OPERATOR_RATE
    r = _execute(kc, tmp_path, plans[loser][0], "--throttle", FAST, "--wait", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert_clean(ka, kc, planned, {t1: v1, t2: v2}, OPERATOR)


def _record_leader(kc: ExtraCluster, ka: Admin, tmp: Path) -> int:
    """The leader of __reassign_cli_throttles-0 (made by a small move first if no execute made it yet)."""
    if not ka.record_end():
        topic, _ = ka.make_topic("first", {0: [1]}, messages=1)
        p = plan(tmp / "first.json", {(topic, 0): [2]})
        r = _execute(kc, tmp, p, "--throttle", FAST, "--wait", "--poll-interval", "0.5")
        assert r.returncode == 0, r.stdout + r.stderr
    return ka.partitions(RECORD_TOPIC)[0][1]


def test_3_a_leader_node_paused_15s_in_mid_move(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]
) -> None:
    # Node a leads our record topic's partition (the record read at the end must find its new leader)
    # and the moving partition, and stays in it: b is added, c dropped, so the move cannot end while a is out.
    a = _record_leader(kc, ka, tmp_path)
    b, c = (n for n in kc.broker_ids if n != a)
    topic, values = _moving(ka, "leader", [a, c])
    planned = {(topic, 0): [a, b]}
    p = plan(tmp_path / "move.json", planned)
    child = _waiting(kc, tmp_path, children, p)
    with paused(kc, a):
        time.sleep(15)  # the fault itself: node a frozen for 15 s (its broker session times out after 9 s)
        assert child.proc.poll() is None, child.stderr  # --wait rides it out
    assert (topic, 0) in steady(ka, ka.reassignments, "the reassignments listed")
    # The same execute again, faster: the rates change and it waits with the first one.
    r = _execute(kc, tmp_path, p, "--resume", "--throttle", FAST, "--poll-interval", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert child.finish() == 0, child.stderr
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)


def test_4_the_target_node_down_before_execute(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]
) -> None:
    controller = active_controller(kc)
    target = max(n for n in kc.broker_ids if n != controller)
    source = min(n for n in kc.broker_ids if n != target)
    topic, values = _moving(ka, "target", [source])
    planned = {(topic, 0): [target]}
    p = plan(tmp_path / "move.json", planned)
    live = [n for n in kc.broker_ids if n != target]
    with kc.broker_stopped(target):
        before, end = ka.throttles(live, [topic]), ka.record_end()
        r = _execute(kc, tmp_path, p, "--throttle", RATE)
        assert r.returncode == 3, r.stdout + r.stderr
        assert error_lines(r.stderr) == [
            f"Error: The proposed assignment contains non-existent brokerIDs: {target} (in {topic}-0)"
        ]
        assert ka.throttles(live, [topic]) == before and ka.record_end() == end  # nothing written
        assert not list(tmp_path.glob("rollback-*.json"))
        # Kafka 4.x's own tool refuses too (exit 1), though the controller would accept the move.
        k = kafka_tool(kc.bootstrap, "--execute", "--reassignment-json-file", p)
        assert k.returncode == 1 and f"Unknown broker id {target}" in k.stdout + k.stderr, k.stdout + k.stderr
        assert steady(ka, ka.reassignments, "the reassignments listed") == {}
    # Recovery: start the node, execute again.
    r = _execute(kc, tmp_path, p, "--throttle", FAST, "--wait", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)


def test_5_the_active_controller_killed_in_mid_move(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]
) -> None:
    controller = active_controller(kc)
    a, b = (n for n in kc.broker_ids if n != controller)
    topic, values = _moving(ka, "quorum", [a])
    planned = {(topic, 0): [b]}
    p = plan(tmp_path / "move.json", planned)
    child = _waiting(kc, tmp_path, children, p, rate=SLOWER)  # still moving once the killed node is fenced
    kill9_node(kc, controller)
    try:
        # The two voters left elect a leader among themselves and carry on from the metadata log.
        wait_until(lambda: active_controller(kc) != controller, timeout=60, message="a new active controller")
        assert child.proc.poll() is None, child.stderr
        # Until its broker session expires (9 s), the killed node still counts as a live broker, whose
        # config a clear cannot read (exit 1: DescribeConfigs of broker N failed): see docs/faults.md K5.
        wait_until(lambda: fenced(ka, controller), timeout=60, message="the killed node fenced")
        # The move completes with the old controller down: the same execute again, faster, waits for it.
        r = _execute(kc, tmp_path, p, "--resume", "--throttle", FAST, "--poll-interval", "0.5")
        assert r.returncode == 0, r.stdout + r.stderr
        assert child.finish() == 0, child.stderr
    finally:
        kc.start_broker(controller)
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)


@pytest.mark.parametrize("point", ["record", "configs"])
def test_6_kill9_in_the_setup_of_execute(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child], point: str
) -> None:
    topic, values = _moving(ka, point, [1, 2])
    planned = {(topic, 0): [3, 2]}
    p = plan(tmp_path / "move.json", planned)
    child = _start(
        kc, tmp_path, children, "execute", "--reassignment-json-file", p, "--throttle", RATE, point=point
    )
    child.wait_for_line("kraft_runner: ")
    child.kill9()
    assert not ka.reassignments()
    record = replayed_record(record_messages(kc.bootstrap))
    assert topic in record["topics"], record  # the priors are recorded first
    written = ka.throttles([], [topic])[f"topic {topic}"]
    assert (written == {}) if point == "record" else (FREP in written), written
    # Recovery: execute again (it waits for the killed run's setup lease to end), then it runs as usual.
    r = _execute(kc, tmp_path, p, "--throttle", FAST, "--wait", "--poll-interval", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)


def test_7_the_leader_node_down_when_execute_wait_clears(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]
) -> None:
    """Issue 30 item 26: the leader node of the moving partition stopped in mid-move, so it is down when the
    move ends and `execute --wait` takes the throttles off (a broker's config goes through that broker).
    --wait waits for it to come back and takes its throttles off then: exit 0 means nothing of ours is
    left. (It used to print "stay until it is registered again" and exit 0, the rate left on the node.)"""
    a, c = 1, 2  # a leads the moving partition and leaves it: the move ends without it
    b = next(n for n in kc.broker_ids if n not in (a, c))
    topic, values = _moving(ka, "gone", [a, c])
    planned = {(topic, 0): [b, c]}
    p = plan(tmp_path / "move.json", planned)
    child = _waiting(kc, tmp_path, children, p)
    try:
        kc.stop_broker(a)
        child.wait_for_line(f"Waiting for broker {a} to register again", timeout=300)
        assert str(a) in replayed_record(record_messages(kc.bootstrap))["brokers"]  # still recorded
        kc.start_broker(a)
        assert child.finish() == 0, child.stderr
    finally:
        if a in kc.stopped:
            kc.start_broker(a)
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)


def _controllers(kc: ExtraCluster) -> str:
    """--bootstrap-controller: every node's controller listener (scripts/cluster's env)."""
    host = kc.bootstrap.split(",")[0].rsplit(":", 1)[0]
    return ",".join(f"{host}:{p}" for p in kc.env["CLUSTER_CONTROLLER_PORTS"].split(","))


def test_7c_the_leader_node_down_when_execute_wait_clears_through_the_controller(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]
) -> None:
    """Issue 30 item 26, with --bootstrap-controller (KIP-919): the node stays down; --wait takes its
    throttles off through the active controller instead of waiting for it, and exits 0 with our record
    empty while the node is still down. Once it is back, its config holds exactly what it held before
    execute: an operator's own leader rate (which execute had raised to its own) and no follower rate.
    (Without the controller client this waited for the node within --timeout and exited 4.)"""
    a, c = 1, 2
    b = next(n for n in kc.broker_ids if n not in (a, c))
    prior = "5151515"
    topic, values = _moving(ka, "ctrl", [a, c])
    planned = {(topic, 0): [b, c]}
    p = plan(tmp_path / "move.json", planned)
    steady(ka, lambda: ka.alter("brokers", a, {LR: prior}) or True, "an operator's rate on the leader")
    try:
        child = _start(
            kc, tmp_path, children, "execute", "--reassignment-json-file", p, "--throttle", RATE, "--wait",
            "--poll-interval", "0.5", "--timeout", "120", "--bootstrap-controller", _controllers(kc),
        )  # fmt: skip
        child.wait_for_line("partitions done")
        try:
            kc.stop_broker(a)
            assert child.finish() == 0, child.stderr
            assert "register again" not in child.stderr
            assert replayed_record(record_messages(kc.bootstrap)) == EMPTY  # while a is still down
            assert a in kc.stopped
            kc.start_broker(a)
        finally:
            if a in kc.stopped:
                kc.start_broker(a)
        eventually(
            lambda: steady(ka, lambda: ka.throttles([a], []), "configs"),
            {f"broker {a}": {LR: prior}},
            "rates",
        )
    finally:  # on a failure, our record's leftovers first (they restore `prior`), then the operator's rate
        assert _verify(kc, tmp_path, p).returncode in (0, 4)
        steady(ka, lambda: ka.alter("brokers", a, {LR: None}) or True, "no operator's rate on the leader")
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)


def test_7b_the_node_still_down_at_the_timeout(
    kc: ExtraCluster, ka: Admin, tmp_path: Path, children: list[Child]
) -> None:
    """The same, the node not back within --timeout: exit 4 (not 0), its throttles recorded, and the next
    verify once it is back takes them off."""
    a, c = 1, 2
    b = next(n for n in kc.broker_ids if n not in (a, c))
    topic, values = _moving(ka, "still", [a, c])
    planned = {(topic, 0): [b, c]}
    p = plan(tmp_path / "move.json", planned)
    child = _start(
        kc, tmp_path, children, "execute", "--reassignment-json-file", p, "--throttle", RATE, "--wait",
        "--poll-interval", "0.5", "--timeout", "60",
    )  # fmt: skip
    child.wait_for_line("partitions done")
    try:
        kc.stop_broker(a)
        assert child.finish() == 4, child.stderr
        assert f"Waiting for broker {a} to register again" in child.stderr
        assert f"Exit 4: the throttles this tool set on broker {a} are still set and recorded" in child.stderr
        assert str(a) in replayed_record(record_messages(kc.bootstrap))["brokers"]
        v = _verify(kc, tmp_path, p)  # while it is still down: not done either
        assert v.returncode == 4, v.stdout + v.stderr
        assert f"Throttles this tool set on broker {a} stay until it is registered again" in v.stderr
        kc.start_broker(a)
    finally:
        if a in kc.stopped:
            kc.start_broker(a)
    v = _verify(kc, tmp_path, p)
    assert v.returncode == 0, v.stdout + v.stderr
    assert_clean(ka, kc, planned, {topic: values}, OPERATOR)
