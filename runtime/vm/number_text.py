"""Provides the number methods that write a number as text with a given number of digits, as
JavaScript's do: `toFixed`, `toPrecision` and `toExponential`.

JavaScript rounds the number's exact binary value, and a tie goes up (away from zero for the
digits): `(1.25).toFixed(1)` is "1.3", while `(1.005).toFixed(2)` is "1.00" because 1.005 is
stored as 1.00499999…. `Decimal(x)` is that exact value, so `ROUND_HALF_UP` on it gives the
same digits. NaN and the infinities are written as `String(x)` writes them.

The arithmetic runs with enough precision for any double: its exact value has at most 767
significant digits, and a result at most 121 (`toFixed(100)` of a number below 1e21).
"""

from __future__ import annotations

from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_UP, Context, Decimal, localcontext
from typing import Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtins_data import integer
from runtime.vm.values import format_number, to_str

_EXACT = Context(prec=1000, Emax=MAX_EMAX, Emin=MIN_EMIN)


def _double(x: float) -> float:
    """`x` as JavaScript holds it: an integer past the largest double is Infinity."""
    if type(x) is int:
        try:
            float(x)
        except OverflowError:
            return float("inf") if x > 0 else float("-inf")
    return x


def _digits_arg(method: str, args: list[Any], lo: int) -> int | None:
    if not args or args[0] is None:
        return None
    digits = integer(args[0])
    if not lo <= digits <= 100:  # as JavaScript's RangeError
        raise AgencyRuntimeError(
            f"{method}() digits must be between {lo} and 100, got {to_str(args[0])}"
        )
    return digits


def _significant(x: float, count: int) -> tuple[str, int]:
    """`|x|` (not 0, finite) rounded to `count` significant digits: the digits and the power of
    ten of the first one."""
    with localcontext(_EXACT):
        exact = Decimal(abs(x))
        power = exact.adjusted()
        step = Decimal(1).scaleb(1 - count)
        mantissa = exact.scaleb(-power).quantize(step, ROUND_HALF_UP)
        if mantissa >= 10:  # 9.99… rounded up to 10
            power += 1
            mantissa = exact.scaleb(-power).quantize(step, ROUND_HALF_UP)
        return format(mantissa, "f").replace(".", ""), power


def _shortest(x: float) -> tuple[str, int]:
    """The fewest digits that read back as `|x|` (what `String(x)` shows) and the power of ten
    of the first one."""
    with localcontext(_EXACT):
        exact = Decimal(repr(abs(float(x)))).normalize()
    return "".join(map(str, exact.as_tuple().digits)), exact.adjusted()


def _exponential(digits: str, power: int) -> str:
    head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{head}e{'+' if power >= 0 else '-'}{abs(power)}"


def to_fixed(x: float, args: list[Any]) -> str:
    """`x.toFixed(digits)`: `digits` (0 by default) after the point; 1e21 and over as String."""
    x = _double(x)
    digits = _digits_arg("toFixed", args, 0) or 0
    if x != x or abs(x) >= 1e21:  # JavaScript: NaN, Infinity, 1e+21
        return format_number(x)
    if x == 0:
        x = 0  # -0 is written "0"
    with localcontext(_EXACT):
        return format(Decimal(x).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP), "f")


def to_exponential(x: float, args: list[Any]) -> str:
    """`x.toExponential(digits)`: one digit, the point, `digits` more (as many as `x` needs
    without), then `e+N` / `e-N`."""
    x = _double(x)
    digits = _digits_arg("toExponential", args, 0)
    if x != x or x in (float("inf"), float("-inf")):
        return format_number(x)
    sign = "-" if x < 0 else ""
    if x == 0:
        return f"0{'.' + '0' * digits if digits else ''}e+0"
    text, power = _shortest(x) if digits is None else _significant(x, digits + 1)
    return sign + _exponential(text, power)


def to_precision(x: float, args: list[Any]) -> str:
    """`x.toPrecision(precision)`: `precision` significant digits, written in exponent form
    when the exponent is below -6 or not below `precision`; String(x) without an argument."""
    x = _double(x)
    precision = _digits_arg("toPrecision", args, 1)
    if precision is None or x != x or x in (float("inf"), float("-inf")):
        return format_number(x)
    if x == 0:
        return "0" + ("." + "0" * (precision - 1) if precision > 1 else "")
    sign = "-" if x < 0 else ""
    text, power = _significant(x, precision)
    if power < -6 or power >= precision:
        return sign + _exponential(text, power)
    if power < 0:
        return f"{sign}0.{'0' * (-power - 1)}{text}"
    whole, fraction = text[: power + 1], text[power + 1 :]
    return sign + whole + ("." + fraction if fraction else "")


NUMBER_TEXT = {"toFixed": to_fixed, "toExponential": to_exponential, "toPrecision": to_precision}
