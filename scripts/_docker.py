"""scripts/docker: the compose cluster of docker-compose.yml, from a bare Linux machine to healthy.

usage: scripts/docker up [--kraft] | down | status | env | stop-broker N | start-broker N | jars | images

up      installs docker.io, docker-compose and mmdebstrap from Debian's packages if missing; writes
        /etc/docker/daemon.json (no bridge, no iptables, no forwarding) if absent, and refuses to go on
        if an existing one allows a bridge; starts dockerd if it is not running (by hand, remembered
        in $CLUSTER_DIR); bootstraps a Debian base image with a JRE (mmdebstrap | docker import,
        cached under ~/.cache/reassign_cli/docker/); builds the Kafka image from docker/ with the
        cached jars; starts ZooKeeper + brokers 1-3 (Kafka 3.9.2), or with --kraft three combined
        KRaft 4.3.1 nodes; waits until healthy; writes $CLUSTER_DIR/env with the variables
        `scripts/cluster up` writes.
down    stops and removes this CLUSTER_DIR's containers, and stops dockerd if `up` started it (by pid;
        unless other containers still run) and unmounts what it leaves.
status  the containers and their health (exit 0 all healthy, 1 some, 3 none).

Environment: CLUSTER_DIR (default <repo>/.cluster), RC_DOCKER (the docker client, default
/usr/bin/docker: Debian's, which builds with BuildKit), RC_COMPOSE ("docker-compose" or
"docker compose"; default docker-compose if installed, else the v2 plugin), RC_BASE_IMAGE (use this
base instead of bootstrapping one), RC_ZK_PORT, RC_BROKER_<n>_PORT, RC_KRAFT_<n>_PORT,
RC_CONTROLLER_<n>_PORT (default: free ports), RC_ALLOW_BRIDGE_DAEMON=1 (a hosted CI runner: use its
running dockerd even though its daemon.json allows bridges). Python standard library only (plus
scripts/_cluster.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cluster as cl

REPO = cl.REPO
COMPOSE_FILE = REPO / "docker-compose.yml"
JARS_STAGE = REPO / "docker" / "jars"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reassign_cli" / "docker"
DAEMON_JSON = Path("/etc/docker/daemon.json")
DAEMON_SETTINGS = {
    "bridge": "none",
    "iptables": False,
    "ip6tables": False,
    "ip-forward": False,
    "ip-masq": False,
}
NETNS = Path("/run/docker/netns/default")
SUITE = "bookworm"
BASE_IMAGE = f"reassign-cli/base:{SUITE}"
BASE_PACKAGES = ["openjdk-17-jre-headless", "python3", "python3-venv", "ca-certificates"]
KAFKA_IMAGE = "reassign-cli/kafka:local"
TOOL_IMAGE = "reassign-cli/kafka-reassign:local"
KAFKA3, KAFKA4 = "3.9.2", "4.3.1"
APT_PACKAGES = {"/usr/bin/docker": "docker.io", "/usr/bin/mmdebstrap": "mmdebstrap"}
UP_TIMEOUT = float(os.environ.get("CLUSTER_TIMEOUT", "300"))


def say(msg: str) -> None:
    print(f"docker: {msg}", file=sys.stderr, flush=True)


DockerError = cl.ClusterError


def cluster_dir() -> Path:
    return Path(os.environ.get("CLUSTER_DIR") or REPO / ".cluster").resolve()


def docker_bin() -> str:
    return os.environ.get("RC_DOCKER") or "/usr/bin/docker"


def run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    """subprocess.run in text mode; a program that is not installed (yet) exits 127, as in a shell."""
    try:
        return subprocess.run(cmd, text=True, stdin=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]
    except FileNotFoundError as e:
        return subprocess.CompletedProcess(cmd, 127, "", f"{e}\n")


def checked(cmd: list[str], what: str, **kw: object) -> subprocess.CompletedProcess[str]:
    r = run(cmd, **kw)
    if r.returncode != 0:
        err = (r.stderr or "")[-3000:] if isinstance(r.stderr, str) else ""
        raise DockerError(f"{what} failed (exit {r.returncode}): {shlex.join(cmd)}\n{err}")
    return r


# --------------------------------------------------------------------------- packages, daemon.json


def compose_cmd() -> list[str]:
    chosen = os.environ.get("RC_COMPOSE")
    if chosen:
        return shlex.split(chosen)
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return [docker_bin(), "compose"]


def check_daemon_json() -> None:
    """Write daemon.json if absent; refuse an existing one that allows a bridge, iptables or forwarding."""
    if not DAEMON_JSON.exists():
        DAEMON_JSON.parent.mkdir(parents=True, exist_ok=True)
        DAEMON_JSON.write_text(json.dumps(DAEMON_SETTINGS, indent=2) + "\n")
        say(f"wrote {DAEMON_JSON}: no bridge, no iptables, no forwarding or masquerading")
        return
    try:
        current = json.loads(DAEMON_JSON.read_text() or "{}")
    except json.JSONDecodeError as e:
        raise DockerError(f"{DAEMON_JSON} is not JSON ({e}): fix it by hand") from None
    wrong = {k: current.get(k) for k, v in DAEMON_SETTINGS.items() if current.get(k) != v}
    if wrong and os.environ.get("RC_ALLOW_BRIDGE_DAEMON") == "1" and daemon_answers():
        say(f"warning: {DAEMON_JSON} allows bridged networking ({wrong}); using the running dockerd as told")
        return
    if wrong:
        raise DockerError(
            f"{DAEMON_JSON} allows bridged networking ({wrong}); this machine needs "
            f"{json.dumps(DAEMON_SETTINGS)}: not starting anything"
        )


def ensure_packages() -> None:
    needed = {
        p: pkg
        for p, pkg in APT_PACKAGES.items()
        if pkg != "mmdebstrap" or not os.environ.get("RC_BASE_IMAGE")
    }
    missing = [pkg for path, pkg in needed.items() if not Path(path).exists()]
    if (
        not shutil.which("docker-compose")
        and run([docker_bin(), "compose", "version"], capture_output=True).returncode
    ):
        missing.append("docker-compose")
    if not missing:
        return
    check_daemon_json()  # before the package is installed: nothing may start dockerd without it
    say(f"installing {' '.join(missing)} from Debian's packages ...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    checked(["apt-get", "update", "-q"], "apt-get update", env=env, stdout=subprocess.DEVNULL)
    checked(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        "apt-get install",
        env=env,
        stdout=subprocess.DEVNULL,
    )


# --------------------------------------------------------------------------- dockerd


def daemon_answers() -> bool:
    return (
        run([docker_bin(), "version", "--format", "{{.Server.Version}}"], capture_output=True).returncode == 0
    )


def dockerd_pid_file() -> Path:
    return cluster_dir() / "dockerd.pid"


def ensure_dockerd() -> None:
    check_daemon_json()
    if daemon_answers():
        return
    if Path("/var/run/docker.pid").exists() and cl.proc_alive(
        int(Path("/var/run/docker.pid").read_text() or 0)
    ):
        raise DockerError("a dockerd runs but does not answer on /var/run/docker.sock: not starting another")
    dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    log = cluster_dir() / "logs" / "dockerd.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f"starting dockerd (log {log}) ...")
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [dockerd], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    dockerd_pid_file().write_text(f"{proc.pid}\n")
    cl.wait_for(daemon_answers, 60, "dockerd to answer")
    say(f"dockerd up (pid {proc.pid})")


def stop_dockerd() -> None:
    pid_file = dockerd_pid_file()
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().strip() or 0)
    cmdline = cl.proc_cmdline(pid) or ""
    if pid and cl.proc_alive(pid) and "dockerd" in cmdline:
        others = run([docker_bin(), "ps", "-q"], capture_output=True).stdout.split()
        if others:
            say(f"dockerd (pid {pid}) left running: {len(others)} other container(s) still run on it")
            return
        say(f"stopping dockerd (pid {pid}) ...")
        os.kill(pid, signal.SIGTERM)
        cl.wait_for(lambda: not cl.proc_alive(pid), 60, "dockerd to stop")
    pid_file.unlink(missing_ok=True)
    if NETNS.exists() and NETNS.is_file() and os.path.ismount(NETNS):
        run(["umount", str(NETNS)])
    if Path("/sys/class/net/docker0").exists():
        say("warning: a docker0 bridge exists (not made by this daemon.json)")


# --------------------------------------------------------------------------- images


def image_exists(ref: str) -> bool:
    return run([docker_bin(), "image", "inspect", ref], capture_output=True).returncode == 0


def base_tarball() -> Path:
    key = hashlib.sha1(" ".join([SUITE, *BASE_PACKAGES]).encode()).hexdigest()[:8]
    return CACHE / f"base-{SUITE}-{key}.tar"


def ensure_base_image() -> str:
    """The base of both images: RC_BASE_IMAGE, or Debian + a JRE + python3, bootstrapped and imported."""
    if os.environ.get("RC_BASE_IMAGE"):
        return os.environ["RC_BASE_IMAGE"]
    if image_exists(BASE_IMAGE):
        return BASE_IMAGE
    tar = base_tarball()
    if not tar.exists():
        say(f"bootstrapping a Debian {SUITE} base ({', '.join(BASE_PACKAGES)}) with mmdebstrap ...")
        tar.parent.mkdir(parents=True, exist_ok=True)
        tmp = tar.with_suffix(".tmp.tar")
        checked(
            [
                "mmdebstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
                '--aptopt=APT::Install-Recommends "false"',
                *(f"--dpkgopt=path-exclude=/usr/share/{d}/*" for d in ("doc", "locale")),
                SUITE, str(tmp),
            ],
            "mmdebstrap",
            capture_output=True,
        )  # fmt: skip
        tmp.replace(tar)
    say(f"importing {tar} as {BASE_IMAGE} ...")
    checked([docker_bin(), "import", str(tar), BASE_IMAGE], "docker import", capture_output=True)
    return BASE_IMAGE


def stage_jars() -> None:
    """docker/jars/kafka-V/libs: the cached Maven Central jars (hard links when on one file system)."""
    for version in (KAFKA3, KAFKA4):
        libs = cl.ensure_jars(version)
        dest = JARS_STAGE / f"kafka-{version}" / "libs"
        if dest.is_dir() and sorted(p.name for p in dest.iterdir()) == sorted(p.name for p in libs.iterdir()):
            continue
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if run(["cp", "-al", str(libs), str(dest)], capture_output=True).returncode != 0:
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(libs, dest)


def build(dockerfile: str, tag: str, base: str, context: Path, target: str | None = None) -> None:
    env = {**os.environ, "DOCKER_BUILDKIT": "1"}
    cmd = [
        docker_bin(),
        "build",
        "--network",
        "host",
        "-f",
        str(REPO / dockerfile),
        "--build-arg",
        f"BASE={base}",
    ]
    cmd += ["--target", target] if target else []
    say(f"building {tag} (base {base}) ...")
    checked([*cmd, "-t", tag, str(context)], f"docker build {tag}", env=env, capture_output=True)


def ensure_images() -> str:
    base = ensure_base_image()
    stage_jars()
    build("docker/kafka.Dockerfile", KAFKA_IMAGE, base, REPO / "docker")
    return base


def tool_image() -> None:
    """The tool's own image (Dockerfile at the repository root), on the same base. Its wheels (the
    project and its dependencies) are made here with pip, so the build itself downloads nothing."""
    base = ensure_base_image()
    wheels = REPO / "docker" / "wheels"
    for old in wheels.glob("reassign_cli-*.whl"):
        old.unlink()  # always the current source
    venv_python = REPO / ".venv" / "bin" / "python"
    python = str(venv_python) if venv_python.exists() else sys.executable
    say("building the wheels of kafka-reassign and its dependencies ...")
    checked(
        [python, "-m", "pip", "wheel", "-q", "-w", str(wheels), str(REPO)], "pip wheel", capture_output=True
    )
    build("Dockerfile", TOOL_IMAGE, base, REPO, target="cli")


# --------------------------------------------------------------------------- compose


def state_file() -> Path:
    return cluster_dir() / "docker.json"


def load_state() -> dict[str, object] | None:
    try:
        data = json.loads(state_file().read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def project_name() -> str:
    return "rc-" + hashlib.sha1(str(cluster_dir()).encode()).hexdigest()[:10]


def pick_ports(mode: str) -> dict[str, int]:
    ids = cl.BROKER_IDS
    names = [f"RC_KRAFT_{i}_PORT" for i in ids] + [f"RC_CONTROLLER_{i}_PORT" for i in ids]
    if mode == "zk":
        names = ["RC_ZK_PORT"] + [f"RC_BROKER_{i}_PORT" for i in ids]
    fixed = {n: int(os.environ[n]) for n in names if os.environ.get(n)}
    free = iter(
        cl.pick_ports(len(names) - len(fixed), set(fixed.values())) if len(fixed) < len(names) else []
    )
    return {n: fixed[n] if n in fixed else next(free) for n in names}


def services(mode: str) -> list[str]:
    if mode == "kraft":
        return [f"kraft-{i}" for i in cl.BROKER_IDS]
    return ["zookeeper"] + [f"kafka-{i}" for i in cl.BROKER_IDS]


def compose(st: dict[str, object], *args: str, capture: bool = True) -> subprocess.CompletedProcess[str]:
    ports = st["ports"]
    assert isinstance(ports, dict)
    env = {**os.environ, **{k: str(v) for k, v in ports.items()}}
    env.update(RC_KAFKA_IMAGE=KAFKA_IMAGE, RC_BASE_IMAGE=str(st["base"]))
    env["PATH"] = f"{Path(docker_bin()).parent}:{env.get('PATH', '')}"  # `docker compose` v2, or v1's helpers
    cmd = [*compose_cmd(), "-f", str(COMPOSE_FILE), "-p", str(st["project"])]
    if st["mode"] == "kraft":
        cmd += ["--profile", "kraft"]
    return run([*cmd, *args], env=env, capture_output=capture, cwd=REPO)


def container_health(st: dict[str, object]) -> dict[str, str]:
    """service -> health ('healthy', 'starting', 'unhealthy', 'exited', or 'missing')."""
    out: dict[str, str] = {}
    mode = str(st["mode"])
    for svc in services(mode):
        name = f"{st['project']}_{svc}_1"  # v1's name; v2 uses '-': both looked up by label below
        r = run(
            [
                docker_bin(), "ps", "-a", "-q",
                "--filter", f"label=com.docker.compose.project={st['project']}",
                "--filter", f"label=com.docker.compose.service={svc}",
            ],
            capture_output=True,
        )  # fmt: skip
        ids = r.stdout.split()
        if not ids:
            out[svc] = "missing"
            continue
        fmt = "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}"
        status = run([docker_bin(), "inspect", "-f", fmt, ids[0]], capture_output=True).stdout.split()
        out[svc] = status[1] if len(status) > 1 and status[0] == "running" else (status or ["missing"])[0]
        del name
    return out


def kafka_ready(st: dict[str, object]) -> bool:
    """Every broker answers metadata naming all three brokers and a controller (as scripts/cluster waits)."""
    ports = broker_ports(st)
    try:
        for p in ports.values():
            ids, ctrl = cl.kafka_metadata(p)
            if set(ids) != set(cl.BROKER_IDS) or ctrl < 0:
                return False
    except OSError:
        return False
    if st["mode"] == "zk":
        zk_port = int(dict(st["ports"])["RC_ZK_PORT"])  # type: ignore[call-overload]
        try:
            return (
                set(cl.registered_brokers(zk_port)) == set(cl.BROKER_IDS)
                and cl.controller_id(zk_port) is not None
            )
        except OSError:
            return False
    return True


def broker_ports(st: dict[str, object]) -> dict[int, int]:
    ports = st["ports"]
    assert isinstance(ports, dict)
    key = "RC_KRAFT_{}_PORT" if st["mode"] == "kraft" else "RC_BROKER_{}_PORT"
    return {i: int(ports[key.format(i)]) for i in cl.BROKER_IDS}


def wait_healthy(st: dict[str, object], timeout: float = UP_TIMEOUT) -> None:
    def ok() -> bool:
        health = container_health(st)
        bad = [s for s, h in health.items() if h in ("exited", "dead", "missing", "unhealthy")]
        if bad:
            logs = compose(st, "logs", "--tail", "40", bad[0]).stdout
            raise DockerError(f"container {bad[0]} is {health[bad[0]]}:\n{logs[-3000:]}")
        return all(h == "healthy" for h in health.values()) and kafka_ready(st)

    cl.wait_for(ok, timeout, "every container healthy and every broker serving metadata")


CONTAINER_LOG_DIRS = ("/var/lib/kafka/d0", "/var/lib/kafka/d1")  # KAFKA_LOG_DIRS in docker-compose.yml


def write_env(st: dict[str, object]) -> None:
    """The same variables as scripts/cluster's env file (see write_env in scripts/_cluster.py)."""
    bports = broker_ports(st)
    ports = dict(st["ports"])  # type: ignore[call-overload]
    bootstrap = ",".join(f"{cl.HOST}:{bports[i]}" for i in cl.BROKER_IDS)
    mode = str(st["mode"])
    lines: dict[str, str] = {}
    if mode == "kraft":
        lines["KAFKA_REASSIGN_BOOTSTRAP"] = bootstrap
    else:
        lines["KAFKA_REASSIGN_ZOOKEEPER"] = f"{cl.HOST}:{ports['RC_ZK_PORT']}{cl.CHROOT}"
    lines["KAFKA_BOOTSTRAP"] = bootstrap
    if mode != "kraft":
        zk = ports["RC_ZK_PORT"]
        lines.update(CLUSTER_ZK_HOSTS=f"{cl.HOST}:{zk}", CLUSTER_ZK_CHROOT=cl.CHROOT, CLUSTER_ZK_PORT=str(zk))
    lines.update(
        {
            "CLUSTER_BROKER_IDS": ",".join(map(str, cl.BROKER_IDS)),
            "CLUSTER_BROKER_PORTS": ",".join(str(bports[i]) for i in cl.BROKER_IDS),
            **{f"CLUSTER_BROKER_{i}": f"{cl.HOST}:{bports[i]}" for i in cl.BROKER_IDS},
            "CLUSTER_RACKS": ",".join(cl.RACKS[i] for i in cl.BROKER_IDS),
            "CLUSTER_DIR": str(cluster_dir()),
            "CLUSTER_KAFKA_VERSION": KAFKA4 if mode == "kraft" else KAFKA3,
            "CLUSTER_MODE": mode,
        }
    )
    # The brokers' log.dirs as the brokers see them (inside their containers; docker-compose.yml)
    lines["CLUSTER_LOG_DIRS"] = ";".join(f"{i}:{','.join(CONTAINER_LOG_DIRS)}" for i in cl.BROKER_IDS)
    if mode == "kraft":
        lines["CLUSTER_CONTROLLER_PORTS"] = ",".join(
            str(ports[f"RC_CONTROLLER_{i}_PORT"]) for i in cl.BROKER_IDS
        )
    libs4 = cl.jars_dir(KAFKA4)
    if cl.jars_present(libs4, KAFKA4):
        lines["KAFKA_TOOLS_CLASSPATH"] = f"{libs4}/*"
    env_file = cluster_dir() / "env"
    tmp = env_file.with_suffix(".tmp")
    tmp.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    tmp.replace(env_file)


