"""Measures the parser on a 5,000-line file beside CPython's own parser on a file of the same
shape (`ast.parse`, written in C): a ratio from one run, not a clock reading."""

from __future__ import annotations

import ast
import time

from runtime.language.syntax import parse
from runtime.language.syntax.lexer import tokenize

AGENCY = (
    "def helper(a: number, b: string = 'x'): {ok: boolean} {\n"
    '  """Does things."""\n'
    "  let total = 0\n"
    "  for (x, i in range(a)) {\n"
    "    if (x % 2 == 0 && i > 3) { total += x * 2 ** i } else { continue }\n"
    "  }\n"
    "  const msg = `value ${total} and ${b.toUpperCase()}`\n"
    '  const r = match (total) { 0 => "zero", _ => { print("other") } }\n'
    "  return {ok: true, items: [y * 2 for y in xs if y != null], ...rest}\n"
    "}\n"
)
PYTHON = (
    "def helper(a: float, b: str = 'x') -> dict:\n"
    '    """Does things."""\n'
    "    total = 0\n"
    "    for i, x in enumerate(range(a)):\n"
    "        if x % 2 == 0 and i > 3:\n"
    "            total += x * 2 ** i\n"
    "    msg = f'value {total} and {b.upper()}'\n"
    "    r = 'zero' if total == 0 else print('other')\n"
    "    return {'ok': True, 'items': [y * 2 for y in xs if y is not None], **rest}\n"
)


def best(fn, source: str, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(source)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    agency = AGENCY * 500
    python = PYTHON * 500
    ours = best(parse, agency)
    cpython = best(ast.parse, python)
    lines = agency.count("\n")
    lexing = best(tokenize, agency)
    tokens = len(tokenize(agency)[0])
    print(
        f"agency lexing alone:          {lexing * 1e6 / tokens:.2f} µs a token ({tokens:,} tokens)"
    )
    print(f"agency parse, {lines} lines:   {ours * 1000:.0f} ms ({lines / ours:,.0f} lines/s)")
    print(f"CPython ast.parse, {python.count(chr(10))} lines: {cpython * 1000:.0f} ms")
    print(
        f"ratio (ours / C parser):      {ours / cpython:.1f}x  (goal: a 5,000-line file well under 1 s)"
    )


if __name__ == "__main__":
    main()
