"""Property: the parser never crashes; on any input it returns a Program or raises
AgencySyntaxError (with at least one located diagnostic)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.errors import AgencySyntaxError
from runtime.language.syntax import parse, parse_arguments, parse_expression
from runtime.language.syntax.ast import Program

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WORDS = [
    "let", "const", "if", "then", "else", "while", "for", "in", "return", "break", "continue",
    "goto", "def", "node", "import", "from", "as", "match", "try", "catch", "typeof", "with",
    "approve", "reject", "true", "false", "null", "undefined", "shared", "static", "type",
    "export", "destructive", "thread", "subthread", "handle", "success", "failure", "_",
    "x", "y", "foo", "string", "number", "Array", "Result",
]  # fmt: skip
PUNCTUATION = [
    "...", "===", "!==", "??=", "?.", "??", "|>", "=>", "==", "!=", "<=", ">=", "&&", "||",
    "++", "--", "+=", "-=", "*=", "/=", "**", "(", ")", "[", "]", "{", "}", ",", ";", ":", ".",
    "?", "+", "-", "*", "/", "%", "<", ">", "=", "!", "|",
]  # fmt: skip
LITERALS = [
    "0", "42", "3.5", ".5", "1_000", "1e3", "0x1F", '"s"', "'s'", "`s`", '"${x}"', '"${',
    '"""raw ${x}"""', '"\\u{41}\\x41\\n"', "'unterminated", "/* c */", "// c\n", "/** d */",
    "#", "é", "\\",
]  # fmt: skip
SEPARATORS = [" ", " ", " ", "", "\n", "\t"]

token = st.sampled_from(WORDS + PUNCTUATION + LITERALS)
token_soup = st.lists(st.tuples(token, st.sampled_from(SEPARATORS)), max_size=60).map(
    lambda pairs: "".join(t + s for t, s in pairs)
)

# Mutations of a realistic program: deleting or duplicating a slice finds recovery bugs.
PROGRAM = """/** Doc */
def add(a: number, b: number = 2, ...rest): Result<number, string> {
  \"\"\"Adds.\"\"\"
  return a + b
}
shared tries = 0
node main(name: string) {
  const cp = checkpoint()
  const r: {ok: boolean, v?: number[]} = llm(`Hi ${name + "${1}"}`, model: "m")
  if (r.ok) { print("a") } else if r.v?.[0] > 1 { tries++ } else { restore(cp) }
  for (x, i in xs) { continue }
  const m = match (r) { success(v) => v, {type: "a", x} => { print(x) }, _ => -1 }
  const ys = [f(x) for x in xs if x > 1]
  handle { deleteFile("a") with approve } with (d) { return approve(d) }
  return xs
    .map(f)
    |> g catch 0
}
"""


def check(source: str) -> None:
    try:
        result = parse(source)
    except AgencySyntaxError as error:
        assert error.diagnostics
        for diagnostic in error.diagnostics:
            assert diagnostic.span.line >= 1 and diagnostic.span.col >= 1
        error.render()
    else:
        assert isinstance(result, Program)


@FUZZ
@given(st.text(max_size=300))
def test_arbitrary_text(source: str) -> None:
    check(source)


@FUZZ
@given(token_soup)
def test_token_soup(source: str) -> None:
    check(source)


@FUZZ
@given(st.integers(0, len(PROGRAM)), st.integers(0, 40), st.integers(0, len(PROGRAM)))
def test_mutated_program(start: int, length: int, insert_at: int) -> None:
    piece = PROGRAM[start : start + length]
    check(PROGRAM[:start] + PROGRAM[start + length :])  # deleted
    check(PROGRAM[:insert_at] + piece + PROGRAM[insert_at:])  # duplicated


@FUZZ
@given(token_soup)
def test_expression_entry_points(source: str) -> None:
    for entry in (parse_expression, parse_arguments):
        try:
            entry(source)
        except AgencySyntaxError as error:
            assert error.diagnostics


def test_the_seed_program_parses() -> None:
    assert isinstance(parse(PROGRAM), Program)
