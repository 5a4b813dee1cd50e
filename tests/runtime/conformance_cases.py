"""Provides the conformance programs as test cases for the sweeps that run every one of them
(timeline equality, replay, resume): which cases exist, how to load one, how its interrupts are
answered. Imported by the test modules beside it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import AgencyError
from runtime.language.bytecode import CompiledProgram
from runtime.language.program import load_program
from runtime.runs.runner import RunConfig, decision_from, evaluate_input
from runtime.runs.testing import fetch_mocks_of

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"


def case_ids() -> list[tuple[str, int]]:
    """(suite file name, test index) of every test that is not skipped."""
    out = []
    for path in sorted(PROGRAMS.rglob("*.test.json")):
        try:
            suite = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        for i, test in enumerate(suite.get("tests") or []):
            if not test.get("skip"):
                out.append((path.relative_to(PROGRAMS).as_posix(), i))
    return out


def params(known: dict[str, str] | None = None) -> list[Any]:
    """The cases as pytest params; suites in `known` are strict xfails with that reason."""
    known = known or {}
    return [
        pytest.param(
            s,
            i,
            id=f"{s[:-10]}[{i}]",
            marks=[pytest.mark.xfail(strict=True, reason=known[s])] if s in known else [],
        )
        for s, i in case_ids()
    ]


@dataclass
class Case:
    test: dict[str, Any]
    program: CompiledProgram
    args: list[Any]
    named: dict[str, Any]
    fetch_mocks: list[Any] | None = None  # the suite's `fetchMocks`, `returnFile`s read

    def config(self, root: Path | str) -> RunConfig:
        """The run's configuration as `agency test` makes it, working in `root` (the simulated
        model when the test mocks none)."""
        test = self.test
        config = RunConfig(
            node=test.get("nodeName", "main"),
            args=self.args,
            named=self.named,
            mocks=test.get("llmMocks"),
            root=str(root),
            quiet=True,
            fetch_mocks=self.fetch_mocks,
        )
        if config.mocks is None:
            config.model_spec = "sim"
        return config

    def answers(self) -> Callable[[Any], Any]:
        """Answers interrupts with the test's `interruptHandlers`, in order, as `agency test`."""
        handlers = list(self.test.get("interruptHandlers") or [])

        def answer(pending: Any) -> Any:
            if not handlers:
                return None
            h = handlers.pop(0)
            return decision_from(h.get("action", "approve"), h.get("resolvedValue"))

        return answer


# Compiled programs by source path, per test process: the sweeps (replay, resume, timeline, …)
# each load every program, and compiling one (with the prelude) costs tens of milliseconds. A
# compiled program is never changed by running it (machines link it once, as `agency test` does
# for the tests of one suite), so the sweeps share one.
_COMPILED: dict[Path, CompiledProgram | AgencyError] = {}


def compiled(source: Path) -> CompiledProgram:
    """`load_program(source)`, compiled once per process (its error raised again each time)."""
    if source not in _COMPILED:
        try:
            _COMPILED[source] = load_program(source)
        except AgencyError as exc:
            _COMPILED[source] = exc
    got = _COMPILED[source]
    if isinstance(got, AgencyError):
        raise got
    return got


def load(suite: str, index: int) -> Case:
    """The case, or a pytest skip for a suite whose program or input does not compile."""
    path = PROGRAMS / suite
    spec = json.loads(path.read_text(encoding="utf-8"))
    test = spec["tests"][index]
    source = path.parent / (spec.get("sourceFile") or f"{path.name[: -len('.test.json')]}.agency")
    try:
        program = compiled(source)
        args, named = evaluate_input(test.get("input", "") or "")
    except AgencyError:
        pytest.skip("the program or its input does not compile (a syntax-error test)")
    mocks, problem = fetch_mocks_of(spec, test, path.parent)
    assert not problem, problem
    return Case(test, program, args, named, mocks)
