"""Provides std::markdown's parser (`__markdown_parse`): Markdown text to the block and inline
nodes the reference's `parse()` returns, each an object tagged with `type`.

The grammar is an ordered choice at every point, as the reference's combinator parser is: the
first alternative that matches wins, with no backtracking into an alternative that matched.
Blocks: frontmatter (first only), setext and ATX headings, horizontal rules, fenced and
indented code, pipe tables, block quotes, lists (nested by indentation, GFM task items), HTML
blocks, link and footnote definitions, paragraphs. Inline: hard and soft breaks, escapes,
bold/italic/strike (with `*` and `_`), code spans, links, images, autolinks, reference links
and images, footnote references, inline HTML and entities. Reference links, reference images
and footnote references are resolved against the definitions afterwards, and the definitions
dropped.

Each parse function takes the text and a position and gives (value, new position), or None
when it does not match there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.vm.builtin_base import arg, builtin
from runtime.vm.values import JSObject, from_plain, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

Got = tuple[Any, int] | None
Parse = Callable[[str, int], Got]

_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TEXT_STOPS = frozenset("*_`[]!<~\\&\n")
_ESCAPABLE = frozenset("\\`*_{}[]()#+-.!~<>|")
_URL_PUNCT = frozenset(".,!?;:")


def _text(content: str) -> dict[str, Any]:
    return {"type": "inline-text", "content": content}


def _at(s: str, i: int, lit: str) -> bool:
    return s.startswith(lit, i)


def _line_end(s: str, i: int) -> int | None:
    """After a newline at `i`, or `i` at the end: the `(\\n | eof)` that closes a line."""
    if i >= len(s):
        return i
    return i + 1 if s[i] == "\n" else None


def _till(s: str, i: int, lit: str) -> int:
    """Where `lit` next occurs from `i` (the end when it does not)."""
    j = s.find(lit, i)
    return len(s) if j < 0 else j


# -- inline ------------------------------------------------------------------------------------


def _hard_break_spaces(s: str, i: int) -> int | None:
    if not _at(s, i, "  "):
        return None
    j = i + 2
    while j < len(s) and s[j] == " ":
        j += 1
    return j + 1 if j < len(s) and s[j] == "\n" else None


def _text_stop(s: str, i: int) -> bool:
    return s[i] in _TEXT_STOPS or _hard_break_spaces(s, i) is not None


def _inline_text(s: str, i: int) -> Got:
    j = i
    while j < len(s) and not _text_stop(s, j):
        j += 1
    return (_text(s[i:j]), j) if j > i else None


def _seq_until(s: str, i: int, stop: Callable[[str, int], bool]) -> tuple[list[Any], int]:
    nodes: list[Any] = []
    while i < len(s) and not stop(s, i):
        got = inline(s, i)
        if got is None or got[1] == i:
            break
        nodes.append(got[0])
        i = got[1]
    return nodes, i


def _delimited(s: str, i: int, mark: str, kind: str, word_end: bool = False) -> Got:
    """`mark … mark` holding inline nodes (`word_end`: not followed by a letter or digit)."""
    if not _at(s, i, mark):
        return None
    if mark == "*" and _at(s, i, "**") or mark == "_" and _at(s, i, "__"):
        return None
    content, j = _seq_until(s, i + len(mark), lambda t, k: _at(t, k, mark))
    if not _at(s, j, mark):
        return None
    j += len(mark)
    if word_end and j < len(s) and s[j] in _ALNUM:
        return None
    return {"type": kind, "content": content}, j


def _hard_break(s: str, i: int) -> Got:
    j = _hard_break_spaces(s, i)
    if j is None and _at(s, i, "\\\n"):
        j = i + 2
    return ({"type": "inline-hard-break"}, j) if j is not None else None


def _escape(s: str, i: int) -> Got:
    if _at(s, i, "\\") and i + 1 < len(s) and s[i + 1] in _ESCAPABLE:
        return _text(s[i + 1]), i + 2
    return None


def _bold_italic(s: str, i: int) -> Got:
    for mark in ("***", "___"):
        if _at(s, i, mark):
            content, j = _seq_until(s, i + 3, lambda t, k, m=mark: _at(t, k, m))  # type: ignore[misc]
            if _at(s, j, mark):
                return {"type": "inline-bold-italic", "content": content}, j + 3
    return None


def _url_token(s: str, i: int) -> int:
    while i < len(s) and s[i] not in " \t\n)":
        i += 1
    return i


def _title_clause(s: str, i: int) -> Got:
    j = i
    while j < len(s) and s[j] == " ":
        j += 1
    if j == i or j >= len(s) or s[j] not in "\"'":
        return None
    q = s[j]
    end = _till(s, j + 1, q)
    if end >= len(s):
        return None
    return s[j + 1 : end], end + 1


def _link_tail(s: str, i: int) -> tuple[str, str | None, int] | None:
    """`url "title")` after `](`: the url, the title (or None) and the position after `)`."""
    u = _url_token(s, i)
    url = s[i:u]
    title = _title_clause(s, u)
    j = u if title is None else title[1]
    if not _at(s, j, ")"):
        return None
    return url, (title[0] if title else None), j + 1


def _link(s: str, i: int) -> Got:
    if not _at(s, i, "["):
        return None
    content, j = _seq_until(s, i + 1, lambda t, k: t[k] == "]")
    if not _at(s, j, "]("):
        return None
    tail = _link_tail(s, j + 2)
    if tail is None:
        return None
    node: dict[str, Any] = {"type": "inline-link", "content": content, "url": tail[0]}
    if tail[1] is not None:
        node["title"] = tail[1]
    return node, tail[2]


def _image(s: str, i: int) -> Got:
    if not _at(s, i, "!["):
        return None
    lower = s.lower()
    mid = lower.find("](", i + 2)
    if mid < 0:
        return None
    tail = _link_tail(s, mid + 2)
    if tail is None:
        return None
    node: dict[str, Any] = {"type": "image", "alt": s[i + 2 : mid], "url": tail[0]}
    if tail[1] is not None:
        node["title"] = tail[1]
    return node, tail[2]


def _bracketed(s: str, i: int) -> Got:
    if not _at(s, i, "["):
        return None
    j = i + 1
    while j < len(s) and s[j] not in "]\n":
        j += 1
    return (s[i + 1 : j], j + 1) if _at(s, j, "]") else None


def _ref(s: str, i: int, image: bool) -> Got:
    start = i + 1 if image else i
    if image and not _at(s, i, "!"):
        return None
    first = _bracketed(s, start)
    if first is None:
        return None
    text, j = first
    second = _bracketed(s, j)
    ident = text
    if second is not None:
        j = second[1]
        ident = second[0] or text
    if _at(s, j, "("):
        return None
    if image:
        return {"type": "inline-ref-image", "alt": text, "id": ident}, j
    return {"type": "inline-ref-link", "text": text, "id": ident}, j


def _footnote_ref(s: str, i: int) -> Got:
    if not _at(s, i, "[^"):
        return None
    j = i + 2
    while j < len(s) and s[j] not in "] \n\t":
        j += 1
    if j == i + 2 or not _at(s, j, "]"):
        return None
    return {"type": "inline-footnote-ref", "id": s[i + 2 : j]}, j + 1


def _code(s: str, i: int) -> Got:
    n = 0
    while i + n < len(s) and s[i + n] == "`":
        n += 1
    if n == 0:
        return None
    j = i + n
    while j < len(s):
        if s[j] == "`":
            k = j
            while k < len(s) and s[k] == "`":
                k += 1
            if k - j == n:
                body = s[i + n : j]
                if len(body) >= 2 and body[0] == " " and body[-1] == " " and body.strip():
                    body = body[1:-1]
                return {"type": "inline-code", "content": body}, k
            j = k
        else:
            j += 1
    return None


def _autolink(s: str, i: int) -> Got:
    if not _at(s, i, "<"):
        return None
    m = re.compile(r"<(https?://[^ \t\n<>]+)>").match(s, i)
    if m:
        return {"type": "inline-link", "content": [_text(m[1])], "url": m[1]}, m.end()
    m = re.compile(r"<([^ \t\n<>@.]+@[^ \t\n<>@.]+\.[^ \t\n<>@.]+)>").match(s, i)
    if m:
        return {"type": "inline-link", "content": [_text(m[1])], "url": "mailto:" + m[1]}, m.end()
    return None


def _url_atoms(s: str, i: int, in_parens: bool) -> int:
    """The bare URL's body from `i`: balanced parentheses, sentence punctuation only when more
    of the URL follows, any other character but whitespace, `<`, `>` and `(` `)`."""
    j = i
    while j < len(s):
        c = s[j]
        if c == "(":
            inner = _url_atoms(s, j + 1, True)
            if _at(s, inner, ")"):
                j = inner + 1
                continue
            break
        if c in _URL_PUNCT:
            k = j
            while k < len(s) and s[k] in _URL_PUNCT:
                k += 1
            if k >= len(s) or s[k] in " \t\n<>)":
                break
            j += 1
            continue
        if c in " \t\n<>()":
            break
        j += 1
    return j


def _bare_url(s: str, i: int) -> Got:
    m = re.compile(r"https?://").match(s, i)
    if not m:
        return None
    end = _url_atoms(s, m.end(), False)
    if end == m.end():
        return None
    url = s[i:end]
    return {"type": "inline-link", "content": [_text(url)], "url": url}, end


_HTML_OPEN = re.compile(
    r"<[A-Za-z][A-Za-z0-9-]*"
    r"(?:[ \t\n]+[A-Za-z_:][A-Za-z0-9_:.-]*"
    r"(?:[ \t\n]*=[ \t\n]*(?:\"[^\"]*\"|'[^']*'|[^ \t\n\"'=<>`]+))?)*"
    r"[ \t\n]*/?>"
)
_HTML_CLOSE = re.compile(r"</[A-Za-z][A-Za-z0-9-]*[ \t\n]*>")


def _html_inline(s: str, i: int) -> Got:
    if not _at(s, i, "<"):
        return None
    if _at(s, i, "<!--"):
        j = i + 4
        if _at(s, j, "-->"):
            return {"type": "inline-html", "content": s[i : j + 3]}, j + 3
        if j < len(s) and s[j] != ">":
            k = j
            while k < len(s) and not _at(s, k, "-->"):
                if _at(s, k, "--") or (s[k] == ">" and _at(s, k + 1, "-->")):
                    break
                k += 1
            if k > j and _at(s, k, "-->"):
                return {"type": "inline-html", "content": s[i : k + 3]}, k + 3
    for pattern in (_HTML_CLOSE, _HTML_OPEN):
        m = pattern.match(s, i)
        if m:
            return {"type": "inline-html", "content": m[0]}, m.end()
    return None


_ENTITY = re.compile(r"&#[xX]([0-9a-fA-F]+);|&#([0-9]+);|&(amp|lt|gt|quot|apos);")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def _entity(s: str, i: int) -> Got:
    m = _ENTITY.match(s, i)
    if not m:
        return None
    try:
        if m[1] is not None:
            ch = chr(int(m[1], 16))
        elif m[2] is not None:
            ch = chr(int(m[2]))
        else:
            ch = _NAMED[m[3]]
    except (ValueError, OverflowError):
        return None
    return _text(ch), m.end()


def _literal(s: str, i: int) -> Got:
    if s[i] in _TEXT_STOPS and s[i] != "\n":
        return _text(s[i]), i + 1
    return None


_INLINE: tuple[Parse, ...] = (
    _hard_break,
    _escape,
    _bold_italic,
    lambda s, i: _delimited(s, i, "**", "inline-bold"),
    lambda s, i: _delimited(s, i, "*", "inline-italic"),
    lambda s, i: _delimited(s, i, "__", "inline-bold", word_end=True),
    lambda s, i: _delimited(s, i, "_", "inline-italic", word_end=True),
    lambda s, i: _delimited(s, i, "~~", "inline-strike"),
    _autolink,
    _bare_url,
    _html_inline,
    _image,
    lambda s, i: _ref(s, i, image=True),
    _footnote_ref,
    _link,
    lambda s, i: _ref(s, i, image=False),
    _code,
    _entity,
    _inline_text,
    _literal,
)


def inline(s: str, i: int) -> Got:
    """One inline node at `i`."""
    if i >= len(s):
        return None
    for p in _INLINE:
        got = p(s, i)
        if got is not None:
            return got
    return None


def _inlines(s: str) -> list[Any] | None:
    """As many inline nodes as match from the start (None when not even one does)."""
    nodes, _ = _seq_until(s, 0, lambda t, k: False)
    return nodes or None


# -- blocks ------------------------------------------------------------------------------------


def _blank_line(s: str, i: int) -> bool:
    if not _at(s, i, "\n"):
        return False
    j = i + 1
    while j < len(s) and s[j] in " \t":
        j += 1
    return _line_end(s, j) is not None


def _atx_marker(s: str, i: int) -> int | None:
    n = 0
    while i + n < len(s) and s[i + n] == "#":
        n += 1
    return n if 1 <= n <= 6 else None


def _trailing_hashes(s: str, i: int) -> int | None:
    j = i
    while j < len(s) and s[j] == " ":
        j += 1
    if j == i or not _at(s, j, "#"):
        return None
    while j < len(s) and s[j] == "#":
        j += 1
    while j < len(s) and s[j] == " ":
        j += 1
    return _line_end(s, j)


def _whitespace(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\n\r":
        i += 1
    return i


def _heading_node(level: int, body: str) -> dict[str, Any]:
    content = _inlines(body)
    return {"type": "heading", "level": level, "content": content or [_text(body)]}


def _atx_heading(s: str, i: int) -> Got:
    level = _atx_marker(s, i)
    if level is None:
        return None
    j = _whitespace(s, i + level)
    if j == i + level:
        return None
    k = j
    while k < len(s) and s[k] != "\n" and _trailing_hashes(s, k) is None:
        k += 1
    if k == j:
        return None
    body = s[j:k]
    end = _trailing_hashes(s, k)
    k = end if end is not None else k
    if _at(s, k, "\n"):
        k += 1
    return _heading_node(level, body), k


def _setext_heading(s: str, i: int) -> Got:
    nl = _till(s, i, "\n")
    if nl == i or nl >= len(s):
        return None
    j = nl + 1
    mark = s[j] if j < len(s) else ""
    if mark not in ("=", "-"):
        return None
    while j < len(s) and s[j] == mark:
        j += 1
    end = _line_end(s, j)
    if end is None:
        return None
    return _heading_node(1 if mark == "=" else 2, s[i:nl]), end


def _fenced_code(s: str, i: int) -> Got:
    if not _at(s, i, "```"):
        return None
    j = i + 3
    k = j
    while k < len(s) and (s[k] in _ALNUM or s[k] in "_+#.-"):
        k += 1
    language = s[j:k] or None
    k = _whitespace(s, k)
    close = s.find("```", k)
    if close < 0:
        return None
    return {"type": "code-block", "language": language, "content": s[k:close]}, close + 3


def _indented_code(s: str, i: int) -> Got:
    lines: list[str] = []
    j = i
    while True:
        if _at(s, j, "    "):
            start = j + 4
        elif _at(s, j, "\t"):
            start = j + 1
        else:
            break
        nl = _till(s, start, "\n")
        lines.append(s[start:nl] + "\n")
        j = nl + 1 if nl < len(s) else nl
    if not lines:
        return None
    return {"type": "code-block", "language": None, "content": "".join(lines)}, j


def _cells(s: str, i: int, cell: Callable[[str], Any] | None) -> Got:
    """A `| a | b |` row: its cells (each at least one character), or with `cell`, each
    cell's text given to it (None when one does not fit)."""
    if not _at(s, i, "|"):
        return None
    out: list[Any] = []
    j = i + 1
    while True:
        k = j
        while k < len(s) and s[k] not in "|\n":
            k += 1
        if k == j or not _at(s, k, "|"):
            break
        raw = s[j:k]
        if cell is None:
            out.append(raw.strip())
        else:
            v = cell(raw)
            if v is False:
                break
            out.append(v)
        j = k + 1
    if not out:
        return None
    end = _line_end(s, j)
    return (out, end) if end is not None else None


