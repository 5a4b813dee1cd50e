"""Provides `agency test`: running `*.test.json` suites (LANGUAGE.md §8)."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import AgencyError, AgencySyntaxError
from runtime.language.files import JSONTooDeep, loads_json, read_text
from runtime.language.program import load_program
from runtime.llm.mock import MockModel
from runtime.runs.runner import RunConfig, decision_from, drive, evaluate_input, new_machine
from runtime.vm.values import compiled_regex, from_plain, stringify
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


def _sorted_keys(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _sorted_keys(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [_sorted_keys(x) for x in v]
    return v


def same_output(got: str, expected: Any) -> bool:
    """Whether the result's JSON text `got` matches `expectedOutput`, as the reference runner
    compares them: both parsed, object keys in any order. An `expectedOutput` that is not JSON
    is compared as it is with the result's JSON text."""
    if isinstance(expected, str):
        try:
            want = json.loads(expected)
        except json.JSONDecodeError:
            return got == expected or got == stringify(expected)
    else:
        want = expected
    try:
        have = json.loads(got)
    except json.JSONDecodeError:
        return False
    norm = stringify(from_plain(_sorted_keys(want)))
    return stringify(from_plain(_sorted_keys(have))) == norm


def run_suite(path: Path) -> Iterator[TestOutcome]:
    label = str(path)
    try:
        suite = loads_json(read_text(path, "test file"))
    except JSONTooDeep as exc:
        yield TestOutcome(label, "<suite>", False, detail=exc.msg)
        return
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
    except AgencyError as exc:  # a FIFO, a device, a file over the size limit
        yield TestOutcome(label, "<suite>", False, detail=str(exc))
        return
    if isinstance(suite, dict) and "expectedCompileError" in suite and "tests" not in suite:
        yield compile_error_suite(path, suite)
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
    file_skip = suite.get("skip") or (suite.get("skipOnCI") and os.environ.get("CI"))
    unsupported = _unsupported(suite, SUITE_FIELDS, "the suite")
    for i, test in enumerate(suite["tests"]):
        if file_skip:
            yield TestOutcome(label, _title(test), True, skipped=True)
        elif unsupported:
            yield TestOutcome(label, _title(test), False, detail=unsupported)
        else:
            yield run_with_retries(label, program, suite, test, i)


# Fields of a suite and of a test case that the runner understands (the reference's set, and
# `realTimeSteps`);
# anything else fails the case with a message naming it.
SUITE_FIELDS = frozenset(
    {
        "tests",
        "sourceFile",
        "description",
        "skip",
        "skipOnCI",
        "skipReason",
        "defaultTimeoutMs",
        "fetchMocks",
    }
)
CASE_FIELDS = frozenset(
    {
        "nodeName",
        "input",
        "expectedOutput",
        "evaluationCriteria",
        "description",
        "interruptHandlers",
        "llmMocks",
        "useTestLLMProvider",
        "retry",
        "fakeClock",
        "argv",
        "timeoutMs",
        "skip",
        "skipReason",
        "fetchMocks",
        # Ours, not the reference's: the run's length in steps depends on real time (a time
        # guard over busy work trips where the wall clock says). `agency test` has nothing to
        # do with it; harnesses that compare two runs of the case (tests/runtime's snapshot
        # round trip) then compare their outcome but not their step counts.
        "realTimeSteps",
    }
)
# Fields we know but cannot honour: the case fails saying why.
CANNOT: dict[str, str] = {}


def _unsupported(where: dict[str, Any], known: frozenset[str], what: str) -> str:
    for key in where:
        if key in CANNOT:
            return f'{what} uses "{key}", which this runner cannot honour: {CANNOT[key]}'
        if key not in known:
            return f'{what} uses the test field "{key}", which this runner does not know'
    return ""


def compile_error_suite(path: Path, suite: dict[str, Any]) -> TestOutcome:
    """A file that must not compile: it passes when loading it fails with the expected text."""
    label = str(path)
    want = str(suite.get("expectedCompileError"))
    name = path.name[: -len(".test.json")] if path.name.endswith(".test.json") else path.stem
    source = path.parent / (suite.get("sourceFile") or f"{name}.agency")
    title = suite.get("description") or f"does not compile ({want})"
    try:
        load_program(source)
    except AgencySyntaxError as exc:
        text = exc.render()
        if want in text:
            return TestOutcome(label, title, True)
        return TestOutcome(label, title, False, detail=f"expected compile error {want}, got {text}")
    except AgencyError as exc:
        return TestOutcome(label, title, False, detail=f"expected compile error {want}, got {exc}")
    return TestOutcome(label, title, False, detail=f"expected compile error {want}; it compiled")


