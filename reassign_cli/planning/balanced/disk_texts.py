"""The fast path of `DiskPlan.entries` (planning/balanced/disks.py): each planned row's log dirs as JSON
items, made once in numpy for the whole plan, and the entries of a regular topic (a snapshot's
partitions 0..n-1, each with as many replicas) from one template in two % passes. Not the per-partition
dict (`DiskPlan.explicit`): building it cost 0.5 s at 1M partitions, and the entries from it another
0.8 s more than without log dirs. Pure (numpy, json)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from reassign_cli.core.replicas import TopicReplicas, stack

PAD = -2  # a plan's final[r, c] beyond row r's replicas
_MARK = "\x00"  # the topic's JSON name in a template (no % there: a name may hold one)
_TEMPLATES: dict[tuple[int, int], str] = {}


@dataclass(slots=True)
class RowTexts:
    """`at`: topic -> (its first row, partitions n, replicas k) for the topics whose rows are partitions
    0..n-1 in order, each of k replicas; `texts`: each row's log dirs, '"/a","any"'."""

    at: dict[str, tuple[int, int, int]]
    texts: list[str]

    def chunk(self, assignment: Mapping[str, Mapping[int, Sequence[int]]]) -> str | None:
        """The entries of a regular chunk of the plan (planner.Balanced.chunks: views over one store, one
        partition count and rf) with their log dirs: every replica id from one numpy read; None when
        it is not one (the caller goes topic by topic)."""
        names = list(assignment)
        ats = list(map(self.at.get, names))
        views = list(assignment.values())
        block = stack(views)
        if block is None or None in ats:
            return None
        k = block.shape[1]
        if any(at is None or at[1:] != (len(v), k) for at, v in zip(ats, views, strict=True)):
            return None
        joined = "".join(names)
        plain = joined.isascii() and joined.isprintable() and '"' not in joined and "\\" not in joined
        ids, pos, out = block.ravel().tolist(), 0, []
        for name, at in zip(names, ats, strict=True):
            assert at is not None
            lo, n, _ = at
            tq = '"' + name + '"' if plain else json.dumps(name, ensure_ascii=False)
            out.append(self._text(lo, n, k, ids[pos : pos + n * k]).replace(_MARK, tq))
            pos += n * k
        return ",".join(out)

    def topic(self, topic: str, parts: Mapping[int, Sequence[int]]) -> str | None:
        """The entries of `topic` as `parts` (its planned replicas: a regular view, or a dict of
        partitions 0..n-1 in order) with the log dirs of its rows; None when `parts` is neither, or not
        shaped as its rows (the caller formats it another way)."""
        at = self.at.get(topic)
        if at is None:
            return None
        lo, n, k = at
        if isinstance(parts, TopicReplicas):
            block = parts.regular_block()
            if block is None or block.shape != (n, k):
                return None
            ids = block.ravel().tolist()
        elif (
            isinstance(parts, dict)
            and len(parts) == n
            and list(parts) == list(range(n))
            and all(len(r) == k for r in parts.values())
        ):
            ids = list(chain.from_iterable(parts.values()))
        else:
            return None
        return self._text(lo, n, k, ids).replace(_MARK, json.dumps(topic, ensure_ascii=False))

    def _text(self, lo: int, n: int, k: int, ids: list[int]) -> str:
        """Rows lo..lo+n-1 as partitions 0..n-1 of k replicas `ids`, the topic's name left as _MARK."""
        template = _TEMPLATES.get((n, k))
        if template is None:
            reps = ",".join(["%d"] * k)
            template = ",".join(  # the replica ids in a first pass, the log dirs in a second
                f'{{"topic":{_MARK},"partition":{p},"replicas":[{reps}],"log_dirs":[%%s]}}' for p in range(n)
            )
            if len(_TEMPLATES) >= 4096:
                _TEMPLATES.clear()
            _TEMPLATES[n, k] = template
        return template % tuple(ids) % tuple(self.texts[lo : lo + n])


def row_texts(
    paths: Sequence[tuple[int, str]],
    rows: tuple[Sequence[str], np.ndarray, np.ndarray],
    final: np.ndarray,
    ch: np.ndarray,
    within: tuple[np.ndarray, np.ndarray],
) -> RowTexts:
    """RowTexts of a plan: `paths` its global dirs; `rows` (topic names, each row's topic index, its
    partition), in topic order; `final` (rows x columns) each replica's global dir (-1: any, PAD past
    the row); `ch` the rows whose replica set changes (every dir written); `within` (rows, columns) the
    other replicas whose dir is written. Every other replica's is "any"."""
    names, tix, pid = rows
    labels = list(dict.fromkeys(p for _, p in paths))  # each path once (brokers share paths)
    index = {p: i for i, p in enumerate(labels)}
    n, any_, pad = len(paths), len(labels), len(labels) + 1
    lab = np.array([index[p] for _, p in paths] + [any_], dtype=np.int64)  # global dir -> label
    code = np.where(final == PAD, pad, any_)
    got = final[ch]
    code[ch] = np.where(got == PAD, pad, lab[np.where(got >= 0, got, n)])
    r, c = within
    g = final[r, c]
    code[r, c] = lab[np.where(g >= 0, g, n)]
    base, width = pad + 1, code.shape[1]
    if base**width < 2**62:  # each row's labels as one integer: a 1-D unique
        key = code @ (base ** np.arange(width, dtype=np.int64))
        uniq, inv = np.unique(key, return_inverse=True)
        combos = [[u // base**i % base for i in range(width)] for u in uniq.tolist()]
    else:
        uniq, inv = np.unique(code, axis=0, return_inverse=True)
        combos = uniq.tolist()
    quoted = [json.dumps(p, ensure_ascii=False) for p in labels] + ['"any"']
    each = np.array([",".join([quoted[x] for x in cb if x != pad]) for cb in combos], dtype=object)
    texts = each[inv.ravel()].tolist()
    return RowTexts(_regular(names, tix, pid, (code != pad).sum(axis=1)), texts)


def _regular(
    names: Sequence[str], tix: np.ndarray, pid: np.ndarray, lens: np.ndarray
) -> dict[str, tuple[int, int, int]]:
    """RowTexts.at: the topics whose rows (in order) are partitions 0..n-1 of one replica count k."""
    if not len(tix):
        return {}
    counts = np.bincount(tix, minlength=len(names))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    first = starts[tix]
    ok = (pid == np.arange(len(tix)) - first) & (lens == lens[first])
    some = np.flatnonzero(counts)
    good = np.logical_and.reduceat(ok, starts[some])  # each topic with rows: all of them fine
    keep = some[good]
    return dict(
        zip(
            [names[i] for i in keep.tolist()],
            zip(starts[keep].tolist(), counts[keep].tolist(), lens[starts[keep]].tolist(), strict=True),
            strict=True,
        )
    )
