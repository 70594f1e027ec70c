"""A separate OS process working on the stored plan in ZooKeeper (backends/zookeeper/stored_plan.py), for
tests/integration/test_stored_plan_zk.py:

    python -m tests.integration.stored_plan_worker race CONNECT SEED ROUNDS CAP OUT
        ROUNDS times: read the plan, end some moving moves, start a random subset of the queued ones that
        keeps at most CAP moving, and compare-and-set once (no retry). Each win appends one JSON line to
        OUT: {"started": [...], "moving": n} (the moves this write started, the moves moving after it).
    python -m tests.integration.stored_plan_worker race-topic BOOTSTRAP SEED ROUNDS CAP OUT
        the same on the topic __reassign_cli_plan of a KRaft cluster (backends/admin/plan_topic.py).
    python -m tests.integration.stored_plan_worker create-stop CONNECT PARTITIONS CHUNK_BYTES STOP_AT
        store a plan of PARTITIONS partitions in chunks of CHUNK_BYTES; before its STOP_AT-th transaction
        print "STOPPED" on stderr and stop itself (SIGSTOP) for the test to kill -9.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

import orjson

from reassign_cli.backends.admin.plan_topic import PlanLog, TopicPlanStore
from reassign_cli.backends.plan_store import PlanStore
from reassign_cli.backends.zookeeper.session import ZkOptions, open_session
from reassign_cli.backends.zookeeper.stored_plan import ZkPlanStore
from reassign_cli.core import pacing as pc
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.model import PlanEntry


def big_plan(partitions: int, topics: int = 100, sized: bool = True) -> tuple[bytes, sp.StoredPlan]:
    """A plan of `partitions` partitions over `topics` topics, rf 3 on brokers 1-6, and its file's bytes."""
    entries = [
        PlanEntry(f"topic-{i % topics:05d}", i // topics, [1 + i % 6, 1 + (i + 1) % 6, 1 + (i + 2) % 6], None)
        for i in range(partitions)
    ]
    doc = {
        "version": 1,
        "partitions": [{"topic": e.topic, "partition": e.partition, "replicas": e.replicas} for e in entries],
    }
    data = orjson.dumps(doc)
    sizes = [1_000_000 + i for i in range(partitions)] if sized else None
    origin = sp.Origin("test-host", "tester", 1_790_000_000.0)
    return data, sp.new_plan(data, entries, pc.Pace(2, None, throttle=50_000_000), origin, sizes)


@contextlib.contextmanager
def topic_store(bootstrap: str) -> Iterator[TopicPlanStore]:
    from kafka import KafkaAdminClient

    options = AdminOptions(bootstrap)
    admin = KafkaAdminClient(**options.client_settings())
    log = PlanLog(options, admin)
    try:
        yield TopicPlanStore(log)
    finally:
        log.close()
        admin.close()


def race(connect: str, seed: int, rounds: int, cap: int, out: str, topic: bool = False) -> None:
    if topic:
        with topic_store(connect) as store:
            rounds_of(store, random.Random(seed), rounds, cap, out)
    else:
        with open_session(ZkOptions(connect)) as session:
            rounds_of(ZkPlanStore(session), random.Random(seed), rounds, cap, out)


def rounds_of(store: PlanStore, rng: random.Random, rounds: int, cap: int, out: str) -> None:
    with open(out, "ab") as f:
        for _ in range(rounds):
            seen = store.read()
            assert seen is not None
            plan = seen.plan
            moving = sorted(plan.started - plan.done)
            ended = rng.sample(moving, rng.randint(0, len(moving)))
            plan = sp.mark_done(plan, ended, time.time())
            queued = [m for m in plan.moves if m not in plan.started]
            room = cap - len(plan.started - plan.done)
            start = rng.sample(queued, min(len(queued), rng.randint(0, max(0, room))))
            plan = sp.mark_started(plan, start, time.time())
            if store.replace(seen, plan) is not None:
                line = {"started": start, "moving": len(plan.started - plan.done)}
                f.write(orjson.dumps(line) + b"\n")
                f.flush()


def check_race(
    store: PlanStore, out: str, cap: int
) -> tuple[list[dict[str, Any]], list[tuple[str, int]], Any]:
    """What racing workers wrote to `out` against what `store` holds after: no move started twice, none lost
    (the stored set is the union of the winners'), never more than `cap` moving. Returns (wins, started,
    the stored plan as read)."""
    with open(out, "rb") as f:
        wins = [orjson.loads(line) for line in f.read().splitlines()]
    started = [tuple(m) for w in wins for m in w["started"]]
    final = store.read()
    assert final is not None
    assert len(started) == len(set(started))  # no move started twice
    assert set(started) == final.plan.started  # none lost: the final set is the union of the winners'
    assert all(w["moving"] <= cap for w in wins)
    return wins, started, final


def create_stop(connect: str, partitions: int, chunk_bytes: int, stop_at: int) -> None:
    _, plan = big_plan(partitions)
    with open_session(ZkOptions(connect)) as session:
        store = ZkPlanStore(session, chunk_bytes)
        commit = store._commit
        count = [0]

        def stopping(*args: Any, **kwargs: Any) -> bool:
            count[0] += 1
            if count[0] == stop_at:
                print("STOPPED", file=sys.stderr, flush=True)
                os.kill(os.getpid(), signal.SIGSTOP)
            return commit(*args, **kwargs)

        store._commit = stopping  # type: ignore[method-assign]
        store.create(plan)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd in ("race", "race-topic"):
        race(args[0], int(args[1]), int(args[2]), int(args[3]), args[4], topic=cmd == "race-topic")
    elif cmd == "create-stop":
        create_stop(args[0], int(args[1]), int(args[2]), int(args[3]))
    else:
        raise SystemExit(f"unknown command {cmd}")
