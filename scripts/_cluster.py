"""Local Kafka test clusters from Maven Central jars. Standard library only.

Three modes, chosen at `up` and remembered in state.json:
  zk      ZooKeeper + 3 Kafka 3.9 brokers in ZooKeeper mode (the default)
  secure  the same, ZooKeeper with SASL DIGEST-MD5 and a TLS-only client port, brokers with
          zookeeper.set.acl=true authenticating over TLS, and a second broker listener, SASL_SSL
          (SASL/PLAIN over TLS), beside the PLAINTEXT one
  kraft   3 combined KRaft nodes (broker+controller), Kafka 3.9.x or 4.x
Any mode may add --jbod: each broker's two log dirs are tmpfs mounts of different sizes (needs root).

Called by scripts/cluster (see `scripts/cluster --help` and docs/cluster.md). Everything lives under the
state directory ($CLUSTER_DIR, default <repo>/.cluster): configs, data, logs, pid files, the ports
chosen, and the `env` file the tests and the demo read.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POM = REPO / "scripts" / "maven" / "kafka-pom.xml"
# Kafka 4.x: Log4j 2 binding and the kafka-tools jar (its kafka-reassign-partitions is the tests' judge).
POM4 = REPO / "scripts" / "maven" / "kafka4-pom.xml"
BROKER_ENV_FILE = REPO / "docker" / "kafka-broker.env"

BROKER_IDS = (1, 2, 3)
RACKS = {1: "r1", 2: "r2", 3: "r3"}
CHROOT = "/kafka"
LOG_DIRS_PER_BROKER = 2
HOST = "127.0.0.1"

ZK_HEAP = "-Xms128m -Xmx256m"
BROKER_HEAP = "-Xms512m -Xmx768m"
EXTRA_BROKER_HEAP = "-Xms256m -Xmx640m"  # brokers of the extra (secure, KRaft) test clusters
MODES = ("zk", "secure", "kraft")
SASL_USER = "kafka"
KAFKA_SASL_USER = "admin"  # the SASL/PLAIN user of the secure cluster's SASL_SSL listener
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
REASSIGN_MAIN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
JVM_COMMON = ["-XX:-UsePerfData", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]

# --jbod: each broker's log dirs d0, d1 on tmpfs mounts of these sizes (CLUSTER_JBOD_SIZES overrides); the
# mount source names our mounts in /proc/mounts, so that `down` unmounts those and no other.
JBOD_DEFAULT_SIZES = (256 * 2**20, 512 * 2**20)
JBOD_SOURCE = "reassign-cli-jbod"

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


# Kafka 4.x logs through Log4j 2 (properties format: no extra jar needed).
def _log4j2(comment: str, status: str, target: str, level: str, extra: str = "") -> str:
    """A Log4j 2 properties file with one console appender (SYSTEM_OUT or SYSTEM_ERR) for the root logger."""
    return (
        f"# Written by scripts/cluster{comment}\n"
        f"status = {status}\n"
        "appender.console.type = Console\n"
        "appender.console.name = CONSOLE\n"
        f"appender.console.target = {target}\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = [%d] %p %m (%c)%n\n"
        f"rootLogger.level = {level}\n"
        "rootLogger.appenderRef.console.ref = CONSOLE\n" + extra
    )


LOG4J2 = _log4j2(
    ". Console output goes to the process log file.",
    "warn",
    "SYSTEM_OUT",
    "INFO",
    "logger.request.name = kafka.request.logger\n"
    "logger.request.level = WARN\n"
    "logger.network.name = org.apache.kafka.clients.NetworkClient\n"
    "logger.network.level = WARN\n",
)
LOG4J2_TOOLS = _log4j2(" for Kafka 4.x tools: warnings and errors on stderr.", "error", "SYSTEM_ERR", "WARN")


class ClusterError(Exception):
    pass


def say(msg: str) -> None:
    print(f"cluster: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- settings


def pom_version(pom: Path) -> str:
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", pom.read_text())
    if not m:
        raise ClusterError(f"no <kafka.version> in {pom}")
    return m.group(1).strip()


def kafka_version() -> str:
    """The ZooKeeper-mode version (3.9.x): $KAFKA_VERSION or the pom's."""
    return os.environ.get("KAFKA_VERSION") or pom_version(POM)


def kafka4_version() -> str:
    """The newest Kafka 4.x this project tests against (KRaft only; also the kafka-tools judge)."""
    return os.environ.get("KAFKA4_VERSION") or pom_version(POM4)


def is_kafka4(version: str) -> bool:
    return int(version.split(".")[0]) >= 4


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
        "4lw.commands.whitelist": "srvr,ruok,stat,mntr,cons",
    }


def kraft_properties(
    node_id: int, port: int, controller_ports: dict[int, int], log_dirs: list[str], meta_dir: str
) -> dict[str, str]:
    """A combined broker+controller KRaft node with a static three-voter quorum."""
    voters = ",".join(f"{i}@{HOST}:{p}" for i, p in sorted(controller_ports.items()))
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "broker.rack": RACKS[node_id],
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_ports[node_id]}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": ",".join(log_dirs),
        "metadata.log.dir": meta_dir,  # kept apart so that both log dirs hold partitions only
    }
    props.update({k: v for k, v in shared_broker_settings().items() if not k.startswith("zookeeper.")})
    return props


def zk_tls_client_properties(secrets: Path, key_password: str) -> dict[str, str]:
    """TLS settings of a ZooKeeper client, in Kafka's names (server.properties and the
    --zk-tls-config-file of Kafka's tools): PEM files, the key encrypted with key_password."""
    return {
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.keystore.location": str(secrets / "client.pem"),
        "zookeeper.ssl.keystore.password": key_password,
        "zookeeper.ssl.keystore.type": "PEM",
        "zookeeper.ssl.truststore.location": str(secrets / "ca.pem"),
        "zookeeper.ssl.truststore.type": "PEM",
    }


def secure_zk_config(data_dir: Path, port: int, secrets: Path, key_password: str) -> dict[str, str]:
    """ZooKeeper with a TLS-only client port and SASL (DIGEST-MD5, see the server JAAS file).
    Unknown zoo.cfg keys become zookeeper.* system properties, which is how authProvider is set."""
    cfg = zk_config(data_dir, port)
    del cfg["clientPort"], cfg["clientPortAddress"]
    cfg.update(
        {
            "secureClientPort": str(port),
            "secureClientPortAddress": HOST,
            "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
            "ssl.keyStore.location": str(secrets / "server.pem"),
            "ssl.keyStore.password": key_password,
            "ssl.keyStore.type": "PEM",
            "ssl.trustStore.location": str(secrets / "ca.pem"),
            "ssl.trustStore.type": "PEM",
            # No client certificates asked: with them ZooKeeper would add the certificate's x509 id to
            # every creator ACL and let any holder of the certificate write without SASL.
            "ssl.clientAuth": "none",
            "authProvider.sasl": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        }
    )
    return cfg


