"""A throttled plan of one topic whose throttled-replica list is longer than a request's string field (0x7fff
bytes) on KRaft 4.x: Kafka's parser refuses such a string in IncrementalAlterConfigs and closes the
connection (execute failed with "socket disconnected"). We write "*" for that list instead, warn once,
and verify takes it off again. Expected values worked out by hand: 2,500 partitions of RF 2 give a leader
list of 2 x 2,500 "p:b" entries, well over 32,767 bytes."""

from __future__ import annotations

from pathlib import Path

from tests.clusters import ExtraCluster
from tests.integration.kraft_support import FREP, LREP, Admin, cli, eventually, idle, plan

PARTITIONS = 2500


def test_a_replica_list_too_long_for_a_request_is_sent_as_the_wildcard(
    kc: ExtraCluster, ka: Admin, tmp_path: Path
) -> None:
    topic, _ = ka.make_topic("big", {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(PARTITIONS)})
    leaders = ",".join(sorted(f"{p}:{b}" for p in range(PARTITIONS) for b in (1 + p % 3, 1 + (p + 1) % 3)))
    assert len(leaders) > 32767  # what Kafka's tool would send, and its broker refuse
    targets = {(topic, p): [1 + (p + 2) % 3, 1 + p % 3] for p in range(PARTITIONS)}
    move = plan(tmp_path / "big.json", targets)
    # A throttle that stops nothing: the partitions are empty and the test reads the configs while set.
    r = cli(
        kc.bootstrap, "execute", "--reassignment-json-file", move, "--throttle", "100000000", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert (
        f"Warning: Every replica of {topic} is throttled ('*'): the list of this plan's replicas is longer "
        "than the 32767 bytes a request carries"
    ) in r.stderr.splitlines()
    # The leader list (2 sources x 2,500) is over the limit; the follower list (one destination each,
    # 16,389 bytes) fits and is written whole, as Kafka formats it.
    followers = ",".join(sorted(f"{p}:{1 + (p + 2) % 3}" for p in range(PARTITIONS)))
    assert len(followers) < 32767
    # (the broker asked may show the controller's configs a moment later: eventually)
    eventually(lambda: ka.configs("topics", topic).get(LREP), "*", "the leader list written as '*'")
    eventually(lambda: ka.configs("topics", topic).get(FREP) == followers, True, "the follower list, whole")
    idle(ka)
    v = cli(kc.bootstrap, "verify", "--reassignment-json-file", move, cwd=tmp_path)
    assert v.returncode == 0, v.stdout + v.stderr
    eventually(lambda: ka.configs("topics", topic), {}, "no throttle key left on the topic")
    eventually(
        lambda: {(topic, p): reps for p, (reps, _, _) in ka.partitions(topic).items()},
        targets,
        "replicas as planned",
        timeout=60,
    )
