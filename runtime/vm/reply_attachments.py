"""Provides std::thread's attachments: `image()`, `file()` and `audio()` describe one, and
`attachToReply()` lets a tool show one to the model that called it.

A tool's attachment is queued on the request of the innermost `llm()` running a tool (the
request object its prelude frame holds). When that tool's result is written, each queued part
gets an id (`img_1`, `img_2`, … counted per `llm()` call), is checked (the model takes that kind
of input, the file is there, it is not too large, not too many) and the result text gets one
marker line per part. After the whole tool round, one user message carries a label and the part
for each that passed. Everything lives in the request object, which is machine data: an
interrupt in the middle of a round, a snapshot or a rebuild keeps what was queued, and the
message is added exactly once. A file is read when its tool's result is written (observed, so
re-execution from the record is served what was read), so the thread never reads it again.

The marker and label texts are what the model reads; programs match them, so they stay as they
are (with em dashes).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyError, AgencyRuntimeError
from runtime.language.files import read_bytes
from runtime.message_text import readable_content
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.effects import observe
from runtime.vm.values import JSArray, JSObject, stringify, to_plain, to_str, truthy

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

MAX_PER_CALL = 10
MAX_BYTES = 20 * 1024 * 1024
QUEUE, COUNT, HARVESTED = "attach_queue", "attach_count", "attached"

MIME_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
}

# Models known to take text only. Any other model is assumed to take images and PDFs, as the
# provider is the one to say otherwise when the request is sent.
TEXT_ONLY_PREFIXES = (
    "gpt-3.5",
    "gpt-4-0314",
    "gpt-4-0613",
    "gpt-4-32k",
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "text-",
    "davinci",
    "babbage",
    "claude-2",
    "claude-instant",
)


def takes_images(model: str) -> bool:
    """Whether `model` (a name, perhaps `provider/name`) accepts image and PDF input."""
    name = model.rsplit("/", 1)[-1].lower()
    return name != "gpt-4" and not name.startswith(TEXT_ONLY_PREFIXES)


# -- building attachments ------------------------------------------------------------------------


def source_of(text: str, mime: str, raw_base64: bool) -> JSObject:
    """Where an attachment's bytes come from: a data: URI or raw base64, a URL, or a path."""
    if text.startswith("data:"):
        marker = text.find(";base64,")
        if marker < 0:
            raise AgencyRuntimeError(
                "attachment source: a data: URI must be base64 (data:<mime>;base64,<data>)"
            )
        return JSObject(
            {
                "kind": "base64",
                "base64": text[marker + 8 :],
                "mimeType": mime or text[5:marker],
            }
        )
    if raw_base64:
        if not mime:
            raise AgencyRuntimeError("attachment source: base64 data needs an explicit mimeType")
        return JSObject({"kind": "base64", "base64": text, "mimeType": mime})
    src = JSObject(
        {"kind": "url", "url": text}
        if text.startswith(("http://", "https://"))
        else {"kind": "path", "path": text}
    )
    if mime:
        src["mimeType"] = mime
    return src