def secure_broker_properties(
    broker_id: int,
    ports: tuple[int, int],
    zk_port: int,
    log_dirs: list[str],
    secrets: Path,
    pw: dict[str, str],
) -> dict[str, str]:
    """ports: (PLAINTEXT, SASL_SSL). The brokers talk to each other over PLAINTEXT; clients may use either."""
    port, sasl_port = ports
    props = broker_properties(broker_id, port, zk_port, log_dirs)
    listeners = f"PLAINTEXT://{HOST}:{port},SASL_SSL://{HOST}:{sasl_port}"
    props.update({"listeners": listeners, "advertised.listeners": listeners})
    props["zookeeper.set.acl"] = "true"  # znodes get sasl:<user> creator ACLs (+ world read if not sensitive)
    props.update(zk_tls_client_properties(secrets, pw["key_password"]))
    user, password = KAFKA_SASL_USER, pw["kafka_password"]
    sasl_ssl = {
        "sasl.enabled.mechanisms": "PLAIN",
        # PlainLoginModule's server side: the broker's own user (unused: no SASL between brokers) and
        # one user_<name>="<password>" per client
        "plain.sasl.jaas.config": f'{PLAIN_MODULE} required username="{user}" password="{password}" '
        f'user_{user}="{password}";',
        # the server certificate of ZooKeeper's TLS port, its key in PEM with the key password only
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(secrets / "server.pem"),
        "ssl.key.password": pw["key_password"],
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(secrets / "ca.pem"),
    }
    props["inter.broker.listener.name"] = "PLAINTEXT"
    props.update({f"listener.name.sasl_ssl.{k}": v for k, v in sasl_ssl.items()})
    return props


def kafka_client_properties(secrets: Path, password: str) -> dict[str, str]:
    """Kafka's client properties (a --command-config) for the SASL_SSL listener: SASL/PLAIN over TLS, the
    broker certificate checked against the test CA (PEM truststore; the certificate names 127.0.0.1)."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": f'{PLAIN_MODULE} required username="{KAFKA_SASL_USER}" password="{password}";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(secrets / "ca.pem"),
    }


def jaas_text(section: str, username: str, password: str) -> str:
    if section == "Server":  # DigestLoginModule's server side: one user_<name>="<password>" per user
        opts = f'user_{username}="{password}"'
    else:
        opts = f'username="{username}"\n  password="{password}"'
    return f"{section} {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  {opts};\n}};\n"


def make_secrets(secrets: Path) -> dict[str, str]:
    """A throw-away CA, a server and a client certificate (SAN 127.0.0.1/localhost) with encrypted PEM
    keys, and random passwords; returned as {"sasl_password", "key_password", "kafka_password"}."""
    import secrets as rnd

    shutil.rmtree(secrets, ignore_errors=True)
    secrets.mkdir(parents=True)
    os.chmod(secrets, 0o700)
    pw = {k: rnd.token_urlsafe(18) for k in ("sasl_password", "key_password", "kafka_password")}
    ext = secrets / "ext.cnf"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"
        "basicConstraints=CA:FALSE\n"
    )

    def ossl(*args: str) -> None:
        r = subprocess.run(["openssl", *args], cwd=secrets, capture_output=True, text=True)
        if r.returncode != 0:
            raise ClusterError(f"openssl {args[0]} failed: {r.stderr.strip()[-800:]}")

    if not shutil.which("openssl"):
        raise ClusterError("`up --secure` needs openssl on PATH to make the test certificates")
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
         "-days", "30", "-subj", "/CN=reassign-cli test CA")  # fmt: skip
    for name in ("server", "client"):
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN=reassign-cli-{name}")  # fmt: skip
        ossl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "30", "-out", f"{name}.crt", "-extfile", "ext.cnf")  # fmt: skip
        # PBE-SHA1-3DES: an encrypted PKCS#8 key both Java's PEM loader and Python's ssl read
        ossl("pkcs8", "-topk8", "-v1", "PBE-SHA1-3DES", "-in", f"{name}.key", "-out", f"{name}.key.enc",
             "-passout", f"pass:{pw['key_password']}")  # fmt: skip
        pem = (secrets / f"{name}.key.enc").read_text() + (secrets / f"{name}.crt").read_text()
        (secrets / f"{name}.pem").write_text(pem)
    for junk in ("ca.key", "ca.srl", "ext.cnf", "server.key", "client.key", "server.csr", "client.csr",
                 "server.key.enc", "client.key.enc", "server.crt", "client.crt"):  # fmt: skip
        (secrets / junk).unlink(missing_ok=True)
    (secrets / "zk-server-jaas.conf").write_text(jaas_text("Server", SASL_USER, pw["sasl_password"]))
    (secrets / "zk-client-jaas.conf").write_text(jaas_text("Client", SASL_USER, pw["sasl_password"]))
    write_properties(secrets / "zk-tls.properties", zk_tls_client_properties(secrets, pw["key_password"]))
    write_properties(
        secrets / "kafka-client.properties", kafka_client_properties(secrets, pw["kafka_password"])
    )
    return pw


def write_properties(path: Path, props: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# Written by scripts/cluster\n" + "".join(f"{k}={v}\n" for k, v in props.items())
    path.write_text(text)


# --------------------------------------------------------------------------- jars


def jars_dir(version: str | None = None) -> Path:
    version = version or kafka_version()
    env = os.environ.get("KAFKA_JARS_DIR")
    if env and version == kafka_version():
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "reassign_cli" / f"kafka-{version}" / "libs"


def jars_present(libs: Path, version: str) -> bool:
    if not (libs / f"kafka_2.13-{version}.jar").is_file():
        return False
    if is_kafka4(version):
        return (libs / f"kafka-tools-{version}.jar").is_file() and any(libs.glob("log4j-slf4j-impl-*.jar"))
    return any(libs.glob("slf4j-reload4j-*.jar"))


def ensure_jars(version: str | None = None) -> Path:
    v = version or kafka_version()
    libs = jars_dir(v)
    if jars_present(libs, v):
        return libs
    if not shutil.which("mvn"):
        raise ClusterError(f"Kafka jars missing in {libs} and no `mvn` on PATH to fetch them")
    say(f"fetching Kafka {v} jars from Maven Central into {libs} ...")
    libs.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="libs.", dir=libs.parent))
    cmd = [
        "mvn", "-q", "-B", "-f", str(POM4 if is_kafka4(v) else POM), f"-Dkafka.version={v}",
        "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={tmp}",
    ]  # fmt: skip
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0 or not jars_present(tmp, v):
        shutil.rmtree(tmp, ignore_errors=True)
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-20:])
        raise ClusterError(f"mvn could not fetch the Kafka {v} jars:\n{tail}")
    if libs.exists():  # a concurrent fetch won; keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.rename(libs)
    return libs


def tools_log_config(libs: Path) -> Path:
    """A Log4j 2 config for Kafka 4.x command-line tools: warnings and errors on stderr only."""
    path = libs.parent / "tools-log4j2.properties"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(LOG4J2_TOOLS)
        tmp.replace(path)
    return path


KAFKA_TOOLS = {
    "reassign-partitions": REASSIGN_MAIN,
    "configs": "kafka.admin.ConfigCommand",
    "log-dirs": "org.apache.kafka.tools.LogDirsCommand",
}


def kafka_tool_command(tool: str, args: list[str]) -> list[str]:
    """java command line for a Kafka 4.x tool (those of KAFKA_TOOLS: kafka-reassign-partitions, kafka-configs,
    kafka-log-dirs)."""
    if tool not in KAFKA_TOOLS:
        raise ClusterError(f"unknown kafka tool {tool!r} (known: {', '.join(KAFKA_TOOLS)})")
    libs = ensure_jars(kafka4_version())
    java = os.environ.get("JAVA") or shutil.which("java") or "/usr/bin/java"
    return [
        java, "-Xmx256m", *JVM_COMMON, f"-Dlog4j2.configurationFile={tools_log_config(libs)}",
        "-cp", f"{libs}/*", KAFKA_TOOLS[tool], *args,
    ]  # fmt: skip


# --------------------------------------------------------------------------- tiny ZooKeeper client


class MiniZk:
    """Just enough of the ZooKeeper wire protocol to list children, test existence and read data."""

    NONODE = -101

    def __init__(self, port: int, timeout: float = 5.0, tls: ssl.SSLContext | None = None) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        if tls is not None:  # the secure cluster's TLS-only port (no SASL: world-readable znodes only)
            self.sock = tls.wrap_socket(self.sock, server_hostname=HOST)
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

    def owner(self, path: str) -> int | None:
        """The session id that owns an ephemeral znode (0 for a persistent one); None if there is no znode."""
        err, body = self._call(3, path)
        if err == self.NONODE:
            return None
        if err:
            raise OSError(f"ZooKeeper error {err} on {path}")
        # Stat: czxid, mzxid, ctime, mtime (longs), version, cversion, aversion (ints), ephemeralOwner
        return int(struct.unpack_from(">q", body, 44)[0])

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
def zk_session(port: int, tls: ssl.SSLContext | None = None) -> Iterator[MiniZk]:
    zk = MiniZk(port, tls=tls)
    try:
        yield zk
    finally:
        zk.close()


def zk_ok(port: int, tls: ssl.SSLContext | None = None) -> bool:
    try:
        with zk_session(port, tls) as zk:
            zk.exists("/")
        return True
    except OSError:
        return False


def registered_brokers(port: int, tls: ssl.SSLContext | None = None) -> dict[int, dict[str, object]]:
    """Broker id -> its registration JSON, under the chroot; {} if nothing is registered."""
    with zk_session(port, tls) as zk:
        ids = zk.children(f"{CHROOT}/brokers/ids") or []
        out: dict[int, dict[str, object]] = {}
        for i in ids:
            data = zk.get(f"{CHROOT}/brokers/ids/{i}")
            if data is not None:
                out[int(i)] = json.loads(data)
        return out


def zk_four_letter(port: int, word: str, tls: ssl.SSLContext | None = None) -> str:
    """ZooKeeper's answer to a four-letter word (the server closes the connection after it)."""
    with socket.create_connection((HOST, port), timeout=5) as raw:
        s = tls.wrap_socket(raw, server_hostname=HOST) if tls is not None else raw
        s.sendall(word.encode())
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out.decode(errors="replace")


