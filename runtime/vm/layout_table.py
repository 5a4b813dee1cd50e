"""Tables (`std::ui/table`) and horizontal bar charts (`std::ui/chart`) for the layout renderer.

Importing this module registers the `table` and `barchart` node types with layout_render.
"""

from __future__ import annotations

import math
from typing import Any

from runtime.vm import layout_blocks as B
from runtime.vm import layout_render as R
from runtime.vm.layout_blocks import Block
from runtime.vm.layout_render import Ctx, Node, fail

# -- tables --------------------------------------------------------------------------------------


def _cell(cell: Any) -> Node:
    """A table cell as a node: a string becomes plain text; a layout node stays as it is."""
    if isinstance(cell, str):
        return {"type": "text", "attrs": {"content": cell}, "children": []}
    if (
        isinstance(cell, dict)
        and isinstance(cell.get("type"), str)
        and isinstance(cell.get("attrs"), dict)
        and isinstance(cell.get("children"), list)
    ):
        return cell
    kind = "null" if cell is None else type(cell).__name__
    raise fail(f"table: a cell must be a string or a layout node, got {kind}")


def _sections(attrs: dict[str, Any]) -> tuple[list[Node], list[list[Node]], list[list[Node]], int]:
    """The header, body and footer rows as nodes, and the column count (checked to agree)."""
    header = attrs.get("header")
    body = attrs.get("body") or []
    footer = attrs.get("footer") or []
    if header is not None and not isinstance(header, list):
        raise fail("table: header must be an array of cells")
    for name, rows in (("body", body), ("footer", footer)):
        if not isinstance(rows, list):
            raise fail(f"table: {name} must be an array of rows")
        for i, row in enumerate(rows):
            if not isinstance(row, list):
                raise fail(f"table: {name} row {i} must be an array of cells")
    if not header and not body and not footer:
        return [], [], [], 0
    columns = attrs.get("columns")
    if columns is not None and not isinstance(columns, list):
        raise fail("table: columns must be an array")
    if columns:
        count = len(columns)
    elif header is not None:
        count = len(header)
    else:
        count = len(body[0]) if body else len(footer[0])
    if count == 0:
        raise fail("table: at least one column is needed")
    labelled = [("header", header)] if header is not None else []
    labelled += [(f"body row {i}", r) for i, r in enumerate(body)]
    labelled += [(f"footer row {i}", r) for i, r in enumerate(footer)]
    for label, row in labelled:
        if len(row) != count:
            raise fail(f"table: {label} has {len(row)} cells, expected {count}")
    cells = [_cell(c) for c in header or []]
    return (
        cells,
        [[_cell(c) for c in r] for r in body],
        [[_cell(c) for c in r] for r in footer],
        count,
    )


def _padding(attrs: dict[str, Any]) -> int:
    raw = attrs.get("cellPadding")
    if raw is None or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        return 1
    return max(0, math.floor(raw))


def _dividers(attrs: dict[str, Any]) -> bool:
    return attrs.get("columnDividers") is not False


def _chrome(count: int, padding: int, dividers: bool) -> int:
    return B.BORDER_CELLS + count * 2 * padding + (max(0, count - 1) if dividers else 0)


def _column_widths(specs: list[Any], natural: list[int], available: int | None) -> list[int]:
    """Each column's width: its natural width, a fixed `width`, or a percentage of what the
    fixed columns leave (shares scaled down when they add up to over 100%)."""
    parsed = [R.parse_width(s.get("width") if isinstance(s, dict) else None) for s in specs]
    parsed += [None] * (len(natural) - len(parsed))
    if available is None:
        for i, p in enumerate(parsed):
            if p is not None and p[0] != "cells":
                raise fail(
                    f"table: column[{i}] has a percentage width but the table has no width "
                    "to take it of: set width: on the table or an ancestor"
                )
    fixed = [
        natural[i] if p is None else int(p[1]) if p[0] == "cells" else None
        for i, p in enumerate(parsed)
    ]
    claimed = sum(f or 0 for f in fixed)
    remain = math.inf if available is None else max(0, available - claimed)
    total = sum(p[1] for p in parsed if p is not None and p[0] != "cells")
    out = []
    for i, p in enumerate(parsed[: len(natural)]):
        own = fixed[i]
        if own is None and p is not None:
            share = p[1] / total if total > 100 else p[1] / 100
            own = math.floor(remain * share)
        spec = specs[i] if i < len(specs) and isinstance(specs[i], dict) else {}
        out.append(max(own or 0, int(spec.get("minWidth") or 0)))
    return out


