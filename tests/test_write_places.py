"""Where a program may change files: the working directory; with `agency run --allow-write DIR`
also DIR; under `agency test` also the test file's folder and the system's temporary
directory (tests keep fixtures there). Everywhere else a write is a clear error."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from .cli_helpers import agency, clean

PROBE = """node main(dir: string) {
  const r = try write("probe.txt", "hi", dir) with approve
  if (isFailure(r)) {
    return r.error
  }
  return read("probe.txt", dir) with approve
}
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "outside").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.delenv("AGENCY_DB", raising=False)
    (tmp_path / "work" / "probe.agency").write_text(PROBE)
    return tmp_path / "work"


def _run(*extra: str) -> object:
    outside = str(Path("../outside").resolve())
    result = agency(
        "run", "probe.agency", "--no-record", "--json", "--args", json.dumps([outside]), *extra
    )
    clean(result, 0)
    return json.loads(result.output)


def test_run_refuses_a_write_outside_the_working_directory(work: Path) -> None:
    error = _run()
    assert isinstance(error, str) and "is outside the working directory" in error
    assert not (work.parent / "outside" / "probe.txt").exists()


def test_allow_write_adds_a_directory(work: Path) -> None:
    assert _run("--allow-write", "../outside") == {
        "__type": "resultType",
        "success": True,
        "value": "hi",
    }


def test_allow_write_names_an_existing_directory(work: Path) -> None:
    clean(agency("run", "probe.agency", "--allow-write", "no-such-dir"), 2, "no-such-dir")


def test_agency_test_may_use_the_temporary_directory(work: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        suite = {
            "tests": [
                {
                    "nodeName": "main",
                    "input": json.dumps(scratch),
                    "expectedOutput": json.dumps(
                        {"__type": "resultType", "success": True, "value": "hi"}
                    ),
                    "evaluationCriteria": [{"type": "exact"}],
                }
            ]
        }
        (work / "probe.test.json").write_text(json.dumps(suite))
        clean(agency("test", "probe.test.json"), 0, "1 passed, 0 failed")
        assert (Path(scratch) / "probe.txt").read_text() == "hi"


def test_a_resumed_run_keeps_its_allowed_directories(work: Path) -> None:
    (work / "late.agency").write_text(
        "node main(dir: string) {\n  let i = 0\n  while (i < 100) {\n    i++\n  }\n"
        '  write("late.txt", "done", dir) with approve\n  return i\n}\n'
    )
    outside = work.parent / "outside"
    db = str(work / "runs.db")
    common = ["--db", db, "--args", json.dumps([str(outside)]), "--allow-write", str(outside)]
    stopped = agency("run", "late.agency", "--max-steps", "50", *common)
    assert stopped.exit_code == 130, stopped.output
    runs = json.loads(agency("runs", "--db", db, "--json").output)
    clean(agency("resume", str(runs[0]["id"]), "--db", db), 0)
    assert (outside / "late.txt").read_text() == "done"
