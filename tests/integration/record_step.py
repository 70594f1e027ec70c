"""kafka-reassign ARGS run in this process (the real CLI), with the record log's writes traced, or stopped at
one step for the test to kill -9 (or resume) it there.

    python record_step.py STEP -- ARGS...

STEP is "trace" (each step of each record write is printed on stderr as `STEP <name>` and the run goes
on), "none", or a step name as the trace prints it: `produce-3` (before the third message of the run's
record writes), `produce-3-done` (after it was acknowledged), `compact-1` / `compact-1-done` (the first
compaction). At that step the process prints `STOPPED <name>` on stderr and stops itself (SIGSTOP): the
test then kills it (SIGKILL) or resumes it (SIGCONT).

Settings from the environment, for this process only: RECORD_STEP_CHUNK_BYTES (the largest chunk
message), RECORD_STEP_COMPACT_AFTER, RECORD_STEP_LEASE_SECONDS.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from reassign_cli.backends.admin import record_topic
from reassign_cli.core import record_log

COUNTS: dict[str, int] = {}


def step(kind: str, target: str) -> str:
    COUNTS[kind] = COUNTS.get(kind, 0) + 1
    return f"{kind}-{COUNTS[kind]}"


def at(name: str, target: str) -> None:
    if target == "trace":
        print(f"STEP {name}", file=sys.stderr, flush=True)
    elif name == target:
        print(f"STOPPED {name}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)


def patch(target: str) -> None:
    produce, compact = record_topic.RecordLog._produce, record_topic.RecordLog._compact

    def traced_produce(self: Any, value: bytes) -> int | None:
        name = step("produce", target)
        at(name, target)
        offset = produce(self, value)
        at(f"{name}-done", target)
        return offset

    def traced_compact(self: Any) -> None:
        if self.replay.cut - self._start < record_log.COMPACT_AFTER:
            return
        name = step("compact", target)
        at(name, target)
        compact(self)
        at(f"{name}-done", target)

    record_topic.RecordLog._produce = traced_produce  # type: ignore[method-assign]
    record_topic.RecordLog._compact = traced_compact  # type: ignore[method-assign]


def main() -> None:
    target, sep, *args = sys.argv[1:]
    assert sep == "--", "usage: record_step.py STEP -- ARGS..."
    settings = {
        "RECORD_STEP_CHUNK_BYTES": "CHUNK_BYTES",
        "RECORD_STEP_COMPACT_AFTER": "COMPACT_AFTER",
        "RECORD_STEP_LEASE_SECONDS": "LEASE_SECONDS",
    }
    for env, name in settings.items():
        if env in os.environ:
            setattr(record_log, name, type(getattr(record_log, name))(os.environ[env]))
    if target != "none":
        patch(target)
    from reassign_cli.cli import run

    sys.argv = ["kafka-reassign", *args]
    run()


if __name__ == "__main__":
    main()
