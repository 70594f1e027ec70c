"""`python -m tests.faults.kraft_runner POINT ARGS...`: kafka-reassign ARGS (the admin-API backend) that stops
at one point of an execute's setup and waits there to be killed (the test sends SIGKILL once it reads the
line), for tests/faults/test_kraft_faults.py. The same idea as tests/integration/split_runner.py: the product
code is unchanged, the runner only wraps two of its methods.

POINT
- `record`: the record write has landed (the priors and this run's setup lease), no throttle config written
  yet. Line on stderr: `kraft_runner: record written, configs not yet`.
- `configs`: the throttle configs are written, AlterPartitionReassignments not sent yet. Line:
  `kraft_runner: configs written, no reassignment yet`.

The lease of the killed run is over once the run that recovers has seen it unrenewed for LEASE_SECONDS
(core/record_log.py; 30 s): no wall clock is compared, so a lease cannot be dated back to shorten that. The
processes that recover are the unmodified CLI.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from reassign_cli.backends.admin.backend import AdminBackend
from reassign_cli.cli import run

HOLD = 600.0  # how long the runner waits at its point (the test kills it long before)


def _stop_here(line: str) -> None:
    print(f"kraft_runner: {line}", file=sys.stderr, flush=True)
    time.sleep(HOLD)
    raise SystemExit(f"kraft_runner: not killed within {HOLD:g}s")


def main() -> None:
    point = sys.argv[1]
    assert point in ("record", "configs"), point
    real_update, real_create = AdminBackend.update_configs, AdminBackend.create_reassignment

    def update_configs(self: AdminBackend, updates: Any, *, create: bool = True) -> Any:
        # holding: the setup lease was taken with the record write just made, and these are its configs
        if point == "record" and self.holding:
            _stop_here("record written, configs not yet")
        return real_update(self, updates, create=create)

    def create_reassignment(self: AdminBackend, entries: Any) -> Any:
        if point == "configs" and self.holding:
            _stop_here("configs written, no reassignment yet")
        return real_create(self, entries)

    AdminBackend.update_configs = update_configs  # type: ignore[method-assign]
    AdminBackend.create_reassignment = create_reassignment  # type: ignore[method-assign]
    sys.argv = ["kafka-reassign", *sys.argv[2:]]
    run()


if __name__ == "__main__":
    main()
