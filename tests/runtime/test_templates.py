"""Code literals `[| … |]` and splices `$( … )`: located errors for bad ones, and what the
generator runner refuses. (What working ones do is covered by tests/programs/templates and
tests/programs/splices.)"""

from __future__ import annotations

from pathlib import Path

import pytest

import runtime.runs.generators  # noqa: F401  (installs the splice runner)
from runtime.errors import AgencySyntaxError
from runtime.language.program import compile_source, load_program
from runtime.language.syntax import parse
from runtime.language.syntax.templates import dedent, scan


def located(source: str, path: str = "t.agency") -> list[tuple[str, int, int]]:
    with pytest.raises(AgencySyntaxError) as info:
        compile_source(source, path)
    return [(d.message, d.span.line, d.span.col) for d in info.value.diagnostics]


def test_a_syntax_error_inside_a_code_literal_is_located_in_the_file() -> None:
    source = "node main() {\n  const t = [|\n    def g( {\n    }\n  |]\n  return t\n}\n"
    with pytest.raises(AgencySyntaxError) as info:
        parse(source, "t.agency")
    (d,) = info.value.diagnostics
    assert d.message.startswith("in this code literal: ")
    assert (d.span.line, d.span.col) == (3, 12)
    assert "^" in info.value.diagnostics[0].render(source)


def test_an_unterminated_code_literal_is_reported_where_it_starts() -> None:
    with pytest.raises(AgencySyntaxError) as info:
        parse("const t = [| def g() {}\n", "t.agency")
    assert "unterminated code literal starting at 1:11" in info.value.diagnostics[0].message


def test_holes_inside_strings_and_comments_are_text() -> None:
    text = dedent('\n  const a = "#no" // #nor\n  const b = #yes: string\n')
    assert [(m.name, m.type) for m in scan(text)] == [("yes", "string")]


def write(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    return tmp / "main.agency"


GEN = 'import { Code } from "std::template"\n'


def test_a_splice_argument_declared_in_the_file_is_refused(tmp_path: Path) -> None:
    main = write(
        tmp_path,
        {
            "gen.agency": GEN + "export def make(n: number): Code {\n  return [| 1 |]\n}\n",
            "main.agency": 'import { make } from "./gen.agency"\nconst k = 2\n'
            "node main() {\n  return $( make(k) )\n}\n",
        },
    )
    with pytest.raises(AgencySyntaxError) as info:
        load_program(main)
    (d,) = info.value.diagnostics
    assert "`k` is not imported" in d.message
    assert (d.span.line, d.span.col) == (4, 10)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('  return interrupt("may I?")', "may not raise interrupts"),
        ("  return 5", "must return Code"),
        ("  return [|\n    export def f() {}\n  |]", "cannot be exported"),
        ("  return [| def main() {} |]", "`main`, a name already in use"),
        ("  while (true) {}\n  return [| 1 |]", "did not finish"),
    ],
)
def test_what_a_declaration_splice_refuses(
    tmp_path: Path, body: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime.runs.generators, "STEP_BUDGET", 20_000)
    main = write(
        tmp_path,
        {
            "gen.agency": GEN + f"export def make(): Code {{\n{body}\n}}\n",
            "main.agency": 'import { make } from "./gen.agency"\n$( make() )\nnode main() {\n  return 1\n}\n',
        },
    )
    with pytest.raises(AgencySyntaxError, match=message) as info:
        load_program(main)
    assert info.value.diagnostics[0].span.line == 2


def test_an_expression_splice_needs_one_expression(tmp_path: Path) -> None:
    main = write(
        tmp_path,
        {
            "gen.agency": GEN + "export def make(): Code {\n  return [| def f() {} |]\n}\n",
            "main.agency": 'import { make } from "./gen.agency"\nnode main() {\n  return $( make() )\n}\n',
        },
    )
    with pytest.raises(AgencySyntaxError, match="needs one expression, got program code"):
        load_program(main)