def _title(test: Any) -> str:
    if not isinstance(test, dict):
        return "<test>"
    node = test.get("nodeName", "main")
    text = test.get("input", "") or ""
    title = f"{node}({text})" if len(text) < 40 else f"{node}(…)"
    return str(test.get("description") or title)


def run_with_retries(
    label: str, program: Any, suite: dict[str, Any], test: dict[str, Any], index: int
) -> TestOutcome:
    """`retry: n` runs a failing case up to n more times; the last attempt's outcome counts."""
    retries = test.get("retry") or 0
    attempts = 1 + (int(retries) if isinstance(retries, (int, float)) and retries > 0 else 0)
    result = run_test(label, program, test, index, suite)
    for _ in range(attempts - 1):
        if result.passed:
            break
        result = run_test(label, program, test, index, suite)
    return result


_SUITE_SHAPE = (
    'a suite is {"sourceFile"?: "x.agency", "tests": [{"nodeName": "main", "input": "",'
    ' "expectedOutput": "…", "llmMocks"?: [...], "interruptHandlers"?: [...], "skip"?: true}]}'
)

_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "nodeName": (str,),
    "input": (str,),
    "description": (str,),
    "llmMocks": (list, dict),
    "interruptHandlers": (list,),
}


def suite_problem(suite: Any) -> str:
    """What is wrong with the shape of a parsed suite ("" if nothing), naming the test."""
    if not isinstance(suite, dict) or not isinstance(suite.get("tests"), list):
        return f'expected {{"tests": [...]}}; {_SUITE_SHAPE}'
    source = suite.get("sourceFile")
    if source is not None and (not isinstance(source, str) or not source.strip()):
        return f'"sourceFile" must be a file name, got {json.dumps(source)}'
    problem = _scalar_problem({"timeoutMs": suite.get("defaultTimeoutMs")}, "the suite")
    if problem:
        return problem.replace('"timeoutMs"', '"defaultTimeoutMs"')
    for i, test in enumerate(suite["tests"]):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            return f"{where} is {json.dumps(test)[:40]}, not an object; {_SUITE_SHAPE}"
        for key, types in _FIELD_TYPES.items():
            value = test.get(key)
            if value is not None and not isinstance(value, types):
                want = "a string" if types == (str,) else "a list"
                return f'{where}: "{key}" must be {want}, got {json.dumps(value)[:40]}'
        problem = _scalar_problem(test, where)
        if problem:
            return problem
        for j, handler in enumerate(test.get("interruptHandlers") or []):
            action = handler.get("action", "approve") if isinstance(handler, dict) else None
            if action not in ("approve", "reject", "resolve"):
                return (
                    f"{where}.interruptHandlers[{j}] must be "
                    '{"action": "approve" | "reject" | "resolve", "resolvedValue"?: …}, '
                    f"got {json.dumps(handler)[:40]}"
                )
        expected = test.get("expectedOutput")
        if isinstance(expected, str) and expected[:1] in ("[", "{"):
            try:
                loads_json(expected)
            except JSONTooDeep as exc:
                return f'{where}: "expectedOutput" is {exc.msg}'
            except ValueError:
                pass  # not JSON: compared as text
    return ""


MAX_RETRIES = 100  # `"retry": 1e18` on a failing case ran it until killed

_FLAGS = ("fakeClock", "useTestLLMProvider", "skip", "skipOnCI", "realTimeSteps")


