"""`kafka-reassign list`'s lines on the stored plan (issue 25 item 6), from ops.plan_ctl.report's document:

Stored plan: 12 partition(s), SHA-256 0123456789ab, stored by alice@ops1 at 2026-12-01T01:00:00Z
  state: paused since 2026-12-01T02:30:15Z by bob@ops2: disk on broker 3 at 91%
  moves: 2 moving, 5 queued, 5 done
  log-dir moves: 1 moving, 2 queued, 0 done of 3 (only a plan that names log dirs)
  bytes: 1.2 GiB of 3.4 GiB done, 2.2 GiB left; ETA 0:41:10
  throttles: on brokers 1,2,3 and topics orders, kept for its moves (cleared when it ends) (only when recorded)
  driver: none (no step running)
  last step: 2026-12-01T02:29:00Z; last change 2026-12-01T02:30:15Z (95 s ago by this host's clock)
"""

from __future__ import annotations

from typing import Any

from reassign_cli.core.pacing import eta_text, human_bytes
from reassign_cli.render.progress import entities_text


def stored_plan_lines(doc: dict[str, Any]) -> list[str]:
    by = doc["stored_by"]
    lines = [
        f"Stored plan: {doc['partitions']} partition(s), SHA-256 {doc['plan_sha256'][:12]}, stored by "
        f"{by['user']}@{by['host']} at {by['at']}"
    ]
    state = doc["state"] if doc["state_line"] is None else doc["state_line"]
    lines.append(f"  state: {state}")
    m = doc["moves"]
    lines.append(f"  moves: {m['running']} moving, {m['queued']} queued, {m['done']} done")
    d = doc.get("log_dir_moves")
    if d is not None:
        lines.append(
            f"  log-dir moves: {d['moving']} moving, {d['queued']} queued, {d['done']} done of {d['total']}"
        )
    b = doc["bytes"]
    if b["total"] is None:
        lines.append(f"  bytes: not known (some sizes were not known when it was stored); {eta_text(None)}")
    else:
        lines.append(
            f"  bytes: {human_bytes(b['done'])} of {human_bytes(b['total'])} done, "
            f"{human_bytes(b['remaining'])} left; {eta_text(doc['eta_seconds'])}"
        )
    held = doc.get("throttles")
    if held and (held["brokers"] or held["topics"]):
        where = entities_text(held["brokers"], held["topics"])
        lines.append(f"  throttles: on {where}, kept for its moves (cleared when it ends)")
    if doc.get("ignore_health"):
        lines.append(f"  ignores health checks: {', '.join(doc['ignore_health'])} (execute --ignore-health)")
    lease = doc["driver"]
    if lease is None:
        lines.append("  driver: none (no step running)")
    else:
        lines.append(
            f"  driver: run {lease['run']} (pid {lease['pid']} on {lease['host']}), renewed {lease['renewals']} times"
        )
    step = doc["last_step"]
    lines.append(
        f"  last step: {'none yet' if step is None else step['at']}; last change {doc['updated']} "
        f"({doc['updated_age_seconds']:.0f} s ago by this host's clock)"
    )
    return lines
