"""Options every subcommand shares, and the small context object they build."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from reassign_cli.core.hints import ConnectionOption
from reassign_cli.errors import OtherRecordError, ReassignError

if TYPE_CHECKING:
    from reassign_cli.backends.admin.log_dirs import LogDirMover
    from reassign_cli.backends.protocol import Backend
    from reassign_cli.backends.zookeeper.session import ZkOptions
    from reassign_cli.core.client_config import AdminOptions

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class Options:
    zookeeper: str | None
    zk_timeout: float
    format: str  # "text" | "json"
    color: bool
    quiet: bool
    verbose: bool
    bootstrap: str | None = None
    command_config: str | None = None
    zk_jaas_file: str | None = None
    zk_tls_config_file: str | None = None
    bootstrap_controller: str | None = None  # KRaft controllers (controller_option: execute, verify, cancel)
    # Which of these came from the command line (not the environment or a default).
    explicit: frozenset[str] = frozenset()
    # The connection options given as flags, as typed: what a suggested command carries (core.hints).
    typed: tuple[ConnectionOption, ...] = ()
    noted: bool = False  # the line naming the connection used was printed

    @property
    def json(self) -> bool:
        return self.format == "json"


# Secured ZooKeeper (issue 9): the files Kafka's own tools take.
ZK_SECURITY_OPTIONS = [
    click.option(
        "--zk-jaas-file",
        envvar="KAFKA_REASSIGN_ZK_JAAS_FILE",
        metavar="FILE",
        help="JAAS file whose Client section (DigestLoginModule username/password) authenticates to "
        "ZooKeeper with SASL DIGEST-MD5; the znodes we create then get Kafka's zookeeper.set.acl=true "
        "ACLs [env: KAFKA_REASSIGN_ZK_JAAS_FILE; default: KAFKA_OPTS' "
        "-Djava.security.auth.login.config].",
    ),
    click.option(
        "--zk-tls-config-file",
        envvar="KAFKA_REASSIGN_ZK_TLS_CONFIG_FILE",
        metavar="FILE",
        help="Kafka's ZooKeeper TLS client properties (zookeeper.ssl.client.enable, "
        "zookeeper.ssl.keystore.*/truststore.*, PEM) [env: KAFKA_REASSIGN_ZK_TLS_CONFIG_FILE].",
    ),
]


def _option_decorators() -> list[Callable[[Any], Any]]:
    return [
        click.option(
            "--zookeeper",
            envvar="KAFKA_REASSIGN_ZOOKEEPER",
            metavar="HOST:PORT[,HOST:PORT][/chroot]",
            help="ZooKeeper connect string, as in the brokers' zookeeper.connect (ZooKeeper-mode clusters) "
            "[env: KAFKA_REASSIGN_ZOOKEEPER].",
        ),
        click.option(
            "--bootstrap-server",
            "bootstrap",
            envvar="KAFKA_REASSIGN_BOOTSTRAP",
            metavar="HOST:PORT[,...]",
            help="Kafka brokers: work through the admin API (KRaft, Kafka 4.x; ZooKeeper mode too) "
            "[env: KAFKA_REASSIGN_BOOTSTRAP].",
        ),
        click.option(
            "--command-config",
            envvar="KAFKA_REASSIGN_COMMAND_CONFIG",
            metavar="FILE",
            help="Kafka client properties for --bootstrap-server (security.protocol, SASL, SSL with PEM "
            "files) [env: KAFKA_REASSIGN_COMMAND_CONFIG].",
        ),
        click.option(
            "--connect-timeout",
            "--zk-timeout",
            "zk_timeout",
            type=click.FloatRange(min=0.1),
            default=10.0,
            show_default=True,
            metavar="SECONDS",
            help="How long to try to reach ZooKeeper (also each ZooKeeper request's deadline) or the "
            "--bootstrap-server brokers (default there: 30, or request.timeout.ms of --command-config). "
            "--zk-timeout is its old name.",
        ),
        *ZK_SECURITY_OPTIONS,
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["text", "json"]),
            default="text",
            show_default=True,
            help="Output on stdout: Kafka's text, or one JSON document.",
        ),
        click.option("--no-color", is_flag=True, help="No colours on stderr (also when NO_COLOR is set)."),
        click.option(
            "-q", "--quiet", is_flag=True, help="Only results and errors; no summaries or progress."
        ),
        click.option("-v", "--verbose", is_flag=True, help="More detail on stderr (and Spark's own logs)."),
    ]


OUTPUT_OPTIONS = frozenset({"fmt", "no_color", "quiet", "verbose"})


def typed_connection(ctx: click.Context) -> tuple[ConnectionOption, ...]:
    """The connection options of `_option_decorators` given on the command line (not from the environment
    nor defaults), as (long flag, value) in the command's order of options: for suggested commands."""
    out: list[ConnectionOption] = []
    for p in ctx.command.params:
        if not isinstance(p, click.Option) or p.name not in _connection_names() or p.name is None:
            continue
        if ctx.get_parameter_source(p.name) != click.core.ParameterSource.COMMANDLINE:
            continue
        value, flag = ctx.params.get(p.name), max(p.opts, key=len)
        if p.is_flag:
            if value:
                out.append((flag, None))
        elif value is not None:
            out.append((flag, str(value)))
    return tuple(out)


