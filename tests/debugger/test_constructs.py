"""Pilot tests: the debugger shows the language's newer constructs as it shows a def call.

For each construct family (trailing blocks, lambdas run by `map`, partial application, match
with guards, fork branches, handlers, a comprehension, Set and Map values, a `@validate`
decorator) a node of `tests/programs/debugger_constructs/constructs.agency` is recorded and the
real app is driven with step keys: the block's (lambda's, handler's, validator's) frame is on the
call stack, its variables are in the variables panel, and its statements are steps of the
timeline (the status line and the source pane follow them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from debugger.app import DebuggerApp
from debugger.opening import record_session
from debugger.session import Session
from debugger.widgets.call_stack import CallStack
from debugger.widgets.source_view import SourceView
from debugger.widgets.status_line import StatusLine
from debugger.widgets.timeline_bar import TimelineBar
from debugger.widgets.variables_panel import VariablesPanel
from runtime.language.program import load_program
from runtime.runs.runner import RunConfig
from tests.debugger.conftest import ROOT, SIZE, settle

PROGRAM = Path("tests/programs/debugger_constructs/constructs.agency")
SOURCE = (ROOT / PROGRAM).read_text().splitlines()


def record(node: str) -> Session:
    """A session over a fresh recording of one node of the constructs program."""
    return record_session(load_program(str(PROGRAM)), RunConfig(node=node, quiet=True))


@asynccontextmanager
async def debugging(node: str) -> AsyncIterator[tuple[DebuggerApp, Any]]:
    """The real app over a fresh recording of `node`, drawn at step 0, and its Pilot."""
    app = DebuggerApp(record(node))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        yield app, pilot


def line_of(text: str, after: int = 0) -> int:
    """The number of the first source line after line `after` that contains `text`."""
    for number, line in enumerate(SOURCE[after:], start=after + 1):
        if text in line:
            return number
    raise AssertionError(f"no line with {text!r} in {PROGRAM}")


def stack_rows(app: DebuggerApp) -> list[str]:
    """The call stack as shown, innermost first."""
    stack = app.query_one(CallStack)
    return [str(stack.get_option_at_index(i).prompt) for i in range(stack.option_count)]


def frame_at(app: DebuggerApp, depth: int) -> list[str]:
    """[scope, kind] of the call stack's row `depth` (0: innermost), as shown: "#0 scope  kind"."""
    number_and_scope, kind, *_ = stack_rows(app)[depth].split("  ")
    return [number_and_scope.split(" ", 1)[1], kind]


def variables_text(app: DebuggerApp) -> str:
    tree = app.query_one(VariablesPanel)
    rows = (tree.get_node_at_line(i) for i in range(tree.last_line + 1))
    return "\n".join(str(node.label) for node in rows if node is not None)


def status(app: DebuggerApp) -> str:
    return str(app.query_one(StatusLine).content)


async def step_until(pilot, predicate, limit: int = 40) -> None:  # noqa: ANN001 - Pilot
    """Press `s` until `predicate(app)` holds (what a person does), failing after `limit`."""
    app = pilot.app
    for _ in range(limit):
        if predicate(app):
            return
        before = app.session.step
        await press(pilot, "s")
        assert app.session.step == before + 1, "the run ended before the construct showed"
    raise AssertionError(f"not shown within {limit} steps; stack: {stack_rows(app)}")


def innermost(scope: str, kind: str):  # noqa: ANN201 - a predicate on the app
    return lambda app: bool(stack_rows(app)) and frame_at(app, 0) == [scope, kind]


def at_line(line: int):  # noqa: ANN201 - a predicate on the app
    return lambda app: app.query_one(SourceView).current_line == line


async def press(pilot, *keys: str) -> None:  # noqa: ANN001 - Pilot
    """Press `keys` and wait for the app to show what they did."""
    await pilot.press(*keys)
    await settle(pilot)


def on_step(app: DebuggerApp, scope: str, line: int) -> None:
    """The cursor's step is at `scope:line` everywhere it shows: status, source, timeline."""
    assert f"at {scope}:{line}" in status(app)
    assert app.query_one(SourceView).current_line == line
    assert app.query_one(TimelineBar).step == app.session.step


async def test_a_trailing_blocks_frame_variables_and_steps() -> None:
    async with debugging("trailingBlock") as (app, pilot):
        await step_until(pilot, innermost("trailingBlock.block1", "block"))
        assert [frame_at(app, depth) for depth in range(len(stack_rows(app)))] == [
            ["trailingBlock.block1", "block"],
            ["apply", "def"],  # the def that runs the block is its caller
            ["trailingBlock", "node"],
        ]
        assert app.query_one(VariablesPanel).border_title == "variables · trailingBlock.block1"
        assert "n = 1" in variables_text(app)
        on_step(app, "trailingBlock.block1", line_of("const shifted"))
        await press(pilot, "s")
        assert "shifted = 11" in variables_text(app)  # the block's own local
        on_step(app, "trailingBlock.block1", line_of("return shifted"))
        await press(pilot, "S")  # back in time inside the block: its local is not set yet
        assert "shifted" not in variables_text(app) and "n = 1" in variables_text(app)
        stack = app.query_one(CallStack)
        stack.focus()
        await press(pilot, "down", "down", "enter")  # the node that wrote the block
        assert app.query_one(VariablesPanel).border_title == "variables · trailingBlock"
        assert "base = 10" in variables_text(app)
        assert app.query_one(SourceView).current_line == line_of("apply([1, 2]) as n")
        # the second call of the block is a later step with its own argument
        stack.blur()
        await step_until(pilot, lambda app: "n = 2" in variables_text(app))
        assert frame_at(app, 0)[0] == "trailingBlock.block1"


