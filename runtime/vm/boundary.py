"""Provides the builtin boundary: a Python exception raised inside a builtin or a method (a value
no check foresaw: `Infinity` where an integer goes, a 5,000-digit number, a lone surrogate) is
turned into a runtime error in Agency's words, naming the builtin, at the statement that called
it (issue 11, items 10 and 12).

Only there: the same exception from the machine itself is a bug in agency, not in the program,
and is left to end the run as an internal error (with its crash file).
"""

from __future__ import annotations

import decimal

from runtime.errors import AgencyRuntimeError

__all__ = ["HOST_ERRORS", "host_error", "well_formed"]

# What a builtin may raise on a value it did not foresee.
HOST_ERRORS = (
    TypeError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    ArithmeticError,  # OverflowError, decimal.InvalidOperation
)


def host_error(what: str, exc: BaseException) -> AgencyRuntimeError:
    """`exc`, raised inside `what` (a builtin's name, `.method()`), as an Agency error."""
    text = str(exc)
    if isinstance(exc, UnicodeError):
        problem = "a string holds a lone surrogate (half of a UTF-16 pair), which has no UTF-8 form"
    elif "infinity" in text or "NaN" in text:
        problem = "expected a finite number, got Infinity or NaN"
    elif isinstance(exc, (OverflowError, decimal.InvalidOperation)) or "Exceeds the limit" in text:
        problem = "a number is too large"
    elif "null" in text and isinstance(exc, ValueError):
        problem = "a string holds a NUL character"
    elif isinstance(exc, TypeError) and "missing" in text:
        problem = "an argument is missing"
    elif isinstance(exc, TypeError) and "were given" in text:
        problem = "too many arguments"
    elif isinstance(exc, TypeError):
        problem = "an argument has the wrong type"
    else:
        problem = "cannot use these arguments"
    return AgencyRuntimeError(f"{what}: {problem}")


def well_formed(text: str) -> str:
    """`text` as well-formed Unicode, as JavaScript writes a string out: surrogate pairs joined,
    a lone surrogate replaced by U+FFFD."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
