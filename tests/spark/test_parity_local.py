"""Spark engine on local[2] against the local engine: byte-identical documents (one shared SparkContext)."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from reassign_cli.core import model
from reassign_cli.errors import InvalidReplicationFactorError
from reassign_cli.planning import plan
from reassign_cli.spark import engine as spark_engine
from tests.spark.data import RACKED, UNRACKED, random_specs

pytestmark = pytest.mark.spark

MASTER = "local[2]"


def local_engine(specs: list[plan.TopicSpec], brokers: list[model.Broker], seed: int) -> str:
    return model.format_reassignment_json(
        plan.assign_topics(sorted(specs, key=lambda s: s.name), brokers, seed)
    )


@pytest.mark.parametrize("brokers", [RACKED, UNRACKED], ids=["racks", "no-racks"])
@pytest.mark.parametrize("seed", [0, 42, 2**40 + 7])
def test_parity_on_random_snapshots(spark_sc: Any, brokers: list[model.Broker], seed: int) -> None:
    rnd = random.Random(seed ^ len(brokers))
    specs = random_specs(rnd, 300, 3)
    assert spark_engine.proposed_json(specs, brokers, seed, master=MASTER) == local_engine(
        specs, brokers, seed
    )


def test_parity_with_many_small_batches(spark_sc: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dozens of batches (one Spark partition each): the boundaries between slices stay right."""
    specs = random_specs(random.Random(3), 400, 4, max_partitions=200)
    monkeypatch.setattr(spark_engine, "PARTITIONS_PER_BATCH", 300)
    n = spark_engine.batch_count(sum(s.n_partitions for s in specs), len(specs), spark_sc.defaultParallelism)
    assert n > 20
    assert spark_engine.proposed_json(specs, RACKED, 9, master=MASTER) == local_engine(specs, RACKED, 9)


def test_rf_equal_to_broker_count_and_partitions_beyond_it(spark_sc: Any) -> None:
    specs = [
        plan.TopicSpec("wide", 50, len(UNRACKED)),
        plan.TopicSpec("one", 1, 1),
        plan.TopicSpec("W", 13, 2),
    ]
    assert spark_engine.proposed_json(specs, UNRACKED, 5, master=MASTER) == local_engine(specs, UNRACKED, 5)


@pytest.mark.parametrize("brokers", [RACKED, UNRACKED], ids=["racks", "no-racks"])
def test_out_path_mode_writes_exactly_the_returned_text(
    spark_sc: Any, tmp_path: Path, brokers: list[Any]
) -> None:
    specs = random_specs(random.Random(17), 250, 3)
    text = spark_engine.proposed_json(specs, brokers, 17, master=MASTER)
    out = tmp_path / "proposed.json"
    assert spark_engine.proposed_json(specs, brokers, 17, master=MASTER, out_path=str(out)) is None
    assert out.read_text() == text == local_engine(specs, brokers, 17)
    assert os.listdir(tmp_path) == ["proposed.json"]  # the executors' part files are gone


def test_empty_topic_list(spark_sc: Any, tmp_path: Path) -> None:
    assert spark_engine.proposed_json([], UNRACKED, 1, master=MASTER) == model.format_reassignment_json({})
    out = tmp_path / "p.json"
    spark_engine.proposed_json([], UNRACKED, 1, master=MASTER, out_path=str(out))
    assert out.read_text() == model.format_reassignment_json({})


def test_executor_side_errors_keep_their_class_message_and_hint(spark_sc: Any, tmp_path: Path) -> None:
    specs = [plan.TopicSpec("ok", 3, 2), plan.TopicSpec("too-wide", 3, len(UNRACKED) + 1)]
    with pytest.raises(InvalidReplicationFactorError) as local:
        plan.assign_topics(specs, UNRACKED, 1)
    for out_path in (None, str(tmp_path / "p.json")):
        with pytest.raises(InvalidReplicationFactorError) as remote:
            spark_engine.proposed_json(specs, UNRACKED, 1, master=MASTER, out_path=out_path)
        assert str(remote.value) == str(local.value)
        assert remote.value.hint == local.value.hint
    assert os.listdir(tmp_path) == []  # nothing written on failure


def test_workers_use_the_drivers_interpreter_unless_pyspark_python_is_set(spark_sc: Any) -> None:
    import sys

    assert spark_sc.pythonExec == (os.environ.get("PYSPARK_PYTHON") or sys.executable)
    versions = (
        spark_sc.parallelize(range(2), 2).map(lambda _: tuple(__import__("sys").version_info[:2])).collect()
    )
    assert versions == [tuple(sys.version_info[:2])] * 2
