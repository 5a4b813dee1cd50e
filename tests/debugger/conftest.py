"""Shared fixtures of the debugger tests: real recorded runs of small programs (mock LLM)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from debugger.opening import record_session
from debugger.session import Session
from runtime.language.program import load_program
from runtime.llm.mock import load_mocks
from runtime.runs.runner import RunConfig
from tests.cli_helpers import AGENCY

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
DICE = ROOT / "examples" / "dice.agency"
DICE_MOCKS = ROOT / "examples" / "dice.mocks.json"
CALLS = PROGRAMS / "calls.agency"
CALLS_MOCKS = PROGRAMS / "calls.mocks.json"
INTERRUPT = PROGRAMS / "interrupt.agency"
SIZE = (120, 36)


def config(mocks: Path | None) -> RunConfig:
    return RunConfig(mocks=load_mocks(str(mocks)) if mocks else [], quiet=True)


def make_session(path: Path, mocks: Path | None = None) -> Session:
    """A session over a fresh recording of `path` (relative path, as a user would type it), made
    from the repository whatever the caller's directory: a module-scoped fixture runs before the
    per-test `_in_repo` chdir, in the suite's scratch directory."""
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        program = load_program(str(path.relative_to(ROOT)))
        return record_session(program, config(mocks))
    finally:
        os.chdir(before)


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests run where a user would (the repository), recording into a throwaway run store."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("AGENCY_DB", str(tmp_path / "runs.db"))


@pytest.fixture
def dice() -> Session:
    return make_session(DICE, DICE_MOCKS)


@pytest.fixture
def calls() -> Session:
    return make_session(CALLS, CALLS_MOCKS)


@pytest.fixture
def interrupted() -> Session:
    return make_session(INTERRUPT)


async def settle(pilot) -> None:  # noqa: ANN001 - textual.pilot.Pilot
    """Wait for the app to draw what the last key did, and for workers (restores, scans)."""
    await pilot.pause()
    if any(not worker.is_finished for worker in pilot.app.workers):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def screen_text(app) -> str:  # noqa: ANN001 - DebuggerApp (conftest imports no app)
    """The screen as plain text, one line per row (what a person sees, without colours)."""
    strips = app.screen._compositor.render_strips()  # noqa: SLF001
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


# -- a run another process is recording ------------------------------------------------------

LIVE = """\
node main() {
  let total = 0
  for (round in range(3)) {
    print("waiting ${round}")
    const got = input("next? ")
    total = total + 1
  }
  return total
}
"""


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """`agency run live.agency` recording into its own store, paused at its first input."""
    (tmp_path / "live.agency").write_text(LIVE)
    db = tmp_path / "runs.db"
    proc = subprocess.Popen(
        [*AGENCY, "run", "live.agency", "--db", str(db)],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        expect_line(proc, "waiting 0")
        yield proc, db
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def expect_line(proc: subprocess.Popen[str], text: str) -> None:
    """Read the process's output up to the line `text` (it prints it before it waits)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == text:
            return
    raise AssertionError(f"the recording process ended before printing {text!r}")


def answer(proc: subprocess.Popen[str], text: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(text + "\n")
    proc.stdin.flush()
