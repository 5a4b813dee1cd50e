"""JSON from the user nested very deeply (`--args`, `--mock`, `--resolve`, checkpoint files,
`.test.json` suites, `JSON.parse`, the debugger's edit dialogs) is refused with a message that
names what was too deep and the limit, never Python's recursion error or a traceback.

Nesting of about 900 levels is the interesting case: `json.loads` still parses it (its own
limit is Python's recursion limit), and the walks after it (converting to Agency values,
recording, checkpointing) then failed at some random place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debugger.commands import parse_literal
from debugger.errors import SessionError
from runtime.language.files import (
    CHECKPOINT_MAX_DEPTH,
    MAX_JSON_DEPTH,
    JSONTooDeep,
    loads_json,
)

from .cli_helpers import agency, clean, plain_workdir

ECHO = "node main(x: any) {\n  print(x)\n  return x\n}\n"
DEEP = 900


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    plain_workdir(tmp_path, monkeypatch)
    (tmp_path / "echo.agency").write_text(ECHO)
    return tmp_path


# -- the reader ------------------------------------------------------------------------------


def test_the_limit_is_exact_and_says_where() -> None:
    assert loads_json(nested(MAX_JSON_DEPTH)) is not None
    with pytest.raises(JSONTooDeep) as caught:
        loads_json(" " + nested(MAX_JSON_DEPTH + 1))
    assert caught.value.msg == f"nested too deeply (limit {MAX_JSON_DEPTH} levels)"
    assert caught.value.pos == 1 + MAX_JSON_DEPTH  # the bracket that opens one level too many
    assert isinstance(caught.value, json.JSONDecodeError)  # every bad-JSON handler catches it


@pytest.mark.parametrize("depth", [DEEP, 100_000])
def test_far_too_deep_is_the_same_error(depth: int) -> None:
    # 100,000 levels is past json.loads's own limit (a RecursionError inside it)
    with pytest.raises(JSONTooDeep):
        loads_json(nested(depth))


def test_objects_count_and_brackets_in_strings_do_not() -> None:
    text = '{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(JSONTooDeep):
        loads_json(text)
    assert loads_json(json.dumps(["[" * 5000, '"\\[' * 10])) == ["[" * 5000, '"\\[' * 10]
    assert loads_json(nested(10), max_depth=10) is not None
    with pytest.raises(JSONTooDeep):
        loads_json(nested(11), max_depth=10)


# -- the commands ----------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [DEEP, 5000])
def test_args_nested_too_deeply_names_the_option(work: Path, depth: int) -> None:
    result = agency("run", "echo.agency", "--no-record", "--args", f"[{nested(depth)}]")
    clean(result, 2, f"--args: nested too deeply (limit {MAX_JSON_DEPTH} levels)")
    assert "recursion" not in result.output


def test_args_at_the_limit_runs(work: Path) -> None:
    # the outer array holds the positional arguments: x itself is one level less
    result = agency("run", "echo.agency", "--args", f"[{nested(MAX_JSON_DEPTH - 1)}]")
    clean(result, 0, nested(MAX_JSON_DEPTH - 1))


def test_debugger_args_nested_too_deeply(work: Path) -> None:
    result = agency("debugger", "echo.agency", "--args", f"[{nested(DEEP)}]")
    clean(result, 2, "--args: nested too deeply")


def test_mock_file_nested_too_deeply(work: Path) -> None:
    (work / "m.json").write_text(f'[{{"return": {nested(DEEP)}}}]')
    result = agency("run", "echo.agency", "--no-record", "--args", "[1]", "--mock", "m.json")
    clean(result, 2, "m.json: nested too deeply (limit")


def test_resolve_nested_too_deeply(work: Path) -> None:
    (work / "ask.agency").write_text(
        'node main() {\n  const v = interrupt("value?")\n  return v\n}\n'
    )
    agency("run", "ask.agency")  # waits on the interrupt: resumable
    result = agency("resume", "last", "--resolve", nested(DEEP))
    clean(result, 2, "--resolve: nested too deeply")


def _checkpoint_with(work: Path, depth: int) -> Path:
    """A real checkpoint of echo.agency inside main (x holds 1), x then replaced by an array
    nested `depth` deep."""
    clean(agency("run", "echo.agency", "--args", "[1]"), 0)
    clean(agency("export", "last:1", "-o", "cp.json"), 0)
    text = (work / "cp.json").read_text()
    data = json.loads(text)
    assert data["stack"] and data["stack"][0]["args"] == {"x": 1}, text
    data["stack"][0]["args"]["x"] = "HERE"
    deep = work / "deep.json"
    deep.write_text(json.dumps(data).replace('"HERE"', nested(depth)))
    return deep


@pytest.mark.parametrize("depth", [DEEP, 100_000])
def test_checkpoint_nested_too_deeply(work: Path, depth: int) -> None:
    deep = _checkpoint_with(work, depth)
    result = agency("run", "echo.agency", "--checkpoint", str(deep))
    clean(
        result, 2, f"deep.json: not a checkpoint: nested too deeply (limit {CHECKPOINT_MAX_DEPTH}"
    )


def test_checkpoint_with_a_value_at_the_value_limit_runs(work: Path) -> None:
    # a checkpoint wraps values a few levels deep: one holding a value as deep as --args may
    # be still opens
    deep = _checkpoint_with(work, MAX_JSON_DEPTH)
    clean(agency("run", "echo.agency", "--no-record", "--checkpoint", str(deep)), 0)


def test_suite_nested_too_deeply(work: Path) -> None:
    (work / "a.test.json").write_text(f'{{"tests": [{{"nodeName": "main", "x": {nested(DEEP)}}}]}}')
    clean(agency("test", "a.test.json"), 1, "FAIL", "nested too deeply (limit")


def test_expected_output_nested_too_deeply(work: Path) -> None:
    suite = {"tests": [{"nodeName": "main", "input": "1", "expectedOutput": nested(DEEP)}]}
    (work / "echo.test.json").write_text(json.dumps(suite))
    clean(agency("test", "echo.test.json"), 1, '"expectedOutput" is nested too deeply (limit')


def test_json_parse_in_a_program(work: Path) -> None:
    (work / "p.agency").write_text(
        "node main(s: string) {\n  return JSON.parse(s)\n}\n",
    )
    result = agency("run", "p.agency", "--no-record", "--args", json.dumps([nested(DEEP)]))
    clean(result, 1, "JSON.parse", "nested too deeply (limit")


def test_edit_dialog_literal_nested_too_deeply() -> None:
    with pytest.raises(SessionError, match="nested"):
        parse_literal(nested(DEEP))
