"""The standing pause (issue 26, "`pause` stops autopilot too") on real clusters: ZooKeeper mode (Kafka 3.9,
the brokers given too; the pause in the znode /reassign_cli/autopilot-brokers) and KRaft 4.3.1 through the
admin API alone (the pause in the topic __reassign_cli_autopilot, read back here from its messages).

One scenario on each: with no plan stored, `pause --reason` records the pause (who, when, why); a second
`pause` keeps the first; `list` (text and JSON) shows it; a `rebalance` tick on a cluster it would rebalance
(broker 3 holds no replica of the topic) says `skipped: paused since ...`, exit 4, and stores nothing; a plan
stored by `execute --detach` is stored paused and starts nothing, nor does the next tick; `continue` removes
both pauses; a dry-run tick then decides to rebalance. Nothing is moved: the stored plan is deleted at the end,
the ledger (and so the pause) in a finalizer."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reassign_cli.backends.zookeeper.session import ZkOptions, open_session
from reassign_cli.backends.zookeeper.stored_plan import ZkPlanStore
from tests.clusters import ExtraCluster
from tests.helpers import consume_records
from tests.integration.kraft_support import Admin, admin, cli
from tests.integration.reassign_support import Mover, await_idle, get_json, reassigning, write_plan
from tests.integration.stored_plan_worker import topic_store

USER, HOST = getpass.getuser(), socket.gethostname()
LEDGER = "/reassign_cli/autopilot-brokers"
LEDGER_TOPIC = "__reassign_cli_autopilot"
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
NO_ENV: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KAFKA_REASSIGN_")}


def _scenario(
    run: Callable[..., Any],
    conn: list[str],
    topic: str,
    plan: Path,
    ledger_pause: Callable[[], Any],
    stored_pause: Callable[[], Any],
    moving: Callable[[], bool],
) -> None:
    """`run(*args)`: the CLI; `ledger_pause()`: the pause as the store holds it (None: none); `stored_pause()`:
    the stored plan's `paused` (None: no plan stored); `moving()`: the topic reassigning."""
    tick = ["rebalance", *conn, "--exclude-topics", f"(?!{topic}$).*"]
    p = run("pause", "--reason", "disk  91%", *conn)
    assert p.returncode == 0, p.stderr
    found = re.match(rf"No stored plan: the autopilot is paused since ({ISO}) by ", p.stdout)
    assert found is not None, p.stdout
    since = found[1]
    want = {"since": since, "user": USER, "host": HOST, "reason": "disk 91%"}
    line = f"paused since {since} by {USER}@{HOST}: disk 91%"
    assert ledger_pause() == want
    again = run("pause", "--reason", "other", "--format", "json", *conn)
    assert json.loads(again.stdout) == {"paused": want, "already_paused": True, "standing": True}
    assert ledger_pause() == want  # the first pause is kept

    listed = run("list", *conn)
    assert listed.returncode == 0, listed.stderr
    assert f"Standing pause: the autopilot and any plan stored now are {line} (continue removes it)" in (
        listed.stdout.splitlines()
    )
    assert json.loads(run("list", "--format", "json", *conn).stdout)["standing_pause"] == want

    t = run(*tick)  # broker 3 holds no replica of the topic: a rebalance, but paused
    assert (t.returncode, t.stdout) == (4, f"skipped: {line}\n"), t.stderr
    assert stored_pause() is None and not moving()

    d = run("execute", "--reassignment-json-file", plan, "--max-moves-per-broker", "1", "--detach", *conn)
    assert d.returncode == 0, d.stdout + d.stderr
    assert f"Stored paused: the standing pause stands ({line}); no move starts until" in d.stderr, d.stderr
    assert stored_pause() == want and not moving()
    t = run(*tick)  # the stored plan is stepped: held by its pause
    assert t.returncode == 4 and line in t.stderr, t.stdout + t.stderr
    assert not moving()

    c = run("continue", *conn)
    assert c.returncode == 0, c.stderr
    assert c.stdout.splitlines() == [
        f"Standing pause removed (was: {line}).",
        f"Pause cleared (was: {line}).",
    ]
    assert ledger_pause() is None and stored_pause() == {}
    c = run("continue", "--format", "json", *conn)  # nothing left to remove
    doc = json.loads(c.stdout)
    assert (doc["changes"], doc["standing_pause_removed"]) == ([], None), doc

    # a pause while a plan is stored pauses the autopilot too: after the plan's end (here: cancelled)
    # no tick starts a plan until continue
    p = run("pause", "--reason", "night", "--format", "json", *conn)
    assert p.returncode == 0, p.stderr
    paused = json.loads(p.stdout)
    assert (paused["already_paused"], paused["standing"]) == (False, False)
    assert stored_pause() == paused["paused"] == ledger_pause()
    x = run("cancel", *conn)
    assert x.returncode == 0 and stored_pause() is None, x.stdout + x.stderr
    night = _paused_line(paused["paused"])
    t = run(*tick)
    assert (t.returncode, t.stdout) == (4, f"skipped: {night}\n"), t.stderr
    assert not moving()
    c = run("continue", *conn)
    assert c.stdout.splitlines() == [f"Standing pause removed (was: {night})."], c.stdout + c.stderr
    assert ledger_pause() is None


