"""The status line keeps a long reason readable: what cannot fit on one line goes on a second
one (how to resume a stopped recording was cut off at "; the"), and it is one line again when
the text fits."""

from __future__ import annotations

from textual.app import App, ComposeResult

from debugger.widgets.status_line import StatusLine
from runtime.record.views import StateView, Usage


class Line(App[None]):
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")


def rows(app: App[None]) -> list[str]:
    strips = app.screen._compositor.render_strips()  # noqa: SLF001
    return ["".join(segment.text for segment in strip).rstrip() for strip in strips]


async def test_a_reason_too_long_for_one_line_goes_on_a_second() -> None:
    app = Line()
    async with app.run_test(size=(100, 4)) as pilot:
        line = app.query_one(StatusLine)
        state = StateView(0, 0, None, (), {}, {}, "0", (), Usage(0, 0, 0.0))
        reason = (
            "recording a run of forever.agency: cancelled (esc) at step 231,936; the run is "
            "saved as interrupted (agency resume r1m94k1rqyn9m runs it on)"
        )
        line.show(state, 231_937, reason, max_steps=1_000_000)
        await pilot.pause()
        assert line.size.height == 2
        shown = " ".join(r.strip() for r in rows(app)[:2])
        assert "agency resume r1m94k1rqyn9m runs it on" in shown
        line.show(state, 231_937, "went to step 5", max_steps=1_000_000)
        await pilot.pause()
        assert line.size.height == 1  # back to one line: the panels get the row back
        assert "went to step 5" in rows(app)[0]


async def test_step_numbers_are_grouped_as_the_step_budget_is() -> None:
    # "step 2226176/4500005 (max 1,000,000)": the long numbers were the hard ones to read
    app = Line()
    async with app.run_test(size=(100, 4)) as pilot:
        line = app.query_one(StatusLine)
        state = StateView(2_226_176, 0, None, (), {}, {}, "0", (), Usage(0, 0, 0.0))
        line.show(state, 4_500_006, max_steps=1_000_000)
        await pilot.pause()
        assert "step 2,226,176/4,500,005 (max 1,000,000)" in rows(app)[0]


async def test_how_to_resume_a_cancelled_recording_is_readable_at_80_columns() -> None:
    # At 80 columns the reason needs three rows; cut at two, "agency resume … runs it on"
    # (what to do next) was the part lost.
    app = Line()
    async with app.run_test(size=(80, 6)) as pilot:
        line = app.query_one(StatusLine)
        state = StateView(0, 0, None, (), {}, {}, "0", (), Usage(0, 0, 0.0))
        reason = (
            "recording a run of longer.agency: cancelled (esc) at step 960,512; the run is "
            "saved as interrupted (agency resume r1m952hsyavbf runs it on)"
        )
        line.show(state, 960_513, reason, status="interrupted", max_steps=1_000_000)
        await pilot.pause()
        assert line.size.height == 3
        shown = " ".join(r.strip() for r in rows(app)[:3])
        assert "(agency resume r1m952hsyavbf runs it on)" in shown
        line.show(state, 960_513, "went to step 5", max_steps=1_000_000)
        await pilot.pause()
        assert line.size.height == 1
