"""scripts/docker: the compose cluster of docker-compose.yml, from a bare Linux machine to healthy.

usage: scripts/docker up [--kraft] | down | status | env | stop-broker N | start-broker N | jars
       | images [--spark]

up      installs docker.io, docker-compose and mmdebstrap from Debian's packages if missing; writes
        /etc/docker/daemon.json (no bridge, no iptables, no forwarding) if absent, and refuses to go on
        if an existing one allows a bridge; starts dockerd if it is not running (by hand; recorded with
        the CLUSTER_DIRs that use it in ~/.cache/reassign_cli/docker/dockerd.json); bootstraps a Debian
        base image with a JRE (mmdebstrap | docker import, cached under ~/.cache/reassign_cli/docker/);
        builds the Kafka image from docker/ with the cached jars; starts ZooKeeper + brokers 1-3 (Kafka
        3.9.2), or with --kraft three combined KRaft 4.3.1 nodes; waits until healthy; writes
        $CLUSTER_DIR/env with the variables `scripts/cluster up` writes.
down    stops and removes this CLUSTER_DIR's containers; stops dockerd (by pid) and unmounts what it
        leaves if scripts/docker started it and no other CLUSTER_DIR still uses it (users with no
        running container and no `up` under way are dropped); a dockerd started otherwise is never
        stopped.
status  the containers and their health (exit 0 all healthy, 1 some, 3 none).
images  builds the images; also the tool's own (Dockerfile, target cli), and with --spark its
        target spark too (reassign-cli/kafka-reassign:spark; pyspark at the venv's version).

Environment: CLUSTER_DIR (default <repo>/.cluster), RC_DOCKER (the docker client, default
/usr/bin/docker: Debian's, which builds with BuildKit), RC_COMPOSE (v1: docker-compose 1.x; v2: the
client's `compose` plugin, else compose v2 from Debian trixie's docker-compose package, fetched with a
private apt configuration into ~/.cache/reassign_cli/docker/compose-v2/, nothing installed; auto,
the default: v1 if installed, else v2; or a command such as "docker compose"; `up` keeps its choice
in $CLUSTER_DIR/docker.json for the later commands), RC_BASE_IMAGE (use this base instead of
bootstrapping one), RC_ZK_PORT, RC_BROKER_<n>_PORT, RC_KRAFT_<n>_PORT, RC_CONTROLLER_<n>_PORT
(default: free ports), RC_ALLOW_BRIDGE_DAEMON=1 (a hosted CI runner: use its running dockerd even
though its daemon.json allows bridges). Python standard library only (plus scripts/_cluster.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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
TOOL_SPARK_IMAGE = "reassign-cli/kafka-reassign:spark"
COMPOSE_V2_SUITE = "trixie"  # Debian's first release whose docker-compose package is compose v2 (2.26)
COMPOSE_V2 = CACHE / "compose-v2" / "docker-compose"
DOCKERD_RECORD = CACHE / "dockerd.json"  # the dockerd scripts/docker started, and the CLUSTER_DIRs using it
DOCKERD_LOCK = CACHE / "dockerd.lock"
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


def compose_command(choice: str, v1: str | None, plugin: bool, cached_v2: Path | None) -> list[str]:
    """The compose command line for RC_COMPOSE=choice: `v1` (docker-compose 1.x), `v2` (the docker
    client's `compose` plugin, else the v2 binary cached from Debian's package), `auto` (v1 if installed,
    else v2), or a command of the user's own ("docker compose", a path). v1: the docker-compose on PATH;
    plugin: whether `<docker> compose version` works."""
    if choice == "v1":
        if not v1:
            raise DockerError(
                "RC_COMPOSE=v1 but no docker-compose on PATH (Debian: apt-get install docker-compose)"
            )
        return [v1]
    if choice == "v2" or (choice == "auto" and not v1):
        if plugin:
            return [docker_bin(), "compose"]
        if cached_v2:
            return [str(cached_v2)]
        if choice == "v2":
            raise DockerError("RC_COMPOSE=v2 but no compose v2 here: `scripts/docker up` fetches one")
        return [docker_bin(), "compose"]
    if choice == "auto":
        return [v1] if v1 else [docker_bin(), "compose"]
    return shlex.split(choice)


def compose_choice() -> str:
    return os.environ.get("RC_COMPOSE") or "auto"


def compose_plugin_works() -> bool:
    return run([docker_bin(), "compose", "version"], capture_output=True).returncode == 0


def cached_compose_v2() -> Path | None:
    return COMPOSE_V2 if COMPOSE_V2.exists() else None


def compose_cmd() -> list[str]:
    choice = compose_choice()
    v1 = shutil.which("docker-compose")
    if choice not in ("v1", "v2", "auto"):
        return compose_command(choice, v1, False, None)
    v2_needed = choice == "v2" or (choice == "auto" and not v1)
    plugin = v2_needed and compose_plugin_works()
    return compose_command(choice, v1, plugin, cached_compose_v2())


def fetch_compose_v2() -> Path:
    """Compose v2 from Debian's `docker-compose` package of COMPOSE_V2_SUITE (bookworm has only v1):
    apt-get update and download with a private apt configuration under the cache (the machine's apt
    sources, lists and packages stay as they are), the plugin binary extracted with dpkg-deb and kept
    as COMPOSE_V2. Installs nothing: v1 stays the machine's docker-compose."""
    root = COMPOSE_V2.parent
    apt = root / "apt"
    for d in ("lists/partial", "cache/archives/partial", "etc/preferences.d", "etc/sources.list.d", "debs"):
        (apt / d).mkdir(parents=True, exist_ok=True)
    (apt / "etc" / "sources.list").write_text(
        "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        f"http://deb.debian.org/debian {COMPOSE_V2_SUITE} main\n"
    )
    opts = [
        f"-oDir::Etc::SourceList={apt}/etc/sources.list",
        f"-oDir::Etc::SourceParts={apt}/etc/sources.list.d",
        f"-oDir::Etc::Preferences={apt}/etc/preferences",
        f"-oDir::Etc::PreferencesParts={apt}/etc/preferences.d",
        f"-oDir::State::Lists={apt}/lists",
        f"-oDir::Cache={apt}/cache",
        "-oAPT::Sandbox::User=root",
    ]
    say(
        f"fetching compose v2 from Debian {COMPOSE_V2_SUITE}'s docker-compose package (private apt lists) ..."
    )
    checked(["apt-get", *opts, "-q", "update"], "apt-get update (compose v2)", capture_output=True)
    for old in (apt / "debs").glob("*.deb"):
        old.unlink()
    checked(
        ["apt-get", *opts, "download", f"docker-compose/{COMPOSE_V2_SUITE}"],
        "apt-get download docker-compose",
        capture_output=True,
        cwd=apt / "debs",
    )
    deb = next((apt / "debs").glob("docker-compose_2*.deb"), None)
    if deb is None:
        raise DockerError(f"Debian {COMPOSE_V2_SUITE}'s docker-compose is not 2.x: no compose v2 to be had")
    unpacked = root / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    checked(["dpkg-deb", "-x", str(deb), str(unpacked)], "dpkg-deb -x", capture_output=True)
    plugin = unpacked / "usr" / "libexec" / "docker" / "cli-plugins" / "docker-compose"
    tmp = COMPOSE_V2.with_suffix(".tmp")
    shutil.copy2(plugin, tmp)
    tmp.replace(COMPOSE_V2)
    shutil.rmtree(unpacked, ignore_errors=True)
    version = checked([str(COMPOSE_V2), "version", "--short"], "compose v2", capture_output=True).stdout
    say(f"compose v2 {version.strip()} in {COMPOSE_V2}")
    return COMPOSE_V2


