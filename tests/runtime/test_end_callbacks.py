"""The lifecycle callbacks that fire as a run winds down, whose effect a run's result cannot
show (they fire after it is known): `onNodeEnd` as a node falls off its end (not after `return`
or a transition, as in the reference), `onAgentEnd` once the run's last node returned, with the
entry node's name and the result; and `onTrace`, which the reference accepts but never fires."""

from __future__ import annotations

import json

import pytest

from runtime.language.program import compile_source
from runtime.llm.mock import MockModel
from runtime.vm.builtins import World
from runtime.vm.machine import Machine

HOOKS = """
callback("onNodeEnd") as e {
  print("node end", e.nodeName, e.data)
}
callback("onAgentEnd") as e {
  print("agent end", e.nodeName, JSON.stringify(e.result.data), e.result.messages.length)
}
callback("onTrace") as e {
  print("trace")
}
"""


def run(source: str, node: str, capsys: pytest.CaptureFixture[str]) -> tuple[object, list[str]]:
    m = Machine(compile_source(HOOKS + source), node, model=MockModel([]), world=World(quiet=False))
    m.run()
    return m.result, capsys.readouterr().out.splitlines()


def test_a_node_falling_off_its_end_fires_on_node_end_then_on_agent_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = 'node main() {\n  print("body")\n}\n'
    result, lines = run(source, "main", capsys)
    assert result is None
    assert lines == ["body", "node end main null", "agent end main null 0"]


def test_return_and_transition_skip_on_node_end_and_agent_end_names_the_entry_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = (
        "node start(n: number) {\n  goto double(n)\n}\n"
        "node double(n: number) {\n"
        '  const reply = llm("twice ${n}?")\n'
        "  return {twice: n * 2, reply: reply}\n}\n"
    )
    m = Machine(
        compile_source(HOOKS + source),
        "start",
        [4],
        model=MockModel([{"return": "eight"}]),
        world=World(quiet=False),
    )
    m.run()
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(json.dumps(m.result)) == {"twice": 8, "reply": "eight"}
    assert lines == ['agent end start {"twice":8,"reply":"eight"} 2']


def test_a_callback_registered_in_the_node_hears_its_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = (
        "node main() {\n"
        '  callback("onNodeEnd") as e {\n    print("inner", e.nodeName)\n  }\n'
        '  print("body")\n}\n'
    )
    _, lines = run(source, "main", capsys)
    assert lines == ["body", "inner main", "node end main null", "agent end main null 0"]


def test_a_run_paused_by_an_interrupt_has_not_ended(capsys: pytest.CaptureFixture[str]) -> None:
    source = 'node main() {\n  const ok = interrupt("go on?")\n  return "done"\n}\n'
    m = Machine(
        compile_source(HOOKS + source), "main", model=MockModel([]), world=World(quiet=False)
    )
    m.run()
    assert m.status == "interrupted"
    assert capsys.readouterr().out == ""
