"""The stored plan (core/stored_plan.py) in the topic __reassign_cli_plan, for the admin-API backend:
backends/plan_store.PlanStore over a log of writes fenced as the prior-values record's are
(core/record_log.py, backends/admin/record_topic.py: the same messages, chunks, replay and compaction).

A topic of its own, beside __reassign_cli_throttles rather than in it: that topic is one partition without
keys that each kafka-reassign (older versions too) compacts with DeleteRecords up to its record's last
write, which would remove the plan's messages, and whose every reader would replay megabytes of plan.

The version of a read is the offset of the last write's end it saw; `replace` appends a write whose base is
that offset, and the write counts only if no other write ended after it: a compare-and-set. The content is
written once, by the write that creates the plan; later writes carry the head alone (a few KB), and the
compaction never removes the write that carried the content.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from reassign_cli.backends.admin.record_topic import RecordLog
from reassign_cli.backends.plan_store import Versioned, lost_create
from reassign_cli.core import hints
from reassign_cli.core import stored_plan as sp
from reassign_cli.core.record_log import Lease


class PlanLog(RecordLog):
    codec = sp.LOG
    what = "the stored plan"

    def _unknown_hint(self) -> str:
        return (
            f"Check the reassignments in flight (kafka-reassign list), then delete the topic {self.topic} to "
            "forget the stored plan."
        )


class TopicPlanStore:
    def __init__(self, log: PlanLog) -> None:
        self.log = log

    def read(self) -> Versioned | None:
        with self.log._lock:
            doc = self.log.read()
            version = self.log.replay.last_end
        plan = sp.from_log_doc(doc)
        return None if plan is None else Versioned(plan, version)

    def create(
        self, plan: sp.StoredPlan, connection: Iterable[hints.ConnectionOption] = ()
    ) -> tuple[Versioned, bool]:
        new = sp.log_doc(plan, with_content=True)

        def fn(current: dict[str, Any], lease: Lease | None) -> tuple[dict[str, Any], Lease | None] | None:
            return None if current else (new, lease)

        with self.log._lock:
            if self.log.transact(fn) is not None:
                ref = sp.content_ref(sp.encode_head(plan, sp.encode_content(plan)))
                return Versioned(dataclasses.replace(plan, content_ref=ref), self.log.replay.last), True
        return lost_create(self.read(), plan, connection, self.log.topic)

    def replace(self, seen: Versioned, new: sp.StoredPlan) -> Versioned | None:
        if not sp.same_content(new, seen.plan):
            raise ValueError("the content of a stored plan never changes")
        new = dataclasses.replace(new, content_ref=seen.plan.content_ref)
        end = self._append(sp.log_doc(new, with_content=False), seen.version)
        return None if end is None else Versioned(new, end)

    def delete(self, seen: Versioned | None = None) -> bool:
        if seen is not None:
            return self._append({}, seen.version) is not None
        with self.log._lock:
            return self.log.transact(lambda current, lease: ({}, lease) if current else None) is not None

    def _append(self, doc: dict[str, Any], base: int) -> int | None:
        """One write after `base` (a compare-and-set): the offset of its end, None when it did not count."""
        with self.log._lock:
            self.log.ensure_topic()
            counted, end = self.log._append(doc, None, base)
            if not counted:
                return None
            self.log._compact()
            return end
