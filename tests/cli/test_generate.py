"""`kafka-reassign generate` against the real cluster (topics made with known assignments) and against
synthetic ZooKeeper chroots (for states a live cluster cannot easily be put in: mixed racks, deletions,
reassignments in flight), plus the summary statistics."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from reassign_cli.planning.assign import assign_replicas
from reassign_cli.planning.plan import TopicRng
from reassign_cli.render.generate import plan_stats
from tests.cli.test_snapshot import broker_v5, fill_synthetic
from tests.clusters import kazoo_session

RunCli = Callable[..., Any]
MakeTopic = Callable[..., str]
LIVE_BROKERS = [(1, "r1"), (2, "r2"), (3, "r3")]
SEED_LINE = re.compile(r"^Using seed (\d+); pass --seed \1 to reproduce this plan\.$", re.M)


def split_text(stdout: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Kafka's --generate text, checked line by line; returns the two documents."""
    lines = stdout.split("\n")
    assert lines[0] == "Current partition replica assignment"
    assert lines[2] == ""
    assert lines[3] == "Proposed partition reassignment configuration"
    assert lines[5] == "" and len(lines) == 6  # the output ends with exactly one newline
    return orjson.loads(lines[1]), orjson.loads(lines[4])


def as_assignment(doc: dict[str, Any]) -> dict[str, dict[int, list[int]]]:
    out: dict[str, dict[int, list[int]]] = {}
    for e in doc["partitions"]:
        assert e["log_dirs"] == ["any"] * len(e["replicas"])
        out.setdefault(e["topic"], {})[e["partition"]] = e["replicas"]
    return out


# -- the live cluster ------------------------------------------------------------------------


KAFKA_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kafka"
# Kafka's jar on known draws, and Kafka's own --generate output (see tests/fixtures/kafka/README.md).
KAFKA_CASES = orjson.loads((KAFKA_FIXTURES / "assign_cases.json").read_bytes())["cases"]
KAFKA_LIVE_TEXT = (KAFKA_FIXTURES / "generate-live.txt").read_text()


def test_generate_text_is_kafkas_own_output(make_topic: MakeTopic, run_cli: RunCli) -> None:
    """The topics Kafka 3.9.2's kafka-reassign-partitions --generate was run on, re-created with the same
    assignments: our whole stdout is Kafka's, with the proposed replicas that Kafka's jar gives for the
    seed's draws (the only difference Kafka's random draws allow)."""
    make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]}, name="kafka-fixture-a")
    make_topic({0: [3, 2, 1]}, name="kafka-fixture-b")
    live = [c for c in KAFKA_CASES if c.get("live")]
    seed = live[0]["seed"]
    assert {c["seed"] for c in live} == {seed}
    r = run_cli(
        "generate", "--topic", "kafka-fixture-b", "--topic", "kafka-fixture-a", "--broker-list", "1,2,3",
        "--seed", str(seed), "-q",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    # Kafka's proposed line with its (random) replica lists replaced, in order, by the jar's.
    jar_lists = [
        c["kafka"][p] for c in sorted(live, key=lambda c: c["topic"]) for p in sorted(c["kafka"], key=int)
    ]
    lists = iter(jar_lists)
    kafka_lines = KAFKA_LIVE_TEXT.split("\n")
    kafka_lines[4] = re.sub(
        r'"replicas":\[[0-9,]*\]',
        lambda _: '"replicas":[' + ",".join(map(str, next(lists))) + "]",
        kafka_lines[4],
    )
    assert next(lists, None) is None
    assert r.stdout == "\n".join(kafka_lines)


@pytest.mark.parametrize(
    "case", KAFKA_CASES, ids=lambda c: f"{c['topic']}-seed{c['seed']}-{len(c['brokers'])}b"
)
def test_generate_proposal_is_kafkas_jar_output(
    case: dict[str, Any], run_cli: RunCli, tmp_path: Path
) -> None:
    """For seed S and topic T whose two draws are equal, Kafka's jar with that fixed start index gives
    exactly Kafka's --generate assignment: the CLI must propose the same (from a snapshot)."""
    snap = {
        "version": 1,
        "brokers": [{"id": b, "rack": r} for b, r in case["brokers"]],
        "topics": [{"topic": case["topic"], "partitions": [
            {"partition": p, "replicas": [b for b, _ in case["brokers"][: case["rf"]]]}
            for p in range(case["partitions"])
        ]}],
    }  # fmt: skip
    (tmp_path / "snap.json").write_bytes(orjson.dumps(snap))
    r = run_cli(
        "generate",
        "--snapshot",
        tmp_path / "snap.json",
        "--topic",
        case["topic"],
        "--seed",
        str(case["seed"]),
        "-q",
    )
    assert r.returncode == 0, r.stderr
    proposed = as_assignment(split_text(r.stdout)[1])
    assert proposed == {case["topic"]: {int(p): reps for p, reps in case["kafka"].items()}}


def test_generate_is_deterministic_by_seed(make_topic: MakeTopic, run_cli: RunCli) -> None:
    topic = make_topic({p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)})
    outs = {
        s: run_cli("generate", "--topic", topic, "--seed", str(s), "-q").stdout for s in (1, 1, 2, 3, 4, 5)
    }
    again = run_cli("generate", "--topic", topic, "--seed", "1", "-q").stdout
    assert again == outs[1]
    # different seeds do give different plans (6 partitions over 3 brokers: 9 start/shift pairs)
    assert len({o.split("\n")[4] for o in outs.values()}) > 1
    for s, o in outs.items():
        assert as_assignment(split_text(o)[1])[topic] == assign_replicas(
            LIVE_BROKERS, 6, 2, rng=TopicRng(s, topic)
        )


