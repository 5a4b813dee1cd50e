"""Provides the text side of code literals `[| … |]`: finding their holes and reading what
kind of code they hold.

A hole is `#name` (optionally typed, `#name: string`) outside strings and comments. To parse a
literal, each hole is replaced by the placeholder name `__hole_name`; where that placeholder
lands in the tree says the hole's sort:
  "decl"   a bare hole at the top of a program fragment (declarations go there)
  "stmt"   a bare hole on its own line anywhere else (statements go there)
  "expr"   a hole where a value goes (its type from `#x: T` or `const v: T = #x`)
  "ident"  a hole where a name goes (`def #name()`, `import { #tool }`)
A fragment's kind is "program" when it declares something (a def, node, type or import, or a
declaration hole beside them), "expr" when it is one expression, else "statements".
"""

from __future__ import annotations

import re
import textwrap

import runtime.language.syntax.ast as ast
from runtime.language.syntax.nodes import Node

PLACEHOLDER = "__hole_"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPE_SUFFIX = re.compile(r"[ \t]*:[ \t]*([A-Za-z_][A-Za-z0-9_]*(?:\[\])*)")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class HoleMark(Node):
    """One `#name` in a literal's text: `start`/`end` cover `#name` and any `: T` after it."""

    name: str
    start: int
    end: int
    type: str | None


class HoleInfo(Node):
    name: str
    sort: str
    type: str | None
    marks: tuple[HoleMark, ...]


def dedent(text: str) -> str:
    """A literal's text without its common indentation and surrounding blank lines."""
    return textwrap.dedent(text.strip("\n")).strip()


def scan(text: str) -> list[HoleMark]:
    """Every hole in `text`, in order (holes inside strings and comments are text)."""
    marks: list[HoleMark] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'`":
            i = _skip_string(text, i)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "#" and (m := _NAME.match(text, i + 1)):
            end = m.end()
            typed = _TYPE_SUFFIX.match(text, end)
            hole_type = typed.group(1) if typed else None
            marks.append(HoleMark(m.group(), i, typed.end() if typed else end, hole_type))
            i = m.end() if not typed else typed.end()
        else:
            i += 1
    return marks


def _skip_string(text: str, i: int) -> int:
    quote, j, n = text[i], i + 1, len(text)
    while j < n and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def with_placeholders(text: str, marks: list[HoleMark]) -> str:
    out, last = [], 0
    for mark in marks:
        out.append(text[last : mark.start])
        out.append(PLACEHOLDER + mark.name)
        last = mark.end
    out.append(text[last:])
    return "".join(out)


def kind_of(tree: ast.Program) -> str:
    declares = any(isinstance(i, (ast.FuncDecl, ast.TypeAlias, ast.Import)) for i in tree.items)
    if declares:
        return "program"
    if len(tree.items) == 1 and type(tree.items[0]) is ast.ExprStmt:
        return "expr"
    return "statements"


def holes(
    text: str,
    tree: ast.Program,
    marks: list[HoleMark],
    placeholder_text: str,
    kind: str | None = None,
) -> list[HoleInfo]:
    """The holes of a parsed literal (`tree` parsed from `placeholder_text`), in order of first
    appearance, each with its sort and declared type. `kind` overrides the fragment's kind (a
    template loaded from a file is a program even when it holds one bare hole)."""
    kind = kind or kind_of(tree)
    sorts: dict[str, str] = {}
    types: dict[str, str] = {}
    lines = placeholder_text.split("\n")

    def type_text(t: ast.TypeExpr) -> str:
        s = t.span
        if s.line != s.end_line or s.line < 1:
            return ""
        return lines[s.line - 1][s.col - 1 : s.end_col - 1]

    def hole_name(e: object) -> str | None:
        if type(e) is ast.Name and e.id.startswith(PLACEHOLDER):
            return e.id[len(PLACEHOLDER) :]
        return None

    def visit(node: object, top: bool) -> None:
        if type(node) is ast.ExprStmt and (name := hole_name(node.expr)):
            sorts.setdefault(name, "decl" if top and kind == "program" else "stmt")
            return
        if type(node) is ast.VarDecl and node.type is not None and (name := hole_name(node.value)):
            sorts.setdefault(name, "expr")
            types.setdefault(name, type_text(node.type))
            return
        if name := hole_name(node):
            sorts.setdefault(name, "expr")
            return
        if isinstance(node, Node):
            for field in node._fields:
                _visit_value(getattr(node, field))
        elif isinstance(node, (tuple, list)):
            for x in node:
                visit(x, False)

    def _visit_value(value: object) -> None:
        if isinstance(value, (tuple, list)):
            for x in value:
                visit(x, False)
        elif isinstance(value, Node):
            visit(value, False)

    for item in tree.items:
        visit(item, True)
    out: dict[str, HoleInfo] = {}
    for mark in marks:
        if mark.name in out:
            continue
        same = tuple(m for m in marks if m.name == mark.name)
        declared = next((m.type for m in same if m.type), None) or types.get(mark.name) or None
        out[mark.name] = HoleInfo(mark.name, sorts.get(mark.name, "ident"), declared, same)
    return list(out.values())
