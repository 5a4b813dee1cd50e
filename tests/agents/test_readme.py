"""The README's "Python agents" example runs as written, from a clean working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_python_agents_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    section = README.read_text(encoding="utf-8").split("## Python agents\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own README
    assert capsys.readouterr().out.splitlines() == ["[1, 2]", "{'rolls': 1}", "True"]
    assert (tmp_path / ".agency" / "runs.db").exists()
