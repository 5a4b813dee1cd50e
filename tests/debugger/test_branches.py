"""A fork's branches in the debugger: the block's frame on the call stack with its variables,
each branch's own copy of the globals, and the join restoring the parent's."""

from __future__ import annotations

from debugger.session import Session
from tests.debugger.conftest import PROGRAMS, make_session


def test_branch_frames_and_globals_on_the_timeline() -> None:
    session: Session = make_session(PROGRAMS / "branches.agency")
    seen: list[tuple[int, int]] = []  # (the branch's n, total as that branch sees it)
    for step in range(session.first, session.last + 1):
        session.goto(step)
        state = session.state()
        blocks = [f for f in state.frames if f.kind == "block"]
        if blocks and "mine" in blocks[-1].locals:
            block = blocks[-1]
            seen.append((block.args.get("n") or block.locals.get("n"), state.globals["total"]))
    # each branch starts from total = 0 and sees only its own write
    assert (1, 10) in seen and (2, 20) in seen
    session.goto(session.last)
    final = session.state()
    assert final.globals["total"] == 0
    assert final.output == ("sums [10,20] total 0",)


def test_selecting_a_built_in_frame_says_its_source_is_not_shown() -> None:
    # fork's frame (the prelude's, line 794 of it) left the source pane with no line marked
    # and nothing said why
    session: Session = make_session(PROGRAMS / "branches.agency")
    while not any(f.kind == "prelude" for f in session.state().frames):
        session.step_forward()
    frames = session.state().frames
    index = next(i for i, f in enumerate(frames) if f.kind == "prelude")
    session.select_frame(index)
    assert "is built in" in session.message and frames[index].scope in session.message
    session.select_frame(0)
    assert session.message == f"frame #{len(frames) - 1}: main, line {frames[0].line}"
