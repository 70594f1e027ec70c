"""`generate --engine spark`: the per-topic planning of plan.assign_topics distributed over PySpark.

pyspark is imported only inside the functions of this module that need it, so `--engine local` never
pays for it. The executors need only numpy and orjson: the reassign_cli package itself is zipped and
shipped with the job (SparkContext.addPyFile), so a stock Spark cluster works without our package
installed on its workers.

Two ways in, both byte-identical to the local engine:

* The driver knows the topic specs (a snapshot document or ZooKeeper, read by generate.py): topics are
  sorted by name and cut into contiguous batches of roughly equal partition counts (a range
  partitioning, so concatenating the batches in order gives Kafka's sorted order). Each Spark partition
  holds one batch; its task runs plan.assign_topics + model.format_partition_entries and returns (or
  writes as a part file) one comma-joined slice of the "partitions" array (`proposed_json`,
  `Engine.proposed`).
* A JSON-lines snapshot (snapshot_lines): the driver reads its header line only; the executors read the
  file with textFile, each its own byte range, and do everything else in two jobs (split_plan): a scan
  that returns only the first problems and counts (every error is raised before anything is written)
  and keeps the selected topics as compact arrays in Spark's cache, then the plan over that cache,
  which writes both documents' slices (`Engine.scan`, `Engine.plan`).

A topic's plan depends only on (seed, topic, brokers, partition count, RF), so the result is
byte-identical to the local engine's whatever the batching or the splits.

The balanced strategy plans every partition at once, so its plan is made on the driver by the local
engine's code; Spark works around it: the scan also counts the unselected topics per broker, the
driver collects the selected topics' packed arrays (`Engine.selected`), and the executors format the
current document from their cache (`Engine.current`) and the plan's pieces (`Engine.format_plan`).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import gc
import hashlib
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from reassign_cli.errors import OperationalError, ReassignError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from reassign_cli.core.model import Broker, Topic
    from reassign_cli.planning.balanced.planner import Balanced
    from reassign_cli.planning.plan import PlanStats, TopicSpec
    from reassign_cli.spark.split import Selection, SplitScan, SplitTopics

DEFAULT_MASTER = "local[*]"
INSTALL_HINT = "pip install 'reassign-cli[spark]'"
# Set to 1/true/yes to keep Spark's web UI (port 4040 and up) on while the job runs.
UI_ENV = "KAFKA_REASSIGN_SPARK_UI"
# Seconds to wait for a first executor on a cluster master before giving up (instead of hanging forever
# when the master is unreachable or has no free worker).
EXECUTOR_TIMEOUT_ENV = "KAFKA_REASSIGN_SPARK_EXECUTOR_TIMEOUT"
DEFAULT_EXECUTOR_TIMEOUT = 120.0
# A batch (one Spark partition, one task) holds about this many Kafka partitions: ~15 MB of JSON.
PARTITIONS_PER_BATCH = 250_000
# A JSON-lines snapshot is read in splits of at most this many bytes (~400k Kafka partitions; Hadoop's
# block size for local files), and in at least two splits per core.
SPLIT_BYTES = 32 << 20
# Kafka partitions of a plan made on the driver formatted at once by an executor (as generate's chunks).
FORMAT_PARTITIONS = 100_000
# Characters that Hadoop's path handling cannot take in the path of a file to read: "," separates paths,
# ":" is taken for a URI scheme. Glob characters are escaped (_hadoop_path).
UNREADABLE_PATH_CHARS = ",:"

_SpecTuple = tuple[str, int, int]


# ---------------------------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------------------------


def proposed_json(
    specs: Sequence[TopicSpec],
    brokers: Sequence[Broker],
    seed: int,
    *,
    master: str = DEFAULT_MASTER,
    verbose: bool = False,
    out_path: str | None = None,
) -> str | None:
    """The proposed reassignment JSON, computed on Spark.

    Returns the text, byte-identical to model.format_reassignment_json(plan.assign_topics(specs, brokers,
    seed)); or, with out_path, writes that text there (no trailing newline) and returns None. In that
    mode the executors write their slices as part files next to out_path (which must therefore be on a
    filesystem the executors share with the driver) and the driver streams them into the file in order,
    so the plan is never held in memory as a whole.
    """
    ordered: list[_SpecTuple] = sorted(
        ((s.name, int(s.n_partitions), int(s.replication_factor)) for s in specs), key=lambda t: t[0]
    )
    broker_list = list(brokers)
    est_bytes = estimate_json_bytes(ordered)
    with spark_context(master, verbose=verbose, collect_bytes=0 if out_path else est_bytes) as sc:
        wait_for_executors(sc)  # before defaultParallelism, which counts the executors' cores
        n_batches = batch_count(sum(t[1] for t in ordered), len(ordered), sc.defaultParallelism)
        batches = split_batches(ordered, n_batches)
        rdd = sc.parallelize(batches, max(1, len(batches)))
        make = functools.partial(_plan_slice, broker_list, seed)
        if out_path is None:
            fn = functools.partial(_format_slices, make)
            results = _run_job(lambda: rdd.mapPartitions(fn).collect())
            return assemble_text(_checked(results))
        out_path = os.path.abspath(out_path)
        parts_dir = tempfile.mkdtemp(prefix=".kafka-reassign-parts-", dir=os.path.dirname(out_path))
        try:
            writer = functools.partial(_write_slices, parts_dir, make)
            results = _run_job(lambda: rdd.mapPartitionsWithIndex(writer).collect())
            assemble_file(out_path, parts_dir, _checked(results))
        finally:
            shutil.rmtree(parts_dir, ignore_errors=True)
        return None


# ---------------------------------------------------------------------------------------------
# The engine of `generate`: a context held open while the driver streams the documents
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def engine(master: str = DEFAULT_MASTER, *, verbose: bool = False) -> Iterator[Engine]:
    """A Spark context for generate (see spark_context) with an executor up; what the jobs cached or
    broadcast is released at the end."""
    with spark_context(master, verbose=verbose) as sc:
        wait_for_executors(sc)
        eng = Engine(sc)
        try:
            yield eng
        finally:
            eng.release()


@dataclasses.dataclass(slots=True)
class LinesPlan:
    """Both documents' entries as slices in topic order (bytes, comma-joined within a slice), and the
    summary statistics when asked for."""

    current: Iterator[bytes]
    proposed: Iterator[bytes]
    stats: PlanStats | None


class Engine:
    """The jobs of generate on one SparkContext. Every method runs its jobs before it returns, so that
    any error is raised before the caller writes anything; the slices it returns are then read from the
    executors' part files in `parts_dir` (a directory they share with the driver), or, without one,
    streamed from the executors one Spark partition at a time (toLocalIterator over a cached result):
    either way the driver never holds more than one slice."""

    def __init__(self, sc: Any) -> None:
        self.sc = sc
        self._cached: list[Any] = []
        self._broadcasts: dict[int, Any] = {}
        self._lines: dict[str, Any] = {}
        self._scanned: dict[tuple[str, int], Any] = {}

    @property
    def executors_here(self) -> bool:
        """Whether the executors run on this host (a local or loopback master): they see our files."""
        return is_loopback_master(str(self.sc.master or ""))

    def release(self) -> None:
        for rdd in self._cached:
            with contextlib.suppress(Exception):
                rdd.unpersist()
        for bc in self._broadcasts.values():
            with contextlib.suppress(Exception):
                bc.destroy()
        self._cached.clear()
        self._broadcasts.clear()

    def proposed(
        self, specs: Sequence[TopicSpec], brokers: Sequence[Broker], seed: int, parts_dir: str | None = None
    ) -> Iterator[bytes | str]:
        """The proposed entries of `specs` (known to the driver), as slices in topic order."""
        ordered = sorted(((s.name, int(s.n_partitions), int(s.replication_factor)) for s in specs), key=_name)
        n_batches = batch_count(sum(t[1] for t in ordered), len(ordered), self.sc.defaultParallelism)
        rdd = self.sc.parallelize(split_batches(ordered, n_batches), max(1, n_batches))
        return self._slices(rdd, functools.partial(_plan_slice, list(brokers), seed), parts_dir)

    def format_plan(self, result: Balanced, parts_dir: str | None = None) -> Iterator[bytes | str]:
        """A plan made on the driver (the balanced strategy), formatted by the executors: cut into pieces
        of whole topics, in order, each formatted by one task. Slices in topic order."""
        total = int(result.starts[-1]) if len(result.names) else 0
        pieces = result.cut(batch_count(total, len(result.names), self.sc.defaultParallelism))
        rdd = self.sc.parallelize(pieces, max(1, len(pieces)))
        return self._slices(rdd, _balanced_slice, parts_dir)

    def _slices(self, rdd: Any, make: Any, parts_dir: str | None) -> Iterator[bytes | str]:
        """`make(item)` for each item of `rdd`, as slices in order: part files written by the executors in
        parts_dir, else streamed from them."""
        if parts_dir is not None:
            writer = functools.partial(_write_slices, parts_dir, make)
            parts = _checked(_run_job(lambda: rdd.mapPartitionsWithIndex(writer).collect()))
            return read_parts([(_part_path(parts_dir, i), size) for i, size in sorted(parts)])
        cached = self._persist(rdd.mapPartitions(functools.partial(_format_slices, make)))
        _checked(_run_job(lambda: cached.filter(_is_error).collect()))
        return _stream(cached.map(_payload))

    def scan(self, path: str, sel: Selection) -> list[SplitScan]:
        """Pass 1 over a JSON-lines snapshot (split_plan.iter_scan): the splits' answers in split order.
        The selected topics it packed stay cached on the executors (disk) for `plan`."""
        fn = functools.partial(_scan_task, self._broadcast(sel))
        cached = self._persist(self._lines_rdd(path).mapPartitionsWithIndex(fn))
        self._scanned[(path, id(sel))] = cached
        scans: list[SplitScan] = _run_job(lambda: cached.filter(_is_scan).map(_payload).collect())
        return sorted(scans, key=lambda s: s.index)

    def plan(
        self, path: str, sel: Selection, seed: int, stats: bool, parts_dir: str | None = None
    ) -> LinesPlan:
        """Pass 2 (split_plan.plan_split) over what `scan` cached: both documents and the statistics, once
        scan found no problem."""
        bc = self._broadcast(sel)
        topics = self._scanned[(path, id(sel))].filter(_is_topics).map(_payload)  # split indexes kept
        if parts_dir is not None:
            fn = functools.partial(_plan_files_task, parts_dir, bc, seed, stats)
            done = sorted(_checked(_run_job(lambda: topics.mapPartitionsWithIndex(fn).collect())), key=_first)
            return LinesPlan(
                read_parts([(_lines_part(parts_dir, "current", i), c) for i, c, _, _ in done]),
                read_parts([(_lines_part(parts_dir, "proposed", i), p) for i, _, p, _ in done]),
                _sum_stats([st for *_, st in done]) if stats else None,
            )
        cached = self._persist(
            topics.mapPartitionsWithIndex(functools.partial(_plan_records_task, bc, seed, stats))
        )
        small = _checked(_run_job(lambda: cached.filter(_is_small).collect()))
        return LinesPlan(
            _stream(cached.filter(_is_current).map(_payload)),
            _stream(cached.filter(_is_proposed).map(_payload)),
            _sum_stats(small) if stats else None,
        )

    def selected(self, path: str, sel: Selection) -> tuple[dict[str, Topic], list[TopicSpec]]:
        """The selected topics `scan` packed, brought to the driver one split at a time, in name order:
        the topics (current replicas and RR, compact) and their specs (the RF override applied)."""
        from reassign_cli.spark import split as split_plan

        return split_plan.join_topics(
            _stream(self._scanned[(path, id(sel))].filter(_is_topics).map(_payload))
        )

    def current(self, path: str, sel: Selection, parts_dir: str | None = None) -> Iterator[bytes]:
        """The current document's entries of the selected topics, formatted by the executors from what
        `scan` cached, as slices in topic order."""
        topics = self._scanned[(path, id(sel))].filter(_is_topics).map(_payload)
        if parts_dir is not None:
            fn = functools.partial(_current_files_task, parts_dir)
            done = sorted(_checked(_run_job(lambda: topics.mapPartitionsWithIndex(fn).collect())))
            return read_parts([(_lines_part(parts_dir, "current", i), size) for i, size in done])
        cached = self._persist(topics.mapPartitions(_current_records_task))
        _run_job(cached.count)  # computed (and cached) before the caller writes anything
        return _stream(cached)

    def _persist(self, rdd: Any) -> Any:
        from pyspark import StorageLevel

        self._cached.append(rdd.persist(StorageLevel.DISK_ONLY))
        return rdd

    def _broadcast(self, sel: Selection) -> Any:
        if id(sel) not in self._broadcasts:
            self._broadcasts[id(sel)] = self.sc.broadcast(sel)
        return self._broadcasts[id(sel)]

    def _lines_rdd(self, path: str) -> Any:
        """The file's lines as bytes (textFile), in splits of at most SPLIT_BYTES, two per core at least.
        One RDD per path, so that both passes see the same splits."""
        if path not in self._lines:
            size = os.path.getsize(path)
            n = max(2 * max(1, self.sc.defaultParallelism), -(-size // SPLIT_BYTES))
            self._lines[path] = self.sc.textFile(hadoop_path(path), n, use_unicode=False)
        return self._lines[path]


def _name(spec: _SpecTuple) -> str:
    return spec[0]


def hadoop_path(path: str) -> str:
    """The local file `path` as Hadoop must be given it: a file: URI, glob characters escaped."""
    return "file://" + re.sub(r"([\\*?\[\]{}])", r"\\\1", os.path.abspath(path))


def readable_by_hadoop(path: str) -> bool:
    return not any(c in os.path.abspath(path) for c in UNREADABLE_PATH_CHARS)


def read_parts(parts: Sequence[tuple[str, int]]) -> Iterator[bytes]:
    """The executors' part files (path, size as the executor wrote it) one by one, empty ones skipped."""
    for path, size in parts:
        if size == 0:
            continue
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        if len(data) != size:
            raise OperationalError(
                f"the Spark executors wrote the plan under {os.path.dirname(path)} but the driver cannot read "
                f"{os.path.basename(path)} there: the output directory must be on a filesystem shared with "
                "the executors"
            )
        yield data


