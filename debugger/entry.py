"""Provides `main`, the `agency` console script. A few command lines are answered here, before
click and the commands are imported (they are most of the command's start-up time):
`agency --version`, and `agency show` and `agency runs` in the plain forms `plain_arguments`
accepts, their errors included. Everything else goes to `debugger.cli.main`, and so does a
command whose text or error click would print otherwise (see `answer`): click then prints what
it always did."""

from __future__ import annotations

import sys

from debugger import __version__

TYPE_CHECKING = False  # typing's, without importing typing (`agency --version`'s start-up)
if TYPE_CHECKING:
    from typing import TextIO

# What click's `version_option` on `debugger.cli.cli` prints (a test holds them together).
VERSION_LINE = f"agency, version {__version__}\n"

# The plain forms: whether the command takes its one REF (not starting with `-`), and its
# options, each at most once, as `--name VALUE` or `--name=VALUE`: a flag, a path (not starting
# with `-`, which click's path check takes), a count (decimal digits) or a positive count.
PLAIN_FORMS = {
    "show": (True, {"--db": "path", "--branch": "count", "--json": "flag"}),
    "runs": (False, {"--db": "path", "--limit": "positive", "--json": "flag"}),
}


def main() -> None:
    args = sys.argv[1:]
    if args == ["--version"]:
        sys.stdout.write(VERSION_LINE)
        return
    if (plain := plain_arguments(args)) is not None and answer(*plain):
        return
    from debugger.cli import main as run

    run()


def plain_arguments(args: list[str]) -> tuple[str, str | None, dict[str, str]] | None:
    """The command, its REF and its options (a flag's value empty) when `args` is one of the
    `PLAIN_FORMS`, else None: click parses it."""
    form = PLAIN_FORMS.get(args[0]) if args else None
    if form is None:
        return None
    takes_ref, options = form
    ref: str | None = None
    given: dict[str, str] = {}
    rest = args[1:]
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        kind = options.get(name)
        if kind == "flag" and not eq and name not in given:
            given[name] = ""
        elif kind is not None and kind != "flag":
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            if name in given or not _fits(kind, value):
                return None
            given[name] = value
        elif takes_ref and ref is None and arg and not arg.startswith("-"):
            ref = arg
        else:
            return None
    if takes_ref and ref is None:
        return None
    return args[0], ref, given


def _fits(kind: str, value: str) -> bool:
    if kind == "path":
        return bool(value) and not value.startswith("-") and _path_passes(value)
    digits = value.isascii() and value.isdigit()
    # Not `int(value) > 0`: Python refuses to convert over 4,300 digits (a traceback here,
    # before click); click reports the value itself.
    return digits and len(value) <= 18 and (kind == "count" or value.strip("0") != "")


def _path_passes(path: str) -> bool:
    """Whether click's `Path(dir_okay=False)` takes `path` as it is: missing, or there, not a
    directory and readable."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True
    return not stat.S_ISDIR(mode) and os.access(path, os.R_OK)


def answer(command: str, ref: str | None, options: dict[str, str]) -> bool:
    """Print what the command prints, its error as `debugger.cli.report` prints one included,
    or return False for click to do it all again: when it fails on something else than an
    AgencyError (click's internal-error report), or prints what click would print otherwise
    (see `_printable_as_is`). Ctrl-C and a closed pipe end the command as under click."""
    from debugger import signals
    from runtime.errors import EXIT_STOPPED, AgencyError, AgencySyntaxError

    starting = signals.signal(signals.SIGINT, signals.default_int_handler)  # as cli.main does
    try:
        from debugger.run_reading import RUNS_LIMIT, runs_text, show_text

        db, as_json = options.get("--db"), "--json" in options
        stream: TextIO | None = sys.stdout
        code = 0
        try:
            if ref is not None:
                raw, echoed = "", show_text(ref, db, int(options.get("--branch", 0)), as_json)
            else:
                raw, echoed = runs_text(db, int(options.get("--limit", RUNS_LIMIT)), as_json)
        except AgencySyntaxError:  # printed with its diagnostics (not something these raise)
            stream = None
        except AgencyError as exc:
            stream, raw, echoed, code = sys.stderr, "", f"agency: {exc}\n", exc.exit_code
        except Exception:
            stream = None
        if stream is None or not _printable_as_is(stream, raw, echoed):
            signals.signal(signals.SIGINT, starting)  # click's start is quiet on Ctrl-C again
            return False
        try:
            stream.write(raw + echoed)
            stream.flush()
        except BrokenPipeError:  # `| head`: click (and rich) exit quietly with 1
            _quiet(stream)
            sys.exit(1)
    except KeyboardInterrupt:
        sys.stderr.write("\nagency: stopped (Ctrl-C)\n")
        sys.exit(EXIT_STOPPED)
    if code:
        sys.exit(code)
    return True


def _printable_as_is(stream: TextIO, raw: str, echoed: str) -> bool:
    """Whether writing `raw` (what rich writes itself) and `echoed` to `stream` gives the bytes
    click would: `click.echo` strips escape sequences when the stream is not a terminal and
    writes UTF-8 to a stream that says ASCII; and the stream can encode both (rich and click
    fail otherwise, and click reports that)."""
    import codecs

    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return False
    try:
        terminal = stream.isatty()
    except (OSError, ValueError):
        terminal = False
    if "\x1b" in echoed and not terminal:
        return False
    try:
        if not echoed.isascii() and codecs.lookup(encoding).name == "ascii":
            return False
        (raw + echoed).encode(encoding, getattr(stream, "errors", None) or "strict")
    except (UnicodeError, LookupError):
        return False
    return True


def _quiet(stream: TextIO) -> None:
    """Send what is left in the stream's buffer to /dev/null: the pipe's reader is gone, and
    the interpreter's own flush at exit would otherwise complain on stderr."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
