"""`kafka-reassign-partitions`: Kafka's own command line as a drop-in for `kafka-reassign-partitions.sh`.

A thin translator: Kafka's options are checked as Kafka 4.x checks them (exactly one action, the connection,
the action's required and permitted options; Kafka 2.8's `--zookeeper` and what it refused without
`--bootstrap-server`), then turned into one `kafka-reassign` subcommand's argv, run by the same `main`, and
its exit code mapped to Kafka's: 0 or 1 (verify: 0 whatever the partitions' state), 130 when interrupted.
The lines on stdout are the subcommands' own, which are Kafka's. docs/differences.md lists what differs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from reassign_cli import __version__
from reassign_cli.cli.kafka_syntax import ACTIONS
from reassign_cli.cli.kafka_syntax import DROPIN as PROG
from reassign_cli.errors import ExitCode

# Kafka 4.x's ReassignPartitionsCommand: the options each action needs, and those it also takes. Kafka 2.8
# took --zookeeper with generate, execute and verify.
REQUIRED: dict[str, tuple[str, ...]] = {
    "verify": ("reassignment-json-file",),
    "generate": ("topics-to-move-json-file", "broker-list"),
    "execute": ("reassignment-json-file",),
    "cancel": ("reassignment-json-file",),
    "list": (),
}
PERMITTED: dict[str, tuple[str, ...]] = {
    "verify": ("bootstrap-server", "command-config", "preserve-throttles", "zookeeper"),
    "generate": ("bootstrap-server", "broker-list", "command-config", "disable-rack-aware", "zookeeper"),
    "execute": (
        "additional",
        "bootstrap-server",
        "command-config",
        "throttle",
        "replica-alter-log-dirs-throttle",
        "timeout",
        "disallow-replication-factor-change",
        "zookeeper",
    ),
    "cancel": ("bootstrap-server", "bootstrap-controller", "command-config", "preserve-throttles", "timeout"),
    "list": ("bootstrap-server", "bootstrap-controller", "command-config"),
}
# Kafka 2.8 refused these without --bootstrap-server (with --zookeeper alone).
BOOTSTRAP_ONLY = (
    "additional",
    "cancel",
    "command-config",
    "replica-alter-log-dirs-throttle",
    "list",
    "timeout",
)

HELP = "This tool helps to move topic partitions between replicas (Kafka's syntax; runs kafka-reassign)."


class DropInUsage(Exception):
    """A usage error as Kafka's tool reports it: its message, then exit 1."""


class _Command(click.Command):
    """Keeps the raw arguments: Kafka checks the options in the order they were given."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["dropin.argv"] = list(args)
        return super().parse_args(ctx, args)


def _flag(name: str, help: str) -> Any:
    return click.option(f"--{name}", name.replace("-", "_"), is_flag=True, help=help)


def _value(name: str, help: str, type: Any = str, default: Any = None) -> Any:
    return click.option(f"--{name}", name.replace("-", "_"), type=type, default=default, help=help)


EPILOG = """\b
Exit codes (Kafka's): 0 success (--verify: also while in progress or not as
planned), 1 any failure, 130 interrupted. Each action runs the kafka-reassign
subcommand of the same name; what differs from Kafka's tool: docs/differences.md."""


@click.command(PROG, cls=_Command, add_help_option=False, help=HELP, epilog=EPILOG)
@_flag("generate", "Generate a candidate reassignment (kafka-reassign generate).")
@_flag("execute", "Start the reassignment in --reassignment-json-file (kafka-reassign execute).")
@_flag("verify", "Check the reassignment; removes the throttles once it is done (kafka-reassign verify).")
@_flag("cancel", "Cancel the reassignments of the file's partitions (kafka-reassign cancel).")
@_flag("list", "List the reassignments running (kafka-reassign list).")
@_value("bootstrap-server", "The brokers (admin API).")
@_value(
    "bootstrap-controller", "Kafka's KIP-919 controller bootstrap (not supported: use --bootstrap-server)."
)
@_value("zookeeper", "ZooKeeper connect string (Kafka 2.8's deprecated option; ZooKeeper-mode clusters).")
@_value("command-config", "Admin client properties file.")
@_value("reassignment-json-file", "The plan (Kafka's reassignment JSON).")
@_value("topics-to-move-json-file", "The topics to move (Kafka's topics JSON).")
@_value("broker-list", 'The brokers to plan onto, "0,1,2".')
@_flag("disable-rack-aware", "Plan without racks.")
@_value("throttle", "Inter-broker throttle, B/s (negative: none).", int, -1)
@_value("replica-alter-log-dirs-throttle", "Throttle of moves between log dirs, B/s.", int, -1)
@_value("timeout", "ms to retry starting the log-dir moves.", int, 10000)
@_flag("additional", "Execute beside the reassignments running (also: change the throttle).")
@_flag("preserve-throttles", "Leave the throttles alone (verify, cancel).")
@_flag("disallow-replication-factor-change", "Refuse a plan that changes a partition's replica count.")
@_flag("help", "Print usage information.")
@_flag("version", "Display the version.")
def command(**kw: Any) -> int:
    ctx = click.get_current_context()
    given = _given(ctx)
    if kw["version"]:
        click.echo(__version__)
        return ExitCode.OK
    if kw["help"] or not given:  # Kafka prints its usage and exits 1
        click.echo(ctx.get_help(), err=True)
        return ExitCode.ERROR
    action = check(given, kw)
    kw["timeout_given"] = "timeout" in given
    return kafka_exit(action, run_ours(translate(action, kw)))