async def test_a_lambda_run_by_map_is_a_frame_per_element() -> None:
    async with debugging("lambdaByMap") as (app, pilot):
        await step_until(pilot, innermost("lambdaByMap.block2", "block"))
        assert "x = 1" in variables_text(app)
        assert frame_at(app, 1) == ["map", "prelude"]  # map() runs it
        on_step(app, "lambdaByMap.block2", line_of("\\x -> x * factor"))
        first = app.session.step
        await press(pilot, "s")
        assert app.session.step == first + 1
        assert frame_at(app, 0)[0] == "lambdaByMap.block2"
        assert "x = 2" in variables_text(app)  # the next element: the next step
        await step_until(pilot, innermost("lambdaByMap", "node"))
        assert "tripled = [3, 6]" in variables_text(app)


async def test_a_partial_functions_call_shows_the_bound_argument() -> None:
    async with debugging("partialApplication") as (app, pilot):
        await press(pilot, "s")
        assert "scale.partial(factor: 2)" in variables_text(app)  # the value names its binding
        await step_until(pilot, innermost("scale", "def"))
        shown = variables_text(app)
        assert "factor = 2" in shown and "value = 21" in shown  # bound and given
        assert frame_at(app, 1)[0] == "partialApplication"
        await press(pilot, "s")
        assert "scaled = 42" in variables_text(app)


async def test_a_match_arms_guard_and_binding_show_on_the_timeline() -> None:
    async with debugging("matchWithGuards") as (app, pilot):
        now = line_of('verdict = "now"')
        await step_until(pilot, at_line(now))
        on_step(app, "classify", now)
        assert "hours = 1" in variables_text(app)  # the pattern's binding is a local
        # the second order fails the guard: its steps go to the next arm, never to `now`
        soon = line_of('verdict = "soon')
        await step_until(pilot, at_line(soon))
        assert "hours = 5" in variables_text(app)
        lines = [app.session.timeline.state_at(k).frames[-1].line for k in range(app.session.step)]
        assert lines.count(now) == 1


async def test_fork_branches_are_block_frames_one_after_another() -> None:
    async with debugging("forkBranches") as (app, pilot):
        await step_until(pilot, innermost("forkBranches.block3", "block"))
        assert 'letter = "a"' in variables_text(app)
        assert frame_at(app, 1) == ["fork", "prelude"]
        await press(pilot, "s")
        assert 'label = "branch a"' in variables_text(app)
        on_step(app, "forkBranches.block3", line_of("return label"))
        await step_until(pilot, lambda app: 'letter = "b"' in variables_text(app))
        assert frame_at(app, 0) == ["forkBranches.block3", "block"]


async def test_a_handlers_frame_shows_the_interrupt_it_answers() -> None:
    async with debugging("handlerAnswers") as (app, pilot):
        await step_until(pilot, innermost("handlerAnswers.handler1", "handler"))
        assert "ship it?" in variables_text(app)  # the handler's parameter: the request
        on_step(app, "handlerAnswers.handler1", line_of("const seen"))
        await press(pilot, "s")
        assert 'seen = "ship it?"' in variables_text(app)
        await step_until(pilot, innermost("handlerAnswers", "node"))
        assert 'answer = "yes to ship it?"' in variables_text(app)


async def test_a_comprehensions_calls_are_steps_of_its_line() -> None:
    async with debugging("comprehension") as (app, pilot):
        await step_until(pilot, innermost("square", "def"))
        assert "n = 1" in variables_text(app)
        caller = stack_rows(app)[1]
        assert frame_at(app, 1)[0] == "comprehension"
        assert f"line {line_of('square(n) for n in')}" in caller  # the pending call
        await press(pilot, "s", "s")  # the filter skips 2: the next call is for 3
        assert frame_at(app, 0)[0] == "square" and "n = 3" in variables_text(app)
        await step_until(pilot, innermost("comprehension", "node"))
        assert "squares = [1, 9]" in variables_text(app)


async def test_set_and_map_values_show_their_contents_as_they_change() -> None:
    async with debugging("setAndMap") as (app, pilot):
        filled = line_of("const count")
        await step_until(pilot, at_line(filled))
        shown = variables_text(app)
        tags = next(row for row in shown.splitlines() if "tags = " in row)
        assert '"x"' in tags and '"y"' in tags and tags.count('"x"') == 1  # a set: once each
        scores = next(row for row in shown.splitlines() if "scores = " in row)
        assert '"ada"' in scores and "3" in scores  # what `set` put in, at the next step
        await press(pilot, "S")
        scores = next(row for row in variables_text(app).splitlines() if "scores = " in row)
        assert '"ada"' not in scores


async def test_a_validate_decorator_runs_its_validator_as_a_frame() -> None:
    async with debugging("decorator") as (app, pilot):
        await step_until(pilot, innermost("type Adult", "def"))  # the decorated type's check
        on_step(app, "type Adult", line_of("type Adult ="))
        await step_until(pilot, innermost("adult", "def"))
        assert '"Ann"' in variables_text(app)  # the value being validated
        on_step(app, "adult", line_of("const old"))
        await press(pilot, "s")
        assert "old = true" in variables_text(app)
        await step_until(pilot, innermost("decorator", "node"))
        assert "checked = true" in variables_text(app)
