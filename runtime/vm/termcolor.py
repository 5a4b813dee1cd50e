"""Provides the builtin variable `color`: terminal styles for printed text, chained as in the
reference (`color.red("error")`, `color.green.bold("ok")`, `color.hex("#ff8800")("warm")`,
`color.bgRgb(0, 0, 80).white("x")`). A call joins its arguments with spaces, as `print` does, and
wraps them in the chain's ANSI codes and a reset; `color("plain")` adds no codes.

A chain is `color` itself (FuncRef("color")) or a BoundFunction of it holding the codes so far,
so it is an ordinary immutable function value: it can be stored, passed and called."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.bytecode import FuncRef
from runtime.vm.builtin_base import builtin
from runtime.vm.values import BoundFunction, stringify, to_number, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

RESET = "\x1b[0m"
CODES = "codes"  # the bound argument holding a chain's codes

_FOREGROUND = {
    "black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35, "cyan": 36,
    "white": 37, "brightBlack": 90, "brightRed": 91, "brightGreen": 92, "brightYellow": 93,
    "brightBlue": 94, "brightMagenta": 95, "brightCyan": 96, "brightWhite": 97,
}  # fmt: skip
STYLES: dict[str, str] = {name: f"\x1b[{n}m" for name, n in _FOREGROUND.items()}
STYLES["darkBlack"] = "\x1b[38;5;232m"
for _name, _n in _FOREGROUND.items():  # bgRed, bgBrightRed, …: the foreground code + 10
    STYLES["bg" + _name[0].upper() + _name[1:]] = f"\x1b[{_n + 10}m"
STYLES.update({"bold": "\x1b[1m", "dim": "\x1b[2m", "italic": "\x1b[3m", "underline": "\x1b[4m"})
STYLES["strikethrough"] = "\x1b[9m"
_HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")


def is_color(v: Any) -> bool:
    t = type(v)
    return (t is FuncRef and v.name == "color") or (
        t is BoundFunction and v.base.name == "color" and CODES in v.bound
    )


def _codes(chain: Any) -> str:
    return str(chain.bound[CODES]) if type(chain) is BoundFunction else ""


def styled(chain: Any, code: str) -> BoundFunction:
    """The chain with one more style code."""
    return BoundFunction(FuncRef("color"), {CODES: _codes(chain) + code})


def member(chain: Any, name: str) -> Any:
    """`chain.name`: a longer chain for a style name, else nothing."""
    code = STYLES.get(name)
    return styled(chain, code) if code is not None else None


def _byte(v: Any) -> int:
    """A channel as the reference clamps it: Math.round, then 0..255."""
    n = to_number(v)
    if n != n:
        return 0
    return int(max(0, min(255, math.floor(n + 0.5))))


def _rgb(values: list[Any], background: bool) -> str:
    r, g, b = (_byte(values[i] if i < len(values) else 0) for i in range(3))
    return f"\x1b[{48 if background else 38};2;{r};{g};{b}m"


def _hex(value: Any) -> list[int]:
    text = to_str(value)
    if type(value) is not str or not _HEX.match(text):
        shown = stringify(value) if value is not None else "undefined"
        raise AgencyRuntimeError(f'Invalid hex color: {shown}. Expected "#rgb" or "#rrggbb".')
    h = text[1:]
    if len(h) == 3:
        h = "".join(c + c for c in h)
    return [int(h[i : i + 2], 16) for i in (0, 2, 4)]


def method(chain: Any, name: str, args: list[Any]) -> Any:
    """`chain.name(args)`: a style applied to text, or a new chain from hex/rgb."""
    if name in STYLES:
        return apply(styled(chain, STYLES[name]), args)
    if name == "hex" or name == "bgHex":
        return styled(chain, _rgb(_hex(args[0] if args else None), name == "bgHex"))
    if name == "rgb" or name == "bgRgb":
        return styled(chain, _rgb(args, name == "bgRgb"))
    raise AgencyRuntimeError(f"color has no style `{name}`")


def apply(chain: Any, args: list[Any]) -> str:
    text = " ".join(to_str(a) for a in args)
    codes = _codes(chain)
    return codes + text + RESET if codes else text


@builtin("color")
def _color(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    codes = named.get(CODES)
    chain = BoundFunction(FuncRef("color"), {CODES: codes}) if codes else FuncRef("color")
    return apply(chain, args)
