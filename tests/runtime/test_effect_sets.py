"""`effectSet` declarations and `raises` clauses: what the parser keeps, how a clause's sets
expand (runtime/language/effect_sets.py), and the type checker's AG3012/AG3013."""

from __future__ import annotations

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.effect_sets import allowed
from runtime.language.program import compile_source
from runtime.language.syntax import ast as A
from runtime.language.syntax.parser import parse
from runtime.language.typecheck import typecheck


def test_the_parser_keeps_effect_sets_and_clauses() -> None:
    tree = parse(
        "export effectSet Io = <std::read, a::b::c>\n"
        "def f() raises <Io, *> { return 1 }\n"
        "def g() raises Io { return 1 }\n"
        "def h() raises <> { return 1 }\n"
        "def i() { return 1 }\n"
    )
    sets = [i for i in tree.items if type(i) is A.EffectSet]
    assert [(s.name, s.members) for s in sets] == [("Io", ("std::read", "a::b::c"))]
    funcs = {i.name: i.raises for i in tree.items if type(i) is A.FuncDecl}
    assert funcs == {"f": ("Io", "*"), "g": ("Io",), "h": (), "i": None}


def test_sets_expand_through_nesting_and_cycles() -> None:
    sets = {"A": ("x::a", "B"), "B": ("x::b", "A"), "C": ("*",)}
    clause = allowed(("A",), sets, set())
    assert clause.effects == {"x::a", "x::b"} and not clause.anything
    assert allowed(("C", "x::c"), sets, set()).anything
    assert allowed(("T",), sets, {"T"}).not_sets == ["T"]


def test_an_imported_set_can_be_named_and_an_unknown_one_cannot() -> None:
    compile_source(
        'import { FileWrite } from "std::capabilities"\n'
        "def f() raises <FileWrite> { return 1 }\nnode main() { return f() }\n",
        "main.agency",
    )
    with pytest.raises(AgencySyntaxError, match="has no `Telepathy` to import"):
        compile_source(
            'import { Telepathy } from "std::capabilities"\nnode main() { return 1 }\n',
            "main.agency",
        )


def test_the_checker_reports_each_effect_outside_the_clause_at_the_function() -> None:
    source = (
        'import { FileRead } from "std::capabilities"\n'
        "\n"
        "node main() raises <FileRead> {\n"
        '  write("a", "b")\n'
        '  interrupt("who knows")\n'
        '  return readBinary("c")\n'
        "}\n"
    )
    errors = typecheck(source)["errors"]
    assert sorted((e["code"], e["params"]["effect"], e["loc"]["line"]) for e in errors) == [
        ("AG3013", "std::write", 3),
        ("AG3013", "unknown", 3),
    ]
    assert any(e["message"].startswith("Node 'main' raises effect 'std::write'") for e in errors)
