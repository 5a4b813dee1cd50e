"""Provides the desugaring of the concurrency forms into calls the runtime already runs.

* `fork [e for x in xs if c]` (also `forkShared`, `race`, `raceShared`) is the call
  `fork([x for x in xs if c]) as x { return e }`: the filter runs before the fan-out and each
  kept item is one branch. With an index or a destructuring binder the comprehension collects
  the binders' values per item and the block unpacks them.
* `parallel { a; b; seq { c; d } }` runs each statement (a `seq` block counts as one) as a
  branch, in order, between `__fork_branch`/`__fork_branch_end` calls on a fork state kept in
  a hidden local; the statements stay in the enclosing function, so what they declare is
  visible after the block, as the guide says.

The runtime side is `runtime/vm/builtins_fork.py` and the prelude's `fork`/`race`.
"""

from __future__ import annotations

import runtime.language.syntax.ast as ast
from runtime.language.syntax.ast import Span

# prefix word → (function called, shared)
COMPREHENSION_PREFIXES = {
    "fork": ("fork", False),
    "forkShared": ("fork", True),
    "race": ("race", False),
    "raceShared": ("race", True),
}

_ITEM = "__fc"  # the block parameter holding one item's binder values


def _pattern_names(p: ast.Pattern, out: list[str]) -> None:
    t = type(p)
    if t is ast.PBind:
        assert isinstance(p, ast.PBind)
        out.append(p.name)
    elif t is ast.PArray:
        assert isinstance(p, ast.PArray)
        for sub in (*p.items, *p.tail):
            _pattern_names(sub, out)
        if p.rest:
            out.append(p.rest)
    elif t is ast.PObject:
        assert isinstance(p, ast.PObject)
        for f in p.fields:
            _pattern_names(f.pattern, out)
        if p.rest:
            out.append(p.rest)


def fork_comprehension(word: str, comp: ast.ListComp, span: Span) -> ast.Call:
    """`fork [e for … in xs if c]` as a call of `fork`/`race` with a trailing block."""
    name, shared = COMPREHENSION_PREFIXES[word]
    names: list[str] = []
    if comp.pattern is not None:
        _pattern_names(comp.pattern, names)
    else:
        names.append(comp.var)
    if comp.second is not None:
        names.append(comp.second)
    body: tuple[ast.Stmt, ...]
    if comp.pattern is None and comp.second is None:
        items = ast.ListComp(
            ast.Name(comp.var, span), comp.var, comp.iterable, comp.cond, comp.span
        )
        params = (ast.Param(comp.var, span=span),)
        body = (ast.Return(comp.element, comp.element.span),)
    else:
        values = ast.ArrayLit(tuple(ast.Name(n, span) for n in names), span)
        items = ast.ListComp(
            values, comp.var, comp.iterable, comp.cond, comp.span, comp.second, comp.pattern
        )
        params = (ast.Param(_ITEM, span=span),)
        unpack = ast.VarDecl(
            "const",
            ast.PArray(tuple(ast.PBind(n, span) for n in names), span=span),
            None,
            ast.Name(_ITEM, span),
            span,
        )
        body = (unpack, ast.Return(comp.element, comp.element.span))
    args = [ast.Arg(items, span=comp.span)]
    if shared:
        args.append(ast.Arg(ast.Literal(True, span), "shared", span=span))
    block = ast.BlockFn(params, ast.Block(body, span), False, span)
    return ast.Call(ast.Name(name, span), tuple(args), span, block)


def parallel_block(
    arms: tuple[ast.Stmt, ...], shared: ast.Expr | None, state: str, span: Span
) -> ast.Block:
    """`parallel { … }` as statements of the enclosing function; `state` is a fresh hidden
    local name for the fork state."""

    def call(fn: str, *args: ast.Expr) -> ast.ExprStmt:
        return ast.ExprStmt(
            ast.Call(ast.Name(fn, span), tuple(ast.Arg(a, span=span) for a in args), span), span
        )

    flag = shared if shared is not None else ast.Literal(False, span)
    begin = ast.Call(
        ast.Name("__fork_begin", span),
        (ast.Arg(flag, span=span), ast.Arg(ast.Literal(False, span), span=span)),
        span,
    )
    out: list[ast.Stmt] = [ast.VarDecl("let", ast.PBind(state, span), None, begin, span)]
    ref = ast.Name(state, span)
    for arm in arms:
        out.append(call("__fork_branch", ref))
        out.append(arm)
        out.append(call("__fork_branch_end", ref))
    out.append(call("__fork_end", ref))
    return ast.Block(tuple(out), span)


THREAD_OPTIONS = frozenset({"label", "hidden", "session", "continue", "summarize"})


def thread_block(
    kind: str,
    options: tuple[ast.Arg, ...],
    body: ast.Block,
    handle: str | None,
    span: Span,
) -> ast.ThreadBlock:
    """`thread(label: …, hidden: …, session: …, continue: id, summarize: …) { … }`: the block
    opens its thread as usual, and its first statement hands the options to the runtime
    (`__thread_setup`, which may switch to a session's or an earlier thread), keeping the id in
    the hidden local `handle` when the block's messages are wanted as a value."""
    setup = ast.Call(
        ast.Name("__thread_setup", span),
        (
            ast.Arg(ast.Literal(kind, span), span=span),
            ast.Arg(
                ast.ObjectLit(
                    tuple(ast.ObjectEntry(a.name or "", a.value, span=a.span) for a in options),
                    span,
                ),
                span=span,
            ),
        ),
        span,
    )
    first: ast.Stmt
    if handle is not None:
        first = ast.VarDecl("let", ast.PBind(handle, span), None, setup, span)
    else:
        first = ast.ExprStmt(setup, span)
    stmts: list[ast.Stmt] = [first, *body.body]
    for a in options:
        if a.name == "summarize" and handle is not None:  # asked of the model as it closes
            ask = ast.Call(
                ast.Name("__summarize_if", span),
                (ast.Arg(a.value, span=span), ast.Arg(ast.Name(handle, span), span=span)),
                span,
            )
            stmts.append(ast.ExprStmt(ask, span))
    return ast.ThreadBlock(kind, ast.Block(tuple(stmts), body.span), span)


def thread_value(block: ast.ThreadBlock, handle: str, store: ast.Stmt, span: Span) -> ast.Block:
    """`const msgs = thread { … }`: run the block, then bind its messages (`store` reads the
    value as `__thread_value(handle)`)."""
    return ast.Block((block, store), span)


def thread_value_expr(handle: str, span: Span) -> ast.Expr:
    return ast.Call(
        ast.Name("__thread_value", span), (ast.Arg(ast.Name(handle, span), span=span),), span
    )