# --------------------------------------------------------------------------- commands


def cmd_up(mode: str) -> int:
    t0 = time.monotonic()
    root = cluster_dir()
    if (root / "state.json").exists():
        raise DockerError(
            f"{root} belongs to scripts/cluster: use another CLUSTER_DIR for the docker cluster"
        )
    st = load_state()
    if st and st["mode"] != mode:
        raise DockerError(f"{root} holds a {st['mode']} docker cluster: `scripts/docker down` it first")
    root.mkdir(parents=True, exist_ok=True)
    ensure_packages()
    ensure_dockerd()
    base = ensure_images()
    if not st:
        st = {"mode": mode, "project": project_name(), "ports": pick_ports(mode), "base": base}
        state_file().write_text(json.dumps(st, indent=2) + "\n")
    say(f"starting {', '.join(services(mode))} ({shlex.join(compose_cmd())}, project {st['project']}) ...")
    r = compose(st, "up", "-d", "--no-build", *services(mode))
    if r.returncode != 0:
        raise DockerError(f"compose up failed:\n{r.stderr[-3000:]}")
    wait_healthy(st)
    write_env(st)
    say(f"up in {time.monotonic() - t0:.1f}s: docker {mode} cluster; env in {root / 'env'}")
    print((root / "env").read_text(), end="")
    return 0