def _given(ctx: click.Context) -> list[str]:
    """The options given, in the order given (each once)."""
    names = {p.name for p in ctx.command.params}
    out: list[str] = []
    for token in ctx.meta.get("dropin.argv", []):
        if token.startswith("--"):
            name = token[2:].split("=", 1)[0]
            if name.replace("-", "_") in names and name not in out:
                out.append(name)
    return out


def check(given: Sequence[str], kw: dict[str, Any]) -> str:
    """Kafka's argument checks, in Kafka's order; the action. DropInUsage on the first that fails."""
    actions = [a for a in ACTIONS if a in given]
    if len(actions) != 1:
        raise DropInUsage("Command must include exactly one action: " + ", ".join(f"--{a}" for a in ACTIONS))
    action = actions[0]
    server, controller, zk = (n in given for n in ("bootstrap-server", "bootstrap-controller", "zookeeper"))
    if server and controller:
        raise DropInUsage("Please don't specify both --bootstrap-server and --bootstrap-controller")
    if not (server or controller or zk):
        raise DropInUsage("Please specify either --bootstrap-server or --bootstrap-controller")
    for name in REQUIRED[action]:
        if name not in given:
            raise DropInUsage(f'Missing required argument "[{name}]"')
    for name in given:
        if name != action and name not in REQUIRED[action] and name not in PERMITTED[action]:
            raise DropInUsage(f'Option "[{name}]" can\'t be used with action "[{action}]"')
    if zk and not server:
        for name in BOOTSTRAP_ONLY:
            if name in given:
                raise DropInUsage(f'You must specify --bootstrap-server when using "[{name}]"')
    if controller:
        raise DropInUsage(
            "--bootstrap-controller is not supported by this drop-in (kafka-python speaks to brokers): "
            "give --bootstrap-server"
        )
    return action


def translate(action: str, kw: dict[str, Any]) -> list[str]:
    """The `kafka-reassign` argv that does what Kafka's tool does for `action`."""
    argv = [action]
    files = {"generate": ("topics-to-move-json-file", "broker-list"), "list": ()}
    for name in files.get(action, ("reassignment-json-file",)):
        if kw[name.replace("-", "_")] is not None:
            argv += [f"--{name}", kw[name.replace("-", "_")]]
    if action == "generate" and kw["disable_rack_aware"]:
        argv.append("--disable-rack-aware")
    if action == "execute":
        argv += _execute_options(kw)
    if action in ("verify", "cancel") and kw["preserve_throttles"]:
        argv.append("--preserve-throttles")
    if action == "cancel" and kw.get("timeout_given"):
        argv += ["--timeout", _seconds(kw["timeout"])]
    for name in ("bootstrap-server", "zookeeper", "command-config"):
        if kw[name.replace("-", "_")] is not None:
            argv += [f"--{name}", kw[name.replace("-", "_")]]
    return argv


def _execute_options(kw: dict[str, Any]) -> list[str]:
    out: list[str] = []
    # Kafka: a negative rate (the default, -1) is no throttle.
    if kw["throttle"] >= 0:
        out += ["--throttle", str(kw["throttle"])]
    if kw["replica_alter_log_dirs_throttle"] >= 0:
        out += ["--replica-alter-log-dirs-throttle", str(kw["replica_alter_log_dirs_throttle"])]
    out += ["--log-dir-timeout", _seconds(kw["timeout"])]
    if kw["additional"]:
        out.append("--additional")
    if kw["disallow_replication_factor_change"]:
        out.append("--disallow-replication-factor-change")
    return out


def _seconds(ms: int) -> str:
    return f"{max(ms, 0) / 1000:g}"


def run_ours(argv: list[str]) -> int:
    """`kafka-reassign ARGV` in this process (its messages, its exit code)."""
    from reassign_cli.cli import main

    try:
        main(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return ExitCode.OK  # pragma: no cover - main always exits


def kafka_exit(action: str, code: int) -> int:
    """Kafka's exit code for ours: 0 on success, 1 on any failure (usage, input, busy, operational), 130
    when interrupted; verify exits 0 whatever it found (Kafka's verify fails only when it cannot run)."""
    if code in (ExitCode.OK, ExitCode.INTERRUPTED):
        return code
    if action == "verify" and code in (ExitCode.BUSY, ExitCode.NOT_AS_PLANNED):
        return ExitCode.OK
    return ExitCode.ERROR


def main(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry point: Kafka's usage errors print their message and exit 1."""
    try:
        rv = command.main(args=argv, prog_name=PROG, standalone_mode=False)
    except DropInUsage as e:
        click.echo(str(e), err=True)
        click.echo(
            f"Run {PROG} --help for the options; kafka-reassign --help for what they map to.", err=True
        )
        sys.exit(ExitCode.ERROR)
    except click.ClickException as e:  # a value Kafka could not parse either (e.g. --throttle abc)
        e.show()
        sys.exit(ExitCode.ERROR)
    except (click.Abort, KeyboardInterrupt):
        click.echo("Interrupted.", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    sys.exit(int(rv) if isinstance(rv, int) else ExitCode.OK)


def run() -> NoReturn:
    """The console script (as `kafka-reassign`'s run: no interpreter teardown)."""
    from reassign_cli.cli import run as run_cli

    run_cli(main)


if __name__ == "__main__":  # python -m reassign_cli.cli.dropin (the tests)
    run()