def test_generate_without_seed_prints_a_reusable_seed(make_topic: MakeTopic, run_cli: RunCli) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3], 2: [3, 1]})
    r = run_cli("generate", "--topic", topic)
    assert r.returncode == 0, r.stderr
    m = SEED_LINE.search(r.stderr)
    assert m, r.stderr
    # the seed line shows even with -q (without it the plan cannot be reproduced)
    rq = run_cli("generate", "--topic", topic, "-q")
    assert SEED_LINE.fullmatch(rq.stderr.strip()), rq.stderr
    again = run_cli("generate", "--topic", topic, "--seed", m.group(1), "-q")
    assert again.stdout == r.stdout
    assert again.stderr == ""  # no seed line when --seed was given


def test_generate_summary_table(make_topic: MakeTopic, run_cli: RunCli) -> None:
    topic = make_topic({0: [1, 2], 1: [1, 2], 2: [1, 2]})
    r = run_cli("generate", "--topic", topic, "--broker-list", "1,2,3", "--seed", "3", "--no-color")
    assert r.returncode == 0, r.stderr
    proposed = as_assignment(split_text(r.stdout)[1])[topic]
    after = {b: sum(reps.count(b) for reps in proposed.values()) for b in (1, 2, 3)}
    assert "Proposed plan by broker" in r.stderr
    table_rows = [
        [c.strip() for c in line.strip("│").split("│")]
        for line in r.stderr.splitlines()
        if re.match(r"│\s+\d", line)
    ]
    got = {int(row[0]): [int(x) for x in row[1:5]] for row in table_rows}  # then the bars
    leaders_after = {b: sum(1 for reps in proposed.values() if reps[0] == b) for b in (1, 2, 3)}
    assert got == {
        1: [3, after[1], 3, leaders_after[1]],
        2: [3, after[2], 0, leaders_after[2]],
        3: [0, after[3], 0, leaders_after[3]],
    }
    changed = sum(1 for p, reps in proposed.items() if reps != [1, 2])
    assert f"{changed} of 3 partitions change" in r.stderr


