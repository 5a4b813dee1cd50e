"""The type checker behind `std::agency`'s `typecheck`: one program per diagnostic it reports,
each beside a correct variant it must stay quiet on, and the formatter it shares a module with."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.source_format import format_source, items_as_data
from runtime.language.syntax.parser import parse
from runtime.language.typecheck import typecheck

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"


def codes(source: str) -> list[str]:
    report = typecheck(source)
    return [d["code"] for d in report["errors"] + report["warnings"]]


@pytest.mark.parametrize(
    ("bad", "good", "code"),
    [
        ('node main() { const x: number = "s" }', "node main() { const x: number = 2 }", "AG2001"),
        (
            'type Color = "red" | "green"\nnode main() { const c: Color = "blue" }',
            'type Color = "red" | "green"\nnode main() { const c: Color = "red" }',
            "AG2001",
        ),
        (
            "type P = { x: number, y: number }\nnode main() { const p: P = { x: 1 } }",
            "type P = { x: number, y?: number }\nnode main() { const p: P = { x: 1 } }",
            "AG2001",
        ),
        ('def f(): number {\n  return "n"\n}', "def f(): number {\n  return 1 + 2\n}", "AG2001"),
        (
            'node main() {\n  let n: number = 1\n  n = "two"\n}',
            "node main() {\n  let n: number = 1\n  n = n * 2\n}",
            "AG2005",
        ),
        (
            'type P = { x: number, label?: string }\nnode main() { const p: P = { x: 1, lable: "a" } }',
            'type P = { x: number, label?: string }\nnode main() { const p: P = { x: 1, label: "a" } }',
            "AG2003",
        ),
        (
            "node main() {\n  const n = 1\n  n = 2\n}",
            "node main() {\n  let n = 1\n  n = 2\n}",
            "AG4005",
        ),
        (
            "node main() {\n  const n = 1\n  n++\n}",
            "node main() {\n  let n = 1\n  n++\n}",
            "AG4005",
        ),
        (
            'node main() { if ("yes") { print(1) } }',
            "node main() { if (1 < 2) { print(1) } }",
            "AG2002",
        ),
        (
            "node main() { for (c in 42) { print(c) } }",
            "node main() { for (c in [42]) { print(c) } }",
            "AG2006",
        ),
        (
            "node main() { nowhere(1) }",
            "def somewhere(n) { }\nnode main() { somewhere(1) }",
            "AG4004",
        ),
        (
            "def add(a: number, b: number, c: number = 3) { }\nnode main() { add(1) }",
            "def add(a: number, b: number, c: number = 3) { }\nnode main() { add(1, 2) }",
            "AG6018",
        ),
        (
            "def add(a: number, b: number) { }\nnode main() { add(1) }",
            "def add(a: number, b: number) { }\nnode main() { add(1, 2) }",
            "AG6016",
        ),
        (
            'def add(a: number, b: number) { }\nnode main() { add(1, "2") }',
            "def add(a: number, b: number) { }\nnode main() { add(1, 2) }",
            "AG6019",
        ),
        (
            "def add(a: number) { }\nnode main() { add(a: 1, c: 2) }",
            "def add(a: number) { }\nnode main() { add(a: 1) }",
            "AG6025",
        ),
        (
            "def add(a: number, b: number) { }\nnode main() { add(1, a: 2) }",
            "def add(a: number, b: number) { }\nnode main() { add(1, b: 2) }",
            "AG6026",
        ),
        (
            'def add(a: number) { }\nnode main() { add(a: "1") }',
            "def add(a: number) { }\nnode main() { add(a: 1) }",
            "AG6014",
        ),
        (
            "node main() { const x: Missing = 1 }",
            "type Missing = number\nnode main() { const x: Missing = 1 }",
            "AG1006",
        ),
        (
            "destructive idempotent def f() { }",
            "idempotent def f() { }",
            "AG7006",
        ),
        (
            'def ask() {\n  return interrupt("ok?")\n}\nnode main() { ask() }',
            'def ask() {\n  return interrupt("ok?")\n}\nnode main() {\n  handle { ask() } with (i) { return approve() }\n}',
            "AG3009",
        ),
        (
            "node main() { const r = guard(cost: 1) { return 1 } }",
            "node main() { const r = guard(cost: 1) { return 1 } with approve }",
            "AG3009",
        ),
    ],
)
def test_each_diagnostic_and_its_correct_variant(bad: str, good: str, code: str) -> None:
    assert code in codes(bad)
    assert code not in codes(good), typecheck(good)


@pytest.mark.parametrize(
    "body",
    [
        'if (n > 1) { return "a" } else { return "b" }',
        'while (true) {\n    if (n > 1) { return "a" }\n  }',
        'match (n) {\n    1 => { return "one" }\n    _ => { return "other" }\n  }',
        'handle { return "a" } with (i) { return approve() }',
        'print(n)\n  return "late"',
    ],
)
def test_every_path_returns(body: str) -> None:
    assert codes(f"def f(n: number): string {{\n  {body}\n}}") == []


@pytest.mark.parametrize(
    "body",
    [
        'if (n > 1) { return "a" }',
        "while (true) {\n    if (n > 1) { break }\n  }",
        'match (n) {\n    1 => { return "one" }\n    x if (x > 2) => { return "big" }\n  }',
        'for (x in [1]) { return "a" }',
    ],
)
def test_a_path_that_falls_off_the_end(body: str) -> None:
    assert codes(f"def f(n: number): string {{\n  {body}\n}}") == ["AG2012"]
    assert codes(f"def f(n: number): string | null {{\n  {body}\n}}") == []


def test_a_diagnostic_is_located_and_carries_its_params() -> None:
    source = "node main() {\n  const x: number = 'no'\n}"
    (d,) = typecheck(source)["errors"]
    assert d["severity"] == "error" and d["loc"]["line"] == 2 and d["loc"]["col"] == 3
    assert d["loc"]["start"] == source.index("const")
    assert d["params"] == {"actual": '"no"', "expected": "number", "context": "assignment to 'x'"}
    assert d["message"] == "Type '\"no\"' is not assignable to type 'number' (assignment to 'x')."


def test_what_the_language_allows_is_not_an_error() -> None:
    # a failure passed on (it skips the call), `return failure(…)` from any def, a validated
    # parameter, an optional one, `null` for a defaulted one, a typed llm() answer
    source = """