def _size_table(node: Node, ctx: Ctx) -> Node:
    own = R.own_width(node, ctx)
    attrs = node["attrs"]
    header, body, footer, count = _sections(attrs)
    if count == 0:
        return node
    specs = attrs.get("columns") or []
    chrome = _chrome(count, _padding(attrs), _dividers(attrs))
    available = None if own is None else max(0, own - chrome)
    rows = ([header] if header else []) + body + footer
    natural = [max((B.block_width(R.paint(r[c])) for r in rows), default=0) for c in range(count)]
    widths = _column_widths(specs, natural, available)

    def fit(cell: Node, w: int) -> Node:
        if cell["type"] == "text":
            return R.with_attrs(cell, wrapWidth=w)
        if cell["type"] == "raw":
            return cell
        return R.size(cell, {"default": w, "basis": w, "available": None})

    def fit_row(row: list[Node]) -> list[Node]:
        return [fit(c, widths[i]) for i, c in enumerate(row)]

    extra: dict[str, Any] = {"resolvedColumnWidths": widths}
    if own is not None:
        extra["resolvedWidth"] = own
    if attrs.get("header") is not None:
        extra["header"] = fit_row(header)
    extra["body"] = [fit_row(r) for r in body]
    extra["footer"] = [fit_row(r) for r in footer]
    return R.with_attrs(node, **extra)


_STYLE_KEYS = ("bold", "italic", "dim", "underline")


def _header_cell(cell: Node) -> Node:
    """Header text is bold unless it sets a style of its own."""
    a = cell["attrs"]
    if cell["type"] != "text" or any(a.get(k) is True for k in _STYLE_KEYS):
        return cell
    if a.get("fgColor") or a.get("bgColor"):
        return cell
    return R.with_attrs(cell, bold=True)


def _column_fg(cell: Node, color: Any) -> Node:
    if not color or cell["type"] != "text" or cell["attrs"].get("fgColor"):
        return cell
    return R.with_attrs(cell, fgColor=color)


