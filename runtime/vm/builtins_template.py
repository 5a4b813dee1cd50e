"""Provides Code values and their operations (`std::template`): code literals `[| … |]`, `fill`,
`holesOf`, `toSource`, `combine` and `parseStatements`.

A Code value is plain data, `{__type: "code", kind, source, origins}`: its source text with the
open holes still written `#name`, and for holes that arrived inside a filler, the fill that
brought them (`origins`). Everything else (the kind, each hole's sort and type) is read again
from the source when needed, so a Code value checkpoints, serialises and rebuilds like any
record. Filling never parses a value as code: a value becomes a literal of the generated
program, checked against the hole's declared type first.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import runtime.language.syntax.ast as A
from runtime.errors import AgencyRuntimeError, AgencySyntaxError
from runtime.language.syntax import parse, parse_fragment, templates
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.values import JSArray, JSObject, Result, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

_SIMPLE_EXPR = templates.IDENTIFIER


class FillError(AgencyRuntimeError):
    """Why a fill (or another Code operation) cannot be done."""


def is_code(v: Any) -> bool:
    return type(v) is JSObject and v.get("__type") == "code" and type(v.get("source")) is str


def make_code(
    source: str, origins: dict[str, str] | None = None, kind: str | None = None
) -> JSObject:
    """A Code value; `kind` "program" keeps it a program whatever it holds (else it is read
    from the source)."""
    kind, _ = analyze(source, kind)
    return JSObject(
        __type="code", kind=kind, source=source, origins=JSObject(sorted((origins or {}).items()))
    )


def analyze(source: str, kind: str | None = None) -> tuple[str, list[templates.HoleInfo]]:
    """The kind of a fragment and its holes (raises AgencySyntaxError when it does not parse);
    a `kind` of "program" is kept, any other is read from the source."""
    marks = templates.scan(source)
    text = templates.with_placeholders(source, marks)
    tree = parse_fragment(text)
    kind = "program" if kind == "program" else templates.kind_of(tree)
    return kind, templates.holes(source, tree, marks, text, kind)


def _aliases(source: str) -> dict[str, A.TypeExpr]:
    text = templates.with_placeholders(source, templates.scan(source))
    tree = parse_fragment(text)
    return {i.name: i.type for i in tree.items if type(i) is A.TypeAlias}


@builtin("__code_literal")
def _code_literal(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    return make_code(templates.dedent(to_str(arg(args, named, 0, "text", ""))))


@builtin("__code_source")
def _code_source(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return str(_code_arg(arg(args, named, 0, "code", None), "toSource")["source"])


@builtin("__code_holes")
def _code_holes(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    code = _code_arg(arg(args, named, 0, "code", None), "holesOf")
    origins = code.get("origins") or {}
    _, holes = analyze(code["source"], code.get("kind"))
    return JSArray(
        JSObject(name=h.name, sort=h.sort, splice=False, type=h.type, origin=origins.get(h.name))
        for h in holes
    )


@builtin("__code_fill")
def _code_fill(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    code = _code_arg(arg(args, named, 0, "code", None), "fill")
    fills = arg(args, named, 1, "fills", None)
    if type(fills) is not JSObject:
        return Result(False, error="fill: the fills must be a record of hole names to fillers")
    try:
        return Result(True, fill(code, fills))
    except FillError as exc:
        return Result(False, error=str(exc))


@builtin("__code_combine")
def _code_combine(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    parts = arg(args, named, 0, "parts", None)
    if type(parts) is not JSArray or not all(is_code(p) for p in parts):
        return Result(False, error="combine: expected an array of Code values")
    origins: dict[str, str] = {}
    for p in parts:
        origins.update(p.get("origins") or {})
    source = "\n\n".join(p["source"] for p in parts if p["source"])
    program = any(p.get("kind") == "program" for p in parts)
    return _checked(source, origins, "combine", "program" if program else None)


@builtin("__code_parse")
def _code_parse(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    source = templates.dedent(to_str(arg(args, named, 0, "source", "")))
    kind = to_str(arg(args, named, 1, "kind", "statements"))
    what = {"program": "loadTemplate", "expr": "parseExpr"}.get(kind, "parseStatements")
    checked = _checked(source, {}, what, kind)
    if checked.ok and kind == "expr" and checked.value["kind"] != "expr":
        return Result(False, error="parseExpr: the text is not one expression")
    return checked


def _checked(source: str, origins: dict[str, str], what: str, kind: str | None = None) -> Result:
    try:
        return Result(True, make_code(source, origins, kind))
    except AgencySyntaxError as exc:
        return Result(False, error=f"{what}: the code does not parse: {_first(exc)}")


def _first(exc: AgencySyntaxError) -> str:
    d = exc.diagnostics[0]
    return f"{d.message} (line {d.span.line})"


def _code_arg(v: Any, what: str) -> JSObject:
    if not is_code(v):
        raise FillError(f"{what}: expected a Code value (a `[| … |]` literal or a fill)")
    code: JSObject = v
    return code


# -- fill ----------------------------------------------------------------------------------------


def fill(code: JSObject, fills: JSObject) -> JSObject:
    source = code["source"]
    origins = dict(code.get("origins") or {})
    kind, holes = analyze(source, code.get("kind"))
    by_name = {h.name: h for h in holes}
    for name in fills:
        if name not in by_name:
            raise FillError(f"fill: there is no hole `#{name}` to fill")
    aliases = _aliases(source)
    edits: list[tuple[int, int, str]] = []
    for name, filler in fills.items():
        hole = by_name[name]
        where = f" (in code grafted by the fill for `#{origins[name]}`)" if name in origins else ""
        for mark in hole.marks:
            text = _filler_text(hole, filler, source, mark, aliases, where)
            edits.append((mark.start, mark.end, text))
        origins.pop(name, None)
        if is_code(filler):
            _, inner = analyze(filler["source"], filler.get("kind"))
            for h in inner:
                origins[h.name] = name
    for start, end, text in sorted(edits, reverse=True):
        source = source[:start] + text + source[end:]
    try:
        return make_code(source, origins, kind)
    except AgencySyntaxError as exc:
        raise FillError(f"fill: the filled code does not parse: {_first(exc)}") from None


def _filler_text(
    hole: templates.HoleInfo,
    filler: Any,
    source: str,
    mark: templates.HoleMark,
    aliases: dict[str, A.TypeExpr],
    where: str,
) -> str:
    label = f"The hole `#{hole.name}`"
    if hole.sort == "ident":
        if type(filler) is not str or not templates.IDENTIFIER.match(filler):
            raise FillError(
                f"{label} needs a name (letters, digits, _), got {_shown(filler)}{where}"
            )
        return filler
    if is_code(filler):
        kind = filler["kind"]
        allowed = {
            "expr": ("expr",),
            "stmt": ("statements", "expr"),
            "decl": ("program", "statements"),
        }
        if kind not in allowed[hole.sort]:
            raise FillError(
                f"{label} is a {_sort_name(hole.sort)}; a {kind} fragment cannot fill it{where}"
            )
        text: str = filler["source"]
        if hole.sort == "expr":
            return text if _SIMPLE_EXPR.match(text) or _is_literal(text) else f"({text})"
        line_start = source.rfind("\n", 0, mark.start) + 1
        indent = source[line_start : mark.start]
        indent = indent if not indent.strip() else ""
        return text.replace("\n", "\n" + indent)
    if hole.sort != "expr":
        raise FillError(
            f"{label} is a {_sort_name(hole.sort)}: fill it with code, not a value{where}"
        )
    if hole.type:
        problem = _type_problem(filler, _type(hole.type), aliases, 0)
        if problem is not None:
            raise FillError(
                f"{label} expects `{hole.type}`, but the fill supplies `{_kind(filler)}`"
                f"{problem}{where}"
            )
    return literal(filler)


def _sort_name(sort: str) -> str:
    return {"expr": "value hole", "stmt": "statement hole", "decl": "declaration hole"}.get(
        sort, sort
    )


def _is_literal(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _shown(v: Any) -> str:
    return json.dumps(v) if type(v) is str else _kind(v)


def literal(v: Any) -> str:
    """A value as Agency source that evaluates to it (strings never interpolate)."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if type(v) is str:
        return json.dumps(v, ensure_ascii=False).replace("$", "\\$")
    if type(v) in (int, float):
        return to_str(v)
    if type(v) is JSArray:
        return "[" + ", ".join(literal(x) for x in v) + "]"
    if type(v) is JSObject:
        keys = (k if templates.IDENTIFIER.match(k) else json.dumps(k) for k in v)
        return "{ " + ", ".join(f"{k}: {literal(x)}" for k, x in zip(keys, v.values())) + " }"
    raise FillError(f"fill: a {_kind(v)} cannot be written into code")


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if type(v) is bool:
        return "boolean"
    if type(v) in (int, float):
        return "number"
    if type(v) is str:
        return "string"
    if type(v) is JSArray:
        return "array"
    if type(v) is JSObject:
        return "object"
    return "function"


