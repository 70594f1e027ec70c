"""`generate --engine spark --strategy balanced`: everything the CLI prints and writes equals `--engine
local --strategy balanced` on the same cluster, from a JSON-lines snapshot (the executors scan it, the
driver plans over the arrays they packed) and from the snapshot document (the driver reads it). Run
in-process through cli.main on the session's SparkContext (one JVM for the module)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from reassign_cli.core import snapshot, snapshot_lines
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.planning import plan
from reassign_cli.spark import engine as spark_engine
from tests.helpers import run_cli
from tests.spark.data import random_specs
from tests.spark.test_jsonl import invoke, tree

pytestmark = pytest.mark.spark

RACKS = {1: "r1", 2: "r2", 3: "r3", 4: "r1", 5: "r2", 6: "r3", 7: "r1", 8: "r2", 9: "r3"}


def state_of(kind: str) -> ClusterState:
    """About 200 topics placed by Kafka's assignment over brokers 1-6, plus: one topic mid-reassignment
    (RS = target + origin), one whose partition ids are not 0..P-1, one queued for deletion.
    added: brokers 7-9 registered and empty, with racks; norack: the same without racks;
    dead: brokers 1-8 registered, broker 9 not, yet holding replicas (it was placed on 1-9)."""
    racked = kind != "norack"
    placed = [Broker(b, RACKS[b] if racked else None) for b in range(1, 10 if kind == "dead" else 7)]
    specs = random_specs(random.Random(5), 200, 3, max_partitions=40)
    topics = {t: Topic(t, parts) for t, parts in plan.assign_topics(specs, placed, 99).items()}
    topics["moving"] = Topic("moving", {0: [1, 3, 5], 1: [3, 8]}, adding={0: [1]}, removing={0: [5]})
    topics["gappy"] = Topic("gappy", {0: [1, 3], 3: [5, 8], 7: [9 if kind == "dead" else 2, 4]})
    topics["going"] = Topic("going", {0: [1, 2]})
    registered = range(1, 9) if kind == "dead" else range(1, 10)
    brokers = [Broker(b, RACKS[b] if racked else None) for b in registered]
    return ClusterState(brokers=brokers, topics=topics, deleting=frozenset({"going"}))


@pytest.fixture(scope="module")
def snaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    out = {}
    for kind in ("added", "norack", "dead"):
        state = state_of(kind)
        d = tmp_path_factory.mktemp(kind)
        doc, lines, every, half = d / "snap.json", d / "snap.jsonl", d / "all.json", d / "half.json"
        doc.write_bytes(snapshot.dumps(state))
        lines.write_bytes(b"".join(snapshot_lines.dump_lines(state)))
        names = sorted(t for t in state.topics if t != "going")
        every.write_bytes(orjson.dumps({"version": 1, "topics": [{"topic": t} for t in names]}))
        half.write_bytes(orjson.dumps({"version": 1, "topics": [{"topic": t} for t in names[::2]]}))
        out[kind] = {"doc": doc, "lines": lines, "all": every, "half": half}
    return out


@pytest.fixture
def many_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Splits of 4 KiB (the files are ~100 KiB): the unselected topics are counted in many splits."""
    monkeypatch.setattr(spark_engine, "SPLIT_BYTES", 4096)


SPARK = ("--engine", "spark", "--spark-master", "local[2]")


def three(files: dict[str, Path], args: list[str], out: Path | None = None) -> list[Any]:
    """The local engine on the document, then Spark on the JSON lines and on the document."""
    runs = []
    for name, path, engine in (("local", "doc", ()), ("lines", "lines", SPARK), ("doc", "doc", SPARK)):
        where = ["--output-dir", str(out / name)] if out else []
        runs.append(invoke("generate", "--snapshot", str(files[path]), "--strategy", "balanced", *args,
                           *engine, *where))  # fmt: skip
    return runs


