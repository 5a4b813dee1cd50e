"""Provides the host side of `std::ui/layout`, `std::ui/table` and `std::ui/chart`: rendering a
layout tree (built as plain data by the Agency modules) to text. Rendering is a pure function of
the tree and its arguments, so it needs no effect journal: `color: "auto"` means plain text (a
run renders the same wherever it is replayed) and the default width is 80 columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.vm import layout_table  # noqa: F401  (registers tables and charts)
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.layout_render import fail, render
from runtime.vm.values import to_plain

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


@builtin("__layout_render")
def _layout_render(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    node = to_plain(arg(args, named, 0, "node", None))
    color = arg(args, named, 1, "color", "auto")
    cols = arg(args, named, 2, "cols", 0)
    if color not in (True, False, "auto"):
        raise fail(f'render: color must be true, false or "auto", got {color!r}')
    width = int(cols) if isinstance(cols, (int, float)) and not isinstance(cols, bool) else 0
    return render(node, color is True, width if width > 0 else None)