def _alignment(raw: str) -> Any:
    m = re.fullmatch(r" *(:?)-+(:?) *", raw)
    if not m:
        return False
    left, right = bool(m[1]), bool(m[2])
    if left and right:
        return "center"
    return "right" if right else "left" if left else None


def _table(s: str, i: int) -> Got:
    head = _cells(s, i, None)
    if head is None:
        return None
    sep = _cells(s, head[1], _alignment)
    if sep is None:
        return None
    rows: list[Any] = []
    j = sep[1]
    while (row := _cells(s, j, None)) is not None:
        rows.append(row[0])
        j = row[1]
    if not rows:
        return None
    return {"type": "table", "headers": head[0], "alignments": sep[0], "rows": rows}, j


def _quote_lines(s: str, i: int) -> tuple[list[str], int] | None:
    lines: list[str] = []
    j = i
    while _at(s, j, ">"):
        start = j + 2 if _at(s, j + 1, " ") else j + 1
        nl = _till(s, start, "\n")
        lines.append(s[start:nl])
        j = nl + 1 if nl < len(s) else nl
    return (lines, j) if lines else None


def _block_quote(s: str, i: int) -> Got:
    got = _quote_lines(s, i)
    if got is None:
        return None
    inner = "\n".join(got[0])
    content: list[Any] = []
    k = 0
    while k < len(inner):
        n = k
        while n < len(inner) and inner[n] == "\n":
            n += 1
        nested = _block_quote(inner, n)
        if nested is not None:
            content.append(nested[0])
            k = nested[1]
        elif inner[k] == "\n":
            content.append(_text(" "))
            k += 1
        else:
            one = inline(inner, k)
            if one is None:
                break
            content.append(one[0])
            k = one[1]
    return {"type": "block-quote", "content": content}, got[1]


