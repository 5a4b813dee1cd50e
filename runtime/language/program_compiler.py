"""Provides the compiler of a whole program: it gathers the module's declarations (functions,
globals, `shared` and `static` variables, type aliases), checks them, and compiles every
function, handler body and the module's top level (with the imported files and the prelude)
into a `CompiledProgram`."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from runtime.errors import AgencySyntaxError, Diagnostic
from runtime.language.bytecode import (
    CALL,
    CONST,
    ENTER_NODE,
    HALT,
    JUMP_IF_BOUND,
    POP,
    RETURN,
    STORE_LOCAL,
    SWAP,
    Code,
    CompiledProgram,
    FuncRef,
    ParamInfo,
)
from runtime.language.compile_emit import CodeEmitter
from runtime.language.compiler import FunctionCompiler
from runtime.language.schemas import type_to_schema, wrap_schema
from runtime.language.scopes import constants, declared_names, pattern_names
from runtime.language.syntax import ast as A
from runtime.language.syntax.nodes import Node
from runtime.language.syntax.validation import schema_function

# `with approve` / `with reject` / `with propagate` answer every interrupt the same way.
FIXED_ANSWERS = ("approve", "reject", "propagate")


class ProgramCompiler:
    """Compiles a whole Program (plus the prelude) to a CompiledProgram."""

    def __init__(
        self,
        program: A.Program,
        source: str,
        sha256: str,
        imported: list[A.Program] | None = None,
    ) -> None:
        self.program = program
        self.imported = imported or []
        self.source = source
        self.sha256 = sha256
        self.diagnostics: list[Diagnostic] = []
        self.functions: dict[str, Code] = {}
        self.function_names: set[str] = set()
        self.global_names: set[str] = set()
        self.shared_names: set[str] = set()
        self.statics: set[str] = set()
        self.module_consts: set[str] = set()
        self.initialised: set[str] = set()
        self.types: dict[str, A.TypeExpr] = {}
        self.type_params: dict[str, tuple[str, ...]] = {}
        self.type_defaults: dict[str, tuple[A.TypeExpr | None, ...]] = {}
        # Each def's parameters, for what a call leaves out (a `Schema` parameter, injected).
        self.signatures: dict[str, tuple[A.Param, ...]] = {}
        self.result_defs: set[str] = set()
        self.handlers = 0
        self.blocks = 0

    def compile(self, prelude: A.Program | None = None) -> CompiledProgram:
        items = [
            i
            for sub in self.imported
            for i in sub.items
            if type(i) in (A.FuncDecl, A.TypeAlias, A.VarDecl) or registers_callback(i)
        ] + list(self.program.items)
        decl_file = {id(i): sub.path for sub in self.imported for i in sub.items}
        decls = [i for i in items if type(i) is A.FuncDecl]
        # Each alias's schema def; a program's own alias wins over an imported one of that name.
        aliases = {i.name: i for i in items if type(i) is A.TypeAlias}
        decls += [schema_function(i) for i in aliases.values()]
        prelude_decls = [i for i in prelude.items if type(i) is A.FuncDecl] if prelude else []
        globals_order: list[str] = []
        shared_order: list[str] = []
        for item in items:
            if type(item) is A.TypeAlias:
                self.types[item.name] = item.type
                if item.type_params:
                    self.type_params[item.name] = item.type_params
                if item.type_defaults:
                    self.type_defaults[item.name] = item.type_defaults
            elif type(item) is A.VarDecl:
                names: set[str] = set()
                pattern_names(item.target, names)
                if item.kind in ("shared", "static"):
                    self.shared_names |= names
                    shared_order.extend(sorted(names))
                    if item.kind == "static":
                        self.statics |= names
                else:
                    for n in sorted(names):
                        if n not in self.global_names:
                            globals_order.append(n)
                    self.global_names |= names
        self._check_reserved(
            self.global_names
            | self.shared_names
            | {d.name for d in decls if not _bundled(decl_file.get(id(d), ""))},
            A.Span(1, 1, 1, 1),
            self.program.path,
        )
        self.module_consts = constants(A.Program(tuple(items)))
        for d in prelude_decls:
            self.function_names.add(d.name)
        for d in decls:
            if d.name in self.function_names and d.name not in {p.name for p in prelude_decls}:
                self.diagnostics.append(
                    Diagnostic(
                        f"`{d.name}` is defined twice",
                        d.span,
                        decl_file.get(id(d), self.program.path),
                    )
                )
            self.function_names.add(d.name)
        self.signatures = {d.name: d.params for d in decls}
        # The program's own defs declared to return a Result (std modules are left out): one
        # called as an `if`/`while` condition is always true, which the reference refuses.
        self.result_defs = {
            d.name
            for d in decls
            if not _bundled(decl_file.get(id(d), ""))
            and (type(d.return_type) is A.TName or type(d.return_type) is A.TGeneric)
            and d.return_type.name == "Result"
        }
        for d in decls:
            self._check_schema_params(d, decl_file.get(id(d), self.program.path))
        self._compile_prelude(prelude, prelude_decls)
        for d in decls:
            file = decl_file.get(id(d), self.program.path)
            self.functions[d.name] = self.compile_function(d, file, kind=d.kind)
        module = Code("<module>", "module", self.program.path, [])
        fc = FunctionCompiler(self, module, set())
        for i, item in enumerate(items):
            if type(item) in (A.FuncDecl, A.TypeAlias, A.Import, A.EffectSet):
                continue
            fc.stmt(item, str(i))  # type: ignore[arg-type]
        fc.emit(ENTER_NODE)
        # the run's result goes through `__agent_end`, which runs the onAgentEnd callbacks that
        # listen and gives the result back
        fc.emit(CONST, FuncRef("__agent_end"))
        fc.emit(SWAP)
        fc.emit(CALL, 1)
        fc.emit(HALT)
        number = 0  # one numbering of every step location in the program (recorder's table)
        for code in [module, *self.functions.values()]:
            code.markers = [(number + i) << 3 for i in range(len(code.locations))]
            number += len(code.locations)
        if self.diagnostics:
            raise AgencySyntaxError(self.diagnostics, self.source)
        return CompiledProgram(
            path=self.program.path,
            source=self.source,
            sha256=self.sha256,
            functions=self.functions,
            module=module,
            globals=globals_order,
            shared=shared_order,
            statics=sorted(self.statics),
            types=self.types,
            type_params=self.type_params,
            type_defaults=self.type_defaults,
            imports=[i for i in items if type(i) is A.Import],
        )

    def _compile_prelude(self, prelude: A.Program | None, decls: list[A.FuncDecl]) -> None:
        """The prelude's functions (first, so its blocks and handlers are numbered from 1), as
        compiled for an earlier program whose names look the same from inside the prelude."""
        shared = prelude is not None and not self.functions
        kept = _PRELUDE.find(self, prelude) if shared and prelude is not None else None
        if kept is not None:
            codes, self.handlers, self.blocks = kept
            self.functions.update((name, _copy(code)) for name, code in codes.items())
            return
        errors = len(self.diagnostics)
        for d in decls:
            self.functions[d.name] = self.compile_function(d, "<prelude>", kind="prelude")
        if shared and prelude is not None and len(self.diagnostics) == errors:
            made = {name: _copy(code) for name, code in self.functions.items()}
            _PRELUDE.keep(self, prelude, (made, self.handlers, self.blocks))

    def compile_function(self, d: A.FuncDecl, file: str, kind: str) -> Code:
        params = [
            ParamInfo(p.name, p.type, p.default is not None, p.rest, p.optional) for p in d.params
        ]
        code = Code(
            d.name,
            kind,
            file,
            params,
            doc=d.doc,
            modifiers=d.modifiers,
            return_type=d.return_type,
            span=d.span,
        )
        names = {p.name for p in d.params}
        bound: set[str] = set()
        names |= self._locals_of(d.body, names, bound)
        if kind != "prelude":
            self._check_reserved(names, d.span, file)
        fc = FunctionCompiler(self, code, names, steps=kind != "prelude")
        fc.bound = bound
        fc.consts = constants(d.body)
        _body_with_defaults(fc, d.params, d.body)
        return code

    def type_check_silenced(self, file: str, line: int, code: str) -> bool:
        """Whether the program silences type-check error `code` on `line` of `file`, as the
        reference reads its comments: `// @tc-nocheck` silences the whole file, `// @tc-ignore`
        (or `// @tc-ignore AG2002, …`) on its own line the next line. Only the program's own
        file is read; other files' errors are never silenced."""
        if file != self.program.path:
            return False
        lines = self.source.splitlines()
        if any(_TC_NOCHECK.match(text) for text in lines):
            return True
        above = _TC_IGNORE.match(lines[line - 2]) if 2 <= line <= len(lines) + 1 else None
        if above is None:
            return False
        codes = re.findall(r"AG\d{4}", above.group(1))
        return not codes or code in codes

    def _check_schema_params(self, d: A.FuncDecl, file: str) -> None:
        """At most one `Schema<…>` parameter per def, as the reference: a call has one expected
        type to fill a left-out one from."""
        schemas = [
            p
            for p in d.params
            if (type(p.type) is A.TName or type(p.type) is A.TGeneric) and p.type.name == "Schema"
        ]
        if len(schemas) > 1:
            first, second = schemas[0].name, schemas[1].name
            self.diagnostics.append(
                Diagnostic(
                    f"Function '{d.name}' declares more than one Schema parameter ('{first}' and "
                    f"'{second}'). At most one Schema parameter is allowed.",
                    schemas[1].span,
                    file,
                )
            )

    def _check_reserved(self, names: set[str], span: A.Span, file: str) -> None:
        if self.program.path == "<input>":
            return  # the runtime's own snippets (test inputs) may use reserved names
        # (a name holding `#` was made by the parser's desugaring: no source can spell it)
        for name in sorted(n for n in names if n.startswith("__") and "#" not in n):
            self.diagnostics.append(
                Diagnostic(
                    f"`{name}`: names starting with `__` are reserved for the runtime", span, file
                )
            )

    def _locals_of(
        self, body: A.Block | None, declared: set[str], bound: set[str] | None = None
    ) -> set[str]:
        """The locals of a function: what it declares, what it assigns that is no module
        variable, and its loops' variables that are no module variable. `bound` gets the
        names bound other than as a loop variable (a loop of such a name shadows it)."""
        assigned: set[str] = set()
        loop_vars: set[str] = set()
        declared_names(body, declared, assigned, loop_vars)
        module = self.global_names | self.shared_names
        local_assigned = {n for n in assigned if n not in module}
        if bound is not None:
            bound |= declared | local_assigned
        return declared | local_assigned | {n for n in loop_vars if n not in module}

    def schema_for(self, t: A.TypeExpr) -> Any:
        """The JSON schema asked of the model for `const x: T = llm(…)`, as JSON-like data (the
        machine links it to an Agency object)."""
        return wrap_schema(type_to_schema(t, self.types, self.type_params, self.type_defaults))

    def compile_handler(self, h: A.Handler, owner_fc: FunctionCompiler) -> Any:
        if h.func in FIXED_ANSWERS:
            return ("action", h.func)  # `with approve`: a fixed answer, not a call
        if h.func is not None:
            return ("func", h.func)
        owner = owner_fc.code
        self.handlers += 1
        name = f"{owner.name}.handler{self.handlers}"
        # The second parameter is the index of the frame that opened the `handle` block: the
        # body reads and writes that frame's variables (it is a closure over them).
        params = [ParamInfo(h.param or "__data", None, False, False)]
        params.append(ParamInfo("__owner", None, False, False))
        code = Code(name, "handler", owner.file, params, span=h.span)
        names = {h.param} if h.param else set()
        declared = set(names)
        assigned: set[str] = set()
        declared_names(h.body, declared, assigned)
        visible = set() if owner_fc.is_module else (owner_fc.locals | owner_fc.outer)
        visible = {n for n in visible if not n.startswith("__")} - declared
        module = self.global_names | self.shared_names
        names = declared | {n for n in assigned if n not in module and n not in visible}
        names |= {"__data", "__owner"}
        fc = FunctionCompiler(self, code, names)
        fc.outer = visible
        # inside a loop that shadows a variable (`for (x in xs)`), `x` is the loop's hidden local
        fc.renames = {k: v for k, v in owner_fc.renames.items() if k not in declared}
        fc.outer |= set(fc.renames.values())
        if h.body is not None:
            fc.block(h.body, "")
        fc.emit(CONST, None)
        fc.emit(RETURN)
        self.functions[name] = code
        return ("code", name)

    def compile_block(self, b: A.BlockFn, owner_fc: CodeEmitter) -> str:
        """A block (trailing or inline) as its own Code; like a handler body, it reads and writes
        the variables of the frame that created it (LOAD_OUTER / STORE_OUTER through the
        closure's `__owner`). Its parameters and the names it declares are its own."""
        owner = owner_fc.code
        self.blocks += 1
        name = f"{owner.name}.block{self.blocks}"
        params = [
            ParamInfo(p.name, p.type, p.default is not None, p.rest, p.optional) for p in b.params
        ]
        code = Code(name, "block", owner.file, params, span=b.span)
        declared = {p.name for p in b.params}
        assigned: set[str] = set()
        declared_names(b.body, declared, assigned)
        visible = set() if owner_fc.is_module else (owner_fc.locals | owner_fc.outer)
        visible = {n for n in visible if not n.startswith("__")} - declared
        module = self.global_names | self.shared_names
        names = declared | {n for n in assigned if n not in module and n not in visible}
        fc = FunctionCompiler(self, code, names, steps=owner_fc.steps)
        fc.outer = visible
        # inside a comprehension `[… for x in xs]` or a loop that shadows a variable, `x` is
        # the creator's hidden local
        fc.renames = {k: v for k, v in owner_fc.renames.items() if k not in declared}
        fc.outer |= set(fc.renames.values())
        fc.consts = constants(b.body)
        _body_with_defaults(fc, b.params, b.body)
        self.functions[name] = code
        return name


