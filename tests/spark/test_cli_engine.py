"""End to end: `kafka-reassign generate --snapshot F --engine spark` prints what `--engine local` prints."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from reassign_cli.core import snapshot
from reassign_cli.core.model import ClusterState, Topic
from reassign_cli.planning import plan
from tests.helpers import run_cli
from tests.spark.data import RACKED, random_specs

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def snapshot_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 300-topic snapshot with racks (current placement from another seed) and a topics file for all."""
    specs = random_specs(random.Random(21), 300, 3)
    current = plan.assign_topics(specs, RACKED, 999)
    state = ClusterState(brokers=RACKED, topics={t: Topic(t, parts) for t, parts in current.items()})
    d = tmp_path_factory.mktemp("cli")
    snap, topics = d / "snapshot.json", d / "topics.json"
    snap.write_bytes(snapshot.dumps(state))
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": s.name} for s in specs]}))
    return snap, topics


def test_generate_spark_prints_what_local_prints(snapshot_files: tuple[Path, Path], tmp_path: Path) -> None:
    snap, topics = snapshot_files
    args = ["generate", "--snapshot", str(snap), "--topics-to-move-json-file", str(topics), "--seed", "5"]
    local = run_cli(*args, "--engine", "local")
    scratch = tmp_path / "tmp"  # the run's TMPDIR: everything Spark and the engine create goes here
    scratch.mkdir()
    spark = run_cli(*args, "--engine", "spark", "--spark-master", "local[2]", env={"TMPDIR": str(scratch)})
    assert local.returncode == 0, local.stderr
    assert spark.returncode == 0, spark.stderr
    assert "Proposed partition reassignment configuration" in local.stdout
    assert spark.stdout == local.stdout
    assert spark.stderr == local.stderr  # nothing from Spark or the JVM without -v
    assert os.listdir(scratch) == []  # temp dirs (log4j, JVM log, zip, scratch, gateway) all removed


def test_generate_spark_output_dir_matches_local(
    spark_sc: Any, snapshot_files: tuple[Path, Path], tmp_path: Path
) -> None:
    """--output-dir (the executors write part files, the driver streams them into proposed.json). Run
    in-process through Click so that it reuses the session's SparkContext instead of starting a JVM."""
    from click.testing import CliRunner

    from reassign_cli.cli import cli

    snap, topics = snapshot_files
    args = ["generate", "--snapshot", str(snap), "--topics-to-move-json-file", str(topics), "--seed", "8"]
    outputs = {}
    for engine, extra in (("local", []), ("spark", ["--spark-master", "local[2]"])):
        out = tmp_path / engine
        res = CliRunner().invoke(cli, [*args, "--engine", engine, *extra, "--output-dir", str(out)])
        assert res.exit_code == 0, res.output
        outputs[engine] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert sorted(outputs["spark"]) == ["current.json", "proposed.json"]
    assert outputs["spark"] == outputs["local"]


def test_generate_spark_counts_the_bytes_like_local(spark_sc: Any, tmp_path: Path) -> None:
    """With partition sizes in a snapshot document, the driver counts the bytes copied as the local
    engine does (--format json's stats). With a JSON-lines snapshot the executors read the file and report
    no sizes: a warning, and stats whose counts are the local engine's and whose bytes are null."""
    from click.testing import CliRunner

    from reassign_cli.cli import cli
    from reassign_cli.core import snapshot_lines
    from reassign_cli.ops.generate import SPARK_NO_SIZES

    specs = random_specs(random.Random(5), 40, 3)
    current = plan.assign_topics(specs, RACKED, 77)
    topics = {t: Topic(t, parts, sizes={p: 1000 * (p + 1) for p in parts}) for t, parts in current.items()}
    state = ClusterState(brokers=RACKED, topics=topics)
    doc, lines = tmp_path / "snap.json", tmp_path / "snap.jsonl"
    doc.write_bytes(snapshot.dumps(state))
    lines.write_bytes(b"".join(snapshot_lines.dump_lines(state)))
    args = ["generate", "--seed", "3", "--throttle", "1000", "--format", "json", "-q"]
    args += [a for s in specs for a in ("--topic", s.name)]
    runs = {}
    for engine, snap in (("local", doc), ("spark", doc), ("spark-lines", lines)):
        extra = ["--engine", "spark", "--spark-master", "local[2]"] if engine != "local" else []
        res = CliRunner().invoke(cli, [*args, "--snapshot", str(snap), *extra])
        assert res.exit_code == 0, res.output
        runs[engine] = res
    local, spark = json.loads(runs["local"].stdout), json.loads(runs["spark"].stdout)
    assert local["stats"]["bytes_copied"] > 0 and spark == local
    from_lines = json.loads(runs["spark-lines"].stdout)
    assert from_lines["proposed"] == local["proposed"]
    counts = ("partitions", "partitions_changed", "copies", "leader_changes")
    assert [from_lines["stats"][k] for k in counts] == [local["stats"][k] for k in counts]
    assert from_lines["stats"]["bytes_copied"] is None
    assert SPARK_NO_SIZES in runs["spark-lines"].stderr