def _type(text: str) -> A.TypeExpr:
    tree = parse(f"type __HoleType = {text}", "<hole type>")
    item = tree.items[0]
    assert type(item) is A.TypeAlias
    return item.type


_PRIMITIVES = {"string": str, "boolean": bool}


def _type_problem(v: Any, t: A.TypeExpr, aliases: dict[str, A.TypeExpr], depth: int) -> str | None:
    """Why `v` is not of type `t` (None when it is); names the first missing property."""
    if depth > 50:
        return None
    tt = type(t)
    if tt is A.TName:
        name = t.name  # type: ignore[union-attr]
        if name in aliases:
            return _type_problem(v, aliases[name], aliases, depth + 1)
        if name == "number":
            return None if type(v) in (int, float) else ""
        if name in _PRIMITIVES:
            return None if type(v) is _PRIMITIVES[name] else ""
        if name in ("null", "undefined", "void"):
            return None if v is None else ""
        return None
    if tt is A.TLiteral:
        return None if v == t.value else ""  # type: ignore[union-attr]
    if tt is A.TArray:
        if type(v) is not JSArray:
            return ""
        for i, x in enumerate(v):
            p = _type_problem(x, t.element, aliases, depth + 1)  # type: ignore[union-attr]
            if p is not None:
                return f": item {i} is not `{_kind(x)}`-compatible{p}"
        return None
    if tt is A.TObject:
        if type(v) is not JSObject:
            return ""
        for f in t.fields:  # type: ignore[union-attr]
            if f.name not in v:
                if f.optional:
                    continue
                return f": the property `{f.name}` is missing"
            p = _type_problem(v[f.name], f.type, aliases, depth + 1)
            if p is not None:
                return f": the property `{f.name}` is a {_kind(v[f.name])}{p}"
        return None
    if tt is A.TUnion:
        options = t.options  # type: ignore[union-attr]
        if any(_type_problem(v, o, aliases, depth + 1) is None for o in options):
            return None
        return ""
    return None
