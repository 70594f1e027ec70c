"""Reading the cluster state from ZooKeeper, pipelined: a few waves of parallel requests, not one round trip
per znode.

Wave 1: the lists (/brokers/ids, /brokers/topics, /admin/delete_topics) and /admin/reassign_partitions.
Wave 2: every broker registration and every topic znode.
Wave 3 (partition_state=True): every partition's state znode (leader, ISR).

Each wave is sent through kazoo's async API with at most `window` requests in flight: the ZooKeeper session
answers in order, so the pipe stays full while memory stays bounded.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from reassign_cli.errors import OperationalError
from reassign_cli.model import Broker, ClusterState, Topic, TopicPartition
from reassign_cli.znodes import (
    BROKER_IDS,
    BROKER_TOPICS,
    DELETE_TOPICS,
    REASSIGN_PARTITIONS,
    ZnodeFormatError,
    broker_path,
    decode_broker,
    decode_partition_state,
    decode_reassignment,
    decode_topic,
    partition_state_path,
    topic_path,
)

DEFAULT_WINDOW = 4000  # requests in flight per wave
DEFAULT_TIMEOUT = 30.0  # seconds to wait for any single answer (they come in order, so this is generous)

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")

# A request: ("get" | "children", path). The handler gets the index and the answer, or None for NoNode.
Request = tuple[str, str]


def _where(client: Any) -> str:
    chroot = getattr(client, "chroot", "") or ""
    return f" (chroot {chroot})" if chroot else ""


def fetch(
    client: Any,
    requests: Sequence[Request],
    handle: Callable[[int, Any], None],
    *,
    window: int = DEFAULT_WINDOW,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Send `requests` with at most `window` in flight, calling handle(i, answer) in request order.

    answer: bytes (data) for "get", list[str] for "children", None when the znode does not exist.
    ZooKeeper errors other than NoNode become one-line OperationalErrors naming the path.
    """
    from kazoo.exceptions import KazooException, NoAuthError, NoNodeError

    timeout_exc = client.handler.timeout_exception
    get_async, children_async = client.get_async, client.get_children_async
    inflight: deque[tuple[int, bool, str, Any]] = deque()
    n = len(requests)
    sent = 0
    while sent < n or inflight:
        while sent < n and len(inflight) < window:
            kind, path = requests[sent]
            ar = get_async(path) if kind == "get" else children_async(path)
            inflight.append((sent, kind == "get", path, ar))
            sent += 1
        i, is_get, path, ar = inflight.popleft()
        try:
            answer = ar.get(timeout=timeout)
        except NoNodeError:
            handle(i, None)
            continue
        except NoAuthError:
            raise OperationalError(f"ZooKeeper denied read access to {path}{_where(client)}") from None
        except timeout_exc:
            raise OperationalError(f"ZooKeeper did not answer a read of {path} within {timeout:g}s") from None
        except KazooException as e:
            raise OperationalError(
                f"reading {path} from ZooKeeper failed: {type(e).__name__} {e}".rstrip()
            ) from None
        handle(i, answer[0] if is_get else answer)


def legal_topic_name(name: str) -> bool:
    """Kafka's topic name rule (1-249 of [a-zA-Z0-9._-], not "." or ".."); others cannot exist."""
    return name not in (".", "..") and _LEGAL_TOPIC.fullmatch(name) is not None


def read_state(
    client: Any,
    *,
    topics: Iterable[str] | None = None,
    partition_state: bool = False,
    window: int = DEFAULT_WINDOW,
    timeout: float = DEFAULT_TIMEOUT,
) -> ClusterState:
    """Read brokers, topics (all, or only those named), deletions and the running reassignment.

    A named topic that does not exist is absent from `state.topics`. With partition_state=True each
    topic also gets leader and ISR per partition (a partition without a state znode gets neither).
    """
    wanted = None if topics is None else sorted({t for t in topics if legal_topic_name(t)})

    # -- wave 1 ----------------------------------------------------------------------------
    wave1: list[Request] = [
        ("children", BROKER_IDS),
        ("children", DELETE_TOPICS),
        ("get", REASSIGN_PARTITIONS),
    ]
    if wanted is None:
        wave1.append(("children", BROKER_TOPICS))
    answers1: list[Any] = [None] * len(wave1)

    def keep(i: int, answer: Any) -> None:
        answers1[i] = answer

    fetch(client, wave1, keep, window=window, timeout=timeout)
    ids_children, deleting_children, reassign_data = answers1[0], answers1[1], answers1[2]
    if ids_children is None:
        raise OperationalError(
            f"ZooKeeper has no {BROKER_IDS}{_where(client)}: this is not a Kafka cluster's ZooKeeper root",
            hint="Use the same chroot as the brokers' zookeeper.connect.",
        )
    broker_ids = sorted(int(c) for c in ids_children if c.isdigit())
    topic_names = wanted if wanted is not None else sorted(answers1[3] or [])
    deleting = frozenset(deleting_children or [])
    reassignment: dict[TopicPartition, list[int]] | None = None
    if reassign_data is not None:
        try:
            reassignment = decode_reassignment(reassign_data)
        except ZnodeFormatError:
            # The controller ignores such a znode too; it still exists and blocks new reassignments.
            reassignment = {}

    # -- wave 2 ----------------------------------------------------------------------------
    nb = len(broker_ids)
    wave2: list[Request] = [("get", broker_path(b)) for b in broker_ids]
    wave2 += [("get", topic_path(t)) for t in topic_names]
    brokers: list[Broker] = []
    topic_map: dict[str, Topic] = {}

    def on_wave2(i: int, data: Any) -> None:
        if data is None:
            return  # a broker that went down meanwhile, or a topic that does not exist
        if i < nb:
            brokers.append(decode_broker(broker_ids[i], data))
        else:
            name = topic_names[i - nb]
            topic_map[name] = decode_topic(name, data)

    fetch(client, wave2, on_wave2, window=window, timeout=timeout)

    # -- wave 3 ----------------------------------------------------------------------------
    if partition_state:
        tps: list[tuple[Topic, int]] = [
            (t, p) for name in topic_names if (t := topic_map.get(name)) for p in sorted(t.replicas)
        ]
        wave3: list[Request] = [("get", partition_state_path(t.name, p)) for t, p in tps]

        def on_wave3(i: int, data: Any) -> None:
            if data is None:
                return
            t, p = tps[i]
            st = decode_partition_state(t.name, p, data)
            t.leader[p] = st.leader
            t.isr[p] = st.isr

        fetch(client, wave3, on_wave3, window=window, timeout=timeout)

    return ClusterState(
        brokers=brokers,  # already sorted: requested in id order, answered in order
        topics=topic_map,
        deleting=deleting,
        reassignment=reassignment,
    )