def sessions_resumed(port: int, paths: list[str], tls: ssl.SSLContext | None = None) -> bool:
    """Whether every znode of `paths` exists and is owned by a session that a client holds right now (one
    of the server's connections, its `cons` answer). After a restart ZooKeeper restores every session and
    keeps its ephemeral znodes until the session times out; a broker that does not resume its old session
    loses them then. In that window a CreateTopics failed (a test loop under load), and a topic was made
    with a short ISR (CI). A client holding the session also shows that the broker is connected again."""
    with zk_session(port, tls) as zk:
        owners = [zk.owner(p) for p in paths]
    attached = {int(sid, 16) for sid in re.findall(r"sid=0x([0-9a-f]+)", zk_four_letter(port, "cons", tls))}
    return all(o is not None and o in attached for o in owners)


def controller_id(port: int, tls: ssl.SSLContext | None = None) -> int | None:
    with zk_session(port, tls) as zk:
        data = zk.get(f"{CHROOT}/controller")
    return int(json.loads(data)["brokerid"]) if data else None


# --------------------------------------------------------------------------- tiny Kafka metadata probe


def kafka_metadata(port: int, timeout: float = 5.0) -> tuple[list[int], int]:
    """Metadata v1 (no topics) from one broker: (broker ids it knows, controller id)."""
    racks, ctrl = kafka_brokers(port, timeout)
    return sorted(racks), ctrl