def registers_callback(item: Any) -> bool:
    """`callback("onX") …` at the top level of an imported module: it runs with the program's
    top level, so the callback is active for the whole run (runtime/vm/builtins_callbacks.py)."""
    if type(item) is not A.ExprStmt or type(item.expr) is not A.Call:
        return False
    callee = item.expr.callee
    return type(callee) is A.Name and callee.id == "callback"


def _body_with_defaults(fc: FunctionCompiler, params: Any, body: Any) -> None:
    """A function's (or block's) code: each parameter the call left out takes its default (an
    explicit `null` is a value, and is kept), then the body, then `return null` for a body that
    falls off its end. The call binds only what it passes (`Calls.bind_args`)."""
    for p in params:
        if p.default is not None:
            skip = fc.emit(JUMP_IF_BOUND, (None, p.name))
            fc.expr(p.default)
            fc.emit(STORE_LOCAL, p.name)
            fc.patch(skip)
    fc.block(body, "")
    if fc.code.kind == "node":
        # A node that falls off its end runs the onNodeEnd callbacks that listen (one left by
        # `return` or a transition does not, as in the reference)
        fc.emit(CONST, FuncRef("__node_end"))
        fc.emit(CONST, fc.code.name)
        fc.emit(CALL, 1)
        fc.emit(POP)
    fc.emit(CONST, None)
    fc.emit(RETURN)


