"""The Spark engine on a standalone cluster whose workers do NOT have reassign_cli installed.

The executors' Python is a wrapper around the venv interpreter run with -S, which sees numpy, orjson and
pyspark (site-packages on PYTHONPATH, so no .pth file runs) but not our editable install: the only way
for a task to import reassign_cli is the zip the engine ships with the job.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from reassign_cli.core import model
from reassign_cli.planning import plan
from tests.spark.data import RACKED, UNRACKED, random_specs

pytestmark = [pytest.mark.spark, pytest.mark.spark_cluster]

HERE = Path(__file__).resolve().parent


def _site_packages() -> str:
    import numpy

    return str(Path(numpy.__file__).resolve().parents[1])


@pytest.fixture
def bare_worker_python(tmp_path: Path) -> str:
    wrapper = tmp_path / "worker-python"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{_site_packages()}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" -S "$@"\n'
    )
    wrapper.chmod(0o755)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    ok = subprocess.run(
        [str(wrapper), "-c", "import numpy, orjson, pyspark"], cwd=elsewhere, capture_output=True
    )
    assert ok.returncode == 0, ok.stderr
    missing = subprocess.run([str(wrapper), "-c", "import reassign_cli"], cwd=elsewhere, capture_output=True)
    assert b"No module named 'reassign_cli'" in missing.stderr  # really not installed for the workers
    return str(wrapper)


def test_parity_on_standalone_cluster_with_shipped_package(
    spark_master: str, bare_worker_python: str, tmp_path: Path
) -> None:
    cases = []
    for seed, brokers in ((123, RACKED), (77, UNRACKED)):
        specs = random_specs(random.Random(seed), 400, 3, max_partitions=100)
        cases.append((seed, specs, brokers))
    inp = tmp_path / "input.json"
    inp.write_text(json.dumps({"cases": [
        {"seed": seed, "specs": [[s.name, s.n_partitions, s.replication_factor] for s in specs],
         "brokers": [[b.id, b.rack] for b in brokers]}
        for seed, specs, brokers in cases
    ]}))  # fmt: skip
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = dict(os.environ, PYSPARK_PYTHON=bare_worker_python)
    res = subprocess.run(
        [sys.executable, str(HERE / "cluster_probe.py"), spark_master, str(inp), str(out_dir)],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stderr == ""  # Spark's logs stay quiet without -v
    report = json.loads((out_dir / "report.json").read_text())
    assert report["master"] == spark_master
    assert report["python_exec"] == bare_worker_python  # a user-set PYSPARK_PYTHON is kept
    for ex in report["executors"]:
        assert ex["no_site"] == 1  # ran under the wrapper
        assert ex["version"] == list(sys.version_info[:2])
        assert ".zip" in ex["plan_file"] and ".zip" in ex["engine_file"], ex
        assert not ex["cwd"].startswith(str(tmp_path))  # executors run in the worker's work dir
    for i, (seed, specs, brokers) in enumerate(cases):
        ordered = sorted(specs, key=lambda s: s.name)
        expected = model.format_reassignment_json(plan.assign_topics(ordered, brokers, seed))
        assert report["texts"][i] == expected
        assert (out_dir / f"proposed-{i}.json").read_text() == expected
    assert sorted(os.listdir(out_dir)) == ["proposed-0.json", "proposed-1.json", "report.json"]


def test_jsonl_snapshot_read_by_the_executors_of_a_cluster(
    spark_master: str, bare_worker_python: str, tmp_path: Path
) -> None:
    """The whole CLI on the standalone cluster: the executors (without reassign_cli installed) read the
    JSON-lines snapshot and write both documents; stdout, stderr and files equal the local engine's."""
    from reassign_cli.core import snapshot, snapshot_lines
    from reassign_cli.core.model import ClusterState, Topic
    from tests.helpers import run_cli

    specs = random_specs(random.Random(8), 400, 3, max_partitions=100)
    state = ClusterState(RACKED, {t: Topic(t, p) for t, p in plan.assign_topics(specs, RACKED, 1).items()})
    doc, lines, topics = tmp_path / "s.json", tmp_path / "s.jsonl", tmp_path / "t.json"
    doc.write_bytes(snapshot.dumps(state))
    lines.write_bytes(b"".join(snapshot_lines.dump_lines(state)))
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": s.name} for s in specs[:300]]}))
    common = ["--topics-to-move-json-file", str(topics), "--seed", "6"]
    spark = ["--engine", "spark", "--spark-master", spark_master]
    env = {"PYSPARK_PYTHON": bare_worker_python}
    for out in ([], ["--output-dir"]):
        local = run_cli(
            "generate", "--snapshot", str(doc), *common, *out, *([str(tmp_path / "local")] if out else [])
        )
        remote = run_cli("generate", "--snapshot", str(lines), *common, *spark, *out,
                         *([str(tmp_path / "spark")] if out else []), env=env)  # fmt: skip
        assert local.returncode == 0, local.stderr
        assert remote.returncode == 0, remote.stderr[-3000:]
        assert remote.stderr == local.stderr
        assert remote.stdout.replace(str(tmp_path / "spark"), str(tmp_path / "local")) == local.stdout
    for name in ("current.json", "proposed.json"):
        assert (tmp_path / "spark" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert sorted(os.listdir(tmp_path / "spark")) == ["current.json", "proposed.json"]


def test_balanced_on_a_cluster(spark_master: str, bare_worker_python: str, tmp_path: Path) -> None:
    """--strategy balanced on the standalone cluster (executors without reassign_cli installed): from a
    JSON-lines snapshot of a cluster with brokers added and a subset of topics (the executors count the
    rest), and from the document; stdout, stderr and the --output-dir files equal the local engine's."""
    from reassign_cli.core import snapshot, snapshot_lines
    from reassign_cli.core.model import Broker, ClusterState, Topic
    from tests.helpers import run_cli

    specs = random_specs(random.Random(12), 300, 3, max_partitions=60)
    placed = [b for b in RACKED if b.id != 12]
    topics = {t: Topic(t, p) for t, p in plan.assign_topics(specs, placed, 3).items()}
    state = ClusterState([*RACKED, Broker(14, "r2"), Broker(15, "r3")], topics)  # 12, 14, 15: empty
    doc, lines, chosen = tmp_path / "s.json", tmp_path / "s.jsonl", tmp_path / "t.json"
    doc.write_bytes(snapshot.dumps(state))
    lines.write_bytes(b"".join(snapshot_lines.dump_lines(state)))
    chosen.write_text(json.dumps({"version": 1, "topics": [{"topic": s.name} for s in specs[:200]]}))
    common = ["--topics-to-move-json-file", str(chosen), "--seed", "6", "--strategy", "balanced"]
    spark = ["--engine", "spark", "--spark-master", spark_master]
    env = {"PYSPARK_PYTHON": bare_worker_python}
    local = run_cli("generate", "--snapshot", str(doc), *common, "--output-dir", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    for name, path in (("lines", lines), ("doc", doc)):
        remote = run_cli("generate", "--snapshot", str(path), *common, *spark, "--output-dir",
                         str(tmp_path / name), env=env)  # fmt: skip
        assert remote.returncode == 0, remote.stderr[-3000:]
        assert remote.stderr == local.stderr
        assert remote.stdout.replace(str(tmp_path / name), str(tmp_path / "local")) == local.stdout
        for file in ("current.json", "proposed.json"):
            assert (tmp_path / name / file).read_bytes() == (tmp_path / "local" / file).read_bytes()
        assert sorted(os.listdir(tmp_path / name)) == ["current.json", "proposed.json"]
    text = run_cli("generate", "--snapshot", str(lines), *common, *spark, env=env)
    assert (text.returncode, text.stderr) == (0, local.stderr)
    assert text.stdout == run_cli("generate", "--snapshot", str(doc), *common).stdout
