"""Provides loading a program: read, parse, check imports, compile (with the prelude)."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

from runtime.errors import AgencyError, AgencySyntaxError, Diagnostic
from runtime.language import splices
from runtime.language.bytecode import BUILTIN_NAMES, CompiledProgram
from runtime.language.files import read_text
from runtime.language.parse_cache import PRELUDE_PATH, STD_DIR, parse_bundled
from runtime.language.program_compiler import ProgramCompiler
from runtime.language.syntax import ast as A
from runtime.language.syntax import parse
from runtime.language.syntax.nodes import Node, replace

STD_PREFIX = "std::"
# Modules whose functions are always available (the prelude and builtins): importing one of
# those names from them is allowed and binds nothing new.
STD_ALWAYS = ("std::index", "std::array")
_STD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")


class ProgramLoadError(AgencyError):
    """The program file cannot be read."""

    exit_code = 66  # EX_NOINPUT


@lru_cache(maxsize=1)
def prelude() -> A.Program:
    return parse_bundled(PRELUDE_PATH, "<prelude>")[0]


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def checked_source(path: str | Path, sha256: object, origin: str) -> str:
    """`path`, the source file a checkpoint (`origin`) names, once its text is the text the
    checkpoint was taken from (`sha256`; not checked when the checkpoint gives none, and the
    checkpoint's own check then says so). A checkpoint is untrusted: one naming another file
    (`/etc/passwd`) would otherwise have it parsed, and its lines shown in a syntax error."""
    if not isinstance(sha256, str):
        return str(path)
    try:
        same = source_hash(read_text(path, "program")) == sha256
    except (AgencyError, OSError, UnicodeDecodeError):
        same = False
    if not same:
        raise AgencyError(
            f"{origin} was taken from {path} (sha256 {sha256[:12]}…), which has changed since "
            "or cannot be read; a checkpoint restores only against the same source"
        )
    return str(path)


def std_path(module: str) -> Path | None:
    """The file of standard-library module `std::X` (None when there is no such module)."""
    name = module[len(STD_PREFIX) :]
    if not _STD_NAME.match(name):
        return None
    path = STD_DIR / f"{name}.agency"
    return path if path.is_file() else None


def is_std_file(path: str) -> bool:
    """Whether `path` is one of the bundled `std::` modules (they may use `__` names)."""
    try:
        return Path(path).resolve().is_relative_to(STD_DIR.resolve())
    except (OSError, ValueError):
        return False


@lru_cache(maxsize=64)
def _parse_std(path: str) -> tuple[A.Program, str]:
    return parse_bundled(Path(path), path)


def _exports(tree: A.Program, module: str) -> set[str]:
    defined = {i.name for i in tree.items if isinstance(i, (A.FuncDecl, A.TypeAlias, A.EffectSet))}
    defined |= {
        i.target.name for i in tree.items if type(i) is A.VarDecl and type(i.target) is A.PBind
    }
    if module in STD_ALWAYS:
        defined |= {i.name for i in prelude().items if type(i) is A.FuncDecl}
        defined |= BUILTIN_NAMES
    return defined | _reexports(tree)


def _reexports(tree: A.Program, depth: int = 0) -> set[str]:
    """The names `export { … } from` / `export * from` lines make a module export."""
    out: set[str] = set()
    for item in tree.items:
        if type(item) is not A.Import or not item.reexport:
            continue
        renamed = {name for name, _ in item.aliases}
        out |= {n for n in item.names if n not in renamed}
        out |= {alias for _, alias in item.aliases}
        if item.names or depth > 20:
            continue
        target, _ = _resolve(tree, item)
        try:
            if target is not None:
                sub = parse(read_text(target, "import", shown=item.module), str(target))
                out |= _exports(sub, item.module) | _reexports(sub, depth + 1)
        except (OSError, AgencyError, UnicodeDecodeError):
            pass  # gather_imports says why
    return out


def _resolve(program: A.Program, item: A.Import) -> tuple[Path | None, str]:
    """The file an import names, and what to say when there is none."""
    if item.module.startswith(STD_PREFIX):
        path = std_path(item.module)
        if path is None:
            return None, f"there is no standard library module {item.module!r}"
        return path.resolve(), ""
    if "\0" in item.module:
        return None, f"cannot import {item.module!r}: a file name cannot hold a NUL character"
    target = (Path(program.path).parent / item.module).resolve()
    return target, f"cannot import {item.module!r}: no such file"


def gather_imports(
    program: A.Program, source: str, seen: set[str] | None = None
) -> list[tuple[A.Program, str]]:
    """The `.agency` files `program` imports (transitively, `std::` modules included), parsed,
    with their sources."""
    seen = seen if seen is not None else {str(Path(program.path).resolve())}
    out: list[tuple[A.Program, str]] = []
    problems = []
    for item in program.items:
        if type(item) is not A.Import:
            continue
        if not item.module.endswith(".agency") and not item.module.startswith(STD_PREFIX):
            continue
        target, missing = _resolve(program, item)
        if target is None:
            problems.append(Diagnostic(missing, item.span, program.path))
            continue
        key = str(target)
        tree: A.Program | None = None
        if key not in seen:
            seen.add(key)
            try:
                if item.module.startswith(STD_PREFIX):
                    tree, text = _parse_std(key)
                else:
                    text = read_text(target, "import", shown=item.module)
                    tree = parse(text, str(Path(program.path).parent / item.module))
            except OSError:
                problems.append(Diagnostic(missing, item.span, program.path))
                continue
            except AgencySyntaxError:
                raise
            except AgencyError as exc:  # a FIFO, a device, a file over the size limit
                problems.append(
                    Diagnostic(f"cannot import {item.module!r}: {exc}", item.span, program.path)
                )
                continue
            except UnicodeDecodeError:
                problems.append(
                    Diagnostic(
                        f"cannot import {item.module!r}: not UTF-8 text", item.span, program.path
                    )
                )
                continue
            out.extend(gather_imports(tree, text, seen))
            out.append((tree, text))
        elif item.names and item.module.startswith(STD_PREFIX):
            tree = _parse_std(key)[0]
        elif item.names:
            continue  # imported twice: the first import checked the names
        if item.names and tree is not None:
            defined = _exports(tree, item.module)
            for name in item.names:
                if name not in defined:
                    problems.append(
                        Diagnostic(
                            f"{item.module!r} has no `{name}` to import", item.span, program.path
                        )
                    )
    if problems:
        raise AgencySyntaxError(problems, source)
    return out


def _yield_to_user(
    tree: A.Program, imported: list[tuple[A.Program, str]]
) -> list[tuple[A.Program, str]]:
    """A std module's function that a user file also defines (without importing it from that
    module) is left out: the user's own definition wins, as with the prelude."""
    user = [tree] + [sub for sub, _ in imported if not is_std_file(sub.path)]
    mine = {i.name for t in user for i in t.items if type(i) is A.FuncDecl}
    wanted = {
        (i.module, n)
        for t in user
        for i in t.items
        if type(i) is A.Import and i.module.startswith(STD_PREFIX)
        for n in i.names
    }
    out = []
    for sub, text in imported:
        if is_std_file(sub.path):
            module = (
                STD_PREFIX
                + Path(sub.path).resolve().relative_to(STD_DIR.resolve()).with_suffix("").as_posix()
            )
            keep = tuple(
                i
                for i in sub.items
                if type(i) is not A.FuncDecl or i.name not in mine or (module, i.name) in wanted
            )
            if len(keep) != len(sub.items):
                sub = replace(sub, items=keep)
        out.append((sub, text))
    return out