def _paused_line(p: dict[str, str]) -> str:
    return f"paused since {p['since']} by {p['user']}@{p['host']}: {p['reason']}"


def _after(run: Callable[..., Any], conn: list[str], topic: str) -> None:
    """No pause, no plan stored: the tick would rebalance (a dry run: nothing written)."""
    r = run("rebalance", *conn, "--exclude-topics", f"(?!{topic}$).*", "--dry-run")
    assert r.returncode == 4 and r.stdout.startswith("rebalance: broker 3 holds no replica"), (
        r.stdout + r.stderr
    )


def test_the_standing_pause_stops_the_autopilot_zk(
    cluster: Any, zk: Any, make_topic: Any, mover: Mover, tmp_path: Path
) -> None:
    def forget() -> None:
        for path in ("/reassign_cli/plan", "/reassign_cli/plan-content", LEDGER):
            if zk.exists(path):
                zk.delete(path, recursive=True)

    mover.finally_do.append(forget)
    await_idle(zk)
    forget()
    topic = make_topic({0: [1, 2], 1: [2, 1], 2: [1, 2]}, messages=10)
    plan = write_plan(tmp_path / "mine.json", {(topic, 0): [3, 2]})
    conn = ["--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap]

    def stored_pause() -> Any:
        with open_session(ZkOptions(cluster.zookeeper)) as session:
            seen = ZkPlanStore(session).read()
        return None if seen is None else dict(seen.plan.paused)

    def run(*args: Any) -> Any:
        return mover.cli(*args)

    _scenario(
        run,
        conn,
        topic,
        plan,
        lambda: (get_json(zk, LEDGER) or {}).get("paused"),
        stored_pause,
        lambda: reassigning(zk, topic),
    )
    forget()
    _after(run, conn, topic)


def _kraft_ledger_pause(bootstrap: str) -> Any:
    """The pause in the last write of the ledger topic (one writer at a time here: the last write counts)."""
    with admin(bootstrap) as a:
        if LEDGER_TOPIC not in a.client.list_topics():
            return None
    records = consume_records(bootstrap, LEDGER_TOPIC, timeout=30)
    docs = [json.loads(v) for _, _, _, v in records]
    last = [d for d in docs if "ledger" in d]
    return last[-1]["ledger"].get("paused") if last else None


def test_the_standing_pause_stops_the_autopilot_kraft(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    topic, _ = ka.make_topic("pause", {0: [1, 2], 1: [2, 1], 2: [1, 2]}, messages=10)
    plan = write_plan(tmp_path / "mine.json", {(topic, 0): [3, 2]})
    conn = ["--bootstrap-server", kc.bootstrap]

    def run(*args: Any) -> Any:
        return cli(kc.bootstrap, *args, cwd=tmp_path, env=NO_ENV)

    def stored_pause() -> Any:
        with topic_store(kc.bootstrap) as store:
            seen = store.read()
        return None if seen is None else dict(seen.plan.paused)

    try:
        _scenario(
            run,
            conn,
            topic,
            plan,
            lambda: _kraft_ledger_pause(kc.bootstrap),
            stored_pause,
            lambda: bool(ka.reassignments()),
        )
        with topic_store(kc.bootstrap) as store:
            store.delete()
        _after(run, conn, topic)
    finally:
        with topic_store(kc.bootstrap) as store, contextlib.suppress(Exception):
            store.delete()
        with admin(kc.bootstrap) as a, contextlib.suppress(Exception):
            a.client.delete_topics([LEDGER_TOPIC])
