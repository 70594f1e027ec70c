"""The adaptive throttle (issue 28 item 2) on a KRaft 4.x cluster, through the admin API alone: one move at
a time with `--throttle auto --min-throttle 2MB --max-throttle 16MB --throttle-interval 5`; a raise is read
back from the broker's config (DescribeConfigs), and at the end no throttle key is left on any broker."""

from __future__ import annotations

from pathlib import Path

from tests.clusters import ExtraCluster
from tests.faults.support import Child
from tests.helpers import consume_all
from tests.integration.kraft_support import FR, LR, Admin, eventually, plan
from tests.integration.reassign_support import produce


def test_auto_raises_a_throttle_bound_receiver_on_kraft(kc: ExtraCluster, ka: Admin, tmp_path: Path) -> None:
    topic, _ = ka.make_topic("auto", {0: [1]})
    values = produce(kc.bootstrap, topic, 0, 600, 100_000)  # 60 MB: 30 s at 2 MB/s
    move = plan(tmp_path / "auto.json", {(topic, 0): [3]})
    child = Child(
        None, tmp_path, "execute", "--reassignment-json-file", move, "--bootstrap-server", kc.bootstrap,
        "--max-moves-per-broker", "1", "--poll-interval", "0.5", "--throttle", "auto", "--min-throttle", "2MB",
        "--max-throttle", "16MB", "--throttle-interval", "5", bootstrap=kc.bootstrap,
    )  # fmt: skip
    # the first raise: a second one needs the copy to outlast two intervals, which a loaded machine may not give
    child.wait_for_line("throttle on broker 3 (follower): 2.0 -> 2.5 MB/s (throttle-bound, guards green)")
    # read back (the broker applies a config change on its own, a moment later; a later raise may land too)
    eventually(lambda: 2_500_000 <= int(ka.configs("brokers", 3).get(FR, 0)) <= 16_000_000, True, "the raise")
    assert child.finish() == 0, "".join(child.err)
    for b in (1, 3):
        eventually(
            lambda b=b: {k: v for k, v in ka.configs("brokers", b).items() if k in (LR, FR)}, {}, f"{b}"
        )
    assert sorted(consume_all(kc.bootstrap, topic, 60)) == sorted(values)
