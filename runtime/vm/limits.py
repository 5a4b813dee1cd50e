"""Provides the size limits on values a program builds (issue 11, item 5).

A string longer than `max_string_length()` characters (128 Mi by default,
`AGENCY_MAX_STRING_LENGTH`) or an array longer than `max_array_length()` elements (64 Mi,
`AGENCY_MAX_ARRAY_LENGTH`) is refused where it would be built, with a runtime error at the
statement that builds it; the run fails there and is resumable (`agency resume` retries the
statement, with a larger limit if the environment says so). Without these a `"x".repeat(2**31)`
or a doubling `s = s + s` ends the process in swap or in Python's MemoryError.

The checks are cheap: callers test a size against `SMALL` first and call `check_*` only above it.

A regex operation (a test, a match, a replace or split with all its matches) may take
`regex_timeout()` seconds (5 by default, `AGENCY_REGEX_TIMEOUT`): a catastrophic pattern such as
`re/(a|a)+$/` on a long input would otherwise backtrack for longer than the age of the universe.
"""

from __future__ import annotations

import os
from typing import Any

from runtime.errors import AgencyRuntimeError

__all__ = [
    "DEFAULT_MAX_ARRAY_LENGTH",
    "DEFAULT_MAX_STRING_LENGTH",
    "MAX_ARRAY_ENV",
    "MAX_STRING_ENV",
    "REGEX_TIMEOUT_ENV",
    "SMALL",
    "check_array_length",
    "check_string_length",
    "max_array_length",
    "max_string_length",
    "out_of_memory",
    "regex_timeout",
]

MAX_STRING_ENV = "AGENCY_MAX_STRING_LENGTH"
MAX_ARRAY_ENV = "AGENCY_MAX_ARRAY_LENGTH"
DEFAULT_MAX_STRING_LENGTH = 1 << 27
DEFAULT_MAX_ARRAY_LENGTH = 1 << 26
DEFAULT_REGEX_TIMEOUT = 5.0
REGEX_TIMEOUT_ENV = "AGENCY_REGEX_TIMEOUT"
SMALL = 1 << 16  # below this no value is checked (every limit is at least this)


def _limit(env: str, default: int) -> int:
    text = os.environ.get(env, "").strip()
    if not text:
        return default
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = -1
    if value <= 0:
        raise AgencyRuntimeError(f"{env}={text!r}: expected a positive number")
    return max(value, SMALL)


def max_string_length() -> int:
    """The longest string a program may build: `$AGENCY_MAX_STRING_LENGTH`, else 128 Mi."""
    return _limit(MAX_STRING_ENV, DEFAULT_MAX_STRING_LENGTH)


def max_array_length() -> int:
    """The longest array a program may build: `$AGENCY_MAX_ARRAY_LENGTH`, else 64 Mi."""
    return _limit(MAX_ARRAY_ENV, DEFAULT_MAX_ARRAY_LENGTH)


def regex_timeout() -> float:
    """The seconds one regex operation may take: `$AGENCY_REGEX_TIMEOUT`, else 5."""
    text = os.environ.get(REGEX_TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_REGEX_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise AgencyRuntimeError(
            f"{REGEX_TIMEOUT_ENV}={text!r}: expected a positive number of seconds"
        )
    return value


def _count(n: Any) -> str:
    if type(n) is int and n < 10**30:
        return f"{n:,}"
    return "infinitely many" if n == float("inf") else "too many"


def check_string_length(n: Any) -> None:
    """Refuse building a string of `n` characters when that is over the limit."""
    limit = max_string_length()
    if not (type(n) is int and n <= limit):
        raise AgencyRuntimeError(
            f"a string of {_count(n)} characters is longer than the {limit:,} a program may "
            f"build (set {MAX_STRING_ENV} to allow more)"
        )


def check_array_length(n: Any) -> None:
    """Refuse building an array of `n` elements when that is over the limit."""
    limit = max_array_length()
    if not (type(n) is int and n <= limit):
        raise AgencyRuntimeError(
            f"an array of {_count(n)} elements is longer than the {limit:,} a program may "
            f"build (set {MAX_ARRAY_ENV} to allow more)"
        )


def out_of_memory() -> AgencyRuntimeError:
    """The error for a MemoryError while a statement ran (the allocation that failed is gone)."""
    return AgencyRuntimeError(
        f"out of memory while running this statement (lower {MAX_STRING_ENV} or "
        f"{MAX_ARRAY_ENV} to stop such values sooner)"
    )
