"""Bad checkpoint files are refused clearly: by `agency run --checkpoint` and by `restore(obj)`.

A checkpoint file is untrusted input (DESIGN.md §5). Through the CLI every problem must give
exactly one line on stderr starting with `agency:` that names the file and says what is wrong,
a non-zero exit and no traceback; the program must not run. Inside a program, `restore(obj)`
with the same problems makes the enclosing def return a failure (LANGUAGE.md §5, §6).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from runtime.errors import AgencyError, CheckpointFormatError
from runtime.language.program import compile_source, load_program
from runtime.llm.mock import MockModel
from runtime.vm.builtins import World
from runtime.vm.checkpoint_reading import load_file
from runtime.vm.machine import Machine
from runtime.vm.rebuild import rebuild
from runtime.vm.values import JSObject, from_plain, stringify
from runtime.vm.writelog import HALTED

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """\
let g = 5

def work(x: number) {
  let y = x * 2
  const cp = checkpoint()
  y++
  g++
  if (cp == 0) {
    saveToDisk(getCheckpoint(cp), "cp.json")
    return -1
  }
  return y
}

def tryRestore(path: string) {
  restore(loadFromDisk(path))
  return "not restored"
}

def tryRestoreValue(value) {
  restore(value)
  return "not restored"
}

node main() {
  const total = 100 + work(20)
  if (total < 100) {
    return "saved"
  }
  return total
}

node check(path: string) {
  const r = tryRestore(path)
  return {failed: isFailure(r), error: r.error}
}

node checkValue(value) {
  const r = tryRestoreValue(value)
  return {failed: isFailure(r), error: r.error}
}
"""

OTHER = 'node main() {\n  const cp = checkpoint()\n  saveToDisk(getCheckpoint(cp), "cp.json")\n}\n'


def _run(program: Any, root: Path, node: str = "main", args: list[Any] | None = None) -> Machine:
    m = Machine(program, node, args or [], model=MockModel([]), world=World(root=root, quiet=True))
    m.run()
    return m


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """tmp_path with prog.agency, its checkpoint cp.json, and other.agency with other.json."""
    (tmp_path / "prog.agency").write_text(PROGRAM, encoding="utf-8")
    m = _run(load_program(tmp_path / "prog.agency"), tmp_path)
    assert m.status == HALTED and stringify(m.result) == '"saved"'
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    (other_dir / "other.agency").write_text(OTHER, encoding="utf-8")
    _run(load_program(other_dir / "other.agency"), other_dir)
    (other_dir / "cp.json").rename(tmp_path / "other.json")
    return tmp_path


def _edit(fn: Callable[[dict[str, Any]], Any]) -> Callable[[Path], str]:
    """A case that writes bad.json: cp.json changed by `fn`."""

    def make(d: Path) -> str:
        data = json.loads((d / "cp.json").read_text(encoding="utf-8"))
        fn(data)
        (d / "bad.json").write_text(json.dumps(data), encoding="utf-8")
        return "bad.json"

    return make


def _text(fn: Callable[[str], str | bytes]) -> Callable[[Path], str]:
    """A case that writes bad.json: cp.json's text changed by `fn`."""

    def make(d: Path) -> str:
        out = fn((d / "cp.json").read_text(encoding="utf-8"))
        if isinstance(out, bytes):
            (d / "bad.json").write_bytes(out)
        else:
            (d / "bad.json").write_text(out, encoding="utf-8")
        return "bad.json"

    return make


def _directory(d: Path) -> str:
    (d / "adir").mkdir()
    return "adir"


@dataclass(frozen=True)
class Bad:
    ident: str
    make: Callable[[Path], str]
    words: tuple[str, ...]  # the error line mentions each (any of the `|` alternatives)
    json_ok: bool = True  # the file is valid JSON (so `restore(loadFromDisk(f))` reaches restore)
    restore_words: tuple[str, ...] | None = (
        None  # what restore()'s failure mentions, if not `words`
    )


