"""`y` (the step that last wrote a value) and the ● changed marker (issue 12, defect 3): right
for in-place changes (`items.push`, `obj.a[0] = 99`), per frame (main's `x` is not helper's
`x`) and across `restore()`; answered from the write log per object and frame."""

from __future__ import annotations

import pytest

from debugger.session import Session
from tests.debugger.conftest import PROGRAMS, make_session

MUTATIONS = PROGRAMS / "mutations.agency"


@pytest.fixture(scope="module")
def session() -> Session:
    return make_session(MUTATIONS)


def line_step(s: Session, line: int, after: int = 0) -> int:
    """The first step at or after `after` that stands on `line`."""
    for k in range(after, s.length):
        loc = s.timeline.location_at(k)
        if loc is not None and loc.line == line:
            return k
    raise AssertionError(f"no step on line {line}")


def test_in_place_changes_are_the_last_write(session: Session) -> None:
    end = line_step(session, 21)  # print(x, y, z): everything done
    session.goto(end)
    # `items.push(2)` (line 13) is written in the step after it started; not the creation
    assert session.why("items", "locals").step == line_step(session, 13) + 1
    session.goto(end)
    assert session.why("obj", "locals").step == line_step(session, 14) + 1
    session.goto(line_step(session, 13))  # before the push: the creation
    assert session.why("items", "locals").step == line_step(session, 10) + 1


def test_each_frame_has_its_own_variables(session: Session) -> None:
    inside = line_step(session, 5)  # `return x` in helper
    session.goto(inside)
    frames = session.state().frames
    assert [f.scope for f in frames] == ["main", "helper"]
    assert session.why("x", "locals").step == line_step(session, 4) + 1  # helper's x
    session.goto(inside)
    session.select_frame(0)  # main's x: written at `let x = 1`, not by helper
    assert session.why("x", "locals").step == line_step(session, 9) + 1


def test_restore_is_the_last_write_of_what_it_changed(session: Session) -> None:
    session.goto(line_step(session, 21))
    written = session.why("z", "locals").step
    restore = next(e.step for e in session.events("restore"))
    assert written == restore  # z = 42 came from restore(cp, {locals: {z: 42}})


def test_the_changed_marker_follows_in_place_changes_and_frames(session: Session) -> None:
    session.goto(line_step(session, 13) + 1)  # right after items.push(2)
    assert "items" in session.changed_names()
    session.goto(line_step(session, 14) + 1)  # right after obj.a[0] = 99
    assert "obj" in session.changed_names() and "items" not in session.changed_names()
    session.goto(line_step(session, 4) + 1)  # helper's `let x` ran
    assert "x" in session.changed_names()
    session.select_frame(0)  # main's x did not change
    assert "x" not in session.changed_names()
