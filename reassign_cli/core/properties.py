"""Java .properties text (`--command-config`, `--zk-tls-config-file`) as java.util.Properties reads it:
the javaproperties package does the syntax (logical lines, continuations, comments, separators, escapes,
\\uXXXX with surrogate pairs); the callers map the keys. Pure: text in, a dict out."""

from __future__ import annotations

import javaproperties

from reassign_cli.errors import ReassignError


def parse_properties(text: str, source: str, error: type[ReassignError]) -> dict[str, str]:
    """The file's properties; a later key wins, as in java.util.Properties. A malformed \\uXXXX escape
    (which Java refuses too) is `error`, naming `source` but not the value: these files hold passwords."""
    try:
        return dict(javaproperties.loads(text))
    except javaproperties.InvalidUEscapeError:
        raise error(f"{source}: a malformed \\uXXXX escape (Java refuses it too)") from None
