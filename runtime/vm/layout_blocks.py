"""Text blocks for `std::ui/layout`: ANSI styling, visual width, word wrapping, and the four
ways blocks combine (pad, beside, above, styled), plus bordered frames.

A block is a list of lines. Widths are measured without escape sequences, so colour never
changes layout. Everything here is a pure function of its arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

ESCAPES = re.compile(r"\x1b\[[\d;]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_SGR = re.compile(r"\x1b\[([\d;]*)m")
_LINK = re.compile(r"\x1b\]8;;([^\x07\x1b]*)(?:\x07|\x1b\\)")
_LINK_CLOSE = "\x1b]8;;\x07"
RESET = "\x1b[0m"

Block = list[str]

# Named colours as 24-bit RGB (names are matched case-insensitively).
_COLORS: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "red": (205, 49, 49),
    "green": (13, 188, 121),
    "yellow": (229, 229, 16),
    "blue": (36, 114, 200),
    "magenta": (188, 63, 188),
    "cyan": (17, 168, 205),
    "white": (229, 229, 229),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
    "orange": (204, 122, 74),
    "brightred": (241, 76, 76),
    "brightgreen": (35, 209, 139),
    "brightyellow": (245, 245, 67),
    "brightblue": (59, 142, 234),
    "brightmagenta": (214, 112, 214),
    "brightcyan": (41, 184, 219),
    "brightwhite": (229, 229, 229),
}

BORDERS: dict[str, dict[str, str]] = {
    "rounded": dict(tl="╭", tr="╮", bl="╰", br="╯", h="─", v="│", x="┼", lt="├", rt="┤"),
    "heavy": dict(tl="┏", tr="┓", bl="┗", br="┛", h="━", v="┃", x="╋", lt="┣", rt="┫"),
    "double": dict(tl="╔", tr="╗", bl="╚", br="╝", h="═", v="║", x="╬", lt="╠", rt="╣"),
    "light": dict(tl="┌", tr="┐", bl="└", br="┘", h="─", v="│", x="┼", lt="├", rt="┤"),
}
BORDER_CELLS = 2  # the left and right edge


def border_chars(style: object) -> dict[str, str]:
    """The characters of a border style: "" or None is rounded, an unknown name is light."""
    if style is None or style == "":
        return BORDERS["rounded"]
    return BORDERS.get(str(style), BORDERS["light"])


def width(s: str) -> int:
    return len(ESCAPES.sub("", s))


def strip(s: str) -> str:
    return ESCAPES.sub("", s)


def block_width(b: Block) -> int:
    return max((width(line) for line in b), default=0)


def rgb(color: str) -> tuple[int, int, int] | None:
    """A colour name or `#rgb` / `#rrggbb` hex as RGB, or None when it is neither."""
    if not color:
        return None
    if color.startswith("#"):
        h = color[1:]
        if len(h) == 3:
            h = "".join(c + c for c in h)
        if len(h) != 6:
            return None
        try:
            n = int(h, 16)
        except ValueError:
            return None
        return (n >> 16) & 255, (n >> 8) & 255, n & 255
    return _COLORS.get(color.lower())


def sgr(style: Mapping[str, object]) -> str:
    """The escape sequence that turns on `style` (bold, dim, italic, underline, fgColor,
    bgColor), or "" for no style."""
    codes: list[int] = []
    for key, code in (("bold", 1), ("dim", 2), ("italic", 3), ("underline", 4)):
        if style.get(key) is True:
            codes.append(code)
    for key, code in (("fgColor", 38), ("bgColor", 48)):
        value = style.get(key)
        triple = rgb(value) if isinstance(value, str) else None
        if triple:
            codes.extend((code, 2, *triple))
    return f"\x1b[{';'.join(map(str, codes))}m" if codes else ""


def paint(s: str, style: Mapping[str, object]) -> str:
    start = sgr(style)
    return start + s + RESET if start else s


def styled(b: Block, style: Mapping[str, object]) -> Block:
    start = sgr(style)
    return [start + line + RESET for line in b] if start else b


def pad_line(line: str, w: int, align: str = "start") -> str:
    extra = w - width(line)
    if extra <= 0:
        return line
    if align == "end":
        return " " * extra + line
    if align == "center":
        left = extra // 2
        return " " * left + line + " " * (extra - left)
    return line + " " * extra


def pad(b: Block, w: int, h: int, h_align: str = "start", v_align: str = "start") -> Block:
    """`b` widened to `w` and heightened to `h` (never narrowed), content aligned."""
    wide = [pad_line(line, w, h_align) for line in b]
    if len(wide) >= h:
        return wide
    blank = " " * max(w, block_width(b))
    extra = h - len(wide)
    if v_align == "end":
        return [blank] * extra + wide
    if v_align == "center":
        top = extra // 2
        return [blank] * top + wide + [blank] * (extra - top)
    return wide + [blank] * extra


def beside(left: Block, right: Block) -> Block:
    if not left:
        return right
    if not right:
        return left
    h = max(len(left), len(right))
    lp = pad(left, block_width(left), h)
    rp = pad(right, block_width(right), h)
    return [a + b for a, b in zip(lp, rp)]


def above(top: Block, bottom: Block) -> Block:
    if not top:
        return bottom
    if not bottom:
        return top
    w = max(block_width(top), block_width(bottom))
    return pad(top, w, len(top)) + pad(bottom, w, len(bottom))


def grow(b: Block, w: int) -> Block:
    return b if block_width(b) >= w else pad(b, w, len(b))


# -- wrapping ------------------------------------------------------------------------------------


def wrap_text(content: str, w: int) -> list[str]:
    """`content` word-wrapped to `w` columns (long words broken), each line re-opening the
    styles and hyperlink still active from the line before and closing them at its end."""
    if w <= 0:
        return []
    lines = [piece for line in content.split("\n") for piece in _wrap_line(line, w)]
    return _reinject(lines)


def _wrap_line(line: str, w: int) -> list[str]:
    if line == "" or width(line) <= w:
        return [line]
    out: list[str] = []
    current = ""
    for token in re.split(r"(\s+)", line):
        if token == "":
            continue
        if width(current + token) <= w:
            current += token
            continue
        if current.strip():
            out.append(current.rstrip())
            current = ""
        if not token.strip():
            continue
        if width(token) <= w:
            current = token
            continue
        chunks = _break_word(token, w)
        out.extend(chunks[:-1])
        current = chunks[-1] if chunks else ""
    if current:
        out.append(current.rstrip())
    return out


def _break_word(token: str, w: int) -> list[str]:
    chunks: list[str] = []
    current, used, i = "", 0, 0
    while i < len(token):
        esc = ESCAPES.match(token, i)
        if esc:
            current += esc.group(0)
            i = esc.end()
            continue
        if used >= w:
            chunks.append(current)
            current, used = "", 0
        current += token[i]
        used += 1
        i += 1
    if current:
        chunks.append(current)
    return chunks


def _reinject(lines: list[str]) -> list[str]:
    active, link = "", ""
    out = []
    for line in lines:
        opened, opened_link = active, link
        for m in _SGR.finditer(line):
            active = "" if m.group(1) in ("", "0") else active + m.group(0)
        for m in _LINK.finditer(line):
            link = "" if m.group(1) == "" else m.group(0)
        suffix = (RESET if active else "") + (_LINK_CLOSE if link else "")
        out.append(opened_link + opened + line + suffix)
    return out


# -- borders -------------------------------------------------------------------------------------


def title_fits(title: str, inner: int) -> bool:
    """A title sits in the top edge when it has room for `─ title ─` plus the corners."""
    return title == "" or width(title) + 4 <= inner


def top_edge(
    ch: dict[str, str],
    inner: int,
    border: dict[str, object],
    title: str,
    title_style: dict[str, object],
) -> str:
    if title == "":
        return paint(ch["tl"] + ch["h"] * inner + ch["tr"], border)
    segment = paint(f" {title} ", title_style)
    rest = max(0, inner - 1 - width(segment))
    return paint(ch["tl"] + ch["h"], border) + segment + paint(ch["h"] * rest + ch["tr"], border)


def bordered(b: Block, attrs: dict[str, object], target: int | None) -> Block:
    """`b` inside a border (style, colour, padding, title in the top edge) of `target` columns
    when given, else as wide as the content (and the title) need."""
    ch = border_chars(attrs.get("borderStyle"))
    padding = _count(attrs.get("padding"))
    title = str(attrs.get("title") or "")
    title_color = attrs.get("titleColor") or ""
    title_style: dict[str, object] = {"fgColor": title_color} if title_color else {}
    if padding > 0:
        b = pad(b, block_width(b) + 2 * padding, len(b) + 2 * padding, "center", "center")
    if target is not None:
        inner = max(0, target - BORDER_CELLS)
        if not title_fits(title, inner):
            b = above(styled(wrap_text(title, inner), title_style), b)
            title = ""
        b = pad(b, inner, len(b))
    else:
        inner = block_width(b)
        if title and width(title) + 4 > inner:
            b = pad(b, width(title) + 4, len(b), "center" if padding > 0 else "start")
        inner = block_width(b)
    color = attrs.get("borderColor") or ""
    border: dict[str, object] = {"fgColor": color} if color else {}
    side = paint(ch["v"], border)
    rows = [side + pad_line(line, inner) + side for line in b]
    bottom = paint(ch["bl"] + ch["h"] * inner + ch["br"], border)
    return [top_edge(ch, inner, border, title, title_style), *rows, bottom]


def _count(raw: object) -> int:
    """A non-negative whole number from a count attribute (anything else is 0)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw != raw:
        return 0
    if raw in (float("inf"), float("-inf")):
        return 0
    return max(0, int(raw // 1))
