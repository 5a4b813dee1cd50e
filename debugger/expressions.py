"""Provides Agency expressions evaluated over a recorded step: what `:print`, `:trace`, watches,
watchpoints and conditional breakpoints read.

Nothing runs: an expression is parsed with the language's own parser and evaluated here over the
plain values a `StateView` holds (the frame's arguments and locals, then the globals). What it may
use is what reading needs: literals, names, members (`a.b`, `a?.b`, `xs.length`), indexes and
slices, arithmetic, comparison and logic, `? :`, template strings, array and object literals,
and a few methods that only read (`includes`, `indexOf`, `slice`, `join`,
`keys`, `toUpperCase`, ...). Calls to the program's own functions are refused: they would run code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from debugger.errors import SessionError
from runtime.errors import AgencySyntaxError
from runtime.language.syntax import ast as A
from runtime.language.syntax import parse_expression
from runtime.language.syntax.nodes import Node

__all__ = ["Expression", "NotInScope", "compile_expression", "scope_of", "show"]


class NotInScope(SessionError):
    """A name the expression reads is not visible at this step (not an error of the expression:
    a watch shows it as out of scope, a watchpoint skips the step)."""


@dataclass(frozen=True)
class Expression:
    """A parsed expression and the names it reads (for watchpoints: only a step that writes one
    of them can change its value)."""

    text: str
    tree: Any
    names: frozenset[str]
    # The tree as nested closures, when it holds only the commonest nodes (a breakpoint's
    # condition is read at every arrival at its line: walking the tree cost most of a read).
    fast: Callable[[Mapping[str, Any]], Any] | None = field(default=None, compare=False)

    def evaluate(self, scope: Mapping[str, Any]) -> Any:
        if self.fast is not None:
            return self.fast(scope)
        return _Evaluator(scope).eval(self.tree)

    def resolves(self, frame: Any, globals_: Mapping[str, Any]) -> bool:
        """Whether every name it reads is visible in `frame` (a FrameView) or the globals."""
        return all(
            n in frame.args or n in frame.locals or n in globals_ or n in _KNOWN for n in self.names
        )


def compile_expression(text: str) -> Expression:
    """Parse `text` as an Agency expression; a SessionError (with the parser's words) if it is
    not one."""
    text = text.strip()
    if not text:
        raise SessionError("no expression given: for example  total  or  items.length > 3")
    try:
        tree = parse_expression(text)
    except AgencySyntaxError as exc:
        raise SessionError(
            f"not an expression: {exc.diagnostics[0].message if exc.diagnostics else exc}"
        ) from None
    except RecursionError:
        raise SessionError("not an expression: nested too deeply") from None
    names: set[str] = set()
    _collect_names(tree, names)
    return Expression(text, tree, frozenset(names), _closure(tree))


Reader = Callable[[Mapping[str, Any]], Any]


def _closure(e: Any) -> Reader | None:  # noqa: C901 - one dispatch on the node type
    """`e` as a function of the scope that does what `_Evaluator.eval` does, for literals,
    names, operators and members (None when `e` holds anything else: it is then walked)."""
    match e:
        case A.Literal(value=value):
            return lambda scope: value
        case A.Name(id=name):

            def read(scope: Mapping[str, Any]) -> Any:
                if name in scope:
                    return scope[name]
                if name == "undefined":
                    return None
                raise NotInScope(f"`{name}` is not in scope here")

            return read
        case A.Binary(op=op, left=left, right=right):
            fn, ba, bb = _BINARY.get(op), _closure(left), _closure(right)
            if fn is None or ba is None or bb is None:
                return None
            return lambda scope: fn(ba(scope), bb(scope))
        case A.Logical(op=op, left=left, right=right):
            la, lb = _closure(left), _closure(right)
            if la is None or lb is None:
                return None
            if op == "&&":
                return lambda scope: lb(scope) if _truthy(v := la(scope)) else v
            if op == "||":
                return lambda scope: v if _truthy(v := la(scope)) else lb(scope)
            return lambda scope: lb(scope) if (v := la(scope)) is None else v
        case A.Unary(op="!", operand=operand):
            ua = _closure(operand)
            return None if ua is None else (lambda scope: not _truthy(ua(scope)))
        case A.Member(obj=obj, name=name, optional=optional):
            ma = _closure(obj)
            if ma is None:
                return None
            if optional:
                return lambda scope: None if (t := ma(scope)) is None else _member(t, name)
            return lambda scope: _member(ma(scope), name)
        case A.Index(obj=obj, index=index, optional=optional):
            ia, ib = _closure(obj), _closure(index)
            if ia is None or ib is None:
                return None
            if optional:
                return lambda scope: None if (t := ia(scope)) is None else _index(t, ib(scope))
            return lambda scope: _index(ia(scope), ib(scope))
    return None


def scope_of(state: Any, frame: int | None = None) -> dict[str, Any]:
    """The names visible at a step: the globals, then the arguments and locals of `frame` (an
    index into `state.frames`; default the innermost), which shadow them."""
    scope = dict(state.globals)
    frames = state.frames
    if frames:
        f = frames[-1 if frame is None else frame]
        scope.update(f.args)
        scope.update(f.locals)
    return scope


def show(value: Any, limit: int = 200) -> str:
    """A value as a person reads it in a one-line answer (JSON, cut at `limit` characters)."""
    if value is None:
        return "null"
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _collect_names(node: Any, out: set[str]) -> None:
    if type(node) is A.Name:
        out.add(node.id)
        return
    if not isinstance(node, Node):
        if isinstance(node, tuple):
            for item in node:
                _collect_names(item, out)
        return
    for name in node._fields:
        if name != "span":
            _collect_names(getattr(node, name), out)


def _number(v: Any, op: str) -> float | int:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise SessionError(f"`{op}` needs numbers, not {show(v, 40)}")
    return v


def _truthy(v: Any) -> bool:
    if v is None or v is False:
        return False
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v != 0 and not (isinstance(v, float) and math.isnan(v))
    if isinstance(v, str):
        return v != ""
    return True


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if v is True or v is False:
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, int | float):
        return str(v)
    return json.dumps(v, ensure_ascii=False, default=str)


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, str) or isinstance(b, str):
        return _text(a) + _text(b)
    return _number(a, "+") + _number(b, "+")


def _divide(a: Any, b: Any) -> Any:
    a, b = _number(a, "/"), _number(b, "/")
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    result = a / b
    return int(result) if result.is_integer() and abs(result) < 2**53 else result


def _modulo(a: Any, b: Any) -> Any:
    a, b = _number(a, "%"), _number(b, "%")
    return math.nan if b == 0 else math.fmod(a, b) if isinstance(a, float) else int(math.fmod(a, b))


def _compare(op: str) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        if not (isinstance(a, str) and isinstance(b, str)):
            a, b = _number(a, op), _number(b, op)
        return bool({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op])

    return compare


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": _add,
    "-": lambda a, b: _number(a, "-") - _number(b, "-"),
    "*": lambda a, b: _number(a, "*") * _number(b, "*"),
    "/": _divide,
    "%": _modulo,
    "**": lambda a, b: _number(a, "**") ** _number(b, "**"),
    "==": _equal,
    "===": _equal,
    "!=": lambda a, b: not _equal(a, b),
    "!==": lambda a, b: not _equal(a, b),
    "<": _compare("<"),
    ">": _compare(">"),
    "<=": _compare("<="),
    ">=": _compare(">="),
}


def _index(obj: Any, key: Any) -> Any:
    if isinstance(obj, list | str):
        if isinstance(key, bool) or not isinstance(key, int | float) or int(key) != key:
            if key == "length":
                return len(obj)
            return None
        i = int(key)
        return obj[i] if 0 <= i < len(obj) else None
    if isinstance(obj, dict):
        return obj.get(_text(key))
    if obj is None:
        raise SessionError(f"cannot read [{show(key, 40)}] of null")
    return None


def _member(obj: Any, name: str) -> Any:
    if name == "length" and isinstance(obj, list | str):
        return len(obj)
    if isinstance(obj, dict):
        return obj.get(name)
    if obj is None:
        raise SessionError(f"cannot read .{name} of null")
    return None


# Methods that only read: name -> function of the receiver and the arguments.
_METHODS: dict[str, Callable[..., Any]] = {
    "includes": lambda r, x: x in r if isinstance(r, list | str) else False,
    "indexOf": lambda r, x: r.index(x) if x in r else -1,
    "slice": lambda r, a=0, b=None: r[int(a) : None if b is None else int(b)],
    "join": lambda r, sep=",": _text(sep).join(_text(v) for v in r),
    "toUpperCase": lambda r: r.upper(),
    "toLowerCase": lambda r: r.lower(),
    "trim": lambda r: r.strip(),
    "startsWith": lambda r, x: r.startswith(x),
    "endsWith": lambda r, x: r.endswith(x),
    "split": lambda r, sep: r.split(sep) if sep else list(r),
    "toString": _text,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "keys": lambda o: list(o),
    "values": lambda o: list(o.values()),
    "len": len,
    "JSON.stringify": lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")),
}


_KNOWN = frozenset({"undefined", "JSON"} | {name.split(".")[0] for name in _FUNCTIONS})


class _Evaluator:
    def __init__(self, scope: Mapping[str, Any]) -> None:
        self.scope = scope

    def eval(self, e: Any) -> Any:  # noqa: C901 - one dispatch on the node type
        # The commonest nodes of a condition come first: a breakpoint's condition is read at
        # every arrival at its line, up to hundreds of thousands of times in one `c`.
        match e:
            case A.Literal(value=value):
                return value
            case A.Name(id=name):
                if name in self.scope:
                    return self.scope[name]
                if name == "undefined":
                    return None
                raise NotInScope(f"`{name}` is not in scope here")
            case A.Binary(op=op, left=left, right=right):
                fn = _BINARY.get(op)
                if fn is None:
                    raise SessionError(f"`{op}` is not supported when reading a step")
                return fn(self.eval(left), self.eval(right))
            case A.Template(parts=parts):
                return "".join(p if isinstance(p, str) else _text(self.eval(p)) for p in parts)
            case A.ArrayLit(items=items):
                out: list[Any] = []
                for item in items:
                    if type(item) is A.Spread:
                        out.extend(self.eval(item.value) or [])
                    else:
                        out.append(self.eval(item))
                return out
            case A.ObjectLit(entries=entries):
                built: dict[str, Any] = {}
                for entry in entries:
                    if isinstance(entry, A.Spread):
                        built.update(self.eval(entry.value) or {})
                    else:
                        key = entry.key if isinstance(entry.key, str) else self.eval(entry.key)
                        built[_text(key)] = self.eval(entry.value)
                return built
            case A.Unary(op=op, operand=operand):
                v = self.eval(operand)
                if op == "!":
                    return not _truthy(v)
                if op == "-":
                    return -_number(v, "-")
                if op == "+":
                    return _number(v, "+")
                raise SessionError(f"`{op}` cannot be used in an expression read at a step")
            case A.Logical(op=op, left=left, right=right):
                v = self.eval(left)
                if op == "&&":
                    return self.eval(right) if _truthy(v) else v
                if op == "||":
                    return v if _truthy(v) else self.eval(right)
                return self.eval(right) if v is None else v  # ??
            case A.Conditional(cond=cond, then=then, orelse=orelse):
                return self.eval(then) if _truthy(self.eval(cond)) else self.eval(orelse)
            case A.Member(obj=obj, name=name, optional=optional):
                target = self.eval(obj)
                if target is None and optional:
                    return None
                return _member(target, name)
            case A.Index(obj=obj, index=index, optional=optional):
                target = self.eval(obj)
                if target is None and optional:
                    return None
                return _index(target, self.eval(index))
            case A.Call(callee=callee, args=args):
                return self._call(callee, [self.eval(a.value) for a in args])
        raise SessionError(
            f"`{type(e).__name__}` cannot be read at a step: only names, members, indexes, "
            "operators, literals and reading methods (includes, slice, join, keys, …)"
        )

    def _call(self, callee: Any, args: list[Any]) -> Any:
        if type(callee) is A.Member and callee.name in _METHODS:
            receiver = self.eval(callee.obj)
            return self._apply(callee.name, _METHODS[callee.name], receiver, *args)
        name = _dotted(callee)
        if name in _FUNCTIONS:
            return self._apply(name, _FUNCTIONS[name], *args)
        raise SessionError(
            f"`{name or 'this call'}(…)` would run code: only reading methods can be called "
            "here (includes, indexOf, slice, join, keys, values, JSON.stringify, …)"
        )

    @staticmethod
    def _apply(name: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except (TypeError, ValueError, AttributeError, KeyError):
            raise SessionError(
                f"`{name}` cannot take {', '.join(show(a, 30) for a in args)}"
            ) from None


def _dotted(e: Any) -> str:
    if type(e) is A.Name:
        return str(e.id)
    if type(e) is A.Member:
        head = _dotted(e.obj)
        return f"{head}.{e.name}" if head else ""
    return ""
