"""The prior-values record in the cluster, for the admin-API backend: the topic `__reassign_cli_throttles`
(core/record_log.py has the format and the replay). Reads replay the log; writes are read-modify-writes that
check their own message counted, and compute again when it did not (another run wrote first).

Producer and consumer are made on first use with the same connection settings as the admin client, and
closed by `close`. The replay is kept between calls: a later read only consumes what was added since.
"""

from __future__ import annotations

import contextlib
import random
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from reassign_cli.backends.protocol import RecordFn
from reassign_cli.core import record_log
from reassign_cli.core.client_config import AdminOptions
from reassign_cli.core.record_log import Lease, Replay, encode_write, topic_spec, unknown_record
from reassign_cli.errors import OperationalError

MAX_ATTEMPTS = 25
BACKOFF_FIRST, BACKOFF_MAX = 0.02, 1.0  # seconds: the pause before a write after a lost race, at most
_JITTER = random.SystemRandom()
LeaseFn = Callable[[dict[str, Any], "Lease | None"], "tuple[dict[str, Any], Lease | None] | None"]
POLL_MS = 200
OFFSETS_TRY_MS = 2000  # one try of a ListOffsets lookup (see _offsets)


class RecordLog:
    codec = record_log.RECORD  # the topic and its documents (plan_topic.PlanLog keeps the stored plan)
    what = "the record of prior throttle values"

    def __init__(self, options: AdminOptions, admin: Any) -> None:
        self.options = options
        self.admin = admin
        self.topic = self.codec.topic
        self.replay = Replay(codec=self.codec, record=self.codec.empty())
        self._exists = False
        self._consumer: Any = None
        self._producer: Any = None
        self._start = 0  # the log's start offset, as last read
        # One user of the replay, the consumer and the producer at a time: an execute's setup lease is
        # renewed from a thread of its own (backends/admin/backend.py).
        self._lock = threading.RLock()

    # -- reading ---------------------------------------------------------------------------------
    def exists(self) -> bool:
        if not self._exists:
            from kafka.errors import KafkaError

            try:
                meta = self.admin.describe_topics([self.topic])
            except KafkaError as e:
                raise OperationalError(f"cannot read the metadata of {self.topic}: {e}") from None
            self._exists = any(t.get("error_code") == 0 and t.get("name") == self.topic for t in meta)
        return self._exists

    def read(self) -> dict[str, Any]:
        """The record: the log replayed from where the last read stopped to its current end."""
        with self._lock:
            return self._read()

    def _read(self) -> dict[str, Any]:
        if self.exists():
            self._consume_to_end()
            if not self.replay.known:
                raise OperationalError(
                    unknown_record(self._start, self.topic, self.what), hint=self._unknown_hint()
                )
        return self.codec.load(self.codec.dump(self.replay.record))

    def _unknown_hint(self) -> str:
        return (
            f"Check the throttles by hand (kafka-configs), then delete the topic {self.topic} to start a new "
            "record (docs/kraft.md)."
        )

    def _consume_to_end(self, at_least: int = 0) -> None:
        from kafka import TopicPartition
        from kafka.errors import KafkaError

        tp = TopicPartition(self.topic, 0)
        try:
            consumer = self._consumer_for(tp)
            start, end = self._offsets(consumer, tp)
            self._start = start
            end = max(end, at_least)
            self.replay.start_at(start)
            if self.replay.position >= end:
                return
            consumer.seek(tp, self.replay.position)
            deadline = time.monotonic() + self.options.client_settings()["request_timeout_ms"] / 1000
            while self.replay.position < end:
                if time.monotonic() > deadline:
                    raise OperationalError(
                        f"cannot read {self.topic}: offsets {self.replay.position}-{end - 1} did not arrive in time"
                    )
                for records in consumer.poll(timeout_ms=POLL_MS).values():
                    for r in records:
                        self.replay.feed(r.offset, r.value)
        except KafkaError as e:
            raise OperationalError(f"cannot read {self.topic}: {e}") from None

    def _offsets(self, consumer: Any, tp: Any) -> tuple[int, int]:
        """(first, end) offset of the record's partition. kafka-python 3.0.12 asks the leader its metadata
        names again and again, without refreshing the metadata on NOT_LEADER (the leader moved while its node
        was down), until the timeout: each try is short, and after one that times out the metadata is read
        afresh (found by tests/faults/test_kraft_faults.py::test_3)."""
        from kafka.errors import KafkaTimeoutError

        deadline = time.monotonic() + self.options.client_settings()["request_timeout_ms"] / 1000
        while True:
            try:
                first = consumer.beginning_offsets([tp], OFFSETS_TRY_MS)[tp]
                return first, consumer.end_offsets([tp], OFFSETS_TRY_MS)[tp]
            except KafkaTimeoutError:
                if time.monotonic() >= deadline:
                    raise
                consumer.topics()  # a Metadata request: the partition's leader now

    def _consumer_for(self, tp: Any) -> Any:
        if self._consumer is None:
            from kafka import KafkaConsumer

            self._consumer = KafkaConsumer(
                **self.options.client_settings(),
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            self._consumer.assign([tp])
        return self._consumer

    # -- writing ---------------------------------------------------------------------------------
    def update(self, fn: RecordFn) -> dict[str, Any]:
        """Read-modify-write: `fn` of the record as the log says, appended if it changes the record, until
        the append counts (the lease is carried as found). Returns the record written (or found unchanged)."""
        done = self.transact(lambda record, lease: (fn(record), lease))
        assert done is not None
        return done[0]

    def transact(self, fn: LeaseFn) -> tuple[dict[str, Any], Lease | None] | None:
        """Read-modify-write of the record and its lease: `fn(record, lease)` gives the new pair (or None:
        write nothing, return None; or raises), appended if it changes either, until the append counts:
        when another run wrote first, `fn` is called again on what it wrote."""
        with self._lock:
            return self._transact(fn)

    def _transact(self, fn: LeaseFn) -> tuple[dict[str, Any], Lease | None] | None:
        for attempt in range(MAX_ATTEMPTS):
            if attempt:  # lost a race: a random pause, so that two writers do not race again in lockstep
                time.sleep(_JITTER.uniform(0, min(BACKOFF_FIRST * 2**attempt, BACKOFF_MAX)))
            current = self.read()
            lease = self.replay.lease
            out = fn(self.codec.load(self.codec.dump(current)), None if lease is None else dict(lease))
            if out is None:
                return None
            new, new_lease = out
            if self.codec.dump(new) == self.codec.dump(current) and new_lease == lease:
                return new, new_lease
            self.ensure_topic()
            if self._write(new, new_lease):
                self._compact()
                return new, new_lease
        raise OperationalError(f"{self.topic} kept changing under us; gave up after {MAX_ATTEMPTS} attempts")

    def _write(self, record: dict[str, Any], lease: Lease | None, base: int | None = None) -> bool:
        """Append one write (its chunks, then its commit) after what was read (or after `base`: a
        compare-and-set on that offset); whether it counted."""
        return self._append(record, lease, base)[0]

    def _append(
        self, record: dict[str, Any], lease: Lease | None, base: int | None = None
    ) -> tuple[bool, int]:
        """_write, and the offset of the write's end (as far as the replay got when it is unknown)."""
        write_id = secrets.token_hex(8)
        offset = None
        base = self.replay.last_end if base is None else base
        for message in encode_write(base, record, write_id, lease, codec=self.codec):
            offset = self._produce(message)
        # Replay through our own commit (or, if the send's outcome is unknown, to the end).
        self._consume_to_end(at_least=0 if offset is None else offset + 1)
        return self.replay.outcome.get(
            write_id
        ) is True, self.replay.position - 1 if offset is None else offset

    def _compact(self) -> None:
        """Remove the messages up to the base of the last write that counted (DeleteRecords), once there
        are COMPACT_AFTER of them: whether it or a later write counts never depends on them
        (core/record_log.py).
        Best effort: without the permission (or on a compacted topic) the log keeps growing, as before."""
        cut = self.replay.cut
        if cut - self._start < record_log.COMPACT_AFTER:
            return
        from kafka import TopicPartition
        from kafka.errors import KafkaError

        with contextlib.suppress(KafkaError):
            self.admin.delete_records({TopicPartition(self.topic, 0): cut})
            self._start = cut

    def lease(self) -> Lease | None:
        """The lease as the log says now."""
        with self._lock:
            self._read()
            return None if self.replay.lease is None else dict(self.replay.lease)

    def planned(self, record: dict[str, Any]) -> tuple[list[bytes], bool]:
        """Dry run: the messages a write of `record` would append now, and whether the topic must be made."""
        return encode_write(self.replay.last_end, record, "dry-run", codec=self.codec), not self.exists()

    def ensure_topic(self) -> None:
        """Create the record topic if it does not exist (another run creating it meanwhile is fine)."""
        if self.exists():
            return
        from kafka.errors import KafkaError, TopicAlreadyExistsError

        live = [b for b in self.admin.describe_cluster()["brokers"] if not b.get("is_fenced")]
        rf, configs = topic_spec(len(live))
        try:
            self.admin.create_topics(
                {self.topic: {"num_partitions": 1, "replication_factor": rf, "configs": configs}}
            )
        except TopicAlreadyExistsError:
            pass
        except KafkaError as e:
            raise OperationalError(f"cannot create the topic {self.topic}: {e}") from None
        self._exists = True

    def _produce(self, value: bytes) -> int | None:
        """Append `value` with acks=all; its offset, or None when the send's outcome is unknown."""
        from kafka import KafkaProducer
        from kafka.errors import KafkaError, KafkaTimeoutError

        try:
            if self._producer is None:
                self._producer = KafkaProducer(**self.options.client_settings(), acks="all")
            meta = self._producer.send(self.topic, value=value, partition=0).get()
        except KafkaTimeoutError:
            return None  # maybe written: the replay finds out by the message's id
        except KafkaError as e:
            raise OperationalError(f"cannot write to {self.topic}: {e}") from None
        return int(meta.offset)

    def close(self) -> None:
        for client in (self._producer, self._consumer):
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
        self._producer = self._consumer = None