@builtin("__attachment")
def _attachment(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    """`__attachment(type, source, mimeType, base64, filename)`: an image, file or audio part."""
    kind = to_str(arg(args, named, 0, "type", "image"))
    text = to_str(arg(args, named, 1, "source", ""))
    mime = to_str(arg(args, named, 2, "mimeType", "") or "")
    src = source_of(text, mime, truthy(arg(args, named, 3, "base64", False)))
    part = JSObject({"type": kind, "source": src})
    if kind != "image":
        filename = to_str(arg(args, named, 4, "filename", "") or "")
        if not filename and src["kind"] in ("path", "url"):
            filename = text.split("?")[0].split("#")[0].rsplit("/", 1)[-1]
        if filename:
            part["filename"] = filename
    return part


# -- a tool hands one to the model ---------------------------------------------------------------


def _calling_request(m: Machine) -> JSObject | None:
    """The request of the innermost `llm()` that is running a tool, if any."""
    for f in reversed(m.frames[:-1]):
        if f.code.kind == "prelude" and f.code.name == "llm":
            req = f.locals.get("__req")
            return req if type(req) is JSObject and f.locals.get("__tc") is not None else None
    return None


@builtin("__attach_to_reply")
def _attach_to_reply(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    part = arg(args, named, 0, "attachment")
    if type(part) is not JSObject or part.get("type") not in ("image", "file"):
        raise AgencyRuntimeError("attachToReply: expected an image(…) or file(…) attachment")
    req = _calling_request(m)
    if req is None:  # not inside a tool: there is no reply to attach to
        m.event("attachment", "attachToReply outside a tool call: dropped", {})
        return None
    queue = req.get(QUEUE)
    m.set_key(req, QUEUE, JSArray([*(queue if type(queue) is JSArray else ()), part]))
    return None


def _model_name(m: Machine, req: JSObject) -> str:
    params = req.get("params")
    asked = params.get("model") if type(params) is JSObject else None
    if isinstance(asked, str) and asked.strip():
        return asked.strip()
    return str(getattr(m.model, "model", "") or "")


def _inline(m: Machine, part: JSObject) -> JSObject:
    """`part` with a path source read into base64, or `{"skip": reason}`."""
    src = part["source"]
    if type(src) is not JSObject or src.get("kind") != "path":
        return JSObject({"part": part})
    given = to_str(src.get("path"))
    path = Path(m.world.root) / given

    def act() -> JSObject:
        try:
            size = path.stat().st_size
        except OSError:
            return JSObject({"skip": "file not found"})
        if size > MAX_BYTES:
            return JSObject({"skip": "too large to attach (over 20 MB)"})
        try:
            data = read_bytes(path, "attachToReply", shown=given)
        except (OSError, AgencyError) as exc:
            return JSObject({"skip": f"could not be read: {getattr(exc, 'strerror', None) or exc}"})
        return JSObject({"base64": base64.b64encode(data).decode("ascii")})

    got: JSObject = observe(m, "attachment", {"path": given}, act)
    if "skip" in got:
        return got
    fallback = "image/png" if part.get("type") == "image" else "application/pdf"
    mime = src.get("mimeType") or MIME_TYPES.get(os.path.splitext(given)[1].lower(), fallback)
    inlined = JSObject(part)
    inlined["source"] = JSObject({"kind": "base64", "base64": got["base64"], "mimeType": mime})
    return JSObject({"part": inlined})


def harvest(m: Machine, req: JSObject, tool: str) -> str:
    """Take the parts the tool that just returned queued; the marker text for its result."""
    queue = req.get(QUEUE)
    if type(queue) is not JSArray or not queue:
        return ""
    m.set_key(req, QUEUE, JSArray())
    count = int(req.get(COUNT) or 0)
    kept = req.get(HARVESTED)
    kept = JSArray(kept) if type(kept) is JSArray else JSArray()
    images = takes_images(_model_name(m, req))
    lines = []
    for part in queue:
        count += 1
        ident = f"img_{count}"
        why = None
        if not images:
            why = f"the current model has no {'image' if part['type'] == 'image' else 'PDF'} input"
        elif len(kept) >= MAX_PER_CALL:
            why = f"too many attachments for this llm() call (limit {MAX_PER_CALL})"
        else:
            got = _inline(m, part)
            why = got.get("skip")
        if why is None:
            kept.append(JSObject({"id": ident, "tool": tool, "part": got["part"]}))
            lines.append(
                f"[attached {ident} — delivered in the user message following these tool results]"
            )
        else:
            lines.append(f"[attachment {ident} skipped: {why}]")
    m.set_key(req, COUNT, count)
    m.set_key(req, HARVESTED, kept)
    return "\n\n" + "\n".join(lines)


@builtin("__llm_round_end")
def _round_end(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """After a tool round: the user message showing the model what its tools attached."""
    req = args[0] if args else None
    if type(req) is not JSObject:
        return None
    kept = req.get(HARVESTED)
    if type(kept) is not JSArray or not kept:
        return None
    m.set_key(req, HARVESTED, JSArray())
    parts: list[Any] = []
    for entry in kept:
        part = entry["part"]
        word = "image" if part.get("type") == "image" else "file"
        parts.append(
            {"type": "text", "text": f"[{entry['id']} — {word} output of tool {entry['tool']}]"}
        )
        parts.append(to_plain(part))
    m.append_message(to_str(req["thread"]), {"role": "user", "content": parts})
    return None


def message_content(m: Machine, value: Any, what: str) -> Any:
    """A user message's content from what a program passes `llm()` or `userMessage()`: text,
    or an array mixing text and `image()`/`file()`/`audio()` attachments, which becomes a
    list of parts (`{type: "text", text}` and the attachments, a local file read in)."""
    if type(value) is not JSArray:
        return to_str(value)
    parts: list[Any] = []
    for item in value:
        if type(item) is JSObject and item.get("type") in ("image", "file", "audio"):
            if type(item.get("source")) is not JSObject:
                raise AgencyRuntimeError(f"{what}: an attachment needs a source")
            got = _inline(m, item)
            if "skip" in got:
                shown = to_str(item["source"].get("path"))
                raise AgencyRuntimeError(f"{what}: cannot attach {shown}: {got['skip']}")
            parts.append(to_plain(got["part"]))
        else:
            parts.append({"type": "text", "text": to_str(item)})
    return parts


def content_text(content: Any) -> str:
    """A message's content as a program reads it (attachments as a placeholder)."""
    return readable_content(content, stringify)