def _marker(s: str, i: int) -> tuple[bool, int, int] | None:
    """A list marker at `i`: (ordered, start number, width)."""
    if i < len(s) and s[i] in "-*+":
        return False, 1, 1
    j = i
    while j < len(s) and s[j].isascii() and s[j].isdigit():
        j += 1
    if j > i and _at(s, j, "."):
        return True, int(s[i:j]), j - i + 1
    return None


def _item(s: str, i: int, indent: int) -> tuple[bool, int, dict[str, Any], int] | None:
    if not _at(s, i, " " * indent):
        return None
    j = i + indent
    marker = _marker(s, j)
    if marker is None or not _at(s, j + marker[2], " "):
        return None
    ordered, start, width = marker
    j += width + 1
    checked = None
    m = re.compile(r"\[([ xX])\] ").match(s, j)
    if m:
        checked = m[1] != " "
        j = m.end()
    k = indent + width + 1
    nl = _till(s, j, "\n")
    lines = [s[j:nl]]
    j = nl + 1 if nl < len(s) else nl
    while j < len(s):
        if _at(s, j, " " * k):
            nl = _till(s, j + k, "\n")
            lines.append(s[j + k : nl])
            j = nl + 1 if nl < len(s) else nl
            continue
        b = j
        while b < len(s) and s[b] in " \t":
            b += 1
        if _at(s, b, "\n"):
            lines.append("")
            j = b + 1
            continue
        break
    item: dict[str, Any] = {"content": _blocks_of("\n".join(lines).lstrip("\n"))}
    if checked is not None:
        item["checked"] = checked
    return ordered, start, item, j


