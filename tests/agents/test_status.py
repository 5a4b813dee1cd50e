"""`agency show` and `agency runs` give a finished (or failed) Python agent's run its status:
at the last checkpoint of the current line the run's own status, elsewhere "running"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.cli import cli
from runtime import CheckpointManager, SqliteStorage, record_agent


def agency(*args: str) -> str:
    out = CliRunner().invoke(cli, list(args))
    assert out.exit_code == 0, out.output
    return out.output


def record(db: Path, name: str, roundtrips: int) -> str:
    m = CheckpointManager(SqliteStorage(db), agent="helper")
    messages: list[dict[str, str]] = [{"role": "user", "content": "Roll."}]
    for i in range(roundtrips):
        messages = [*messages, {"role": "assistant", "content": f"rolled {i}"}]
        m.save(run_id=name, messages=messages, session_state={"i": i})
    run_id = m.list(name)[0].run_id
    m.finish(name)
    m.close()
    return run_id


def test_show_and_runs_say_a_finished_agent_run_finished(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = record(db, "done", 3)
    assert f"run {run_id}  step 2/2  branch 0  status finished" in agency(
        "show", run_id, "--db", str(db)
    )
    assert "status running" in agency("show", f"{run_id}:1", "--db", str(db))
    shown = json.loads(agency("show", run_id, "--db", str(db), "--json"))
    assert shown["status"] == "finished"
    runs = json.loads(agency("runs", "--db", str(db), "--json"))
    assert [r["status"] for r in runs if r["id"] == run_id] == ["finished"]


def test_a_rolled_back_run_is_finished_on_its_current_line_only(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    m = CheckpointManager(SqliteStorage(db), agent="helper")
    for i in range(3):
        m.save(run_id="back", messages=[{"role": "user", "content": str(j)} for j in range(i + 1)])
    cps = m.list("back")
    m.rollback(cps[1].id)  # the current line is branch 1, ending at step 1
    m.finish("back")
    m.close()
    run_id = cps[0].run_id
    assert "status finished" in agency("show", f"{run_id}:1", "--db", str(db), "--branch", "1")
    assert "status running" in agency("show", run_id, "--db", str(db))  # the kept branch 0


def test_show_says_failed_for_an_agent_that_raised(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with pytest.raises(RuntimeError), record_agent(storage=db, run_id="oops") as rec:
        rec.checkpoint([{"role": "user", "content": "go"}])
        raise RuntimeError("the tool broke")
    out = agency("show", "last", "--db", str(db))
    assert "step 0/0" in out and "status failed" in out
    runs = json.loads(agency("runs", "--db", str(db), "--json"))
    assert runs[0]["status"] == "failed" and "the tool broke" in str(runs[0])
