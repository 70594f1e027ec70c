"""The prior-values record in ZooKeeper, over as many znodes as its size needs.

`/reassign_cli/throttles` (the head) holds a record document (core/throttle.py's format). While the
record is small (under HEAD_MAX bytes: a few dozen topics) the head holds all of it, byte for byte as
`throttle.dump_record` writes it. What does not fit goes into parts, children of the head
(`/reassign_cli/throttles/0000000001`, ...), each a record document of at most PART_MAX bytes. The record
is the union of the head and its parts, key by key.

A part never moves: a change keeps every key where it is, removes keys from the znodes that hold them,
and adds new keys to the head while it has room, else to new parts. So any prefix of a change split over
several transactions is a state whose record is the old one plus some additions (when setting) or minus
some removals (when clearing): no recorded prior can vanish before its key is restored.

The head is the fence: every transaction that changes a part, or a config, also writes the head (its
version moves on), and a read is consistent when the head's version is the same before and after the
parts were read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from reassign_cli.core import throttle as th
from reassign_cli.errors import OperationalError

HEAD = "/reassign_cli/throttles"
HEAD_MAX = 4096  # the head stays small: the trigger's transaction rewrites it (its version moves on)
PART_MAX = 256 * 1024
READ_ATTEMPTS = 25

Key = tuple[str, str, str]  # (entity, name, config key)
Flat = dict[Key, str | None]


def flatten(record: dict[str, Any]) -> Flat:
    out: Flat = {}
    for entity in ("brokers", "topics"):
        for name, keys in record.get(entity, {}).items():
            for k, v in keys.items():
                out[(entity, str(name), k)] = v
    return out


def unflatten(flat: Flat) -> dict[str, Any]:
    rec = th.empty_record()
    for (entity, name, k), v in flat.items():
        rec[entity].setdefault(name, {})[k] = v
    return rec


def part_path(n: int) -> str:
    return f"{HEAD}/{n:010d}"


@dataclass
class Stored:
    """The record as read: the head (None: absent) and its parts, with their versions."""

    head: bytes | None = None
    version: int | None = None
    parts: dict[str, tuple[bytes, int]] = field(default_factory=dict)

    def docs(self) -> dict[str, Flat]:
        """Each znode's keys (the head under HEAD)."""
        out: dict[str, Flat] = {}
        if self.version is not None:
            out[HEAD] = flatten(th.load_record(self.head, HEAD))
        for path, (data, _) in sorted(self.parts.items()):
            out[path] = flatten(th.load_record(data, path))
        return out

    def record(self) -> dict[str, Any]:
        merged: Flat = {}
        for flat in self.docs().values():
            merged.update(flat)
        return unflatten(merged)


def read_stored(
    get: Callable[[str], tuple[bytes | None, int | None]], children: Callable[[str], list[str]]
) -> Stored:
    """A consistent read: the head's version the same before and after its parts were read."""
    for _ in range(READ_ATTEMPTS):
        head, version = get(HEAD)
        if version is None:
            return Stored()
        parts: dict[str, tuple[bytes, int]] = {}
        for name in sorted(children(HEAD)):
            data, v = get(f"{HEAD}/{name}")
            if v is not None:
                parts[f"{HEAD}/{name}"] = (data or b"", v)
        if get(HEAD)[1] == version:
            return Stored(head, version, parts)
    raise OperationalError(f"{HEAD} kept changing while it was read; gave up after {READ_ATTEMPTS} attempts")


@dataclass
class RecordChange:
    """What a new record means for the znodes: the head's new bytes (None: delete it) and the part
    operations (path, payload, version; payload b"": delete, version None: create)."""

    head: bytes | None
    parts: list[tuple[str, bytes, int | None]]
    changed: bool  # anything differs from what is stored


def _dump(flat: Flat) -> bytes:
    return th.dump_record(unflatten(flat))


def _slot_bytes(name: str, keys: dict[str, str | None]) -> int:
    return len(orjson.dumps({name: keys})) + 1


def plan_change(stored: Stored, new: dict[str, Any]) -> RecordChange:
    """The znode writes that turn `stored` into `new` without moving any key (see the module doc)."""
    want = flatten(new)
    docs = stored.docs()
    kept: dict[str, Flat] = {
        p: {k: v for k, v in f.items() if k in want and want[k] == v} for p, f in docs.items()
    }
    placed: set[Key] = set()
    for flat in kept.values():
        placed.update(flat)
    additions = {k: v for k, v in want.items() if k not in placed}
    head = dict(kept.get(HEAD, {}))
    spill: Flat = {}
    if additions:
        head_size = len(_dump(head))
        for k, v in sorted(additions.items()):
            n = len(orjson.dumps({k[1]: {k[2]: v}})) + len(k[0]) + 8  # more than it adds: a bound
            if not spill and head_size + n <= HEAD_MAX:
                head[k] = v
                head_size += n
            else:
                spill[k] = v
    parts: list[tuple[str, bytes, int | None]] = []
    for path, (_, version) in sorted(stored.parts.items()):
        if kept[path] != docs[path]:
            parts.append((path, _dump(kept[path]) if kept[path] else b"", version))
    parts += _new_parts(spill, stored)
    head_bytes = _dump(head) if want else None
    changed = bool(parts) or head_bytes != (stored.head if stored.version is not None else None)
    return RecordChange(head_bytes, parts, changed)


def _new_parts(spill: Flat, stored: Stored) -> list[tuple[str, bytes, int | None]]:
    if not spill:
        return []
    used = [int(p.rsplit("/", 1)[1]) for p in stored.parts if p.rsplit("/", 1)[1].isdigit()]
    n = max(used, default=0)
    out: list[tuple[str, bytes, int | None]] = []
    current: Flat = {}
    size = 64
    for k, v in sorted(spill.items()):
        extra = len(orjson.dumps({k[1]: {k[2]: v}})) + len(k[0]) + 8
        if current and size + extra > PART_MAX:
            n += 1
            out.append((part_path(n), _dump(current), None))
            current, size = {}, 64
        current[k] = v
        size += extra
    n += 1
    out.append((part_path(n), _dump(current), None))
    return out
