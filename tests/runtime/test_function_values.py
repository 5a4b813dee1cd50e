"""Derived function values (`f.partial()`, `.describe()`, `.rename()`, `.preapprove()`): what a
model is told about them as tools, and how they travel through checkpoints."""

from __future__ import annotations

import json
from typing import Any

from runtime.language.program import compile_source
from runtime.llm.mock import MockModel
from runtime.vm.builtins import World
from runtime.vm.checkpoints import snapshot
from runtime.vm.machine import Machine
from runtime.vm.rebuild import rebuild
from runtime.vm.values import BoundFunction

SOURCE = '''
def send(to: string, subject: string, body: string): string {
  """
  Sends a message.
  @param to - Who receives it
  @param subject - The subject line
  @param body - The text
  """
  return "ok"
}

node main() {
  const toBoss = send.partial(to: "boss").rename("mailBoss")
  const answer = llm("write", { tools: [toBoss, send.partial(to: "me", subject: "x").describe("Notes to self")] })
  return answer
}
'''


class Spy(MockModel):
    def __init__(self, entries: list[dict[str, Any]]) -> None:
        super().__init__(entries)
        self.seen: list[Any] = []

    def complete(self, messages: Any, tools: Any, schema: Any, params: Any) -> Any:
        self.seen.append(tools)
        return super().complete(messages, tools, schema, params)


def test_bound_parameters_are_hidden_from_the_tool_schema_and_docstring() -> None:
    model = Spy([{"return": "fine"}])
    m = Machine(compile_source(SOURCE), "main", model=model, world=World(quiet=True))
    assert m.run() == "fine"
    boss, notes = model.seen[0]
    assert boss.name == "mailBoss"
    assert list(boss.parameters["properties"]) == ["subject", "body"]
    assert boss.parameters["required"] == ["subject", "body"]
    assert "@param to" not in boss.description and "@param subject" in boss.description
    assert notes.name == "send" and notes.description == "Notes to self"
    assert list(notes.parameters["properties"]) == ["body"]


def test_a_derived_function_round_trips_through_a_snapshot() -> None:
    source = """
def add(a: number, b: number): number { return a + b }
node main() {
  const xs = [1]
  const f = add.partial(a: xs).preapprove().describe("d").rename("r")
  const g = f
  checkpoint()
  return [f == g, f(2)]
}
"""
    program = compile_source(source)
    m = Machine(program, "main", model=MockModel([]), world=World(quiet=True))
    m.run_until(lambda mm: any("f" in fr.locals for fr in mm.frames) and mm.step_index > 3)
    data = json.loads(json.dumps(snapshot(m)))
    copy = rebuild(program, data, model=MockModel([]), world=World(quiet=True))
    frame = next(fr for fr in copy.frames if "f" in fr.locals)
    f = frame.locals["f"]
    assert type(f) is BoundFunction
    assert (f.base.name, f.description, f.tool_name, f.preapprove) == ("add", "d", "r", True)
    assert f.bound["a"] is frame.locals["xs"]  # aliasing survives