def test_generate_json_format(make_topic: MakeTopic, run_cli: RunCli) -> None:
    topic = make_topic({0: [2, 3], 1: [3, 1]})
    text = run_cli("generate", "--topic", topic, "--seed", "11", "-q")
    r = run_cli("generate", "--topic", topic, "--seed", "11", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("}\n") and r.stdout.count("\n") == 1
    doc = orjson.loads(r.stdout)
    assert list(doc) == ["seed", "current", "proposed", "stats"]
    assert doc["seed"] == 11
    lines = text.stdout.split("\n")
    # the embedded documents are byte-identical to the text mode's; then the stats every strategy has
    assert r.stdout.startswith(f'{{"seed":11,"current":{lines[1]},"proposed":{lines[4]},"stats":{{')
    assert list(doc["stats"]) == [
        "partitions",
        "partitions_changed",
        "copies",
        "leader_changes",
        "bytes_copied",
    ]


def test_generate_output_dir(make_topic: MakeTopic, run_cli: RunCli, tmp_path: Path) -> None:
    topic = make_topic({0: [1, 2], 1: [2, 3]})
    text = run_cli("generate", "--topic", topic, "--seed", "5", "-q").stdout.split("\n")
    d = tmp_path / "plan" / "nested"
    r = run_cli("generate", "--topic", topic, "--seed", "5", "--output-dir", d, "-q")
    assert r.returncode == 0, r.stderr
    assert (d / "current.json").read_text() == text[1] + "\n"
    assert (d / "proposed.json").read_text() == text[4] + "\n"
    assert r.stdout == (
        f"Current partition replica assignment written to {d}/current.json\n"
        f"Proposed partition reassignment configuration written to {d}/proposed.json\n"
    )
    rj = run_cli("generate", "--topic", topic, "--seed", "5", "--output-dir", d, "--format", "json", "-q")
    doc = orjson.loads(rj.stdout)
    assert {k: doc[k] for k in ("seed", "current_file", "proposed_file")} == {
        "seed": 5,
        "current_file": f"{d}/current.json",
        "proposed_file": f"{d}/proposed.json",
    }
    assert doc["stats"]["partitions"] == 2 and doc["stats"]["bytes_copied"] is None  # no --bootstrap-server


def test_generate_topics_file_and_topic_combined(
    make_topic: MakeTopic, run_cli: RunCli, tmp_path: Path
) -> None:
    a = make_topic({0: [1, 2]})
    b = make_topic({0: [2, 3]})
    f = tmp_path / "topics.json"
    f.write_text(orjson.dumps({"topics": [{"topic": a}], "version": 1}).decode())
    r = run_cli("generate", "--topics-to-move-json-file", f, "--topic", b, "--seed", "1", "-q")
    assert r.returncode == 0, r.stderr
    assert set(as_assignment(split_text(r.stdout)[0])) == {a, b}
    only_file = run_cli("generate", "--topics-to-move-json-file", f, "--seed", "1", "-q")
    assert set(as_assignment(split_text(only_file.stdout)[1])) == {a}
    dup = run_cli("generate", "--topics-to-move-json-file", f, "--topic", a, "--seed", "1")
    assert dup.returncode == 3
    assert dup.stderr == f"Error: List of topics to reassign contains duplicate entries: {a}\n"


def test_snapshot_round_trip_same_bytes(make_topic: MakeTopic, run_cli: RunCli, tmp_path: Path) -> None:
    a = make_topic({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    b = make_topic({p: [1 + p % 3] for p in range(5)})
    snap = tmp_path / "snap.json"
    assert run_cli("snapshot", "-o", snap).returncode == 0
    for extra in ([], ["--broker-list", "1,3", "--disable-rack-aware"], ["--format", "json"]):
        args = ["generate", "--topic", a, "--topic", b, "--seed", "77", "-q", *extra]
        if "1,3" in extra:
            args = ["generate", "--topic", b, "--seed", "77", "-q", *extra]
        live = run_cli(*args)
        offline = run_cli(*args, "--snapshot", snap, env={"KAFKA_REASSIGN_ZOOKEEPER": None})
        assert live.returncode == 0 and offline.returncode == 0, (live.stderr, offline.stderr)
        assert offline.stdout == live.stdout
        assert offline.stdout


# -- synthetic chroots ------------------------------------------------------------------------


def test_generate_during_reassignment_live_equals_snapshot(
    zk_chroot: str, run_cli: RunCli, tmp_path: Path
) -> None:
    """Topic v2 is mid-reassignment (RS [10,1,2], adding [10], removing [2]): current shows the RS as
    Kafka does, the RF is the target's (2), and the snapshot plans byte-identically."""
    fill_synthetic(zk_chroot)
    with kazoo_session(zk_chroot) as zk:  # racks for all, so the default rack-aware mode applies
        zk.set("/brokers/ids/2", broker_v5(2, "r2"))
        zk.set("/brokers/ids/10", broker_v5(10, "r1"))
    args = ["generate", "--topic", "v2", "--topic", "v1", "--seed", "8", "-q"]
    live = run_cli(*args, "--zookeeper", zk_chroot)
    assert live.returncode == 0, live.stderr
    current, proposed = split_text(live.stdout)
    assert as_assignment(current) == {"v1": {0: [1, 2], 1: [2, 1]}, "v2": {0: [10, 1, 2]}}
    brokers = [(1, "r1"), (2, "r2"), (10, "r1")]
    assert as_assignment(proposed)["v2"] == assign_replicas(brokers, 1, 2, rng=TopicRng(8, "v2"))
    snap = tmp_path / "s.json"
    assert run_cli("snapshot", "--zookeeper", zk_chroot, "-o", snap).returncode == 0
    offline = run_cli(*args, "--snapshot", snap, env={"KAFKA_REASSIGN_ZOOKEEPER": None})
    assert offline.stdout == live.stdout


def test_generate_v1_znodes_and_rack_less_brokers(zk_chroot: str, run_cli: RunCli) -> None:
    with kazoo_session(zk_chroot) as zk:
        zk.ensure_path("/brokers/topics")
        for b in (1, 2, 3, 4):
            zk.create(f"/brokers/ids/{b}", b'{"version":1,"host":"h","port":1,"jmx_port":-1}', makepath=True)
        zk.create("/brokers/topics/old", b'{"version":1,"partitions":{"0":[1,2],"1":[2,3],"2":[3,4]}}')
    r = run_cli("generate", "--zookeeper", zk_chroot, "--topic", "old", "--seed", "9", "-q")
    assert r.returncode == 0, r.stderr
    prop = as_assignment(split_text(r.stdout)[1])
    assert prop["old"] == assign_replicas([(b, None) for b in (1, 2, 3, 4)], 3, 2, rng=TopicRng(9, "old"))


def test_mixed_racks_need_disable_rack_aware(zk_chroot: str, run_cli: RunCli) -> None:
    fill_synthetic(zk_chroot)  # broker 1 has a rack, 2 and 10 have none
    r = run_cli("generate", "--zookeeper", zk_chroot, "--topic", "v1", "--seed", "1")
    assert r.returncode == 3
    assert r.stderr == (
        "Error: Not all brokers have rack information. Add --disable-rack-aware in command line to make "
        "replica assignment without rack information.\n"
    )
    ok = run_cli(
        "generate", "--zookeeper", zk_chroot, "--topic", "v1", "--seed", "1", "--disable-rack-aware", "-q"
    )
    assert ok.returncode == 0, ok.stderr
    assert as_assignment(split_text(ok.stdout)[1])["v1"] == assign_replicas(
        [(1, None), (2, None), (10, None)], 2, 2, rng=TopicRng(1, "v1")
    )


def test_topic_queued_for_deletion_is_refused(zk_chroot: str, run_cli: RunCli) -> None:
    fill_synthetic(zk_chroot)  # v3 is under /admin/delete_topics
    r = run_cli("generate", "--zookeeper", zk_chroot, "--topic", "v3", "--disable-rack-aware", "--seed", "1")
    assert r.returncode == 3
    assert r.stderr == "Error: Topic queued for deletion: v3\n"
    assert r.stdout == ""


# -- errors against the live cluster -----------------------------------------------------------


def test_missing_topic_is_named(make_topic: MakeTopic, run_cli: RunCli) -> None:
    topic = make_topic({0: [1, 2]})
    r = run_cli("generate", "--topic", topic, "--topic", "no-such-topic-h3", "--seed", "1")
    assert r.returncode == 3
    assert r.stderr == "Error: Topic no-such-topic-h3 not found.\n"
    assert r.stdout == ""


def test_duplicate_brokers(make_topic: MakeTopic, run_cli: RunCli) -> None:
    topic = make_topic({0: [1, 2]})
    r = run_cli("generate", "--topic", topic, "--broker-list", "1,2,1", "--seed", "1")
    assert r.returncode == 3
    assert r.stderr == "Error: Broker list contains duplicate entries: 1\n"


def test_rf_larger_than_brokers_and_unregistered_warning(make_topic: MakeTopic, run_cli: RunCli) -> None:
    topic = make_topic({0: [1, 2, 3]})
    r = run_cli("generate", "--topic", topic, "--broker-list", "1,2,7", "--seed", "1")
    assert r.returncode == 3
    assert r.stderr.splitlines() == [
        "Warning: Broker 7 in --broker-list is not registered and will not be used",
        "Error: Replication factor: 3 larger than available brokers: 2.",
        f"topic {topic} has replication factor 3",
    ]
    assert r.stdout == ""


def test_unregistered_broker_only_warns_when_plan_is_possible(make_topic: MakeTopic, run_cli: RunCli) -> None:
    topic = make_topic({0: [1, 2]})
    r = run_cli("generate", "--topic", topic, "--broker-list", "9,1,3,8", "--seed", "4", "-q")
    assert r.returncode == 0
    assert r.stderr == "Warning: Brokers 9,8 in --broker-list are not registered and will not be used\n"
    prop = as_assignment(split_text(r.stdout)[1])[topic]
    assert prop == assign_replicas([(1, "r1"), (3, "r3")], 1, 2, rng=TopicRng(4, topic))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--broker-list", "1,x"], "'x' is not a broker id"),
        (["--broker-list", "1, 2"], "' 2' is not a broker id"),
        (["--broker-list", "1,,2"], "'' is not a broker id"),
        (["--seed", "-1"], "--seed"),
        (["--engine", "gpu"], "--engine"),
        (["--spark-master", "local[2]"], "--spark-master needs --engine spark"),
    ],
)
def test_usage_errors(run_cli: RunCli, args: list[str], message: str) -> None:
    r = run_cli("generate", "--topic", "t", *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert r.stdout == ""


def test_no_topics_is_a_usage_error(run_cli: RunCli) -> None:
    r = run_cli("generate", "--broker-list", "1,2")
    assert r.returncode == 2
    assert r.stderr == "Error: one of --topics-to-move-json-file or --topic is required\n"


def test_snapshot_and_zookeeper_are_exclusive(run_cli: RunCli, cluster: Any, tmp_path: Path) -> None:
    snap = tmp_path / "s.json"
    snap.write_text('{"version":1,"brokers":[],"topics":[]}')
    r = run_cli("generate", "--topic", "t", "--snapshot", snap, "--zookeeper", cluster.zookeeper)
    assert r.returncode == 2
    assert r.stderr == "Error: --snapshot and --zookeeper cannot be used together\n"
    # the environment variable alone does not conflict: the snapshot is used
    r2 = run_cli("generate", "--topic", "t", "--snapshot", snap)
    assert r2.returncode == 3 and r2.stderr == "Error: Topic t not found.\n"


def test_bad_topics_file_and_snapshot_exit_3(run_cli: RunCli, tmp_path: Path) -> None:
    f = tmp_path / "topics.json"
    f.write_text('{"topics":[{"topic":"a"}],"version":2}')
    r = run_cli("generate", "--topics-to-move-json-file", f)
    assert (r.returncode, r.stderr) == (
        3,
        "Error: topics-to-move file: Not supported version field value 2\n",
    )
    s = tmp_path / "s.json"
    s.write_text('{"version":1,"brokers":[{"id":1}],"topics":[{"topic":"a","partitions":[{"partition":0}]}]}')
    r2 = run_cli("generate", "--topic", "a", "--snapshot", s)
    assert r2.returncode == 3
    assert r2.stderr == 'Error: snapshot file: partition a-0: "replicas" must be a list of integers\n'


def test_unreachable_zookeeper_and_missing_chroot(run_cli: RunCli, cluster: Any) -> None:
    r = run_cli("generate", "--topic", "t", "--zookeeper", "127.0.0.1:1", "--zk-timeout", "1")
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == "Error: cannot connect to ZooKeeper at 127.0.0.1:1 within 1s"
    r2 = run_cli("generate", "--topic", "t", "--zookeeper", f"{cluster.zk_hosts}/h3-missing-chroot")
    assert r2.returncode == 1
    assert r2.stderr.splitlines()[0].startswith("Error: ZooKeeper chroot /h3-missing-chroot does not exist")


def test_help_lists_options(run_cli: RunCli) -> None:
    r = run_cli("generate", "--help")
    assert r.returncode == 0
    for opt in (
        "--topics-to-move-json-file",
        "--topic",
        "--broker-list",
        "--disable-rack-aware",
        "--seed",
        "--output-dir",
        "--snapshot",
        "--engine",
        "--spark-master",
        "--format",
    ):
        assert opt in r.stdout


# -- summary statistics (pure) ------------------------------------------------------------------


def test_plan_stats() -> None:
    current = {"a": {0: [1, 2], 1: [2, 3]}, "b": {0: [3]}}
    proposed = {"a": {0: [1, 2], 1: [3, 1]}, "b": {0: [1]}}
    st = plan_stats(current, proposed)
    assert (st.partitions, st.partitions_changed, st.replicas_moved, st.leaders_changed) == (3, 2, 2, 2)
    assert dict(st.replicas_before) == {1: 1, 2: 2, 3: 2}
    assert dict(st.replicas_after) == {1: 3, 2: 1, 3: 1}
    assert dict(st.leaders_before) == {1: 1, 2: 1, 3: 1}
    assert dict(st.leaders_after) == {1: 2, 3: 1}


def naive_stats(current: dict[str, dict[int, list[int]]], proposed: dict[str, dict[int, list[int]]]) -> tuple:
    from collections import Counter

    rb, ra, lb, la = Counter(), Counter(), Counter(), Counter()
    changed = moved = leaders = n = 0
    for t, parts in proposed.items():
        for p, new in parts.items():
            old = current.get(t, {}).get(p, [])
            n += 1
            rb.update(old)
            ra.update(new)
            if old:
                lb[old[0]] += 1
            if new:
                la[new[0]] += 1
            if old != new:
                changed += 1
                moved += len(set(new) - set(old))
                leaders += old[:1] != new[:1]
    return n, changed, moved, leaders, rb, ra, lb, la


@pytest.mark.parametrize("mixed", [False, True])
def test_plan_stats_matches_naive_count(mixed: bool) -> None:
    import random

    rnd = random.Random(7 + mixed)
    current: dict[str, dict[int, list[int]]] = {}
    proposed: dict[str, dict[int, list[int]]] = {}
    for t in range(40):
        rf = rnd.randint(1, 4) if mixed else 3
        current[f"t{t}"] = {p: rnd.sample(range(1, 9), rf) for p in range(rnd.randint(1, 12))}
        # the proposal lists partitions in another order than the current assignment
        proposed[f"t{t}"] = {
            p: (rnd.sample(range(1, 9), rf) if rnd.random() < 0.7 else list(current[f"t{t}"][p]))
            for p in reversed(list(current[f"t{t}"]))
        }
    st = plan_stats(current, proposed)
    n, changed, moved, leaders, rb, ra, lb, la = naive_stats(current, proposed)
    assert (st.partitions, st.partitions_changed, st.replicas_moved, st.leaders_changed) == (
        n,
        changed,
        moved,
        leaders,
    )
    assert (st.replicas_before, st.replicas_after, st.leaders_before, st.leaders_after) == (rb, ra, lb, la)
    assert 0 < changed < n


def test_summary_table_condenses_many_brokers() -> None:
    from rich.console import Console

    from reassign_cli.render.generate import summary_table

    current = {"t": {p: [p % 40 + 1] for p in range(80)}}  # brokers 1..40, two replicas each
    proposed = {"t": {p: [p % 20 + 1] for p in range(80)}}  # brokers 1..20, four each
    st = plan_stats(current, proposed)

    def render(**kw: bool) -> str:
        console = Console(width=120, record=True, no_color=True)
        console.print(summary_table(st, range(1, 21), **kw))
        return console.export_text()

    short = render()
    assert "Proposed plan over 20 brokers" in short
    rows = {
        line.split("│")[1].strip(): line.split("│")[2:6]
        for line in short.splitlines()
        if line.count("│") == 6
    }
    assert [c.strip() for c in rows["min"]] == ["2", "4", "2", "4"]
    assert [c.strip() for c in rows["max"]] == ["2", "4", "2", "4"]
    assert [c.strip() for c in rows["20 not in plan (sum)"]] == ["40", "0", "40", "0"]
    full = render(every_broker=True)
    assert "Proposed plan by broker" in full and "40 (not in plan)" in full
    assert "40 of 80 partitions change, 40 replicas move" in full


@pytest.mark.spark
def test_spark_failure_leaves_no_partial_output(tmp_path: Path) -> None:
    """Spark runs before anything is printed: when it cannot start, stdout stays empty."""
    from tests.helpers import run_cli as run

    snap = tmp_path / "s.json"
    snap.write_text(
        '{"version":1,"brokers":[{"id":1},{"id":2}],"topics":[{"topic":"t","partitions":'
        '[{"partition":0,"replicas":[1,2]}]}]}'
    )
    r = run(
        "generate",
        "--snapshot",
        str(snap),
        "--topic",
        "t",
        "--engine",
        "spark",
        "--spark-master",
        "bogus://x",
    )
    assert r.returncode == 1
    assert r.stdout == ""
    assert "\nError: cannot start Spark (master bogus://x)" in r.stderr
    assert SEED_LINE.match(r.stderr)  # the seed line comes first


# -- long lists in our messages: cut after ten, whole under -v ----------------------------------------


def test_long_list_in_an_error_is_cut_and_whole_under_verbose(zk_chroot: str, run_cli: RunCli) -> None:
    fill_synthetic(zk_chroot)
    missing = [f"gone-{i:02d}" for i in range(13)]
    args = ["generate", "--zookeeper", zk_chroot, "--disable-rack-aware", "--seed", "1"]
    args += [x for t in missing for x in ("--topic", t)]
    r = run_cli(*args)
    assert (r.returncode, r.stdout) == (3, "")
    shown = "gone-00,gone-01,gone-02,gone-03,gone-04,gone-05,gone-06,gone-07,gone-08,gone-09"
    assert r.stderr == f"Error: Topics not found: {shown} and 3 more\n"
    r = run_cli(*args, "-v")
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr.splitlines()[-1] == f"Error: Topics not found: {shown},gone-10,gone-11,gone-12"


def test_long_list_in_a_warning_is_cut_and_whole_under_verbose(zk_chroot: str, run_cli: RunCli) -> None:
    fill_synthetic(zk_chroot)
    ghosts = list(range(101, 113))
    listing = ",".join(map(str, [1, 2, *ghosts]))
    args = ["generate", "--zookeeper", zk_chroot, "--topic", "v1", "--broker-list", listing, "--seed", "1"]
    args += ["--disable-rack-aware", "-q"]
    r = run_cli(*args)
    assert r.returncode == 0
    cut = "101,102,103,104,105,106,107,108,109,110 and 2 more"
    assert r.stderr == f"Warning: Brokers {cut} in --broker-list are not registered and will not be used\n"
    r = run_cli(*args, "-v")
    assert r.returncode == 0
    whole = ",".join(map(str, ghosts))
    line = f"Warning: Brokers {whole} in --broker-list are not registered and will not be used"
    assert line in r.stderr.splitlines()