def _list(s: str, i: int) -> Got:
    first = _item(s, i, 0)
    if first is None:
        return None
    ordered, start, item, j = first
    items = [item]
    while (more := _item(s, j, 0)) is not None and more[0] == ordered:
        items.append(more[2])
        j = more[3]
    return {"type": "list", "ordered": ordered, "start": start, "items": items}, j


def _html_block(s: str, i: int) -> Got:
    if not (_at(s, i, "<") and i + 1 < len(s) and (s[i + 1] in _LETTERS or s[i + 1] in "/!?")):
        return None
    j = i
    while j < len(s) and not _blank_line(s, j):
        j += 1
    return {"type": "html-block", "content": s[i:j]}, j


def _link_definition(s: str, i: int) -> Got:
    m = re.compile(r"\[([^\]\n]+)\]:[ \t\n\r]+([^ \t\n]+)").match(s, i)
    if not m:
        return None
    node: dict[str, Any] = {"type": "link-definition", "id": m[1], "url": m[2]}
    t = re.compile(r"[ \t\n\r]+\"([^\"\n]+)\"").match(s, m.end())
    if t:
        node["title"] = t[1]
        return node, t.end()
    return node, m.end()


def _footnote_definition(s: str, i: int) -> Got:
    m = re.compile(r"\[\^([^\] \n\t]+)\]:[ \t\n\r]+([^\n]+)").match(s, i)
    if not m:
        return None
    return {"type": "footnote-definition", "id": m[1], "content": m[2]}, m.end()


