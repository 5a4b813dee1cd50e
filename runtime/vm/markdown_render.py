"""Provides std::markdown's renderers: `renderForHtml` (`__markdown_html`) and `renderForCli`
(`__markdown_cli`), from the trees runtime/vm/builtins_markdown.py parses, with the reference's
output: the same tags, escapes and URL rules for HTML, the same palette and layout for the
terminal."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from runtime.vm.builtin_base import arg, builtin
from runtime.vm.termcolor import RESET, STYLES
from runtime.vm.values import stringify, to_number, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine


# -- HTML --------------------------------------------------------------------------------------
# renderForHtml treats the tree as untrusted (it is often written by a model): text is escaped,
# URLs are kept only when relative or http(s)/mailto/tel, raw HTML and frontmatter are dropped.

_HTML_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
_URL_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SAFE_SCHEME = re.compile(r"(https?|mailto|tel):", re.IGNORECASE)
_ANY_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _esc(v: Any) -> str:
    text = v if type(v) is str else "" if v is None else to_str(v)
    return "".join(_HTML_ESCAPES.get(c, c) for c in text)


def _safe_url(url: Any) -> str:
    if type(url) is not str:
        return ""
    u = _URL_CONTROL.sub("", url).strip()
    if not u or u.startswith("//"):
        return ""
    if not _ANY_SCHEME.match(u) or _SAFE_SCHEME.match(u):
        return u
    return ""


def _list_of(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _title_attr(node: dict[str, Any]) -> str:
    title = node.get("title")
    return f' title="{_esc(title)}"' if type(title) is str else ""


def _inline_html(nodes: Any) -> str:
    return "".join(_inline_node_html(n) for n in _list_of(nodes))


def _inline_node_html(n: Any) -> str:
    if type(n) is str:
        return _esc(n)
    if not isinstance(n, dict):
        return ""
    kind = n.get("type")
    content = n.get("content")
    wraps = {
        "inline-bold": ("<strong>", "</strong>"),
        "inline-italic": ("<em>", "</em>"),
        "inline-bold-italic": ("<strong><em>", "</em></strong>"),
        "inline-strike": ("<del>", "</del>"),
    }
    if kind in wraps:
        before, after = wraps[kind]
        return before + _inline_html(content) + after
    if kind == "inline-text":
        return _esc(content)
    if kind == "inline-soft-break":
        return "\n"
    if kind == "inline-hard-break":
        return "<br>"
    if kind == "inline-code":
        return f"<code>{_esc(content)}</code>"
    if kind == "inline-link":
        href = _safe_url(n.get("url") or "")
        text = _inline_html(content)
        if not href:
            return text
        return f'<a href="{_esc(href)}"{_title_attr(n)}>{text or _esc(href)}</a>'
    if kind == "image":
        src = _safe_url(n.get("url") or "")
        alt = _esc(n.get("alt") or "")
        if not src:
            return alt
        return f'<img src="{_esc(src)}" alt="{alt}"{_title_attr(n)}>'
    if kind == "inline-ref-link":
        return _esc(n.get("text") or "")
    if kind == "inline-ref-image":
        return _esc(n.get("alt") or "")
    if kind == "inline-footnote-ref":
        return f"<sup>{_esc(to_str(n.get('id') or ''))}</sup>"
    return ""


def _is_inline(n: Any) -> bool:
    if type(n) is str:
        return True
    kind = n.get("type") if isinstance(n, dict) else None
    return type(kind) is str and kind.startswith("inline-")


def _whole(v: Any, default: int) -> int | None:
    n = to_number(default if v is None else v)
    return int(n) if n == n and n not in (float("inf"), float("-inf")) and n == int(n) else None


def _block_html(b: Any) -> str:
    if not isinstance(b, dict):
        return ""
    kind = b.get("type")
    if kind == "paragraph":
        return f"<p>{_inline_html(b.get('content'))}</p>"
    if kind == "heading":
        level = _whole(b.get("level"), 1)
        lvl = 1 if level is None else max(1, min(6, level))
        return f"<h{lvl}>{_inline_html(b.get('content'))}</h{lvl}>"
    if kind == "code-block":
        lang = b.get("language") or ""
        raw = "" if b.get("content") is None else to_str(b.get("content"))
        cls = f' class="language-{_esc(lang)}"' if lang else ""
        return f"<pre><code{cls}>{_esc(raw.rstrip(chr(10)))}</code></pre>"
    if kind == "block-quote":
        children = _list_of(b.get("content"))
        if all(_is_inline(c) for c in children):
            inner = f"<p>{_inline_html(children)}</p>"
        else:
            inner = "".join(_block_html(c) for c in children)
        return f"<blockquote>{inner}</blockquote>"
    if kind == "list":
        items = "".join(_item_html(i) for i in _list_of(b.get("items")))
        if not b.get("ordered"):
            return f"<ul>{items}</ul>"
        start = _whole(b.get("start"), 1)
        attr = f' start="{start}"' if start is not None and start != 1 else ""
        return f"<ol{attr}>{items}</ol>"
    if kind == "horizontal-rule":
        return "<hr>"
    if kind == "table":
        return _table_html(b)
    if kind == "footnote-definition":
        ident = _esc(to_str(b.get("id") or ""))
        return f'<p id="fn-{ident}"><sup>{ident}</sup> {_esc(b.get("content") or "")}</p>'
    return ""


def _item_html(raw: Any) -> str:
    if not isinstance(raw, dict):
        return ""
    blocks = _list_of(raw.get("content"))
    first = blocks[0] if blocks else None
    if isinstance(first, dict) and first.get("type") == "paragraph":
        inner = _inline_html(first.get("content")) + "".join(_block_html(x) for x in blocks[1:])
    else:
        inner = "".join(_block_html(x) for x in blocks)
    checked = raw.get("checked")
    if type(checked) is bool:
        mark = " checked" if checked else ""
        return f'<li><input type="checkbox"{mark} disabled> {inner}</li>'
    return f"<li>{inner}</li>"


def _table_html(node: dict[str, Any]) -> str:
    aligns = _list_of(node.get("alignments"))

    def align(i: int) -> str:
        a = aligns[i] if i < len(aligns) else None
        return f' style="text-align:{a}"' if a in ("left", "right", "center") else ""

    head = "".join(
        f"<th{align(i)}>{_esc(h or '')}</th>" for i, h in enumerate(_list_of(node.get("headers")))
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{align(i)}>{_esc(c or '')}</td>" for i, c in enumerate(_list_of(row)))
        + "</tr>"
        for row in _list_of(node.get("rows"))
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(blocks: Any) -> str:
    """renderForHtml(blocks): each block's HTML, the empty ones left out, one per line."""
    if not isinstance(blocks, list):
        return ""
    return "\n".join(h for h in (_block_html(b) for b in blocks) if h)


