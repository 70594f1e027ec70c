"""Exit codes and the one exception hierarchy. Pure: imported by every layer.

`cli.main` is the only place these become messages and exit codes.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # operational: ZooKeeper unreachable, auth failure, unexpected
    USAGE = 2  # Click's usage errors, missing optional extras
    INVALID = 3  # invalid plan or input file; nothing was written
    BUSY = 4  # a reassignment is running (execute) / still in progress (verify, --wait timeout)
    NOT_AS_PLANNED = 5  # verify: finished, but some partition is not as planned
    INTERRUPTED = 130


class ReassignError(Exception):
    """Base class of every error this tool reports. `str(e)` is the one line shown to the user."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint  # optional second line of advice, printed after the message
        # A message built by core.names.listed carries its uncut list; cli.main shows it under -v.
        self.full: str = getattr(message, "full", message)
        self.verbose = False  # set by the command wrapper (cli.common) on the way out


class OperationalError(ReassignError):
    """ZooKeeper unreachable, auth failure, missing chroot, a write that failed."""

    exit_code = ExitCode.ERROR


class UsageError(ReassignError):
    """Bad combination of options that Click cannot express, or a missing optional extra."""

    exit_code = ExitCode.USAGE


class InvalidInputError(ReassignError):
    """Malformed JSON, unknown broker, duplicate replica, missing topic...: nothing was written."""

    exit_code = ExitCode.INVALID


class OtherRecordError(OperationalError):
    """A clear through the admin API on a ZooKeeper-mode cluster whose ZooKeeper-side record names
    throttles of ours: only the ZooKeeper backend can restore them. `zookeeper`: the brokers'
    zookeeper.connect, for the command that works (the CLI adds it as the hint)."""

    def __init__(self, message: str, *, zookeeper: str) -> None:
        super().__init__(message)
        self.zookeeper = zookeeper


class Interrupted(ReassignError):
    """Ctrl-C while waiting; what was started keeps running in the cluster (the message says so)."""

    exit_code = ExitCode.INTERRUPTED


class BusyError(ReassignError):
    """A reassignment is already running, or is still in progress when we stopped waiting."""

    exit_code = ExitCode.BUSY


# Kafka's own exception types from AdminUtils.assignReplicasToBrokers, with Kafka's messages.
class InvalidPartitionsError(InvalidInputError):
    pass


class InvalidReplicationFactorError(InvalidInputError):
    pass


class AdminOperationError(InvalidInputError):
    pass