def ensure_compose() -> None:
    """RC_COMPOSE=v2 with neither the plugin nor a cached binary: fetch the v2 binary (see above)."""
    if compose_choice() == "v2" and not compose_plugin_works() and not cached_compose_v2():
        fetch_compose_v2()


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
    if compose_choice() != "v2" and not shutil.which("docker-compose") and not compose_plugin_works():
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


def proc_ident(pid: int) -> dict[str, object]:
    """pid and start time (clock ticks since boot, /proc/PID/stat field 22): a process, not a reused pid."""
    try:
        start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        start = ""
    return {"pid": pid, "start": start}


def same_process(ident: object) -> bool:
    if not isinstance(ident, dict) or not isinstance(ident.get("pid"), int):
        return False
    pid = int(ident["pid"])
    return cl.proc_alive(pid) and proc_ident(pid)["start"] == ident.get("start")


@contextlib.contextmanager
def dockerd_lock() -> Iterator[None]:
    """flock on DOCKERD_LOCK: one scripts/docker at a time reads and writes DOCKERD_RECORD (and starts
    or stops dockerd). The kernel releases it when its holder dies, even by kill -9."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(DOCKERD_LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def read_record() -> dict[str, Any] | None:
    try:
        rec = json.loads(DOCKERD_RECORD.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("users"), dict) else None


def write_record(rec: dict[str, Any]) -> None:
    tmp = DOCKERD_RECORD.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
    tmp.replace(DOCKERD_RECORD)


def ours(rec: dict[str, Any] | None) -> bool:
    """The record's dockerd is the running one (same pid and start time, a dockerd)."""
    if not rec or not same_process(rec.get("dockerd")):
        return False
    return "dockerd" in (cl.proc_cmdline(int(rec["dockerd"]["pid"])) or "")


