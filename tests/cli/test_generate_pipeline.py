"""reassign_cli.ops.generate as a library: the strategy hook (a plan returned whole, with its own figures) and
the framing of its figures in `--format json` and the summary. Expected values worked out by hand."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from reassign_cli.core.model import Assignment, Broker
from reassign_cli.ops import generate
from reassign_cli.planning.plan import TopicSpec
from reassign_cli.render.generate import output_frame

SNAPSHOT = {
    "version": 1,
    "brokers": [{"id": 1}, {"id": 2}, {"id": 3}],
    "topics": [
        {
            "topic": "a",
            "partitions": [{"partition": 0, "replicas": [1, 2]}, {"partition": 1, "replicas": [2, 3]}],
        },
        {"topic": "b", "partitions": [{"partition": 0, "replicas": [3]}]},
    ],
}


class WholePlan:
    """A strategy that returns the whole proposal at once, with figures of its own."""

    def __init__(self, seed: int, state: object = None) -> None:
        self.seed = seed

    def check(self, specs: Sequence[TopicSpec], brokers: Sequence[Broker]) -> None:
        assert [s.name for s in specs] == ["a", "b"] and [b.id for b in brokers] == [1, 2, 3]

    def proposals(self, specs: Sequence[TopicSpec], brokers: Sequence[Broker]) -> Iterator[Assignment]:
        yield {"a": {0: [3, 1], 1: [1, 2]}, "b": {0: [2]}}

    def extra_stats(self) -> Mapping[str, Any] | None:
        return {"copies": 2, "lower_bound": 2}


class Quiet:
    def warning(self, text: str) -> None:
        raise AssertionError(text)

    def detail(self, text: str) -> None:
        pass

    def seed_chosen(self, seed: int) -> None:
        raise AssertionError(seed)


@pytest.fixture()
def snap(tmp_path: Path) -> generate.Source:
    path = tmp_path / "snap.json"
    path.write_bytes(orjson.dumps(SNAPSHOT))
    return generate.Source(snapshot_file=str(path))


def test_strategy_hook_json_document_carries_its_stats(
    snap: generate.Source, capsys: pytest.CaptureFixture[str]
) -> None:
    request = generate.Request(
        ["b", "a"], seed=5, frame=lambda seed, extra: output_frame(True, seed, extra), strategy=WholePlan
    )
    outcome = generate.run(request, snap, Quiet())
    cur = (
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":1,"replicas":[2,3],"log_dirs":["any","any"]},'
        '{"topic":"b","partition":0,"replicas":[3],"log_dirs":["any"]}]}'
    )
    prop = (
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[3,1],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":1,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"b","partition":0,"replicas":[2],"log_dirs":["any"]}]}'
    )
    out = capsys.readouterr().out
    # the stats every strategy has (counted from the plan, by hand below: a strategy's own "copies" does
    # not replace them), then the strategy's own figures
    common = '"partitions":3,"partitions_changed":3,"copies":3,"leader_changes":3,"bytes_copied":null'
    assert out == f'{{"seed":5,"current":{cur},"proposed":{prop},"stats":{{{common},"lower_bound":2}}}}\n'
    assert outcome.extra_stats == {"copies": 2, "lower_bound": 2}
    assert outcome.stats is not None
    # by hand: a/0 [1,2]->[3,1] moves one replica and its leader; a/1 [2,3]->[1,2] moves one and its
    # leader; b/0 [3]->[2] moves one and its leader
    st = outcome.stats
    assert (st.partitions, st.partitions_changed, st.replicas_moved, st.leaders_changed) == (3, 3, 3, 3)


def test_output_dir_gets_both_files_and_nothing_else(snap: generate.Source, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    request = generate.Request(["a", "b"], seed=5, output_dir=str(out_dir), strategy=WholePlan, stats=False)
    outcome = generate.run(request, snap, Quiet())
    assert outcome.files == (str(out_dir / "current.json"), str(out_dir / "proposed.json"))
    assert outcome.stats is None
    assert sorted(p.name for p in out_dir.iterdir()) == ["current.json", "proposed.json"]
    doc = orjson.loads((out_dir / "proposed.json").read_bytes())
    assert [(e["topic"], e["partition"], e["replicas"]) for e in doc["partitions"]] == [
        ("a", 0, [3, 1]),
        ("a", 1, [1, 2]),
        ("b", 0, [2]),
    ]
    assert (out_dir / "proposed.json").read_bytes().endswith(b"]}\n")


def test_failing_strategy_leaves_no_file(snap: generate.Source, tmp_path: Path) -> None:
    class Broken(WholePlan):
        def proposals(self, specs: Sequence[TopicSpec], brokers: Sequence[Broker]) -> Iterator[Assignment]:
            yield {"a": {0: [3, 1], 1: [1, 2]}}
            raise RuntimeError("halfway")

    out_dir = tmp_path / "out"
    with pytest.raises(RuntimeError, match="halfway"):
        generate.run(
            generate.Request(["a", "b"], seed=1, output_dir=str(out_dir), strategy=Broken), snap, Quiet()
        )
    assert list(out_dir.iterdir()) == []


def test_summary_caption_lists_the_strategys_figures() -> None:
    from reassign_cli.planning.plan import PlanStats
    from reassign_cli.render.generate import summary_table

    table = summary_table(PlanStats(), [1, 2], extra_stats={"copies": 7, "lower bound": 6})
    assert str(table.caption).splitlines()[1:] == ["copies: 7", "lower bound: 6"]
    assert "\n" not in str(summary_table(PlanStats(), [1, 2]).caption)


def test_spark_engine_refuses_another_strategy(snap: generate.Source, tmp_path: Path) -> None:
    """The Spark engine splits Kafka's strategy and the balanced one: another strategy with --engine
    spark would be ignored silently, so it is refused before anything is read or started."""
    from reassign_cli.errors import ExitCode, UsageError

    request = generate.Request(
        ["a"], seed=1, output_dir=str(tmp_path / "out"), strategy=WholePlan, engine="spark"
    )
    with pytest.raises(
        UsageError, match=r"^--engine spark plans with the kafka and balanced strategies only$"
    ) as ei:
        generate.run(request, snap, Quiet())
    assert ei.value.exit_code == ExitCode.USAGE
    assert not (tmp_path / "out").exists()