def _pop_frame_field(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda d: d["stack"][-1].pop(key)


BAD = [
    Bad(
        "malformed_json",
        _text(lambda t: t.replace('"stack":', '"stack"', 1)),
        ("malformed", "JSON"),
        False,
    ),
    Bad(
        "truncated_half", _text(lambda t: t[: len(t) // 2]), ("truncated|malformed", "JSON"), False
    ),
    Bad("truncated_end", _text(lambda t: t.rstrip()[:-1]), ("truncated", "JSON"), False),
    Bad("empty_file", _text(lambda t: ""), ("empty|truncated",), False),
    Bad("binary_file", _text(lambda t: bytes(range(256)) * 4), ("not a checkpoint|UTF-8",), False),
    Bad(
        "json_array",
        _text(lambda t: "[1, 2, 3]"),
        ("not a checkpoint",),
        restore_words=("expected a checkpoint",),
    ),
    Bad("wrong_format", _edit(lambda d: d.update(format="other-tool")), ("format", "other-tool")),
    Bad("no_format", _edit(lambda d: d.pop("format")), ("format",)),
    Bad("wrong_version", _edit(lambda d: d.update(version=99)), ("version", "99")),
    Bad("version_as_text", _edit(lambda d: d.update(version="1")), ("version",)),
    Bad("missing_stack", _edit(lambda d: d.pop("stack")), ("`stack`",)),
    Bad("missing_globals", _edit(lambda d: d.pop("globals")), ("`globals`",)),
    Bad("missing_source", _edit(lambda d: d.pop("source")), ("`source`",)),
    Bad("missing_threads", _edit(lambda d: d.pop("threads")), ("`threads`",)),
    Bad("stack_not_a_list", _edit(lambda d: d.update(stack={"scope": "main"})), ("`stack`",)),
    Bad("empty_stack", _edit(lambda d: d.update(stack=[])), ("stack", "empty")),
    Bad("frame_without_position", _edit(_pop_frame_field("position")), ("position", "frame")),
    Bad("frame_without_scope", _edit(_pop_frame_field("scope")), ("scope", "frame")),
    Bad(
        "frame_in_unknown_scope",
        _edit(lambda d: d["stack"][-1].update(scope="noSuchDef")),
        ("noSuchDef", "lacks"),
    ),
    Bad(
        "position_outside_code",
        _edit(lambda d: d["stack"][-1]["position"].update(pc=10**6)),
        ("position", "outside"),
    ),
    Bad("locals_not_an_object", _edit(lambda d: d["stack"][-1].update(locals=[1])), ("`locals`",)),
    Bad(
        "wrong_source_hash",
        _edit(lambda d: d["source"].update(sha256="0" * 64)),
        ("same source", "prog.agency"),
    ),
    Bad("another_program", lambda d: "other.json", ("same source", "other.agency", "prog.agency")),
]
# Damage inside frames, values and threads: the loader decodes everything once, so each is one
# clear line too (these once escaped as Python exceptions).
DANGLING = Bad(
    "dangling_heap_reference", _edit(lambda d: d["globals"].update(g={"$ref": 42})), ("heap", "42")
)
DEEP = [
    Bad("frame_stack_not_a_list", _edit(lambda d: d["stack"][-1].update(stack=5)), ("stack",)),
    Bad("frame_traps_malformed", _edit(lambda d: d["stack"][-1].update(traps=[[1]])), ("traps",)),
    Bad("frame_entry_not_an_object", _edit(lambda d: d["stack"][-1].update(entry=[1])), ("entry",)),
    Bad("step_not_a_number", _edit(lambda d: d.update(step="x")), ("step",)),
    Bad(
        "bad_object_value", _edit(lambda d: d["globals"].update(g={"$object": [[1]]})), ("$object",)
    ),
    Bad("threads_not_an_object", _edit(lambda d: d["threads"].update(threads=5)), ("threads",)),
]
CLI_ONLY = [
    Bad("nonexistent_path", lambda d: "missing/cp.json", ("no such",), False),
]


def _params(cases: list[Bad], marks: list[Any] | None = None) -> list[Any]:
    return [pytest.param(c, id=c.ident, marks=marks or []) for c in cases]


def _cli_params() -> list[Any]:
    return (
        _params(BAD + CLI_ONLY)
        + _params(DEEP, [])
        + [
            pytest.param(
                DANGLING,
                id=DANGLING.ident,
            ),
            pytest.param(
                Bad("directory", _directory, ("directory",), False),
                id="directory",
            ),
        ]
    )


def _mentions(line: str, words: tuple[str, ...]) -> None:
    for word in words:
        assert any(alt.lower() in line.lower() for alt in word.split("|")), (
            f"the error should mention {word!r}: {line}"
        )


def agency(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("AGENCY_MODEL", None)
    env["AGENCY_LLM_MOCKS"] = "[]"  # scripted (empty) answers: no sim banner on stderr
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", "from debugger.cli import main; main()", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


# -- through the CLI ---------------------------------------------------------------------------


def test_good_checkpoint_runs(work: Path) -> None:
    """The baseline every bad case is a variation of."""
    proc = agency(work, "run", "prog.agency", "--checkpoint", "cp.json", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["141"]
    # `agency run` records by default and says so on stderr; nothing else may be there.
    noise = [ln for ln in proc.stderr.splitlines() if not ln.startswith("agency: recording run")]
    assert noise == []


@pytest.mark.parametrize("bad", _cli_params())
def test_cli_refuses_bad_checkpoint(bad: Bad, work: Path) -> None:
    arg = bad.make(work)
    proc = agency(work, "run", "prog.agency", "--checkpoint", arg, "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    # Non-zero, and the checkpoint problems' own code, distinct from a program's failure (1).
    assert proc.returncode == CheckpointFormatError.exit_code != 0
    assert proc.stdout == "", "the program must not run"
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{proc.stderr}"
    line = lines[0]
    assert line.startswith("agency:"), line
    assert Path(arg).name in line, f"the error should name the file {arg}: {line}"
    _mentions(line, bad.words)


# -- load_file, in process: one CheckpointFormatError per problem ------------------------------


@pytest.mark.parametrize("bad", _params([*BAD, *CLI_ONLY, DANGLING]))
def test_load_file_raises_one_clear_error(bad: Bad, work: Path) -> None:
    program = load_program(work / "prog.agency")
    arg = bad.make(work)
    with pytest.raises(CheckpointFormatError) as info:
        data = load_file(str(work / arg), program)
        rebuild(program, data, model=MockModel([]), world=World(root=work, quiet=True))
    message = str(info.value)
    assert "\n" not in message
    _mentions(message, bad.words)


# -- restore(obj) inside a def: the def returns a failure ----------------------------------------


def _check(work: Path, arg: str) -> Machine:
    return _run(load_program(work / "prog.agency"), work, "check", [arg])


def test_restore_of_good_file_restores(work: Path) -> None:
    m = _check(work, "cp.json")
    # Restored into work() in main's frames; this run took no checkpoint, so the re-entered
    # checkpoint() hands out id 0 again, saves and returns -1: the run ends in main.
    assert m.status == HALTED, m.error and m.error.message
    assert stringify(m.result) == '"saved"'


@pytest.mark.parametrize(
    "bad",
    _params(BAD)  # DANGLING: see the test below
    # `step` is informational to restore() (only a rebuilt machine reads it): not a problem there.
    + _params(
        [b for b in DEEP if b.ident != "step_not_a_number"],
        [],
    ),
)
def test_restore_in_def_returns_failure(bad: Bad, work: Path) -> None:
    arg = bad.make(work)
    m = _check(work, arg)
    assert m.status == HALTED, f"the run should go on: {m.status} {m.error and m.error.message}"
    result = json.loads(stringify(m.result))
    assert result["failed"] is True, result
    if bad.json_ok:  # otherwise loadFromDisk is what fails, with its own message
        _mentions(result["error"], bad.restore_words or bad.words)
        assert result["error"].startswith("restore"), result


def test_restore_with_dangling_reference_returns_failure(work: Path) -> None:
    _edit(lambda d: d["globals"].update(g={"$ref": 42}))(work)
    m = _check(work, "bad.json")
    assert m.status == HALTED
    assert json.loads(stringify(m.result))["failed"] is True


@pytest.mark.parametrize(
    "value, words",
    [
        (None, ("null",)),
        ("cp.json", ("expected a checkpoint",)),
        (7, ("no checkpoint with id 7",)),
        ([1, 2], ("expected a checkpoint",)),
        ({}, ("not an agency checkpoint",)),
        ({"format": "agency-checkpoint", "version": 1}, ("missing", "stack")),
    ],
    ids=["null", "string", "unknown_id", "array", "empty_object", "header_only"],
)
def test_restore_of_non_checkpoint_value_returns_failure(
    value: Any, words: tuple[str, ...], tmp_path: Path
) -> None:
    program = compile_source(PROGRAM, str(tmp_path / "prog.agency"))
    m = _run(program, tmp_path, "checkValue", [from_plain(value)])
    assert m.status == HALTED, m.error and m.error.message
    result = json.loads(stringify(m.result))
    assert result["failed"] is True, result
    _mentions(result["error"], words)


# -- random corruption: never a Python exception, only AgencyError ------------------------------

_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "main", "work", "<module>", "$ref", "0"]),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["$ref", "$object", "$result", "$num", "pc", "a"]), inner, max_size=2
        ),
    ),
    max_leaves=6,
)