def _stream(rdd: Any) -> Iterator[Any]:
    """The RDD's records on the driver, one Spark partition at a time (the next one fetched meanwhile)."""
    try:
        yield from rdd.toLocalIterator(prefetchPartitions=True)
    except ReassignError:
        raise
    except Exception as e:
        raise _job_failed(e) from None


def _first(t: tuple[Any, ...]) -> Any:
    return t[0]


def _sum_stats(parts: Iterable[PlanStats | None]) -> PlanStats:
    from reassign_cli.planning.plan import PlanStats

    total = PlanStats()
    for st in parts:
        if st is not None:
            total.add(st)
    return total


# ---------------------------------------------------------------------------------------------
# Batching and assembly (plain Python, unit-tested without Spark)
# ---------------------------------------------------------------------------------------------


def estimate_json_bytes(specs: Iterable[_SpecTuple]) -> int:
    """A rough upper bound of the proposed JSON's size (for sizing the driver's memory)."""
    # {"topic":"t","partition":N,"replicas":[a,b],"log_dirs":["any","any"]}, : ~60 fixed + per replica ~13
    return sum(n * (64 + len(name) + 14 * rf) for name, n, rf in specs)


def batch_count(total_partitions: int, n_topics: int, parallelism: int) -> int:
    """At least two batches per core (load balance), ~PARTITIONS_PER_BATCH each, never more than topics."""
    if n_topics == 0:
        return 0
    wanted = max(2 * max(1, parallelism), -(-total_partitions // PARTITIONS_PER_BATCH))
    return max(1, min(n_topics, wanted))


def split_batches(ordered: Sequence[_SpecTuple], n_batches: int) -> list[list[_SpecTuple]]:
    """Cut the sorted topics into at most n_batches contiguous, non-empty runs of similar partition counts."""
    if not ordered or n_batches <= 0:
        return []
    total = sum(t[1] for t in ordered)
    batches: list[list[_SpecTuple]] = []
    current: list[_SpecTuple] = []
    done = 0  # partitions in closed batches plus current
    for spec in ordered:
        current.append(spec)
        done += spec[1]
        # Close the batch once it reaches its share of the cumulative target.
        if len(batches) < n_batches - 1 and done * n_batches >= total * (len(batches) + 1):
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


def _envelope() -> tuple[str, str]:
    """Kafka's document around the entries, taken from model so that the two engines cannot drift."""
    from reassign_cli.core.model import format_reassignment_json

    head, mid, tail = format_reassignment_json({}).partition("[]")
    if not mid:  # pragma: no cover - model changed shape
        raise OperationalError(
            "cannot derive the reassignment JSON envelope from model.format_reassignment_json"
        )
    return head + "[", "]" + tail


def assemble_text(slices: Iterable[str]) -> str:
    head, tail = _envelope()
    return head + ",".join(s for s in slices if s) + tail


def assemble_file(out_path: str, parts_dir: str, parts: Sequence[tuple[int, int]]) -> None:
    """Stream the executors' part files (index, size) into out_path, in index order, atomically."""
    head, tail = _envelope()
    fd, tmp = tempfile.mkstemp(prefix=".kafka-reassign-", suffix=".partial", dir=os.path.dirname(out_path))
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(head.encode())
            first = True
            for index, size in sorted(parts):
                if size == 0:
                    continue
                path = _part_path(parts_dir, index)
                try:
                    actual = os.path.getsize(path)
                except OSError:
                    actual = -1
                if actual != size:
                    raise OperationalError(
                        f"the Spark executors wrote the plan under {parts_dir} but the driver cannot read "
                        f"part {index} there: the output file must be on a filesystem shared with the executors"
                    )
                if not first:
                    out.write(b",")
                first = False
                with open(path, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
            out.write(tail.encode())
        os.replace(tmp, out_path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _part_path(parts_dir: str, index: int) -> str:
    return os.path.join(parts_dir, f"part-{index:05d}.json")


# ---------------------------------------------------------------------------------------------
# What runs on the executors (module-level, so cloudpickle ships them by reference to the zip)
# ---------------------------------------------------------------------------------------------


def _plan_slice(brokers: Sequence[Broker], seed: int, batch: Sequence[_SpecTuple]) -> str:
    from reassign_cli.core import model
    from reassign_cli.planning import plan

    specs = [plan.TopicSpec(name, n, rf) for name, n, rf in batch]
    return model.format_partition_entries(plan.assign_topics(specs, brokers, seed))


def _balanced_slice(piece: Balanced) -> str:
    """A piece of a plan made on the driver, formatted in chunks as the local engine formats them."""
    from reassign_cli.core import model

    with _gc_paused():
        return ",".join(t for t in map(model.format_partition_entries, piece.chunks(FORMAT_PARTITIONS)) if t)


def _format_slices(make: Any, batches: Iterable[Any]) -> list[tuple[Any, ...]]:
    """("ok", text) per batch, or one ("err", class name, message) for an error of ours."""
    try:
        return [("ok", make(b)) for b in batches]
    except ReassignError as e:
        return [("err", type(e).__name__, str(e), e.hint)]


def _write_slices(parts_dir: str, make: Any, index: int, batches: Iterable[Any]) -> list[tuple[Any, ...]]:
    """Write this Spark partition's slice to parts_dir; return ("ok", (index, bytes written))."""
    try:
        data = ",".join(t for t in map(make, batches) if t).encode()
    except ReassignError as e:
        return [("err", type(e).__name__, str(e), e.hint)]
    path = _part_path(parts_dir, index)
    tmp = f"{path}.{os.getpid()}.tmp"  # a retried or speculative task never leaves a torn part
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return [("ok", (index, len(data)))]


def _error_record(e: ReassignError) -> tuple[str, str, str, str | None]:
    return ("err", type(e).__name__, str(e), e.hint)


def _is_error(record: tuple[Any, ...]) -> bool:
    return bool(record[0] == "err")


def _is_small(record: tuple[Any, ...]) -> bool:
    return bool(record[0] in ("err", "ok"))


def _is_current(record: tuple[Any, ...]) -> bool:
    return bool(record[0] == "current")


def _is_proposed(record: tuple[Any, ...]) -> bool:
    return bool(record[0] == "proposed")


def _payload(record: tuple[Any, ...]) -> Any:
    return record[1]


def _lines_part(parts_dir: str, kind: str, index: int) -> str:
    return os.path.join(parts_dir, f"{kind}-{index:05d}.json")


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for one of our tasks, as it was again after it. A task builds and
    drops millions of acyclic containers, which the collector would traverse over and over (60 % more
    CPU, measured); a PySpark worker process runs one task at a time, so nothing else is affected."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _scan_task(sel: Any, index: int, records: Iterable[bytes]) -> Iterator[tuple[str, Any]]:
    """("topics", SplitTopics) per chunk (cached for the plan), then ("scan", SplitScan)."""
    from reassign_cli.spark import split as split_plan

    with _gc_paused():
        for item in split_plan.iter_scan(index, records, sel.value):
            yield ("scan" if isinstance(item, split_plan.SplitScan) else "topics", item)


def _is_scan(record: tuple[Any, ...]) -> bool:
    return bool(record[0] == "scan")


def _is_topics(record: tuple[Any, ...]) -> bool:
    return bool(record[0] == "topics")


def _plan_files_task(
    parts_dir: str, sel: Any, seed: int, stats: bool, index: int, batches: Iterable[SplitTopics]
) -> list[tuple[Any, ...]]:
    """Both documents' slices of this split written to parts_dir; ("ok", (index, current bytes, proposed
    bytes, statistics))."""
    from reassign_cli.planning import plan
    from reassign_cli.spark import split as split_plan

    paths = (_lines_part(parts_dir, "current", index), _lines_part(parts_dir, "proposed", index))
    tmps = [f"{p}.{os.getpid()}.tmp" for p in paths]  # a retried or speculative task never leaves a torn part
    sizes = [0, 0]
    total = plan.PlanStats() if stats else None
    try:
        with _gc_paused(), open(tmps[0], "wb") as cur, open(tmps[1], "wb") as prop:
            for piece in split_plan.plan_split(batches, sel.value, seed, stats):
                sizes[0] += _append(cur, piece.current, sizes[0])
                sizes[1] += _append(prop, piece.proposed, sizes[1])
                if total is not None and piece.stats is not None:
                    total.add(piece.stats)
    except ReassignError as e:
        for tmp in tmps:
            os.unlink(tmp)
        return [_error_record(e)]
    for tmp, path in zip(tmps, paths, strict=True):
        os.replace(tmp, path)
    return [("ok", (index, sizes[0], sizes[1], total))]


def _current_files_task(parts_dir: str, index: int, batches: Iterable[SplitTopics]) -> list[tuple[Any, ...]]:
    """This split's current entries written to parts_dir; [(index, bytes written)]."""
    from reassign_cli.spark import split as split_plan

    path = _lines_part(parts_dir, "current", index)
    tmp = f"{path}.{os.getpid()}.tmp"  # a retried or speculative task never leaves a torn part
    size = 0
    with _gc_paused(), open(tmp, "wb") as f:
        for text in split_plan.current_split(batches):
            size += _append(f, text, size)
    os.replace(tmp, path)
    return [("ok", (index, size))]


def _current_records_task(batches: Iterable[SplitTopics]) -> list[bytes]:
    """This split's current entries as one record (comma-joined)."""
    from reassign_cli.spark import split as split_plan

    with _gc_paused():
        return [",".join(t for t in split_plan.current_split(batches) if t).encode()]


def _append(f: Any, text: str, written: int) -> int:
    """Write a non-empty slice after those already written (comma-separated); the bytes written."""
    if not text:
        return 0
    data = text.encode()
    if written:
        f.write(b",")
    f.write(data)
    return len(data) + (1 if written else 0)


def _plan_records_task(
    sel: Any, seed: int, stats: bool, index: int, batches: Iterable[SplitTopics]
) -> list[Any]:
    """This split's slices as records ("current", bytes), ("proposed", bytes), and ("ok", statistics)."""
    from reassign_cli.planning import plan
    from reassign_cli.spark import split as split_plan

    current: list[str] = []
    proposed: list[str] = []
    total = plan.PlanStats() if stats else None
    try:
        with _gc_paused():
            for piece in split_plan.plan_split(batches, sel.value, seed, stats):
                current += [piece.current] if piece.current else []
                proposed += [piece.proposed] if piece.proposed else []
                if total is not None and piece.stats is not None:
                    total.add(piece.stats)
    except ReassignError as e:
        return [_error_record(e)]
    return [("ok", total), ("current", ",".join(current).encode()), ("proposed", ",".join(proposed).encode())]


def _checked(results: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Re-raise an executor-side error as the same reassign_cli.errors class the local engine raises."""
    from reassign_cli import errors

    out = []
    for r in results:
        if r[0] == "err":
            cls = getattr(errors, r[1], None)
            if not (isinstance(cls, type) and issubclass(cls, ReassignError)):
                cls = ReassignError
            raise cls(r[2], hint=r[3])
        out.append(r[1])
    return out


# ---------------------------------------------------------------------------------------------
# The Spark session: prerequisites, environment, logging, code shipping, cleanup
# ---------------------------------------------------------------------------------------------


def require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise UsageError(f"--engine spark needs the spark extra: {INSTALL_HINT}") from None


def java_executable() -> str:
    """The java that spark-submit will run (JAVA_HOME first, like bin/spark-class), or UsageError."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if os.access(java, os.X_OK):
            return java
        raise UsageError(f"--engine spark needs Java 17 or newer: JAVA_HOME={java_home} has no bin/java")
    found = shutil.which("java")
    if not found:
        raise UsageError("--engine spark needs Java 17 or newer: no java on PATH and JAVA_HOME is not set")
    return found


def check_java_version(java: str, minimum: int = 17) -> None:
    try:
        res = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"--engine spark needs Java {minimum} or newer: cannot run {java}: {e}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', res.stderr + res.stdout)
    if not m:
        return  # unknown format: let Spark try
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_392"
        major = int(m.group(2))
    if major < minimum:
        raise UsageError(f"--engine spark needs Java {minimum} or newer; {java} is Java {major}")


def is_loopback_master(master: str) -> bool:
    """local[...] masters, and spark:// masters whose every host is a loopback address."""
    m = master.strip().lower()
    if m == "local" or m.startswith(("local[", "local-cluster[")):
        return True
    if not m.startswith("spark://"):
        return False
    hosts = [h.rsplit(":", 1)[0] if not h.endswith("]") else h for h in m[len("spark://") :].split(",")]
    return bool(hosts) and all(_is_loopback_host(h) for h in hosts)


def master_endpoints(master: str) -> list[tuple[str, int]]:
    """(host, port) of each master in a spark://h1:p1,h2:p2 URL; [] for other masters."""
    m = master.strip()
    if not m.lower().startswith("spark://"):
        return []
    out = []
    for hp in m[len("spark://") :].split(","):
        host, _, port = hp.rpartition(":")
        if not host:
            host, port = port, "7077"
        try:
            out.append((host.strip("[]"), int(port)))
        except ValueError:
            raise UsageError(f"invalid Spark master URL {master}: bad port {port!r}") from None
    return out


def check_master_reachable(master: str, timeout: float = 5.0) -> None:
    """Fail fast (before starting a JVM) when no master of a spark:// URL accepts connections; Spark
    itself would retry for about a minute and then stop the context."""
    endpoints = master_endpoints(master)
    errors = []
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as e:
            errors.append(f"{host}:{port}: {e.strerror or e}")
    if errors:
        raise OperationalError(f"cannot connect to Spark master {master}: {'; '.join(errors)}")


def _is_loopback_host(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


LOG4J2_QUIET = """\
# Written by kafka-reassign: Spark stays silent unless -v is given.
rootLogger.level = off
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = off
"""


def package_zip(dest_dir: str) -> str:
    """Zip the reassign_cli package (sources only) into dest_dir; the name carries a content hash."""
    import reassign_cli

    root = os.path.dirname(os.path.abspath(reassign_cli.__file__))
    files: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".py", ".typed")):
                full = os.path.join(dirpath, fn)
                files.append((full, os.path.join("reassign_cli", os.path.relpath(full, root))))
    digest = hashlib.sha1()
    for full, arc in files:
        digest.update(arc.encode())
        with open(full, "rb") as f:
            digest.update(f.read())
    path = os.path.join(dest_dir, f"reassign_cli-{digest.hexdigest()[:12]}.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for full, arc in files:
            z.write(full, arc)
    return path


_shipped: set[tuple[str, str]] = set()  # (application id, zip name) already added to a context
_keep_dir: str | None = None  # zips shipped to contexts we do not own live here until exit


def _ship_package(sc: Any, dest_dir: str) -> None:
    path = package_zip(dest_dir)
    key = (str(sc.applicationId), os.path.basename(path))  # unique per context, unlike id(sc)
    if key not in _shipped:
        sc.addPyFile(path)
        _shipped.add(key)


def _persistent_dir() -> str:
    global _keep_dir
    if _keep_dir is None:
        _keep_dir = tempfile.mkdtemp(prefix="kafka-reassign-spark-")
        atexit.register(shutil.rmtree, _keep_dir, True)
    return _keep_dir


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def driver_memory_mb(collect_bytes: int) -> int:
    """JVM heap for the driver: room for the collected slices (if any) on top of Spark's own needs."""
    return max(1024, 512 + (2 * collect_bytes >> 20))


@contextlib.contextmanager
def spark_context(
    master: str = DEFAULT_MASTER, *, verbose: bool = False, collect_bytes: int = 0
) -> Iterator[Any]:
    """A SparkContext with our package shipped; stopped and cleaned up on exit if we started it.

    An already running context (a notebook, a test session, a `spark-submit` driver) is reused as is
    and left running.
    """
    require_pyspark()
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        _ship_package(active, _persistent_dir())
        yield active
        return

    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM already
    if under_submit:
        SparkContext._ensure_initialized()  # connect first, so SparkConf() sees spark-submit's settings
    else:
        check_java_version(java_executable())
        check_master_reachable(master)
    tmp = tempfile.mkdtemp(prefix="kafka-reassign-spark-")
    sc = None
    # We launch (and at the end stop) the JVM unless spark-submit or an earlier context in this process did.
    own_gateway = SparkContext._gateway is None and not under_submit
    try:
        conf, env = _spark_conf(master, verbose, collect_bytes, tmp, under_submit)
        sc = _started_context(SparkContext, conf, env, verbose, tmp)
        if under_submit and not verbose:
            sc.setLogLevel("OFF")  # spark-submit configured log4j before us: quiet it from here on
        _ship_package(sc, tmp)
        yield sc
    finally:
        if sc is not None:
            with contextlib.suppress(Exception):
                sc.stop()
        if own_gateway:
            _shutdown_gateway(SparkContext)
        shutil.rmtree(tmp, ignore_errors=True)


def _spark_conf(
    master: str, verbose: bool, collect_bytes: int, tmp: str, under_submit: bool
) -> tuple[Any, dict[str, str]]:
    """Our SparkConf, and the environment variables to set while the context starts."""
    from pyspark import SparkConf

    env = {"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON") or sys.executable}
    conf = SparkConf().setAppName("kafka-reassign generate")
    if not (under_submit and master == DEFAULT_MASTER):  # spark-submit's --master wins over the default
        conf.setMaster(master)
    conf.set("spark.ui.enabled", "true" if _truthy(os.environ.get(UI_ENV)) else "false")
    conf.set("spark.ui.showConsoleProgress", "true" if verbose else "false")
    conf.set("spark.driver.maxResultSize", "0")
    if collect_bytes:
        conf.set("spark.driver.memory", f"{driver_memory_mb(collect_bytes)}m")
    # No /tmp/hsperfdata_<user>; the JVM's own temp files (spark-*, native libs) in our temp dir.
    java_opts = ["-XX:-UsePerfData", f"-Djava.io.tmpdir={tmp}"]
    if not verbose:
        log4j = os.path.join(tmp, "log4j2.properties")
        with open(log4j, "w") as f:
            f.write(LOG4J2_QUIET)
        java_opts.append(f"-Dlog4j2.configurationFile=file:{log4j}")
    conf.set("spark.driver.extraJavaOptions", " ".join(java_opts))
    if is_loopback_master(_effective_master(conf, master)):
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        conf.set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
        if not os.environ.get("SPARK_LOCAL_DIRS"):  # blockmgr-*/spark-* scratch: ours, removed with tmp
            env["SPARK_LOCAL_DIRS"] = os.path.join(tmp, "local")
            os.mkdir(env["SPARK_LOCAL_DIRS"])
    return conf, env


def _effective_master(conf: Any, master: str) -> str:
    return str(conf.get("spark.master", master) or master)


def _started_context(spark_context_cls: Any, conf: Any, env: dict[str, str], verbose: bool, tmp: str) -> Any:
    with _environ(env):
        try:
            return _start_context(spark_context_cls, conf, verbose, tmp)
        except ReassignError:
            raise
        except Exception as e:
            raise OperationalError(
                f"cannot start Spark (master {_effective_master(conf, '')}): {_one_line(e)}",
                hint=None if verbose else "Run with -v to see Spark's own logs.",
            ) from None


def _shutdown_gateway(spark_context_cls: Any) -> None:
    """Stop the JVM we launched and wait for it: its memory is freed before the CLI goes on, its
    shutdown hooks have removed its temp files before we remove our temp dir, and a later context in
    this process starts a fresh JVM (with fresh settings)."""
    gateway = spark_context_cls._gateway
    spark_context_cls._gateway = None
    spark_context_cls._jvm = None
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if proc is None:
        return
    with contextlib.suppress(Exception):
        proc.stdin.close()  # Spark's gateway server exits at end of input
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _start_context(spark_context_cls: Any, conf: Any, verbose: bool, tmp: str) -> Any:
    """Start the JVM ourselves when none runs yet, so that its output never reaches our stdout (where the
    results go): quiet, it goes to a log file in our temp dir (even the lines no log4j setting reaches,
    such as "WARNING: Using incubator modules"); with -v, to our stderr."""
    if spark_context_cls._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        from pyspark.java_gateway import launch_gateway

        if verbose:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": 2})  # fd 2: the process's real stderr
        else:
            with open(os.path.join(tmp, "jvm.log"), "wb") as log:
                gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        return spark_context_cls(conf=conf, gateway=gateway)
    return spark_context_cls.getOrCreate(conf)


def wait_for_executors(sc: Any) -> None:
    """On a cluster master, wait until an executor has registered, or fail with one line.

    Without this, a job on a master that is unreachable or has no free worker waits forever ("Initial
    job has not accepted any resources"). Local masters run tasks in the driver, and with dynamic
    allocation executors are only requested once a job is pending: neither is checked.
    """
    master = sc.master or ""
    conf = sc.getConf()
    if master.startswith("local") or conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return
    raw = os.environ.get(EXECUTOR_TIMEOUT_ENV)
    try:
        timeout = float(raw) if raw else DEFAULT_EXECUTOR_TIMEOUT
    except ValueError:
        raise UsageError(f"{EXECUTOR_TIMEOUT_ENV} must be a number of seconds, not {raw!r}") from None
    deadline = time.monotonic() + timeout
    while True:
        try:
            jsc = sc._jsc.sc()
            stopped = bool(jsc.isStopped())
            # block managers known to the driver: the driver's own plus one per executor
            if not stopped and jsc.getExecutorMemoryStatus().size() > 1:
                return
        except Exception:
            stopped = True
        if stopped:  # e.g. the master rejected or dropped the application
            raise OperationalError(
                f"the Spark context stopped before any executor registered (master {master})",
                hint="Run with -v to see Spark's own logs.",
            )
        if time.monotonic() >= deadline:
            raise OperationalError(
                f"no Spark executor registered within {timeout:g}s: master {master} is unreachable or has "
                "no worker with free cores and memory for this application",
                hint=f"Check the master's UI; {EXECUTOR_TIMEOUT_ENV} sets the wait (seconds).",
            )
        time.sleep(0.2)


def _run_job(job: Any) -> Any:
    try:
        return job()
    except ReassignError:
        raise
    except Exception as e:
        raise _job_failed(e) from None


def _job_failed(e: BaseException) -> OperationalError:
    return OperationalError(
        f"the Spark job failed: {_one_line(e)}",
        hint="The Spark workers need Python with numpy and orjson (see PYSPARK_PYTHON); "
        "run with -v to see Spark's own logs.",
    )


_PY_ERROR = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit)): (.+)$")


def _one_line(e: BaseException) -> str:
    """The most telling line of a Spark/py4j error: the last Python exception line inside it (Python
    exception names are unqualified, Java's are not), else its first line."""
    text = str(e)
    python_side = [
        f"{m.group(1)}: {m.group(2).strip()}"
        for m in map(_PY_ERROR.match, text.splitlines())
        if m and "." not in m.group(1) and m.group(1) != "Py4JJavaError"
    ]
    if python_side:
        return python_side[-1]
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(e).__name__)
    return first[:300]
