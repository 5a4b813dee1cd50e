"""`input()` reads a line a person types; the answer is an input of the run (replay is served
it, never asking again)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

PROGRAM = """
node main() {
  const first = input("first? ")
  const second = input("second? ")
  return [first, second]
}
"""


def test_input_reads_lines_and_replay_is_served_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from debugger.cli import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ask.agency").write_text(PROGRAM)
    ran = CliRunner().invoke(cli, ["run", "ask.agency", "--json"], input="Ada\r\n")
    assert ran.exit_code == 0, ran.output
    assert '["Ada",""]' in ran.output, ran.output
    replayed = CliRunner().invoke(cli, ["replay", "--last"], input="")  # nothing to read now
    assert replayed.exit_code == 0, replayed.output
    assert "first?" not in replayed.output, replayed.output  # served from the record, not asked