def half(n: number): number {
  if (n < 0) {
    return failure("negative")
  }
  return n / 2
}
def checked(x: number!, label?: string, sep: string = ",") {
  return "${label}${sep}${x}"
}
node main() {
  const r = half(4)
  const twice = half(r)
  const s = checked("7")
  const t = checked(1, sep: null)
  const guess: number = llm("a number")
  const names: string[] = [s, t]
  for (name, i in names) {
    print(name.length + i)
  }
  return twice
}
"""
    assert typecheck(source) == {"errors": [], "warnings": []}


def test_tc_ignore_silences_the_next_line_or_only_the_codes_it_names() -> None:
    base = "node main() {\n  %s\n  const x: number = 's'\n}"
    assert codes(base % "// @tc-ignore") == []
    assert codes(base % "// @tc-ignore AG2001") == []
    assert codes(base % "// @tc-ignore AG6019") == ["AG2001"]


def test_our_conformance_programs_are_free_of_type_errors() -> None:
    # Not a pin on a count: every error the checker reports on a program of ours is one the
    # program makes on purpose (it tests that types are ignored at run time).
    wrong = []
    for path in sorted(PROGRAMS.rglob("*.agency")):
        try:
            report = typecheck(path.read_text(), str(path))
        except AgencySyntaxError:
            continue
        wrong += [f"{path.name}:{d['loc']['line']}: {d['message']}" for d in report["errors"]]
    assert sorted(wrong) == [
        "result_as_condition.agency:11: Type 'Result<number, string>' is not assignable to type"
        " 'boolean' (condition).",
        "types_ignored.agency:15: Type '\"blue\"' is not assignable to type '\"red\" | \"green\"' (assignment to 'c').",
    ]


def test_a_source_that_does_not_parse_is_an_error_not_a_report() -> None:
    with pytest.raises(AgencySyntaxError):
        typecheck("node main() {{{")


def test_format_keeps_the_program_and_is_idempotent() -> None:
    for path in sorted((PROGRAMS / "blocks").glob("*.agency")):
        source = path.read_text()
        once = format_source(source)
        assert format_source(once) == once, path.name
        assert len(parse(once, "x").items) == len(parse(source, "x").items), path.name
    messy = (
        "node main() {\n      let s = `a\n   b`\n        if (true) {\nreturn [1,\n2]\n   }\n\n\n\n}"
    )
    assert format_source(messy) == (
        "node main() {\n  let s = `a\n   b`\n  if (true) {\n    return [1,\n      2]\n  }\n\n}\n"
    )


def test_parse_ast_nodes_join_back_into_the_file() -> None:
    source = '// lead\nimport { sum } from "std::math"\ntype N = number\nnode main() { return 1 }\n'
    ast = items_as_data(source)
    assert [(n["type"], n.get("name")) for n in ast["nodes"]] == [
        ("importStatement", None),
        ("typeAlias", "N"),
        ("graphNode", "main"),
    ]
    assert "".join(n["source"] for n in ast["nodes"]) == source


def test_typeof_void_and_instanceof_have_their_javascript_types() -> None:
    kinds = '"string" | "number" | "bigint" | "boolean" | "symbol" | "undefined" | "object" | "function"'
    fine = f"""type Kind = {kinds}
node main() {{
  const k: Kind = typeof 1
  const s: string = typeof "a"
  const v: null = void print("x")
  const b: boolean = [] instanceof Array
  return [k, s, v, b]
}}
"""
    assert codes(fine) == []
    assert codes("node main() {\n  const n: number = typeof 1\n  return n\n}\n") == ["AG2001"]