def _module_functions(program: A.Program, item: A.Import) -> list[str]:
    """The functions and static constants an `.agency` or `std::` module defines (for
    `import * as ns`)."""
    target, _ = _resolve(program, item)
    if target is None:
        return []
    try:
        if item.module.startswith(STD_PREFIX):
            tree = _parse_std(str(target))[0]
        else:
            tree = parse(read_text(target, "import", shown=item.module), str(target))
    except (OSError, AgencyError, UnicodeDecodeError):
        return []  # gather_imports said why
    names = [i.name for i in tree.items if type(i) is A.FuncDecl]
    # and its `static const`s, the only module variables a module can export
    names += [
        i.target.name
        for i in tree.items
        if type(i) is A.VarDecl and i.kind == "static" and type(i.target) is A.PBind
    ]
    return names


def bind_import_names(program: A.Program) -> A.Program:
    """`import { a as b }` and `import * as ns` from an Agency module: module constants
    `const b = a` and `const ns = {f: f, …}` (the module's functions), declared first."""
    decls: list[A.TopLevel] = []
    for item in program.items:
        if type(item) is not A.Import:
            continue
        if not item.module.endswith(".agency") and not item.module.startswith(STD_PREFIX):
            continue
        for name, alias in item.aliases:
            target = A.PBind(alias, item.span)
            decls.append(A.VarDecl("const", target, None, A.Name(name, item.span), item.span))
        if item.namespace:
            fields = tuple(
                A.ObjectEntry(f, A.Name(f, item.span), item.span)
                for f in _module_functions(program, item)
            )
            target = A.PBind(item.namespace, item.span)
            value = A.ObjectLit(fields, item.span)
            decls.append(A.VarDecl("const", target, None, value, item.span))
    if not decls:
        return program
    return replace(program, items=(*decls, *program.items))