_STD_DIR = Path(__file__).with_name("std").resolve()


_TC_NOCHECK = re.compile(r"^\s*//\s*@tc-nocheck\b")
_TC_IGNORE = re.compile(r"^\s*//\s*@tc-ignore\b(.*)$")


def _bundled(path: str) -> bool:
    """Whether `path` is a bundled std:: module, whose private defs may use `__` names (a
    program cannot define them, so its own definitions never take their place)."""
    try:
        return Path(path).resolve().is_relative_to(_STD_DIR)
    except (OSError, ValueError):
        return False


def _copy(code: Code) -> Code:
    """`code` with lists of its own: a machine links and fuses a program's code in place. (Not
    `dataclasses.replace`, which looks the fields up at every call: 60,000 copies in a suite.)"""
    return Code(
        code.name,
        code.kind,
        code.file,
        list(code.params),
        ops=list(code.ops),
        args=list(code.args),
        locations=list(code.locations),
        step_pcs=list(code.step_pcs),
        doc=code.doc,
        modifiers=code.modifiers,
        return_type=code.return_type,
        finalize=code.finalize,
        span=code.span,
    )


def _strings(node: object, out: set[str]) -> None:
    """Every string in a syntax tree (names, keys, literals), walked without recursion."""
    stack = [node]
    while stack:
        item = stack.pop()
        if type(item) is str:
            out.add(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, Node):
            stack.extend(getattr(item, name) for name in item._fields if name != "span")


