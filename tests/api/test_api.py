"""The public Python API (`runtime`): run, list, read a step, export, continue, resume, replay."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import runtime
from runtime import Checkpoint, continue_from, open_store, replay, resume, run_program
from runtime.errors import AgencyError, UsageError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("dice.agency", "dice.mocks.json", "approval.agency"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_DB", raising=False)
    return tmp_path


def test_run_then_read_any_step_as_plain_values(work: Path) -> None:
    run = run_program("dice.agency", mocks="dice.mocks.json")
    assert run.status == "finished"
    assert run.steps > 5
    assert run.output[-1].startswith("Good roll:")
    state = run.timeline().state_at(run.steps - 1)
    assert isinstance(state.locals, dict) and isinstance(state.globals, dict)
    assert all(isinstance(f, dict) for f in state.frames)
    assert all(isinstance(m, dict) for t in state.threads.values() for m in t)
    assert state.output == run.output
    # recorded in the default store, found again by id, prefix and "last"
    with open_store() as store:
        assert (work / ".agency" / "runs.db").exists()
        assert store.run("last").id == run.id
        assert store.run(run.id[:8]).id == run.id
        assert [r.id for r in store.runs()] == [run.id]


def test_last_write_and_events(work: Path) -> None:
    run = run_program("dice.agency", mocks="dice.mocks.json", db=":memory:")
    tl = run.timeline()
    end = len(tl) - 1
    assert tl.last_write("counter", end - 1) is not None  # main's frame is gone at the end
    assert any(e.kind == "llm" for e in tl.events())


def test_export_save_load_continue_with_overrides(work: Path) -> None:
    run = run_program("dice.agency", mocks="dice.mocks.json", db="runs.db")
    tl = run.timeline()
    step = next(k for k in range(len(tl)) if "counter" in tl.state_at(k).locals)
    cp = run.export(step)
    assert cp.step == step and cp.node == "main"
    cp.save(work / "cp.json")
    loaded = Checkpoint.load(work / "cp.json")
    assert loaded.data["stack"] == cp.data["stack"]
    again = continue_from(loaded, overrides={"locals": {"counter": 41}}, mocks=[{"return": 6}])
    assert again.status == "finished"
    assert again.output[-1] == "Good roll: 6 after 41 rolls"


def test_resume_an_interrupted_run_and_replay_it(work: Path) -> None:
    run = run_program("approval.agency", db="runs.db")
    assert run.status == "interrupted"
    resumed = resume(run, approve=True)
    assert resumed.status == "finished"
    replayed = replay(resumed)
    assert replayed.divergence is None
    assert replayed.status == "finished"


def test_errors_are_agency_errors() -> None:
    with pytest.raises(UsageError):
        open_store("mysql://nobody@nowhere/db")
    with pytest.raises(AgencyError, match="cannot open run store postgresql://nobody@nowhere/db"):
        open_store("postgresql://nobody:secret@nowhere/db")  # the password is never shown
    with pytest.raises(AgencyError):
        Checkpoint.load("/nonexistent/cp.json")
    with pytest.raises(AttributeError):
        runtime.no_such_name  # noqa: B018


def test_the_readme_example_runs_as_written(work: Path) -> None:
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    code = readme.split("### From Python\n\n```python\n", 1)[1].split("```", 1)[0]
    (work / "examples").mkdir()
    for name in ("dice.agency", "dice.mocks.json"):
        shutil.copy(EXAMPLES / name, work / "examples" / name)
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    assert namespace["again"].output[-1] == "Good roll: 6 after 1 rolls"  # type: ignore[attr-defined]
