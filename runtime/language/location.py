"""Provides `Location`: where a step is. Its own module, importing nothing, so that reading a
recorded run (`runtime.record`) does not load the parser and the AST (start-up time of
`agency show`); `runtime.language.bytecode` re-exports it."""

from __future__ import annotations

from runtime.frozen import Frozen, set_field


class Location(Frozen):
    """Where a step is: `file:scope:path` plus a span for highlighting.

    `path` is the statement's position inside its function as dotted indices ("3.body.0"),
    stable across runs of the same source.
    """

    __slots__ = ("file", "scope", "path", "line", "col", "end_line", "end_col")

    file: str
    scope: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __init__(
        self, file: str, scope: str, path: str, line: int, col: int, end_line: int, end_col: int
    ) -> None:
        set_field(self, "file", file)
        set_field(self, "scope", scope)
        set_field(self, "path", path)
        set_field(self, "line", line)
        set_field(self, "col", col)
        set_field(self, "end_line", end_line)
        set_field(self, "end_col", end_col)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"
