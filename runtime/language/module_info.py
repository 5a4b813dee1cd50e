"""Provides what a module's source says about itself, read without running it: the effects each
exported node or def may raise (`exported_effects`) and its exports as data (`describe`), for
`std::agency`'s `getEffects` and `describe`.

An effect is found where it is raised: `interrupt ns::name(…)` and `interrupt(message,
{effect: "ns::name"})` name theirs; a bare `interrupt(…)` is "unknown"; the file builtins
`write` and `read` raise `std::write` and `std::read`. A call to a def of the module, or of a
module it imports, adds that def's effects (transitively). A function received as a value and
called is not followed: an empty list means nothing was found, not that nothing can happen.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from runtime.language.identity import ByIdentity
from runtime.language.program import gather_imports
from runtime.language.syntax import ast as A
from runtime.language.syntax.nodes import Node
from runtime.language.syntax.parser import parse

BUILTIN_EFFECTS = {"write": "std::write", "read": "std::read"}
_EXPORT = re.compile(r"\s*export\b")
_SUMMARY = re.compile(r"@summary\s+(.+)")


def _children(node: Any) -> Iterator[Any]:
    if not isinstance(node, Node):
        return
    for name in node._fields:
        if name == "span":
            continue
        value = getattr(node, name)
        if isinstance(value, tuple):
            yield from value
        else:
            yield value


def _calls(body: Any) -> Iterator[A.Call]:
    todo = [body]
    while todo:
        node = todo.pop()
        if type(node) is A.Call:
            yield node
        todo.extend(_children(node))


def _raised(call: A.Call) -> str | None:
    """The effect a call raises itself (None: it raises none)."""
    if type(call.callee) is not A.Name:
        return None
    name = call.callee.id
    if name in BUILTIN_EFFECTS:
        return BUILTIN_EFFECTS[name]
    # The prelude's own interrupts: guard budgets (effect third), the file functions' question
    # (readBinary, writeBinary, …: effect fourth).
    at = {"__interrupt_open": 2, "__file_gate": 3}.get(name)
    if at is not None:
        given = [a.value for a in call.args if a.name is None][at : at + 1]
        if given and type(given[0]) is A.Literal and type(given[0].value) is str:
            return given[0].value
        return None
    if name != "interrupt":
        return None
    positional = [a.value for a in call.args if a.name is None and not a.spread]
    if len(positional) > 2 and type(positional[2]) is A.Literal:
        return str(positional[2].value)
    if len(positional) > 1 and type(positional[1]) is A.ObjectLit:
        for entry in positional[1].entries:
            key = getattr(entry, "key", None)
            value = getattr(entry, "value", None)
            if key == "effect" and type(value) is A.Literal and type(value.value) is str:
                return value.value
    return "unknown"


# The calls in each function of a `base` (the prelude, whose parsed tree is made once and kept),
# by the base's identity: each type check follows them for every function again, and walking the
# prelude's bodies was 23 ms of every check. Each entry is the decl beside its calls, so a name
# the module defines again is walked afresh.
_BASE_CALLS: ByIdentity[object, dict[str, tuple[A.FuncDecl, list[A.Call]]]] = ByIdentity(4)


def _shared_calls(base: Iterable[Any]) -> dict[str, tuple[A.FuncDecl, list[A.Call]]]:
    if not isinstance(base, (list, tuple)):
        return {}
    return _BASE_CALLS.get(base, lambda _: {})


class _Effects:
    """Effects of the functions of one module and the modules it imports."""

    def __init__(self, tree: A.Program, source: str, base: Iterable[Any] = ()) -> None:
        self.funcs: dict[str, A.FuncDecl] = {i.name: i for i in base if type(i) is A.FuncDecl}
        self.base_funcs = dict(self.funcs)
        self.base_calls = _shared_calls(base)
        for sub, _text in gather_imports(tree, source):
            for item in sub.items:
                if type(item) is A.FuncDecl:
                    self.funcs[item.name] = item
        for item in tree.items:
            if type(item) is A.FuncDecl:
                self.funcs[item.name] = item  # the module's own definition wins
        self.memo: dict[str, list[str]] = {}
        # Each function's calls, walked out of its body once: `of` follows a callee again for
        # every caller (its answer depends on the callers in between), and walking the syntax
        # tree each time was nearly all of a type check's time.
        self.calls: dict[str, list[A.Call]] = {}

    def of(self, name: str, busy: frozenset[str] = frozenset()) -> list[str]:
        if name in self.memo:
            return self.memo[name]
        calls = self.calls.get(name)
        if calls is None:
            decl = self.funcs[name]
            shared = self.base_calls.get(name)
            if shared is not None and shared[0] is decl:
                calls = shared[1]
            else:
                calls = list(_calls(decl.body))
                if self.base_funcs.get(name) is decl:
                    self.base_calls[name] = (decl, calls)
            self.calls[name] = calls
        found: list[str] = []
        for call in calls:
            effects: list[str] = []
            own = _raised(call)
            if own is not None:
                effects = [own]
            elif type(call.callee) is A.Name and call.callee.id in self.funcs:
                callee = call.callee.id
                if callee not in busy and callee != name:
                    effects = self.of(callee, busy | {name})
            for e in effects:
                if e not in found:
                    found.append(e)
        if not busy:
            self.memo[name] = found
        return found


def _exported(source: str, item: Any) -> bool:
    lines = source.splitlines()
    line = item.span.line - 1 if item.span.line else -1
    return 0 <= line < len(lines) and _EXPORT.match(lines[line]) is not None


def exported_effects(source: str) -> dict[str, list[str]]:
    """Each exported node and def, in source order, with the effects it may raise."""
    tree = parse(source, "<source>")
    effects = _Effects(tree, source)
    return {
        item.name: effects.of(item.name)
        for item in tree.items
        if type(item) is A.FuncDecl and _exported(source, item)
    }


def function_effects(
    tree: A.Program, source: str, base: Iterable[Any] = ()
) -> dict[str, list[str]]:
    """Every function the module can call by name (its own, its imports' and `base`'s, e.g. the
    prelude's, and the file builtins) with the effects it may raise."""
    effects = _Effects(tree, source, base)
    found = {name: effects.of(name) for name in effects.funcs}
    return {name: [e] for name, e in BUILTIN_EFFECTS.items()} | found


def _signature(source: str, item: Any) -> str:
    line = source.splitlines()[item.span.line - 1].strip()
    line = re.sub(r"^export\s+", "", line)
    return line.rstrip("{").strip()


def describe(source: str) -> dict[str, Any]:
    """The module's one-line summary and its exports (underscore names left out): name, kind,
    signature, docstring, effects, destructive, idempotent."""
    tree = parse(source, "<source>")
    effects = _Effects(tree, source)
    summary = _SUMMARY.search(source)
    exports: list[dict[str, Any]] = []
    for item in tree.items:
        entry = _export_entry(source, item, effects)
        if entry is not None:
            exports.append(entry)
    return {"description": summary.group(1).strip() if summary else None, "exports": exports}


def _export_entry(source: str, item: Any, effects: _Effects) -> dict[str, Any] | None:
    """What `describe` says about a top-level item, or None when it is no export of note."""
    if type(item) is A.FuncDecl:
        name, kind, doc, modifiers = item.name, item.kind, item.doc, item.modifiers
    elif type(item) is A.TypeAlias:
        name, kind, doc, modifiers = item.name, "type", None, ()
    elif type(item) is A.VarDecl and type(item.target) is A.PBind:
        name, kind, doc, modifiers = item.target.name, "const", None, ()
    else:
        return None
    if name.startswith("_") or not _exported(source, item):
        return None
    return {
        "name": name,
        "kind": kind,
        "signature": _signature(source, item),
        "docstring": doc,
        "effects": effects.of(name) if type(item) is A.FuncDecl else [],
        "destructive": "destructive" in modifiers,
        "idempotent": "idempotent" in modifiers,
        "reexportedFrom": None,
    }
