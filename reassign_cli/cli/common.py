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
    format: str  # "text" | "json"
    color: bool
    quiet: bool
    verbose: bool

    @property
    def json(self) -> bool:
        return self.format == "json"


def connection_options(f: F) -> F:
    """--zookeeper/--zk-timeout plus the output options; the command receives `opts: Options`."""
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
    """The ZooKeeper connection the options ask for (--zookeeper is required)."""
    from reassign_cli.zookeeper.session import ZkOptions

    return ZkOptions(require_zookeeper(opts), opts.zk_timeout)


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
