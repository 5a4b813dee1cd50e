"""Compile-time checks: errors a program gets before it runs, each located."""

from __future__ import annotations

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.program import compile_source


def errors_of(source: str) -> list[str]:
    with pytest.raises(AgencySyntaxError) as info:
        compile_source(source, "prog.agency")
    return [d.message for d in info.value.diagnostics]


def test_names_starting_with_two_underscores_are_reserved() -> None:
    msgs = errors_of("node main() {\n  let __x = 1\n  return __x\n}\n")
    assert any("`__x`" in m and "reserved" in m for m in msgs)


def test_a_global_with_a_reserved_name_is_refused() -> None:
    assert any("`__g`" in m for m in errors_of("let __g = 1\nnode main() { return 1 }\n"))


def test_a_def_defined_twice_is_reported() -> None:
    msgs = errors_of("def f() { return 1 }\ndef f() { return 2 }\nnode main() { return f() }\n")
    assert any("defined twice" in m for m in msgs)


def test_importing_a_javascript_module_that_is_not_a_builtin_is_refused() -> None:
    msgs = errors_of('import { readFileSync } from "fs"\nnode main() { return 1 }\n')
    assert any("not supported" in m and "readFileSync" in m for m in msgs)


def test_a_destructive_javascript_extern_is_refused_as_an_import_not_a_syntax_error() -> None:
    msgs = errors_of('import { destructive wipe, keep } from "./x.js"\nnode main() { return 1 }\n')
    assert any("not supported" in m and "wipe" in m for m in msgs)


def test_importing_builtins_from_a_helper_is_allowed() -> None:
    program = compile_source(
        'import { getMutable, setMutable } from "./helpers.js"\nnode main() { return 1 }\n',
        "prog.agency",
    )
    assert program.nodes() == ["main"]


def test_break_outside_a_loop_is_reported_with_its_line() -> None:
    with pytest.raises(AgencySyntaxError) as info:
        compile_source("node main() {\n  break\n}\n", "prog.agency")
    assert info.value.diagnostics[0].span.line == 2


def test_assigning_a_constant_is_reported_where_it_happens() -> None:
    source = (
        "const LIMIT = 3\n"
        "def f() {\n  const x = 1\n  x = 2\n  return x\n}\n"
        "node main() {\n  LIMIT = 4\n  for (i in range(3)) { const y = i }\n  return f()\n}\n"
    )
    with pytest.raises(AgencySyntaxError) as info:
        compile_source(source, "prog.agency")
    found = {(d.message, d.span.line) for d in info.value.diagnostics}
    assert ("cannot assign to `x`: it is a constant", 4) in found
    assert ("cannot assign to `LIMIT`: it is a constant", 8) in found
    assert len(found) == 2  # a `const` declared again in each loop turn is not an assignment


def test_a_local_let_may_shadow_a_module_constant() -> None:
    program = compile_source(
        "const n = 1\nnode main() {\n  let n = 2\n  n = 3\n  return n\n}\n", "prog.agency"
    )
    assert program.nodes() == ["main"]
