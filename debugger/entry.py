"""Provides `main`, the `agency` console script. Two command lines are answered here, before
click and the commands are imported (they are most of the command's start-up time):
`agency --version`, and `agency show REF [--db DB] [--branch N] [--json]` in the plain forms
`show_arguments` accepts, its errors included. Everything else goes to `debugger.cli.main`,
and so does a `show` whose text or error click would print otherwise (see `answer_show`): click
then prints what it always did."""

from __future__ import annotations

import sys

from debugger import __version__

TYPE_CHECKING = False  # typing's, without importing typing (`agency --version`'s start-up)
if TYPE_CHECKING:
    from typing import TextIO

# What click's `version_option` on `debugger.cli.cli` prints (a test holds them together).
VERSION_LINE = f"agency, version {__version__}\n"


def main() -> None:
    args = sys.argv[1:]
    if args == ["--version"]:
        sys.stdout.write(VERSION_LINE)
        return
    if args[:1] == ["show"] and (shown := show_arguments(args[1:])) is not None:
        if answer_show(*shown):
            return
    from debugger.cli import main as run

    run()


def show_arguments(args: list[str]) -> tuple[str, str | None, int, bool] | None:
    """`show`'s REF, --db, --branch and --json from its arguments, or None for anything but the
    plain forms: one REF not starting with `-`, `--db DB` / `--db=DB` and `--branch N` /
    `--branch=N` (N decimal digits) at most once each, `--json` at most once. A --db naming
    something click's path check refuses (a directory, an unreadable file) is left to click."""
    ref: str | None = None
    given: dict[str, str] = {}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        if name in ("--db", "--branch"):
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            if name in given or not value or value.startswith("-"):
                return None
            given[name] = value
        elif arg == "--json" and arg not in given:
            given[arg] = ""
        elif ref is None and arg and not arg.startswith("-"):
            ref = arg
        else:
            return None
    branch = given.get("--branch", "0")
    if ref is None or not (branch.isascii() and branch.isdigit()):
        return None
    db = given.get("--db")
    if db is not None and not _path_passes(db):
        return None
    return ref, db, int(branch), "--json" in given


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


def answer_show(ref: str, db: str | None, branch: int, as_json: bool) -> bool:
    """Print what `agency show` prints, its error as `debugger.cli.report` prints one included,
    or return False for click to do it all again: when reading the run fails on something else
    than an AgencyError (click's internal-error report), or the text is one `click.echo` would
    change (escape sequences it strips from a pipe, a stream it re-encodes). Ctrl-C and a closed
    pipe end the command as under click."""
    from debugger import signals
    from runtime.errors import EXIT_STOPPED, AgencyError, AgencySyntaxError

    starting = signals.signal(signals.SIGINT, signals.default_int_handler)  # as cli.main does
    try:
        from debugger.run_reading import show_text

        try:
            stream, text, code = sys.stdout, show_text(ref, db, branch, as_json), 0
        except AgencySyntaxError:  # printed with its diagnostics (not something show raises)
            stream, text, code = None, "", 0
        except AgencyError as exc:
            stream, text, code = sys.stderr, f"agency: {exc}\n", exc.exit_code
        except Exception:
            stream, text, code = None, "", 0
        if stream is None or not _printable_as_is(stream, text):
            signals.signal(signals.SIGINT, starting)  # click's start is quiet on Ctrl-C again
            return False
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:  # `| head`: click exits quietly with 1
            _quiet(stream)
            sys.exit(1)
    except KeyboardInterrupt:
        sys.stderr.write("\nagency: stopped (Ctrl-C)\n")
        sys.exit(EXIT_STOPPED)
    if code:
        sys.exit(code)
    return True


def _printable_as_is(stream: TextIO, text: str) -> bool:
    """Whether `click.echo(text)` writes `text` unchanged to `stream`: no escape sequence (it
    strips them when the stream is not a terminal), a stream whose encoding click keeps (it
    re-encodes an ASCII one as UTF-8) and that can encode the text."""
    import codecs

    encoding = getattr(stream, "encoding", None)
    if "\x1b" in text or not encoding or codecs.lookup(encoding).name == "ascii":
        return False
    try:
        text.encode(encoding, getattr(stream, "errors", None) or "strict")
    except (UnicodeError, LookupError):
        return False
    return True


def _quiet(stream: TextIO) -> None:
    """Send what is left in the stream's buffer to /dev/null: the pipe's reader is gone, and
    the interpreter's own flush at exit would otherwise complain on stderr."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
