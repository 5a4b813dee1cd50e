"""The `std::ui/layout` renderer: a layout tree (plain `{type, attrs, children}` data) to text.

Two passes. Sizing walks the tree top-down and writes each node's resolved width
(`resolvedWidth`, and `wrapWidth` on text) into a copy of its attrs: a `width` of N cells,
`"N%"` of the parent's inner width or `"full"`; unsized boxes and columns hand their inner width
to their children, rows do not, and text wraps at the width still available. Painting then
turns each node into a block of lines bottom-up (see layout_blocks). Tables and bar charts live
in layout_table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from runtime.errors import AgencyRuntimeError
from runtime.vm import layout_blocks as B
from runtime.vm.layout_blocks import Block

Node = dict[str, Any]
Ctx = dict[str, int | None]  # default (width an unsized child takes), basis (for %), available
DEFAULT_COLS = 80


class LayoutError(AgencyRuntimeError):
    pass


def fail(message: str) -> LayoutError:
    return LayoutError(f"std::ui/layout: {message}")


def parse_width(raw: Any) -> tuple[str, float] | None:
    """A `width` attribute as ("cells", n), ("full", 100) or ("percent", p); None if unset."""
    if raw is None:
        return None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
        return "cells", max(0, math.floor(raw))
    if raw == "full":
        return "full", 100
    if isinstance(raw, str):
        m = re.fullmatch(r"(\d+(?:\.\d+)?)%", raw)
        if m:
            return "percent", float(m.group(1))
    raise fail(f'invalid width {raw!r}: expected a number, "full" or "<n>%" (e.g. "50%")')


def own_width(node: Node, ctx: Ctx) -> int | None:
    parsed = parse_width(node["attrs"].get("width"))
    if parsed is None:
        return ctx.get("default")
    kind, value = parsed
    if kind == "cells":
        return int(value)
    basis = ctx.get("basis")
    if basis is None:
        raise fail(
            f"width {node['attrs'].get('width')!r} on this {node['type']} needs a sized "
            "ancestor: give the parent (or one of its ancestors) an explicit width"
        )
    return math.floor(basis * value / 100)


def with_attrs(node: Node, **extra: Any) -> Node:
    return {**node, "attrs": {**node["attrs"], **extra}}


def _less(own: int | None, chrome: int) -> int | None:
    return None if own is None else max(0, own - chrome)


def _container(node: Node, own: int | None, child: Ctx) -> Node:
    children = [size(c, child) for c in node["children"]]
    out = node if own is None else with_attrs(node, resolvedWidth=own)
    return {**out, "children": children}


# -- sizing --------------------------------------------------------------------------------------


def _size_text(node: Node, ctx: Ctx) -> Node:
    if node["type"] == "raw" and node["attrs"].get("wrap") is False:
        return node
    own = own_width(node, ctx)
    w = own if own is not None else ctx.get("available")
    return with_attrs(node, wrapWidth=w) if w is not None and w > 0 else node


def _size_box(node: Node, ctx: Ctx) -> Node:
    own = own_width(node, ctx)
    chrome = B.BORDER_CELLS + 2 * B._count(node["attrs"].get("padding"))
    inner = _less(own, chrome)
    available = _less(own if own is not None else ctx.get("available"), chrome)
    return _container(node, own, {"default": inner, "basis": inner, "available": available})


def _size_column(node: Node, ctx: Ctx) -> Node:
    own = own_width(node, ctx)
    available = own if own is not None else ctx.get("available")
    return _container(node, own, {"default": own, "basis": own, "available": available})


def _size_row(node: Node, ctx: Ctx) -> Node:
    own = own_width(node, ctx)
    gaps = max(0, len(node["children"]) - 1) * B._count(node["attrs"].get("gap"))
    inner = _less(own, gaps)
    available = inner if inner is not None else ctx.get("available")
    return _container(node, own, {"default": None, "basis": inner, "available": available})


def _size_fixed(node: Node, ctx: Ctx) -> Node:
    own = own_width(node, ctx)
    return node if own is None else with_attrs(node, resolvedWidth=own)


def _size_leaf(node: Node, ctx: Ctx) -> Node:
    return node


# -- painting ------------------------------------------------------------------------------------


def style_of(attrs: dict[str, Any]) -> dict[str, object]:
    return {k: attrs.get(k) for k in ("fgColor", "bgColor", "bold", "italic", "dim", "underline")}


def _text_lines(node: Node) -> Block:
    raw = node["attrs"].get("content")
    content = raw if isinstance(raw, str) else "" if raw is None else str(raw)
    w = node["attrs"].get("wrapWidth")
    lines = B.wrap_text(content, w) if w is not None else content.split("\n")
    return B.pad(lines, B.block_width(lines), len(lines), node["attrs"].get("align") or "start")


def _paint_text(node: Node) -> Block:
    return B.styled(_text_lines(node), style_of(node["attrs"]))


def _paint_line(node: Node) -> Block:
    length = node["attrs"].get("length")
    kind = node["type"]
    if not length:
        parent = "column" if kind == "hline" else "row"
        raise fail(f"a `{kind}()` without a length must sit inside a {parent}")
    default = "─" if kind == "hline" else "│"
    char = node["attrs"].get("char") or default
    lines = [char * int(length)] if kind == "hline" else [char] * int(length)
    return B.styled(lines, style_of(node["attrs"]))


def _paint_space(node: Node) -> Block:
    raise fail("a `space()` must sit inside a row or a column")


def _stretchy(child: Node, axis: str) -> bool:
    line = "vline" if axis == "row" else "hline"
    return child["type"] == line and not child["attrs"].get("length")


def _paint_axis(node: Node, axis: str) -> Block:
    children = node["children"]
    if not children:
        return []
    attrs = node["attrs"]
    align = attrs.get("align") or "start"
    resolved = attrs.get("resolvedWidth")

    def cross(b: Block) -> int:
        return len(b) if axis == "row" else B.block_width(b)

    def spacer(count: int) -> Block:
        return [" " * count] if axis == "row" else [""] * count

    dynamic = [c["type"] == "space" or _stretchy(c, axis) for c in children]
    fixed = [None if d else paint(c) for c, d in zip(children, dynamic)]
    extent = max([cross(b) for b in fixed if b is not None], default=1)
    extent = max(extent, 1)
    blocks: list[Block] = []
    for child, done in zip(children, fixed):
        if done is not None:
            blocks.append(done)
        elif _stretchy(child, axis):
            blocks.append(paint(with_attrs(child, length=extent)))
        else:
            count = child["attrs"].get("count")
            blocks.append(spacer(int(count) if isinstance(count, (int, float)) else 1))
    floor = resolved if axis == "column" and resolved is not None else 0
    extent = max([cross(b) for b in blocks] + [floor])
    if axis == "row":
        blocks = [B.pad(b, B.block_width(b), extent, "start", align) for b in blocks]
    else:
        blocks = [B.pad(b, extent, len(b), align) for b in blocks]
    join = B.beside if axis == "row" else B.above
    gap = B._count(attrs.get("gap"))
    out: Block = []
    for i, b in enumerate(blocks):
        if i and gap:
            out = join(out, spacer(gap))
        out = b if i == 0 else join(out, b)
    return B.grow(out, resolved) if resolved is not None else out


def _paint_box(node: Node) -> Block:
    kids = node["children"]
    inner = kids[0] if len(kids) == 1 else {"type": "column", "attrs": {}, "children": kids}
    resolved = node["attrs"].get("resolvedWidth")
    framed = B.bordered(paint(inner), node["attrs"], resolved)
    return B.grow(framed, resolved) if resolved is not None else framed


SIZERS: dict[str, Callable[[Node, Ctx], Node]] = {
    "box": _size_box,
    "row": _size_row,
    "column": _size_column,
    "text": _size_text,
    "raw": _size_text,
    "space": _size_leaf,
    "hline": _size_leaf,
    "vline": _size_leaf,
}
PAINTERS: dict[str, Callable[[Node], Block]] = {
    "box": _paint_box,
    "row": lambda n: _paint_axis(n, "row"),
    "column": lambda n: _paint_axis(n, "column"),
    "text": _paint_text,
    "raw": _text_lines,
    "space": _paint_space,
    "hline": _paint_line,
    "vline": _paint_line,
}


def check_node(raw: Any) -> Node:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        kind = "null" if raw is None else type(raw).__name__
        raise fail(f"expected a layout node ({{type, attrs, children}}), got {kind}")
    node: Node = raw
    if not isinstance(node.get("attrs"), dict):
        node = {**node, "attrs": {}}
    if not isinstance(node.get("children"), list):
        node = {**node, "children": []}
    if node["type"] not in SIZERS:
        raise fail(f'unknown node type "{node["type"]}"')
    return node


def size(node: Any, ctx: Ctx) -> Node:
    node = check_node(node)
    return SIZERS[node["type"]](node, ctx)


def paint(node: Any) -> Block:
    node = check_node(node)
    return PAINTERS[node["type"]](node)


def render(node: Any, color: bool, cols: int | None) -> str:
    """The layout tree `node` as text `cols` columns wide at most (80 when not given), with
    ANSI colour or plain."""
    viewport = cols if cols is not None and cols > 0 else DEFAULT_COLS
    sized = size(node, {"default": None, "basis": viewport, "available": viewport})
    out = "\n".join(paint(sized))
    return out if color else B.strip(out)