def kafka_brokers(port: int, timeout: float = 5.0) -> tuple[dict[int, str | None], int]:
    """Metadata v1 (no topics) from one broker: ({broker id: rack}, controller id). Kafka 3.9 and
    4.3.1 both answer v1 (checked); in KRaft the "controller" is a live broker, not the active controller."""
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
    racks: dict[int, str | None] = {}
    for _ in range(count):
        (node,) = struct.unpack_from(">i", body, off)
        off += 4
        (hl,) = struct.unpack_from(">h", body, off)
        off += 2 + hl + 4  # host, port
        (rl,) = struct.unpack_from(">h", body, off)
        racks[node] = body[off + 2 : off + 2 + rl].decode() if rl >= 0 else None
        off += 2 + max(rl, 0)  # rack (nullable)
    (ctrl,) = struct.unpack_from(">i", body, off)
    return racks, ctrl


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

    @property
    def secrets(self) -> Path:
        return self.root / "secrets"

    # mode and version, fixed when a fresh cluster is created (state.json)
    @property
    def mode(self) -> str:
        st = self.load_state() or {}
        return str(st.get("mode", "zk"))

    @property
    def version(self) -> str:
        st = self.load_state() or {}
        return str(st.get("kafka_version") or kafka_version())

    @property
    def jbod_sizes(self) -> list[int] | None:
        """The tmpfs size of each log dir (d0, d1) of a JBOD cluster; None for one without --jbod."""
        sizes = (self.load_state() or {}).get("jbod_sizes")
        return [int(x) for x in sizes] if isinstance(sizes, list) else None

    def names(self) -> list[str]:
        brokers = [f"broker-{i}" for i in BROKER_IDS]
        return brokers if self.mode == "kraft" else ["zookeeper", *brokers]

    def tls(self) -> ssl.SSLContext | None:
        """The client TLS context the script's own probes use on the secure cluster's ZooKeeper."""
        if self.mode != "secure":
            return None
        st = self.load_state() or {}
        ctx = ssl.create_default_context(cafile=str(self.secrets / "ca.pem"))
        ctx.load_cert_chain(self.secrets / "client.pem", password=str(st["key_password"]))
        return ctx

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
        return int(str(st.get("zk_port") or 0)), {int(k): int(v) for k, v in brokers.items()}

    def controller_ports(self) -> dict[int, int]:
        """KRaft controller listener ports ({} in the ZooKeeper modes)."""
        ctrl = (self.load_state() or {}).get("controller_ports") or {}
        assert isinstance(ctrl, dict)
        return {int(k): int(v) for k, v in ctrl.items()}

    def sasl_ports(self) -> dict[int, int]:
        """The secure cluster's SASL_SSL listener ports ({} in the other modes)."""
        ports = (self.load_state() or {}).get("sasl_ports") or {}
        assert isinstance(ports, dict)
        return {int(k): int(v) for k, v in ports.items()}

    def all_ports(self) -> list[int]:
        zk_port, bports = self.ports()
        extra = [*self.controller_ports().values(), *self.sasl_ports().values()]
        return [p for p in [zk_port, *bports.values(), *extra] if p]

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
        libs = ensure_jars(self.version)
        java = os.environ.get("JAVA") or shutil.which("java") or "/usr/bin/java"
        log = self.log_file(name)
        log.parent.mkdir(parents=True, exist_ok=True)
        if log.exists() and log.stat().st_size:
            log.replace(log.with_suffix(".log.1"))
        cmd = [
            java, *heap.split(), *JVM_COMMON,
            *self.log_config_flags(),
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

    def log_config_flags(self) -> list[str]:
        if is_kafka4(self.version):
            return [f"-Dlog4j2.configurationFile={self.root / 'config' / 'log4j2.properties'}"]
        return [f"-Dlog4j.configuration=file:{self.root / 'config' / 'log4j.properties'}"]

    def jaas_flags(self, name: str) -> list[str]:
        if self.mode != "secure":
            return []
        conf = "zk-server-jaas.conf" if name == "zookeeper" else "zk-client-jaas.conf"
        return [f"-Djava.security.auth.login.config={self.secrets / conf}"]

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
    """The ZooKeeper-mode process names (KRaft clusters have no zookeeper: see Cluster.names)."""
    return ["zookeeper", *[f"broker-{i}" for i in BROKER_IDS]]


def kraft_view(c: Cluster) -> dict[int, tuple[dict[int, str | None], int]]:
    """Every answering broker's metadata: {broker id: ({broker id: rack}, controller id)}."""
    _, bports = c.ports()
    out = {}
    for i, port in bports.items():
        with contextlib.suppress(OSError, struct.error):
            out[i] = kafka_brokers(port)
    return out


def broker_ready(c: Cluster, broker_id: int) -> bool:
    if c.mode == "kraft":  # every live broker lists it (fenced brokers are left out of Metadata)
        view = kraft_view(c)
        live = [i for i in BROKER_IDS if c.alive(f"broker-{i}")]
        return broker_id in view and all(i in view and broker_id in view[i][0] for i in live)
    zk_port, bports = c.ports()
    regs = registered_brokers(zk_port, c.tls())
    if broker_id not in regs:
        return False
    ids, ctrl = kafka_metadata(bports[broker_id])
    return set(ids) >= set(regs) and ctrl >= 0


def cluster_ready(c: Cluster) -> bool:
    if c.mode == "kraft":
        view = kraft_view(c)
        return set(view) == set(BROKER_IDS) and all(
            set(racks) == set(BROKER_IDS) and ctrl >= 0 for racks, ctrl in view.values()
        )
    zk_port, bports = c.ports()
    tls = c.tls()
    if set(registered_brokers(zk_port, tls)) != set(BROKER_IDS) or controller_id(zk_port, tls) is None:
        return False
    for p in bports.values():
        ids, ctrl = kafka_metadata(p)
        if set(ids) != set(BROKER_IDS) or ctrl < 0:
            return False
    return True


# --------------------------------------------------------------------------- JBOD: tmpfs log dirs


def parse_size(text: str) -> int:
    """'256M' -> 268435456 (K, M, G: binary units; a bare number is bytes)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text, re.I)
    if not m or int(m.group(1)) == 0:
        raise ClusterError(f"CLUSTER_JBOD_SIZES: expected sizes like 256M,512M, got {text!r}")
    return int(m.group(1)) * 1024 ** " KMG".index(m.group(2).upper() or " ")


def jbod_sizes() -> list[int]:
    """The tmpfs size of each of a broker's log dirs: $CLUSTER_JBOD_SIZES (e.g. 256M,512M) or the default."""
    text = os.environ.get("CLUSTER_JBOD_SIZES")
    if not text:
        return list(JBOD_DEFAULT_SIZES)
    sizes = [parse_size(t) for t in text.split(",")]
    if len(sizes) != LOG_DIRS_PER_BROKER:
        raise ClusterError(f"CLUSTER_JBOD_SIZES: expected {LOG_DIRS_PER_BROKER} sizes, got {text!r}")
    return sizes


def mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def jbod_mounts(c: Cluster) -> list[Path]:
    """Our tmpfs mounts under this state dir's data, as /proc/mounts lists them (in mount order)."""
    data = c.root / "data"
    out = []
    for line in Path("/proc/mounts").read_text().splitlines():
        source, point, fstype = line.split()[:3]
        where = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point))
        if source == JBOD_SOURCE and fstype == "tmpfs" and data in where.parents:
            out.append(where)
    return out


def check_can_mount() -> None:
    if os.geteuid() != 0:
        raise ClusterError(
            f"`up --jbod` mounts tmpfs log dirs and needs root (running as uid {os.geteuid()})"
        )


