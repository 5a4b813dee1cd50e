"""Provides `typed_names`: which variables of a program were declared with a type.

An edit may give an untyped variable a value of any type (null included), as the program itself
could; a variable declared `let x: number` keeps its type. The runtime's frames do not say which
is which, so this reads the declarations from the source.
"""

from __future__ import annotations

from typing import Any

__all__ = ["typed_names"]


def typed_names(source: str, path: str = "<input>") -> dict[tuple[str, str], bool] | None:
    """`(scope, name) -> declared with a type?` for every parameter and `let`/`const` of `source`
    (scope "" for the module's). None when the source does not parse."""
    from runtime.errors import AgencyError
    from runtime.language.syntax import ast as A
    from runtime.language.syntax import parse
    from runtime.language.syntax.nodes import Node

    try:
        program = parse(source, path)
    except (AgencyError, RecursionError):
        return None
    out: dict[tuple[str, str], bool] = {}

    def note(scope: str, name: str, annotation: Any) -> None:
        typed = annotation is not None and not (
            type(annotation) is A.TName and annotation.name == "any"
        )
        out[(scope, name)] = out.get((scope, name), False) or typed

    def walk(node: Any, scope: str) -> None:
        if type(node) is A.FuncDecl:
            for param in node.params:
                note(node.name, param.name, param.type)
            walk(node.body, node.name)
            return
        if type(node) is A.VarDecl and type(node.target) is A.PBind:
            note(scope, node.target.name, node.type)
        if isinstance(node, tuple | list):
            for item in node:
                walk(item, scope)
        elif isinstance(node, Node):
            for f in node._fields:
                if f != "span":
                    walk(getattr(node, f), scope)

    walk(program.items, "")
    return out
