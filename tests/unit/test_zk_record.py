"""The record over several znodes (backends/zookeeper/record.py): placement, and what any prefix of a
split change leaves (worked out by hand: a superset of the old record when setting, of the new one when
clearing)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_cli.backends.zookeeper import record as zr
from reassign_cli.core import throttle as th


def stored_of(znodes: dict[str, bytes]) -> zr.Stored:
    if zr.HEAD not in znodes:
        return zr.Stored()
    parts = {p: (d, 0) for p, d in znodes.items() if p != zr.HEAD}
    return zr.Stored(znodes[zr.HEAD], 0, parts)


def apply(znodes: dict[str, bytes], change: zr.RecordChange, parts: int | None = None) -> dict[str, bytes]:
    """The znodes after the head and the first `parts` part operations (None: all of them)."""
    out = dict(znodes)
    if change.head is None:
        out.pop(zr.HEAD, None)
    else:
        out[zr.HEAD] = change.head
    for path, payload, _ in change.parts[:parts]:
        if payload:
            out[path] = payload
        else:
            out.pop(path, None)
    return out


def record(n_topics: int, start: int = 0) -> dict[str, Any]:
    rec = th.empty_record()
    for b in range(1, 4):
        rec["brokers"][str(b)] = {th.LEADER_RATE: None, th.FOLLOWER_RATE: "5"}
    for t in range(start, start + n_topics):
        rec["topics"][f"topic-{t:06d}"] = {th.LEADER_REPLICAS: None, th.FOLLOWER_REPLICAS: None}
    return rec


def test_a_small_record_is_the_head_alone_byte_for_byte() -> None:
    rec = record(3)
    change = zr.plan_change(zr.Stored(), rec)
    assert change.head == th.dump_record(rec) and change.parts == []
    assert stored_of(apply({}, change)).record() == rec


def test_a_large_record_spills_into_parts_and_reads_back_whole() -> None:
    rec = record(20_000)
    change = zr.plan_change(zr.Stored(), rec)
    assert change.head is not None and len(change.head) <= zr.HEAD_MAX
    assert len(change.parts) >= 8  # about 2 MB of priors
    assert all(len(p) <= zr.PART_MAX for _, p, _ in change.parts)
    assert stored_of(apply({}, change)).record() == rec


def test_clearing_deletes_every_znode() -> None:
    znodes = apply({}, zr.plan_change(zr.Stored(), record(5_000)))
    change = zr.plan_change(stored_of(znodes), th.empty_record())
    assert change.head is None and all(payload == b"" for _, payload, _ in change.parts)
    assert apply(znodes, change) == {}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 3000), st.integers(0, 3000), st.integers(0, 50), st.booleans())
def test_no_key_moves_so_any_prefix_is_safe(n_old: int, n_new: int, start: int, cut: int, grow: bool) -> None:
    """Setting (old ⊂ new): any prefix of the part writes reads as old plus some additions. Clearing
    (new ⊂ old): as new plus some of what goes. Never anything else."""
    base = record(n_old)
    other = record(n_new, start)
    new = th.empty_record()
    for entity in ("brokers", "topics"):
        if grow:
            new[entity] = {
                **base[entity],
                **{k: v for k, v in other[entity].items() if k not in base[entity]},
            }
        else:
            new[entity] = {k: v for k, v in base[entity].items() if k not in other[entity]}
    znodes = apply({}, zr.plan_change(zr.Stored(), base))
    change = zr.plan_change(stored_of(znodes), new)
    seen = zr.flatten(stored_of(apply(znodes, change, cut)).record())
    old_flat, new_flat = zr.flatten(base), zr.flatten(new)
    low, high = (old_flat, new_flat) if grow else (new_flat, old_flat)
    assert low.items() <= seen.items() <= high.items()
    assert zr.flatten(stored_of(apply(znodes, change)).record()) == new_flat


def _writes(n: int) -> list[Any]:
    from reassign_cli.backends.protocol import ConfigChange
    from reassign_cli.backends.zookeeper.configs import _Write

    payload = b"x" * 2000
    return [
        _Write(
            "topics",
            f"topic-{i:06d}",
            lambda c: c,
            f"/config/topics/topic-{i:06d}",
            payload,
            3,
            ConfigChange("topics", f"topic-{i:06d}", {}, {}),
        )
        for i in range(n)
    ]


def _flat_items(txns: list[Any]) -> list[str]:
    from reassign_cli.backends.zookeeper.configs import _Write

    return ["config" if isinstance(i, _Write) else "record" for items, _ in txns for i in items]


def test_a_large_setting_goes_record_first_each_transaction_fenced_on_the_one_before() -> None:
    from reassign_cli.backends.zookeeper import fenced

    change = zr.plan_change(zr.Stored(), record(20_000))
    txns = fenced._pack(_writes(2_000), change, zr.Stored(), record_last=False)
    assert len(txns) >= 6  # ~2.2 MB of record, ~4.5 MB of configs
    kinds = _flat_items(txns)
    assert kinds == sorted(kinds, key=lambda k: k != "record")  # every part before every config
    heads = [head for _, head in txns]
    assert heads[0][:2] == ("create", zr.HEAD)
    assert [h[3] for h in heads[1:]] == list(range(len(heads) - 1))  # 0, 1, 2, ...: the version just written
    for items, _ in txns:
        assert sum(fenced._item_bytes(i) for i in items) <= fenced.TXN_LIMIT - zr.HEAD_MAX


def test_a_large_clearing_goes_record_last() -> None:
    from reassign_cli.backends.zookeeper import fenced

    znodes = apply({}, zr.plan_change(zr.Stored(), record(20_000)))
    stored = stored_of(znodes)
    stored.version = 7
    txns = fenced._pack(_writes(2_000), zr.plan_change(stored, th.empty_record()), stored, record_last=True)
    kinds = _flat_items(txns)
    assert kinds == sorted(kinds, key=lambda k: k != "config")  # every config before every record change
    heads = [head for _, head in txns]
    assert [h[0] for h in heads] == ["set"] * (len(heads) - 1) + ["delete"]
    assert [h[-1] for h in heads] == list(range(7, 7 + len(heads)))
    assert heads[0][2] == znodes[zr.HEAD]  # rewritten unchanged until the last transaction
