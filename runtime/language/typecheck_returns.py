"""Provides the type checker's definite-return rule (AG2012): a def or node that declares a
return type must not be able to reach the end of its body, where it would return `null`.

A statement ends every path through it when it is a `return` or a `goto`; a block when one of
its statements does; an `if` when it has an `else` and both branches do; a `while (true)` with
no `break` of its own; a `match` with a catch-all arm (`_` or a bare name, unguarded) whose arm
bodies all do; `handle`, `thread`/`subthread` and a `… with` answer when their body does.
Loops over collections may run zero times, so they never count.
"""

from __future__ import annotations

from typing import Any

from runtime.language.syntax import ast as A
from runtime.language.typecheck_types import NULL, Any_, Type, assignable


def needs_return(declared: Type) -> bool:
    """Whether falling off the end (returning null) breaks the declared return type."""
    return type(declared) is not Any_ and not assignable(NULL, declared)


def always_returns(stmt: Any) -> bool:
    kind = type(stmt)
    if kind in (A.Return, A.Goto):
        return True
    if kind is A.Block:
        return any(always_returns(s) for s in stmt.body)
    if kind is A.If:
        return stmt.orelse is not None and always_returns(stmt.then) and always_returns(stmt.orelse)
    if kind is A.While:
        forever = type(stmt.cond) is A.Literal and stmt.cond.value is True
        return forever and not _breaks(stmt.body)
    if kind in (A.HandleBlock, A.ThreadBlock):
        return always_returns(stmt.body)
    if kind is A.WithAction:
        return always_returns(stmt.stmt)
    if kind is A.ExprStmt and type(stmt.expr) is A.Match:
        return _match_returns(stmt.expr)
    if kind is A.Match:
        return _match_returns(stmt)
    return False


def _match_returns(m: A.Match) -> bool:
    catch_all = any(
        arm.guard is None and type(arm.pattern) in (A.PWildcard, A.PBind) for arm in m.arms
    )
    return catch_all and all(
        type(arm.body) is A.Block and always_returns(arm.body) for arm in m.arms
    )


def _breaks(block: A.Block) -> bool:
    """Whether a `break` in `block` leaves this loop (not one of a loop nested in it)."""
    todo: list[Any] = list(block.body)
    while todo:
        s = todo.pop()
        kind = type(s)
        if kind is A.Break:
            return True
        if kind in (A.While, A.ForIn):
            continue
        if kind is A.If:
            todo.append(s.then)
            if s.orelse is not None:
                todo.append(s.orelse)
        elif kind is A.Block:
            todo.extend(s.body)
        elif kind in (A.ExprStmt, A.Match) and type(getattr(s, "expr", s)) is A.Match:
            todo.extend(a.body for a in getattr(s, "expr", s).arms if type(a.body) is A.Block)
        elif kind in (A.HandleBlock, A.ThreadBlock):
            todo.append(s.body)
        elif kind is A.WithAction:
            todo.append(s.stmt)
    return False
