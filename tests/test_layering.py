"""The layers depend one way, and the runtime (and the debugger's pure session model) never
import the UI libraries.

Layers, lowest first (README, "How it works"):
    runtime.frozen → runtime.errors → runtime.language → runtime.llm → runtime.vm | runtime.record
    → runtime.runs → runtime.agents → runtime.api (and the package `runtime`) → debugger
`runtime.vm` and `runtime.record` are siblings: neither imports the other. `runtime.frozen`,
the records' base class, is below everything (the errors' `Span` is one). An import may only
go down (or sideways within one package); there is no import cycle anywhere, and no import
inside a function except the few listed in LAZY, each for start-up cost, never to dodge a cycle.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from runtime.language import bytecode
from runtime.record import format as record_format
from runtime.vm import builtins, writelog

ROOT = Path(__file__).resolve().parent.parent
# The debugger's pure model and what it shares with the widgets: no UI library either.
PURE = ("session.py", "commands.py", "formatting.py", "errors.py")
UI = re.compile(r"^\s*(from|import)\s+(textual|rich)\b", re.M)

LAYERS: list[tuple[str, ...]] = [
    ("runtime.frozen",),
    ("runtime.errors", "runtime.message_text"),
    ("runtime.language",),
    ("runtime.llm",),
    ("runtime.vm", "runtime.record"),
    ("runtime.runs",),
    ("runtime.agents",),
    ("runtime.api", "runtime"),
    ("debugger",),
]
# Imports inside a function, allowed because they keep start-up cheap (httpx, textual).
LAZY = {
    ("runtime.llm", "runtime.llm.openai"),
    ("runtime.llm", "runtime.llm.anthropic"),
    ("runtime.llm.registry", "runtime.llm.openai"),
    ("runtime.llm.registry", "runtime.llm.anthropic"),
    ("runtime.record.stores", "runtime.record.pg_store"),  # psycopg: only for a PostgreSQL URL
    # the type checker (~15 ms): only for the programs that call `typecheck` on source text
    ("runtime.vm.builtins_agency", "runtime.language.typecheck"),
}


def modules(pkg: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / pkg).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def runtime_modules() -> list[str]:
    return list(modules("runtime"))


def layer_of(mod: str) -> tuple[int, str]:
    best = (-1, "")
    for i, group in enumerate(LAYERS):
        for prefix in group:
            if (mod == prefix or mod.startswith(prefix + ".")) and len(prefix) > len(best[1]):
                best = (i, prefix)
    return best


def imports(mod: str, path: Path, known: dict[str, Path]) -> list[tuple[str, bool, int]]:
    """(imported project module, inside a function?, line) for every import of `mod`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(x) for b in node.body for x in ast.walk(b))
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                pkg = pkg[: len(pkg) - node.level + 1]
                base = ".".join(pkg + ([node.module] if node.module else []))
            # `from pkg import sub` runs pkg/__init__ first, then sub
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            if t in known and t != mod:
                out.append((t, id(node) not in top, node.lineno))
    return out


def graph() -> dict[str, list[tuple[str, bool, int]]]:
    known = {**modules("runtime"), **modules("debugger")}
    return {m: imports(m, p, known) for m, p in known.items()}


def test_imports_go_down_the_layers() -> None:
    wrong = []
    for mod, deps in graph().items():
        mine, my_prefix = layer_of(mod)
        for dep, _, line in deps:
            theirs, their_prefix = layer_of(dep)
            if theirs > mine or (theirs == mine and my_prefix != their_prefix):
                wrong.append(f"{mod}:{line} imports {dep}")
    assert wrong == []


def test_no_import_cycle() -> None:
    edges = {m: {d for d, _, _ in deps} for m, deps in graph().items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(edges.get(m, ())):
            if state.get(d) == 1:
                cycles.append(" -> ".join([*path[path.index(d) :], d]))
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_no_function_level_imports_in_the_runtime() -> None:
    nested = [
        f"{mod}:{line} imports {dep}"
        for mod, deps in graph().items()
        if mod.startswith("runtime")
        for dep, inside, line in deps
        if inside and (mod, dep) not in LAZY
    ]
    assert nested == []


def test_the_dispatch_loop_numbers_its_opcodes_as_the_compiler_does() -> None:
    source = (ROOT / "runtime" / "vm" / "machine.py").read_text(encoding="utf-8")
    seen = re.findall(r"\bop == (\d+):  # ([A-Z_0-9]+)", source)
    assert seen, "the dispatch loop is expected to spell opcodes as `op == N:  # NAME`"
    assert {name: int(n) for n, name in seen} == {name: getattr(bytecode, name) for _, name in seen}
    assert {name for _, name in seen} == set(bytecode.OP_NAMES.values())


def test_write_log_codes_are_the_record_format_codes() -> None:
    w = {k[2:]: v for k, v in vars(writelog).items() if k.startswith("W_")}
    r = {k[2:]: v for k, v in vars(record_format).items() if k.startswith("R_")}
    assert r.pop("CONTENTS") not in w.values()
    assert w == r


def test_every_declared_builtin_is_registered() -> None:
    bare = {name for name in builtins.BUILTINS if "." not in name}
    assert bare == set(bytecode.BUILTIN_NAMES)


def test_no_ui_import_statements_in_runtime() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in [*(ROOT / "runtime").rglob("*.py"), *(ROOT / "debugger" / m for m in PURE)]
        if p.exists() and UI.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_importing_the_runtime_loads_no_ui_library() -> None:
    mods = runtime_modules() + [f"debugger.{m[:-3]}" for m in PURE]
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "", f"UI modules loaded: {out.stdout.strip()}"
