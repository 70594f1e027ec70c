"""`python -m tests.integration.split_runner KILL_AFTER ARGS...`: kafka-reassign ARGS with ZooKeeper
transactions and record znodes made small (so that a small synthetic cluster's throttle change needs several
of each), killed with SIGKILL by itself right after its KILL_AFTER-th landed throttle transaction (0: never).
What test_split_changes.py uses to stop a real process between two transactions of one change."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from reassign_cli.backends.zookeeper import fenced, record
from reassign_cli.cli import run

TXN_LIMIT = 12_000  # about ten config writes per transaction
HEAD_MAX = 600
PART_MAX = 1_000


def main() -> None:
    kill_after = int(sys.argv[1])
    fenced.TXN_LIMIT, record.HEAD_MAX, record.PART_MAX = TXN_LIMIT, HEAD_MAX, PART_MAX
    real = fenced.FencedThrottles._transaction
    landed = [0]

    def counted(self: Any, *args: Any) -> bool:
        ok = real(self, *args)
        if ok:
            landed[0] += 1
            print(f"transaction {landed[0]} landed", file=sys.stderr, flush=True)
            if landed[0] == kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
        return ok

    fenced.FencedThrottles._transaction = counted  # type: ignore[method-assign]
    sys.argv = ["kafka-reassign", *sys.argv[2:]]
    run()


if __name__ == "__main__":
    main()
