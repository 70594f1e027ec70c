"""Options every subcommand shares, and the small context object they build."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

if TYPE_CHECKING:
    from reassign_cli.backend import Backend
    from reassign_cli.zookeeper.session import ZkOptions

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class Options:
    zookeeper: str | None
    zk_timeout: float
    zk_jaas_file: str | None
    zk_tls_config_file: str | None
    format: str  # "text" | "json"
    color: bool
    quiet: bool
    verbose: bool

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


def connection_options(f: F) -> F:
    """--zookeeper/--zk-timeout/--zk-jaas-file/--zk-tls-config-file plus the output options; the command
    receives `opts: Options`."""
    decorators = [
        click.option(
            "--zookeeper",
            envvar="KAFKA_REASSIGN_ZOOKEEPER",
            metavar="HOST:PORT[,HOST:PORT][/chroot]",
            help="ZooKeeper connect string, as in the brokers' zookeeper.connect "
            "[env: KAFKA_REASSIGN_ZOOKEEPER].",
        ),
        click.option(
            "--zk-timeout",
            type=click.FloatRange(min=0.1),
            default=10.0,
            show_default=True,
            metavar="SECONDS",
            help="Connect and request timeout.",
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

    def wrapper(**kwargs: Any) -> Any:
        route_library_logs(kwargs["verbose"])
        opts = Options(
            zookeeper=kwargs.pop("zookeeper"),
            zk_timeout=kwargs.pop("zk_timeout"),
            zk_jaas_file=kwargs.pop("zk_jaas_file"),
            zk_tls_config_file=kwargs.pop("zk_tls_config_file"),
            format=kwargs.pop("fmt"),
            color=not kwargs.pop("no_color"),
            quiet=kwargs.pop("quiet"),
            verbose=kwargs.pop("verbose"),
        )
        return f(opts=opts, **kwargs)

    wrapper.__name__ = f.__name__
    wrapper.__doc__ = f.__doc__
    out: Any = wrapper
    for d in reversed(decorators):
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


# The admin-API calls (execute's log-dir moves, cancel) take Kafka's client properties.
command_config_option = click.option(
    "--command-config",
    metavar="FILE",
    envvar="KAFKA_REASSIGN_COMMAND_CONFIG",
    help="Kafka client properties for the admin-API calls (security.protocol, sasl.mechanism, "
    "sasl.jaas.config, ssl.truststore.*/keystore.* in PEM), as Kafka's --command-config "
    "[env: KAFKA_REASSIGN_COMMAND_CONFIG].",
)


def admin_config(command_config: str | None) -> dict[str, Any]:
    """KafkaAdminClient keyword arguments from a --command-config file (none without one)."""
    if not command_config:
        return {}
    from reassign_cli.admin.client_config import admin_client_kwargs, read_client_properties

    return admin_client_kwargs(read_client_properties(command_config))


# verify and cancel take the plan that execute was given.
executed_file_option = click.option(
    "--reassignment-json-file",
    "reassignment_file",
    required=True,
    metavar="FILE",
    help="The file that was given to execute.",
)


def require_zookeeper(opts: Options) -> str:
    from reassign_cli.errors import UsageError

    if not opts.zookeeper:
        raise UsageError("--zookeeper is required (or set KAFKA_REASSIGN_ZOOKEEPER)")
    return opts.zookeeper


def zk_options(opts: Options) -> ZkOptions:
    """The ZooKeeper connection the options ask for (--zookeeper is required). Without --zk-jaas-file, the
    JAAS file of KAFKA_OPTS is used as Kafka's own tools would; a file found there without a Client
    section means no SASL (ZooKeeper's client does the same), a named one without it is an error."""
    import os

    from reassign_cli.zk_security import jaas_file_from_kafka_opts
    from reassign_cli.zookeeper.session import ZkOptions

    from_opts, section = jaas_file_from_kafka_opts(os.environ.get("KAFKA_OPTS"))
    jaas, required = (opts.zk_jaas_file, True) if opts.zk_jaas_file else (from_opts, False)
    return ZkOptions(
        require_zookeeper(opts),
        opts.zk_timeout,
        jaas_file=jaas,
        jaas_section=section,
        jaas_required=required,
        tls_config_file=opts.zk_tls_config_file,
    )


@contextlib.contextmanager
def open_backend(opts: Options) -> Iterator[Backend]:
    """The cluster the options name, as a `backend.Backend`: the one place a command's backend is chosen
    (ZooKeeper today; the admin API's joins here)."""
    from reassign_cli.zookeeper.backend import ZkBackend
    from reassign_cli.zookeeper.session import open_session

    with open_session(zk_options(opts)) as session:
        yield ZkBackend(session)


# Objects that must not be freed before the process exits (see keep_until_exit).
_KEPT: list[object] = []


def keep_until_exit(*objects: object) -> None:
    """Hold large results until the console script's os._exit: freeing millions of small objects one by
    one costs ~0.3 s per million partitions and serves no purpose at the end of a command."""
    _KEPT.extend(objects)
