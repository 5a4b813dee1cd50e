"""Saves SVG screenshots of the debugger's main states into this folder.

    python screenshots/make.py [NAME ...]

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
- debugger-tool-stack.svg a tool round: stopped inside `celsius`, called by the `forecast` tool
                          the model asked for (programs/trip.agency): a 3-frame call stack
- debugger-long-run.svg   a 400,000-step run (programs/long.agency) continued to a conditional
                          breakpoint three quarters of the way along the scrubber
- debugger-cost.svg       an LLM run priced as gpt-4o (programs/reviews.agency, answered by a
                          local OpenAI-compatible server with real usage figures): the tokens
                          strip, and the tokens and cost of the call and of the run
- debugger-latency.svg    the same run with the strip switched (m) to the time each call took

The SVGs name system monospace fonts (no web fonts), so they render the same offline.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

SIZE = (120, 36)


PROGRAMS = Path("screenshots/programs")  # relative to the repository: the title shows it
MONOSPACE = 'ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace'
SANS = 'Arial, Helvetica, "Liberation Sans", "DejaVu Sans", sans-serif'


def new_app(  # noqa: ANN201 - DebuggerApp
    path: str = "examples/dice.agency",
    mocks: str | None = "examples/dice.mocks.json",
    model: str | None = None,
    base_url: str | None = None,
):
    from debugger.app import DebuggerApp
    from debugger.opening import record_session
    from runtime.language.program import load_program
    from runtime.llm.mock import load_mocks
    from runtime.runs.runner import RunConfig

    program = load_program(path)
    config = RunConfig(
        mocks=load_mocks(mocks) if mocks else None,
        model_spec=model,
        base_url=base_url,
        quiet=True,
    )
    return DebuggerApp(record_session(program, config))


def offline_fonts(svg: str) -> str:
    """Rich's SVG loads Fira Code from a CDN (`@font-face` with URLs) and falls back to
    `monospace`: name the system monospace fonts instead, so it renders offline the same way
    (each text run carries its own `textLength`, so the columns line up in any of them)."""
    svg = re.sub(r"\s*@font-face \{[^}]*\}", "", svg)
    svg = re.sub(r"font-family: Fira Code, monospace;", f"font-family: {MONOSPACE};", svg)
    return svg.replace("font-family: arial;", f"font-family: {SANS};")


class PricedServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers chat completions in turn, with
    the usage a real one reports (tokens counted from the request), after a real delay: the
    run goes through the OpenAI client, the recorder and the price table as any other."""

    ANSWERS = [
        ("positive", 0.6),
        ("negative", 1.4),
        ("mixed", 0.3),
        (
            "Mostly liked for battery life and delivery; one cracked screen went unanswered by"
            " support, which is the fix to make first.",
            2.2,
        ),
    ]

    def __init__(self) -> None:
        answers = list(self.ANSWERS)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text, delay = answers.pop(0) if len(answers) > 1 else answers[0]
                time.sleep(delay)
                prompt = json.dumps(body.get("messages", []))
                reply = {
                    "id": "chatcmpl-shot",
                    "object": "chat.completion",
                    "model": "gpt-4o-2024-08-06",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": len(prompt) // 4,
                        "completion_tokens": max(1, len(text) // 4),
                        "total_tokens": len(prompt) // 4 + max(1, len(text) // 4),
                    },
                }
                payload = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def tool_app():  # noqa: ANN201 - DebuggerApp
    return new_app(str(PROGRAMS / "trip.agency"), str(PROGRAMS / "trip.mocks.json"))


def long_app():  # noqa: ANN201 - DebuggerApp
    return new_app(str(PROGRAMS / "long.agency"), None)


def priced_app():  # noqa: ANN201 - DebuggerApp
    server = PricedServer()
    try:
        return new_app(str(PROGRAMS / "reviews.agency"), None, "openai/gpt-4o", server.url)
    finally:
        server.close()


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


async def tool_stack(pilot) -> None:  # noqa: ANN001
    pilot.app.run_command("break 5")  # `return c` in celsius, called by the forecast tool
    await pilot.press("c")
    await settle(pilot)


async def long_run(pilot) -> None:  # noqa: ANN001
    pilot.app.run_command("break 7 if i == 75000")
    await pilot.press("c")
    await settle(pilot)


async def cost(pilot) -> None:  # noqa: ANN001
    await pilot.press("end", "left_square_bracket")
    await settle(pilot)


async def latency(pilot) -> None:  # noqa: ANN001
    await cost(pilot)
    await pilot.press("m")
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
    "debugger-tool-stack": tool_stack,
    "debugger-long-run": long_run,
    "debugger-cost": cost,
    "debugger-latency": latency,
}
# The shots of other programs than the dice demo, and how each opens.
APPS: dict[str, Callable[[], Any]] = {
    "debugger-tool-stack": tool_app,
    "debugger-long-run": long_app,
    "debugger-cost": priced_app,
    "debugger-latency": priced_app,
}


async def shoot(name: str, scenario: Callable[..., Awaitable[None]]) -> Path:
    app = APPS.get(name, new_app)()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await scenario(pilot)
        path = HERE / f"{name}.svg"
        svg = offline_fonts(app.export_screenshot(title="agency debugger"))
        path.write_text(svg, encoding="utf-8")
    return path


def main() -> None:
    os.chdir(ROOT)
    only = set(sys.argv[1:])  # shot names (without .svg) to make; all by default
    for name, scenario in SHOTS.items():
        if only and name not in only:
            continue
        path = asyncio.run(shoot(name, scenario))
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