def _hr(s: str, i: int) -> Got:
    for c in "-*_":
        j, n = i, 0
        while j < len(s) and s[j] in (" ", c):
            n += s[j] == c
            j += 1
        if n >= 3:
            end = _line_end(s, j)
            if end is not None:
                return {"type": "horizontal-rule"}, end
    return None


def _interrupts(s: str, i: int) -> bool:
    """Whether a paragraph's next line starts another block instead."""
    level = _atx_marker(s, i)
    if level is not None and _at(s, i + level, " "):
        return True
    if _at(s, i, ">") or _at(s, i, "```") or _at(s, i, "|") or _hr(s, i) is not None:
        return True
    marker = _marker(s, i)
    if marker is not None and _at(s, i + marker[2], " "):
        return True
    return _at(s, i, "<") and i + 1 < len(s) and (s[i + 1] in _LETTERS or s[i + 1] in "/!?")


def _paragraph(s: str, i: int) -> Got:
    content: list[Any] = []
    j = i
    while j < len(s) and not _blank_line(s, j):
        if s[j] == "\n" and not _at(s, j + 1, "\n") and not _interrupts(s, j + 1):
            content.append({"type": "inline-soft-break"})
            j += 1
            continue
        got = inline(s, j)
        if got is None or got[1] == j:
            break
        content.append(got[0])
        j = got[1]
    return ({"type": "paragraph", "content": content}, j) if content else None


