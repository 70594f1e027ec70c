"""cancel --all on a KRaft 4.x cluster, through the admin API alone: our throttled move, then one Kafka's own
kafka-reassign-partitions adds beside it (--additional --throttle), no plan file given. Both are cancelled,
the rollback file holds where they were heading, our throttle keys come off (an operator's earlier value
put back) and the keys Kafka's tool set on its topic stay."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clusters import ExtraCluster
from tests.helpers import consume_all
from tests.integration.kraft_support import (
    EMPTY,
    FREP,
    LR,
    LREP,
    Admin,
    cli,
    eventually,
    kafka_tool,
    plan,
    record_messages,
    replayed_record,
)


def test_cancel_all_on_kraft(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    # 2.5 MB at 10-20 kB/s: minutes of copying, caught in the act.
    ours_topic, ours_values = ka.make_topic("ours", {0: [1, 2]}, messages=2500)
    theirs_topic, theirs_values = ka.make_topic("theirs", {0: [1, 2]}, messages=2500)
    ka.alter("brokers", 1, {LR: "77777"})  # an operator's standing value
    try:
        ours = plan(tmp_path / "ours.json", {(ours_topic, 0): [3, 2]})
        r = cli(
            kc.bootstrap, "execute", "--reassignment-json-file", ours, "--throttle", "20000", cwd=tmp_path
        )
        assert r.returncode == 0, r.stderr
        theirs = plan(tmp_path / "theirs.json", {(theirs_topic, 0): [3, 1]})
        k = kafka_tool(
            kc.bootstrap,
            "--execute",
            "--additional",
            "--reassignment-json-file",
            theirs,
            "--throttle",
            "20000",
        )
        assert k.returncode == 0, k.stderr
        assert set(ka.reassignments()) == {(ours_topic, 0), (theirs_topic, 0)}
        kafka_keys = ka.throttles([], [theirs_topic])[f"topic {theirs_topic}"]
        assert kafka_keys[FREP] == "0:3"
        ours.unlink()
        theirs.unlink()

        c = cli(kc.bootstrap, "cancel", "--all", "--rollback-file", "pre.json", cwd=tmp_path)
        assert c.returncode == 0, c.stderr
        first, second = sorted([ours_topic, theirs_topic])
        assert c.stdout.splitlines() == [
            "Saved the targets of the reassignments cancelled to pre.json",
            f"Successfully cancelled partition reassignments for: {first}-0,{second}-0",
            "Clearing broker-level throttles on brokers 1,2,3",
            f"Clearing topic-level throttles on topic {ours_topic}",  # Kafka's topic's lists are not ours
        ]
        heading = {ours_topic: [3, 2], theirs_topic: [3, 1]}
        assert json.loads((tmp_path / "pre.json").read_text()) == {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": 0, "replicas": heading[t], "log_dirs": ["any", "any"]}
                for t in (first, second)
            ],
        }
        assert ka.reassignments() == {}
        # Reverted: RS minus the adding replicas, in RS order (RS = target + origin).
        eventually(lambda: ka.partitions(ours_topic)[0][0], [2, 1], "ours reverted")
        eventually(lambda: ka.partitions(theirs_topic)[0][0], [1, 2], "theirs reverted")
        # The broker rates were ours (recorded when we set them; Kafka's tool wrote the same keys after):
        # back to what was there before us. Kafka's topic keys are not ours: kept.
        eventually(
            lambda: ka.throttles([1, 2, 3], [ours_topic, theirs_topic]),
            {
                "broker 1": {LR: "77777"},
                "broker 2": {},
                "broker 3": {},
                f"topic {ours_topic}": {},
                f"topic {theirs_topic}": kafka_keys,
            },
            "our throttles off, the others kept",
        )
        assert replayed_record(record_messages(kc.bootstrap)) == EMPTY

        again = cli(kc.bootstrap, "cancel", "--all", "--rollback-file", "again.json", cwd=tmp_path)
        assert (again.returncode, again.stdout) == (
            0,
            "No partition reassignments in flight: nothing to cancel.\n",
        )
        assert not (tmp_path / "again.json").exists()
    finally:
        ka.alter("brokers", 1, {LR: None})
        ka.alter("topics", theirs_topic, {LREP: None, FREP: None})
    assert consume_all(kc.bootstrap, ours_topic) == ours_values
    assert consume_all(kc.bootstrap, theirs_topic) == theirs_values