def mount_jbod(c: Cluster, sizes: list[int]) -> None:
    """A tmpfs of sizes[k] at each broker's log dir dk; on a refused mount, unmount what this call made."""
    for i in BROKER_IDS:
        for k, path in enumerate(c.broker_log_dirs(i)):
            size = sizes[k]
            Path(path).mkdir(parents=True, exist_ok=True)
            cmd = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", JBOD_SOURCE, path]
            r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                unmount_jbod(c)
                why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[0]
                raise ClusterError(f"cannot mount a {mib(size)} tmpfs at {path}: {why}")


def unmount_jbod(c: Cluster) -> int:
    """Unmount every JBOD tmpfs of this state dir (none of another's); how many there were."""
    mounts = jbod_mounts(c)
    for path in reversed(mounts):
        r = subprocess.run(["umount", str(path)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise ClusterError(f"cannot unmount {path}: {r.stderr.strip()}")
    return len(mounts)


def jbod_status(c: Cluster) -> None:
    """One line per JBOD log dir: its path, configured size, and the tmpfs mounted there (or not)."""
    sizes = c.jbod_sizes or []
    mounted = set(jbod_mounts(c))
    for i in BROKER_IDS:
        for k, size in enumerate(sizes):
            path = c.broker_log_dirs(i)[k]
            if Path(path) in mounted:
                st = os.statvfs(path)
                shown = f"tmpfs {mib(st.f_blocks * st.f_frsize)}, {mib(st.f_bavail * st.f_frsize)} free"
            else:
                shown = "NOT MOUNTED"
            print(f"broker-{i} d{k} {path} ({mib(size)}): {shown}")


def log_dirs_line(c: Cluster) -> str:
    """CLUSTER_LOG_DIRS: '1:/…/d0,/…/d1;2:…' (each broker's log dirs, in the order of log.dirs)."""
    return ";".join(f"{i}:{','.join(c.broker_log_dirs(i))}" for i in BROKER_IDS)


def write_env(c: Cluster) -> None:
    zk_port, bports = c.ports()
    bootstrap = ",".join(f"{HOST}:{bports[i]}" for i in BROKER_IDS)
    lines: dict[str, str] = {}
    if c.mode == "kraft":
        lines["KAFKA_REASSIGN_BOOTSTRAP"] = bootstrap
    else:
        lines["KAFKA_REASSIGN_ZOOKEEPER"] = f"{HOST}:{zk_port}{CHROOT}"
    if c.mode == "secure":
        lines["KAFKA_REASSIGN_ZK_JAAS_FILE"] = str(c.secrets / "zk-client-jaas.conf")
        lines["KAFKA_REASSIGN_ZK_TLS_CONFIG_FILE"] = str(c.secrets / "zk-tls.properties")
        # What ZooKeeper does not carry (log-dir moves, cancel) goes to the brokers' SASL_SSL listener
        sports = c.sasl_ports()
        lines["KAFKA_REASSIGN_BOOTSTRAP"] = ",".join(f"{HOST}:{sports[i]}" for i in BROKER_IDS)
        lines["KAFKA_REASSIGN_COMMAND_CONFIG"] = str(c.secrets / "kafka-client.properties")
    lines["KAFKA_BOOTSTRAP"] = bootstrap
    if c.mode != "kraft":
        lines.update(
            CLUSTER_ZK_HOSTS=f"{HOST}:{zk_port}", CLUSTER_ZK_CHROOT=CHROOT, CLUSTER_ZK_PORT=str(zk_port)
        )
    if c.mode == "secure":
        lines["CLUSTER_ZK_SASL_USER"] = SASL_USER
        lines["CLUSTER_KAFKA_SASL_USER"] = KAFKA_SASL_USER
        lines["CLUSTER_SASL_SSL_BOOTSTRAP"] = lines["KAFKA_REASSIGN_BOOTSTRAP"]
    lines.update(
        {
            "CLUSTER_BROKER_IDS": ",".join(map(str, BROKER_IDS)),
            "CLUSTER_BROKER_PORTS": ",".join(str(bports[i]) for i in BROKER_IDS),
            **{f"CLUSTER_BROKER_{i}": f"{HOST}:{bports[i]}" for i in BROKER_IDS},
            "CLUSTER_RACKS": ",".join(RACKS[i] for i in BROKER_IDS),
            "CLUSTER_DIR": str(c.root),
            "CLUSTER_KAFKA_VERSION": c.version,
            "CLUSTER_MODE": c.mode,
        }
    )
    lines["CLUSTER_LOG_DIRS"] = log_dirs_line(c)
    if c.mode == "kraft":
        cports = c.controller_ports()
        lines["CLUSTER_CONTROLLER_PORTS"] = ",".join(str(cports[i]) for i in BROKER_IDS)
    # Kafka 4.x's own kafka-reassign-partitions (java -cp "$KAFKA_TOOLS_CLASSPATH" <main> ...)
    libs4 = jars_dir(kafka4_version())
    if jars_present(libs4, kafka4_version()):
        lines["KAFKA_TOOLS_CLASSPATH"] = f"{libs4}/*"
    tmp = c.env_file.with_suffix(".tmp")
    # quoted where the shell needs it (CLUSTER_LOG_DIRS has ";"), so that `source env` gives these values
    tmp.write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in lines.items()))
    tmp.replace(c.env_file)


def write_configs(c: Cluster, zk_port: int, bports: dict[int, int]) -> None:
    (c.root / "config").mkdir(parents=True, exist_ok=True)
    (c.root / "config" / "log4j.properties").write_text(LOG4J)
    (c.root / "config" / "log4j2.properties").write_text(LOG4J2)
    st = c.load_state() or {}
    for i in BROKER_IDS:
        for d in c.broker_log_dirs(i):
            Path(d).mkdir(parents=True, exist_ok=True)
    if c.mode == "kraft":
        cports = c.controller_ports()
        for i in BROKER_IDS:
            meta = str(c.root / "data" / f"broker-{i}" / "meta")
            props = kraft_properties(i, bports[i], cports, c.broker_log_dirs(i), meta)
            write_properties(c.config_file(f"broker-{i}"), props)
        return
    zk_data = c.root / "data" / "zookeeper"
    if c.mode == "secure":
        pw = {k: str(st[k]) for k in ("key_password", "kafka_password")}
        zk_cfg = secure_zk_config(zk_data, zk_port, c.secrets, pw["key_password"])
        write_properties(c.config_file("zookeeper"), zk_cfg)
        sports = c.sasl_ports()
        for i in BROKER_IDS:
            ports = (bports[i], sports[i])
            props = secure_broker_properties(i, ports, zk_port, c.broker_log_dirs(i), c.secrets, pw)
            write_properties(c.config_file(f"broker-{i}"), props)
        return
    write_properties(c.config_file("zookeeper"), zk_config(zk_data, zk_port))
    for i in BROKER_IDS:
        write_properties(
            c.config_file(f"broker-{i}"), broker_properties(i, bports[i], zk_port, c.broker_log_dirs(i))
        )


