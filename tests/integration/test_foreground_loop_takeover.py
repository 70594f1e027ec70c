"""Issue 28 item 3 on the ZooKeeper-mode cluster through the admin API alone (where a foreground paced
execute stores its plan, in the record topic): a foreground `execute --max-moves-per-broker 1 --throttle auto
--min-throttle 2MB --max-throttle 16MB --throttle-interval 5`, one move of a partition led by broker 1 from
[1, 2] to [1, 3], killed with kill -9 right after its first raise (2.0 -> 2.5 MB/s); then only separate cron
`verify` processes (one step each, no plan file) until exit 0.

The judges: the rates read back from ZooKeeper (the broker's dynamic config) all through the steps, and the
steps' own lines: the takeover goes on in auto mode from the last rate (its next raise is 2.5 -> 3.12 MB/s, not
a start at 2 MB/s nor a fixed rate); at the end the operator's own follower rate on broker 3 is back exactly.
"""

from __future__ import annotations

from typing import Any

import pytest

from reassign_cli.core import throttle as th
from tests.helpers import wait_until
from tests.integration.reassign_support import Mover, config
from tests.integration.test_rate_loop import AUTO, MB, OPERATORS, Sampler, _operators_rate, _paced, _setup
from tests.integration.test_step_kraft import _forget
from tests.integration.test_step_zk import ENV


@pytest.mark.timeout(900)
def test_kill9_of_a_foreground_auto_run_then_cron_verify_goes_on_at_its_last_rate(
    cluster: Any, make_topic: Any, consume_all: Any, mover: Mover, run_cli: Any
) -> None:
    topic, plan, values = _setup(cluster, make_topic, mover, 100, "takeover.json")  # 50 s at 2 MB/s
    _operators_rate(mover)
    mover.finally_do.append(lambda: _forget(cluster.bootstrap))  # a failed test leaves no stored plan
    child = _paced(cluster, mover, plan, *AUTO)
    child.wait_for_line("throttle on broker 3 (follower): 2.0 -> 2.5 MB/s", timeout=180)
    child.kill9()
    # item 6: the source's leader rate rose with its receiver's, in the foreground too (read back)
    rise = "throttle on broker 1 (leader): 2.0 -> 2.5 MB/s (feeds broker 3, throttle-bound, guards green)\n"
    assert rise in child.err, "".join(child.err)
    assert (config(mover.zk, "brokers", 1) or {}).get(th.LEADER_RATE) == "2500000"
    assert (config(mover.zk, "brokers", 3) or {}).get(th.FOLLOWER_RATE) == "2500000"
    errs: list[str] = []

    def step() -> bool:
        r = run_cli(
            "verify", "--zookeeper", "", "--bootstrap-server", cluster.bootstrap, env=ENV, cwd=mover.tmp
        )
        assert r.returncode in (0, 4), r.stderr
        errs.append(r.stderr)
        return r.returncode == 0

    with Sampler(mover.zk) as sampler:
        wait_until(step, timeout=600, interval=1, message=lambda: f"the stored plan done: {errs[-1:]}")
    text = "".join(errs)
    lines = [x for x in text.splitlines() if x.startswith("throttle on broker")]
    follower = [int(f) for _, f in sampler.samples if f is not None and f != OPERATORS]
    print(f"\n{len(errs)} steps\n" + "\n".join(lines) + f"\nfollower read back: min {min(follower)}")
    assert "The stored plan is done" in errs[-1], errs[-1]
    assert " -> 2.0 MB/s (start)" not in text, text  # no new start at R1: the kept loop goes on
    assert "throttle on broker 3 (follower): 2.5 -> 3.12 MB/s (throttle-bound, guards green)" in lines, text
    assert min(follower) >= 2_500_000 and max(follower) <= 16 * MB
    assert config(mover.zk, "brokers", 3) == {th.FOLLOWER_RATE: OPERATORS}  # exactly as before
    assert sorted(consume_all(topic)) == sorted(values)
