"""`generate --engine spark --snapshot F.jsonl`: the executors read the snapshot; everything the CLI prints
and writes equals `--engine local` on the same cluster's snapshot document. Run in-process through Click on
the session's SparkContext (one JVM for the module)."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from reassign_cli.cli import main
from reassign_cli.core import snapshot, snapshot_lines
from reassign_cli.core.model import Broker, ClusterState, Topic
from reassign_cli.ops import generate
from reassign_cli.planning import plan
from reassign_cli.spark import engine as spark_engine
from tests.helpers import run_cli
from tests.spark.data import RACKED, random_specs

pytestmark = pytest.mark.spark


def cluster_state() -> ClusterState:
    """350 topics with racks (placed by another seed), one mid-reassignment (RS = target + origin, so its
    RF is the target's), one whose partition ids are not 0..P-1, one queued for deletion."""
    specs = random_specs(random.Random(31), 350, 3)
    current = plan.assign_topics(specs, RACKED, 4242)
    topics = {t: Topic(t, parts) for t, parts in current.items()}
    topics["moving"] = Topic("moving", {0: [1, 3, 5], 1: [3, 8]}, adding={0: [1]}, removing={0: [5]})
    topics["gappy"] = Topic("gappy", {0: [1, 3], 3: [5, 8], 7: [9, 12]})
    topics["going"] = Topic("going", {0: [1]})
    return ClusterState(brokers=RACKED, topics=topics, deleting=frozenset({"going"}))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    state = cluster_state()
    d = tmp_path_factory.mktemp("jsonl")
    doc, lines, topics = d / "snap.json", d / "snap.jsonl", d / "topics.json"
    doc.write_bytes(snapshot.dumps(state))
    lines.write_bytes(b"".join(snapshot_lines.dump_lines(state)))
    names = [t for t in state.topics if t != "going"]
    topics.write_bytes(orjson.dumps({"version": 1, "topics": [{"topic": t} for t in names]}))
    return {"doc": doc, "lines": lines, "topics": topics}


@pytest.fixture
def many_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Splits of 2 KiB (the 350-topic file is ~150 KiB): lines straddle the split boundaries."""
    monkeypatch.setattr(spark_engine, "SPLIT_BYTES", 2048)


@dataclasses.dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def invoke(*args: str) -> Result:
    """`kafka-reassign ARGS` in this process, through cli.main (where errors become messages and exit
    codes), with stdout and stderr captured apart."""
    with CliRunner().isolation() as streams:
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code
    return Result(int(code or 0), streams[0].getvalue().decode(), streams[1].getvalue().decode())


def both(snap: dict[str, Path], args: list[str], out: Path | None = None) -> tuple[Any, Any]:
    """(local engine on the document, Spark on the JSON lines), each with its own --output-dir if `out`."""
    local = invoke(
        "generate",
        "--snapshot",
        str(snap["doc"]),
        *args,
        *(["--output-dir", str(out / "local")] if out else []),
    )
    spark = invoke(
        "generate", "--snapshot", str(snap["lines"]), *args, "--engine", "spark", "--spark-master", "local[2]",
        *(["--output-dir", str(out / "spark")] if out else []),
    )  # fmt: skip
    return local, spark


def tree(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())} if path.exists() else {}


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("output", ["stdout", "dir"])
def test_parity_with_the_local_engine(
    spark_sc: Any, files: dict[str, Path], tmp_path: Path, many_splits: None, fmt: str, output: str
) -> None:
    args = ["--topics-to-move-json-file", str(files["topics"]), "--seed", "77", "--format", fmt]
    local, spark = both(files, args, tmp_path if output == "dir" else None)
    assert local.exit_code == 0, local.stderr
    assert spark.exit_code == 0, spark.stderr
    assert spark.stdout.replace(str(tmp_path / "spark"), str(tmp_path / "local")) == local.stdout
    assert spark.stderr == local.stderr  # the summary table: the same statistics
    assert "Proposed plan over 7 brokers" in local.stderr or "Proposed plan by broker" in local.stderr
    if output == "dir":
        assert sorted(tree(tmp_path / "spark")) == ["current.json", "proposed.json"]  # no part files left
        assert tree(tmp_path / "spark") == tree(tmp_path / "local")
        assert b'"topic":"gappy","partition":7,"replicas":[9,12]' in tree(tmp_path / "spark")["current.json"]


def test_streamed_to_the_driver_when_executors_are_elsewhere(
    spark_sc: Any, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, many_splits: None
) -> None:
    """A master on other hosts cannot share our temporary directory: the slices come through Spark
    (toLocalIterator), for a JSON-lines snapshot and for a snapshot document alike."""
    monkeypatch.setattr(spark_engine.Engine, "executors_here", property(lambda self: False))
    args = ["--topics-to-move-json-file", str(files["topics"]), "--seed", "3"]
    local, spark = both(files, args)
    legacy = invoke(
        "generate", "--snapshot", str(files["doc"]), *args, "--engine", "spark", "--spark-master", "local[2]"
    )
    assert local.exit_code == spark.exit_code == legacy.exit_code == 0, spark.stderr + legacy.stderr
    assert spark.stdout == legacy.stdout == local.stdout
    assert spark.stderr == legacy.stderr == local.stderr


@pytest.mark.parametrize(
    "options",
    [
        ["--topic", "moving", "--topic", "gappy"],
        ["--broker-list", "1,3,5,12,77", "--replication-factor", "2"],  # 77: a warning
        ["--disable-rack-aware", "--replication-factor", "1"],
    ],
    ids=["two-topics", "brokers-rf", "no-racks"],
)
def test_topic_and_broker_selection(spark_sc: Any, files: dict[str, Path], options: list[str]) -> None:
    if "--topic" not in options:
        options = ["--topics-to-move-json-file", str(files["topics"]), *options]
    local, spark = both(files, [*options, "--seed", "9"])
    assert local.exit_code == 0, local.stderr
    assert (spark.exit_code, spark.stdout, spark.stderr) == (0, local.stdout, local.stderr)


def test_statistics_equal_the_local_engines(spark_sc: Any, files: dict[str, Path], tmp_path: Path) -> None:
    class Quiet:
        def warning(self, text: str) -> None:
            raise AssertionError(text)

        def detail(self, text: str) -> None:
            pass

        def seed_chosen(self, seed: int) -> None:
            raise AssertionError(seed)

    topics = ["moving", "gappy", *sorted(cluster_state().topics)[:40]]
    outcomes = {}
    for engine, path in (("local", files["doc"]), ("spark", files["lines"])):
        request = generate.Request(list(dict.fromkeys(topics)), seed=5, output_dir=str(tmp_path / engine), engine=engine,
                                   spark_master="local[2]")  # fmt: skip
        outcomes[engine] = generate.run(request, generate.Source(snapshot_file=str(path)), Quiet())
    local, spark = outcomes["local"], outcomes["spark"]
    assert spark.stats == local.stats and local.stats is not None
    # moving: 2 partitions, gappy: 3; the other 40 come from random_specs
    assert local.stats.partitions == 5 + sum(len(cluster_state().topics[t].replicas) for t in topics[2:42])
    assert (spark.seed, spark.brokers, spark.extra_stats) == (local.seed, local.brokers, None)


# ---------------------------------------------------------------------------------------------
# Errors: the same as the local engine's, and nothing written
# ---------------------------------------------------------------------------------------------

H = '{"format":"jsonl","version":1,"brokers":[{"id":1},{"id":2},{"id":3}],"deleting":["zdel"]}'


def topic_line(name: str, *replicas: list[int]) -> str:
    parts = ",".join(
        f'{{"partition":{p},"replicas":{orjson.dumps(r).decode()}}}' for p, r in enumerate(replicas)
    )
    return f'{{"topic":"{name}","partitions":[{parts}]}}'


def numbered(n: int) -> Iterator[str]:
    for i in range(n):
        yield topic_line(f"t{i:04d}", [1, 2], [2, 3])


def lines_file(tmp_path: Path, lines: list[str]) -> dict[str, Path]:
    """The same content as a JSON-lines file and, when it parses, as a document (for the local engine)."""
    data = ("\n".join(lines) + "\n").encode()
    paths = {"lines": tmp_path / "bad.jsonl", "doc": tmp_path / "bad.jsonl"}
    paths["lines"].write_bytes(data)
    try:
        doc = tmp_path / "bad.json"
        doc.write_bytes(snapshot.dumps(snapshot_lines.loads(data)))
        paths["doc"] = doc
    except Exception:
        pass  # the local engine reads the JSON-lines file itself
    return paths


MANY = list(numbered(200))  # ~14 KiB: with 2 KiB splits, line 150 is in a later split


@pytest.mark.parametrize(
    ("lines", "args", "message"),
    [
        ([H, *MANY[:150], "{bad", *MANY[150:]], ["--topic", "t0001"], "snapshot file: line 152: not valid JSON"),
        ([H, *MANY[:120], *MANY[121:140], MANY[120], *MANY[140:]], ["--topic", "t0001"],
         "snapshot file: line 141: topic t0120 comes after t0139"),
        ([H, *MANY, topic_line("zz", [1])], ["--topic", "t0001", "--topic", "nope", "--topic", "a"], "Topics not found: a,nope"),
        ([H, *MANY, topic_line("zdel", [1])], ["--topic", "zdel"], "Topic queued for deletion: zdel"),
        ([H, *MANY[:99], topic_line("t0099"), *MANY[100:]], ["--topic", "t0180", "--topic", "t0099"],
         "Topic t0099 has no partitions"),
        ([H, *MANY[:190], topic_line("t0190", [1], [1, 2]), *MANY[191:]], ["--topic", "t0190"],
         "Topic t0190 has partitions with different replication factors (1,2)"),
        ([H, *MANY], ["--topic", "t0001", "--topic", "t0199", "--replication-factor", "4"],
         "Replication factor: 4 larger than available brokers: 3."),
        ([H, *MANY, "[]"], ["--topic", "t0001", "--broker-list", "1,1"], "snapshot file: line 202: expected a JSON object"),
        ([H, *MANY], ["--topic", "t0001", "--broker-list", "1,1"], "Broker list contains duplicate entries: 1"),
        ([H.replace('{"id":3}', '{"id":3,"rack":"r"}'), *MANY], ["--topic", "t0001"], "Not all brokers have rack information"),
    ],
    ids=["bad-line", "order-across-splits", "missing", "deleting", "empty", "mixed-rf", "rf", "line-before-brokers",
         "duplicate-brokers", "mixed-racks"],
)  # fmt: skip
def test_errors_are_the_local_engines_and_nothing_is_written(
    spark_sc: Any, tmp_path: Path, many_splits: None, lines: list[str], args: list[str], message: str
) -> None:
    paths = lines_file(tmp_path, lines)
    for output in ("dir", "stdout"):
        out = tmp_path / output
        local, spark = both(paths, [*args, "--seed", "1"], out if output == "dir" else None)
        assert local.exit_code in (1, 3), local.stderr
        assert message in local.stderr
        assert (spark.exit_code, spark.stderr, spark.stdout) == (local.exit_code, local.stderr, "")
        assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == sorted({"bad.jsonl", paths["doc"].name})


def test_path_hadoop_cannot_take_is_read_by_the_driver(
    spark_sc: Any, files: dict[str, Path], tmp_path: Path
) -> None:
    odd = tmp_path / "a,b"
    odd.mkdir()
    (odd / "snap.jsonl").write_bytes(files["lines"].read_bytes())
    args = ["--topics-to-move-json-file", str(files["topics"]), "--seed", "2"]
    local = invoke("generate", "--snapshot", str(files["doc"]), *args)
    spark = invoke(
        "generate",
        "--snapshot",
        str(odd / "snap.jsonl"),
        *args,
        "--engine",
        "spark",
        "--spark-master",
        "local[2]",
    )
    assert spark.exit_code == 0, spark.stderr
    assert spark.stdout == local.stdout
    assert spark.stderr.startswith("Warning: The Spark executors cannot read a path with any of ',:' in it")
    assert spark.stderr.endswith(local.stderr)


def test_glob_characters_in_the_path_are_taken_literally(
    spark_sc: Any, files: dict[str, Path], tmp_path: Path
) -> None:
    odd = tmp_path / "x[1]{a} *?"
    odd.mkdir()
    (odd / "snap.jsonl").write_bytes(files["lines"].read_bytes())
    (tmp_path / "x1a  ").mkdir()  # what the unescaped glob would match instead
    args = ["--topic", "moving", "--seed", "2"]
    local = invoke("generate", "--snapshot", str(files["doc"]), *args)
    spark = invoke(
        "generate",
        "--snapshot",
        str(odd / "snap.jsonl"),
        *args,
        "--engine",
        "spark",
        "--spark-master",
        "local[2]",
    )
    assert (spark.exit_code, spark.stdout, spark.stderr) == (0, local.stdout, local.stderr)


def test_subprocess_leaves_its_tmpdir_empty(files: dict[str, Path], tmp_path: Path) -> None:
    """A whole run in a fresh driver: the temporary part files of the stdout mode are removed."""
    args = [
        "generate",
        "--snapshot",
        str(files["lines"]),
        "--topics-to-move-json-file",
        str(files["topics"]),
        "--seed",
        "4",
    ]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    local = run_cli(*args)
    spark = run_cli(*args, "--engine", "spark", "--spark-master", "local[2]", env={"TMPDIR": str(scratch)})
    assert local.returncode == 0, local.stderr
    assert (spark.returncode, spark.stdout, spark.stderr) == (0, local.stdout, local.stderr)
    assert os.listdir(scratch) == []


def test_broker_objects_are_what_select_brokers_gives() -> None:
    """The selection the driver broadcasts carries the brokers in plan.select_brokers' order, racks kept."""
    state = ClusterState(brokers=[Broker(3, "b"), Broker(1, "a")], topics={})
    brokers, _ = plan.select_brokers(state, None, True)
    assert tuple((b.id, b.rack) for b in brokers) == ((1, "a"), (3, "b"))
