"""Provides `Location`: where a step is. Its own module, importing nothing, so that reading a
recorded run (`runtime.record`) does not load the parser and the AST (start-up time of
`agency show`); `runtime.language.bytecode` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Location:
    """Where a step is: `file:scope:path` plus a span for highlighting.

    `path` is the statement's position inside its function as dotted indices ("3.body.0"),
    stable across runs of the same source.
    """

    file: str
    scope: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"