View = tuple[frozenset[str], ...]


def _view(unit: ProgramCompiler) -> View:
    """The program's declarations as compiling the prelude may look them up."""
    return (
        frozenset(unit.global_names),
        frozenset(unit.shared_names),
        frozenset(unit.function_names),
        frozenset(unit.module_consts),
        frozenset(unit.signatures),
        frozenset(unit.types),
    )


class _CompiledPrelude:
    """The prelude's functions compiled, kept for the next program: compiling them was most of
    compiling a small program (16 ms of dice.agency's 17).

    What compiling a prelude function reads of the program is how the program's declarations
    resolve the names the prelude's tree holds (a global, a shared variable, a function, a
    module constant), so the compiled code is kept under exactly that view of them: a program
    that declares no name the prelude uses (nearly all) shares one entry. A program whose own
    defs or type aliases carry a name the prelude holds (a call there would fill a left-out
    `Schema` parameter or a typed `llm()` from them) compiles the prelude afresh.

    Finding the names the prelude's tree holds takes as long as compiling it, so a process
    looks for them only when it compiles a second program (most `agency` commands compile
    one): the first program's prelude waits with that program's view until then."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # programs may be compiled on several threads at once
        self.prelude: A.Program | None = None
        self.names: frozenset[str] | None = None
        self.waiting: tuple[View, tuple[dict[str, Code], int, int]] | None = None
        self.made: dict[View, tuple[dict[str, Code], int, int]] = {}

    def find(
        self, unit: ProgramCompiler, prelude: A.Program
    ) -> tuple[dict[str, Code], int, int] | None:
        """The prelude compiled for a program that saw it as `unit` does, if one was."""
        with self.lock:
            return self._find(unit, prelude)

    def _find(
        self, unit: ProgramCompiler, prelude: A.Program
    ) -> tuple[dict[str, Code], int, int] | None:
        if prelude is not self.prelude:
            self.prelude, self.names, self.waiting, self.made = prelude, None, None, {}
            return None
        if self.names is None:
            if self.waiting is None:
                return None
            found: set[str] = set()
            _strings(prelude.items, found)
            self.names = frozenset(found)
            view, made = self.waiting
            self.waiting = None
            self.keep_as(self.key(view), made)
        key = self.key(_view(unit))
        return self.made.get(key) if key is not None else None

    def keep(
        self, unit: ProgramCompiler, prelude: A.Program, made: tuple[dict[str, Code], int, int]
    ) -> None:
        with self.lock:
            if prelude is not self.prelude:
                return
            if self.names is None:
                self.waiting = (_view(unit), made)
            else:
                self.keep_as(self.key(_view(unit)), made)

    def key(self, view: View) -> View | None:
        """What of `view` compiling the prelude depends on (None: more than is kept apart)."""
        names = self.names
        assert names is not None
        if not names.isdisjoint(view[4]) or not names.isdisjoint(view[5]):
            return None
        return tuple(names & part for part in view[:4])

    def keep_as(self, key: View | None, made: tuple[dict[str, Code], int, int]) -> None:
        if key is None:
            return
        if len(self.made) >= 16:
            self.made.pop(next(iter(self.made)))
        self.made[key] = made


_PRELUDE = _CompiledPrelude()
