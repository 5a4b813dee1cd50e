"""End to end under tmux: the real `agency debugger` in a real terminal, driven by keystrokes,
checking that each key does what the footer says it does. Skipped when tmux is absent."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.debugger.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """A detached 120x36 tmux session running one command, on a private tmux server."""

    def __init__(self, command: str) -> None:
        self.name = f"agency-test-{uuid.uuid4().hex[:8]}"
        self.tmux = ["tmux", "-L", self.name, "-f", "/dev/null"]
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", self.name, "-x", "120", "-y", "36", command],
            check=True,
            cwd=ROOT,
        )
        # No wait after Escape: a person's Escape then `?` must not become Alt+?.
        subprocess.run([*self.tmux, "set", "-s", "escape-time", "0"], check=True)

    def screen(self) -> str:
        result = subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        )
        return result.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, pattern: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} never appeared; the screen was:\n{screen}")

    def wait_until_gone(self, pattern: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        screen = self.screen()
        while re.search(pattern, screen) and time.monotonic() < deadline:
            time.sleep(0.05)
            screen = self.screen()
        assert not re.search(pattern, screen), f"{pattern!r} stayed on the screen:\n{screen}"
        return screen

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


@pytest.fixture
def terminal(tmp_path):  # noqa: ANN001, ANN201
    command = (
        f"{sys.executable} -m debugger debugger examples/dice.agency "
        "--mock examples/dice.mocks.json; sleep 5"
    )
    # pytest may export COLUMNS/LINES of its own terminal; the app must size itself from tmux
    env = f"env -u COLUMNS -u LINES TERM=xterm-256color AGENCY_DB={tmp_path / 'runs.db'}"
    term = Terminal(f"cd {ROOT} && {env} {command}")
    yield term
    term.close()


def footer_says(footer: str) -> dict[str, str]:
    """The verbs of the app's shown bindings that the footer line displays, by key display."""
    from debugger.app import DebuggerApp

    shown = {}
    for binding in DebuggerApp.BINDINGS:
        if binding.show:
            display = binding.key_display or binding.key
            if f"{display} {binding.description}" in footer:
                shown[display] = binding.description
    return shown


def test_keystrokes_do_what_the_footer_says(terminal: Terminal) -> None:
    screen = terminal.wait_for(r"step 0/20(.|\n)*q Quit")
    footer = next(line for line in screen.splitlines() if "q Quit" in line)
    says = footer_says(footer)
    expected = {
        "s/→": "Step",
        "S/←": "Back",
        "n": "Next",
        "c": "Continue",
        "g": "Go to",
        "b": "Breakpoint",
        "e": "Edit",
        "?": "Help",
        "q": "Quit",
    }
    for key, verb in expected.items():
        assert says.get(key) == verb, (key, footer)

    terminal.keys("s")  # Step
    terminal.wait_for(r"step 1/20")
    terminal.keys("Right")  # also Step
    terminal.wait_for(r"step 2/20")
    terminal.keys("S")  # Back
    terminal.wait_for(r"step 1/20")
    terminal.keys("Left")
    terminal.wait_for(r"step 0/20")
    terminal.keys("n")  # Next
    terminal.wait_for(r"step 1/20")
    terminal.keys("b")  # Breakpoint on the current line (3)
    terminal.wait_for(r"●\s+3")
    terminal.keys("c")  # Continue: back at line 3 after the first restore
    terminal.wait_for(r"step 8/20.*breakpoint at line 3")
    terminal.keys("b", "c")  # clear it; continue to the end
    terminal.wait_for(r"step 20/20.*finished")
    terminal.wait_for("Good roll: 5 after")  # the output panel (cut to its width), which may
    # be drawn a frame after the status line
    terminal.keys("g")  # Go to
    terminal.wait_for(r"go to step:")
    terminal.keys("4", "Enter")
    terminal.wait_for(r"step 4/20")
    terminal.keys("e")  # Edit the selected variable
    terminal.wait_for(r"Edit locals\.")
    terminal.keys("Escape")
    terminal.wait_until_gone(r"Edit locals\.")
    terminal.keys("?")  # Help
    terminal.wait_for(r"Reverse continue")
    terminal.keys("Escape")
    terminal.wait_until_gone(r"Reverse continue")
    terminal.keys("q")  # Quit
    terminal.wait_until_gone(r"step 4/20")


def test_sigterm_quits_and_saves_the_recording_as_interrupted(tmp_path) -> None:  # noqa: ANN001
    """SIGTERM (a supervisor, `kill PID`) does what `q` does: the run being recorded stops at
    its next step and is saved as interrupted, the terminal is given back, exit 143. (It
    ended the process at once, leaving the run `running`, as if it had crashed.)"""
    import os
    import signal
    import sqlite3

    program = tmp_path / "long.agency"
    program.write_text(
        "node main() {\n  let n = 0\n  for (i in range(50000000)) {\n    n = n + 1\n  }\n"
        "  return n\n}\n"
    )
    db, status = tmp_path / "runs.db", tmp_path / "exit-status"
    command = f"{sys.executable} -m debugger debugger {program} --db {db}; echo $? > {status}"
    term = Terminal(f"cd {ROOT} && env -u COLUMNS -u LINES TERM=xterm-256color {command}; sleep 30")
    try:
        term.wait_for("recording a run")
        # The screen says so before the run's first step: wait until steps are in the store
        # (a SIGTERM before then saves a run of no steps, which resume starts afresh).
        deadline = time.monotonic() + 60
        while not _recorded_steps(db):
            assert time.monotonic() < deadline, term.screen()
            time.sleep(0.05)
        shell = subprocess.run(
            [*term.tmux, "display", "-p", "-t", term.name, "#{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        found = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True)
        os.kill(int(found.stdout.split()[0]), signal.SIGTERM)
        deadline = time.monotonic() + 60
        while not status.exists() or not status.read_text().strip():
            assert time.monotonic() < deadline, term.screen()
            time.sleep(0.05)
        assert status.read_text().strip() == "143"
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT status, error, step_count FROM runs").fetchone()
        assert row[0] == "interrupted" and "SIGTERM" in row[1] and row[2] > 0, row
        assert "recording a run" not in term.screen()  # the terminal was given back
    finally:
        term.close()


def _recorded_steps(db: Path) -> int:
    """The step count of the one run in the store at `db` (0 while there is none yet)."""
    import sqlite3

    if not db.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT step_count FROM runs").fetchone()
    except sqlite3.Error:  # the schema is not there yet
        return 0
    return int(row[0]) if row else 0
