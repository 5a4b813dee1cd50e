"""Runs every conformance program in tests/programs through `agency test`, as a user would.

Each `*.test.json` suite becomes one pytest case: the CLI is invoked in-process with Click's
CliRunner (`agency test PATH`), and the case passes when the command exits 0 and its summary
line reports no failures. On failure the whole CLI output is shown, since it names the test,
the expected and the actual result.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
SUITES = sorted(PROGRAMS.rglob("*.test.json"))  # grouped in folders by feature
SUMMARY = re.compile(r"^(\d+) passed, 0 failed\b")


def _expected_count(suite: Path) -> int:
    """The number of tests in a suite that are not marked `skip` (a suite that expects its
    program not to compile, `expectedCompileError`, is one test)."""
    data = json.loads(suite.read_text())
    if "expectedCompileError" in data and "tests" not in data:
        return 1
    return sum(1 for t in data["tests"] if not t.get("skip"))


def test_suites_found() -> None:
    assert len(SUITES) >= 90, f"expected at least 90 conformance suites in {PROGRAMS}"


@pytest.mark.parametrize(
    "suite",
    SUITES,
    ids=[p.relative_to(PROGRAMS).as_posix().removesuffix(".test.json") for p in SUITES],
)
def test_program(suite: Path) -> None:
    from debugger.cli import cli

    result = CliRunner().invoke(cli, ["test", str(suite)])
    output = result.output
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    detail = f"\n--- agency test {suite.name} (exit {result.exit_code}) ---\n{output}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        detail += "\n" + "".join(traceback.format_exception(result.exception))
    match = SUMMARY.match(last)
    assert result.exit_code == 0 and match is not None, detail
    assert int(match.group(1)) == _expected_count(suite), detail
