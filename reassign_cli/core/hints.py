"""The commands a message suggests ("Check it with: kafka-reassign verify ..."), ready to paste.

A suggested command carries the connection options the running command was given as flags, so that it
reaches the same cluster from the same shell (options taken from the environment are still there, and
are left out). Every word is shell-quoted; an option whose name says it holds a secret is never printed.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence

PROG = "kafka-reassign"
SECRET_WORDS = ("password", "passwd", "secret", "token", "credential", "sasl-jaas-config")

# One connection option as typed: ("--zookeeper", "zk1:2181/kafka"), or (flag, None) for a bare flag.
ConnectionOption = tuple[str, str | None]


def is_secret(flag: str) -> bool:
    name = flag.lower()
    return any(w in name for w in SECRET_WORDS)


def connection_words(connection: Iterable[ConnectionOption]) -> list[str]:
    """The options as words, secrets left out."""
    out: list[str] = []
    for flag, value in connection:
        if is_secret(flag):
            continue
        out += [flag] if value is None else [flag, value]
    return out


def command_line(args: Sequence[str], connection: Iterable[ConnectionOption] = ()) -> str:
    """`kafka-reassign ARGS CONNECTION`, each word shell-quoted:
    `kafka-reassign verify --reassignment-json-file 'my plan.json' --zookeeper zk:2181/kafka`."""
    return shlex.join([PROG, *args, *connection_words(connection)])
