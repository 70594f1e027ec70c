"""Reading the cluster state from ZooKeeper, pipelined: a few waves of parallel requests, not one round trip
per znode.

Wave 1: the lists (/brokers/ids, /brokers/topics, /admin/delete_topics) and /admin/reassign_partitions.
Wave 2: every broker registration and every topic znode.
Wave 3 (partition_state=True): every partition's state znode (leader, ISR).

Each wave goes out as ZooKeeper multiRead requests (OpCode 22, ZooKeeper 3.6 and later; the test cluster
runs the 3.8.4 that Kafka 3.9 ships) of `batch` reads each, `window` of them in flight on kazoo's connection: per-request overhead in
kazoo (a thread hand-off, a select, an event) is paid once per few hundred znodes, not per znode. A server
that does not understand multiRead gets plain async getData/getChildren requests, pipelined the same way.
The session answers in order, so the pipe stays full while memory stays bounded. Every answer waits at
most the session's request deadline; a read that meets a dropped connection is made again by the session
(`ZkSession.reading`), since reads are idempotent.
"""

from __future__ import annotations

import contextlib
import re
import struct
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reassign_cli.backends.zookeeper.session import ZkSession
from reassign_cli.core.model import Broker, ClusterState, Topic, TopicPartition
from reassign_cli.core.znodes import (
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
    reassignment_problem,
    topic_path,
)
from reassign_cli.errors import OperationalError

DEFAULT_BATCH = 500  # reads per multiRead request
DEFAULT_WINDOW = 8  # multiRead requests in flight

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")

# A request: ("get" | "children", path). The handler gets the index and the answer, or None for NoNode.
Request = tuple[str, str]


_HEADER = struct.Struct("!iBi")  # jute MultiHeader: type, done, err
_INT = struct.Struct("!i")
_STAT_SIZE = 68  # jute Stat: 6 longs + 5 ints... (czxid mzxid ctime mtime version cversion aversion
#                  ephemeralOwner dataLength numChildren pzxid)
_OP = {"get": 4, "children": 8}  # ZooDefs.OpCode getData / getChildren
_ERROR = -1
_NO_NODE = -101
_NO_AUTH = -102


class MultiRead:
    """A ZooKeeper multiRead request (OpCode 22, ZooKeeper >= 3.6): many getData/getChildren in one round
    trip, each answered on its own (a missing znode fails only its own op). Sent through kazoo's
    connection like its own Transaction request; `deserialize` returns one answer per op: bytes or
    list[str], or an int ZooKeeper error code."""

    type = 22
    __slots__ = ("_payload", "n")

    def __init__(self, ops: Sequence[tuple[int, str]]) -> None:
        parts: list[bytes] = []
        for code, path in ops:
            raw = path.encode("utf-8")
            parts.append(_HEADER.pack(code, 0, -1) + _INT.pack(len(raw)) + raw + b"\x00")  # watch=false
        parts.append(_HEADER.pack(-1, 1, -1))
        self._payload = b"".join(parts)
        self.n = len(ops)

    def __repr__(self) -> str:
        return f"MultiRead({self.n} ops)"

    def serialize(self) -> bytes:
        return self._payload

    def deserialize(self, buf: bytes, offset: int) -> list[bytes | list[str] | int | None]:
        out: list[bytes | list[str] | int | None] = []
        unpack_header, unpack_int = _HEADER.unpack_from, _INT.unpack_from
        while True:
            op, done, _err = unpack_header(buf, offset)
            offset += 9
            if done:
                return out
            if op == 4:  # GetDataResponse: buffer, Stat
                (n,) = unpack_int(buf, offset)
                offset += 4
                if n < 0:
                    out.append(None)
                else:
                    out.append(buf[offset : offset + n])
                    offset += n
                offset += _STAT_SIZE
            elif op == 8:  # GetChildrenResponse: vector<ustring>
                (count,) = unpack_int(buf, offset)
                offset += 4
                names: list[str] = []
                for _ in range(max(count, 0)):
                    (n,) = unpack_int(buf, offset)
                    offset += 4
                    names.append(buf[offset : offset + n].decode("utf-8"))
                    offset += n
                out.append(names)
            elif op == _ERROR:  # ErrorResponse: err
                (code,) = unpack_int(buf, offset)
                offset += 4
                out.append(code)
            else:
                raise ValueError(f"unexpected op {op} in a multiRead response")


class _MultiReadUnsupported(Exception):
    pass


