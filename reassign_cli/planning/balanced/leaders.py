"""Preferred leaders of the balanced strategy: which replica of each row goes first. Pure (numpy).

A leader change costs no copy, only a reorder. Every row starts with its slot 0 (the current leader when
it stayed, else the replica that took its slot). Then:
1. seeded bulk rounds move leadership from brokers over their leader target to replicas under it, one
   change per topic per round, never raising a topic's count on a broker to its count on the giver;
2. a scalar pass over what remains, by augmenting paths (leadership handed along a chain of rows, each
   step to another replica of that row): a path from a broker leading L to one leading L - 2 or fewer
   lowers the spread (the semi-matching optimality condition: no such path means the global counts are
   as even as the replica sets allow). Paths that keep each topic's counts even are tried first, then
   any path; then paths inside one topic that even it out without making the global counts worse. Each
   step lowers (sum of squared global counts, sum of squared per-topic counts), so the pass ends, and a
   result has no such path left: planning it again changes nothing.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from reassign_cli.planning.balanced.state import PairCounts, Work, first_of, group_rank
from reassign_cli.planning.balanced.targets import fill

ROUNDS = 64


def choose_leaders(w: Work, fixed: np.ndarray, old_lead: np.ndarray) -> np.ndarray:
    """The leader (broker index) of every row; `fixed`: preferred leaders of unselected topics on B;
    `old_lead`: each row's current leader (-1 when off B)."""
    lead = w.rep[:, 0].copy()
    n = w.n
    kept = lead == old_lead
    led = fixed.astype(np.int64) + np.bincount(lead[kept], minlength=n)
    n_topics = int(w.tix[-1]) + 1 if len(w.tix) else 0
    most = int(np.bincount(w.tix).max()) if len(w.tix) else 0
    # The replica counts are done with: their table's memory serves the leaders'.
    per_topic = PairCounts(w.tix[kept] * n + lead[kept], n_topics * n, most, reuse=w.pairs)
    _open_rows(w, np.flatnonzero(~kept), lead, led, per_topic)
    holds = np.bincount(w.rep[w.rep >= 0], minlength=n)
    goal = fill(fixed, holds, len(lead), led).target
    for _ in range(ROUNDS):
        if _round(w, lead, led, goal, per_topic) == 0:
            break
    uneven = _uneven_topics(w, lead)
    if int(led.max() - led.min()) > 1 or len(uneven):
        _Paths(w, lead, led, uneven).run()
    return lead


def _open_rows(w: Work, rows: np.ndarray, lead: np.ndarray, led: np.ndarray, per_topic: PairCounts) -> None:
    """Rows whose leader left: each takes the replica leading the fewest partitions of its topic, then
    the fewest overall; rows of one topic taking the same broker are settled one per round."""
    n, big = w.n, len(lead) + 1
    while len(rows):
        cand = w.rep[rows]
        safe = np.where(cand >= 0, cand, 0)
        t = w.tix[rows]
        mine = per_topic.get((t[:, None] * n + safe).ravel()).reshape(safe.shape)
        score = np.where(cand >= 0, mine * big + led[safe], np.iinfo(np.int64).max)
        v = safe[np.arange(len(rows)), np.argmin(score, axis=1)]
        first = first_of(t * n + v)
        done, v = rows[first], v[first]
        lead[done] = v
        np.add.at(led, v, 1)
        per_topic.add(w.tix[done] * n + v, 1)
        rows = rows[~first]


