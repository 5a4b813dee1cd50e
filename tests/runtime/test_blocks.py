"""Blocks (trailing `f(x) as y { … }` and inline `\\y -> e`), function types, and the closure
value they make: parsing, located errors, checkpoint validation, stale closures, and the block's
frame in the recorded timeline."""

from __future__ import annotations

import json

import pytest

from runtime.errors import AgencySyntaxError, CheckpointFormatError
from runtime.language.program import compile_source
from runtime.language.syntax import parse, parse_expression
from runtime.language.syntax.ast import (
    BlockFn,
    Call,
    FuncDecl,
    Return,
    TArray,
    TFunc,
    TName,
    TypeAlias,
)
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig
from runtime.vm.checkpoint_reading import validate
from runtime.vm.checkpoints import snapshot
from runtime.vm.machine import Machine
from runtime.vm.rebuild import rebuild
from runtime.vm.values import Closure, JSArray
from runtime.vm.writelog import FAILED, HALTED


def _errors(source: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AgencySyntaxError) as info:
        parse(source, "t.agency")
    return [(d.message, d.span.line, d.span.col) for d in info.value.diagnostics]


def _type(source: str) -> object:
    (alias,) = parse(f"type T = {source}").items
    assert isinstance(alias, TypeAlias)
    return alias.type


# -- syntax -------------------------------------------------------------------------------------


def test_trailing_block_forms_parse_to_a_call_with_a_block() -> None:
    for text, params in [
        ("f(xs) as x { return x }", ("x",)),
        ("f(xs) as (a, b) { return a }", ("a", "b")),
        ("f() as { return 1 }", ()),
        ("f() { return 1 }", ()),
    ]:
        call = parse_expression(text)
        assert isinstance(call, Call), text
        assert isinstance(call.block, BlockFn), text
        assert tuple(p.name for p in call.block.params) == params, text
        assert isinstance(call.block.body.body[0], Return)


def test_inline_block_forms() -> None:
    for text, params in [
        ("\\x -> x + 1", ("x",)),
        ("\\(a, b) -> a", ("a", "b")),
        ("\\(x: number) -> x", ("x",)),
        ("\\ -> 1", ()),
        ("\\-> 1", ()),
    ]:
        block = parse_expression(text)
        assert isinstance(block, BlockFn) and block.inline, text
        assert tuple(p.name for p in block.params) == params, text
    call = parse_expression("map(xs, \\x -> x * 2, 3)")
    assert isinstance(call, Call) and len(call.args) == 3  # the body stops at `,`


def test_a_brace_after_an_if_or_while_condition_is_its_body_not_a_block() -> None:
    (main,) = parse("node main() {\n  if ok() { return 1 }\n  while more() { next() }\n}").items
    assert isinstance(main, FuncDecl)
    cond = main.body.body[0].cond  # type: ignore[union-attr]
    assert isinstance(cond, Call) and cond.block is None


def test_function_types() -> None:
    assert _type("(number, string) -> boolean") == TFunc(
        (TName("number"), TName("string")), TName("boolean")
    )
    assert _type("(a: number, b?: any) -> void") == TFunc(
        (TName("number"), TName("any")), TName("void")
    )
    assert _type("() -> string[]") == TFunc((), TArray(TName("string")))
    assert _type("(number)[]") == TArray(TName("number"))  # parenthesised, not a function


def test_bad_blocks_are_located_errors() -> None:
    src = "node main() {\n  const a = f() as 3 { }\n  const b = g(\\x x)\n}\n"
    assert _errors(src) == [
        ("expected a parameter name, `(a, b)` or `{` after `as`, got number `3`", 2, 20),
        ("expected `->` after the inline block's parameters, got `x`", 3, 18),
    ]


def test_a_block_after_a_bare_name_says_to_add_parentheses() -> None:
    src = "def callMe(block) {\n  return block()\n}\nnode main() {\n  const foo = callMe {\n    return 5\n  }\n}\n"
    assert _errors(src)[0] == (
        "a block must follow a call with parentheses: `callMe() { … }` or `callMe() as x { … }`",
        5,
        22,
    )


# -- run time -----------------------------------------------------------------------------------

KEEPER = """
let kept = null

def keep(block) {
  kept = block
  return block()
}

def make() {
  const secret = 41
  return keep() as { return secret + 1 }
}

node main() {
  const first = make()
  return [first, kept()]
}
"""


def test_a_block_called_after_its_creator_returned_is_a_clear_error() -> None:
    m = Machine(compile_source(KEEPER, "keeper.agency"))
    m.run()
    assert m.status == FAILED
    assert m.error is not None
    assert "a block from `make` can only be called while that call is running" in m.error.message


WALK = """
def each(items, visit) {
  for (it in items) { visit(it) }
}

node main() {
  let total = 0
  each([1, 2, 3]) as n {
    total = total + n
  }
  return total
}
"""


def test_a_snapshot_inside_a_block_holds_the_closure_and_rebuilds() -> None:
    program = compile_source(WALK, "walk.agency")
    m = Machine(program)
    assert m.run_until(lambda mm: mm.frames[-1].code.kind == "block")
    data = json.loads(json.dumps(snapshot(m)))
    visit = [f for f in data["stack"] if f["scope"] == "each"][0]["args"]["visit"]
    assert visit == {"$block": "main.block1", "frame": 1, "owner": "main"}
    again = rebuild(program, data)
    assert type(again.frames[2].locals["visit"]) is Closure
    assert again.run() == 6 and again.status == HALTED

    broken = json.loads(json.dumps(data))
    for f in broken["stack"]:
        if f["scope"] == "each":
            f["args"]["visit"]["$block"] = "main.block9"
    with pytest.raises(CheckpointFormatError, match="main.block9"):
        validate(broken, program)


def test_a_blocks_frame_shows_in_the_timeline() -> None:
    program = compile_source(WALK, "walk.agency")
    rec = record_program(program, RunConfig(model_spec="sim", quiet=True))
    tl = rec.timeline
    inside = [
        tl.state_at(k)
        for k in range(len(tl))
        if any(f.kind == "block" for f in tl.state_at(k).frames)
    ]
    assert len(inside) == 3  # one step per call: `total = total + n`
    for i, state in enumerate(inside):
        scopes = [(f.scope, f.kind) for f in state.frames]
        assert scopes == [("main", "node"), ("each", "def"), ("main.block1", "block")]
        block = state.frames[-1]
        assert block.args == {"n": i + 1}
        assert (block.line, block.col) == (9, 5)
        assert state.frames[1].args["visit"] == {"$function": "main.block1"}
    assert tl.state_at(len(tl) - 1).result == 6


def test_closures_are_functions_to_the_program() -> None:
    src = """
node main() {
  const f = \\x -> x
  return [typeof f, JSON.stringify({a: 1, f: f}), "${[1].map(\\x -> x + 1)}"]
}
"""
    m = Machine(compile_source(src, "t.agency"))
    assert list(m.run()) == ["function", '{"a":1}', "2"]
    assert isinstance(m.result, JSArray)


def test_a_trailing_block_binds_the_last_parameter_by_name() -> None:
    src = """
def row(gap = 0, align = "start", block = null) {
  return [gap, align, block(gap)]
}
node main() {
  return [row() as g { return g + 1 }, row(7) as g { return g }, row(align: "end") { return "b" }]
}
"""
    m = Machine(compile_source(src, "t.agency"))
    assert json.dumps(
        [list(x) for x in m.run()]  # type: ignore[union-attr]
    ) == json.dumps([[0, "start", 1], [7, "start", 7], [0, "end", "b"]])
