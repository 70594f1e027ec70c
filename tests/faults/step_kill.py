"""kafka-reassign ARGS run in this process (the real CLI), with the stored plan step's writes traced, and a
kill -9 of this process right after its Nth write.

    python -m tests.faults.step_kill N -- ARGS...

The writes of a step (ZooKeeper mode with the brokers, or the admin API alone): the stored plan's
compare-and-set (`replace`: the lease taken, the mark of the moves started / done, the lease released),
the throttle commit (`apply_throttles`), the submit (`create_reassignment`), the clear at the end
(`clear_throttles`) and the stored plan's `delete`. Each is printed on stderr as `WRITE k NAME` once it
returned; the submit also as `SUBMITTED topic-p,...`. N = 0 only traces; at the Nth write the process
prints `KILLED k NAME` and sends itself SIGKILL (nothing after it runs: no finally, no lease release).
N = `expire:K,L,...`: right after the Kth write (and the Lth ...), the process's ZooKeeper session is
expired (a second client opens the same session id and password and closes it, as ZooKeeper's own tests
do) and the run goes on, printing `EXPIRED k NAME`. Nothing of this is in the product.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any

COUNT = [0]
DEPTH: dict[str, int] = {}
SESSIONS: list[Any] = []
EXPIRE: set[int] = set()  # expire the session right after these writes
CONNECT = [""]  # the --zookeeper connect string, for the second client


def expire(connect: str) -> None:
    from kazoo.client import KazooClient

    client = SESSIONS[-1].client
    other = KazooClient(hosts=connect, client_id=client.client_id)
    other.start(timeout=30)
    other.stop()
    other.close()


def wrote(name: str, target: int) -> None:
    COUNT[0] += 1
    print(f"WRITE {COUNT[0]} {name}", file=sys.stderr, flush=True)
    if COUNT[0] in EXPIRE:
        expire(CONNECT[0])
        print(f"EXPIRED {COUNT[0]} {name}", file=sys.stderr, flush=True)
    if COUNT[0] == target:
        print(f"KILLED {COUNT[0]} {name}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def traced(fn: Callable[..., Any], name: str, target: int, after: Callable[..., None] | None = None) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        DEPTH[name] = DEPTH.get(name, 0) + 1
        try:
            out = fn(*args, **kwargs)
        finally:
            DEPTH[name] -= 1
        if DEPTH[name] == 0:  # the outermost call only (a backend may delegate to another)
            if after is not None:
                after(*args, **kwargs)
            wrote(name, target)
        return out

    return call


def submitted(_self: Any, entries: Any, **_: Any) -> None:
    shown = ",".join(f"{e.topic}-{e.partition}" for e in entries)
    print(f"SUBMITTED {shown}", file=sys.stderr, flush=True)


def patch(target: int) -> None:
    from reassign_cli.backends.admin.backend import AdminBackend
    from reassign_cli.backends.zookeeper.backend import ZkBackend
    from reassign_cli.backends.zookeeper.session import ZkSession
    from reassign_cli.backends.zookeeper.stored_plan import ZkPlanStore
    from reassign_cli.ops import execute, throttle_writes, verify

    init = ZkSession.__init__

    def kept(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        SESSIONS.append(self)

    ZkSession.__init__ = kept  # type: ignore[method-assign]

    from reassign_cli.backends.admin.plan_topic import TopicPlanStore

    for store in (ZkPlanStore, TopicPlanStore):
        store.replace = traced(store.replace, "replace", target)  # type: ignore[method-assign]
        store.delete = traced(store.delete, "delete", target)  # type: ignore[method-assign]
    # the step imports it from its module when it runs; execute's own batches hold their import
    traced_throttles = traced(throttle_writes.apply_throttles, "throttles", target)
    throttle_writes.apply_throttles = traced_throttles
    execute.apply_throttles = traced_throttles
    verify.clear_throttles = traced(verify.clear_throttles, "clear", target)
    submit = traced(ZkBackend.create_reassignment, "submit", target, submitted)
    ZkBackend.create_reassignment = submit  # type: ignore[method-assign]
    admin_submit = traced(AdminBackend.create_reassignment, "submit", target, submitted)
    AdminBackend.create_reassignment = admin_submit  # type: ignore[method-assign]


def main() -> None:
    target, sep, *args = sys.argv[1:]
    assert sep == "--", sys.argv
    if target.startswith("expire:"):
        EXPIRE.update(int(k) for k in target.split(":")[1].split(","))
        target = "0"
        CONNECT[0] = args[args.index("--zookeeper") + 1]
    patch(int(target))
    from reassign_cli.entry import run

    sys.argv = ["kafka-reassign", *args]
    run()


if __name__ == "__main__":
    main()
