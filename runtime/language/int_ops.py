"""Provides JavaScript's binary operators on two ints as plain Python: the machine's fast path
(`runtime.vm.fuse`), and what a reader of a record recomputes a derived write with
(`R_STEP_WRITE` in `runtime.record.format`), so both compute the same value the same way."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any


def int_to_double(v: int) -> float:
    """An int as the JavaScript double it stands for (`Infinity` when too large)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def exact(r: int) -> int | float:
    """An int result kept exact only while a double holds it exactly, as in JavaScript."""
    return r if -(2**53) <= r <= 2**53 else int_to_double(r)


def int_mul(a: int, b: int) -> int | float:
    r = a * b  # (`exact`, inlined: a call is a third of a loop statement's time)
    return r if -(2**53) <= r <= 2**53 else int_to_double(r)


def int_mod(a: int, b: int) -> int | float:
    if b > 0 and a >= 0:  # (the common case, where Python's sign rule is JavaScript's)
        return a % b
    if b == 0:
        return math.nan
    r = abs(a) % abs(b)
    return -r if a < 0 else r


# By operator: `*` turns inexact beyond 2**53 and `%` takes the dividend's sign, as JavaScript
# does; `/` is not here (its result is a double). A record names one by its index: append only.
INT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "*": int_mul,
    "%": int_mod,
}
INT_OP_LIST: tuple[Callable[[Any, Any], Any], ...] = tuple(INT_OPS.values())
INT_OP_INDEX: dict[Callable[[Any, Any], Any], int] = {f: i for i, f in enumerate(INT_OP_LIST)}
