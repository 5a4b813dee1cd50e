"""The debugger opens a Python agent's run: roundtrips as steps, the messages, usage and session
state of each, its tool calls as timeline events, and the Python line that saved it."""

from __future__ import annotations

from pathlib import Path

from debugger.debug_command import build_app
from runtime import CheckpointManager, SqliteStorage
from tests.debugger.conftest import SIZE, screen_text, settle


def record(db: Path) -> tuple[str, list[int]]:
    m = CheckpointManager(SqliteStorage(db), agent="helper")
    messages: list[dict[str, object]] = [{"role": "user", "content": "Roll twice."}]
    lines = []
    for i in (1, 2, 3):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "roll", "arguments": "{}"}}
        messages = messages + [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"rolled {i}"},
        ]
        m.save(
            run_id="dbg",
            messages=messages,
            session_state={"rolls": i},
            token_usage={"input_tokens": 10 * i, "output_tokens": i},
        )
        lines.append(m.list("dbg")[-1].location)
    cps = m.list("dbg")
    m.rollback(cps[1].id)  # roundtrip 3 kept on branch 0, the current line is branch 1
    m.finish("dbg")
    m.close()
    return cps[0].run_id, [int(str(loc).rsplit(":", 1)[1]) for loc in lines]


async def test_the_debugger_steps_through_an_agent_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id, lines = record(db)
    app = build_app(None, trace=str(db), run_id=run_id)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        session = app.session
        assert session is not None and session.length == 2  # the current line: rolled back
        assert session.branch == 1
        assert session.source_path == __file__
        state = session.state()
        assert state.frames[-1].locals["session_state"] == {"rolls": 1}
        assert [m.role for m in state.threads["main"]] == ["user", "assistant", "tool"]
        assert state.location is not None and state.location.line == lines[0]
        assert session.run_status() == "finished"  # what the run is, at every step
        assert state.status == "running"  # a checkpoint the agent ran on from
        await pilot.press("s")
        await settle(pilot)
        state = session.state()
        assert session.step == 1 and state.usage.input_tokens == 20
        assert session.run_status() == "finished"  # the last step of a finished run
        assert state.status == "running"  # recorded while the agent ran; the run's own says
        assert state.threads["main"][-1].content == "rolled 2"
        assert "tool" in {e.kind for e in session.timeline.events()}
        assert {b.id for b in session.timeline.branches()} == {0, 1}
        saved_at = Path(__file__).read_text().splitlines()[lines[1] - 1].strip()
        assert saved_at and saved_at in screen_text(app)  # the Python line that saved it