def _paint_table(node: Node) -> Block:
    attrs = node["attrs"]
    header, body, footer, count = _sections(attrs)
    if count == 0:
        return []
    pad_n = _padding(attrs)
    specs = [s if isinstance(s, dict) else {} for s in (attrs.get("columns") or [])]
    specs += [{}] * (count - len(specs))
    dividers = _dividers(attrs)
    ch = B.border_chars(attrs.get("borderStyle") or "rounded")
    color = attrs.get("borderColor") or ""
    border: dict[str, object] = {"fgColor": color} if color else {}
    title = str(attrs.get("title") or "")
    title_color = attrs.get("titleColor") or ""
    title_style: dict[str, object] = {"fgColor": title_color} if title_color else {}
    resolved = attrs.get("resolvedWidth")
    given = attrs.get("resolvedColumnWidths")

    rows = ([[_header_cell(c) for c in header]] if header else []) + body + footer
    blocks = [
        [R.paint(_column_fg(c, specs[i].get("fgColor"))) for i, c in enumerate(r)] for r in rows
    ]
    widths = []
    for c in range(count):
        measured = max((B.block_width(r[c]) for r in blocks), default=0)
        fixed = given[c] if isinstance(given, list) and c < len(given) else None
        widths.append(
            fixed if fixed is not None else max(measured, int(specs[c].get("minWidth") or 0))
        )
    aligns = [specs[c].get("align") or "start" for c in range(count)]
    cells_w = sum(w + 2 * pad_n for w in widths) + (count - 1 if dividers else 0)
    floor = B.width(title) + 4 if resolved is None and title else 0
    inner = max(cells_w, floor, max(0, resolved - B.BORDER_CELLS) if resolved is not None else 0)
    side = B.paint(ch["v"], border)

    def framed(b: Block) -> Block:
        return [side + B.pad_line(line, inner) + side for line in b]

    def row_block(cells: list[Block]) -> Block:
        h = max([len(b) for b in cells] + [1])
        padded = [
            [" " * pad_n + line + " " * pad_n for line in B.pad(b, widths[i], h, aligns[i])]
            for i, b in enumerate(cells)
        ]
        out: Block = []
        for i, b in enumerate(padded):
            if i and dividers:
                out = B.beside(out, [B.paint(ch["v"], border)] * h)
            out = b if i == 0 else B.beside(out, b)
        return framed(out)

    def divider() -> Block:
        runs = [ch["h"] * (w + 2 * pad_n) for w in widths]
        line = (ch["x"] if dividers else "").join(runs)
        line += ch["h"] * max(0, inner - B.width(line))
        return [B.paint(ch["lt"] + line + ch["rt"], border)]

    n_head = 1 if header else 0
    head, main, foot = (
        blocks[:n_head],
        blocks[n_head : n_head + len(body)],
        blocks[n_head + len(body) :],
    )
    parts: list[Block] = [row_block(r) for r in head]
    if attrs.get("headerDivider") is not False and head and (main or foot):
        parts.append(divider())
    for i, r in enumerate(main):
        if i and attrs.get("rowDividers") is True:
            parts.append(divider())
        parts.append(row_block(r))
    if attrs.get("footerDivider") is not False and foot and main:
        parts.append(divider())
    parts += [row_block(r) for r in foot]
    if resolved is not None and not B.title_fits(title, inner):
        parts.insert(0, framed(B.styled(B.wrap_text(title, inner), title_style)))
        title = ""
    out = [B.top_edge(ch, inner, border, title, title_style)]
    for p in parts:
        out = B.above(out, p)
    out = B.above(out, [B.paint(ch["bl"] + ch["h"] * inner + ch["br"], border)])
    caption = str(attrs.get("caption") or "")
    if caption:
        out = out + B.styled(
            [B.pad_line(caption, B.block_width(out), "center").rstrip()], {"dim": True}
        )
    return B.grow(out, resolved) if resolved is not None else out


# -- bar charts ----------------------------------------------------------------------------------

_KEY_COLORS = ["blue", "green", "brightYellow", "magenta", "cyan", "red"]
_KEY_SYMBOLS = ["█", "▓", "▒", "░"]
_BAR_AREA = 40  # bar columns of a chart with no width


def _keys(raw: Any, bar_char: str) -> list[dict[str, str]]:
    keys = raw if isinstance(raw, list) and raw else [{"name": ""}]
    out = []
    for i, k in enumerate(keys):
        k = k if isinstance(k, dict) else {}
        symbol = k.get("symbol") or (bar_char if i == 0 else _KEY_SYMBOLS[i % len(_KEY_SYMBOLS)])
        out.append(
            {
                "name": k.get("name") or "",
                "color": k.get("color") or _KEY_COLORS[i % len(_KEY_COLORS)],
                "symbol": symbol,
            }
        )
    return out