def _scalar_problem(test: dict[str, Any], where: str) -> str:
    """What is wrong with a case's flags, numbers and lists of `_FIELD_TYPES`'s kind ("" if
    nothing): read as they were, a string flag was true, `"argv": 5` or `"evaluationCriteria":
    5` an internal error, a timeout of `"x"` or `-5` no timeout."""
    for key in _FLAGS:
        value = test.get(key)
        if value is not None and not isinstance(value, bool):
            return f'{where}: "{key}" must be true or false, got {json.dumps(value)[:40]}'
    retry = test.get("retry")
    if retry is not None and (type(retry) is not int or not 0 <= retry <= MAX_RETRIES):
        return (
            f'{where}: "retry" must be a whole number from 0 to {MAX_RETRIES}, '
            f"got {json.dumps(retry)[:40]}"
        )
    limit = test.get("timeoutMs")
    if limit is not None and (type(limit) not in (int, float) or not 0 < limit < float("inf")):
        return (
            f'{where}: "timeoutMs" must be a number of milliseconds above 0, '
            f"got {json.dumps(limit)[:40]}"
        )
    argv = test.get("argv")
    if argv is not None and (
        not isinstance(argv, list) or not all(isinstance(a, str) for a in argv)
    ):
        return f'{where}: "argv" must be a list of strings, got {json.dumps(argv)[:40]}'
    criteria = test.get("evaluationCriteria")
    if criteria is not None and (
        not isinstance(criteria, list) or not all(isinstance(c, dict) for c in criteria)
    ):
        return (
            f'{where}: "evaluationCriteria" must be a list of objects, '
            f"got {json.dumps(criteria)[:40]}"
        )
    return ""


def _mocks(test: dict[str, Any]) -> tuple[list[Any] | None, str]:
    """The case's scripted answers; an object of per-module queues is accepted when it holds
    one queue (or a `"*"` queue), as there is one module queue in this runtime."""
    mocks = test.get("llmMocks")
    if not isinstance(mocks, dict):
        return mocks, ""
    if "*" in mocks and isinstance(mocks["*"], list):
        return mocks["*"], ""
    if len(mocks) == 1 and isinstance(next(iter(mocks.values())), list):
        return next(iter(mocks.values())), ""
    return None, (
        '"llmMocks" as per-module queues is not supported with more than one queue; use one list'
    )


def fetch_mocks_of(
    suite: dict[str, Any], test: dict[str, Any], base: Path
) -> tuple[list[Any] | None, str]:
    """The HTTP answers of a case (`fetchMocks`: the case's first, then the suite's; None when
    neither declares any, so requests go to the network), each `returnFile` read (relative to
    the test file) into `return`."""
    if "fetchMocks" not in suite and "fetchMocks" not in test:
        return None, ""
    out: list[Any] = []
    for mock in [*(test.get("fetchMocks") or []), *(suite.get("fetchMocks") or [])]:
        where = f"fetchMocks[{len(out)}]"
        if not isinstance(mock, dict) or ("url" in mock) == ("urlPattern" in mock):
            return None, f'{where}: expected an object with one of "url" or "urlPattern"'
        if ("return" in mock) == ("returnFile" in mock):
            return None, f'{where}: set one of "return" or "returnFile"'
        for field in ("urlPattern", "bodyPattern"):
            if field in mock:
                if not isinstance(mock[field], str):
                    return None, f'{where}: "{field}" must be a string (a regex)'
                try:
                    compiled_regex(mock[field], "")
                except AgencyError as exc:
                    return None, f'{where}: "{field}": {exc}'
        if "returnFile" in mock:
            try:
                text = read_text(base / str(mock["returnFile"]), "fetch mock file")
            except (OSError, AgencyError) as exc:
                return None, f"{where}: cannot read returnFile {mock['returnFile']!r}: {exc}"
            mock = {k: v for k, v in mock.items() if k != "returnFile"} | {"return": text}
        out.append(mock)
    return out, ""


def project_memory(folder: Path) -> dict[str, Any] | None:
    """The `memory` settings of the agency.json beside a test file (None without one)."""
    path = folder / "agency.json"
    if not path.is_file():
        return None
    try:
        data = loads_json(read_text(path, "project file"))
    except (OSError, ValueError, AgencyError):
        return None
    memory = data.get("memory") if isinstance(data, dict) else None
    return memory if isinstance(memory, dict) else None


def _judged(test: dict[str, Any]) -> str:
    for c in test.get("evaluationCriteria") or []:
        if isinstance(c, dict) and c.get("type", "exact") != "exact":
            return (
                f'"evaluationCriteria" type {c.get("type")!r} needs a judge model; '
                'this runner only compares "exact"'
            )
    return ""


