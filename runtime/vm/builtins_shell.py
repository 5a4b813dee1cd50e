"""Provides the host functions behind `std::shell`'s commands: `exec` (an executable and its
arguments, no shell) and `bash` (a command line run by `sh -c`), and `which`.

A command is an effect on the world: it runs through the effect journal (`perform`), keyed by
the step that runs it, so a resumed or replayed run is served the recorded
`{stdout, stderr, exitCode}` and never runs the command again. Commands run in the working
directory or a directory inside it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_fs import base_dir
from runtime.vm.effects import observe, perform
from runtime.vm.values import JSArray, JSObject, to_number, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


def _s(v: Any) -> str:
    return v if type(v) is str else to_str(v)


def _run(
    m: Machine, kind: str, argv: list[str], cwd: Any, timeout: Any, stdin: Any, shown: str
) -> Any:
    where = base_dir(m, cwd, changes=True, what=kind)
    limit = to_number(timeout) if timeout else 0
    text_in = _s(stdin) if stdin else None

    import subprocess  # for the programs that run commands (start-up time)

    def act() -> JSObject:
        try:
            p = subprocess.run(
                argv,
                cwd=where,
                input=text_in,
                capture_output=True,
                text=True,
                timeout=(limit / 1000) if limit and limit > 0 else None,
                stdin=None if text_in is not None else subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise AgencyRuntimeError(f"{kind}: {shown!r} timed out after {limit:g} ms") from None
        except OSError as exc:
            raise AgencyRuntimeError(f"{kind}: cannot run {shown!r}: {exc.strerror}") from None
        return JSObject({"stdout": p.stdout, "stderr": p.stderr, "exitCode": p.returncode})

    args = {"command": shown, "cwd": _s(cwd) if cwd else "."}  # as written: root-independent
    return perform(m, kind, args, act)


def _blocked(command: str, blocked: Any) -> None:
    for b in blocked or []:
        word = _s(b)
        if word and (command == word or command.startswith(word + " ")):
            raise AgencyRuntimeError(f"the command {command!r} is blocked ({word!r})")


@builtin("__shell_exec")
def _shell_exec(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    command = _s(arg(args, named, 0, "command", ""))
    argv = arg(args, named, 1, "args") or JSArray()
    if type(argv) is not JSArray:
        raise AgencyRuntimeError("exec: `args` must be a list of strings")
    if not command:
        raise AgencyRuntimeError("exec: expected a command")
    allowed = arg(args, named, 5, "allowedExecutables") or []
    if allowed and command not in [_s(a) for a in allowed]:
        raise AgencyRuntimeError(f"exec: {command!r} is not an allowed executable")
    full = [command, *(_s(a) for a in argv)]
    _blocked(" ".join(full), arg(args, named, 6, "blockedCommands"))
    return _run(
        m,
        "exec",
        full,
        arg(args, named, 2, "cwd"),
        arg(args, named, 3, "timeout"),
        arg(args, named, 4, "stdin"),
        " ".join(full),
    )


@builtin("__shell_bash")
def _shell_bash(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    command = _s(arg(args, named, 0, "command", ""))
    if not command:
        raise AgencyRuntimeError("bash: expected a command")
    _blocked(command.strip(), arg(args, named, 4, "blockedCommands"))
    return _run(
        m,
        "bash",
        ["sh", "-c", command],
        arg(args, named, 1, "cwd"),
        arg(args, named, 2, "timeout"),
        arg(args, named, 3, "stdin"),
        command,
    )


@builtin("__shell_which")
def _shell_which(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    command = _s(arg(args, named, 0, "command", ""))
    if os.sep in command or command.startswith("."):
        raise AgencyRuntimeError(f"which: {command!r} is a path; give a command name")
    if not command:
        return ""
    import shutil

    return observe(m, "which", {"command": command}, lambda: shutil.which(command) or "")