def cmd_down() -> int:
    st = load_state()
    (cluster_dir() / "env").unlink(missing_ok=True)
    if st and daemon_answers():
        r = compose(st, "down", "-v", "--remove-orphans", "--timeout", "60")
        if r.returncode != 0:
            raise DockerError(f"compose down failed:\n{r.stderr[-3000:]}")
        say(f"containers of {st['project']} removed")
    elif not st:
        say(f"no docker cluster in {cluster_dir()}")
    state_file().unlink(missing_ok=True)
    stop_dockerd()
    return 0


def cmd_status() -> int:
    st = load_state()
    if not st or not daemon_answers():
        print(f"no docker cluster in {cluster_dir()}")
        return 3
    health = container_health(st)
    ports = dict(st["ports"])  # type: ignore[call-overload]
    print(f"mode: {st['mode']}, project {st['project']}, ports {ports}")
    for svc, h in health.items():
        print(f"{svc:<10} {h}")
    print(f"env: {cluster_dir() / 'env' if (cluster_dir() / 'env').exists() else '(none)'}")
    if all(h == "healthy" for h in health.values()):
        return 0
    return 1 if any(h in ("healthy", "starting", "unhealthy") for h in health.values()) else 3


def broker_service(st: dict[str, object], arg: str | None) -> str:
    i = cl.parse_broker(arg)
    return f"kraft-{i}" if st["mode"] == "kraft" else f"kafka-{i}"


