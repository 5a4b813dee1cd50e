"""Provides `input(prompt)`, a line a person types, and std::thread's test-only
`_installSlowInput(delayMs, answer)`, which stands in for that person.

A typed answer is an input of the run: it is observed, so re-execution from the record is
served the answer instead of asking again. Time spent waiting for a person is not the program's:
each running time guard's clock reading is moved forward by the wait, so a `guard(time: …)`
around an `input()` trips only on the work around it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_guard import running_guards
from runtime.vm.builtins_std import FAKE_CLOCK
from runtime.vm.builtins_threads import store_mutable
from runtime.vm.effects import observe
from runtime.vm.values import JSObject, to_number, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

SLOW_INPUT = "__slowInput"  # m.mutable: {delayMs, answer} while a test stands in for a person

LineReader = Callable[[str], "str | None"]
"""Asks a person for a line after showing the prompt: the line, or None at the end of input."""

_line_reader: LineReader | None = None


def set_line_reader(reader: LineReader | None) -> LineReader | None:
    """Who answers `input()` in this process instead of stdin (None: stdin again); returns the
    one it replaces. The terminal is one per process: a full-screen debugger owns it, so a line
    read from stdin would never come (or would take the debugger's keys); it asks in a dialog."""
    global _line_reader
    before, _line_reader = _line_reader, reader
    return before


@builtin("__install_slow_input")
def _install_slow_input(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    delay = to_number(arg(args, named, 0, "delayMs", 0))
    if delay != delay or delay < 0 or delay > 60_000:
        raise AgencyRuntimeError("_installSlowInput: delayMs must be between 0 and 60000")
    value = JSObject({"delayMs": delay, "answer": to_str(arg(args, named, 1, "answer", ""))})
    store_mutable(m, SLOW_INPUT, value)
    return None


@builtin("input")
def _input(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    """A line typed in answer to `prompt` (without its newline; "" at the end of input)."""
    prompt = to_str(arg(args, named, 0, "prompt", "") or "")
    slow = m.mutable.get(SLOW_INPUT)

    def ask() -> JSObject:
        started = time.monotonic()
        if type(slow) is JSObject:
            time.sleep(float(slow["delayMs"]) / 1000)
            answer = to_str(slow["answer"])
        elif _line_reader is not None:
            answer = _line_reader(prompt) or ""
        else:
            sys.stderr.write(prompt)
            sys.stderr.flush()
            try:
                # No stdin at all (started with descriptor 0 closed, `<&-`): the end of input,
                # as at the end of /dev/null.
                line = sys.stdin.readline() if sys.stdin is not None else ""
            except (OSError, ValueError) as exc:  # no terminal, or stdin closed
                raise AgencyRuntimeError(f"input: cannot read a line: {exc}") from None
            answer = line.removesuffix("\n").removesuffix("\r")
        waited = int((time.monotonic() - started) * 1000)
        return JSObject({"answer": answer, "waitedMs": waited})

    got: JSObject = observe(m, "input", {"prompt": prompt}, ask)
    if FAKE_CLOCK not in m.mutable:  # a fake clock did not move while the person thought
        for _at, g in running_guards(m):
            if g.get("timeBase") is not None:
                m.set_key(g, "timeBase", g["timeBase"] + got["waitedMs"])
    return to_str(got["answer"])
