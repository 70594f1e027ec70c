"""What a clear prints (issue 30 item 2): Kafka's "Clearing ..." lines name only what was really cleared, and
each throttle kept comes with why and the kafka-configs command that removes it. Expected lines written by
hand; the command is Kafka's kafka-configs syntax (--entity-type/--entity-name/--alter/--delete-config)."""

from __future__ import annotations

from reassign_cli.backends.protocol import ClearResult
from reassign_cli.render import progress
from reassign_cli.render.progress import cleared_json, clearing_lines, kept_lines

LR, FR = "leader.replication.throttled.rate", "follower.replication.throttled.rate"


def test_nothing_of_ours_found_prints_no_clearing_line() -> None:
    # Kafka's entities (the registered brokers, the plan's topic) but an empty record: nothing was cleared.
    result = ClearResult([1, 2, 3], ["t"])
    assert clearing_lines(result) == ["No throttles set by this tool were found: nothing cleared."]
    assert cleared_json(result) == {"brokers": [], "topics": []}


def test_the_clearing_lines_name_what_was_restored() -> None:
    result = ClearResult(
        [1, 2, 3], ["t", "u"], recorded_brokers=[1, 2, 3], recorded_topics=["t"], pending=[3]
    )
    assert clearing_lines(result) == [
        "Clearing broker-level throttles on brokers 1,2",
        "Clearing topic-level throttles on topic t",
    ]
    only_topics = ClearResult([1], ["t"], recorded_topics=["t"])
    assert clearing_lines(only_topics) == ["Clearing topic-level throttles on topic t"]


def test_a_kept_throttle_comes_with_why_and_its_command() -> None:
    progress.CONFIGS_CONNECTION = lambda: [
        "--bootstrap-server",
        "k1:9092",
        "--command-config",
        "my client.properties",
    ]
    try:
        result = ClearResult(
            [1],
            ["t"],
            kept_keys={
                ("brokers", "1"): {LR: "20000", FR: "20000"},
                ("topics", "t"): {"leader.replication.throttled.replicas": "*"},
            },
            record_name="ZooKeeper",
        )
        lines = kept_lines(result)
    finally:
        progress.CONFIGS_CONNECTION = lambda: ["--bootstrap-server", "HOST:PORT"]
    assert lines == [
        "Kept throttles that are not in this tool's record of those it set through ZooKeeper: set by hand, by "
        "Kafka's own tools, or by kafka-reassign through the other connection (--zookeeper / --bootstrap-server "
        "alone), whose record this one does not read. Each is left in place:",
        f"  broker 1: {LR}=20000, {FR}=20000; to remove: kafka-configs --bootstrap-server k1:9092 "
        f"--command-config 'my client.properties' --entity-type brokers --entity-name 1 --alter "
        f"--delete-config {LR},{FR}",
        "  topic t: leader.replication.throttled.replicas=*; to remove: kafka-configs --bootstrap-server k1:9092 "
        "--command-config 'my client.properties' --entity-type topics --entity-name t --alter "
        "--delete-config leader.replication.throttled.replicas",
    ]
