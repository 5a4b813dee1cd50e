"""Running the `agency` command from tests: in this process through Click's runner, or as a real
child process, with the checks every command test makes (no traceback, the exit code, what the
output must say)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from debugger.cli import cli

AGENCY = [sys.executable, "-c", "from debugger.cli import main; main()"]
"""The command line of a real `agency` process, for tests that need one (signals, pipes)."""


def plain_workdir(path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`path` as the working directory, with none of the environment that points the command
    elsewhere (a run store, scripted answers, a model)."""
    monkeypatch.chdir(path)
    for name in ("AGENCY_DB", "AGENCY_LLM_MOCKS", "AGENCY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return path


def agency(*args: str) -> Result:
    """One `agency` command in this process; a traceback in its output fails the test."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def clean(result: Result, code: int, *needles: str) -> None:
    """Exit `code`, no traceback, each needle in the output."""
    out = result.output
    assert result.exit_code == code, out
    assert "Traceback" not in out
    for n in needles:
        assert n in out, out
