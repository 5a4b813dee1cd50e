"""Provides the source-level tools of `std::agency`: the formatter (`format`, `formatFile`,
`writeAST`) and a module's top-level items as data (`parseAST`).

The formatter changes only layout, never tokens, so the program it returns is the program it
was given: each line is re-indented two spaces per open bracket (`{`, `(`, `[`) before it, a
line that starts by closing one sits at the opener's depth, trailing whitespace goes, runs of
blank lines become one, and the file ends with one newline. The inside of a multi-line string
and of a `/* … */` comment is kept as written. Source that does not parse is not formatted.
"""

from __future__ import annotations

from typing import Any

from runtime.errors import AgencySyntaxError
from runtime.language.syntax import ast as A
from runtime.language.syntax.lexer import tokenize
from runtime.language.syntax.parser import parse

OPENERS = frozenset({"{", "(", "["})
CLOSERS = frozenset({"}", ")", "]"})
INDENT = "  "

# What parseAST calls each kind of top-level item (the reference implementation's names).
ITEM_TYPES: dict[type, str] = {
    A.TypeAlias: "typeAlias",
    A.Import: "importStatement",
    A.VarDecl: "assignment",
}


def format_source(source: str, path: str = "<source>") -> str:
    """`source` laid out canonically (raises AgencySyntaxError when it does not parse)."""
    parse(source, path)
    tokens, problems = tokenize(source)
    if problems:
        raise AgencySyntaxError(problems, source)
    lines = source.splitlines()
    verbatim: set[int] = set()  # lines inside a token (a multi-line string): kept as written
    first: dict[int, str] = {}  # line → the text of the first token on it
    change: dict[int, int] = {}  # line → how the bracket depth changes on it
    for t in tokens:
        line = t.span.line
        verbatim.update(range(line + 1, t.span.end_line + 1))
        if t.kind in ("newline", "eof"):
            continue
        first.setdefault(line, t.text)
        if t.text in OPENERS:
            change[line] = change.get(line, 0) + 1
        elif t.text in CLOSERS:
            change[line] = change.get(line, 0) - 1
    out: list[str] = []
    depth = 0
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if number in verbatim:
            out.append(raw)
        elif not text:
            if out and out[-1] != "":
                out.append("")
        elif number not in first and not text.startswith(("//", "/*")):
            out.append(raw.rstrip())  # inside a block comment
        else:
            closes = 1 if first.get(number, "") in CLOSERS else 0
            out.append(INDENT * max(depth - closes, 0) + text)
        depth = max(depth + change.get(number, 0), 0)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def items_as_data(source: str, path: str = "<source>") -> dict[str, Any]:
    """The module as plain data: `{type: "agencyProgram", nodes}`, one node per top-level item,
    `{type, name?, line, col, source}`. Each node's `source` runs from the end of the item before
    it (so leading comments go with the item) to its own end: joining them gives the file."""
    tree = parse(source, path)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return offsets[min(line, len(lines) + 1) - 1] + col - 1 if line > 0 else 0

    nodes: list[dict[str, Any]] = []
    start = 0
    for item in tree.items:
        end = offset(item.span.end_line, item.span.end_col)
        if end <= start:
            continue  # an item the parser made up from another (no text of its own)
        node: dict[str, Any] = {"type": _item_type(item)}
        name = getattr(item, "name", None) or getattr(getattr(item, "target", None), "name", None)
        if isinstance(name, str):
            node["name"] = name
        node.update(line=item.span.line, col=item.span.col, source=source[start:end])
        nodes.append(node)
        start = end
    if nodes and start < len(source):
        nodes[-1]["source"] += source[start:]
    return {"type": "agencyProgram", "nodes": nodes}


def _item_type(item: Any) -> str:
    if type(item) is A.FuncDecl:
        return "graphNode" if item.kind == "node" else "function"
    return ITEM_TYPES.get(type(item), "statement")