def fetch(
    session: ZkSession,
    requests: Sequence[Request],
    handle: Callable[[int, Any], None],
    *,
    batch: int = DEFAULT_BATCH,
    window: int = DEFAULT_WINDOW,
) -> None:
    """Answer `requests`, calling handle(i, answer) in request order.

    answer: bytes (data) for "get", list[str] for "children", None when the znode does not exist.
    Requests go `batch` per multiRead with `window` multiReads in flight; a server without multiRead
    (ZooKeeper < 3.6) gets single requests, `window * batch` in flight. ZooKeeper errors other than
    NoNode become one-line OperationalErrors naming the path (Disconnected for a dropped connection).
    """
    if not requests:
        return
    if batch > 1 and hasattr(session.client, "_call"):
        try:
            _fetch_multi(session, requests, handle, batch=batch, window=window)
            return
        except _MultiReadUnsupported:
            pass
    _fetch_single(session, requests, handle, window=window * max(batch, 1))


def _fetch_multi(
    session: ZkSession,
    requests: Sequence[Request],
    handle: Callable[[int, Any], None],
    *,
    batch: int,
    window: int,
) -> None:
    from kazoo.exceptions import BadArgumentsError, KazooException, UnimplementedError

    # What a server answers to an operation it does not know (ZooKeeper < 3.6 and multiRead).
    _UNSUPPORTED = (UnimplementedError, BadArgumentsError)
    client = session.client
    prefix = session.chroot
    inflight: deque[tuple[int, int, Any]] = deque()
    n = len(requests)
    sent = 0
    first = True
    while sent < n or inflight:
        while sent < n and len(inflight) < window:
            chunk = requests[sent : sent + batch]
            ar = client.handler.async_result()
            client._call(MultiRead([(_OP[kind], prefix + path) for kind, path in chunk]), ar)
            inflight.append((sent, len(chunk), ar))
            sent += len(chunk)
        start, count, ar = inflight.popleft()
        try:
            answers = session.answer(ar, f"a read of {count} znodes")
        except (KazooException, ValueError) as e:
            if first and isinstance(e, _UNSUPPORTED):
                # Not understood (ZooKeeper < 3.6): drain what is in flight, then fall back.
                for _, _, other in inflight:
                    with contextlib.suppress(Exception):
                        session.answer(other, "a read")
                raise _MultiReadUnsupported from e
            raise session.failed("reading from ZooKeeper", e) from None
        first = False
        if len(answers) != count:
            raise OperationalError(f"ZooKeeper answered {len(answers)} of {count} reads in a multiRead")
        for j, answer in enumerate(answers):
            i = start + j
            if type(answer) is int:
                _allow_no_node(session, requests[i][1], answer)
                answer = None
            handle(i, answer)


def _allow_no_node(session: ZkSession, path: str, code: int) -> None:
    """An error code in a multiRead answer: NoNode is an absent znode; any other fails, naming the path."""
    if code == _NO_NODE:
        return
    if code == _NO_AUTH:
        raise OperationalError(f"ZooKeeper denied read access to {path}{session.where()}")
    raise OperationalError(f"reading {path} from ZooKeeper failed: error code {code}")


def _fetch_single(
    session: ZkSession,
    requests: Sequence[Request],
    handle: Callable[[int, Any], None],
    *,
    window: int,
) -> None:
    from kazoo.exceptions import KazooException, NoAuthError, NoNodeError

    get_async, children_async = session.client.get_async, session.client.get_children_async
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
            answer = session.answer(ar, f"a read of {path}")
        except NoNodeError:
            handle(i, None)
            continue
        except NoAuthError:
            raise OperationalError(f"ZooKeeper denied read access to {path}{session.where()}") from None
        except KazooException as e:
            raise session.failed(f"reading {path} from ZooKeeper", e) from None
        handle(i, answer[0] if is_get else answer)


def legal_topic_name(name: str) -> bool:
    """Kafka's topic name rule (1-249 of [a-zA-Z0-9._-], not "." or ".."); others cannot exist."""
    return name not in (".", "..") and _LEGAL_TOPIC.fullmatch(name) is not None


def _trigger(data: bytes | None) -> tuple[dict[TopicPartition, list[int]] | None, str | None]:
    """The trigger's entries (None: no znode) and why the controller cannot use it (None: it can)."""
    if data is None:
        return None, None
    problem = reassignment_problem(data)
    try:
        return decode_reassignment(data), problem
    except ZnodeFormatError:
        # The controller ignores such a znode too; it still exists and blocks new reassignments.
        return {}, problem


