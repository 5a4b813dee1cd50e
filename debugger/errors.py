"""Provides `SessionError`, the one error a debugging session raises at the person at the keyboard.

It lives apart from the session so the command parser (`debugger.commands`) and the session
(`debugger.session`) can both raise it without importing each other.
"""

from __future__ import annotations

import os
import tempfile
import traceback


class SessionError(Exception):
    """Bad input or an impossible request; the message is for the person at the keyboard."""


def crash_note(exc: BaseException) -> str:
    """Where the traceback of `exc` (a bug in agency) went: a crash file it is written to now,
    or how to get it printed."""
    try:
        fd, path = tempfile.mkstemp(prefix="agency-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(traceback.format_exception(exc)))
    except OSError:
        return "rerun with AGENCY_DEBUG=1 for the traceback"
    return f"the traceback is in {path}"


def internal_error_line(exc: BaseException) -> str:
    """One line that names a bug in agency and where its traceback went."""
    detail = str(exc).splitlines()[0][:200] if str(exc) else ""
    return (
        f"internal error: {type(exc).__name__}{': ' + detail if detail else ''}"
        f" (a bug in agency, please report it; {crash_note(exc)})"
    )