def cmd_broker(action: str, arg: str | None) -> int:
    st = load_state()
    if not st:
        raise DockerError(f"no docker cluster in {cluster_dir()}")
    svc = broker_service(st, arg)
    r = compose(st, action, svc) if action == "start" else compose(st, "stop", "--timeout", "60", svc)
    if r.returncode != 0:
        raise DockerError(f"compose {action} {svc} failed:\n{r.stderr[-3000:]}")
    if action == "start":
        wait_healthy(st)
    say(f"{svc}: {action}ed")
    return 0


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else ""
    try:
        if cmd == "up":
            extra = [a for a in argv[1:] if a != "--kraft"]
            if extra:
                raise DockerError(f"unknown arguments {extra}")
            return cmd_up("kraft" if "--kraft" in argv[1:] else "zk")
        if cmd == "down":
            return cmd_down()
        if cmd == "status":
            return cmd_status()
        if cmd == "env":
            env = cluster_dir() / "env"
            if not env.exists():
                return 1
            print(env.read_text(), end="")
            return 0
        if cmd in ("stop-broker", "start-broker"):
            return cmd_broker(cmd.split("-")[0], argv[1] if len(argv) > 1 else None)
        if cmd == "jars":
            stage_jars()
            print(JARS_STAGE)
            return 0
        if cmd == "images":
            ensure_packages()
            ensure_dockerd()
            ensure_images()
            tool_image()
            return 0
    except DockerError as e:
        print(f"docker: error: {e}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 0 if cmd in ("-h", "--help", "help") else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