_BLOCKS: tuple[Parse, ...] = (
    _setext_heading,
    _hr,
    _atx_heading,
    _fenced_code,
    _indented_code,
    _table,
    _block_quote,
    _list,
    _html_block,
    _link_definition,
    _footnote_definition,
    _paragraph,
    _image,
)


def _block_entry(s: str, i: int) -> Got:
    for p in _BLOCKS:
        got = p(s, i)
        if got is not None and got[1] > i:
            j = got[1]
            while _at(s, j, "\n"):
                j += 1
            return got[0], j
    return None


def _blocks_from(s: str, i: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while i < len(s):
        got = _block_entry(s, i)
        if got is None:
            break
        out.append(got[0])
        i = got[1]
    return out, i


def _blocks_of(s: str) -> list[Any]:
    return _blocks_from(s, 0)[0]


# -- frontmatter -------------------------------------------------------------------------------

_JS_NUMBER = re.compile(
    r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+"
)


def _bare_value(raw: str) -> Any:
    s = raw.strip()
    if s in ("true", "false"):
        return s == "true"
    if s in ("null", "~"):
        return None
    if _JS_NUMBER.fullmatch(s):
        if s[:2].lower() in ("0x", "0o", "0b"):
            return int(s, 0)
        n = float(s)
        if n == n and n not in (float("inf"), float("-inf")):
            return int(n) if n.is_integer() and abs(n) < 2**53 else n
    return s


def _quoted(s: str, i: int) -> Got:
    if i >= len(s) or s[i] not in "\"'`":
        return None
    q, j = s[i], i + 1
    while j < len(s) and s[j] != q:
        j += 2 if s[j] == "\\" else 1
    return (s[i + 1 : j], j + 1) if j < len(s) else None


def _yaml_value(s: str, i: int) -> Got:
    if _at(s, i, "["):
        items: list[Any] = []
        j = i + 1
        while True:
            k = j
            while k < len(s) and s[k] in " \t":
                k += 1
            got = _quoted(s, k)
            if got is None:
                e = k
                while e < len(s) and s[e] not in ",]\n":
                    e += 1
                got = (_bare_value(s[k:e]), e) if e > k else None
            if got is None:
                break
            items.append(got[0])
            j = got[1]
            if not _at(s, j, ","):
                break
            j += 1
        while j < len(s) and s[j] in " \t":
            j += 1
        if _at(s, j, "]"):
            return items, j + 1
    got = _quoted(s, i)
    if got is not None:
        return got
    e = _till(s, i, "\n")
    return (_bare_value(s[i:e]), e) if e > i else None


def _frontmatter(s: str) -> Got:
    m = re.compile(r"---[ \t]*\n").match(s)
    if not m:
        return None
    data: dict[str, Any] = {}
    j = m.end()
    while True:
        key = re.compile(r"[A-Za-z0-9_-]+:[ \t]*").match(s, j)
        if not key:
            break
        got = _yaml_value(s, key.end())
        if got is None:
            break
        end = _line_end(s, got[1])
        if end is None:
            break
        data[key[0].split(":")[0]] = got[0]
        j = end
    close = re.compile(r"---[ \t]*(?:\n|$)").match(s, j)
    if not close:
        return None
    return {"type": "frontmatter", "data": data}, close.end()


# -- references --------------------------------------------------------------------------------

_CHILD_KEYS = ("content", "items", "rows")


def _resolve(nodes: list[Any]) -> list[Any]:
    """Reference links, reference images and footnote references replaced by what their
    definitions say (or by their text when none does); the definitions dropped."""
    links: dict[str, dict[str, Any]] = {}
    notes: dict[str, dict[str, Any]] = {}

    def collect(node: Any) -> None:
        if isinstance(node, list):
            for n in node:
                collect(n)
            return
        if not isinstance(node, dict):
            return
        if node.get("type") == "link-definition":
            links[str(node["id"]).lower()] = node
        elif node.get("type") == "footnote-definition":
            notes[str(node["id"]).lower()] = node
        for key in _CHILD_KEYS:
            if isinstance(node.get(key), list):
                collect(node[key])

    def is_def(n: Any) -> bool:
        return isinstance(n, dict) and n.get("type") in ("link-definition", "footnote-definition")

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node if not is_def(n)]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind == "inline-ref-link":
            found = links.get(str(node["id"]).lower())
            if found is None:
                return _text(f"[{node['text']}]")
            link = {"type": "inline-link", "content": [_text(node["text"])], "url": found["url"]}
            if "title" in found:
                link["title"] = found["title"]
            return link
        if kind == "inline-ref-image":
            found = links.get(str(node["id"]).lower())
            if found is None:
                return _text(f"![{node['alt']}]")
            img = {"type": "image", "url": found["url"], "alt": node["alt"]}
            if "title" in found:
                img["title"] = found["title"]
            return img
        if kind == "inline-footnote-ref":
            note = notes.get(str(node["id"]).lower())
            if note is None:
                return _text(f"[^{node['id']}]")
            return {"type": "inline-footnote-ref", "id": node["id"], "content": note["content"]}
        out = dict(node)
        for key in _CHILD_KEYS:
            if isinstance(node.get(key), list):
                out[key] = walk(node[key])
        return out

    collect(nodes)
    resolved: list[Any] = walk(nodes)
    return resolved


def parse_markdown(text: str) -> dict[str, Any]:
    """`parse(input)`'s result: {success, blocks, error, rest}."""
    blocks: list[Any] = []
    i = 0
    fm = _frontmatter(text)
    if fm is not None:
        blocks.append(fm[0])
        i = fm[1]
    i = _whitespace(text, i)
    more, i = _blocks_from(text, i)
    blocks.extend(more)
    i = _whitespace(text, i)
    return {"success": True, "blocks": _resolve(blocks), "error": "", "rest": text[i:]}


@builtin("__markdown_parse")
def _markdown_parse(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    text = arg(args, named, 0, "input")
    parsed = from_plain(parse_markdown("" if text is None else to_str(text)))
    assert type(parsed) is JSObject
    return parsed