def check_imports(program: A.Program, source: str) -> None:
    """Imports of builtins (e.g. getMutable from a .js helper) are satisfied by the builtins;
    any other import is reported as not supported, with its location."""

    problems = []
    for item in program.items:
        if type(item) is not A.Import or item.module.endswith(".agency"):
            continue
        if item.module.startswith(STD_PREFIX):
            continue  # resolved by gather_imports
        missing = [n for n in item.names if n not in BUILTIN_NAMES]
        if item.names and not missing:
            continue
        names = ", ".join(missing) if missing else "the module"
        what = (
            f"importing {names} from {item.module!r} is not supported: only builtins "
            "can be imported from JavaScript/TypeScript modules"
        )
        problems.append(Diagnostic(what, item.span, program.path))
    if problems:
        raise AgencySyntaxError(problems, source)


# Programs compiled to run (`compile_source(..., reuse=True)`), by what they were compiled from.
_TO_RUN: dict[tuple[str, str, tuple[str, ...]], CompiledProgram] = {}
_TO_RUN_SIZE = 32


def compile_source(source: str, path: str = "<input>", reuse: bool = False) -> CompiledProgram:
    """The program `source` compiles to. `reuse`: the caller only runs it (machines link a
    program in place, once), so the program compiled earlier in this process from the same
    text, path and imported files is given again: a resume, a replay or a fork of a run reads
    its program from the file each time, and compiling it (with the prelude and its `std::`
    imports) cost more than many a resume. Callers that read its instructions as compiled
    (not linked) leave `reuse` off."""
    tree = parse(source, path)
    if "$(" in source and splices.has_splices(tree):  # (a splice starts with that token)
        tree, source = splices.expand(tree, source, path)
    check_imports(tree, source)
    imported = _yield_to_user(tree, gather_imports(tree, source))
    for sub, text in imported:
        check_imports(sub, text)
    tree = bind_import_names(tree)
    imported = [(bind_import_names(sub), text) for sub, text in imported]
    digest = source_hash(source + "".join(text for _, text in imported))
    key = (path, digest, tuple(sub.path for sub, _ in imported))
    if reuse and key in _TO_RUN:
        return _TO_RUN[key]
    try:
        program = ProgramCompiler(tree, source, digest, [sub for sub, _ in imported]).compile(
            prelude()
        )
    except RecursionError:
        depth, span = deepest(tree)
        what = (
            f"an expression nested {depth} levels deep is too deep to compile; "
            "split it with intermediate variables"
        )
        raise AgencySyntaxError([Diagnostic(what, span, path)], source) from None
    if reuse:
        if len(_TO_RUN) >= _TO_RUN_SIZE:
            _TO_RUN.pop(next(iter(_TO_RUN)))
        _TO_RUN[key] = program
    return program


def deepest(tree: A.Program) -> tuple[int, A.Span]:
    """How deep the syntax tree goes, and the span of its deepest node (walked without
    recursion: this is for trees too deep to recurse over)."""
    best = (0, A.NO_SPAN)
    stack: list[tuple[object, int, A.Span]] = [(tree, 0, A.NO_SPAN)]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, (list, tuple)):
            stack.extend((child, depth, where) for child in node)
            continue
        if not isinstance(node, Node):
            continue
        span = getattr(node, "span", None)
        if isinstance(span, A.Span) and span != A.NO_SPAN:
            where = span
        if depth > best[0]:
            best = (depth, where)
        for name in node._fields:
            if name != "span":
                stack.append((getattr(node, name), depth + 1, where))
    return best


def load_program(path: str | Path, reuse: bool = False) -> CompiledProgram:
    """The program in file `path` (`reuse`: see `compile_source`)."""
    p = Path(path)
    try:
        source = read_text(p, "the program", ProgramLoadError)
    except FileNotFoundError:
        raise ProgramLoadError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ProgramLoadError(f"{path}: is a directory, expected an .agency file") from None
    except UnicodeDecodeError:
        raise ProgramLoadError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ProgramLoadError(f"{path}: cannot read ({exc.strerror})") from None
    return compile_source(source, str(path), reuse)
