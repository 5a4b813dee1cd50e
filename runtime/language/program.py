"""Provides loading a program: read, parse, check imports, compile (with the prelude)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from runtime.errors import AgencyError, AgencySyntaxError, Diagnostic
from runtime.language.bytecode import BUILTIN_NAMES, CompiledProgram
from runtime.language.files import read_text
from runtime.language.program_compiler import ProgramCompiler
from runtime.language.syntax import ast as A
from runtime.language.syntax import parse

PRELUDE_PATH = Path(__file__).with_name("prelude.agency")


class ProgramLoadError(AgencyError):
    """The program file cannot be read."""

    exit_code = 66  # EX_NOINPUT


@lru_cache(maxsize=1)
def prelude() -> A.Program:
    return parse(PRELUDE_PATH.read_text(encoding="utf-8"), "<prelude>")


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def gather_imports(
    program: A.Program, source: str, seen: set[str] | None = None
) -> list[tuple[A.Program, str]]:
    """The `.agency` files `program` imports (transitively), parsed, with their sources."""
    seen = seen if seen is not None else {str(Path(program.path).resolve())}
    out: list[tuple[A.Program, str]] = []
    problems = []
    for item in program.items:
        if type(item) is not A.Import or not item.module.endswith(".agency"):
            continue
        target = (Path(program.path).parent / item.module).resolve()
        key = str(target)
        if key in seen:
            continue
        seen.add(key)
        try:
            text = read_text(target, "import", shown=item.module)
        except OSError:
            problems.append(
                Diagnostic(f"cannot import {item.module!r}: no such file", item.span, program.path)
            )
            continue
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
        tree = parse(text, str(Path(program.path).parent / item.module))
        out.extend(gather_imports(tree, text, seen))
        out.append((tree, text))
        if item.names:
            defined = {i.name for i in tree.items if isinstance(i, (A.FuncDecl, A.TypeAlias))}
            defined |= {
                i.target.name
                for i in tree.items
                if type(i) is A.VarDecl and type(i.target) is A.PBind
            }
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


def check_imports(program: A.Program, source: str) -> None:
    """Imports of builtins (e.g. getMutable from a .js helper) are satisfied by the builtins;
    any other import is reported as not supported, with its location."""

    problems = []
    for item in program.items:
        if type(item) is not A.Import or item.module.endswith(".agency"):
            continue
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


def compile_source(source: str, path: str = "<input>") -> CompiledProgram:
    tree = parse(source, path)
    check_imports(tree, source)
    imported = gather_imports(tree, source)
    for sub, text in imported:
        check_imports(sub, text)
    digest = source_hash(source + "".join(text for _, text in imported))
    try:
        return ProgramCompiler(tree, source, digest, [sub for sub, _ in imported]).compile(
            prelude()
        )
    except RecursionError:
        depth, span = deepest(tree)
        what = (
            f"an expression nested {depth} levels deep is too deep to compile; "
            "split it with intermediate variables"
        )
        raise AgencySyntaxError([Diagnostic(what, span, path)], source) from None


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
        fields = getattr(node, "__dataclass_fields__", None)
        if fields is None:
            continue
        span = getattr(node, "span", None)
        if isinstance(span, A.Span) and span != A.NO_SPAN:
            where = span
        if depth > best[0]:
            best = (depth, where)
        for name in fields:
            if name != "span":
                stack.append((getattr(node, name), depth + 1, where))
    return best


def load_program(path: str | Path) -> CompiledProgram:
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
    return compile_source(source, str(path))
