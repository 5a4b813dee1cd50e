"""`std::` imports (bundled modules in runtime/language/std/) and the `agency test` runner's
reference fields (fakeClock, useTestLLMProvider, expectedMessage, retry, key order, fields it
cannot honour, expectedCompileError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.program import STD_DIR, compile_source
from runtime.runs.testing import run_suite


def _suite(tmp_path: Path, source: str, tests: list[dict[str, Any]], **extra: Any) -> list[Any]:
    (tmp_path / "prog.agency").write_text(source)
    path = tmp_path / "prog.test.json"
    path.write_text(json.dumps({"tests": tests, **extra}))
    return list(run_suite(path))


def _case(expected: str, **fields: Any) -> dict[str, Any]:
    return {"nodeName": "main", "input": "", "expectedOutput": expected, **fields}


def test_every_std_module_compiles_and_says_what_it_provides() -> None:
    for path in sorted(STD_DIR.rglob("*.agency")):
        text = path.read_text()
        assert text.startswith("// std::"), f"{path.name} has no header naming its module"
        module = path.relative_to(STD_DIR).with_suffix("").as_posix()
        compile_source(f'import "std::{module}"\nnode main() {{ return 1 }}\n', "main.agency")


def test_an_unknown_module_or_name_is_a_located_error() -> None:
    source = 'node main() { return 1 }\nimport { nope } from "std::math"\nimport { x } from "std::nope"\n'
    with pytest.raises(AgencySyntaxError) as err:
        compile_source(source, "main.agency")
    text = err.value.render()
    assert "main.agency:2:1: 'std::math' has no `nope` to import" in text
    assert "main.agency:3:1: there is no standard library module 'std::nope'" in text
    assert "^^^" in text


def test_a_module_name_cannot_leave_the_std_folder() -> None:
    with pytest.raises(AgencySyntaxError, match="no standard library module"):
        compile_source('import { x } from "std::../prelude"\nnode main() { return 1 }\n')


def test_a_user_definition_wins_over_a_std_function_it_did_not_import(tmp_path: Path) -> None:
    source = (
        'import { ls } from "std::shell"\n'
        'def exists(x) { return "mine" }\n'
        "node main() { return exists(1) }\n"
    )
    [out] = _suite(tmp_path, source, [_case('"mine"')])
    assert out.passed, out.detail


def test_importing_a_std_function_and_defining_it_too_is_an_error() -> None:
    source = (
        'import { round } from "std::math"\ndef round(x) { return x }\nnode main() { return 1 }\n'
    )
    with pytest.raises(AgencySyntaxError, match="`round` is defined twice"):
        compile_source(source, "main.agency")


def test_the_std_files_are_package_data() -> None:
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"std/*.agency"' in text


FAKE = """import { now, elapsedTime } from "std::date"
import test { _advanceTime } from "std::date"
node main() {
  const start = now()
  _advanceTime(65000)
  return [elapsedTime(start), now() - start]
}
"""


def test_fake_clock(tmp_path: Path) -> None:
    [ok, without] = _suite(
        tmp_path, FAKE, [_case('["1m 5s",65000]', fakeClock=True), _case('["1m 5s",65000]')]
    )
    assert ok.passed, ok.detail
    # Without a fake clock `_advanceTime` fails (its def returns a failure) and time is real.
    assert not without.passed and 'got ["0s",' in without.detail


def test_the_test_provider_charges_each_call(tmp_path: Path) -> None:
    source = (
        'import { getCost, getTokens } from "std::thread"\n'
        'node main() { llm("a")\n llm("b")\n return [getCost() == 0.000004, getTokens()] }\n'
    )
    mocks = [{"return": "x"}, {"return": "y"}]
    [charged, free] = _suite(
        tmp_path,
        source,
        [
            _case("[true,4]", useTestLLMProvider=True, llmMocks=mocks),
            _case("[false,0]", llmMocks=mocks),
        ],
    )
    assert charged.passed, charged.detail
    assert free.passed, free.detail


def test_expected_message_and_approve_value(tmp_path: Path) -> None:
    source = 'node main() { const v = interrupt("go?")\n return v }\n'
    [ok, wrong, leftover] = _suite(
        tmp_path,
        source,
        [
            _case(
                "7", interruptHandlers=[{"action": "approve", "expectedMessage": "go?", "value": 7}]
            ),
            _case(
                "7",
                interruptHandlers=[{"action": "approve", "expectedMessage": "stop?", "value": 7}],
            ),
            _case("true", interruptHandlers=[{"action": "approve"}, {"action": "approve"}]),
        ],
    )
    assert ok.passed, ok.detail
    assert not wrong.passed and 'expected message "stop?", got "go?"' in wrong.detail
    assert not leftover.passed and "expected 2 interrupts but only 1 occurred" in leftover.detail


def test_output_comparison_ignores_key_order(tmp_path: Path) -> None:
    source = "node main() { return {b: 1, a: [{d: 2, c: 3}]} }\n"
    [same, other] = _suite(
        tmp_path,
        source,
        [_case('{"a":[{"c":3,"d":2}],"b":1}'), _case('{"a":[{"c":3,"d":4}],"b":1}')],
    )
    assert same.passed, same.detail
    assert not other.passed


def test_unknown_or_unhonoured_fields_fail_naming_the_field(tmp_path: Path) -> None:
    source = "node main() { return 1 }\n"
    [argv, unknown, judged, bad_mock, no_file] = _suite(
        tmp_path,
        source,
        [
            _case("1", argv=["--x"]),
            _case("1", frobnicate=True),
            _case("1", evaluationCriteria=[{"type": "llmJudge", "judgePrompt": "ok?"}]),
            _case("1", fetchMocks=[{"url": "https://a.test"}]),
            _case("1", fetchMocks=[{"url": "https://a.test", "returnFile": "absent.html"}]),
        ],
    )
    assert argv.passed  # `"argv"` is honoured now (std::args reads it)
    assert not bad_mock.passed and 'fetchMocks[0]: set one of "return"' in bad_mock.detail
    assert not no_file.passed and "cannot read returnFile 'absent.html'" in no_file.detail
    assert not unknown.passed and '"frobnicate"' in unknown.detail
    assert not judged.passed and "llmJudge" in judged.detail


def test_retry_reruns_a_failing_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The process environment outlives a case: each attempt counts one more.
    monkeypatch.setenv("AGENCY_RETRY_COUNT", "0")
    source = (
        'import { env, setEnv } from "std::system"\n'
        "node main() {\n"
        '  const n = parseInt(env("AGENCY_RETRY_COUNT")) + 1\n'
        '  setEnv("AGENCY_RETRY_COUNT", "" + n) with approve\n'
        "  return n\n"
        "}\n"
    )
    [passed, failed] = _suite(tmp_path, source, [_case("3", retry=2), _case("1", retry=1)])
    assert passed.passed, passed.detail
    assert not failed.passed and "expected 1" in failed.detail


def test_skip_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    outs = _suite(tmp_path, "node main() { return 1 }\n", [_case("2")], skipOnCI=True)
    assert [o.skipped for o in outs] == [True]


def test_expected_compile_error(tmp_path: Path) -> None:
    (tmp_path / "bad.agency").write_text("node main( { }\n")
    path = tmp_path / "bad.test.json"
    path.write_text(json.dumps({"expectedCompileError": "expected"}))
    [out] = list(run_suite(path))
    assert out.passed, out.detail
    path.write_text(json.dumps({"expectedCompileError": "AG1234"}))
    [out] = list(run_suite(path))
    assert not out.passed and "AG1234" in out.detail