@builtin("__markdown_html")
def _markdown_html(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return render_html(arg(args, named, 0, "blocks"))


# -- terminal ----------------------------------------------------------------------------------
# renderForCli: the reference's palette (headings by level, code, links, quotes, bullets) as
# 24-bit colours; links are OSC 8 hyperlinks.


def _rgb(hex_color: str) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"\x1b[38;2;{r};{g};{b}m"


_BOLD, _ITALIC, _DIM, _UNDERLINE = (STYLES[k] for k in ("bold", "italic", "dim", "underline"))
_HEADINGS = [
    _rgb(c) + _BOLD for c in ("#4EC9B0", "#569CD6", "#C586C0", "#DCDCAA", "#9CDCFE", "#D4D4D4")
]
_CODE, _LINK = _rgb("#CE9178"), _rgb("#569CD6") + _UNDERLINE
_QUOTE, _BULLET = _rgb("#6A9955"), _rgb("#D7BA7D")


def _paint(codes: str, text: str) -> str:
    return codes + text + RESET


def _osc8(url: str, text: str) -> str:
    safe = _URL_CONTROL.sub("", url)
    return f"\x1b]8;;{safe}\x07{text}\x1b]8;;\x07" if safe else text


def _str(v: Any) -> str:
    return "" if v is None else v if type(v) is str else to_str(v)


def _inline_cli(nodes: Any) -> str:
    return "".join(_inline_node_cli(n) for n in _list_of(nodes))


def _inline_node_cli(n: Any) -> str:
    if type(n) is str:
        return n
    if not isinstance(n, dict):
        return ""
    kind = n.get("type")
    content = n.get("content")
    styles = {
        "inline-bold": _BOLD,
        "inline-italic": _ITALIC,
        "inline-bold-italic": _BOLD + _ITALIC,
        "inline-strike": _DIM,
    }
    if kind in styles:
        return _paint(styles[kind], _inline_cli(content))
    if kind == "inline-text" or kind == "inline-html":
        return _str(content)
    if kind == "inline-soft-break":
        return " "
    if kind == "inline-hard-break":
        return "\n"
    if kind == "inline-code":
        return _paint(_CODE, f"`{_str(content)}`")
    if kind == "inline-link":
        url = _str(n.get("url"))
        return _osc8(url, _paint(_LINK, _inline_cli(content) or url))
    if kind == "image":
        return _osc8(_str(n.get("url")), _paint(_LINK, f"[image: {_str(n.get('alt'))}]"))
    if kind == "inline-ref-link":
        return _paint(_LINK, _str(n.get("text"))) + _paint(_DIM, f"[{_str(n.get('id'))}]")
    if kind == "inline-ref-image":
        alt = _str(n.get("alt"))
        return _paint(_LINK, f"[image: {alt}]") + _paint(_DIM, f"[{_str(n.get('id'))}]")
    if kind == "inline-footnote-ref":
        return _paint(_DIM, f"[^{_str(n.get('id'))}]")
    return ""


def _block_cli(b: Any, indent: str = "") -> str:
    if not isinstance(b, dict):
        return ""
    kind = b.get("type")
    if kind == "paragraph":
        return indent + _inline_cli(b.get("content")) + "\n"
    if kind == "heading":
        level = b.get("level")
        lvl = int(max(1, min(6, to_number(1 if level is None else level))))
        text = "#" * lvl + " " + _inline_cli(b.get("content"))
        return indent + _paint(_HEADINGS[lvl - 1], text) + "\n"
    if kind == "code-block":
        lang = _str(b.get("language"))
        body = _str(b.get("content")).rstrip("\n")
        lines = "".join(indent + line + "\n" for line in body.split("\n")) if body else ""
        fence = _paint(_DIM, "```" + lang)
        return indent + fence + "\n" + lines + indent + _paint(_DIM, "```") + "\n"
    if kind == "block-quote":
        children = _list_of(b.get("content"))
        if all(_is_inline(c) for c in children):
            inner = _inline_cli(children)
        else:
            inner = "".join(_block_cli(c) for c in children)
        rows = inner.split("\n")
        if rows and rows[-1] == "":
            rows.pop()
        return "\n".join(indent + _paint(_QUOTE, "│ ") + r for r in rows) + "\n"
    if kind == "list":
        return _list_cli(b, indent)
    if kind == "horizontal-rule":
        return indent + _paint(_DIM, "─" * 60) + "\n"
    if kind == "table":
        return _table_cli(b, indent)
    if kind == "footnote-definition":
        return indent + _paint(_DIM, f"[^{_str(b.get('id'))}]: ") + _str(b.get("content")) + "\n"
    if kind == "html-block":
        return indent + _str(b.get("content")) + "\n"
    if kind == "frontmatter":
        raw = b.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        fields = ["---", *(f"{k}: {stringify(v)}" for k, v in data.items()), "---"]
        return "\n".join(indent + _paint(_DIM, f) for f in fields) + "\n"
    return ""


def _list_cli(b: dict[str, Any], indent: str) -> str:
    ordered = bool(b.get("ordered"))
    n = to_number(1 if b.get("start") is None else b.get("start"))
    out = ""
    for raw in _list_of(b.get("items")):
        if not isinstance(raw, dict):
            continue
        checked = raw.get("checked")
        if type(checked) is bool:
            marker = "[x] " if checked else "[ ] "
        else:
            marker = f"{to_str(n)}. " if ordered else "• "
        blocks = _list_of(raw.get("content"))
        first_line, rest = "", blocks
        if blocks and isinstance(blocks[0], dict) and blocks[0].get("type") == "paragraph":
            first_line, rest = _inline_cli(blocks[0].get("content")), blocks[1:]
        out += indent + _paint(_BULLET, marker) + first_line + "\n"
        for child in rest:
            out += _block_cli(child, indent + "  ")
        n += 1
    return out


def _table_cli(b: dict[str, Any], indent: str) -> str:
    headers = [_str(h) for h in _list_of(b.get("headers"))]
    rows = [[_str(c) for c in _list_of(r)] for r in _list_of(b.get("rows"))]
    aligns = _list_of(b.get("alignments"))
    widths = [
        max([len(h), *(len(r[i]) if i < len(r) else 0 for r in rows)])
        for i, h in enumerate(headers)
    ]

    def pad(text: str, i: int) -> str:
        w = widths[i] if i < len(widths) else 0
        a = aligns[i] if i < len(aligns) else None
        if a == "right":
            return text.rjust(w)
        if a == "center":
            total = w - len(text)
            left = total // 2
            return " " * max(0, left) + text + " " * max(0, total - left)
        return text.ljust(w)

    bar = _paint(_DIM, " │ ")
    head = bar.join(_paint(_BOLD, pad(h, i)) for i, h in enumerate(headers))
    rule = "─┼─".join("─" * w for w in widths)
    body = "\n".join(indent + bar.join(pad(c, i) for i, c in enumerate(r)) for r in rows)
    return indent + head + "\n" + indent + _paint(_DIM, rule) + "\n" + (body + "\n" if body else "")


def render_cli(blocks: Any) -> str:
    """renderForCli(blocks): the blocks styled for a terminal, an empty line between two."""
    if not isinstance(blocks, list):
        return ""
    return "\n".join(t for t in (_block_cli(b) for b in blocks) if t)


@builtin("__markdown_cli")
def _markdown_cli(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return render_cli(arg(args, named, 0, "blocks"))
