"""Saves SVG screenshots of the debugger's main states into this folder.

    python screenshots/make.py

Drives the real app headless with Pilot, on examples/dice.agency with its scripted LLM answers,
at 120x36, and writes:

- debugger-start.svg      the run opened at step 0
- debugger-llm-call.svg   at the second LLM call: the prompt, the answer, the messages
- debugger-breakpoint.svg continued to a breakpoint after the first restore
- debugger-edit.svg       editing `result` before it is tested
- debugger-branches.svg   after restoring from there with result = 6: two branches
- debugger-help.svg       the full list of keys and commands
- debugger-watches.svg    a watchpoint on `result` and a watch, continued to where it changed
- debugger-diff.svg       `:diff branch 0` after the restore with result = 6
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

SIZE = (120, 36)


def new_app():  # noqa: ANN201 - DebuggerApp
    from debugger.app import DebuggerApp
    from debugger.opening import record_session
    from runtime.language.program import load_program
    from runtime.llm.mock import load_mocks
    from runtime.runs.runner import RunConfig

    program = load_program("examples/dice.agency")
    config = RunConfig(mocks=load_mocks("examples/dice.mocks.json"), quiet=True)
    return DebuggerApp(record_session(program, config))


async def settle(pilot) -> None:  # noqa: ANN001 - textual.pilot.Pilot
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    pilot.app.clear_notifications()
    for field in pilot.app.screen.query("Input"):
        field.cursor_blink = False
    await pilot.pause()


async def select(pilot, name: str) -> None:  # noqa: ANN001
    tree = pilot.app.variables
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        if node is not None and node.data is not None and node.data.name == name:
            tree.cursor_line = line
            break
    await pilot.pause()


async def start(pilot) -> None:  # noqa: ANN001
    await settle(pilot)


async def llm_call(pilot) -> None:  # noqa: ANN001
    await pilot.press("right_square_bracket", "right_square_bracket")
    await settle(pilot)


async def breakpoint_hit(pilot) -> None:  # noqa: ANN001
    pilot.app.run_command("break 6")
    await pilot.press("c", "c")
    await settle(pilot)


async def edit(pilot) -> None:  # noqa: ANN001
    pilot.app.run_command("goto 4")
    await settle(pilot)
    await select(pilot, "result")
    await pilot.press("e")
    await settle(pilot)
    pilot.app.screen.query_one("Input").value = "6"
    await pilot.pause()


async def branches(pilot) -> None:  # noqa: ANN001
    await edit(pilot)
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("r")
    await settle(pilot)
    await pilot.press("end")
    await settle(pilot)
    await pilot.press("B")
    await settle(pilot)


async def help_screen(pilot) -> None:  # noqa: ANN001
    await pilot.press("question_mark")
    await settle(pilot)


async def watches(pilot) -> None:  # noqa: ANN001
    pilot.app.run_command("goto 2")
    await settle(pilot)
    pilot.app.run_command("watchpoint result")
    pilot.app.run_command("watch counter * 10")
    await pilot.press("c", "c")
    await settle(pilot)


async def diff(pilot) -> None:  # noqa: ANN001
    await branches(pilot)
    await pilot.press("escape")
    await settle(pilot)
    pilot.app.run_command("diff branch 0")
    await settle(pilot)


SHOTS: dict[str, Callable[..., Awaitable[None]]] = {
    "debugger-start": start,
    "debugger-llm-call": llm_call,
    "debugger-breakpoint": breakpoint_hit,
    "debugger-edit": edit,
    "debugger-branches": branches,
    "debugger-help": help_screen,
    "debugger-watches": watches,
    "debugger-diff": diff,
}


async def shoot(name: str, scenario: Callable[..., Awaitable[None]]) -> Path:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await scenario(pilot)
        path = HERE / f"{name}.svg"
        path.write_text(app.export_screenshot(title="agency debugger"), encoding="utf-8")
    return path


def main() -> None:
    os.chdir(ROOT)
    for name, scenario in SHOTS.items():
        path = asyncio.run(shoot(name, scenario))
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