def scratch_dirs() -> list[str]:
    """The system's temporary directories (`tempfile.gettempdir()`, and `/tmp` where there is
    one): `agency test` lets a test change files there, as programs checked on the reference
    implementation do for their fixtures; `agency run` needs `--allow-write` for that."""
    dirs = {os.path.realpath(tempfile.gettempdir())}
    if os.path.isdir("/tmp"):
        dirs.add(os.path.realpath("/tmp"))
    return sorted(dirs)


def run_test(
    label: str,
    program: Any,
    test: dict[str, Any],
    index: int,
    suite: dict[str, Any] | None = None,
) -> TestOutcome:
    title = _title(test)
    if test.get("skip"):
        return TestOutcome(label, title, True, skipped=True)
    problem = _unsupported(test, CASE_FIELDS, "this test") or _judged(test)
    mocks, mock_problem = _mocks(test)
    problem = problem or mock_problem
    fetch_mocks: list[Any] | None = None
    if not problem:
        fetch_mocks, problem = fetch_mocks_of(suite or {}, test, Path(label).parent)
    if problem:
        return TestOutcome(label, title, False, detail=problem)
    try:
        args, named = evaluate_input(test.get("input", "") or "")
    except AgencyError as exc:
        return TestOutcome(label, title, False, detail=f"bad input: {exc}")
    handlers = list(test.get("interruptHandlers") or [])
    total = len(handlers)
    mismatches: list[str] = []

    def answer(pending: Any) -> Any:
        if not handlers:
            return _unlisted_answer(pending)
        h = handlers.pop(0)
        want = h.get("expectedMessage")
        if want is not None:
            got = pending.get("message") if isinstance(pending, dict) else None
            if got != want:
                n = total - len(handlers)
                mismatches.append(
                    f"interrupt {n}: expected message {json.dumps(want)}, got {json.dumps(got)}"
                )
        value = h.get("resolvedValue") if "resolvedValue" in h else h.get("value")
        return decision_from(h.get("action", "approve"), value)

    limit = test.get("timeoutMs") or (suite or {}).get("defaultTimeoutMs")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="agency-test-") as tmp:
        # Relative paths land in a fresh scratch directory, so tests leave no files behind and
        # do not see each other's; the test file's own folder may change too, as it may for
        # `agency run` started there (`write(name, content, __dirname)`), and so may the
        # system's temporary directory, where tests keep their fixtures (a sandbox, a probe
        # file): see scratch_dirs.
        config = RunConfig(node=node_of(test), args=args, named=named, mocks=mocks, root=tmp)
        config.writable = [str(Path(label).parent), *scratch_dirs()]
        config.fake_clock = bool(test.get("fakeClock"))
        config.argv = [str(a) for a in test.get("argv") or []]
        config.quiet = True
        model = None
        if test.get("useTestLLMProvider"):
            model = MockModel(mocks or [], synthetic_usage=True)
        elif config.mocks is None:
            config.model_spec = "sim"
        try:
            config.fetch_mocks = fetch_mocks
            config.memory = project_memory(Path(label).parent)
            machine = new_machine(program, config, model)
            drive(machine, answer)
        except AgencyError as exc:
            return TestOutcome(label, title, False, detail=str(exc))
    if mismatches:
        return TestOutcome(label, title, False, detail="; ".join(mismatches))
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
    if handlers:
        used = total - len(handlers)
        return TestOutcome(
            label,
            title,
            False,
            detail=f"expected {total} interrupts but only {used} occurred",
        )
    elapsed = (time.monotonic() - started) * 1000
    if isinstance(limit, (int, float)) and limit > 0 and elapsed > limit:
        return TestOutcome(
            label, title, False, detail=f'took {elapsed:.0f} ms, over "timeoutMs" {limit:g}'
        )
    got = stringify(machine.result)
    expected = test.get("expectedOutput")
    if same_output(got, expected):
        return TestOutcome(label, title, True)
    return TestOutcome(
        label, title, False, detail=f"expected {_canonical(expected)}\n     got {got}"
    )


def _unlisted_answer(pending: Any) -> Any:
    """A test with no `interruptHandlers` entry left still gets an answer for a guard's trip
    (`std::guard`): no, so the guard stops its work, as the reference's runner does."""
    if isinstance(pending, dict) and pending.get("effect") == "std::guard":
        return decision_from("reject", None)
    return None


def node_of(test: dict[str, Any]) -> str:
    return str(test.get("nodeName", "main"))
