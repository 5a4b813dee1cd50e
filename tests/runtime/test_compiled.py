"""The optional compiled interpreter (`make compiled`, `runtime/vm/compiled.py`): used only while
every source it was built from is unchanged, pure Python otherwise (one line on stderr when a
build is there but stale, nothing when there is none), and the same results either way."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.vm import compiled

ROOT = Path(__file__).resolve().parents[2]


def fake_build(tmp: Path, **changes: object) -> tuple[Path, Path]:
    """A build directory for one module whose source is a file under `tmp / "src"` (the
    extension file is never loaded here, only found). Returns (native dir, source root)."""
    root = tmp / "src"
    (root / "runtime").mkdir(parents=True)
    source = root / "runtime" / "hot.py"
    source.write_text("x = 1\n", encoding="utf-8")
    native = tmp / "native"
    native.mkdir()
    (native / "hot.so").write_bytes(b"")
    manifest = {
        "format": compiled.FORMAT,
        "ext_suffix": compiled.ext_suffix(),
        "files": {"runtime.hot": "hot.so"},
        "sources": {"runtime/hot.py": hashlib.sha256(source.read_bytes()).hexdigest()},
        **changes,
    }
    (native / compiled.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return native, root


@pytest.fixture(autouse=True)
def compiled_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)


def test_no_build_means_pure_python_and_no_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert compiled.finder_for(tmp_path / "nothing", tmp_path) is None
    assert capsys.readouterr().err == ""


def test_a_fresh_build_is_found_for_its_modules_only(tmp_path: Path) -> None:
    native, root = fake_build(tmp_path)
    finder = compiled.finder_for(native, root)
    assert finder is not None
    spec = finder.find_spec("runtime.hot", None)
    assert spec is not None and spec.origin == str(native / "hot.so")
    assert isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)
    assert finder.find_spec("runtime.cold", None) is None


@pytest.mark.parametrize(
    ("breakage", "said"),
    [
        ("edit", "runtime/hot.py changed since it was built"),
        ("delete", "runtime/hot.py changed since it was built"),
        ("extension", "hot.so is missing"),
        ("python", "built for another Python (.cpython-20-fake.so)"),
    ],
)
def test_a_stale_build_falls_back_to_the_source_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], breakage: str, said: str
) -> None:
    native, root = fake_build(
        tmp_path, **({"ext_suffix": ".cpython-20-fake.so"} if breakage == "python" else {})
    )
    if breakage == "edit":
        (root / "runtime" / "hot.py").write_text("x = 2\n", encoding="utf-8")
    elif breakage == "delete":
        (root / "runtime" / "hot.py").unlink()
    elif breakage == "extension":
        (native / "hot.so").unlink()
    assert compiled.finder_for(native, root) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "make compiled" in err


def test_the_pure_python_switch_turns_a_fresh_build_off_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    native, root = fake_build(tmp_path)
    monkeypatch.setenv(compiled.PURE_ENV, "1")
    assert compiled.finder_for(native, root) is None
    assert capsys.readouterr().err == ""


def test_the_build_hashes_the_compiled_modules_and_what_they_import() -> None:
    sources = compiled.sources_of(compiled.MODULES)
    for module in compiled.MODULES:
        assert module.replace(".", "/") + ".py" in sources
    assert "runtime/vm/writelog.py" in sources  # constants and types the compiled code reads
    assert "runtime/vm/compiled.py" not in sources  # not imported by what is compiled
    assert all(s.startswith("runtime/") for s in sources)


PROGRAM = """
def fib(n) {
  if (n < 2) {
    return n
  }
  return fib(n - 1) + fib(n - 2)
}

node main() {
  let xs = []
  for (i in range(30)) {
    xs.push(i * 3)
  }
  let total = 0
  let i = 0
  while (i < 40) {
    i = i + 1
    total = total + i
  }
  for (x in xs) {
    if (x % 2 == 0) {
      total += x
    }
  }
  let said = llm("Say a number")
  print(`total ${total} fib ${fib(12)} said ${said}`)
  return xs[40].length
}
"""

PROBE = """
import hashlib, json, sys
from runtime.language.program import compile_source
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig, new_machine
import runtime.vm.machine

program = compile_source(sys.stdin.read(), "probe.agency")
config = RunConfig(model_spec="sim", root=sys.argv[1], quiet=True)
m = new_machine(program, config)
kinds = []
m.on_step = lambda machine, kind: kinds.append((machine.step_index, kind))  # MARK_STEP too
m.run()
timeline = record_program(program, config).timeline
states = [repr(timeline.state_at(k)) for k in range(len(timeline))]
print(json.dumps({"file": runtime.vm.machine.__file__, "status": m.status, "output": m.output,
    "error": str(m.error), "steps": m.step_index, "result": m.result, "kinds": kinds, "states": len(states),
    "digest": hashlib.sha256("\\n".join(states).encode()).hexdigest()}))
"""


def probe(tmp_path: Path, pure: bool) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    if pure:
        env[compiled.PURE_ENV] = "1"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        input=PROGRAM,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    )
    return dict(json.loads(done.stdout))


def test_pure_python_runs_without_a_build(tmp_path: Path) -> None:
    got = probe(tmp_path, pure=True)
    assert str(got["file"]).endswith("machine.py")
    assert got["status"] == "failed" and "total" in str(got["output"])


@pytest.mark.skipif(
    compiled.read_manifest(compiled.NATIVE) is None, reason="no compiled build (make compiled)"
)
def test_compiled_and_pure_runs_are_the_same(tmp_path: Path) -> None:
    native = probe(tmp_path, pure=False)
    pure = probe(tmp_path, pure=True)
    assert not str(native["file"]).endswith(".py"), "the build is stale: make compiled"
    assert {**native, "file": None} == {**pure, "file": None}