def _number(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{round(v * 100) / 100:g}"


def _round(x: float) -> int:
    return math.floor(x + 0.5)


def _cells(value: float, span: float, area: int) -> int:
    return 0 if span <= 0 else _round(abs(value) / span * area)


def _stack(values: list[float], span: float, area: int) -> list[int]:
    total = sum(abs(v) for v in values)
    cells = _cells(total, span, area)
    if total <= 0 or cells <= 0:
        return [0] * len(values)
    raw = [abs(v) / total * cells for v in values]
    out = [math.floor(x) for x in raw]
    left = cells - sum(out)
    order = sorted(range(len(raw)), key=lambda i: -(raw[i] - math.floor(raw[i])))
    for i in order[:left]:
        out[i] += 1
    return out


def _track(n: int) -> str:
    return B.paint("·" * n, {"dim": True}) if n > 0 else ""


def _chart_rows(
    a: dict[str, Any],
    data: list[Any],
    keys: list[dict[str, str]],
    stacked: bool,
    span: float,
    area: int,
    base: int,
) -> list[tuple[str, str, str]]:
    rows = []
    for bar in data:
        values = bar["values"]
        if stacked:
            sign = -1 if any(v < 0 for v in values) else 1
            room = area - base if sign >= 0 else base
            used, segs = 0, []
            for n in _stack(values, span, area):
                c = max(0, min(n, room - used))
                used += c
                segs.append(c)
            fill = "".join(
                B.paint(keys[i]["symbol"] * n, {"fgColor": keys[i]["color"]})
                for i, n in enumerate(segs)
            )
            if sign >= 0:
                drawn = _track(base) + fill + _track(area - base - used)
            else:
                drawn = _track(base - used) + fill + _track(area - base)
            rows.append((str(bar.get("label", "")), drawn, _number(sum(values))))
            continue
        for ki, k in enumerate(keys):
            v = values[ki]
            cells = _cells(v, span, area)
            fill_style = {"fgColor": k["color"]}
            if v >= 0:
                c = min(cells, area - base)
                drawn = (
                    _track(base) + B.paint(k["symbol"] * c, fill_style) + _track(area - base - c)
                )
            else:
                c = min(cells, base)
                drawn = (
                    _track(base - c) + B.paint(k["symbol"] * c, fill_style) + _track(area - base)
                )
            rows.append((str(bar.get("label", "")) if ki == 0 else "", drawn, _number(v)))
    return rows


def _paint_chart(node: Node) -> Block:
    a = node["attrs"]
    stacked = a.get("mode") == "stacked"
    data = a.get("data") if isinstance(a.get("data"), list) else []
    keys = _keys(a.get("keys"), a.get("barChar") or "█")
    for bar in data:
        values = bar.get("values") or []
        if len(values) != len(keys):
            raise fail(
                f'chart: bar "{bar.get("label")}" has {len(values)} value(s) but there '
                f"are {len(keys)} key(s)"
            )
        if stacked and any(v > 0 for v in values) and any(v < 0 for v in values):
            raise fail(
                f'chart: stacked bar "{bar.get("label")}" mixes positive and negative values'
            )
    top = a.get("max")
    if isinstance(top, (int, float)) and (not math.isfinite(top) or top < 0):
        raise fail(f"chart: max must be a non-negative number, got {top}")
    show = a.get("showValues") is not False
    quantities = (
        [sum(b["values"]) for b in data] if stacked else [v for b in data for v in b["values"]]
    )
    low, high = min([0, *quantities]), max([0, *quantities])
    if isinstance(top, (int, float)) and top > 0:
        high = top
    labels = [str(b.get("label", "")) for b in data]
    shown = (
        [_number(sum(b["values"])) for b in data]
        if stacked
        else [_number(v) for b in data for v in b["values"]]
    )
    label_w = max((B.width(s) for s in labels), default=0)
    value_w = max((len(s) for s in shown), default=0) if show else 0
    chrome = label_w + 1 + (value_w + 1 if show else 0)
    resolved = a.get("resolvedWidth")
    area = max(0, (resolved if isinstance(resolved, int) else chrome + _BAR_AREA) - chrome)
    span = high - low
    base = 0 if low >= 0 or span <= 0 else _round((0 - low) / span * area)
    rows = _chart_rows(a, data, keys, stacked, span, area, base)
    gap = [" "] * len(rows)
    body = B.beside(
        B.beside(B.pad([r[0] for r in rows], label_w, len(rows)), gap), [r[1] for r in rows]
    )
    if show:
        values = B.pad([r[2] for r in rows], value_w, len(rows), "end")
        body = B.beside(B.beside(body, gap), values)
    out: Block = [a["title"]] if a.get("title") else []
    if a.get("legend") is not False and any(k["name"] for k in keys):
        legend = "  ".join(
            B.paint(k["symbol"], {"fgColor": k["color"]}) + " " + k["name"] for k in keys
        )
        out = B.above(out, [legend])
    return B.above(out, body) if body else out


R.SIZERS["table"] = _size_table
R.PAINTERS["table"] = _paint_table
R.SIZERS["barchart"] = R._size_fixed
R.PAINTERS["barchart"] = _paint_chart
