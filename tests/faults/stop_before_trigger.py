"""kafka-reassign ARGS run in this process (the real CLI), which stops itself with SIGSTOP (as a long GC
pause or a suspended laptop would) right before it creates the trigger znode: its throttles written, its
setup mark held. The test decides how long it stays stopped and sends SIGCONT. A SIGSTOP sent from the
test instead would race the run's one-second settle pause on a loaded machine (the trigger could be
written before the signal lands). Nothing of this is in the product.

    python -m tests.faults.stop_before_trigger ARGS...
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any


def main() -> None:
    from reassign_cli.backends.zookeeper.fenced import FencedThrottles

    create = FencedThrottles.create_trigger

    def stopped(self: Any, data: bytes) -> bool:
        print("STOPPED before the trigger", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
        return create(self, data)

    FencedThrottles.create_trigger = stopped  # type: ignore[method-assign]
    from reassign_cli.entry import run

    sys.argv = ["kafka-reassign", *sys.argv[1:]]
    run()


if __name__ == "__main__":
    main()