def register_user(rec: dict[str, Any]) -> None:
    """This CLUSTER_DIR uses the dockerd of rec: its project, and this process (an `up` under way)."""
    rec["users"][str(cluster_dir())] = {"project": project_name(), "up": proc_ident(os.getpid())}


def split_users(
    users: dict[str, Any], running_projects: set[str], alive: Callable[[object], bool] = same_process
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(live, stale) users of our dockerd. Live: its compose project has a running container, or the
    `up` that registered it still runs (between registering and its containers starting). Stale: neither
    (its `up` was killed before any container ran, or its containers were removed or died and nobody
    ran `down`): such an entry must not keep dockerd running."""
    live, stale = {}, {}
    for directory, user in users.items():
        ok = isinstance(user, dict) and (user.get("project") in running_projects or alive(user.get("up")))
        (live if ok else stale)[directory] = user
    return live, stale


def running_projects() -> set[str]:
    """The compose projects with a running container (v1 and v2 both label their containers)."""
    fmt = '{{.Label "com.docker.compose.project"}}'
    r = run([docker_bin(), "ps", "--format", fmt], capture_output=True)
    return {line.strip() for line in r.stdout.splitlines() if line.strip()} if r.returncode == 0 else set()


def ensure_dockerd() -> None:
    """dockerd answering, started if none runs; this CLUSTER_DIR recorded as a user of it if it is the
    one scripts/docker started (DOCKERD_RECORD). A dockerd started otherwise is used and never stopped."""
    check_daemon_json()
    with dockerd_lock():
        rec = read_record()
        if rec and not ours(rec):
            DOCKERD_RECORD.unlink(missing_ok=True)  # its dockerd is gone
            rec = None
        if daemon_answers():
            if rec:
                register_user(rec)
                write_record(rec)
            return
        if Path("/var/run/docker.pid").exists() and cl.proc_alive(
            int(Path("/var/run/docker.pid").read_text() or 0)
        ):
            raise DockerError(
                "a dockerd runs but does not answer on /var/run/docker.sock: not starting another"
            )
        rec = {"dockerd": proc_ident(start_dockerd()), "users": {}}
        register_user(rec)
        write_record(rec)


def start_dockerd() -> int:
    dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    log = CACHE / "dockerd.log"
    say(f"starting dockerd (log {log}) ...")
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [dockerd], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    cl.wait_for(daemon_answers, 60, "dockerd to answer")
    say(f"dockerd up (pid {proc.pid})")
    return proc.pid


def stop_dockerd() -> None:
    """This CLUSTER_DIR no longer uses our dockerd; stop it (by pid) when no live user is left (stale
    users dropped, see split_users) and no other container runs on it."""
    (cluster_dir() / "dockerd.pid").unlink(missing_ok=True)  # older scripts/docker kept the pid here
    with dockerd_lock():
        rec = read_record()
        if not ours(rec):
            DOCKERD_RECORD.unlink(missing_ok=True)
            return
        assert rec is not None
        rec["users"].pop(str(cluster_dir()), None)
        live, stale = split_users(rec["users"], running_projects())
        for directory in stale:
            say(f"dropped {directory} from dockerd's users: no container of it runs, no `up` of it either")
        rec["users"] = live
        pid = int(rec["dockerd"]["pid"])
        if live:
            write_record(rec)
            say(f"dockerd (pid {pid}) left running: still used by {', '.join(sorted(live))}")
            return
        others = run([docker_bin(), "ps", "-q"], capture_output=True).stdout.split()
        if others:
            write_record(rec)
            say(f"dockerd (pid {pid}) left running: {len(others)} container(s) not started by scripts/docker")
            return
        say(f"stopping dockerd (pid {pid}) ...")
        os.kill(pid, signal.SIGTERM)
        cl.wait_for(lambda: not cl.proc_alive(pid), 60, "dockerd to stop")
        DOCKERD_RECORD.unlink(missing_ok=True)
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


def venv_python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def venv_constraints(python: str) -> str:
    """`pip freeze` of the venv (the project itself left out): the image gets the venv's versions."""
    r = checked(
        [python, "-m", "pip", "freeze", "--exclude-editable", "--exclude", "reassign-cli"],
        "pip freeze",
        capture_output=True,
    )
    return "".join(f"{line}\n" for line in r.stdout.splitlines() if "==" in line and " @ " not in line)


def make_wheels(python: str, directory: Path, requirement: str, constraints: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("reassign_cli-*.whl"):
        old.unlink()  # always the current source
    (directory / "constraints.txt").write_text(constraints)
    checked(
        [python, "-m", "pip", "wheel", "-q", "-w", str(directory), "-c", str(directory / "constraints.txt"),
         requirement],
        f"pip wheel {requirement}",
        capture_output=True,
    )  # fmt: skip


def tool_image(spark: bool = False) -> None:
    """The tool's own image (Dockerfile at the repository root), on the same base: target `cli` as
    TOOL_IMAGE, and with spark target `spark` (pyspark; the base's Java 17 runs it) as TOOL_SPARK_IMAGE.
    Its wheels (the project and its dependencies, at the venv's versions) are made here with pip, so
    the build itself downloads nothing."""
    base = ensure_base_image()
    python = venv_python()
    constraints = venv_constraints(python)
    say("building the wheels of kafka-reassign and its dependencies ...")
    make_wheels(python, REPO / "docker" / "wheels", str(REPO), constraints)
    build("Dockerfile", TOOL_IMAGE, base, REPO, target="cli")
    if spark:
        spark_wheels(python, constraints)
        build("Dockerfile", TOOL_SPARK_IMAGE, base, REPO, target="spark")


def spark_wheels(python: str, constraints: str) -> None:
    """docker/wheels-spark: the wheels of the [spark] extra's dependencies (all of them, at the venv's
    versions), without the project's own: the Dockerfile's spark-deps stage installs them all, and its
    cached layer stays valid while the venv's versions stay the same (constraints.txt there)."""
    directory = REPO / "docker" / "wheels-spark"
    stamp = directory / "constraints.txt"
    if stamp.exists() and stamp.read_text() == constraints and any(directory.glob("pyspark-*.whl")):
        return
    say("building the wheels of kafka-reassign[spark]'s dependencies (pyspark, pandas, pyarrow) ...")
    for old in directory.glob("*.whl"):
        old.unlink()
    try:
        make_wheels(python, directory, f"{REPO}[spark]", constraints)
    except DockerError:
        stamp.unlink(missing_ok=True)
        raise
    for own in directory.glob("reassign_cli-*.whl"):
        own.unlink()


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
    cmd = [*state_compose(st), "-f", str(COMPOSE_FILE), "-p", str(st["project"])]
    if st["mode"] == "kraft":
        cmd += ["--profile", "kraft"]
    return run([*cmd, *args], env=env, capture_output=capture, cwd=REPO)


def state_compose(st: dict[str, object]) -> list[str]:
    """The compose that `up` used for this cluster (kept in docker.json), unless RC_COMPOSE says."""
    used = st.get("compose")
    if os.environ.get("RC_COMPOSE") or not isinstance(used, list):
        return compose_cmd()
    return [str(c) for c in used]


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
    tmp.write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in lines.items()))
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
    ensure_compose()
    ensure_dockerd()
    base = ensure_images()
    if not st:
        st = {"mode": mode, "project": project_name(), "ports": pick_ports(mode), "base": base}
        st["compose"] = compose_cmd()
        state_file().write_text(json.dumps(st, indent=2) + "\n")
    say(
        f"starting {', '.join(services(mode))} ({shlex.join(state_compose(st))}, project {st['project']}) ..."
    )
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
            extra = [a for a in argv[1:] if a != "--spark"]
            if extra:
                raise DockerError(f"unknown arguments {extra}")
            ensure_packages()
            ensure_dockerd()
            ensure_images()
            tool_image(spark="--spark" in argv[1:])
            return 0
    except DockerError as e:
        print(f"docker: error: {e}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 0 if cmd in ("-h", "--help", "help") else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
