"""Provides `agency test`: running `*.test.json` suites (LANGUAGE.md §8)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import AgencyError, AgencySyntaxError
from runtime.language.program import load_program
from runtime.runs.runner import RunConfig, decision_from, drive, evaluate_input, new_machine
from runtime.vm.values import from_plain, stringify
from runtime.vm.writelog import HALTED, INTERRUPTED


@dataclass
class TestOutcome:
    suite: str
    name: str
    passed: bool
    skipped: bool = False
    detail: str = ""


def find_suites(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(path.rglob("*.test.json")))
        elif path.suffix == ".agency":
            candidate = path.with_suffix(".test.json")
            if candidate.exists():
                out.append(candidate)
            else:
                raise AgencyError(f"{p}: no test file {candidate.name} beside it")
        elif path.exists():
            out.append(path)
        else:
            raise AgencyError(f"{p}: no such file or directory")
    return out


def _canonical(expected: Any) -> str:
    """`expectedOutput` written the way `JSON.stringify` writes the result (`1e-7`, `85`)."""
    if isinstance(expected, str):
        try:
            return stringify(from_plain(json.loads(expected)))
        except json.JSONDecodeError:
            return stringify(expected)
    return stringify(from_plain(expected))


def run_suite(path: Path) -> Iterator[TestOutcome]:
    label = str(path)
    try:
        suite = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        detail = f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        yield TestOutcome(label, "<suite>", False, detail=detail)
        return
    except UnicodeDecodeError:
        yield TestOutcome(label, "<suite>", False, detail="not UTF-8 text (expected JSON)")
        return
    except OSError as exc:
        detail = f"cannot read test file: {exc.strerror or exc}"
        yield TestOutcome(label, "<suite>", False, detail=detail)
        return
    problem = suite_problem(suite)
    if problem:
        yield TestOutcome(label, "<suite>", False, detail=problem)
        return
    name = path.name[: -len(".test.json")] if path.name.endswith(".test.json") else path.stem
    source = path.parent / (suite.get("sourceFile") or f"{name}.agency")
    try:
        program = load_program(source)
    except AgencySyntaxError as exc:
        yield TestOutcome(label, "<suite>", False, detail=exc.render())
        return
    except AgencyError as exc:
        hint = "" if suite.get("sourceFile") else ' (name another one with "sourceFile")'
        yield TestOutcome(label, "<suite>", False, detail=f"{exc}{hint}")
        return
    for i, test in enumerate(suite["tests"]):
        yield run_test(label, program, test, i)


_SUITE_SHAPE = (
    'a suite is {"sourceFile"?: "x.agency", "tests": [{"nodeName": "main", "input": "",'
    ' "expectedOutput": "…", "llmMocks"?: [...], "interruptHandlers"?: [...], "skip"?: true}]}'
)

_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "nodeName": (str,),
    "input": (str,),
    "description": (str,),
    "llmMocks": (list,),
    "interruptHandlers": (list,),
}


def suite_problem(suite: Any) -> str:
    """What is wrong with the shape of a parsed suite ("" if nothing), naming the test."""
    if not isinstance(suite, dict) or not isinstance(suite.get("tests"), list):
        return f'expected {{"tests": [...]}}; {_SUITE_SHAPE}'
    source = suite.get("sourceFile")
    if source is not None and (not isinstance(source, str) or not source.strip()):
        return f'"sourceFile" must be a file name, got {json.dumps(source)}'
    for i, test in enumerate(suite["tests"]):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            return f"{where} is {json.dumps(test)[:40]}, not an object; {_SUITE_SHAPE}"
        for key, types in _FIELD_TYPES.items():
            value = test.get(key)
            if value is not None and not isinstance(value, types):
                want = "a string" if types == (str,) else "a list"
                return f'{where}: "{key}" must be {want}, got {json.dumps(value)[:40]}'
        for j, handler in enumerate(test.get("interruptHandlers") or []):
            action = handler.get("action", "approve") if isinstance(handler, dict) else None
            if action not in ("approve", "reject", "resolve"):
                return (
                    f"{where}.interruptHandlers[{j}] must be "
                    '{"action": "approve" | "reject" | "resolve", "resolvedValue"?: …}, '
                    f"got {json.dumps(handler)[:40]}"
                )
    return ""


def run_test(label: str, program: Any, test: dict[str, Any], index: int) -> TestOutcome:
    node = test.get("nodeName", "main")
    text = test.get("input", "") or ""
    title = f"{node}({text})" if len(text) < 40 else f"{node}(…)"
    title = test.get("description") or title
    if test.get("skip"):
        return TestOutcome(label, title, True, skipped=True)
    try:
        args, named = evaluate_input(text)
    except AgencyError as exc:
        return TestOutcome(label, title, False, detail=f"bad input: {exc}")
    handlers = list(test.get("interruptHandlers") or [])

    def answer(pending: Any) -> Any:
        if not handlers:
            return None
        h = handlers.pop(0)
        return decision_from(h.get("action", "approve"), h.get("resolvedValue"))

    with tempfile.TemporaryDirectory(prefix="agency-test-") as tmp:
        config = RunConfig(
            node=node, args=args, named=named, mocks=test.get("llmMocks"), root=tmp, quiet=True
        )
        if config.mocks is None:
            config.model_spec = "sim"
        try:
            machine = new_machine(program, config)
            drive(machine, answer)
        except AgencyError as exc:
            return TestOutcome(label, title, False, detail=str(exc))
    if machine.status == INTERRUPTED:
        pending = json.dumps(machine.pending, ensure_ascii=False, default=str)
        return TestOutcome(
            label,
            title,
            False,
            detail=f"unanswered interrupt: {pending} (add an entry to interruptHandlers)",
        )
    if machine.status != HALTED:
        err = machine.error.render(program.source) if machine.error else machine.status
        return TestOutcome(label, title, False, detail=f"run failed: {err}")
    got = stringify(machine.result)
    expected = _canonical(test.get("expectedOutput"))
    if got == expected:
        return TestOutcome(label, title, True)
    return TestOutcome(label, title, False, detail=f"expected {expected}\n     got {got}")
