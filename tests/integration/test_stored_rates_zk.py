"""The rate loop in a stored plan's steps (issue 28 in issue 25's steps) on the ZooKeeper-mode cluster (Kafka
3.9, the brokers given too): `execute --detach --max-moves-per-broker 1` with the loop's options, then only
separate `verify` processes (one step each) until exit 0. One move of a partition led by broker 1, from
[1, 2] to [1, 3].

- `--throttle auto --min-throttle 2MB --max-throttle 16MB --throttle-interval 5`: the rates read back from
  ZooKeeper rise above 2 MB/s, never above 16 MB/s at any sample; after every step the loop's state read back
  from the stored plan's head names the rates the brokers hold; at the end the operator's own follower rate
  on broker 3 is back exactly and the stored plan is gone. Each step writes `--metrics-file`: its
  kafka_reassign_plan_throttle_rate_bytes{broker,role} are the rates the brokers hold.
- `--throttle-schedule` whose boundary is the next UTC minute: a step after it writes the new rate (read
  back), with its line.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from reassign_cli.core import throttle as th
from tests.helpers import wait_until
from tests.integration.reassign_support import Mover, config
from tests.integration.test_rate_loop import AUTO, MB, OPERATORS, Sampler, _operators_rate, _setup
from tests.integration.test_step_zk import ENV, HEAD, _flags, _forget


def _detach(cluster: Any, mover: Mover, run_cli: Any, plan: Any, *rates: str) -> None:
    mover.finally_do.append(lambda: _forget(mover.zk))
    r = run_cli(
        "execute", "--reassignment-json-file", plan, *_flags(cluster), "--max-moves-per-broker", "1",
        *rates, "--detach", "--rollback-file", str(mover.tmp / "rb.json"), env=ENV, cwd=mover.tmp,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Started 1 move" in r.stderr and mover.zk.exists(HEAD), r.stderr


def _kept_rates(zk: Any) -> dict[str, int] | None:
    """The loop's rates as the stored plan's head holds them (None: no plan stored)."""
    if not zk.exists(HEAD):
        return None
    head = json.loads(zk.get(HEAD)[0])
    return dict(head["schedule"]["throttle_loop"]["loop"]["state"]["rates"])


def _steps(cluster: Any, mover: Mover, run_cli: Any) -> list[str]:
    """verify steps until exit 0; after each, the kept rates are the brokers' (read back). Their stderr."""
    errs: list[str] = []

    prom = mover.tmp / "m.prom"

    def step() -> bool:
        r = run_cli("verify", *_flags(cluster), "--metrics-file", prom, env=ENV, cwd=mover.tmp)
        assert r.returncode in (0, 4), r.stderr
        errs.append(r.stderr)
        kept = _kept_rates(mover.zk)
        for key, rate in (kept or {}).items():
            broker, role = key.split("/")
            name = th.LEADER_RATE if role == "leader" else th.FOLLOWER_RATE
            assert (config(mover.zk, "brokers", int(broker)) or {}).get(name) == str(rate), (key, r.stderr)
        # issue 28's gauge in the cron step's metrics file: the rates the brokers hold (none once done)
        gauge = {
            f"{s.labels['broker']}/{s.labels['role']}": s.value
            for fam in text_string_to_metric_families(prom.read_text())
            for s in fam.samples
            if s.name == "kafka_reassign_plan_throttle_rate_bytes"
        }
        assert gauge == (kept or {}), (gauge, kept)
        return r.returncode == 0

    wait_until(step, timeout=540, interval=1, message=lambda: f"the stored plan done: {errs[-1:]}")
    assert "The stored plan is done" in errs[-1]
    return errs


@pytest.mark.timeout(900)
def test_detached_auto_rises_within_its_bounds_from_verify_steps(
    cluster: Any, make_topic: Any, consume_all: Any, mover: Mover, run_cli: Any
) -> None:
    topic, plan, values = _setup(cluster, make_topic, mover, 60, "auto.json")  # 30 s at 2 MB/s
    _operators_rate(mover)
    with Sampler(mover.zk) as sampler:
        _detach(cluster, mover, run_cli, plan, *AUTO)
        errs = _steps(cluster, mover, run_cli)
    text = "".join(errs)
    rates = sampler.rates()
    raised = [x for x in text.splitlines() if "(throttle-bound, guards green)" in x]
    print(
        f"\n{len(errs)} steps\n" + "\n".join(raised) + f"\nmax read back {max(rates)}, {len(rates)} samples"
    )
    assert "throttle on broker 3 (follower): none -> 2.0 MB/s (start)" in text, text
    # each step is a new process: none started the rate again (no dip to R1), each resumed the kept rates
    assert text.count("throttle on broker 3 (follower): none -> ") == 1, text
    assert raised and raised[0] in (
        "throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)",
        "throttle on broker 1 (leader): 2.0 -> 2.5 MB/s (feeds broker 3, throttle-bound, guards green)",
    )
    assert max(rates) > 2 * MB and max(rates) <= 16 * MB and min(rates) >= 2 * MB
    assert config(mover.zk, "brokers", 3) == {th.FOLLOWER_RATE: OPERATORS}  # exactly as before
    assert th.LEADER_RATE not in (config(mover.zk, "brokers", 1) or {})
    assert not mover.zk.exists(HEAD)
    assert sorted(consume_all(topic)) == sorted(values)


@pytest.mark.timeout(900)
def test_a_detached_schedule_changes_the_rate_at_its_boundary_between_steps(
    cluster: Any, make_topic: Any, consume_all: Any, mover: Mover, run_cli: Any
) -> None:
    topic, plan, values = _setup(cluster, make_topic, mover, 40, "schedule.json")  # 133 s at 300 kB/s
    # the next UTC minute at least 40 s away (the plan starts at the slow rate), at most 100 s
    start = (datetime.now(UTC) + timedelta(seconds=100)).replace(second=0, microsecond=0)
    end = start + timedelta(minutes=30)
    schedule = f"{start:%H:%M}-{end:%H:%M}=16MB,*=300kB"
    with Sampler(mover.zk) as sampler:
        _detach(cluster, mover, run_cli, plan, "--throttle-schedule", schedule)
        errs = _steps(cluster, mover, run_cli)
    follower = [f for _, f in sampler.samples if f is not None]
    changed = [
        e for e in errs if "throttle on broker 3 (follower): 0.3 -> 16.0 MB/s (throttle schedule)" in e
    ]
    print(f"\n{len(errs)} steps; the change in {len(changed)} of them")
    assert len(changed) == 1, "".join(errs)
    assert "300000" in follower and "16000000" in follower
    assert follower.index("300000") < follower.index("16000000")
    assert not mover.zk.exists(HEAD)
    assert sorted(consume_all(topic)) == sorted(values)
