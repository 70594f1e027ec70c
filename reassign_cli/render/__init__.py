"""Terminal output: results on stdout (plain text or JSON), everything else on stderr through Rich.

Subcommand-specific renderers live in sibling modules (render/generate.py, render/progress.py...).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import orjson
from rich.console import Console


class Output:
    """One per command invocation. `result*` go to stdout; `info`/`warn`/`table` go to stderr."""

    def __init__(self, *, color: bool = True, quiet: bool = False, verbose: bool = False) -> None:
        self.quiet = quiet
        self.verbose = verbose
        no_color = (not color) or bool(os.environ.get("NO_COLOR"))
        # highlight=False: Rich must not recolour numbers inside Kafka-style messages.
        self.err = Console(stderr=True, no_color=no_color, highlight=False, soft_wrap=True)

    @property
    def interactive(self) -> bool:
        """Progress bars and live displays only when stderr is a terminal."""
        return self.err.is_terminal and not self.quiet

    # -- stdout -------------------------------------------------------------------------------
    def result(self, text: str = "") -> None:
        sys.stdout.write(text + "\n")

    def result_json(self, doc: Any) -> None:
        sys.stdout.buffer.write(orjson.dumps(doc) + b"\n")
        sys.stdout.flush()

    # -- stderr -------------------------------------------------------------------------------
    def info(self, text: str) -> None:
        if not self.quiet:
            self.err.print(text, markup=False)

    def detail(self, text: str) -> None:
        if self.verbose and not self.quiet:
            self.err.print(text, markup=False, style="dim")

    def warn(self, text: str) -> None:
        """Under -v a message whose names were cut (core.names.listed) is printed whole."""
        whole = getattr(text, "full", text) if self.verbose else text
        self.err.print(f"Warning: {whole}", markup=False, style="yellow")

    def renderable(self, obj: Any) -> None:
        """A Rich table or panel, on stderr, unless quiet."""
        if not self.quiet:
            self.err.print(obj)
