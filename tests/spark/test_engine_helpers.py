"""spark_engine's plain-Python parts (batching, assembly, master parsing, prerequisites): no JVM needed."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from reassign_cli.core import model
from reassign_cli.errors import ExitCode, UsageError
from reassign_cli.planning import plan
from reassign_cli.spark import engine as spark_engine
from tests.spark.data import RACKED, UNRACKED, random_specs

REPO = Path(__file__).resolve().parents[2]


def _tuples(specs: list[plan.TopicSpec]) -> list[tuple[str, int, int]]:
    return sorted(((s.name, s.n_partitions, s.replication_factor) for s in specs), key=lambda t: t[0])


@pytest.mark.parametrize("n_batches", [1, 2, 3, 7, 50, 1000])
def test_split_batches_is_an_ordered_cover_without_empty_batches(n_batches: int) -> None:
    ordered = _tuples(random_specs(random.Random(n_batches), 200, 3))
    batches = spark_engine.split_batches(ordered, n_batches)
    assert [t for b in batches for t in b] == ordered
    assert all(batches)
    assert len(batches) <= min(n_batches, len(ordered))
    if n_batches <= 7:  # few batches: each reaches its share before the next closes
        assert len(batches) == n_batches


def test_split_batches_balances_partitions() -> None:
    ordered = [(f"t{i:04d}", 10, 3) for i in range(1000)]
    sizes = [sum(t[1] for t in b) for b in spark_engine.split_batches(ordered, 8)]
    assert len(sizes) == 8 and max(sizes) - min(sizes) <= 10


def test_split_batches_one_giant_topic_closes_its_batch() -> None:
    ordered = [("a", 1, 1), ("b", 1_000_000, 1), ("c", 1, 1), ("d", 1, 1)]
    batches = spark_engine.split_batches(ordered, 3)
    assert [[t[0] for t in b] for b in batches] == [["a", "b"], ["c"], ["d"]]


def test_batch_count() -> None:
    per = spark_engine.PARTITIONS_PER_BATCH
    assert spark_engine.batch_count(0, 0, 2) == 0
    assert spark_engine.batch_count(10, 3, 2) == 3  # never more batches than topics
    assert spark_engine.batch_count(1000, 500, 2) == 4  # two per core
    assert spark_engine.batch_count(10 * per + 1, 10**6, 2) == 11


@pytest.mark.parametrize("brokers", [RACKED, UNRACKED], ids=["racks", "no-racks"])
def test_slices_assembled_in_batch_order_equal_the_local_document(brokers: list[model.Broker]) -> None:
    specs = random_specs(random.Random(5), 120, 3)
    ordered = _tuples(specs)
    expected = model.format_reassignment_json(
        plan.assign_topics(sorted(specs, key=lambda s: s.name), brokers, 11)
    )
    slices = [spark_engine._plan_slice(brokers, 11, b) for b in spark_engine.split_batches(ordered, 9)]
    assert spark_engine.assemble_text(slices) == expected
    assert spark_engine.assemble_text([]) == model.format_reassignment_json({})


def test_assemble_file_streams_parts_in_index_order(tmp_path: Path) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-00000.json").write_text('{"a":1}')
    (parts / "part-00002.json").write_text('{"c":3},{"d":4}')
    out = tmp_path / "out.json"
    spark_engine.assemble_file(str(out), str(parts), [(2, 15), (1, 0), (0, 7)])
    assert out.read_text() == '{"version":1,"partitions":[{"a":1},{"c":3},{"d":4}]}'
    assert sorted(os.listdir(tmp_path)) == ["out.json", "parts"]  # no temp file left


def test_assemble_file_fails_when_the_driver_cannot_see_a_part(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    with pytest.raises(spark_engine.OperationalError, match="filesystem shared with the executors"):
        spark_engine.assemble_file(str(out), str(tmp_path), [(0, 10)])
    assert os.listdir(tmp_path) == []  # neither the output nor a partial file


@pytest.mark.parametrize(
    ("master", "loopback"),
    [
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local-cluster[2,1,1024]", True),
        ("spark://127.0.0.1:7077", True),
        ("spark://localhost:7077", True),
        ("spark://127.0.0.1:7077,127.0.0.2:7078", True),
        ("spark://[::1]:7077", True),
        ("spark://10.0.0.5:7077", False),
        ("spark://127.0.0.1:7077,spark-m2:7077", False),
        ("spark://master.example.com:7077", False),
        ("yarn", False),
        ("k8s://https://10.0.0.1:6443", False),
    ],
)
def test_is_loopback_master(master: str, loopback: bool) -> None:
    assert spark_engine.is_loopback_master(master) is loopback


def test_one_line_prefers_the_python_exception_inside_a_java_trace() -> None:
    text = textwrap.dedent("""\
        An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.
        : org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed
        org.apache.spark.api.python.PythonException: Traceback (most recent call last):
          File "/x/worker.py", line 1, in main
        ModuleNotFoundError: No module named 'orjson'
        \tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:1)
        Caused by: java.lang.RuntimeException: boom
        """)
    assert spark_engine._one_line(RuntimeError(text)) == "ModuleNotFoundError: No module named 'orjson'"
    assert spark_engine._one_line(RuntimeError("first line\nsecond")) == "first line"


def test_package_zip_holds_the_importable_package(tmp_path: Path) -> None:
    path = spark_engine.package_zip(str(tmp_path))
    names = zipfile.ZipFile(path).namelist()
    assert "reassign_cli/planning/plan.py" in names and "reassign_cli/core/model.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert spark_engine.package_zip(str(tmp_path)) == path  # content-addressed name
    # From the zip alone (isolated interpreter, no project on sys.path), the kernel imports and works.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import reassign_cli.planning.plan as p; "
        "assert p.__file__.startswith(sys.argv[1]), p.__file__; "
        "print(p.assign_topics([p.TopicSpec('t', 2, 1)], [(1, None), (2, None)], 0))"
    )
    res = subprocess.run([sys.executable, "-S", "-c", code, path], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": _site_packages()})  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("{'t': {0: [")


def _site_packages() -> str:
    import numpy

    return str(Path(numpy.__file__).resolve().parents[1])


def test_missing_pyspark_is_a_usage_error_naming_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['pyspark'] = None\n"  # `import pyspark` now raises ImportError
        "from reassign_cli.spark import engine as spark_engine\nfrom reassign_cli.planning import plan\nfrom reassign_cli.core import model\n"
        "from reassign_cli.errors import ReassignError\n"
        "try:\n"
        "    spark_engine.proposed_json([plan.TopicSpec('t', 1, 1)], [model.Broker(1)], 0)\n"
        "except ReassignError as e:\n"
        "    print(int(e.exit_code), e)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == (
        f"{int(ExitCode.USAGE)} --engine spark needs the spark extra: pip install 'reassign-cli[spark]'"
    )


@pytest.mark.spark  # needs pyspark importable (the Java check comes after it)
def test_missing_java_is_a_usage_error_before_any_jvm(tmp_path: Path) -> None:
    code = (
        "from reassign_cli.spark import engine as spark_engine\nfrom reassign_cli.planning import plan\nfrom reassign_cli.core import model\n"
        "from reassign_cli.errors import ReassignError\n"
        "try:\n"
        "    spark_engine.proposed_json([plan.TopicSpec('t', 1, 1)], [model.Broker(1)], 0, master='local[1]')\n"
        "except ReassignError as e:\n"
        "    print(int(e.exit_code), e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_GATEWAY_PORT")}
    env["PATH"] = str(tmp_path)  # no java here
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == (
        "2 --engine spark needs Java 17 or newer: no java on PATH and JAVA_HOME is not set"
    )


def test_java_home_without_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(UsageError, match=f"JAVA_HOME={tmp_path} has no bin/java"):
        spark_engine.java_executable()


def test_old_java_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "java"
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n")
    fake.chmod(0o755)
    with pytest.raises(UsageError, match=r"Java 17 or newer; .* is Java 11"):
        spark_engine.check_java_version(str(fake))
    fake.write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    with pytest.raises(UsageError, match="is Java 8"):
        spark_engine.check_java_version(str(fake))
    fake.write_text("#!/bin/sh\necho 'openjdk version \"21.0.2\" 2024-01-16' >&2\n")
    spark_engine.check_java_version(str(fake))  # accepted


def test_estimate_is_an_upper_bound() -> None:
    specs = random_specs(random.Random(9), 100, 3)
    text = model.format_reassignment_json(plan.assign_topics(specs, UNRACKED, 1))
    assert len(text) <= spark_engine.estimate_json_bytes(_tuples(specs)) <= 3 * len(text)


def test_pyspark_is_imported_only_on_the_spark_path() -> None:
    code = (
        "import sys, reassign_cli.spark.engine, reassign_cli.cli\n"
        "from reassign_cli.cli import main\n"
        "assert 'pyspark' not in sys.modules, 'pyspark imported at import time'\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_local_engine_run_never_imports_pyspark(tmp_path: Path) -> None:
    from reassign_cli.core import snapshot
    from reassign_cli.core.model import ClusterState, Topic

    state = ClusterState(brokers=UNRACKED, topics={"t": Topic("t", {0: [0, 1], 1: [1, 2]})})
    snap = tmp_path / "s.json"
    snap.write_bytes(snapshot.dumps(state))
    code = (
        "import sys\n"
        "from reassign_cli.cli import main\n"
        "try:\n"
        "    main(['generate', '--snapshot', sys.argv[1], '--topic', 't', '--seed', '1', '-q'])\n"
        "except SystemExit as e:\n"
        "    assert e.code in (0, None), e.code\n"
        "assert 'pyspark' not in sys.modules\n"
        "print('ok', file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(snap)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().endswith("ok")
    assert "Proposed partition reassignment configuration" in res.stdout


def test_master_endpoints() -> None:
    assert spark_engine.master_endpoints("spark://h1:7077,h2:7078") == [("h1", 7077), ("h2", 7078)]
    assert spark_engine.master_endpoints("spark://[::1]:7077") == [("::1", 7077)]
    assert spark_engine.master_endpoints("spark://h1") == [("h1", 7077)]
    assert spark_engine.master_endpoints("local[2]") == []
    assert spark_engine.master_endpoints("yarn") == []
    with pytest.raises(UsageError, match="bad port"):
        spark_engine.master_endpoints("spark://h1:x")
