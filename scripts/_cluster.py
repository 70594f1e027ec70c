"""Local ZooKeeper + 3 Kafka 3.9 brokers (ZooKeeper mode) from Maven jars. Standard library only.

Called by scripts/cluster (see `scripts/cluster --help` and docs/cluster.md). Everything lives under the
state directory ($CLUSTER_DIR, default <repo>/.cluster): configs, data, logs, pid files, the ports
chosen, and the `env` file the tests and the demo read.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POM = REPO / "scripts" / "maven" / "kafka-pom.xml"
BROKER_ENV_FILE = REPO / "docker" / "kafka-broker.env"

BROKER_IDS = (1, 2, 3)
RACKS = {1: "r1", 2: "r2", 3: "r3"}
CHROOT = "/kafka"
LOG_DIRS_PER_BROKER = 2
HOST = "127.0.0.1"

ZK_HEAP = "-Xms128m -Xmx256m"
BROKER_HEAP = "-Xms512m -Xmx768m"
JVM_COMMON = ["-XX:-UsePerfData", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]

START_TIMEOUT = float(os.environ.get("CLUSTER_TIMEOUT", "180"))
STOP_TIMEOUT = float(os.environ.get("CLUSTER_STOP_TIMEOUT", "60"))

LOG4J = """\
# Written by scripts/cluster. Console output goes to the process log file.
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n

# Controller and state-change messages (e.g. "Ignoring partition reassignment due to invalid json")
# also get files of their own next to each broker's server.log.
log4j.appender.controllerAppender=org.apache.log4j.FileAppender
log4j.appender.controllerAppender.File=${kafka.logs.dir}/controller.log
log4j.appender.controllerAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.controllerAppender.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stateChangeAppender=org.apache.log4j.FileAppender
log4j.appender.stateChangeAppender.File=${kafka.logs.dir}/state-change.log
log4j.appender.stateChangeAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.stateChangeAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.logger.kafka.controller=INFO, controllerAppender
log4j.logger.state.change.logger=INFO, stateChangeAppender
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.kafka.clients.NetworkClient=WARN
"""


class ClusterError(Exception):
    pass


def say(msg: str) -> None:
    print(f"cluster: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- settings


def kafka_version() -> str:
    env = os.environ.get("KAFKA_VERSION")
    if env:
        return env
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if not m:
        raise ClusterError(f"no <kafka.version> in {POM}")
    return m.group(1).strip()


def env_name_to_property(name: str) -> str:
    """Confluent's convention: KAFKA_FOO_BAR -> foo.bar, '__' -> '-', '___' -> '_'."""
    if not name.startswith("KAFKA_"):
        raise ClusterError(f"{BROKER_ENV_FILE}: {name} does not start with KAFKA_")
    rest = name[len("KAFKA_") :].lower()
    return rest.replace("___", "\0").replace("__", "-").replace("_", ".").replace("\0", "_")


def read_env_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key:
            raise ClusterError(f"{path}:{n}: expected NAME=value")
        out[key.strip()] = value.strip()
    return out


def shared_broker_settings() -> dict[str, str]:
    """The broker settings common to all brokers, as server.properties keys."""
    return {env_name_to_property(k): v for k, v in read_env_file(BROKER_ENV_FILE).items()}


def broker_properties(broker_id: int, port: int, zk_port: int, log_dirs: list[str]) -> dict[str, str]:
    props = {
        "broker.id": str(broker_id),
        "broker.rack": RACKS[broker_id],
        "listeners": f"PLAINTEXT://{HOST}:{port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "log.dirs": ",".join(log_dirs),
        "zookeeper.connect": f"{HOST}:{zk_port}{CHROOT}",
    }
    props.update(shared_broker_settings())
    return props


def zk_config(data_dir: Path, port: int) -> dict[str, str]:
    return {
        "tickTime": "2000",
        "dataDir": str(data_dir),
        "clientPort": str(port),
        "clientPortAddress": HOST,
        "maxClientCnxns": "0",
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "srvr,ruok,stat,mntr",
    }


