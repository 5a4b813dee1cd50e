"""Provides the expression half of the function compiler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.language.bytecode import (
    ARRAY_APPEND,
    BINARY,
    BREAKPOINT,
    BUILD_ARRAY,
    BUILD_ARRAY_SPREAD,
    BUILD_OBJECT,
    BUILD_OBJECT_SPREAD,
    BUILD_STRING,
    CALL,
    CALL_METHOD,
    CONST,
    DESTRUCTURE,
    GET_INDEX,
    GET_MEMBER,
    ITER_INIT,
    ITER_NEXT,
    JUMP,
    JUMP_IF_FALSE,
    JUMP_IF_FALSE_KEEP,
    JUMP_IF_NOT_NULL_KEEP,
    JUMP_IF_TRUE_KEEP,
    LOAD_LOCAL,
    MAKE_CLOSURE,
    MARK_STEP,
    PIPE_PREP,
    POP,
    SLICE,
    STORE_LOCAL,
    SWAP,
    TRAP_POP,
    TRAP_PUSH,
    UNARY,
    UNWRAP_OR_JUMP,
    UPDATE_GLOBAL,
    UPDATE_INDEX,
    UPDATE_LOCAL,
    UPDATE_MEMBER,
    UPDATE_OUTER,
    UPDATE_SHARED,
    FuncRef,
)
from runtime.language.scopes import pattern_names
from runtime.language.syntax import ast as A
from runtime.language.syntax import validation

if TYPE_CHECKING:
    pass


from runtime.language.compile_emit import CodeEmitter


class ExpressionCompiler(CodeEmitter):
    """Compiles expressions: operators, literals, calls and their arguments, blocks, comprehensions."""

    def expr(self, e: A.Expr, type_hint: A.TypeExpr | None = None) -> None:
        t = type(e)
        if isinstance(e, A.Literal):
            self.emit(CONST, e.value)
        elif isinstance(e, A.Name):
            self.load_name(e.id, e.span)
        elif isinstance(e, A.Binary):
            self.expr(e.left)
            self.expr(e.right)
            self.emit(BINARY, e.op)
        elif isinstance(e, A.Call):
            self.call(e, type_hint)
        elif isinstance(e, A.Member) or isinstance(e, A.Index):
            exits: list[int] = []
            self.chain_link(e, exits)
            for j in exits:
                self.patch(j)
        elif isinstance(e, A.Template):
            n = 0
            for part in e.parts:
                if isinstance(part, str):
                    if part:
                        self.emit(CONST, part)
                        n += 1
                else:
                    self.expr(part)
                    n += 1
            self.emit(BUILD_STRING, n)
        elif isinstance(e, A.Logical):
            self.expr(e.left)
            op = {"&&": JUMP_IF_FALSE_KEEP, "||": JUMP_IF_TRUE_KEEP, "??": JUMP_IF_NOT_NULL_KEEP}[
                e.op
            ]
            j = self.emit(op, None)
            self.emit(POP)
            self.expr(e.right)
            self.patch(j)
        elif isinstance(e, A.Unary):
            self.expr(e.operand)
            self.emit(UNARY, e.op)
        elif isinstance(e, A.ArrayLit):
            if any(type(i) is A.Spread for i in e.items):
                flags = []
                for item in e.items:
                    if type(item) is A.Spread:
                        self.expr(item.value)
                        flags.append(True)
                    else:
                        self.expr(item)  # type: ignore[arg-type]
                        flags.append(False)
                self.emit(BUILD_ARRAY_SPREAD, tuple(flags))
            else:
                for item in e.items:
                    self.expr(item)  # type: ignore[arg-type]
                self.emit(BUILD_ARRAY, len(e.items))
        elif isinstance(e, A.ObjectLit):
            self.object_lit(e)
        elif isinstance(e, A.Conditional):
            self.condition(e.cond)
            jf = self.emit(JUMP_IF_FALSE, None)
            self.expr(e.then)
            end = self.emit(JUMP, None)
            self.patch(jf)
            self.expr(e.orelse)
            self.patch(end)
        elif isinstance(e, A.Update):
            self.update(e)
        elif isinstance(e, A.Slice):
            self.expr(e.obj)
            self.expr(e.start) if e.start is not None else self.emit(CONST, None)
            self.expr(e.end) if e.end is not None else self.emit(CONST, None)
            self.emit(SLICE)
        elif isinstance(e, A.Catch):
            trap = self.emit(TRAP_PUSH, (None, False))
            self.blocks.append("trap")
            self.expr(e.value)
            self.blocks.pop()
            self.emit(TRAP_POP)
            unwrap = self.emit(UNWRAP_OR_JUMP, None)
            end = self.emit(JUMP, None)
            self.patch(trap)
            self.patch(unwrap)
            self.expr(e.default)
            self.patch(end)
        elif isinstance(e, A.Try):
            trap = self.emit(TRAP_PUSH, (None, True))
            self.blocks.append("trap")
            self.expr(e.value)
            self.blocks.pop()
            self.emit(TRAP_POP)
            # `try e` is always a Result: a plain value becomes success(value).
            self.emit(CONST, FuncRef("__as_result"))
            self.emit(SWAP)
            self.emit(CALL, 1)
            self.patch(trap)
        elif isinstance(e, A.Pipe):
            self.expr(e.left)
            skip = self.emit(PIPE_PREP, None)
            right = e.right
            if isinstance(right, A.Catch):
                right = _catching_stage(right)
            if type(right) is A.Call and not _derives_function(right):
                self.expr(right.callee)
                self.emit(SWAP)
                self.call_args(right.args, extra_positional=1)
            else:
                self.expr(right)
                self.emit(SWAP)
                self.emit(CALL, 1)
            # A pipe always yields a Result: a stage's plain value becomes success(value).
            self.emit(CONST, FuncRef("__as_result"))
            self.emit(SWAP)
            self.emit(CALL, 1)
            self.patch(skip)
        elif isinstance(e, A.ListComp):
            self.list_comp(e)
        elif isinstance(e, A.Match):
            self.match(e, "", as_stmt=False)
        elif isinstance(e, A.Is):
            self.is_expr(e)
        elif isinstance(e, A.BlockFn):
            self.emit(MAKE_CLOSURE, self.unit.compile_block(e, self))
        elif isinstance(e, A.AssignExpr):
            self.assign_expr(e)
        elif isinstance(e, A.OptionalCall):
            self.expr(e.callee)
            present = self.emit(JUMP_IF_NOT_NULL_KEEP, None)
            end = self.emit(JUMP, None)  # a null callee: the null is the value
            self.patch(present)
            self.call_args(e.args)
            self.patch(end)
        else:
            self.error(f"unsupported expression {t.__name__}", e.span)
            self.emit(CONST, None)

    def assign_expr(self, e: A.AssignExpr) -> None:
        """`(target op value)`: the assignment, then what the target holds (a member or index
        target's object and key are evaluated again for that)."""
        self.assign(e.assign)
        self.expr(e.assign.target)

    def object_lit(self, e: A.ObjectLit) -> None:
        simple = all(type(x) is A.ObjectEntry and isinstance(x.key, str) for x in e.entries)
        if simple:
            keys = []
            for entry in e.entries:
                self.expr(entry.value)
                keys.append(entry.key)  # type: ignore[union-attr]
            self.emit(BUILD_OBJECT, tuple(keys))
            return
        spec = []
        for entry in e.entries:
            if isinstance(entry, A.Spread):
                self.expr(entry.value)
                spec.append("spread")
            elif isinstance(entry.key, str):
                self.emit(CONST, entry.key)
                self.expr(entry.value)
                spec.append("pair")
            else:
                self.expr(entry.key)
                self.expr(entry.value)
                spec.append("pair")
        self.emit(BUILD_OBJECT_SPREAD, tuple(spec))

    def update(self, e: A.Update) -> None:
        delta = 1 if e.op == "++" else -1
        target = e.target
        if type(target) is A.Name:
            self.check_not_constant(target.id, e.span)
            name = self.renames.get(target.id, target.id)
            if name in self.locals and not self.is_module:
                self.emit(UPDATE_LOCAL, (name, delta))
            elif name in self.outer:
                self.emit(UPDATE_OUTER, (name, delta))
            elif name in self.unit.shared_names:
                self.emit(UPDATE_SHARED, (name, delta))
            else:
                self.emit(UPDATE_GLOBAL, (name, delta))
        elif type(target) is A.Member:
            self.expr(target.obj)
            self.emit(UPDATE_MEMBER, (target.name, delta))
        elif type(target) is A.Index:
            self.expr(target.obj)
            self.expr(target.index)
            self.emit(UPDATE_INDEX, delta)
        else:
            self.error(f"`{e.op}` needs a variable, property or element", e.span)
            self.emit(CONST, None)

    def call(
        self, e: A.Call, type_hint: A.TypeExpr | None = None, schema_only: bool = False
    ) -> None:
        callee = e.callee
        if type(callee) is A.Name and callee.id not in self.locals:
            name = callee.id
            if name.startswith("__step_"):
                self.emit(MARK_STEP, name[len("__step_") :])
                self.emit(CONST, None)
                return
            if name == "debugger" and name not in self.unit.function_names:
                label = (
                    e.args[0].value.value if e.args and type(e.args[0].value) is A.Literal else None
                )
                self.emit(BREAKPOINT, label)
                self.emit(CONST, None)
                return
        if type(callee) is A.Member:
            exits: list[int] = []
            self.chain_link(e, exits)
            for j in exits:
                self.patch(j)
            return
        self.expr(callee)
        if (
            type(type_hint) is A.TBang
            and type(callee) is A.Name
            and callee.id == "__validate"
            and len(e.args) == 2
        ):
            # `const x: T! = f(…)` (and `return f(…)` in a def returning `T!`): the value that is
            # validated is expected to be a T, so `llm` asks for T's structured output and a
            # left-out `Schema` parameter of `f` is given schema(T), as without the `!`
            value = e.args[0].value
            if type(value) is A.Call and _calls_llm(value, self.locals):
                # ... and a reply that does not match T is a failure, as T! makes any value
                # that does not validate (not the run's error it is for `const x: T = llm(…)`)
                trap = self.emit(TRAP_PUSH, (None, True))
                self.blocks.append("trap")
                self.call(value, type_hint.inner, schema_only)
                self.blocks.pop()
                self.emit(TRAP_POP)
                self.patch(trap)
            elif type(value) is A.Call:
                self.call(value, type_hint.inner, schema_only)
            else:
                self.expr(value)
            self.expr(e.args[1].value)
            self.emit(CALL, 2)
            return
        extra: list[tuple[str, Any]] = []
        if type_hint is not None and type(callee) is A.Name and callee.id not in self.locals:
            injected = self.schema_arguments(callee.id, e.args, type_hint, e.span)
            if injected:
                self.call_args(e.args + injected, extra_named=extra, block=e.block)
                return
        if (
            type_hint is not None
            and not schema_only
            and type(callee) is A.Name
            and callee.id == "llm"
            and callee.id not in self.locals
        ):
            extra.append(("__type", self.unit.schema_for(type_hint)))
        self.call_args(e.args, extra_named=extra, block=e.block)

    def schema_arguments(
        self, name: str, args: tuple[A.Arg, ...], hint: A.TypeExpr, span: A.Span
    ) -> tuple[A.Arg, ...]:
        """The arguments a call of def `name` leaves out that are `Schema` parameters: each is
        given `schema(T)` of the type the call's value is expected to have (`const x: T = f(…)`,
        or the return type of the def it is returned from). That hint wins over the parameter's
        default, which applies only where there is no hint."""
        params = self.unit.signatures.get(name)
        if not params or any(a.spread for a in args):
            return ()
        positional = sum(1 for a in args if a.name is None)
        named = {a.name for a in args if a.name is not None}
        out: list[A.Arg] = []
        for i, p in enumerate(params):
            t = p.type
            is_schema = (type(t) is A.TName or type(t) is A.TGeneric) and t.name == "Schema"
            if is_schema and not p.rest and i >= positional:
                if p.name not in named:
                    out.append(A.Arg(validation.schema_value(hint, span), p.name, False, span))
        return tuple(out)

    def chain_link(self, e: A.Expr, exits: list[int]) -> None:
        """`e`, a link of a chain of members, indexes and method calls (`o?.a.b(c)[0]`) or its
        head. A `?.` on null jumps to the end of the whole chain (`exits`) with null, as in
        JavaScript: `o?.a.b` is null when `o` is."""
        link: A.Member | A.Index
        if type(e) is A.Call and type(e.callee) is A.Member:
            link = e.callee
        elif type(e) is A.Member or type(e) is A.Index:
            link = e
        else:
            self.expr(e)
            return
        self.chain_link(link.obj, exits)
        if link.optional:
            present = self.emit(JUMP_IF_NOT_NULL_KEEP, None)
            exits.append(self.emit(JUMP, None))
            self.patch(present)
        if type(e) is A.Call:
            spec = self.arg_spec(e.args)
            if e.block is not None:
                spec = self.with_block(spec, e.block)
            self.emit(CALL_METHOD, (link.name, spec))  # type: ignore[union-attr]
        elif type(link) is A.Index:
            self.expr(link.index)
            self.emit(GET_INDEX)
        else:
            self.emit(GET_MEMBER, link.name)  # type: ignore[union-attr]

    def arg_spec(self, args: tuple[A.Arg, ...], extra_positional: int = 0) -> Any:
        if all(a.name is None and not a.spread for a in args):
            for a in args:
                self.expr(a.value)
            return len(args) + extra_positional
        kinds: list[str | None] = [None] * extra_positional
        for a in args:
            self.expr(a.value)
            kinds.append("..." if a.spread else a.name)
        return tuple(kinds)

    def call_args(
        self,
        args: tuple[A.Arg, ...],
        extra_positional: int = 0,
        extra_named: list[tuple[str, Any]] | None = None,
        block: A.BlockFn | None = None,
    ) -> None:
        spec = self.arg_spec(args, extra_positional)
        if extra_named:
            kinds = list(spec) if isinstance(spec, tuple) else [None] * spec
            for name, value in extra_named:
                self.emit(CONST, value)
                kinds.append(name)
            spec = tuple(kinds)
        if block is not None:
            spec = self.with_block(spec, block)
        self.emit(CALL, spec)

    def with_block(self, spec: Any, block: A.BlockFn) -> tuple[str | None, ...]:
        """A trailing block goes last, as the argument kind `&`: the machine binds it to the
        callee's last parameter (by name, so omitted optional parameters keep their defaults)."""
        self.emit(MAKE_CLOSURE, self.unit.compile_block(block, self))
        kinds = list(spec) if isinstance(spec, tuple) else [None] * spec
        kinds.append("&")
        return tuple(kinds)

    def list_comp(self, e: A.ListComp) -> None:
        """`[f(x) for x in xs if c]`; `x` is the comprehension's own (a hidden local), so it
        neither changes nor declares a variable `x` of the function. So are `i` in
        `for x, i in xs` and the names of a pattern binder (`for {name} in people`)."""
        binders: set[str] = set()
        if e.pattern is not None:
            pattern_names(e.pattern, binders)
        else:
            binders.add(e.var)
        if e.second is not None:
            binders.add(e.second)
        saved = {name: self.renames.get(name) for name in binders}
        for name in sorted(binders):
            hidden = self.new_hidden(f"lc_{name}_")
            self.locals.add(hidden)
            self.renames[name] = hidden
        var = self.renames[e.var] if e.pattern is None else self.new_hidden("lc_item")
        self.locals.add(var)
        second = self.renames[e.second] if e.second is not None else None
        out = self.new_hidden("lc")
        self.emit(BUILD_ARRAY, 0)
        self.emit(STORE_LOCAL, out)
        slot = self.new_hidden("it")
        self.expr(e.iterable)
        self.emit(ITER_INIT, slot)
        top = self.here()
        nxt = self.emit(ITER_NEXT, (None, slot, var, second))
        if e.pattern is not None:
            order: set[str] = set()
            pattern_names(e.pattern, order)
            names = sorted(order)
            self.emit(LOAD_LOCAL, var)
            self.emit(DESTRUCTURE, (e.pattern, tuple(names)))
            for name in reversed(names):
                self.emit(STORE_LOCAL, self.renames[name])
        if e.cond is not None:
            self.expr(e.cond)
            self.emit(JUMP_IF_FALSE, top)
        self.emit(LOAD_LOCAL, out)
        self.expr(e.element)
        self.emit(ARRAY_APPEND)
        self.emit(JUMP, top)
        self.patch(nxt)
        self.emit(LOAD_LOCAL, out)
        self.locals.add(out)
        for name, outer in saved.items():
            if outer is None:
                del self.renames[name]
            else:
                self.renames[name] = outer

    def condition(self, cond: A.Expr, statement: bool = False) -> None:
        """The condition of an `if`, a `while` or an `if … then … else`: a whole `x is P`
        there may bind P's names. An `if`/`while` (`statement`) condition that is certainly a
        Result (a call of `success`/`failure`, or of a def declared to return a Result) is an
        error, as the reference's type checker makes it (AG2002): an object is always true."""
        if statement and type(cond) is A.Call and type(cond.callee) is A.Name:
            name = cond.callee.id
            result_call = name in ("success", "failure") and name not in self.unit.function_names
            if (
                name not in self.locals
                and (result_call or name in self.unit.result_defs)
                and not self.unit.type_check_silenced(self.code.file, cond.span.line, "AG2002")
            ):
                self.error(
                    f"Type 'Result' is not assignable to type 'boolean' (condition): `{name}(…)` "
                    "gives a Result, which is always true here; test it with "
                    f"`isSuccess({name}(…))` or `{name}(…) is success(v)`",
                    cond.span,
                )
        if type(cond) is A.Is:
            self.is_expr(cond, binds=True)
        else:
            self.expr(cond)

    def is_expr(self, e: A.Is, binds: bool = False) -> None:
        """`x is P`: true or false; on a match the pattern's names are assigned (so
        `if (r is success(v)) { … v … }` and `while (…)` see them). Only the whole condition
        of an `if`, a `while` or an `if … then … else` (`binds`) may bind names, as in the
        reference: anywhere else (`const ok = x is {a}`, `!(x is [h, ...t])`,
        `c && x is success(v)`) a binder has no scope to bind into and is an error."""
        if not binds:
            names: set[str] = set()
            pattern_names(e.pattern, names)
            if names:
                shown = ", ".join(f"`{n}`" for n in sorted(names))
                self.error(
                    f"the pattern binds {shown}, but an `is` here is only a true/false test "
                    "with nowhere to bind: names are bound only by an `is` that is the whole "
                    "`if`/`while` condition or by a match arm; match the field with `_` "
                    "(`{policy: _}`) or leave it out",
                    e.span,
                )
        self.expr(e.value)
        mismatch = self.match_pattern(e.pattern, e.span)
        self.emit(CONST, True)
        end = self.emit(JUMP, None)
        self.patch(mismatch)
        self.emit(CONST, False)
        self.patch(end)


def _derives_function(call: A.Call) -> bool:
    """`f.partial(a: 1)` (or .describe/.rename/.preapprove) makes a function value: as a pipe
    stage it is called with the piped value, not given it as an extra argument."""
    callee = call.callee
    return type(callee) is A.Member and callee.name in (
        "partial",
        "describe",
        "rename",
        "preapprove",
    )


def _catching_stage(stage: A.Catch) -> A.BlockFn:
    """`a |> f catch d`: the catch belongs to the stage, `\\v -> f(v) catch d`, so a failing
    stage gives `d` and the pipe goes on with it (the pipe's value is `success(d)`)."""
    span = stage.span
    value = A.Name("pipe#value", span)
    call = A.Call(stage.value, (A.Arg(value, None, False, span),), span)
    body = A.Block((A.Return(A.Catch(call, stage.default, span), span),), span)
    return A.BlockFn((A.Param("pipe#value", None, None, False, span),), body, True, span)


def _calls_llm(e: A.Call, local_names: Any) -> bool:
    """Whether `e` calls the builtin `llm` (not a local of that name)."""
    return type(e.callee) is A.Name and e.callee.id == "llm" and e.callee.id not in local_names