def assert_same(runs: list[Any], out: Path | None = None) -> None:
    local, *spark = runs
    assert local.exit_code == 0, local.stderr
    for name, run in zip(("lines", "doc"), spark, strict=True):
        assert run.exit_code == 0, run.stderr
        stdout = run.stdout.replace(str(out / name), str(out / "local")) if out else run.stdout
        assert (stdout, run.stderr) == (local.stdout, local.stderr)
        if out:
            assert sorted(tree(out / name)) == ["current.json", "proposed.json"]  # no part files left
            assert tree(out / name) == tree(out / "local")


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("output", ["stdout", "dir"])
def test_adding_brokers_same_bytes(
    spark_sc: Any, snaps: dict[str, dict[str, Path]], tmp_path: Path, many_splits: None, fmt: str, output: str
) -> None:
    files = snaps["added"]
    args = ["--topics-to-move-json-file", str(files["all"]), "--seed", "41", "--format", fmt]
    out = tmp_path if output == "dir" else None
    runs = three(files, args, out)
    assert_same(runs, out)
    local = runs[0]
    if fmt == "json" and output == "stdout":
        stats = orjson.loads(local.stdout)["stats"]
        assert stats["replicas_max_min_after"] <= 1 < stats["replicas_max_min_before"]  # 7-9 were empty
        assert stats["copies"] >= stats["lower_bound"] > 0
    if fmt == "text" and output == "stdout":
        assert "copies" in local.stderr  # the balanced summary, the same from every engine


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("added", ["--broker-list", "1,2,3,4,5,7,8,9"]),  # drain broker 6
        ("added", ["--replication-factor", "2"]),
        ("added", ["--replication-factor", "4", "--broker-list", "1,2,3,4,5,6,7,8,9,77"]),  # 77: a warning
        ("added", ["--half"]),  # every other topic: the rest counted by the executors
        ("added", ["--topic", "moving", "--topic", "gappy"]),
        ("added", ["--disable-rack-aware"]),
        ("norack", []),
        ("norack", ["--half", "--broker-list", "2,3,4,5,6,7,8,9"]),
        ("dead", []),
        ("dead", ["--half"]),
    ],
    ids=["drain", "rf-down", "rf-up-unknown-broker", "subset", "two-topics", "rack-unaware", "no-racks",
         "no-racks-subset-drain", "dead-broker", "dead-broker-subset"],
)  # fmt: skip
def test_cases_same_bytes(
    spark_sc: Any, snaps: dict[str, dict[str, Path]], many_splits: None, kind: str, options: list[str]
) -> None:
    files = snaps[kind]
    if "--topic" not in options:
        which = "half" if "--half" in options else "all"
        options = ["--topics-to-move-json-file", str(files[which]), *(o for o in options if o != "--half")]
    runs = three(files, [*options, "--seed", "8", "--format", "json"])
    assert_same(runs)
    if kind == "dead":  # every replica on the dead broker 9 moves
        proposed = orjson.loads(runs[0].stdout)["proposed"]["partitions"]
        assert proposed and all(9 not in e["replicas"] for e in proposed)


def test_streamed_to_the_driver_when_executors_are_elsewhere(
    spark_sc: Any, snaps: dict[str, dict[str, Path]], monkeypatch: pytest.MonkeyPatch, many_splits: None
) -> None:
    """Executors on other hosts cannot share our temporary directory: both documents' slices come
    through Spark (toLocalIterator), from either input."""
    monkeypatch.setattr(spark_engine.Engine, "executors_here", property(lambda self: False))
    files = snaps["added"]
    assert_same(three(files, ["--topics-to-move-json-file", str(files["half"]), "--seed", "2"]))