@functools.cache
def _connection_names() -> frozenset[str]:
    def probe() -> None: ...

    for d in _option_decorators():
        d(probe)
    names = {p.name for p in getattr(probe, "__click_params__", ())}
    return frozenset(n for n in names if n is not None) - OUTPUT_OPTIONS


def _pop_options(kwargs: dict[str, Any]) -> Options:
    ctx = click.get_current_context()
    names = ("zookeeper", "zk_timeout", "bootstrap", "command_config", "zk_jaas_file", "zk_tls_config_file")
    explicit = frozenset(
        n for n in names if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE
    )
    return Options(
        zookeeper=kwargs.pop("zookeeper"),
        zk_timeout=kwargs.pop("zk_timeout"),
        format=kwargs.pop("fmt"),
        color=not kwargs.pop("no_color"),
        quiet=kwargs.pop("quiet"),
        verbose=kwargs.pop("verbose"),
        bootstrap=kwargs.pop("bootstrap"),
        command_config=kwargs.pop("command_config"),
        zk_jaas_file=kwargs.pop("zk_jaas_file"),
        zk_tls_config_file=kwargs.pop("zk_tls_config_file"),
        bootstrap_controller=kwargs.pop("bootstrap_controller", None),
        explicit=explicit,
        typed=typed_connection(ctx),
    )


def controller_option(f: F) -> F:
    """--bootstrap-controller, for the commands that take throttles off (above @connection_options)."""
    return click.option(
        "--bootstrap-controller",
        "bootstrap_controller",
        envvar="KAFKA_REASSIGN_BOOTSTRAP_CONTROLLER",
        metavar="HOST:PORT[,...]",
        help="KRaft controllers (their controller listener, KIP-919): the throttles this tool set on a broker "
        "that is down are taken off through the active controller, instead of waiting for the broker; uses "
        "--command-config too [env: KAFKA_REASSIGN_BOOTSTRAP_CONTROLLER].",
    )(f)


def connection_options(f: F) -> F:
    """--zookeeper/--zk-timeout, --bootstrap-server/--command-config plus the output options; the command
    receives `opts: Options` (`connection` / `open_backend` pick the backend from it)."""

    def wrapper(**kwargs: Any) -> Any:
        from reassign_cli.render import progress

        route_library_logs(kwargs["verbose"])
        opts = _pop_options(kwargs)
        progress.CONFIGS_CONNECTION = lambda: configs_connection(opts)
        try:
            return f(opts=opts, **kwargs)
        except ReassignError as e:
            e.verbose = opts.verbose  # cli.main prints the uncut message under -v
            if isinstance(e, OtherRecordError) and e.hint is None:
                e.hint = f"Run: {working_command(e.zookeeper)}"
            raise

    wrapper.__name__ = f.__name__
    wrapper.__doc__ = f.__doc__
    out: Any = wrapper
    for d in reversed(_option_decorators()):
        out = d(out)
    return cast(F, out)


