"""The window's two diagnoses on the real cluster (execute --max-moves-per-broker through the admin API).

1. The throttle is the limit: one move of 16 MB at --throttle 1000000 copies at about 1 MB/s, the
   throttle's rate; stderr says so, once.
2. The leader's log grows faster than the copy: one move at --throttle 100000 while a producer writes
   300 KB/s into its leader (a fixed count of records at a fixed rate, 60 s at most, into a topic with
   retention.bytes set). stderr names the partition and a --throttle R that would let it finish; running
   `execute --throttle R` on the same plan (only the rates change) lets the move finish while the
   producer is still writing. Every record is consumed afterwards.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from tests.faults.support import Child
from tests.integration.reassign_support import Mover, await_idle, produce

MB = 1_000_000
RECORD = 10_000  # bytes per record of the producer that outgrows the copy
RATE = 30  # records per second: 300 KB/s, three times the throttle
SECONDS = 60  # the producer's whole run: RATE * SECONDS records, 18 MB
LOW = 100_000  # B/s: the throttle the log outgrows
GROWS = re.compile(r"(\S+-0): its leader's log grows at .* --throttle (\d+) would let it finish")


def _paced(cluster: Any, mover: Mover, plan: Any, throttle: int) -> Child:
    return Child(
        "",  # the admin API alone (KAFKA_REASSIGN_ZOOKEEPER empty: not set)
        mover.tmp,
        *("execute", "--reassignment-json-file", plan, "--bootstrap-server", cluster.bootstrap),
        *("--max-moves-per-broker", "1", "--throttle", str(throttle), "--poll-interval", "0.5"),
    )


def test_the_throttle_is_the_limit(cluster: Any, make_topic: Any, consume_all: Any, mover: Mover) -> None:
    topic = make_topic({0: [1]})
    values = produce(cluster.bootstrap, topic, 0, 160, 100_000)  # 16 MB: 16 s at the throttle
    plan = mover.plan("slow.json", {(topic, 0): [3]})
    mover.plans.append((plan, [topic]))
    await_idle(mover.zk)
    child = _paced(cluster, mover, plan, 1_000_000)
    assert child.finish() == 0, child.stderr
    lines = [x for x in child.err if "the throttle is the limit" in x]
    assert len(lines) == 1, child.stderr
    assert lines[0].startswith("Broker 3 receives at ") and "(1000000 B/s)" in lines[0], lines[0]
    print(f"\n{lines[0].strip()}")
    assert "grows at" not in child.stderr  # nothing writes to it: no log outgrows its copy
    assert sorted(consume_all(topic)) == sorted(values)


class Producer(threading.Thread):
    """RATE records of RECORD bytes per second into one partition, RATE * SECONDS records in all (or fewer if
    stopped); acks=all."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.values: list[bytes] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=20)
        try:
            t0 = time.monotonic()
            futures = []
            for i in range(RATE * SECONDS):
                if self.stop.is_set():
                    break
                time.sleep(max(0.0, t0 + i / RATE - time.monotonic()))
                value = f"{self.topic}-{i:08d}-".encode().ljust(RECORD, b"x")
                futures.append(producer.send(self.topic, value=value, partition=0))
                self.values.append(value)
            producer.flush(timeout=60)
            for f in futures:
                f.get(timeout=60)
        except BaseException as e:
            self.error = e
        finally:
            producer.close(timeout=10)


def test_a_log_that_outgrows_its_copy_gets_a_throttle_that_lets_it_finish(
    cluster: Any, make_topic: Any, consume_all: Any, mover: Mover
) -> None:
    topic = make_topic({0: [1]}, configs={"retention.bytes": str(64 * MB)})
    values = produce(cluster.bootstrap, topic, 0, 100, RECORD)  # 1 MB to start with
    plan = mover.plan("grows.json", {(topic, 0): [3]})
    mover.plans.append((plan, [topic]))
    await_idle(mover.zk)
    producer = Producer(cluster.bootstrap, topic)
    producer.start()
    try:
        child = _paced(cluster, mover, plan, LOW)
        child.wait_for_line("grows at", timeout=SECONDS)
        m = next(filter(None, map(GROWS.search, child.err)))
        assert m[1] == f"{topic}-0", m[0]
        need = int(m[2])
        print(f"\n{m[0]}")
        assert need > RATE * RECORD, m[0]  # more than the log grows: the copy can gain on it
        assert producer.is_alive()  # the log still grows
        # the same plan with --throttle R: only the rates of the running move change
        r = mover.execute(
            plan, "--bootstrap-server", cluster.bootstrap, "--zookeeper", "", "--throttle", str(need)
        )
        assert r.returncode == 0, r.stderr
        assert "only its throttle rates are changed" in r.stderr
        assert child.finish(timeout=SECONDS) == 0, child.stderr
        finished_while_writing = producer.is_alive()
        print(f"finished {len(producer.values)} of {RATE * SECONDS} records into the producer's run")
    finally:
        producer.join(timeout=SECONDS + 60)
        producer.stop.set()
    assert producer.error is None, producer.error
    assert finished_while_writing, "the move ended only once the producer stopped"
    assert len(producer.values) == RATE * SECONDS
    assert sorted(consume_all(topic)) == sorted(values + producer.values)
