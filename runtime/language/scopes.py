"""Provides scope analysis over the AST: which names a function body declares (Agency variables
are function-scoped), which it declares `const`, and which names a pattern binds."""

from __future__ import annotations

from typing import Any

from runtime.language.syntax import ast as A


def declared_names(
    body: A.Block | A.Stmt | A.Expr | None,
    out: set[str],
    assigned: set[str] | None = None,
    loop_vars: set[str] | None = None,
) -> None:
    """Collect every name a function body declares (function-scoped, JS `var`-like).

    Names only assigned (`x = e`, `x++`) go to `assigned` when given: they are locals only
    if no module variable of that name exists. The variables of `for (x, i in xs)` go to
    `loop_vars` when given (a loop's own variables: see `FunctionCompiler.for_stmt`)."""
    if body is None:
        return
    if assigned is None:
        assigned = out
    if loop_vars is None:
        loop_vars = out
    stack: list[Any] = [body]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is A.Block:
            stack.extend(n.body)
        elif t is A.VarDecl:
            pattern_names(n.target, out)
            stack.append(n.value)
        elif t is A.Assign:
            if type(n.target) is A.Name:
                assigned.add(n.target.id)
            stack.append(n.value)
        elif t is A.If:
            stack.extend([n.cond, n.then, n.orelse])
        elif t is A.While:
            stack.extend([n.cond, n.body])
        elif t is A.ForIn:
            if n.pattern is not None:
                pattern_names(n.pattern, out)
            elif n.var:
                loop_vars.add(n.var)
            if n.second:
                loop_vars.add(n.second)
            stack.extend([n.iterable, n.body])
        elif t is A.ThreadBlock:
            stack.append(n.body)
        elif t is A.HandleBlock:
            stack.append(n.body)
        elif t is A.WithAction:
            stack.append(n.stmt)
        elif t is A.ExprStmt:
            stack.append(n.expr)
        elif t is A.Return:
            stack.append(n.value)
        elif t is A.Match:
            stack.append(n.subject)
            for arm in n.arms:
                pattern_names(arm.pattern, out)
                stack.append(arm.body)
                stack.append(arm.guard)
        elif t is A.Is:
            pattern_names(n.pattern, out)
            stack.append(n.value)
        elif t is A.ArrayLit:
            stack.extend(n.items)
        elif t is A.ObjectLit:
            stack.extend(getattr(e, "value", None) for e in n.entries)
        elif t in (A.Member, A.Index):
            stack.append(n.obj)
        elif t is A.Template:
            stack.extend(x for x in n.parts if not isinstance(x, str))
        elif t is A.Spread:
            stack.append(n.value)
        elif t is A.ListComp:  # its variable is its own (see `list_comp`)
            stack.extend([n.element, n.iterable, n.cond])
        elif t in (A.Binary, A.Logical):
            stack.extend([n.left, n.right])
        elif t is A.Call:
            stack.append(n.callee)
            stack.extend(a.value for a in n.args)
        elif t is A.Conditional:
            stack.extend([n.cond, n.then, n.orelse])
        elif t in (A.Catch,):
            stack.extend([n.value, n.default])
        elif t in (A.Try, A.Unary):
            stack.append(getattr(n, "value", None) or getattr(n, "operand", None))
        elif t is A.Pipe:
            stack.extend([n.left, n.right])
        elif t is A.Update:
            if type(n.target) is A.Name:
                assigned.add(n.target.id)
        elif t is A.AssignExpr:
            stack.append(n.assign)
        elif t is A.OptionalCall:
            stack.append(n.callee)
            stack.extend(a.value for a in n.args)


def constants(body: Any) -> set[str]:
    """Names a body declares with `const` (and never with `let`): assigning them is an error."""
    consts: set[str] = set()
    others: set[str] = set()
    stack: list[Any] = [body]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is A.Block:
            stack.extend(n.body)
        elif t is A.VarDecl:
            names: set[str] = set()
            pattern_names(n.target, names)
            (consts if n.kind == "const" else others).update(names)
        elif t is A.If:
            stack.extend([n.then, n.orelse])
        elif t in (A.While, A.ForIn, A.ThreadBlock, A.HandleBlock):
            stack.append(n.body)
        elif t is A.WithAction:
            stack.append(n.stmt)
        elif t is A.Match:
            stack.extend(arm.body for arm in n.arms if type(arm.body) is A.Block)
        elif t is A.Program:
            stack.extend(n.items)
    return consts - others


def pattern_names(p: A.Pattern, out: set[str]) -> None:
    t = type(p)
    if t is A.PBind:
        out.add(p.name)  # type: ignore[union-attr]
    elif t is A.PObject:
        for f in p.fields:  # type: ignore[union-attr]
            pattern_names(f.pattern, out)
        if p.rest:  # type: ignore[union-attr]
            out.add(p.rest)  # type: ignore[union-attr]
    elif t is A.PArray:
        for item in p.items:  # type: ignore[union-attr]
            pattern_names(item, out)
        if p.rest:  # type: ignore[union-attr]
            out.add(p.rest)  # type: ignore[union-attr]
        for item in p.tail:  # type: ignore[union-attr]
            pattern_names(item, out)
    elif t is A.PResult and p.inner is not None:  # type: ignore[union-attr]
        pattern_names(p.inner, out)  # type: ignore[union-attr]
    elif t is A.PType and p.inner is not None:  # type: ignore[union-attr]
        pattern_names(p.inner, out)  # type: ignore[union-attr]
