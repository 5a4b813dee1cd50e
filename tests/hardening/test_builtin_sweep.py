"""Issue 11, items 10 and 12: hostile values never reach Python's own errors, and the machine's
own bugs are not passed off as the program's errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.language.program import compile_source
from runtime.vm import builtins
from runtime.vm.machine import Machine
from runtime.vm.writelog import FAILED, HALTED
from tests.hardening import sweep

AGENCY = [sys.executable, "-c", "from debugger.cli import main; main()"]


def test_every_builtin_and_method_takes_hostile_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    attempts, defects = sweep.sweep()
    assert attempts > 50_000
    assert defects == [], f"{len(defects)} of {attempts}:\n" + "\n".join(defects[:40])


def run(cwd: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    (cwd / "p.agency").write_text(source, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    return subprocess.run(
        [*AGENCY, "run", "--no-record", "p.agency", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def body(*lines: str) -> str:
    return "node main() {\n" + "".join(f"  {line}\n" for line in lines) + "}\n"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (body("print((1.5).toFixed(1000))"), "p.agency:2:3: error: toFixed() digits must be"),
        (body("print(Math.floor())"), "NaN"),
        (body('print(JSON.parse("1" + "0".repeat(5000)))'), "Infinity"),
        (body('print("a\\ud800b")'), "a\ufffdb"),
        (
            body(
                'write("s.txt", "\\ud800") with approve',
                'const t = read("s.txt") catch "" with approve',
                "print(t)",
            ),
            "\ufffd",
        ),
        (
            body('const r = read("a\\u0000b") with approve', "print(r.error)"),
            "path 'a\\x00b' holds a NUL",
        ),
        (
            body("print(range(Infinity))"),
            "p.agency:2:3: error: range(): an array of infinitely many elements is longer than",
        ),
        (body('print("ab".padStart(Infinity))'), "p.agency:2:3: error: a string of"),
        (body('print("ab".repeat(-1))'), "p.agency:2:3: error: repeat() count must be"),
        (body("print(2 ** 100000000 > 1)"), "true"),
        (
            'import { f } from "a\\0b.agency"\n' + body("f()"),
            "p.agency:1:1: cannot import 'a\\x00b.agency': a file name cannot hold a NUL",
        ),
    ],
)
def test_hostile_values_in_programs(tmp_path: Path, source: str, expected: str) -> None:
    proc = run(tmp_path, source)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 70, out
    assert "internal error" not in out and "Traceback" not in out
    assert expected in out, out


def test_five_thousand_digit_numbers_in_args_and_mocks(tmp_path: Path) -> None:
    digits = "1" + "0" * 5000
    proc = run(tmp_path, "node main(x) {\n  print(x)\n}\n", "--args", f"[{digits}]")
    assert proc.returncode == 0 and proc.stdout.strip() == "Infinity", proc.stderr
    (tmp_path / "m.json").write_text(f'[{{"return": {digits}}}]')
    proc = run(tmp_path, body('const x: number = llm("n?")', "print(x)"), "--mock", "m.json")
    assert proc.returncode != 70 and "internal error" not in proc.stderr, proc.stderr


def test_a_lone_surrogate_reaches_the_model_as_well_formed_text(tmp_path: Path) -> None:
    proc = run(tmp_path, body('print(llm("a\\ud800"))'), "--model", "sim")
    assert proc.returncode == 0, proc.stderr


# -- item 12: only builtins' Python errors are Agency errors --------------------------------------


def machine(source: str) -> Machine:
    program = compile_source(source, "t.agency")
    return Machine(program, world=builtins.World(quiet=True))


def test_a_builtins_python_error_is_an_agency_error_at_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(m: Machine, args: list[object], named: dict[str, object]) -> object:
        return {}["missing"]

    monkeypatch.setitem(builtins.BUILTINS, "print", broken)
    m = machine(body("print(1)"))
    m.run()
    assert m.status == FAILED and m.error is not None
    assert m.error.message == "print(): cannot use these arguments"
    assert m.error.span is not None and m.error.span.line == 2


def test_a_python_error_in_the_machine_itself_is_not_a_program_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = machine(body("const xs = [1]", "print(xs[0])"))

    def broken(obj: object, key: object) -> object:
        raise KeyError("a bug in the machine")

    monkeypatch.setattr("runtime.vm.machine.get_index", broken)
    with pytest.raises(KeyError):
        m.run()


def test_a_program_can_still_catch_what_a_builtin_refuses() -> None:
    m = machine(body('const r = try "ab".repeat(-1)', "return isFailure(r)"))
    m.run()
    assert m.status == HALTED and m.result is True, m.error