def _paths(x: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(x, dict):
        for k, v in x.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out.extend(_paths(v, (*prefix, i)))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any], Path]:
    d = tmp_path_factory.mktemp("corrupt")
    program = compile_source(PROGRAM, str(d / "prog.agency"))
    _run(program, d)
    return program, json.loads((d / "cp.json").read_text(encoding="utf-8")), d


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_corrupted_checkpoint_raises_only_agency_errors(data: st.DataObject, corpus: Any) -> None:
    program, good, d = corpus
    cp = json.loads(json.dumps(good))
    paths = _paths(cp)
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        path = data.draw(st.sampled_from(paths), label="path")
        target = cp
        try:
            for key in path[:-1]:
                target = target[key]
            if data.draw(st.booleans(), label="delete") and isinstance(target, dict):
                target.pop(path[-1], None)
            else:
                target[path[-1]] = data.draw(_VALUES, label="value")
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit replaced a container on this path
    try:
        m = rebuild(program, cp, model=MockModel([]), world=World(root=d, quiet=True))
        m.run()
    except AgencyError:
        pass
    # Through restore(obj) in a def nothing at all may escape: the def returns a failure or the
    # restore happens and the run ends with a status.
    m = Machine(
        program,
        "checkValue",
        [from_plain(cp)],
        model=MockModel([]),
        world=World(root=d, quiet=True),
    )
    m.run()
    assert m.status in ("finished", "failed", "interrupted")


def test_restore_object_is_plain_json(corpus: Any) -> None:
    """getCheckpoint's object passes through JSON unchanged (what the cases above edit)."""
    program, good, _ = corpus
    assert type(from_plain(good)) is JSObject
    assert json.loads(json.dumps(good)) == good