def _round(w: Work, lead: np.ndarray, led: np.ndarray, goal: np.ndarray, per_topic: PairCounts) -> int:
    n = w.n
    excess = led - goal
    wants = np.append(excess < 0, False)  # index -1 (empty slot): False
    rows = np.flatnonzero((excess[lead] > 0) & wants[w.rep].any(axis=1))
    if len(rows) == 0:
        return 0
    rows = w.rng.permutation(rows)
    u, cand = lead[rows], w.rep[rows]
    safe = np.where(cand >= 0, cand, 0)
    deficit = np.where(cand >= 0, -excess[safe], 0)
    ok = (cand >= 0) & (cand != u[:, None]) & (deficit > 0) & (led[safe] + 2 <= led[u][:, None])
    i, j = np.nonzero(ok)  # the (row, slot) pairs worth a per-topic look
    t = w.tix[rows[i]]
    fine = per_topic.get(t * n + safe[i, j]) < per_topic.get(t * n + u[i])
    score = np.zeros(ok.shape, dtype=np.int64)
    score[i[fine], j[fine]] = deficit[i[fine], j[fine]]
    j = np.argmax(score, axis=1)
    keep = score[np.arange(len(rows)), j] > 0
    rows, u, v = rows[keep], u[keep], safe[keep, j[keep]]
    t = w.tix[rows]
    # One change per (topic, giver) and (topic, taker) per round: the per-topic test above stays true.
    keep = first_of(t * n + u) & first_of(t * n + v)
    rows, u, t, v = rows[keep], u[keep], t[keep], v[keep]
    keep = group_rank(u) < excess[u]
    rows, u, t, v = rows[keep], u[keep], t[keep], v[keep]
    keep = group_rank(v) < -excess[v]
    rows, u, t, v = rows[keep], u[keep], t[keep], v[keep]
    lead[rows] = v
    np.add.at(led, u, -1)
    np.add.at(led, v, 1)
    per_topic.add(t * n + u, -1)
    per_topic.add(t * n + v, 1)
    return len(rows)


def _uneven_topics(w: Work, lead: np.ndarray) -> list[int]:
    """Topics whose leader counts over B differ by 2 or more."""
    n = w.n
    keys, counts = np.unique(w.tix * n + lead, return_counts=True)
    topic = keys // n
    start = np.flatnonzero(np.diff(topic, prepend=-1))  # keys are sorted: each topic's run
    most = np.maximum.reduceat(counts, start) if len(keys) else counts
    least = np.minimum.reduceat(counts, start) if len(keys) else counts
    least[np.diff(np.append(start, len(keys))) < n] = 0  # a broker of B leads none of the topic
    return topic[start][most - least >= 2].tolist()


