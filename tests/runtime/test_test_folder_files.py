"""Where `agency test` lets a program change files: relative paths land in a fresh scratch
directory, the test file's own folder may change too, and nothing else outside the scratch
directory may (runtime/runs/testing.py, World.writable, builtins_fs.owning_root). The system's
temporary directory, which `agency test` also lets programs change, holds these tests' own
folders, so here it is taken out (tests/test_write_places.py checks that it may change)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime.runs import testing
from runtime.runs.testing import run_suite


@pytest.fixture(autouse=True)
def _no_scratch_dirs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testing, "scratch_dirs", lambda: [])


def _run(folder: Path, source: str, expected: str) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prog.agency").write_text(source)
    suite = folder / "prog.test.json"
    case = {"nodeName": "main", "input": "", "expectedOutput": expected}
    suite.write_text(json.dumps({"tests": [case]}))
    [outcome] = list(run_suite(suite))
    return outcome


def test_a_relative_write_leaves_the_test_folder_untouched(tmp_path: Path) -> None:
    source = (
        'node main() {\n  const w = write("out.txt", "x") with approve\n  return isSuccess(w)\n}\n'
    )
    outcome = _run(tmp_path / "suite", source, "true")
    assert outcome.passed, outcome.detail
    assert sorted(p.name for p in (tmp_path / "suite").iterdir()) == [
        "prog.agency",
        "prog.test.json",
    ]


def test_the_test_folder_may_change_and_its_parent_may_not(tmp_path: Path) -> None:
    source = (
        "node main() {\n"
        '  const here = write("kept.txt", "x", __dirname) with approve\n'
        '  const up = write("up.txt", "x", __dirname + "/..") with approve\n'
        "  return [isSuccess(here), up.error]\n"
        "}\n"
    )
    outcome = _run(tmp_path / "suite", source, "null")
    assert (tmp_path / "suite" / "kept.txt").read_text() == "x"
    assert not (tmp_path / "up.txt").exists()
    assert "outside the working directory" in outcome.detail, outcome.detail


def test_an_absolute_remove_follows_the_same_rule(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    source = (
        'import { remove } from "std::fs"\n'
        "node main() {\n"
        '  write("doomed.txt", "x", __dirname) with approve\n'
        '  const inner = remove(__dirname + "/doomed.txt") with approve\n'
        f'  const outer = remove("{outside}") with approve\n'
        '  const runtime = remove(__dirname + "/.agency") with approve\n'
        "  return [isSuccess(inner), isFailure(outer), runtime.error]\n"
        "}\n"
    )
    outcome = _run(tmp_path / "suite", source, "null")
    assert not (tmp_path / "suite" / "doomed.txt").exists()
    assert outside.read_text() == "keep me"
    assert '[true,true,"remove: path' in outcome.detail and ".agency/" in outcome.detail