def random_cluster_id(draw: Callable[[int], bytes] = os.urandom) -> str:
    """A random 16-byte id in Kafka's Uuid text form (URL-safe base64, no padding), never one that starts
    with "-": kafka-storage's argument parser takes `-t -...` for an option and refuses the format (1 id in
    64; a CI run's KRaft cluster failed to start so). Kafka's own Uuid.randomUuid draws again likewise."""
    while True:
        text = base64.urlsafe_b64encode(draw(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def format_kraft_storage(c: Cluster, cluster_id: str) -> None:
    """`kafka-storage format` for the three nodes (in parallel): KRaft needs it before the first start."""
    libs = ensure_jars(c.version)
    java = os.environ.get("JAVA") or shutil.which("java") or "/usr/bin/java"
    procs = {}
    for i in BROKER_IDS:
        log = c.root / "logs" / f"format-{i}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            java, "-Xmx256m", *JVM_COMMON, *c.log_config_flags(), "-cp", f"{libs}/*", "kafka.tools.StorageTool",
            "format", "-t", cluster_id, "-c", str(c.config_file(f"broker-{i}")),
        ]  # fmt: skip
        with open(log, "wb") as out:
            procs[i] = (
                subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT),
                log,
            )
    failed = [(i, log) for i, (proc, log) in procs.items() if proc.wait(timeout=START_TIMEOUT) != 0]
    if failed:
        i, log = failed[0]
        raise ClusterError(
            f"kafka-storage format failed for node {i}:\n{log.read_text(errors='replace')[-2000:]}"
        )


def start_zookeeper(c: Cluster) -> None:
    zk_port, _ = c.ports()
    if listening(zk_port):
        raise ClusterError(f"port {zk_port} (ZooKeeper) is already in use by another process")
    c.spawn(
        "zookeeper", "org.apache.zookeeper.server.quorum.QuorumPeerMain", ZK_HEAP, c.jaas_flags("zookeeper")
    )
    tls = c.tls()
    wait_for(lambda: zk_ok(zk_port, tls), START_TIMEOUT, "ZooKeeper", lambda: c.check_alive(["zookeeper"]))


def start_brokers(c: Cluster, ids: list[int]) -> None:
    _, bports = c.ports()
    cports, sports = c.controller_ports(), c.sasl_ports()
    for i in ids:
        for port in (bports[i], cports.get(i), sports.get(i)):
            if port and listening(port):
                raise ClusterError(f"port {port} (broker {i}) is already in use by another process")
    heap = os.environ.get("CLUSTER_BROKER_HEAP") or (BROKER_HEAP if c.mode == "zk" else EXTRA_BROKER_HEAP)
    for i in ids:
        c.spawn(f"broker-{i}", "kafka.Kafka", heap, c.jaas_flags(f"broker-{i}"))


def jbod_label(sizes: list[int] | None) -> str:
    return f", JBOD {'+'.join(mib(n) for n in sizes)}" if sizes else ""


def check_mode(c: Cluster, mode: str, version: str, sizes: list[int] | None = None) -> None:
    if mode != "kraft" and is_kafka4(version):
        raise ClusterError(
            f"Kafka {version} has no ZooKeeper mode: use `up --kraft --kafka-version {version}`"
        )
    if not c.load_state() or not any(c.alive(n) for n in c.names()):
        return
    if (c.mode, c.version, c.jbod_sizes) != (mode, version, sizes):
        raise ClusterError(
            f"a {c.mode} cluster (Kafka {c.version}{jbod_label(c.jbod_sizes)}) runs in {c.root}, "
            f"not {mode} (Kafka {version}{jbod_label(sizes)}): "
            "run `scripts/cluster down` first or use another CLUSTER_DIR"
        )


def cmd_up(c: Cluster, mode: str = "zk", version: str | None = None, jbod: bool = False) -> int:
    version = version or kafka_version()
    sizes = jbod_sizes() if jbod else None
    if jbod:
        check_can_mount()
    check_mode(c, mode, version, sizes)
    ensure_jars(version)
    try:  # fetched before anything starts, so that the env file can name it
        ensure_jars(kafka4_version())
    except ClusterError as e:
        say(f"warning: KAFKA_TOOLS_CLASSPATH left out of the env file: {e}")
    running = [n for n in c.names() if c.alive(n)] if c.load_state() else []
    if running and len(running) == len(c.names()):
        with contextlib.suppress(ClusterError, OSError, ValueError, struct.error):
            if cluster_ready(c):
                write_env(c)
                say(f"already up ({c.root}); connection settings in {c.env_file}")
                print_env(c)
                return 0
    t0 = time.monotonic()
    try:
        if not running:
            fresh_state(c, mode, version, sizes)
        else:
            say(f"partly running ({', '.join(running)}); starting the rest")
        if c.mode != "kraft" and not c.alive("zookeeper"):
            start_zookeeper(c)
        start_brokers(c, [i for i in BROKER_IDS if not c.alive(f"broker-{i}")])
        wait_for(
            lambda: cluster_ready(c),
            START_TIMEOUT,
            f"brokers {','.join(map(str, BROKER_IDS))} to register and see each other",
            lambda: c.check_alive(c.names()),
        )
    except (ClusterError, KeyboardInterrupt):
        started = list(c.children)
        if started:
            say(f"startup failed: stopping what this run started ({', '.join(started)})")
            c.stop(started[::-1])
        if not running:
            unmount_jbod(c)
        raise
    write_env(c)
    say(f"up in {time.monotonic() - t0:.1f}s: {describe(c)}; env in {c.env_file}")
    print_env(c)
    return 0


def describe(c: Cluster) -> str:
    if c.mode == "kraft":
        return f"KRaft, Kafka {c.version}, three combined broker+controller nodes"
    zk_port, _ = c.ports()
    return f"{c.mode} mode, Kafka {c.version}, controller is broker {controller_id(zk_port, c.tls())}"


def fresh_state(
    c: Cluster, mode: str = "zk", version: str | None = None, sizes: list[int] | None = None
) -> None:
    """A new cluster: new ports, empty data directories (tmpfs mounts of `sizes` for JBOD; and new
    certificates for `secure`)."""
    version = version or kafka_version()
    zk_port, bports = port_overrides()
    fixed = {p for p in [zk_port, *(bports or {}).values()] if p}
    picked = iter(pick_ports(10, fixed))
    zk_port = None if mode == "kraft" else zk_port or next(picked)
    bports = bports or {i: next(picked) for i in BROKER_IDS}
    unmount_jbod(c)  # left behind by a cluster that died without `down`
    shutil.rmtree(c.root / "data", ignore_errors=True)
    c.env_file.unlink(missing_ok=True)
    if sizes:
        mount_jbod(c, sizes)
    state: dict[str, object] = {
        "mode": mode,
        "zk_port": zk_port,
        "broker_ports": {str(i): p for i, p in bports.items()},
        "kafka_version": version,
        "jbod_sizes": sizes,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if mode == "kraft":
        state["controller_ports"] = {str(i): next(picked) for i in BROKER_IDS}
        state["cluster_id"] = random_cluster_id()
    if mode == "secure":
        pw = make_secrets(c.secrets)
        state.update(key_password=pw["key_password"], kafka_password=pw["kafka_password"])
        state["sasl_ports"] = {str(i): next(picked) for i in BROKER_IDS}
    else:
        shutil.rmtree(c.secrets, ignore_errors=True)
    c.state_file.write_text(json.dumps(state, indent=1))
    os.chmod(c.state_file, 0o600)
    write_configs(c, zk_port or 0, bports)
    if mode == "kraft":
        format_kraft_storage(c, str(state["cluster_id"]))
    where = f"ZooKeeper :{zk_port}, " if zk_port else ""
    say(
        f"new {mode} cluster (Kafka {version}{jbod_label(sizes)}) in {c.root}: {where}brokers "
        + ", ".join(f"{i}:{p}" for i, p in bports.items())
    )


def print_env(c: Cluster) -> None:
    sys.stdout.write(c.env_file.read_text())


def cmd_down(c: Cluster) -> int:
    st = c.load_state()
    running = [n for n in c.names() if c.alive(n)] if st else [n for n in names() if c.alive(n)]
    c.env_file.unlink(missing_ok=True)
    if not running:
        say(f"nothing running in {c.root}")
    # brokers first (in parallel), then ZooKeeper
    c.stop([n for n in running if n != "zookeeper"])
    c.stop([n for n in running if n == "zookeeper"])
    unmounted = unmount_jbod(c)
    if unmounted:
        say(f"unmounted {unmounted} tmpfs log dirs")
    if st:
        ports = c.all_ports()
        try:
            wait_for(lambda: not any(listening(p) for p in ports), 15, "the ports to close")
        except ClusterError:
            busy = [p for p in ports if listening(p)]
            raise ClusterError(f"still listening after down: ports {busy}") from None
    if running:
        say("down")
    return 0


def status_rows(c: Cluster) -> tuple[bool, bool]:
    """Print one line per process; (all alive, any alive)."""
    zk_port, bports = c.ports()
    cports, sports = c.controller_ports(), c.sasl_ports()
    rows = [] if c.mode == "kraft" else [("zookeeper", zk_port)]
    rows += [(f"broker-{i}", bports[i]) for i in BROKER_IDS]
    ok, any_alive = True, False
    for name, port in rows:
        alive = c.alive(name)
        ok &= alive
        any_alive |= alive
        state = f"running pid {c.pid(name)}" if alive else "stopped"
        extra = f" controller port {cports[int(name[7:])]}" if cports and name.startswith("broker-") else ""
        if sports and name.startswith("broker-"):
            extra += f" SASL_SSL port {sports[int(name[7:])]}"
        print(
            f"{name:<10} {state:<20} port {port} {'listening' if listening(port) else 'not listening'}{extra}"
        )
    return ok, any_alive


def cmd_status(c: Cluster) -> int:
    st = c.load_state()
    if not st:
        print(f"no cluster in {c.root}")
        return 3
    print(f"mode: {c.mode}, Kafka {c.version}{jbod_label(c.jbod_sizes)}")
    ok, any_alive = status_rows(c)
    jbod_status(c)
    if c.mode == "kraft":
        view = kraft_view(c)
        for i in sorted(view)[:1]:  # what the first answering broker knows
            for b, rack in sorted(view[i][0].items()):
                print(f"registered broker {b} rack={rack}")
        ok &= bool(view) and all(set(racks) == set(BROKER_IDS) for racks, _ in view.values())
    elif c.alive("zookeeper"):
        zk_port, _ = c.ports()
        try:
            regs = registered_brokers(zk_port, c.tls())
            ctrl = controller_id(zk_port, c.tls())
        except (OSError, ssl.SSLError) as e:
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
    if c.mode == "kraft":
        wait_for(
            lambda: all(i not in racks for racks, _ in kraft_view(c).values()),
            40,
            f"broker {i} to leave the other brokers' metadata",
        )
    else:
        tls = c.tls()
        wait_for(lambda: i not in registered_brokers(zk_port, tls), 40, f"broker {i} to leave /brokers/ids")
    say(f"broker {i} stopped and unregistered")
    return 0


def cmd_start_broker(c: Cluster, arg: str | None) -> int:
    i = parse_broker(arg)
    name = f"broker-{i}"
    if c.mode != "kraft" and not c.alive("zookeeper"):
        raise ClusterError("ZooKeeper is not running (use `scripts/cluster up` or `start-zookeeper`)")
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


def needs_zookeeper(c: Cluster) -> int:
    zk_port, _ = c.ports()
    if c.mode == "kraft":
        raise ClusterError(f"the cluster in {c.root} is a KRaft cluster: it has no ZooKeeper")
    return zk_port


def cmd_stop_zookeeper(c: Cluster) -> int:
    """Stop ZooKeeper alone (brokers keep running and retry): for fault tests."""
    zk_port = needs_zookeeper(c)
    if not c.alive("zookeeper"):
        say("zookeeper is not running")
    c.stop(["zookeeper"])
    wait_for(lambda: not listening(zk_port), 15, f"ZooKeeper's port {zk_port} to close")
    say("zookeeper stopped (brokers still running)")
    return 0


def cmd_start_zookeeper(c: Cluster) -> int:
    """Start ZooKeeper again on its data; wait until every running broker is registered by a session it
    holds (resumed, or new after the old one expired), a controller is elected, and every broker's
    metadata names that controller and lists every running broker."""
    zk_port = needs_zookeeper(c)
    if c.alive("zookeeper"):
        say("zookeeper is already running")
    else:
        try:
            start_zookeeper(c)
        except ClusterError:
            c.stop(["zookeeper"])
            raise
    live = {i for i in BROKER_IDS if c.alive(f"broker-{i}")}
    tls = c.tls()
    _, bports = c.ports()

    def back() -> bool:
        ctrl = controller_id(zk_port, tls)
        if set(registered_brokers(zk_port, tls)) != live or ctrl is None:
            return False
        paths = [f"{CHROOT}/brokers/ids/{i}" for i in sorted(live)] + [f"{CHROOT}/controller"]
        # every registration held by a live session, and the controller's view (its UpdateMetadata) in
        # every broker's metadata: the controller names itself and lists every running broker
        return sessions_resumed(zk_port, paths, tls) and all(
            kafka_metadata(bports[i]) == (sorted(live), ctrl) for i in sorted(live)
        )

    wait_for(
        back,
        START_TIMEOUT,
        f"brokers {sorted(live)} back on their ZooKeeper sessions and registered, a controller elected "
        "and its view of them in every broker's metadata",
    )
    say(f"zookeeper running; brokers {','.join(map(str, sorted(live)))} registered")
    return 0


def cmd_jars() -> int:
    """Every jar set the test suite needs: ZooKeeper-mode 3.9.x, and Kafka 4.x (KRaft + kafka-tools)."""
    print(ensure_jars(kafka_version()))
    libs4 = ensure_jars(kafka4_version())
    tools_log_config(libs4)
    print(libs4)
    return 0


def cmd_kafka_tool(args: list[str]) -> int:
    if not args:
        raise ClusterError("usage: scripts/cluster kafka-tool reassign-partitions|configs|log-dirs ARGS...")
    cmd = kafka_tool_command(args[0], args[1:])
    sys.stdout.flush()
    os.execv(cmd[0], cmd)  # the tool's own output and exit status


def parse_up(args: list[str]) -> tuple[str, str | None, bool]:
    mode, version, jbod = "zk", None, False
    it = iter(args)
    for a in it:
        if a == "--jbod":
            jbod = True
        elif a in ("--secure", "--kraft"):
            if mode != "zk":
                raise ClusterError("choose one of --secure and --kraft")
            mode = a[2:]
        elif a == "--kafka-version":
            version = next(it, None)
            if not version:
                raise ClusterError("--kafka-version needs a version, e.g. 3.9.2 or 4.3.1")
        elif a.startswith("--kafka-version="):
            version = a.partition("=")[2]
        else:
            raise ClusterError(f"up: unknown option {a!r}")
    if version and not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ClusterError(f"--kafka-version: expected X.Y.Z, got {version!r}")
    return mode, version, jbod


USAGE = """\
usage: scripts/cluster up [--secure | --kraft [--kafka-version V]] [--jbod] | down | status | env | jars
                       | stop-broker N | start-broker N | stop-zookeeper | start-zookeeper
                       | kafka-tool reassign-partitions|configs|log-dirs ARGS...

  up              start ZooKeeper + brokers 1,2,3 (racks r1,r2,r3; chroot /kafka; Kafka 3.9 in ZooKeeper
                  mode) and wait until all are registered; writes $CLUSTER_DIR/env (prints it on
                  stdout). Harmless when up.
  up --secure     the same with ZooKeeper on a TLS-only port (PEM files) with SASL DIGEST-MD5,
                  brokers with zookeeper.set.acl=true authenticating to it; CA, certificates and
                  passwords are made at `up` under $CLUSTER_DIR/secrets. Brokers also listen with
                  SASL_SSL (SASL/PLAIN over TLS) on ports of their own. The env file adds
                  KAFKA_REASSIGN_ZK_JAAS_FILE, KAFKA_REASSIGN_ZK_TLS_CONFIG_FILE, and
                  KAFKA_REASSIGN_BOOTSTRAP (the SASL_SSL listeners) with KAFKA_REASSIGN_COMMAND_CONFIG
                  (secrets/kafka-client.properties: Kafka's client properties for them).
  up --kraft [--kafka-version V]
                  three combined KRaft broker+controller nodes 1,2,3 (racks r1,r2,r3), Kafka V (default
                  the ZooKeeper-mode version; 4.x supported); env has KAFKA_REASSIGN_BOOTSTRAP
  up ... --jbod   (any mode) each broker's two log dirs on tmpfs mounts of their own, 256 MiB and
                  512 MiB (CLUSTER_JBOD_SIZES=256M,512M); needs root; `down` unmounts them
  down            stop what `up` started (by pid: TERM, then KILL after a timeout), unmount its tmpfs
  status          mode, processes, ports, registered brokers, controller; exit 0: all up,
                  1: partly running, 3: nothing running
  stop-broker N   stop broker N and wait until it left /brokers/ids (KRaft: the others' metadata)
  start-broker N  start broker N again and wait until it is registered
  stop-zookeeper  stop ZooKeeper only (brokers keep running); not for KRaft
  start-zookeeper start it again and wait until every running broker is registered again on a live
                  session and the controller's view of them is in every broker's metadata
  jars            fetch every jar set the tests need into the cache if missing (Kafka 3.9 and the
                  newest 4.x with kafka-tools); print their directories
  env             print $CLUSTER_DIR/env (exit 1 if the cluster is not up)
  kafka-tool reassign-partitions ARGS...
                  run Kafka 4.x's own kafka-reassign-partitions (also: java -cp "$KAFKA_TOOLS_CLASSPATH"
                  org.apache.kafka.tools.reassign.ReassignPartitionsCommand ARGS...)
  kafka-tool configs ARGS...
                  run Kafka 4.x's own kafka-configs (kafka.admin.ConfigCommand), e.g. to set or delete a
                  throttle as an operator would
  kafka-tool log-dirs ARGS...
                  run Kafka 4.x's own kafka-log-dirs (org.apache.kafka.tools.LogDirsCommand), e.g.
                  --describe: each log dir's replicas and sizes as the brokers report them

environment: CLUSTER_DIR (state dir, default <repo>/.cluster), CLUSTER_ZK_PORT, CLUSTER_BROKER_PORTS
(e.g. 19091,19092,19093), CLUSTER_TIMEOUT (startup wait, s), CLUSTER_STOP_TIMEOUT (s before KILL),
CLUSTER_BROKER_HEAP, CLUSTER_JBOD_SIZES, KAFKA_VERSION, KAFKA4_VERSION, KAFKA_JARS_DIR, JAVA
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
        if cmd == "kafka-tool":
            return cmd_kafka_tool(argv[1:])
        if cmd == "status":
            return cmd_status(c)
        if cmd == "env":
            if not c.env_file.exists():
                say(f"not up (no {c.env_file})")
                return 1
            print_env(c)
            return 0
        actions: dict[str, Callable[[], int]] = {
            "up": lambda: cmd_up(c, *parse_up(argv[1:])),
            "down": lambda: cmd_down(c),
            "stop-broker": lambda: cmd_stop_broker(c, arg),
            "start-broker": lambda: cmd_start_broker(c, arg),
            "stop-zookeeper": lambda: cmd_stop_zookeeper(c),
            "start-zookeeper": lambda: cmd_start_zookeeper(c),
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
