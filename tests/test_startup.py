"""The `agency` command starts without importing what its command does not need: `--version`
and `agency show` load neither the machine nor the parser (benchmarks/bench_interpreter.py
measures the CPU time; these tests hold the structure that makes it small)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import debugger
from runtime.language.bytecode import Location as BytecodeLocation
from runtime.record.views import Location as ViewLocation

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("runtime.vm.machine", "runtime.language.syntax.parser", "runtime.language.compiler")


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def test_the_command_and_its_version_load_no_machine_and_no_parser() -> None:
    mods = loaded_after(
        "from debugger.cli import cli\ntry:\n    cli(['--version'])\nexcept SystemExit:\n    pass"
    )
    assert "debugger.cli" in mods
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
    assert "importlib.metadata" not in mods  # the version is debugger.__version__


def test_reading_a_recorded_run_loads_no_machine_and_no_parser() -> None:
    mods = loaded_after("import runtime.record.timeline, runtime.record.sqlite_store")
    assert not mods & {*HEAVY, "runtime.language.syntax.ast"}, sorted(mods)


def test_the_version_is_the_packages() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert debugger.__version__ == pyproject["project"]["version"]
    assert debugger.__version__ == importlib.metadata.version("agency-debugger")


def test_bytecode_and_the_record_share_one_location_type() -> None:
    assert BytecodeLocation is ViewLocation
