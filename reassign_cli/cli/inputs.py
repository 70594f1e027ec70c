"""Reading the files an operator hands us. Every subcommand reports an unreadable input file the same way:
one line naming the file, exit 3 (invalid input; nothing was written)."""

from __future__ import annotations

from reassign_cli.errors import InvalidInputError


def read_input_file(path: str, what: str = "") -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise InvalidInputError(
            f"cannot read {what + ' ' if what else ''}{path}: {e.strerror or e}"
        ) from None
