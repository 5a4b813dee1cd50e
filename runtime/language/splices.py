"""Provides splices `$( generator(…) )`: code a generator returns, put into the file while it
is loaded.

A splice's generator is a function imported from another file that returns a Code value. Its
call may use only literals, code literals and imported names (nothing of the file being loaded
exists yet). It runs in a program of its own made of the file's imports and one node that
returns the call; the Code it returns replaces the splice in the source text, which is then
parsed again. At the top level the code must declare things (and may not export them), inside
a body it is statements, elsewhere one expression (put in parentheses).

Running a program needs the machine, which lives above this layer: the runs layer installs the
function that does it in `RUNNERS` (runtime/runs/generators.py).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import runtime.language.syntax.ast as A
from runtime.errors import AgencyError, AgencySyntaxError, Diagnostic
from runtime.language.syntax import parse, templates
from runtime.language.syntax.nodes import Node

# Runs a generator program (source, path of the file it stands for) and returns the source of
# the Code it returned; raises AgencyError saying why it could not.
RUNNERS: list[Callable[[str, str], str]] = []

GENERATOR_NODE = "spliceGenerator"


class _Site(Node):
    splice: A.Splice
    position: str  # "decl", "stmt" or "expr"
    span: A.Span  # what the generated code replaces


def has_splices(tree: A.Program) -> bool:
    return bool(_sites(tree))


def _sites(tree: A.Program) -> list[_Site]:
    """Every splice, in source order (walked without recursion: trees can be very deep)."""
    out: list[_Site] = []
    stack: list[tuple[object, bool]] = [(item, True) for item in reversed(tree.items)]
    while stack:
        node, top = stack.pop()
        if type(node) is A.ExprStmt and type(node.expr) is A.Splice:
            out.append(_Site(node.expr, "decl" if top else "stmt", node.expr.span))
            continue
        if type(node) is A.Splice:
            out.append(_Site(node, "expr", node.span))
            continue
        if isinstance(node, (tuple, list)):
            stack.extend((x, False) for x in reversed(node))
        elif isinstance(node, Node):
            stack.extend((getattr(node, f), False) for f in reversed(node._fields))
    return out


def _offset(lines: list[str], line: int, col: int) -> int:
    return sum(len(x) + 1 for x in lines[: line - 1]) + col - 1


def _text(source: str, span: A.Span) -> str:
    lines = source.split("\n")
    return source[_offset(lines, span.line, span.col) : _offset(lines, span.end_line, span.end_col)]


def _imported(tree: A.Program) -> set[str]:
    names: set[str] = set()
    for item in tree.items:
        if type(item) is A.Import:
            renamed = {a for a, _ in item.aliases}
            names |= {n for n in item.names if n not in renamed}
            names |= {b for _, b in item.aliases}
            if item.namespace:
                names.add(item.namespace)
    return names


def _local_names(expr: A.Expr) -> list[A.Name]:
    found: list[A.Name] = []

    def visit(node: object) -> None:
        if type(node) is A.Name:
            found.append(node)
        elif isinstance(node, (tuple, list)):
            for x in node:
                visit(x)
        elif isinstance(node, Node):
            for f in node._fields:
                visit(getattr(node, f))

    visit(expr)
    return found


def expand(tree: A.Program, source: str, path: str) -> tuple[A.Program, str]:
    """`tree` with every splice replaced by the code its generator returns (and that code's
    source text); errors point at the splice."""
    sites = _sites(tree)
    imported = _imported(tree)
    declared = {i.name for i in tree.items if isinstance(i, (A.FuncDecl, A.TypeAlias))}
    imports = "\n".join(_text(source, i.span) for i in tree.items if type(i) is A.Import)
    problems: list[Diagnostic] = []
    edits: list[tuple[A.Span, str]] = []
    for site in sites:
        try:
            code = _generate(site, source, path, imports, imported)
            edits.append((site.span, _placed(code, site, source, declared)))
        except AgencyError as exc:
            problems.append(Diagnostic(f"splice: {exc}", site.span, path))
    if problems:
        raise AgencySyntaxError(problems, source)
    lines = source.split("\n")
    out = source
    for span, text in sorted(edits, key=lambda e: (e[0].line, e[0].col), reverse=True):
        start, end = (
            _offset(lines, span.line, span.col),
            _offset(lines, span.end_line, span.end_col),
        )
        out = out[:start] + text + out[end:]
    return parse(out, path), out


def _generate(site: _Site, source: str, path: str, imports: str, imported: set[str]) -> str:
    for name in _local_names(site.splice.expr):
        if name.id not in imported and name.id != "__code_literal":
            raise AgencyError(
                f"a splice's arguments may use only literals, code literals and imported names; "
                f"`{name.id}` is not imported"
            )
    if not RUNNERS:
        raise AgencyError("splices cannot run here (no generator runner is installed)")
    call = _text(source, site.splice.expr.span)
    program = f"{imports}\n\nnode {GENERATOR_NODE}() {{\n  return {call}\n}}\n"
    return RUNNERS[-1](program, path)


def _placed(code: str, site: _Site, source: str, declared: set[str]) -> str:
    """The generated code as it goes in the splice's place."""
    marks = templates.scan(code)
    if marks:
        raise AgencyError(f"the generated code still has the hole `#{marks[0].name}` open")
    try:
        generated = parse(code, "<generated>")
    except AgencySyntaxError as exc:
        raise AgencyError(
            f"the generated code does not parse: {exc.diagnostics[0].message}"
        ) from None
    kind = templates.kind_of(generated)
    if site.position == "expr":
        if kind != "expr":
            raise AgencyError(f"a splice in a value's place needs one expression, got {kind} code")
        return f"({code})"
    if site.position == "stmt" and kind == "program":
        raise AgencyError("a splice inside a body needs statements, got declarations")
    if site.position == "decl":
        for item in generated.items:
            name = getattr(item, "name", None)
            if name in declared:
                raise AgencyError(f"the generated code declares `{name}`, a name already in use")
        if code.lstrip().startswith("export ") or "\nexport " in code:
            raise AgencyError("generated declarations cannot be exported")
    indent = " " * (site.span.col - 1)
    return textwrap.indent(code, indent)[len(indent) :]