@dataclass(frozen=True, slots=True)
class _Reads:
    """How one read_state pipelines its requests."""

    batch: int
    window: int


def read_state(
    session: ZkSession,
    *,
    topics: Iterable[str] | None = None,
    partition_state: bool = False,
    batch: int = DEFAULT_BATCH,
    window: int = DEFAULT_WINDOW,
    retry_for: float | None = None,
) -> ClusterState:
    """Read brokers, topics (all, or only those named), deletions and the running reassignment.

    A named topic that does not exist is absent from `state.topics`. With partition_state=True each
    topic also gets leader and ISR per partition (a partition without a state znode gets neither).
    Reads are idempotent: a connection dropped on the way (ZooKeeper restarted, a leader change) is waited
    out and the whole read made again, for up to `retry_for` seconds (default: the session's read_retry).
    """
    wanted = None if topics is None else sorted({t for t in topics if legal_topic_name(t)})
    reads = _Reads(batch, window)
    return session.reading(lambda: _read_once(session, wanted, partition_state, reads), retry_for)


def _read_once(
    session: ZkSession, wanted: list[str] | None, partition_state: bool, reads: _Reads
) -> ClusterState:
    ids_children, deleting_children, reassign_data, all_topics = _wave1(session, wanted is None, reads)
    if ids_children is None:
        raise OperationalError(
            f"ZooKeeper has no {BROKER_IDS}{session.where()}: this is not a Kafka cluster's ZooKeeper root",
            hint="Use the same chroot as the brokers' zookeeper.connect.",
        )
    broker_ids = sorted(int(c) for c in ids_children if c.isdigit())
    topic_names = wanted if wanted is not None else sorted(all_topics or [])
    reassignment, trigger_problem = _trigger(reassign_data)
    brokers, topic_map = _wave2(session, broker_ids, topic_names, reads)
    if partition_state:
        _wave3(session, [t for name in topic_names if (t := topic_map.get(name))], reads)
    return ClusterState(
        brokers=brokers,  # already sorted: requested in id order, answered in order
        topics=topic_map,
        deleting=frozenset(deleting_children or []),
        reassignment=reassignment,
        trigger_problem=trigger_problem,
    )


def _wave1(session: ZkSession, all_topics: bool, reads: _Reads) -> list[Any]:
    """The lists (/brokers/ids, /admin/delete_topics, /brokers/topics when every topic is wanted) and the
    trigger znode."""
    wave: list[Request] = [
        ("children", BROKER_IDS),
        ("children", DELETE_TOPICS),
        ("get", REASSIGN_PARTITIONS),
    ]
    if all_topics:
        wave.append(("children", BROKER_TOPICS))
    answers: list[Any] = [None] * 4

    def keep(i: int, answer: Any) -> None:
        answers[i] = answer

    fetch(session, wave, keep, batch=reads.batch, window=reads.window)
    return answers


def _wave2(
    session: ZkSession, broker_ids: list[int], topic_names: list[str], reads: _Reads
) -> tuple[list[Broker], dict[str, Topic]]:
    """Every broker registration and every topic znode."""
    nb = len(broker_ids)
    wave: list[Request] = [("get", broker_path(b)) for b in broker_ids]
    wave += [("get", topic_path(t)) for t in topic_names]
    brokers: list[Broker] = []
    topic_map: dict[str, Topic] = {}

    def on_answer(i: int, data: Any) -> None:
        if data is None:
            return  # a broker that went down meanwhile, or a topic that does not exist
        if i < nb:
            brokers.append(decode_broker(broker_ids[i], data))
        else:
            name = topic_names[i - nb]
            topic_map[name] = decode_topic(name, data)

    # Topic znodes can be large (~20 bytes per partition): smaller multiReads keep each answer a few MB.
    fetch(session, wave, on_answer, batch=max(1, reads.batch // 5), window=reads.window)
    return brokers, topic_map


def _wave3(session: ZkSession, topics: list[Topic], reads: _Reads) -> None:
    """Every partition's state znode (leader, ISR), set on its topic."""
    tps = [(t, p) for t in topics for p in sorted(t.replicas)]
    wave: list[Request] = [("get", partition_state_path(t.name, p)) for t, p in tps]

    def on_answer(i: int, data: Any) -> None:
        if data is None:
            return
        t, p = tps[i]
        st = decode_partition_state(t.name, p, data)
        t.leader[p] = st.leader
        t.isr[p] = st.isr

    fetch(session, wave, on_answer, batch=reads.batch, window=reads.window)
