"""What a waiting execute shows (issue 30 item 14), on the real cluster.

Through the admin API with stderr on a terminal (a pty: the Rich bar), stdout a pipe: Kafka's lines
("Successfully started ...") stay on stdout while the bar runs, as they do on the ZooKeeper path; the
last frame says every move is done (no "1 moving", no ETA); a closing line gives partitions, bytes and
time; the rate never shows a "-- B/s" placeholder. Through ZooKeeper (plain lines): the same closing line
without bytes, and counts with their right plural."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import threading
from typing import Any

from tests.helpers import PYTHON
from tests.integration.reassign_support import Mover, await_idle, produce

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RECORD = 100_000
CLOSING_BYTES = re.compile(r"^3 partitions, [\d.]+ (KiB|MiB) in 0:\d\d:\d\d$", re.M)
CLOSING = re.compile(r"^3 partitions in 0:\d\d:\d\d$", re.M)


def _pty_run(args: list[str], cwd: str) -> tuple[int, str, str]:
    """The CLI with stdout a pipe and stderr a terminal; (exit code, stdout, stderr without ANSI codes)."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_REASSIGN_")}
    env.update(TERM="xterm", COLUMNS="160")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [PYTHON, "-m", "reassign_cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO once the child has closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    err = ANSI.sub("", b"".join(chunks).decode(errors="replace")).replace("\r\n", "\n")
    return proc.returncode, out.decode(), err


def _topic(cluster: Any, make_topic: Any) -> str:
    t = make_topic({0: [1], 1: [1], 2: [1]})
    for p in range(3):
        produce(cluster.bootstrap, t, p, 10, RECORD)  # 1 MB each: a few polls at the throttle
    return t


def test_paced_admin_run_on_a_terminal(cluster: Any, make_topic: Any, mover: Mover) -> None:
    t = _topic(cluster, make_topic)
    plan = mover.plan("there.json", {(t, p): [3] for p in range(3)})
    mover.plans.append((plan, [t]))
    await_idle(mover.zk)
    code, out, err = _pty_run(
        ["execute", "--reassignment-json-file", str(plan), "--bootstrap-server", cluster.bootstrap,
         "--throttle", "1000000", "--max-moves-per-broker", "1", "--poll-interval", "0.3"],
        str(mover.tmp),
    )  # fmt: skip
    assert code == 0, err
    started = [line for line in out.splitlines() if line.startswith("Successfully started")]
    assert sorted(p for line in started for p in re.findall(rf"{t}-(\d)", line)) == ["0", "1", "2"], out
    assert "Successfully started" not in err
    assert "The inter-broker throttle limit was set to 1000000 B/s" in out
    assert CLOSING_BYTES.search(err), err
    last = err[err.rindex("copied ") :].split("\n")[0]
    assert "moving" not in last and "ETA" not in last and last.rstrip().endswith("3 done"), last
    assert "-- B/s" not in err and "-:--:--" not in err


def test_zookeeper_batches_close_with_a_line(cluster: Any, make_topic: Any, mover: Mover) -> None:
    t = _topic(cluster, make_topic)
    plan = mover.plan("zk.json", {(t, p): [2] for p in range(3)})
    await_idle(mover.zk)
    r = mover.execute(plan, "--throttle", "1000000", "--max-moves-per-broker", "1", "--poll-interval", "0.3")
    assert r.returncode == 0, r.stderr
    assert [x for x in r.stderr.splitlines() if x.startswith("Batch ")] == [
        "Batch 1/3: 1 partition",
        "Batch 2/3: 1 partition",
        "Batch 3/3: 1 partition",
    ]
    # a batch just started is not yet seen moving by the reads of the step that started it: never "not as
    # planned" (each batch's first progress line said so, before)
    assert "not as planned" not in r.stderr, r.stderr
    assert CLOSING.search(r.stderr), r.stderr
