"""scripts/ci-dry-run: the CI recipe for a pull request that changes topics or brokers.

usage: scripts/ci-dry-run --topics FILE [--kraft] [--artifacts DIR] [--broker-list IDS] [--throttle B/s]
                          [--max-copies N] [--max-bytes N] [--max-seconds S] [--seed N] [--keep-up]

1. `scripts/docker up [--kraft]` (a throwaway compose cluster; reused if this CLUSTER_DIR has one up)
2. creates the topics described in FILE (JSON, or YAML when PyYAML is importable), skipping existing ones:
     {"topics": [{"name": "orders", "partitions": 6, "replication_factor": 2,
                  "configs": {"retention.ms": "3600000"}, "messages": 1000, "message_bytes": 1024}]}
   ("assignment": {"0": [1, 2], ...} instead of partitions/replication_factor pins the replicas;
   messages/message_bytes fill the topic so that the plan has bytes to copy)
3. kafka-reassign snapshot (with the brokers: partition sizes)   -> DIR/snapshot.json
4. kafka-reassign generate --strategy balanced --report          -> DIR/report.md, DIR/report.html,
                                                                    DIR/generate.json, DIR/proposed.json
5. kafka-reassign execute --dry-run                              -> DIR/execute-dry-run.txt
6. checks the plan against the limits -> DIR/limits.json; exit 3 when one is broken
7. `scripts/docker down`, if step 1 started the cluster (unless --keep-up)

Exit: 0 the plan keeps within every limit; 3 a limit is broken (the artifacts are written all the same);
1 anything failed; 2 usage. Run by the project's venv python (kafka-python creates the topics).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DOCKER = REPO / "scripts" / "docker"
EXIT_LIMIT = 3


class RecipeError(Exception):
    pass


def say(msg: str) -> None:
    print(f"ci-dry-run: {msg}", file=sys.stderr, flush=True)


def cluster_dir() -> Path:
    return Path(os.environ.get("CLUSTER_DIR") or REPO / ".cluster").resolve()


def read_env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = " ".join(shlex.split(value))  # scripts/cluster quotes as the shell does
    return out


def compose_up(kraft: bool) -> tuple[dict[str, str], bool]:
    """The cluster's env, and whether this run started it."""
    env_file = cluster_dir() / "env"
    status = subprocess.run([str(DOCKER), "status"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if status.returncode == 0 and env_file.exists():
        env = read_env(env_file)
        if (env.get("CLUSTER_MODE") == "kraft") == kraft:
            say(f"using the docker cluster already up in {cluster_dir()}")
            return env, False
    say("scripts/docker up" + (" --kraft" if kraft else ""))
    r = subprocess.run([str(DOCKER), "up", *(["--kraft"] if kraft else [])], stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RecipeError("scripts/docker up failed")
    return read_env(env_file), True


def load_topics(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise RecipeError(f"{path}: YAML needs PyYAML (pip install pyyaml), or give JSON") from None
        doc = yaml.safe_load(text)
    else:
        doc = json.loads(text)
    topics = doc.get("topics") if isinstance(doc, dict) else None
    if not isinstance(topics, list) or not all(isinstance(t, dict) and t.get("name") for t in topics):
        raise RecipeError(f'{path}: expected {{"topics": [{{"name": ..., ...}}, ...]}}')
    return topics


def create_topics(bootstrap: str, topics: list[dict[str, Any]]) -> None:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        existing = set(admin.list_topics())
        new = []
        for t in topics:
            if t["name"] in existing:
                say(f"topic {t['name']} exists: kept as it is")
                continue
            configs = {k: str(v) for k, v in (t.get("configs") or {}).items()}
            if "assignment" in t:
                assignment = {int(p): [int(b) for b in r] for p, r in t["assignment"].items()}
                new.append(NewTopic(t["name"], replica_assignments=assignment, topic_configs=configs))
            else:
                rf = int(t.get("replication_factor", 1))
                new.append(NewTopic(t["name"], int(t.get("partitions", 1)), rf, topic_configs=configs))
        if new:
            admin.create_topics(new, timeout_ms=60000)
            say(f"created {len(new)} topic(s): {', '.join(n.name for n in new)}")
    finally:
        admin.close()
    fill = [t for t in topics if int(t.get("messages", 0)) > 0 and t["name"] not in existing]
    if not fill:
        return
    time.sleep(0)  # the producer waits for the leaders itself (metadata refresh)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, request_timeout_ms=60000)
    try:
        for t in fill:
            value = b"x" * int(t.get("message_bytes", 100))
            for i in range(int(t["messages"])):
                producer.send(t["name"], key=str(i).encode(), value=value)
        producer.flush(timeout=120)
    finally:
        producer.close(timeout=30)


def cli(args: list[str], env: dict[str, str], out: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "kafka-reassign"
    cmd = [str(exe) if exe.exists() else "kafka-reassign", *args]
    say("$ " + " ".join(cmd))
    r = subprocess.run(
        cmd, env={**os.environ, **env}, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    sys.stderr.write(r.stderr)
    if out is not None:
        out.write_text(r.stdout)
    if r.returncode != 0:
        raise RecipeError(f"kafka-reassign {args[0]} exited {r.returncode}")
    return r


def connection(env: dict[str, str]) -> dict[str, str]:
    """KAFKA_REASSIGN_* for the CLI: ZooKeeper mode through ZooKeeper (and the brokers for sizes)."""
    out = {"KAFKA_REASSIGN_BOOTSTRAP": env.get("KAFKA_REASSIGN_BOOTSTRAP") or env["KAFKA_BOOTSTRAP"]}
    if env.get("KAFKA_REASSIGN_ZOOKEEPER"):
        out["KAFKA_REASSIGN_ZOOKEEPER"] = env["KAFKA_REASSIGN_ZOOKEEPER"]
    return out


def plan(opts: argparse.Namespace, env: dict[str, str], topics: list[dict[str, Any]]) -> dict[str, Any]:
    art: Path = opts.artifacts
    conn = connection(env)
    snap = art / "snapshot.json"
    cli(["snapshot", "-o", str(snap), "--bootstrap-server", conn["KAFKA_REASSIGN_BOOTSTRAP"]], conn)
    topics_file = art / "topics-to-move.json"
    topics_file.write_text(json.dumps({"topics": [{"topic": t["name"]} for t in topics], "version": 1}))
    gen = ["generate", "--snapshot", str(snap), "--strategy", "balanced", "--format", "json"]
    gen += ["--topics-to-move-json-file", str(topics_file), "--report", str(art / "report")]
    gen += ["--throttle", str(opts.throttle)] + (["--seed", str(opts.seed)] if opts.seed is not None else [])
    gen += ["--broker-list", opts.broker_list] if opts.broker_list else []
    doc = json.loads(cli(gen, conn, art / "generate.json").stdout)
    (art / "proposed.json").write_text(json.dumps(doc["proposed"]) + "\n")
    (art / "current.json").write_text(json.dumps(doc["current"]) + "\n")
    ex = ["execute", "--dry-run", "--reassignment-json-file", str(art / "proposed.json")]
    cli([*ex, "--throttle", str(opts.throttle)], conn, art / "execute-dry-run.txt")
    stats = doc.get("stats") or {}
    return stats if isinstance(stats, dict) else {}


def check_limits(opts: argparse.Namespace, stats: dict[str, Any]) -> list[str]:
    figures = {
        "copies": (stats.get("copies"), opts.max_copies),
        "bytes_copied": (stats.get("bytes_copied"), opts.max_bytes),
        "seconds_at_throttle": (stats.get("seconds_at_throttle"), opts.max_seconds),
    }
    broken = []
    for name, (value, limit) in figures.items():
        if limit is None:
            continue
        if value is None:
            broken.append(f"{name}: unknown (the snapshot has no partition sizes), limit {limit}")
        elif value > limit:
            broken.append(f"{name}: {value} > limit {limit}")
    result = {
        "ok": not broken,
        "broken": broken,
        "figures": {n: {"value": v, "limit": lim} for n, (v, lim) in figures.items()},
    }
    (opts.artifacts / "limits.json").write_text(json.dumps(result, indent=2) + "\n")
    return broken


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="scripts/ci-dry-run", description=__doc__.split("\n\n")[0])
    p.add_argument("--topics", type=Path, required=True, help="JSON or YAML description of the topics")
    p.add_argument("--kraft", action="store_true", help="the compose kraft profile (Kafka 4.3.1)")
    p.add_argument("--artifacts", type=Path, default=Path(os.environ.get("CI_ARTIFACTS", "artifacts")))
    p.add_argument("--broker-list", help="brokers of the plan (default: every registered broker)")
    p.add_argument("--throttle", type=int, default=50_000_000, help="B/s per broker (default 50 MB/s)")
    p.add_argument("--max-copies", type=int, help="fail when the plan copies more replicas")
    p.add_argument("--max-bytes", type=int, help="fail when the plan copies more bytes")
    p.add_argument("--max-seconds", type=float, help="fail when the copies take longer at --throttle")
    p.add_argument("--seed", type=int, help="generate's seed (default: a random one)")
    p.add_argument("--keep-up", action="store_true", help="leave the cluster up at the end")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    opts = parse(argv)
    started = False
    try:
        topics = load_topics(opts.topics)
        opts.artifacts.mkdir(parents=True, exist_ok=True)
        env, started = compose_up(opts.kraft)
        create_topics(env.get("KAFKA_REASSIGN_BOOTSTRAP") or env["KAFKA_BOOTSTRAP"], topics)
        stats = plan(opts, env, topics)
        broken = check_limits(opts, stats)
    except (RecipeError, OSError, ValueError, KeyError) as e:
        say(f"error: {e}")
        return 1
    finally:
        if started and not opts.keep_up:
            subprocess.run([str(DOCKER), "down"], stdin=subprocess.DEVNULL)
    for line in broken:
        say(f"limit broken: {line}")
    say(f"artifacts in {opts.artifacts}: report.md, report.html, snapshot.json, proposed.json, limits.json")
    return EXIT_LIMIT if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
