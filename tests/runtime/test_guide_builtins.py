"""Builtins the reference's guide documents whose effect is printed output: `printJSON` called
with its parameter by name, and `color`'s codes reaching the terminal through `print`."""

from __future__ import annotations

import pytest

from runtime.language.program import compile_source
from runtime.llm.mock import MockModel
from runtime.vm.builtins import World
from runtime.vm.machine import Machine


def printed(source: str, capsys: pytest.CaptureFixture[str]) -> str:
    m = Machine(compile_source(source), "main", model=MockModel([]), world=World(quiet=False))
    m.run()
    return capsys.readouterr().out


def test_print_json_takes_its_object_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    source = "node main() {\n  printJSON(obj: {a: [1]})\n  printJSON({b: 2}, highlight: false)\n}\n"
    assert printed(source, capsys) == '{\n  "a": [\n    1\n  ]\n}\n{\n  "b": 2\n}\n'


def test_color_codes_reach_the_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    source = 'node main() {\n  print(color.red("no"), color.bold.green("yes"))\n}\n'
    assert printed(source, capsys) == "\x1b[31mno\x1b[0m \x1b[1m\x1b[32myes\x1b[0m\n"
