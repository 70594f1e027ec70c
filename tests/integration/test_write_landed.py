"""A connection lost in the middle of a write: once it is back, the tool looks at ZooKeeper (a fresh real
chroot here) to learn whether the write landed. The loss itself is injected around the real client."""

from __future__ import annotations

from typing import Any

import pytest

from reassign_cli.errors import OperationalError
from reassign_cli.zookeeper.configs import ConfigStore
from reassign_cli.zookeeper.connect import connect
from reassign_cli.zookeeper.reassign import create_trigger

TRIGGER = "/admin/reassign_partitions"
OURS = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,1]}]}'


class LosesAnswer:
    """Forwards to the real client; the first create/commit either lands and then loses its answer
    (landed=True), or is lost before reaching ZooKeeper (landed=False)."""

    def __init__(self, client: Any, landed: bool, connected: bool = True) -> None:
        self._client, self.landed, self.connected, self.lost = client, landed, connected, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def create(self, *args: Any, **kw: Any) -> Any:
        from kazoo.exceptions import ConnectionLoss

        if self.lost == 0:
            self.lost += 1
            if self.landed:
                self._client.create(*args, **kw)
            raise ConnectionLoss()
        return self._client.create(*args, **kw)


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "lost"])
def test_trigger_create_with_lost_answer(zk_chroot: str, landed: bool) -> None:
    with connect(zk_chroot) as client:
        proxy = LosesAnswer(client, landed)
        assert create_trigger(proxy, OURS) is True
        assert proxy.lost == 1
        assert client.get(TRIGGER)[0] == OURS


def test_trigger_someone_elses_after_the_loss(zk_chroot: str) -> None:
    with connect(zk_chroot) as client:
        client.create(TRIGGER, b'{"version":1,"partitions":[]}', makepath=True)

        class Other(LosesAnswer):
            def create(self, *args: Any, **kw: Any) -> Any:
                from kazoo.exceptions import ConnectionLoss

                raise ConnectionLoss()

        assert create_trigger(Other(client, landed=False), OURS) is False


def test_trigger_outcome_unknown_without_reconnect(zk_chroot: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import reassign_cli.zookeeper.landed as landed

    monkeypatch.setattr(landed, "RECONNECT_SECONDS", 0.3)
    monkeypatch.setattr(landed.await_reconnect, "__defaults__", (0.3,))
    with connect(zk_chroot) as client, pytest.raises(OperationalError) as e:
        create_trigger(LosesAnswer(client, landed=True, connected=False), OURS)
    assert str(e.value) == (
        f"the connection to ZooKeeper dropped while writing {TRIGGER}; the write may or may not have been applied"
    )
    assert e.value.hint is not None and "kafka-reassign verify" in e.value.hint


def test_record_write_with_lost_answer_is_applied_once(zk_chroot: str) -> None:
    with connect(zk_chroot) as client:
        store = ConfigStore(LosesAnswer(client, landed=True))
        rec = store.update_priors(lambda r: {**r, "topics": {"t": {"k": None}}})
        assert rec["topics"] == {"t": {"k": None}}
        assert b'"topics":{"t":{"k":null}}' in client.get("/reassign_cli/throttles")[0]
