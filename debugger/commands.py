"""Provides what a person types into the debugger, parsed: `:` command lines (`parse_command`,
the `COMMANDS` table the help screen lists), `:set` targets (`parse_set_command`) and the Agency
literals an edit accepts (`parse_literal`).

Parsing only: what a command does is the app's `cmd_<name>` and the session's methods. Edited
values are Agency literals (`3`, `-2.5`, `"text"`, `[1, 2]`, `{a: true}`), parsed with
`runtime.language.syntax.parse_expression` and evaluated here; anything else is refused with a message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from debugger.errors import SessionError

__all__ = [
    "ALIASES",
    "COMMANDS",
    "parse_command",
    "parse_literal",
    "parse_set_command",
    "parse_target",
]


def parse_literal(text: str) -> Any:
    """Evaluate an Agency literal: numbers (also negative), strings, true/false/null, arrays and
    objects of literals. Anything else raises SessionError saying what is accepted."""
    from runtime.errors import AgencySyntaxError
    from runtime.language.syntax import ast as A
    from runtime.language.syntax import parse_expression

    if not text.strip():
        raise SessionError('no value given: type a literal such as 3, "text", [1, 2] or {a: 1}')
    try:
        expr = parse_expression(text)
    except AgencySyntaxError as exc:
        raise SessionError(f"not a value: {exc}") from None
    except RecursionError:
        raise SessionError("not a value: nested too deeply") from None

    def ev(e: Any) -> Any:
        t = type(e)
        if t is A.Literal:
            return e.value
        if t is A.Unary and e.op in ("-", "+"):
            inner = ev(e.operand)
            if isinstance(inner, bool) or not isinstance(inner, int | float):
                raise SessionError(f"`{e.op}` needs a number in a value")
            return -inner if e.op == "-" else inner
        if t is A.Template and all(isinstance(p, str) for p in e.parts):
            return "".join(e.parts)
        if t is A.ArrayLit:
            if any(type(i) is A.Spread for i in e.items):
                raise SessionError("spreads (`...x`) are not allowed in a value")
            return [ev(i) for i in e.items]
        if t is A.ObjectLit:
            out: dict[str, Any] = {}
            for entry in e.entries:
                if type(entry) is A.Spread or not isinstance(entry.key, str):
                    raise SessionError("object keys must be plain names or strings in a value")
                out[entry.key] = ev(entry.value)
            return out
        raise SessionError(
            "only literal values can be set: numbers, strings, true, false, null, "
            "arrays and objects of literals (no names, calls or operators)"
        )

    return ev(expr)


_SEGMENT = re.compile(r"\.([A-Za-z_]\w*)|\[\s*(-?\d+)\s*\]|\[\s*(\"(?:[^\"\\]|\\.)*\")\s*\]")
_HEAD = re.compile(r"\s*([A-Za-z_]\w*)")


def parse_target(text: str) -> tuple[str, list[str | int]]:
    """`x`, `locals.x`, `obj.a[0]`, `messages[2]`, `answer` → (head name, path segments)."""
    m = _HEAD.match(text)
    if not m:
        raise SessionError(f"expected a variable name, not `{text.strip()}`")
    head, pos = m.group(1), m.end()
    path: list[str | int] = []
    rest = text[pos:].rstrip()
    pos = 0
    while pos < len(rest):
        seg = _SEGMENT.match(rest, pos)
        if not seg:
            raise SessionError(f"cannot read `{rest[pos:]}` in the target `{text.strip()}`")
        if seg.group(1) is not None:
            path.append(seg.group(1))
        elif seg.group(2) is not None:
            path.append(int(seg.group(2)))
        else:
            path.append(json.loads(seg.group(3)))
        pos = seg.end()
    return head, path


def parse_set_command(text: str) -> tuple[str, list[str | int], Any]:
    """`set x = 3` / `x = 3` (the leading `:` optional) → (name, path, value)."""
    body = text.strip().lstrip(":").strip()
    if body.startswith("set ") or body == "set":
        body = body[3:].strip()
    if "=" not in body:
        raise SessionError("usage: :set NAME = VALUE   (for example :set counter = 3)")
    target, _, value_text = body.partition("=")
    if not target.strip():
        raise SessionError("usage: :set NAME = VALUE   (a name is missing before `=`)")
    head, path = parse_target(target)
    return head, path, parse_literal(value_text)


# `:` commands: name -> (usage, what it does). The app runs `cmd_<name>`; the help screen lists
# these, so the list and the behaviour cannot drift apart.
COMMANDS: dict[str, tuple[str, str]] = {
    "set": ("set NAME = VALUE", "stage an edit (x, obj.a[0], globals.x, messages[i], answer)"),
    "goto": ("goto STEP", "go to a step (also g STEP, +N, -N, N%, end)"),
    "break": (
        "break LINE [hit N] [if COND] | break llm|tool [NAME]|interrupt|answer TEXT",
        "toggle a breakpoint on a line (also b LINE), stopping only when COND holds or at the "
        "Nth arrival; or stop c and C on an event",
    ),
    "breaks": ("breaks", "list the breakpoints"),
    "restore": ("restore", "restore from this step with the staged edits"),
    "discard": ("discard", "drop the edits staged at this step"),
    "write": ("write PATH", "save this step as a checkpoint file (also w PATH)"),
    "open": ("open PATH", "open a checkpoint file of this program"),
    "branch": ("branch ID", "switch to another branch"),
    "search": ("search TEXT", "next step whose output, messages, variable or function names match"),
    "why": ("why NAME", "go to the step that last wrote NAME"),
    "print": ("print EXPR", "the value of an expression at this step, nothing run (also p)"),
    "trace": ("trace EXPR", "every step where an expression's value changes; enter goes there"),
    "watch": ("watch EXPR", "show an expression's value at every step in the watches panel"),
    "watchpoint": ("watchpoint EXPR", "a watch that c and C stop on where its value changes"),
    "unwatch": ("unwatch N|EXPR|all", "remove a watch"),
    "diff": ("diff A [B] | diff branch N", "what differs between two steps, or two branches"),
    "frame": ("frame N", "select frame N of the call stack (0 innermost)"),
    "approve": ("approve [VALUE]", "approve the waiting interrupt and run on"),
    "reject": ("reject [REASON]", "reject the waiting interrupt and run on"),
    "resolve": ("resolve VALUE", "answer the waiting interrupt with a value"),
    "help": ("help", "the keys and these commands (also ?)"),
    "quit": ("quit", "leave the debugger (also q)"),
}
ALIASES = {
    "g": "goto",
    "b": "break",
    "w": "write",
    "q": "quit",
    "s": "set",
    "o": "open",
    "p": "print",
    "wp": "watchpoint",
    "h": "help",
    "?": "help",
}


def parse_command(text: str) -> tuple[str, str] | None:
    """`:goto 12` -> ("goto", "12"); `:x = 3` is `:set x = 3`; None for an empty line."""
    text = text.strip().lstrip(":").strip()
    if not text:
        return None
    name, _, rest = text.partition(" ")
    name = ALIASES.get(name, name)
    if name not in COMMANDS and re.match(r"[A-Za-z_][^=]*=", text):
        return "set", text
    if name not in COMMANDS:
        raise SessionError(f"unknown command `{name}` (press ? for the list)")
    return name, rest.strip()