def write_properties(path: Path, props: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# Written by scripts/cluster\n" + "".join(f"{k}={v}\n" for k, v in props.items())
    path.write_text(text)


# --------------------------------------------------------------------------- jars


def jars_dir() -> Path:
    env = os.environ.get("KAFKA_JARS_DIR")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "reassign_cli" / f"kafka-{kafka_version()}" / "libs"


def jars_present(libs: Path) -> bool:
    v = kafka_version()
    return (libs / f"kafka_2.13-{v}.jar").is_file() and any(libs.glob("slf4j-reload4j-*.jar"))


def ensure_jars() -> Path:
    libs = jars_dir()
    if jars_present(libs):
        return libs
    if not shutil.which("mvn"):
        raise ClusterError(f"Kafka jars missing in {libs} and no `mvn` on PATH to fetch them")
    v = kafka_version()
    say(f"fetching Kafka {v} jars from Maven Central into {libs} ...")
    libs.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="libs.", dir=libs.parent))
    cmd = [
        "mvn", "-q", "-B", "-f", str(POM), f"-Dkafka.version={v}",
        "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={tmp}",
    ]  # fmt: skip
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0 or not jars_present(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-20:])
        raise ClusterError(f"mvn could not fetch the Kafka {v} jars:\n{tail}")
    if libs.exists():  # a concurrent fetch won; keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.rename(libs)
    return libs


# --------------------------------------------------------------------------- tiny ZooKeeper client


class MiniZk:
    """Just enough of the ZooKeeper wire protocol to list children, test existence and read data."""

    NONODE = -101

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.xid = 0
        # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd
        self._send(struct.pack(">iqiqi", 0, 0, 10000, 0, 16) + b"\0" * 16 + b"\0")  # readOnly=false
        reply = self._recv()
        if len(reply) < 16 or struct.unpack_from(">i", reply, 4)[0] <= 0:
            raise OSError("ZooKeeper refused the session")

    def _send(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def _recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise OSError("ZooKeeper closed the connection")
            buf += chunk
        return buf

    def _recv(self) -> bytes:
        (n,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(n)

    def _call(self, op: int, path: str) -> tuple[int, bytes]:
        self.xid += 1
        p = path.encode()
        self._send(struct.pack(">ii", self.xid, op) + struct.pack(">i", len(p)) + p + b"\0")
        while True:
            body = self._recv()
            xid, _zxid, err = struct.unpack_from(">iqi", body)
            if xid == self.xid:
                return err, body[16:]

    def children(self, path: str) -> list[str] | None:
        err, body = self._call(8, path)
        if err == self.NONODE:
            return None
        if err:
            raise OSError(f"ZooKeeper error {err} on {path}")
        (count,) = struct.unpack_from(">i", body)
        off, out = 4, []
        for _ in range(max(count, 0)):
            (ln,) = struct.unpack_from(">i", body, off)
            out.append(body[off + 4 : off + 4 + ln].decode())
            off += 4 + ln
        return out

    def exists(self, path: str) -> bool:
        err, _ = self._call(3, path)
        if err not in (0, self.NONODE):
            raise OSError(f"ZooKeeper error {err} on {path}")
        return err == 0

    def get(self, path: str) -> bytes | None:
        err, body = self._call(4, path)
        if err == self.NONODE:
            return None
        if err:
            raise OSError(f"ZooKeeper error {err} on {path}")
        (ln,) = struct.unpack_from(">i", body)
        return body[4 : 4 + ln] if ln > 0 else b""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.xid += 1
            self._send(struct.pack(">ii", self.xid, -11))
        self.sock.close()


@contextlib.contextmanager
def zk_session(port: int) -> Iterator[MiniZk]:
    zk = MiniZk(port)
    try:
        yield zk
    finally:
        zk.close()


def zk_ok(port: int) -> bool:
    try:
        with zk_session(port) as zk:
            zk.exists("/")
        return True
    except OSError:
        return False


def registered_brokers(port: int) -> dict[int, dict[str, object]]:
    """Broker id -> its registration JSON, under the chroot; {} if nothing is registered."""
    with zk_session(port) as zk:
        ids = zk.children(f"{CHROOT}/brokers/ids") or []
        out: dict[int, dict[str, object]] = {}
        for i in ids:
            data = zk.get(f"{CHROOT}/brokers/ids/{i}")
            if data is not None:
                out[int(i)] = json.loads(data)
        return out


def controller_id(port: int) -> int | None:
    with zk_session(port) as zk:
        data = zk.get(f"{CHROOT}/controller")
    return int(json.loads(data)["brokerid"]) if data else None


# --------------------------------------------------------------------------- tiny Kafka metadata probe


def kafka_metadata(port: int, timeout: float = 5.0) -> tuple[list[int], int]:
    """Metadata v1 (no topics) from one broker: (broker ids it knows, controller id)."""
    client = b"cluster-script"
    req = struct.pack(">hhih", 3, 1, 1, len(client)) + client + struct.pack(">i", 0)
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(req)) + req)

        def recv_exact(n: int) -> bytes:
            buf = b""
            while len(buf) < n:
                chunk = s.recv(n - len(buf))
                if not chunk:
                    raise OSError("broker closed the connection")
                buf += chunk
            return buf

        (n,) = struct.unpack(">i", recv_exact(4))
        body = recv_exact(n)
    off = 4  # correlation id
    (count,) = struct.unpack_from(">i", body, off)
    off += 4
    ids = []
    for _ in range(count):
        (node,) = struct.unpack_from(">i", body, off)
        off += 4
        (hl,) = struct.unpack_from(">h", body, off)
        off += 2 + hl + 4  # host, port
        (rl,) = struct.unpack_from(">h", body, off)
        off += 2 + max(rl, 0)  # rack (nullable)
        ids.append(node)
    (ctrl,) = struct.unpack_from(">i", body, off)
    return sorted(ids), ctrl


