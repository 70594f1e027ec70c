"""The autopilot's known-broker ledger (core/autopilot.Ledger, with the standing pause) in its store: the
znode LEDGER in ZooKeeper mode (`LedgerStore`), the topic __reassign_cli_autopilot through the admin API alone
(backends/admin/ledger_topic.py). Used by ops/autopilot.py (the tick's ledger) and ops/standing_pause.py
(pause, continue, list, a plan stored paused); a module of its own so that neither imports the other's
dependencies (ops/stored.py uses the standing pause, ops/autopilot.py uses ops/stored.py).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from reassign_cli.core import autopilot as ap
from reassign_cli.errors import OperationalError

if TYPE_CHECKING:
    from reassign_cli.backends.admin.ledger_topic import TopicLedgerStore
    from reassign_cli.backends.zookeeper.session import ZkSession

LEDGER = "/reassign_cli/autopilot-brokers"  # beside the stored plan's /reassign_cli/plan


class LedgerStore:
    """The known-broker ledger (core/autopilot.Ledger) in one znode beside the stored plan, written with
    the version read (compare-and-set): of two ticks that read the same version one writes, the other
    reads again and updates the newer ledger."""

    def __init__(self, session: ZkSession) -> None:
        self.session = session

    def read(self) -> tuple[ap.Ledger, int | None]:
        data, version = self.session.get(LEDGER)
        if data is None:
            return ap.Ledger(), None
        try:
            return ap.Ledger.from_dict(json.loads(data)), version
        except (ValueError, TypeError) as e:
            raise OperationalError(f"the autopilot's ledger {LEDGER} cannot be read: {e}") from None

    def _set(self, data: bytes, version: int) -> None:
        """One compare-and-set (a lost answer: InDoubt, which the caller's next read settles)."""
        from reassign_cli.backends.zookeeper.session import InDoubt

        client = self.session.client
        with contextlib.suppress(InDoubt):  # not landed: the next tick writes it
            self.session.write(LEDGER, lambda: client.set_async(LEDGER, data, version=version))

    def update(self, fn: Callable[[ap.Ledger], ap.Ledger], attempts: int = 5) -> ap.Ledger:
        from kazoo.exceptions import BadVersionError, NoNodeError

        for _ in range(attempts):
            ledger, version = self.read()
            new = fn(ledger)
            if new == ledger and version is not None:
                return new
            data = json.dumps(new.to_dict(), sort_keys=True).encode()
            if version is None:
                if self.session.create_once(LEDGER, data):
                    return new
                continue
            try:
                self._set(data, version)
                return new
            except (BadVersionError, NoNodeError):
                continue
        raise OperationalError(f"the autopilot's ledger {LEDGER} kept changing under this tick; try again")


@contextlib.contextmanager
def ledger_store(backend: Any) -> Iterator[LedgerStore | TopicLedgerStore]:
    """The ledger's store: the znode LEDGER in ZooKeeper mode, the topic __reassign_cli_autopilot through
    the admin API alone (backends/admin/ledger_topic.py). Opening it writes nothing."""
    from reassign_cli.backends.zookeeper.backend import ZkBackend

    if isinstance(backend, ZkBackend):
        yield LedgerStore(backend.session)
        return
    from reassign_cli.backends.admin.ledger_topic import LedgerLog, TopicLedgerStore

    log = LedgerLog(backend.options, backend.admin)
    try:
        yield TopicLedgerStore(log)
    finally:
        log.close()


def _read(store: LedgerStore | TopicLedgerStore) -> ap.Ledger:
    return store.read()[0] if isinstance(store, LedgerStore) else store.read()
