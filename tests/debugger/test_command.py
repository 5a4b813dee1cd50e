"""`agency debugger` / `agency debug` on the command line: the modes, and bad input refused with
a clear message and a non-zero exit (never a traceback)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from debugger.cli import cli
from debugger.debug_command import build_app
from debugger.opening import record_session
from runtime.record.sqlite_store import SQLiteStore
from tests.debugger.conftest import (
    CALLS,
    CALLS_MOCKS,
    DICE,
    ROOT,
    SIZE,
    config,
    make_session,
    settle,
)


def run(*args: str):  # noqa: ANN201 - click Result
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_debug_is_an_alias_with_help() -> None:
    for name in ("debugger", "debug"):
        result = run(name, "--help")
        assert result.exit_code == 0
        assert "--checkpoint" in result.output and "--trace" in result.output


def test_needs_a_file_or_a_trace() -> None:
    result = run("debugger")
    assert result.exit_code == 2 and "FILE" in result.output


def test_syntax_errors_are_reported_before_the_app_starts(tmp_path) -> None:
    bad = tmp_path / "bad.agency"
    bad.write_text("node main() {\n  let = 3\n}\n")
    result = run("debugger", str(bad))
    assert result.exit_code == 65 and "bad.agency:2" in result.output


def test_missing_checkpoint_file(tmp_path) -> None:
    result = run(
        "debugger", str(CALLS.relative_to(ROOT)), "--checkpoint", str(tmp_path / "no.json")
    )
    assert result.exit_code == 2 and "no such checkpoint file" in result.output


def test_checkpoint_of_another_source_is_refused_with_the_reason(tmp_path) -> None:
    session = make_session(CALLS, CALLS_MOCKS)
    session.goto(8)
    path = session.save_checkpoint(str(tmp_path / "cp.json"))
    result = run("debugger", str(DICE.relative_to(ROOT)), "--checkpoint", path)
    assert result.exit_code == 2
    assert "same source" in result.output and "calls.agency" in result.output
    assert "Traceback" not in result.output


def test_missing_trace_store(tmp_path) -> None:
    result = run("debugger", "--trace", str(tmp_path / "none.db"))
    assert result.exit_code != 0 and "no such run store" in result.output


async def test_checkpoint_mode_opens_beside_its_source_and_runs_on(tmp_path) -> None:
    session = make_session(CALLS, CALLS_MOCKS)
    session.goto(8)
    path = session.save_checkpoint(str(tmp_path / "cp.json"))
    assert json.loads(open(path).read())["step"] == 8
    app = build_app(str(CALLS.relative_to(ROOT)), config=config(None), checkpoint=path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session is not None
        assert app.session.source_path.endswith("calls.agency")
        assert app.session.step == app.session.first >= 8
        assert app.session.state().frames[-1].locals["answer"] == 4
        await pilot.press("end")
        await settle(pilot)
        assert app.session.state().status == "finished"
        assert app.output.lines == ["counter is 5"]


async def test_trace_mode_opens_a_stored_run(tmp_path) -> None:
    from runtime.language.program import load_program

    db = tmp_path / "runs.db"
    store = SQLiteStore(db)
    recorded = record_session(
        load_program(str(CALLS.relative_to(ROOT))), config(CALLS_MOCKS), store
    )
    run_id = recorded.timeline.run_id
    store.close()
    for app in (build_app(None, trace=str(db)), build_app(None, trace=str(db), run_id=run_id)):
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert app.session.timeline.run_id == run_id
            assert app.session.step == 0 and app.session.length == len(recorded.timeline)
            await pilot.press("c")
            await settle(pilot)
            assert "after llm" in app.session.message
    app = build_app(str(CALLS.relative_to(ROOT)), run_id=run_id, db=str(db))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session.timeline.run_id == run_id


async def test_a_debugged_run_is_recorded_in_the_run_store(tmp_path) -> None:
    import os

    app = build_app(str(CALLS.relative_to(ROOT)), config=config(CALLS_MOCKS))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        run_id = app.session.timeline.run_id
    store = SQLiteStore(os.environ["AGENCY_DB"])
    assert store.get_run(run_id) is not None
    store.close()


def test_trace_and_checkpoint_are_refused_together_even_without_a_file(tmp_path) -> None:
    # the check needed a FILE too, so `--trace runs.db --checkpoint cp.json` opened the trace
    result = run("debugger", "--trace", str(tmp_path / "runs.db"), "--checkpoint", "cp.json")
    assert result.exit_code == 2 and "do not go together" in result.output