def listening(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------- state directory


class Cluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    # paths
    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def env_file(self) -> Path:
        return self.root / "env"

    def pid_file(self, name: str) -> Path:
        return self.root / "pids" / f"{name}.pid"

    def log_file(self, name: str) -> Path:
        return self.root / "logs" / name / "server.log"

    def config_file(self, name: str) -> Path:
        return self.root / "config" / (f"{name}.properties" if name != "zookeeper" else "zoo.cfg")

    def broker_log_dirs(self, broker_id: int) -> list[str]:
        return [str(self.root / "data" / f"broker-{broker_id}" / f"d{i}") for i in range(LOG_DIRS_PER_BROKER)]

    # state
    def load_state(self) -> dict[str, object] | None:
        try:
            return dict(json.loads(self.state_file.read_text()))
        except (FileNotFoundError, ValueError):
            return None

    def ports(self) -> tuple[int, dict[int, int]]:
        st = self.load_state()
        if not st:
            raise ClusterError(f"no cluster state in {self.root} (run `scripts/cluster up` first)")
        brokers = st["broker_ports"]
        assert isinstance(brokers, dict)
        return int(str(st["zk_port"])), {int(k): int(v) for k, v in brokers.items()}

    # processes
    def pid(self, name: str) -> int | None:
        try:
            return int(self.pid_file(name).read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def alive(self, name: str) -> bool:
        """True if the pid in the pid file is running AND is our process (its command line names our
        config file), so a recycled pid is never mistaken for ours."""
        child = self.children.get(name)
        if child is not None:  # started by this run (its cmdline may not be exec'd yet)
            return child.poll() is None
        pid = self.pid(name)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        cmdline = proc_cmdline(pid)
        return cmdline is not None and str(self.config_file(name)) in cmdline

    def spawn(self, name: str, main_class: str, heap: str, extra_jvm: list[str]) -> None:
        libs = ensure_jars()
        java = os.environ.get("JAVA") or shutil.which("java") or "/usr/bin/java"
        log = self.log_file(name)
        log.parent.mkdir(parents=True, exist_ok=True)
        if log.exists() and log.stat().st_size:
            log.replace(log.with_suffix(".log.1"))
        cmd = [
            java, *heap.split(), *JVM_COMMON,
            f"-Dlog4j.configuration=file:{self.root / 'config' / 'log4j.properties'}",
            f"-Dkafka.logs.dir={log.parent}",
            *extra_jvm,
            "-cp", f"{libs}/*", main_class, str(self.config_file(name)),
        ]  # fmt: skip
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                cwd=self.root,
            )
        self.children[name] = proc
        self.pid_file(name).parent.mkdir(parents=True, exist_ok=True)
        self.pid_file(name).write_text(f"{proc.pid}\n")
        say(f"started {name} (pid {proc.pid}, log {log.relative_to(self.root)})")

    def stop(self, names: list[str]) -> None:
        """TERM every live process among names, wait, KILL the ones left after STOP_TIMEOUT."""
        pids = {}
        for name in names:
            if self.alive(name):
                pid = self.pid(name)
                assert pid is not None
                pids[name] = pid
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                say(f"stopping {name} (pid {pid})")
            else:
                self.pid_file(name).unlink(missing_ok=True)
        deadline = time.monotonic() + STOP_TIMEOUT
        while pids and time.monotonic() < deadline:
            for name in [n for n in pids if not self._running(n, pids[n])]:
                del pids[name]
                self.pid_file(name).unlink(missing_ok=True)
            if pids:
                time.sleep(0.2)
        for name, pid in pids.items():
            say(f"{name} (pid {pid}) did not stop within {STOP_TIMEOUT:g}s: KILL")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while self._running(name, pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            self.pid_file(name).unlink(missing_ok=True)

    def _running(self, name: str, pid: int) -> bool:
        child = self.children.get(name)
        if child is not None and child.pid == pid:
            return child.poll() is None
        return proc_alive(pid)

    def log_tail(self, name: str, lines: int = 40) -> str:
        try:
            text = self.log_file(name).read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def check_alive(self, names: list[str]) -> None:
        for name in names:
            if not self.alive(name):
                raise ClusterError(
                    f"{name} exited during startup; last lines of {self.log_file(name)}:\n{self.log_tail(name)}"
                )


def proc_cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except FileNotFoundError:
        if not Path("/proc/self").exists():  # no procfs (macOS): ask ps
            r = subprocess.run(["ps", "-p", str(pid), "-o", "command="], capture_output=True, text=True)
            return r.stdout.strip() or None
        return None


def proc_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive, unless other threads of it still run (a JVM shutting down)
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            return True
        return len(list(Path(f"/proc/{pid}/task").iterdir())) > 1
    except (FileNotFoundError, IndexError):
        return True


def wait_for(
    pred: Callable[[], bool], timeout: float, what: str, check: Callable[[], None] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.1
    while True:
        if check:
            check()
        with contextlib.suppress(OSError, ValueError, struct.error):
            if pred():
                return
        if time.monotonic() >= deadline:
            raise ClusterError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- ports


def pick_ports(n: int, avoid: set[int]) -> list[int]:
    """n distinct free loopback ports, below the usual ephemeral range so that no outgoing
    connection takes one between our check and the server's bind."""
    rng = random.Random()
    out: list[int] = []
    for _ in range(2000):
        p = rng.randrange(20000, 32000)
        if p in avoid or p in out:
            continue
        with socket.socket() as s:
            try:
                s.bind((HOST, p))
            except OSError:
                continue
        out.append(p)
        if len(out) == n:
            return out
    raise ClusterError("could not find free ports")


def port_overrides() -> tuple[int | None, dict[int, int] | None]:
    zk = os.environ.get("CLUSTER_ZK_PORT")
    bp = os.environ.get("CLUSTER_BROKER_PORTS")
    brokers = None
    if bp:
        ports = [int(x) for x in bp.replace(" ", "").split(",") if x]
        if len(ports) != len(BROKER_IDS):
            raise ClusterError(f"CLUSTER_BROKER_PORTS needs {len(BROKER_IDS)} ports, got {bp!r}")
        brokers = dict(zip(BROKER_IDS, ports, strict=True))
    return (int(zk) if zk else None), brokers


# --------------------------------------------------------------------------- commands


def names() -> list[str]:
    return ["zookeeper", *[f"broker-{i}" for i in BROKER_IDS]]


def broker_ready(c: Cluster, broker_id: int) -> bool:
    zk_port, bports = c.ports()
    if broker_id not in registered_brokers(zk_port):
        return False
    ids, ctrl = kafka_metadata(bports[broker_id])
    return set(ids) >= set(registered_brokers(zk_port)) and ctrl >= 0


def cluster_ready(c: Cluster) -> bool:
    zk_port, bports = c.ports()
    if set(registered_brokers(zk_port)) != set(BROKER_IDS) or controller_id(zk_port) is None:
        return False
    for p in bports.values():
        ids, ctrl = kafka_metadata(p)
        if set(ids) != set(BROKER_IDS) or ctrl < 0:
            return False
    return True


def write_env(c: Cluster) -> None:
    zk_port, bports = c.ports()
    lines = {
        "KAFKA_REASSIGN_ZOOKEEPER": f"{HOST}:{zk_port}{CHROOT}",
        "KAFKA_BOOTSTRAP": ",".join(f"{HOST}:{bports[i]}" for i in BROKER_IDS),
        "CLUSTER_ZK_HOSTS": f"{HOST}:{zk_port}",
        "CLUSTER_ZK_CHROOT": CHROOT,
        "CLUSTER_ZK_PORT": str(zk_port),
        "CLUSTER_BROKER_IDS": ",".join(map(str, BROKER_IDS)),
        "CLUSTER_BROKER_PORTS": ",".join(str(bports[i]) for i in BROKER_IDS),
        **{f"CLUSTER_BROKER_{i}": f"{HOST}:{bports[i]}" for i in BROKER_IDS},
        "CLUSTER_RACKS": ",".join(RACKS[i] for i in BROKER_IDS),
        "CLUSTER_DIR": str(c.root),
        "CLUSTER_KAFKA_VERSION": kafka_version(),
    }
    tmp = c.env_file.with_suffix(".tmp")
    tmp.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    tmp.replace(c.env_file)


def write_configs(c: Cluster, zk_port: int, bports: dict[int, int]) -> None:
    (c.root / "config").mkdir(parents=True, exist_ok=True)
    (c.root / "config" / "log4j.properties").write_text(LOG4J)
    write_properties(c.config_file("zookeeper"), zk_config(c.root / "data" / "zookeeper", zk_port))
    for i in BROKER_IDS:
        dirs = c.broker_log_dirs(i)
        for d in dirs:
            Path(d).mkdir(parents=True, exist_ok=True)
        write_properties(c.config_file(f"broker-{i}"), broker_properties(i, bports[i], zk_port, dirs))


def start_zookeeper(c: Cluster) -> None:
    zk_port, _ = c.ports()
    if listening(zk_port):
        raise ClusterError(f"port {zk_port} (ZooKeeper) is already in use by another process")
    c.spawn("zookeeper", "org.apache.zookeeper.server.quorum.QuorumPeerMain", ZK_HEAP, [])
    wait_for(lambda: zk_ok(zk_port), START_TIMEOUT, "ZooKeeper", lambda: c.check_alive(["zookeeper"]))


def start_brokers(c: Cluster, ids: list[int]) -> None:
    _, bports = c.ports()
    for i in ids:
        if listening(bports[i]):
            raise ClusterError(f"port {bports[i]} (broker {i}) is already in use by another process")
    for i in ids:
        c.spawn(f"broker-{i}", "kafka.Kafka", os.environ.get("CLUSTER_BROKER_HEAP", BROKER_HEAP), [])


def cmd_up(c: Cluster) -> int:
    ensure_jars()
    running = [n for n in names() if c.alive(n)]
    if len(running) == len(names()) and c.load_state():
        with contextlib.suppress(ClusterError, OSError, ValueError, struct.error):
            if cluster_ready(c):
                write_env(c)
                say(f"already up ({c.root}); connection settings in {c.env_file}")
                print_env(c)
                return 0
    t0 = time.monotonic()
    try:
        if not running:
            fresh_state(c)
        else:
            say(f"partly running ({', '.join(running)}); starting the rest")
        zk_port, _ = c.ports()
        if not c.alive("zookeeper"):
            start_zookeeper(c)
        missing = [i for i in BROKER_IDS if not c.alive(f"broker-{i}")]
        start_brokers(c, missing)
        wait_for(
            lambda: cluster_ready(c),
            START_TIMEOUT,
            f"brokers {','.join(map(str, BROKER_IDS))} to register and see each other",
            lambda: c.check_alive(names()),
        )
    except (ClusterError, KeyboardInterrupt):
        started = list(c.children)
        if started:
            say(f"startup failed: stopping what this run started ({', '.join(started)})")
            c.stop(started[::-1])
        raise
    write_env(c)
    say(
        f"up in {time.monotonic() - t0:.1f}s: controller is broker {controller_id(zk_port)}; env in {c.env_file}"
    )
    print_env(c)
    return 0


def fresh_state(c: Cluster) -> None:
    """A new cluster: new ports, empty data directories."""
    zk_port, bports = port_overrides()
    fixed = {p for p in [zk_port, *(bports or {}).values()] if p}
    picked = iter(pick_ports(4, fixed))
    zk_port = zk_port or next(picked)
    bports = bports or {i: next(picked) for i in BROKER_IDS}
    shutil.rmtree(c.root / "data", ignore_errors=True)
    c.env_file.unlink(missing_ok=True)
    c.state_file.write_text(
        json.dumps(
            {
                "zk_port": zk_port,
                "broker_ports": {str(i): p for i, p in bports.items()},
                "kafka_version": kafka_version(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=1,
        )
    )
    write_configs(c, zk_port, bports)
    say(
        f"new cluster in {c.root}: ZooKeeper :{zk_port}, brokers "
        + ", ".join(f"{i}:{p}" for i, p in bports.items())
    )


def print_env(c: Cluster) -> None:
    sys.stdout.write(c.env_file.read_text())


def cmd_down(c: Cluster) -> int:
    st = c.load_state()
    running = [n for n in names() if c.alive(n)]
    c.env_file.unlink(missing_ok=True)
    if not running:
        say(f"nothing running in {c.root}")
    # brokers first (in parallel), then ZooKeeper
    c.stop([n for n in running if n != "zookeeper"])
    c.stop([n for n in running if n == "zookeeper"])
    if st:
        zk_port, bports = c.ports()
        ports = [zk_port, *bports.values()]
        try:
            wait_for(lambda: not any(listening(p) for p in ports), 15, "the ports to close")
        except ClusterError:
            busy = [p for p in ports if listening(p)]
            raise ClusterError(f"still listening after down: ports {busy}") from None
    if running:
        say("down")
    return 0


def cmd_status(c: Cluster) -> int:
    st = c.load_state()
    if not st:
        print(f"no cluster in {c.root}")
        return 3
    zk_port, bports = c.ports()
    ok = True
    any_alive = False
    rows = [("zookeeper", zk_port)] + [(f"broker-{i}", bports[i]) for i in BROKER_IDS]
    for name, port in rows:
        alive = c.alive(name)
        ok &= alive
        any_alive |= alive
        state = f"running pid {c.pid(name)}" if alive else "stopped"
        print(f"{name:<10} {state:<20} port {port} {'listening' if listening(port) else 'not listening'}")
    if c.alive("zookeeper"):
        try:
            regs = registered_brokers(zk_port)
            ctrl = controller_id(zk_port)
        except OSError as e:
            print(f"ZooKeeper does not answer: {e}")
            return 1
        for i, reg in sorted(regs.items()):
            endpoints = reg.get("endpoints")
            shown = ",".join(map(str, endpoints)) if isinstance(endpoints, list) else "?"
            print(f"registered broker {i} rack={reg.get('rack')} endpoints={shown}")
        print(f"controller: {ctrl if ctrl is not None else 'none'}")
        ok &= set(regs) == set(BROKER_IDS) and ctrl is not None
    print(f"env: {c.env_file if c.env_file.exists() else '(none)'}")
    return 0 if ok else 1 if any_alive else 3


def parse_broker(arg: str | None) -> int:
    if arg is None or not arg.isdigit() or int(arg) not in BROKER_IDS:
        raise ClusterError(f"expected a broker id among {', '.join(map(str, BROKER_IDS))}, got {arg!r}")
    return int(arg)


def cmd_stop_broker(c: Cluster, arg: str | None) -> int:
    i = parse_broker(arg)
    zk_port, _ = c.ports()
    name = f"broker-{i}"
    if not c.alive(name):
        say(f"{name} is not running")
    c.stop([name])
    wait_for(lambda: i not in registered_brokers(zk_port), 40, f"broker {i} to leave /brokers/ids")
    say(f"broker {i} stopped and unregistered")
    return 0


def cmd_start_broker(c: Cluster, arg: str | None) -> int:
    i = parse_broker(arg)
    name = f"broker-{i}"
    if not c.alive("zookeeper"):
        raise ClusterError("ZooKeeper is not running (use `scripts/cluster up`)")
    if c.alive(name):
        say(f"{name} is already running")
    else:
        try:
            start_brokers(c, [i])
            wait_for(
                lambda: broker_ready(c, i),
                START_TIMEOUT,
                f"broker {i} to register",
                lambda: c.check_alive([name]),
            )
        except ClusterError:
            c.stop([name])
            raise
    say(f"broker {i} registered")
    return 0


def cmd_jars() -> int:
    print(ensure_jars())
    return 0


USAGE = """\
usage: scripts/cluster up|down|status|stop-broker N|start-broker N|jars|env

  up              start ZooKeeper + brokers 1,2,3 (racks r1,r2,r3; chroot /kafka) and wait until all
                  are registered; writes $CLUSTER_DIR/env (prints it on stdout). Harmless when up.
  down            stop what `up` started (by pid: TERM, then KILL after a timeout)
  status          processes, ports, registered brokers, controller; exit 0: all up,
                  1: partly running, 3: nothing running
  stop-broker N   stop broker N and wait until it left /brokers/ids
  start-broker N  start broker N again and wait until it is registered
  jars            fetch the Kafka jars into the cache if missing; print their directory
  env             print $CLUSTER_DIR/env (exit 1 if the cluster is not up)

environment: CLUSTER_DIR (state dir, default <repo>/.cluster), CLUSTER_ZK_PORT, CLUSTER_BROKER_PORTS
(e.g. 19091,19092,19093), CLUSTER_TIMEOUT (startup wait, s), CLUSTER_STOP_TIMEOUT (s before KILL),
CLUSTER_BROKER_HEAP, KAFKA_VERSION, KAFKA_JARS_DIR, JAVA
"""


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if argv else 2
    cmd, arg = argv[0], (argv[1] if len(argv) > 1 else None)
    root = Path(os.environ.get("CLUSTER_DIR") or REPO / ".cluster").resolve()
    c = Cluster(root)
    try:
        if cmd == "jars":
            return cmd_jars()
        if cmd == "status":
            return cmd_status(c)
        if cmd == "env":
            if not c.env_file.exists():
                say(f"not up (no {c.env_file})")
                return 1
            print_env(c)
            return 0
        actions: dict[str, Callable[[], int]] = {
            "up": lambda: cmd_up(c),
            "down": lambda: cmd_down(c),
            "stop-broker": lambda: cmd_stop_broker(c, arg),
            "start-broker": lambda: cmd_start_broker(c, arg),
        }
        if cmd not in actions:
            print(USAGE, end="", file=sys.stderr)
            return 2
        with locked(root):
            return actions[cmd]()
    except ClusterError as e:
        say(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