def test_errors_are_the_local_engines(
    spark_sc: Any, snaps: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    files = snaps["added"]
    for args, message in (
        (["--topic", "moving", "--replication-factor", "10"], "Replication factor: 10 larger than available"),
        (["--topic", "going"], "Topic queued for deletion: going"),
        (["--topic", "nope"], "Topic nope not found."),
    ):
        local, *spark = three(files, [*args, "--seed", "1"], tmp_path)
        assert local.exit_code == 3 and message in local.stderr, local.stderr
        for run in spark:
            assert (run.exit_code, run.stderr, run.stdout) == (local.exit_code, local.stderr, "")
        assert not tmp_path.joinpath("lines").exists() and not tmp_path.joinpath("doc").exists()


def test_cli_subprocess_same_stdout_and_stderr(snaps: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """`kafka-reassign generate --strategy balanced --engine spark` in a fresh process (no refusal any
    more): the same stdout and stderr as the local engine, and its private TMPDIR left empty."""
    files = snaps["dead"]
    args = ["generate", "--snapshot", str(files["lines"]), "--topics-to-move-json-file", str(files["all"]),
            "--strategy", "balanced", "--seed", "4"]  # fmt: skip
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    local = run_cli(*args)
    spark = run_cli(*args, *SPARK, env={"TMPDIR": str(scratch)})
    assert local.returncode == 0, local.stderr
    assert (spark.returncode, spark.stdout, spark.stderr) == (0, local.stdout, local.stderr)
    assert list(scratch.iterdir()) == []


def test_bytes_copied_counted_like_the_local_engine(spark_sc: Any, tmp_path: Path) -> None:
    """With partition sizes in a snapshot document, balanced on Spark reports the bytes copied and the
    time at --throttle as the local engine does (text summary and --format json). From JSON lines the
    executors report no sizes: the warning, and only the balancer's figures."""
    from reassign_cli.ops.generate import SPARK_NO_SIZES

    state = state_of("added")
    for t in state.topics.values():
        t.sizes = {p: 1000 * (p + 1) for p in t.replicas}
    doc, lines = tmp_path / "snap.json", tmp_path / "snap.jsonl"
    doc.write_bytes(snapshot.dumps(state))
    lines.write_bytes(b"".join(snapshot_lines.dump_lines(state)))
    args = [
        "--topic",
        "moving",
        "--topic",
        "gappy",
        *(a for t in sorted(state.topics)[:30] for a in ("--topic", t)),
    ]
    args += ["--strategy", "balanced", "--seed", "3", "--throttle", "1000"]
    for fmt in ("text", "json"):
        local = invoke("generate", "--snapshot", str(doc), *args, "--format", fmt)
        spark = invoke("generate", "--snapshot", str(doc), *args, "--format", fmt, *SPARK)
        assert local.exit_code == 0, local.stderr
        assert (spark.exit_code, spark.stdout, spark.stderr) == (0, local.stdout, local.stderr)
    stats = orjson.loads(local.stdout)["stats"]
    assert stats["bytes_copied"] > 0 and "copies" in stats
    from_lines = invoke("generate", "--snapshot", str(lines), *args, "--format", "json", *SPARK)
    assert from_lines.exit_code == 0, from_lines.stderr
    doc_out = orjson.loads(from_lines.stdout)
    assert doc_out["proposed"] == orjson.loads(local.stdout)["proposed"]
    # the same keys as every generate's stats; the bytes unknown (null) where the executors read the sizes
    assert doc_out["stats"]["bytes_copied"] is None and doc_out["stats"]["copies"] == stats["copies"]
    assert list(doc_out["stats"])[:5] == [
        "partitions",
        "partitions_changed",
        "copies",
        "leader_changes",
        "bytes_copied",
    ]
    assert SPARK_NO_SIZES in from_lines.stderr


@pytest.fixture(scope="module")
def sized_snaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The `added` cluster with lognormal partition sizes (as `snapshot --bootstrap-server` records)."""
    state = state_of("added")
    rnd = random.Random(11)
    for t in state.topics.values():
        t.sizes = {p: int(rnd.lognormvariate(18, 1.5)) for p in t.replicas}
    return _snapshots(state, tmp_path_factory.mktemp("sized"))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_balance_bytes_same_bytes(spark_sc: Any, sized_snaps: dict[str, Path], fmt: str) -> None:
    """--balance bytes: the driver plans with the local code (from the JSON lines too: the executors
    count no bytes), so every engine prints the same plan and the same figures."""
    args = [
        "--topics-to-move-json-file",
        str(sized_snaps["all"]),
        "--seed",
        "4",
        "--balance",
        "bytes",
        "--format",
        fmt,
    ]
    runs = three(sized_snaps, args)
    assert_same(runs)
    if fmt == "json":
        stats = orjson.loads(runs[0].stdout)["stats"]
        snap = orjson.loads(sized_snaps["doc"].read_bytes())
        largest = max(p["size"] for t in snap["topics"] for p in t["partitions"])
        slack = max(0.05, largest / stats["bytes_mean"]) + 1e-4  # point 2 (stats are rounded to 1e-4)
        assert stats["bytes_max_dev_after"] <= slack < stats["bytes_max_dev_before"]  # 7-9 were empty
        assert stats["bytes_copied"] >= stats["bytes_lower_bound"] > 0


@pytest.fixture(scope="module")
def capacity_snaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sized `added` cluster with every broker's disk capacity: sizes 1x to 4x, some data besides."""
    from reassign_cli.core.model import Capacity

    state = state_of("added")
    rnd = random.Random(11)
    for t in state.topics.values():
        t.sizes = {p: int(rnd.lognormvariate(18, 1.5)) for p in t.replicas}
    held = sum(s * len(t.replicas[p]) for t in state.topics.values() for p, s in t.sizes.items())
    state.capacities = {
        b.id: Capacity(held * (1 + b.id % 4), held * (1 + b.id % 4) - held // 10) for b in state.brokers
    }
    return _snapshots(state, tmp_path_factory.mktemp("capacity"))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_balance_utilization_same_bytes(spark_sc: Any, capacity_snaps: dict[str, Path], fmt: str) -> None:
    """With capacities (issue 18, point 8): the same plan and figures by utilization on every engine."""
    args = ["--topics-to-move-json-file", str(capacity_snaps["all"]), "--seed", "4", "--balance", "bytes"]
    runs = three(capacity_snaps, [*args, "--format", fmt])
    assert_same(runs)
    if fmt == "json":
        assert orjson.loads(runs[0].stdout)["stats"]["bytes_balanced_by"] == "utilization"


def test_balance_utilization_refusal_same(spark_sc: Any, capacity_snaps: dict[str, Path]) -> None:
    """Broker 6 drained at --max-disk-utilization 0.01: every volume has a tenth of all the bytes in use
    besides and at most 4x them in capacity, so no broker has room and the drained replicas must go
    somewhere: exit 2 and the same line on every engine, nothing on stdout."""
    args = ["--topics-to-move-json-file", str(capacity_snaps["all"]), "--seed", "4", "--balance", "bytes",
            "--broker-list", "1,2,3,4,5,7,8,9", "--max-disk-utilization", "0.01"]  # fmt: skip
    runs = three(capacity_snaps, args)
    assert all(r.exit_code == 2 and r.stdout == "" for r in runs), [r.stderr for r in runs]
    assert "--max-disk-utilization 0.01: broker" in runs[0].stderr
    assert runs[1].stderr == runs[2].stderr == runs[0].stderr


def _snapshots(state: Any, d: Path) -> dict[str, Path]:
    """The state as a snapshot document, as JSON lines, and a topics file naming every topic but `going`."""
    doc, lines, every = d / "snap.json", d / "snap.jsonl", d / "all.json"
    doc.write_bytes(snapshot.dumps(state))
    lines.write_bytes(b"".join(snapshot_lines.dump_lines(state)))
    names = sorted(t for t in state.topics if t != "going")
    every.write_bytes(orjson.dumps({"version": 1, "topics": [{"topic": t} for t in names]}))
    return {"doc": doc, "lines": lines, "all": every}


@pytest.fixture(scope="module")
def jbod_snaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sized `added` cluster on JBOD brokers (issue 27): three log dirs each, of 1x, 2x and 3x a size,
    every replica in one of the first two (the third empty; broker 3's cordoned), so the plan is made disk
    by disk: log dirs for the replicas placed, and moves within brokers."""
    from reassign_cli.core.model import Capacity, LogDir

    state = state_of("added")
    rnd = random.Random(11)
    for t in state.topics.values():
        t.sizes = {p: int(rnd.lognormvariate(18, 1.5)) for p in t.replicas}
    held: dict[tuple[int, int], int] = {}
    for t in state.topics.values():
        where = {}
        for p, reps in t.replicas.items():
            where[p] = [rnd.choice([0, 0, 1]) for _ in reps]
            for b, i in zip(reps, where[p], strict=True):
                held[(b, i)] = held.get((b, i), 0) + t.sizes[p]
        t.dirs = where  # type: ignore[assignment]
    unit = sum(held.values())
    state.disks, state.capacities = {}, {}
    for b in state.brokers:
        dirs = []
        for i in range(3):
            total, h = unit * (i + 1), held.get((b.id, i), 0)
            dirs.append(LogDir(f"/data{i}", False, None, h, 0, total, total - h, b.id == 3 and i == 2))
        state.disks[b.id] = tuple(dirs)
        state.capacities[b.id] = Capacity(6 * unit, sum(d.usable or 0 for d in dirs), False)
    return _snapshots(state, tmp_path_factory.mktemp("jbod"))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_balance_disks_same_bytes(
    spark_sc: Any, jbod_snaps: dict[str, Path], fmt: str, tmp_path: Path
) -> None:
    """Disk by disk (issue 27, item 4): the log dirs are chosen on the driver after the broker-level plan,
    and the proposed document with them is formatted there: the same plan bytes, figures and files on
    every engine."""
    args = ["--topics-to-move-json-file", str(jbod_snaps["all"]), "--seed", "4", "--balance", "bytes"]
    runs = three(jbod_snaps, [*args, "--format", fmt])
    assert_same(runs)
    assert_same(three(jbod_snaps, [*args, "--format", fmt], tmp_path), tmp_path)
    if fmt == "json":
        doc = orjson.loads(runs[0].stdout)
        assert doc["stats"]["bytes_moved_within_brokers"] > 0
        entries = doc["proposed"]["partitions"]
        assert any("any" not in e["log_dirs"] for e in entries)
        pairs = {(b, d) for e in entries for b, d in zip(e["replicas"], e["log_dirs"], strict=True)}
        assert (3, "/data2") not in pairs and any(d == "/data2" for _, d in pairs)  # cordoned on broker 3