@dataclass
class _Paths:
    """The scalar pass: Python structures over every row, built only when the bulk rounds left work."""

    w: Work
    lead: np.ndarray
    led: np.ndarray
    topics: list[int]  # topics that may still be evened out

    def __post_init__(self) -> None:
        w = self.w
        self.topic_of = w.tix.tolist()
        self.leaders = self.lead.tolist()
        self.loads = self.led.tolist()
        self.starts = np.searchsorted(w.tix, np.arange(int(w.tix.max()) + 2)).tolist() if len(w.tix) else [0]
        self.pending = set(self.topics)
        self.slack = 0  # how far a topic path's end may be from one below its start in global load
        # Rows led per broker and per-topic counts, made on first use: a search touches few brokers.
        self._order = np.argsort(self.lead, kind="stable")
        self._bounds = np.searchsorted(self.lead[self._order], np.arange(w.n + 1))
        self._rows_led: dict[int, set[int]] = {}
        self._count: dict[tuple[int, int], int] = {}

    def rows_led(self, b: int) -> set[int]:
        rows = self._rows_led.get(b)
        if rows is None:
            rows = set(self._order[self._bounds[b] : self._bounds[b + 1]].tolist())
            self._rows_led[b] = rows
        return rows

    def count(self, t: int, b: int) -> int:
        """Rows of topic t that broker b leads."""
        c = self._count.get((t, b))
        if c is None:
            c = self.leaders[self.starts[t] : self.starts[t + 1]].count(b)
            self._count[t, b] = c
        return c

    def run(self) -> None:
        changed = True
        while changed:
            changed = False
            for even_topics in (True, False):
                while self._global_path(even_topics):
                    changed = True
            # A topic's path depends on the global counts at its ends: look at every uneven topic again.
            self.pending = set(_uneven_topics(self.w, self.lead))
            while self._topic_path():
                changed = True
        self.led[:] = self.loads

    def _hand_over(self, path: list[tuple[int, int, int]]) -> None:
        """Apply steps (row, from, to): the row's leadership goes from one broker to the other."""
        for r, x, y in path:
            t = self.topic_of[r]
            cx, cy = self.count(t, x), self.count(t, y)
            self.lead[r] = self.leaders[r] = y
            self.rows_led(x).discard(r)
            self.rows_led(y).add(r)
            self.loads[x] -= 1
            self.loads[y] += 1
            self._count[t, x], self._count[t, y] = cx - 1, cy + 1
            self.pending.add(t)

    def _search(
        self, sources: list[int], rows_of: dict[int, list[int]] | None, goal: int, even_topics: bool
    ) -> list[tuple[int, int, int]] | None:
        """Breadth first from `sources` along "x leads a row that y is in" to a broker for which
        `goal` holds (global load <= goal for global paths; per-topic count <= goal within a topic)."""
        parent: dict[int, tuple[int, int] | None] = {s: None for s in sources}
        origin = {s: s for s in sources}
        queue = deque(sources)
        while queue:
            x = queue.popleft()
            rows = self.rows_led(x) if rows_of is None else rows_of.get(x, [])
            for r in sorted(rows):
                t = self.topic_of[r]
                for y in self.w.rep[r].tolist():
                    if y < 0 or y in parent or (even_topics and self.count(t, y) >= self.count(t, x)):
                        continue
                    parent[y], origin[y] = (x, r), origin[x]
                    if self._reached(y, goal, rows_of, t, origin[y]):
                        return self._path(parent, y)
                    queue.append(y)
        return None

    def _reached(self, y: int, goal: int, rows_of: dict[int, list[int]] | None, t: int, src: int) -> bool:
        if rows_of is None:
            return self.loads[y] <= goal
        return self.count(t, y) <= goal and self.loads[y] <= self.loads[src] - 1 + self.slack

    @staticmethod
    def _path(parent: dict[int, tuple[int, int] | None], end: int) -> list[tuple[int, int, int]]:
        steps: list[tuple[int, int, int]] = []
        y = end
        while (link := parent[y]) is not None:
            x, r = link
            steps.append((r, x, y))
            y = x
        return steps[::-1]

    def _global_path(self, even_topics: bool) -> bool:
        loads = self.loads
        low = min(loads)
        for level in sorted(set(loads), reverse=True):
            if level - low < 2:
                return False
            sources = [b for b, x in enumerate(loads) if x == level]
            path = self._search(sources, None, level - 2, even_topics)
            if path:
                self._hand_over(path)
                return True
        return False

    def _topic_path(self) -> bool:
        n = self.w.n
        for t in sorted(self.pending):
            rows = range(self.starts[t], self.starts[t + 1])
            rows_of: dict[int, list[int]] = {}
            for r in rows:
                rows_of.setdefault(self.leaders[r], []).append(r)
            counts = {b: len(rs) for b, rs in rows_of.items()}
            low = min(counts.values()) if len(counts) == n else 0
            for level in sorted(set(counts.values()), reverse=True):
                if level - low < 2:
                    break
                sources = [b for b in sorted(counts) if counts[b] == level]
                if self._even_topic(sources, rows_of, level - 2):
                    return True
            self.pending.discard(t)
        return False

    def _even_topic(self, sources: list[int], rows_of: dict[int, list[int]], goal: int) -> bool:
        """A path inside one topic that evens it out: ending on a broker that leads fewer partitions
        overall; else ending on one that leads as many, then a global path (keeping topics even) from that
        broker, now one over, to one at least two under it, which restores the global spread. If none,
        the topic path is undone."""
        self.slack = 0
        path = self._search(sources, rows_of, goal, False)
        if path:
            self._hand_over(path)
            return True
        self.slack = 1
        path = self._search(sources, rows_of, goal, False)
        self.slack = 0
        if not path:
            return False
        self._hand_over(path)
        end = path[-1][2]
        repair = self._search([end], None, self.loads[end] - 2, True)
        if repair:
            self._hand_over(repair)
            return True
        self._hand_over([(r, y, x) for r, x, y in reversed(path)])
        return False
