"""execute with a DirPacer (ops.log_dirs.LogDirPacer: --max-moves-per-disk), against the in-memory fake backend
(tests/fakes.py) and a fake mover: which log-dir moves are asked for before the trigger (a replica arriving on
a new broker) and which are held back and started one per disk afterwards (replicas that stay on their
broker), with the log-dir rate written before the first of those. Worked out by hand; the real JBOD cluster
tests are tests/integration/test_logdir_pacing.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reassign_cli.errors import ExitCode
from reassign_cli.ops.execute import execute
from reassign_cli.ops.log_dirs import LogDirPacer
from reassign_cli.ops.request import ExecuteRequest
from reassign_cli.render import Output
from reassign_cli.render.progress import ExecuteReport
from tests.fakes import FakeBackend, FakeCluster, make_state

LDR = "replica.alter.log.dirs.io.max.bytes.per.second"
# t-0 stays on [1,2], broker 1's replica to /d1 (intra-broker); t-1 [2,3] -> [2,1], broker 1's new replica
# into /d1 (placed on arrival); t-2 stays on [1], to /d1 (intra-broker). Broker 1's replicas are in /d0.
PLAN = (
    b'{"version":1,"partitions":['
    b'{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/d1","any"]},'
    b'{"topic":"t","partition":1,"replicas":[2,1],"log_dirs":["any","/d1"]},'
    b'{"topic":"t","partition":2,"replicas":[1],"log_dirs":["/d1"]}]}'
)


class Disks:
    """A LogDirMoves: every replica of broker 1 starts in /d0 (t-1's arrives where it was asked to go);
    a move started keeps a future copy for two DescribeLogDirs answers, then is in its target."""

    def __init__(self, c: FakeCluster) -> None:
        self.c = c
        self.where: dict[tuple[str, int, int], list[Any]] = {}  # key -> [current, future, answers left]
        self.unanswered: list[int] = []

    def attempt(self, moves: Any) -> Any:
        self.c.log.append(("alter_replica_log_dirs", tuple(sorted(moves))))
        for key, target in moves.items():
            if key == ("t", 1, 1):
                self.where[key] = [target, None, 0]  # placed on arrival
            else:
                self.where[key] = ["/d0", target, 2]
        return sorted(moves), {}

    def describe(self, moves: Any) -> dict[tuple[str, int, int], tuple[str | None, str | None]]:
        out = {}
        for key in moves:
            cur, fut, left = self.where.setdefault(key, ["/d0", None, 0])
            if fut is not None and left <= 0:
                self.where[key] = [fut, None, 0]
                cur, fut = fut, None
            elif fut is not None:
                self.where[key][2] = left - 1
            out[key] = (cur, fut)
        return out

    def close(self) -> None:
        pass


def test_arrivals_before_the_trigger_intra_moves_after_one_per_disk(tmp_path: Path) -> None:
    c = FakeCluster(make_state({"t": {0: [1, 2], 1: [2, 3], 2: [1]}}))
    mover = Disks(c)
    req = ExecuteRequest(
        "plan.json",
        PLAN,
        rollback_file=str(tmp_path / "rb.json"),
        log_dir_throttle=1000,
        wait=True,
        poll_interval=0.05,
        bootstrap_server="b:9092",
    )
    pacer = LogDirPacer(cap=1)
    report = ExecuteReport(Output(color=False))
    assert execute(FakeBackend(c), req, report, log_dirs=mover, dir_pacer=pacer) == ExitCode.OK
    starts = [op for op in c.log if op[0] == "alter_replica_log_dirs"]
    # the arrival before the trigger (retried after it until started: twice), then the two intra-broker
    # moves of broker 1 (/d0 -> /d1 both), one at a time, in plan order
    assert starts == [
        ("alter_replica_log_dirs", (("t", 1, 1),)),
        ("alter_replica_log_dirs", (("t", 1, 1),)),
        ("alter_replica_log_dirs", (("t", 0, 1),)),
        ("alter_replica_log_dirs", (("t", 2, 1),)),
    ]
    assert pacer.peak_per_disk == 1
    first_intra = c.log.index(("alter_replica_log_dirs", (("t", 0, 1),)))
    rate = [
        i
        for i, op in enumerate(c.log)
        if op[0] == "write_configs" and ("brokers", "1", {LDR: "1000"}) in op[1]
    ]
    assert rate and rate[-1] < first_intra  # the log-dir rate is on broker 1 before its first intra move
    assert c.configs.get(("brokers", "1"), {}) == {}  # and off at the end
    assert [m["status"] for m in report.doc["replica_moves"]] == ["complete"] * 3
    assert report.doc["log_dir_moves"]["moves"] == 2


def test_dry_run_lists_the_held_moves_and_starts_none(tmp_path: Path, capsys: Any) -> None:
    c = FakeCluster(make_state({"t": {0: [1, 2], 1: [2, 3], 2: [1]}}))
    mover = Disks(c)
    req = ExecuteRequest(
        "plan.json", PLAN, rollback_file=str(tmp_path / "rb.json"), log_dir_throttle=1000, dry_run=True,
        bootstrap_server="b:9092",
    )  # fmt: skip
    report = ExecuteReport(Output(color=False))
    assert execute(FakeBackend(c), req, report, log_dirs=mover, dir_pacer=LogDirPacer(2, True)) == ExitCode.OK
    assert not [op for op in c.log if op[0] == "alter_replica_log_dirs"]
    assert report.doc["run_plan"]["log_dir_moves"] == {
        "max_moves_per_disk": 2,
        "one_broker_at_a_time": True,
        "queued": [
            {"topic": "t", "partition": 0, "broker": 1, "log_dir": "/d1"},
            {"topic": "t", "partition": 2, "broker": 1, "log_dir": "/d1"},
        ],
    }
    out = capsys.readouterr().out
    assert (
        "Dry run: 2 replica moves between log dirs of one broker held back, started after the partition "
        "moves, at most 2 per disk, one broker at a time (a replica already in its dir is skipped then): "
        "t-0 on broker 1 (to /d1), t-2 on broker 1 (to /d1)"
    ) in out
