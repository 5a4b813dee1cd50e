"""Provides the host function behind `std::http`: `__http_fetch`, one HTTP request.

A request is an effect on the world: it runs through the effect journal (`perform`), keyed by
the step that makes it, so a resumed or replayed run is served the recorded answer and never
sends the request again. The answer is a Result: `success(body)` (the text, the parsed JSON, or
the text with HTML turned into Markdown, by `mode`) or, for a status outside 200-299,
`failure({status, statusText, url, body, message})`. A request that cannot be made (a domain
outside `allowedDomains`, a network error, a body over 10 MB) raises, which makes the calling
def return a failure.

Under `agency test`, a suite's `fetchMocks` (`World.fetch_mocks`, a list) answer every request:
the first entry whose `url` glob (`*` matches anything, `/` included) or `urlPattern` regex, and
optional `method`, `body` (a string, or an object that must be a subset of the JSON body) or
`bodyPattern` match, gives `return` (a string as it is, anything else as JSON), `status` (200)
and `headers`. A request no entry matches is an error: a test never reaches the network.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.files import loads_json
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.effects import perform
from runtime.vm.values import (
    JSObject,
    RegexTime,
    Result,
    compiled_regex,
    from_plain,
    stringify,
    to_str,
)

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

BODY_LIMIT = 10 * 1024 * 1024  # bytes of a response body
TIMEOUT = 60.0  # seconds a request may take
SNIPPET = 300  # characters of a failed response's body kept in the failure


class Response:
    """What came back: status, reason, headers (lower-case names) and the body, as bytes
    (`data`) and as text."""

    def __init__(
        self, status: int, reason: str, headers: dict[str, str], data: bytes | str
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.data = data.encode("utf-8") if isinstance(data, str) else data
        self.text = self.data.decode("utf-8", errors="replace")


def _s(v: Any) -> str:
    return v if type(v) is str else to_str(v)


def request_url(base: str, path: str) -> str:
    """`base` with `path` appended (a path that is itself a full URL replaces the base)."""
    if not path:
        return base
    if re.match(r"^[a-z][a-z0-9+.-]*://", path, re.I):
        return path
    if base.endswith("/") and path.startswith("/"):
        return base + path[1:]
    if not base.endswith("/") and not path.startswith("/") and not path.startswith("?"):
        return f"{base}/{path}"
    return base + path


def check_domain(url: str, allowed: list[str]) -> None:
    """Refuse a URL whose host is not one of `allowed` (or a subdomain of one); [] allows all."""
    if not allowed:
        return
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    for domain in allowed:
        d = domain.lower().lstrip(".")
        if host == d or host.endswith("." + d):
            return
    raise AgencyRuntimeError(
        f"fetch: the host {host!r} of {url} is not in allowedDomains ({', '.join(allowed)})"
    )


# -- test mocks ----------------------------------------------------------------------------------


def _subset(want: Any, have: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            k in have and _subset(v, have[k]) for k, v in want.items()
        )
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(want) == len(have)
            and all(_subset(w, h) for w, h in zip(want, have, strict=True))
        )
    return bool(want == have and type(want) is type(have))


def _search(pattern: str, text: str) -> bool:
    """Whether a mock's pattern (a regex the test file wrote) matches somewhere in `text`,
    within the regex time limit (a bad or catastrophic pattern is a runtime error)."""
    with RegexTime(pattern) as clock:
        return compiled_regex(pattern, "").search(text, timeout=clock.limit) is not None


def _body_matches(mock: dict[str, Any], sent: str) -> bool:
    if "bodyPattern" in mock:
        return _search(str(mock["bodyPattern"]), sent)
    want = mock.get("body")
    if want is None:
        return True
    if isinstance(want, str):
        return sent == want
    try:
        return _subset(want, json.loads(sent))
    except ValueError:
        return False


def _url_matches(mock: dict[str, Any], url: str) -> bool:
    if "urlPattern" in mock:
        return _search(str(mock["urlPattern"]), url)
    glob = str(mock.get("url", ""))
    pattern = ".*".join(re.escape(part) for part in glob.split("*"))
    with RegexTime(glob) as clock:  # `*a*a*a…` backtracks as a regex does
        return compiled_regex(pattern, "").fullmatch(url, timeout=clock.limit) is not None


def mocked(mocks: list[Any], method: str, url: str, sent: str) -> Response:
    """The answer of the first mock that matches the request (an error when none does)."""
    for mock in mocks:
        if not isinstance(mock, dict) or not _url_matches(mock, url):
            continue
        if mock.get("method") and str(mock["method"]).upper() != method:
            continue
        if not _body_matches(mock, sent):
            continue
        ret = mock.get("return", "")
        text = ret if isinstance(ret, str) else json.dumps(ret, ensure_ascii=False)
        status = mock.get("status", 200)
        headers = {str(k).lower(): str(v) for k, v in (mock.get("headers") or {}).items()}
        return Response(int(status) if isinstance(status, (int, float)) else 200, "", headers, text)
    declared = ", ".join(
        str(m.get("url", m.get("urlPattern", "?"))) for m in mocks if isinstance(m, dict)
    )
    raise AgencyRuntimeError(
        f"no fetchMock matched {method} {url} (declared: [{declared}]); add an entry to fetchMocks"
    )


# -- the network ---------------------------------------------------------------------------------


def send(method: str, url: str, headers: dict[str, str], data: bytes | None) -> Response:
    """Make the request over the network (http and https only)."""
    import urllib.error  # with what it brings (http, ssl, email: ~30 ms), only for a request
    import urllib.request

    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise AgencyRuntimeError(f"fetch: only http and https URLs can be fetched, not {url!r}")
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310 (scheme checked)
            return Response(resp.status, resp.reason or "", _lower(resp.headers), _read(resp, url))
    except urllib.error.HTTPError as err:
        return Response(err.code, err.reason or "", _lower(err.headers), _read(err, url))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AgencyRuntimeError(
            f"could not reach {url} ({reason}); the network may be unavailable here"
        ) from None


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (headers.items() if headers else [])}


def _read(resp: Any, url: str) -> bytes:
    data = resp.read(BODY_LIMIT + 1)
    if len(data) > BODY_LIMIT:
        raise AgencyRuntimeError(f"the response from {url} is over {BODY_LIMIT} bytes")
    return bytes(data)


# -- answers ---------------------------------------------------------------------------------------


def status_failure(resp: Response, url: str) -> Result:
    snippet = " ".join(resp.text.split())
    if len(snippet) > SNIPPET:
        snippet = snippet[:SNIPPET] + "…"
    reason = f" {resp.reason}" if resp.reason else ""
    message = f"HTTP {resp.status}{reason} from {url}" + (f": {snippet}" if snippet else "")
    error = JSObject(
        {
            "status": resp.status,
            "statusText": resp.reason,
            "url": url,
            "body": snippet,
            "message": message,
        }
    )
    return Result(False, error=error)


def answer(resp: Response, url: str, mode: str) -> Result:
    """The Result a request gives: the body as `mode` says, or a failure for a bad status."""
    if not 200 <= resp.status < 300:
        return status_failure(resp, url)
    if mode == "json":
        try:
            return Result(True, from_plain(loads_json(resp.text)))
        except ValueError as exc:
            raise AgencyRuntimeError(f"the response from {url} is not JSON: {exc}") from None
    if mode == "markdown" and "text/html" in resp.headers.get("content-type", ""):
        return Result(True, html_to_markdown(resp.text))
    return Result(True, resp.text)


_ENTITIES = {"&nbsp;": " ", "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'"}


def _strip_tags(s: str) -> str:
    return re.sub(r"<[^>]+>", "", s)


def html_to_markdown(html: str) -> str:
    """Readable Markdown from an HTML page: headings, paragraphs, lists, links, emphasis and
    code kept; scripts, styles and comments dropped; other tags removed."""
    s = re.sub(r"<(script|style|noscript)\b[\s\S]*?</\1>", "", html, flags=re.I)
    s = re.sub(r"<!--[\s\S]*?-->", "", s)
    s = re.sub(
        r"<h([1-6])[^>]*>([\s\S]*?)</h\1>",
        lambda mt: f"\n\n{'#' * int(mt[1])} {_strip_tags(mt[2]).strip()}\n\n",
        s,
        flags=re.I,
    )
    s = re.sub(r"<br\s*/?>", "\n", s, flags=re.I)
    s = re.sub(r"</p>", "\n\n", s, flags=re.I)
    s = re.sub(r"<p[^>]*>", "", s, flags=re.I)
    s = re.sub(r"</div>", "\n", s, flags=re.I)
    s = re.sub(r"<div[^>]*>", "", s, flags=re.I)
    s = re.sub(
        r"<li[^>]*>([\s\S]*?)</li>",
        lambda mt: f"- {_strip_tags(mt[1]).strip()}\n",
        s,
        flags=re.I,
    )

    def link(mt: re.Match[str]) -> str:
        text = _strip_tags(mt[2]).strip()
        return f"[{text}]({mt[1]})" if text else mt[1]

    s = re.sub(r"<a[^>]*href=\"([^\"]+)\"[^>]*>([\s\S]*?)</a>", link, s, flags=re.I)
    s = re.sub(r"<(strong|b)\b[^>]*>([\s\S]*?)</\1>", r"**\2**", s, flags=re.I)
    s = re.sub(r"<(em|i)\b[^>]*>([\s\S]*?)</\1>", r"*\2*", s, flags=re.I)
    s = re.sub(r"<code[^>]*>([\s\S]*?)</code>", r"`\1`", s, flags=re.I)
    s = _strip_tags(s)
    s = re.sub("|".join(map(re.escape, _ENTITIES)), lambda mt: _ENTITIES[mt[0]], s)
    s = re.sub(r"\n{3,}", "\n\n", s)
    return s.strip()


def _request_body(method: str, headers: dict[str, str], body: Any) -> str | None:
    if body is None or method in ("GET", "HEAD"):
        return None
    if type(body) is str:
        return body
    if not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = "application/json"
    return stringify(body)


@builtin("__http_fetch")
def _http_fetch(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    base = _s(arg(args, named, 0, "baseUrl", ""))
    url = request_url(base, _s(arg(args, named, 1, "path", "") or ""))
    raw_headers = arg(args, named, 2, "headers") or {}
    headers = {
        str(k): _s(v) for k, v in (raw_headers.items() if type(raw_headers) is JSObject else [])
    }
    allowed = [_s(d) for d in (arg(args, named, 3, "allowedDomains") or [])]
    method = _s(arg(args, named, 4, "method", "GET") or "GET").upper()
    sent = _request_body(method, headers, arg(args, named, 5, "body"))
    mode = _s(arg(args, named, 6, "mode", "text"))
    if not base:
        raise AgencyRuntimeError("fetch: expected a URL")
    check_domain(url, allowed)
    mocks = m.world.fetch_mocks

    def act() -> Result:
        if mocks is not None:
            resp = mocked(mocks, method, url, sent or "")
        else:
            data = sent.encode("utf-8") if sent is not None else None
            resp = send(method, url, headers, data)
        return answer(resp, url, mode)

    return perform(m, "fetch", {"method": method, "url": url, "mode": mode}, act)


# -- URI encoding (JavaScript's globals) -------------------------------------------------------

_URI_COMPONENT_SAFE = "-_.!~*'()"
_URI_SAFE = _URI_COMPONENT_SAFE + ";,/?:@&=+$#"


def _uri_text(args: list[Any], named: dict[str, Any]) -> str:
    return _s(arg(args, named, 0, "text", ""))


def _decode(text: str, keep: str) -> str:
    try:
        parts = re.split(r"((?:%[0-9A-Fa-f]{2})+)", text)
        out = []
        for i, part in enumerate(parts):
            if i % 2 == 0:
                if "%" in part:
                    raise ValueError(part)
                out.append(part)
                continue
            decoded = bytes.fromhex(part.replace("%", "")).decode("utf-8")
            out.append("".join(ch if ch not in keep else urllib.parse.quote(ch) for ch in decoded))
        return "".join(out)
    except (ValueError, UnicodeDecodeError):
        raise AgencyRuntimeError(f"URI malformed: {text!r}") from None


@builtin("encodeURIComponent")
def _encode_uri_component(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Percent-encode every character except letters, digits and -_.!~*'()."""
    return urllib.parse.quote(_uri_text(args, named), safe=_URI_COMPONENT_SAFE)


@builtin("encodeURI")
def _encode_uri(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Percent-encode a whole URI, keeping its reserved characters (;,/?:@&=+$#)."""
    return urllib.parse.quote(_uri_text(args, named), safe=_URI_SAFE)


@builtin("decodeURIComponent")
def _decode_uri_component(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Undo encodeURIComponent; a malformed escape is an error."""
    return _decode(_uri_text(args, named), "")


@builtin("decodeURI")
def _decode_uri(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Undo encodeURI: escapes of reserved characters stay escaped."""
    return _decode(_uri_text(args, named), ";,/?:@&=+$#")