def route_library_logs(verbose: bool) -> None:
    """kazoo's and kafka-python's own log lines (connection retries, broker errors) go to stderr with -v, and
    nowhere otherwise: our one-line errors say what failed. A process-wide choice, so made here, in the CLI."""
    import logging
    import sys

    for name in ("kazoo", "kafka"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [logging.StreamHandler(sys.stderr) if verbose else logging.NullHandler()]
        logger.propagate = False
        logger.setLevel(logging.INFO if verbose else logging.CRITICAL + 1)


# verify and cancel take the plan that execute was given.
executed_file_option = click.option(
    "--reassignment-json-file",
    "reassignment_file",
    required=True,
    metavar="FILE",
    help="The file that was given to execute.",
)


@dataclass(frozen=True, slots=True)
class Connection:
    """What a command talks to: ZooKeeper (zk set; admin, if set, only for what ZooKeeper does not carry:
    log-dir moves and cancel) or the admin API (zk None, admin set)."""

    zk: ZkOptions | None
    admin: AdminOptions | None


def connection(opts: Options, *, admin_too: bool = True) -> Connection:
    """THE choice of backend, from the options. One rule for every subcommand, whatever the source of
    each value: a flag replaces its own environment variable and never hides the other one.

    - ZooKeeper (--zookeeper or KAFKA_REASSIGN_ZOOKEEPER) alone: ZooKeeper.
    - The brokers (--bootstrap-server or KAFKA_REASSIGN_BOOTSTRAP) alone: the admin API.
    - Both: ZooKeeper mode, with the brokers for what ZooKeeper does not carry (log-dir moves and their
      state, partition sizes, the cancel). `admin_too=False` only leaves the brokers out of the result.
    - Neither: a usage error. An empty value (`--zookeeper ''`) hides its variable.

    When both are set and one came from the environment, one line on stderr says which was used."""
    from reassign_cli.errors import UsageError

    if not opts.zookeeper and not opts.bootstrap:
        raise UsageError(
            "--zookeeper or --bootstrap-server is required "
            "(or set KAFKA_REASSIGN_ZOOKEEPER or KAFKA_REASSIGN_BOOTSTRAP)"
        )
    if not opts.zookeeper:
        return Connection(None, _admin_options(opts))
    if "command_config" in opts.explicit and not opts.bootstrap:
        raise UsageError("--command-config configures --bootstrap-server, which is not given")
    _note_both(opts)
    admin = _admin_options(opts) if admin_too and opts.bootstrap else None
    return Connection(_zk_options(opts), admin)


def _note_both(opts: Options) -> None:
    """Both connections set, one of them from the environment (a stale variable is easy to miss): say so,
    once per command."""
    if not opts.bootstrap or opts.noted or opts.quiet:
        return
    opts.noted = True
    zk_from = "--zookeeper" if "zookeeper" in opts.explicit else "KAFKA_REASSIGN_ZOOKEEPER"
    bs_from = "--bootstrap-server" if "bootstrap" in opts.explicit else "KAFKA_REASSIGN_BOOTSTRAP"
    if zk_from.startswith("--") and bs_from.startswith("--"):
        return
    env = zk_from if not zk_from.startswith("--") else bs_from
    click.echo(
        f"Using ZooKeeper mode: ZooKeeper {opts.zookeeper} ({zk_from}), with the brokers {opts.bootstrap} "
        f"({bs_from}) beside it; to use only one, unset {env} or give its option as ''.",
        err=True,
    )


def command_line(*extra: str) -> str:
    """This command as it was typed, with `extra` arguments added: the command that works, for a hint."""
    import shlex
    import sys

    return shlex.join(["kafka-reassign", *sys.argv[1:], *extra])


def working_command(zookeeper: str) -> str:
    """The command that clears throttles recorded in ZooKeeper: this one with --zookeeper added (the
    brokers stay: ZooKeeper mode with their help); after `execute --wait`, verify of the same plan."""
    import sys

    args = sys.argv[1:]
    if "execute" in args:
        verify = ["verify", "--reassignment-json-file", _value_of(args, "--reassignment-json-file") or "FILE"]
        for name in ("--bootstrap-server", "--command-config"):
            value = _value_of(args, name)
            verify += [name, value] if value is not None else []
        return command_line_of([*verify, "--zookeeper", zookeeper])
    return command_line_of([*_without(args, "--zookeeper"), "--zookeeper", zookeeper])


def _without(args: list[str], name: str) -> list[str]:
    """`args` without the option `name` and its value."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == name:
            skip = True
        elif not a.startswith(name + "="):
            out.append(a)
    return out


def _value_of(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.partition("=")[2]
    return None


def command_line_of(args: list[str]) -> str:
    import shlex

    return shlex.join(["kafka-reassign", *args])


def configs_connection(opts: Options) -> list[str]:
    """The connection options of a kafka-configs command for this cluster: always --bootstrap-server
    (Kafka 3.x's kafka-configs takes --zookeeper only for brokers that are down, 4.x not at all): the one
    given, else the brokers registered in ZooKeeper; and --command-config when one is given."""
    bootstrap = opts.bootstrap
    if not bootstrap:
        zk = connection(opts).zk
        bootstrap = registered_brokers(zk) if zk is not None else "HOST:PORT"
    extra = ["--command-config", opts.command_config] if opts.command_config else []
    return ["--bootstrap-server", bootstrap, *extra]


def registered_brokers(zk: ZkOptions) -> str:
    """HOST:PORT,... of the brokers registered in ZooKeeper (each one's first listener), for a hint;
    "HOST:PORT" when ZooKeeper cannot tell."""
    from reassign_cli.backends.zookeeper.session import open_session
    from reassign_cli.core.znodes import broker_endpoints

    try:
        with open_session(zk) as session:
            found = []
            for b in sorted(session.children("/brokers/ids"), key=lambda x: int(x) if x.isdigit() else 0):
                data, _ = session.get(f"/brokers/ids/{b}")
                endpoints = broker_endpoints(data or b"{}")
                if endpoints:
                    found.append(endpoints[0].rpartition("://")[2])
    except ReassignError:
        return "HOST:PORT"
    return ",".join(found) or "HOST:PORT"


def _admin_options(opts: Options) -> AdminOptions:
    from reassign_cli.cli.inputs import read_input_file
    from reassign_cli.core.client_config import admin_options

    text = None
    if opts.command_config:
        raw = read_input_file(opts.command_config, "command config")
        text = raw.decode("utf-8", errors="replace")
    options = admin_options(opts.bootstrap or "", text)
    if "zk_timeout" in opts.explicit:  # --connect-timeout: the brokers' bootstrap and the reach probe
        seconds = opts.zk_timeout
        settings = {**options.settings, "bootstrap_timeout_ms": int(seconds * 1000)}
        options = dataclasses.replace(options, settings=settings, connect_timeout=seconds)
    if options.ignored and opts.verbose:
        click.echo(f"Ignored in the command config: {', '.join(options.ignored)}", err=True)
    return options


def _zk_options(opts: Options) -> ZkOptions:
    """Without --zk-jaas-file, the JAAS file of KAFKA_OPTS is used as Kafka's own tools would; a file found
    there without a Client section means no SASL (ZooKeeper's client does the same), a named one without
    it is an error."""
    import os

    from reassign_cli.backends.zookeeper.session import ZkOptions
    from reassign_cli.core.zk_security import jaas_file_from_kafka_opts

    from_opts, section = jaas_file_from_kafka_opts(os.environ.get("KAFKA_OPTS"))
    jaas, required = (opts.zk_jaas_file, True) if opts.zk_jaas_file else (from_opts, False)
    return ZkOptions(
        opts.zookeeper or "",
        opts.zk_timeout,
        jaas_file=jaas,
        jaas_section=section,
        jaas_required=required,
        tls_config_file=opts.zk_tls_config_file,
    )


def zk_options(opts: Options) -> ZkOptions | None:
    """The ZooKeeper connection the options ask for; None when they choose the admin API."""
    return connection(opts).zk


@contextlib.contextmanager
def open_backend(opts: Options, *, admin_too: bool = False) -> Iterator[Backend]:
    """The cluster the options name, as a `backend.Backend`: the one place a command's backend is opened
    (`connection` chooses it)."""
    conn = connection(opts, admin_too=admin_too)
    if conn.zk is None:
        from reassign_cli.backends.admin.backend import open_admin_backend

        assert conn.admin is not None
        with open_admin_backend(conn.admin, _controller_options(opts, conn.admin)) as admin_backend:
            yield admin_backend
        return
    from reassign_cli.backends.zookeeper.backend import ZkBackend
    from reassign_cli.backends.zookeeper.session import open_session

    with open_session(conn.zk) as session:
        yield ZkBackend(session, admin=conn.admin)


def _controller_options(opts: Options, admin: AdminOptions) -> AdminOptions | None:
    """--bootstrap-controller with the client settings of --command-config (None when not given)."""
    import dataclasses

    from reassign_cli.errors import UsageError

    if not opts.bootstrap_controller:
        return None
    if not [s for s in opts.bootstrap_controller.split(",") if s.strip()]:
        raise UsageError("--bootstrap-controller needs at least one HOST:PORT")
    return dataclasses.replace(admin, bootstrap=opts.bootstrap_controller)


def log_dir_mover(backend: Backend) -> LogDirMover | None:
    """Where execute's log-dir moves go: the admin backend's own client, or the brokers named beside
    --zookeeper; None when neither is known."""
    from reassign_cli.backends.admin.backend import AdminBackend
    from reassign_cli.backends.admin.log_dirs import LogDirMover
    from reassign_cli.backends.zookeeper.backend import ZkBackend

    if isinstance(backend, AdminBackend):
        return LogDirMover(backend.options, backend.admin)
    if isinstance(backend, ZkBackend) and backend.admin is not None:
        return LogDirMover(backend.admin)
    return None


# Objects that must not be freed before the process exits (see keep_until_exit).
_KEPT: list[object] = []


def keep_until_exit(*objects: object) -> None:
    """Hold large results until the console script's os._exit: freeing millions of small objects one by
    one costs ~0.3 s per million partitions and serves no purpose at the end of a command."""
    _KEPT.extend(objects)
