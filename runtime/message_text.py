"""Provides `readable_content`: a message's content as a person or a program reads it, the same
in the running machine (`getThread`) and in a recorded run's views (the debugger's messages)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def readable_content(content: Any, show: Callable[[Any], str]) -> str:
    """A message's content as a person or a program reads it: text parts as they are,
    attachments as a placeholder (never their bytes), anything else as `show` writes it."""
    if type(content) is str:
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        shown = []
        for part in content:
            kind = part.get("type") if hasattr(part, "get") else None
            if kind == "text":
                text = part.get("text") or ""
                shown.append(text if type(text) is str else show(text))
            elif kind == "file" and part.get("filename"):
                shown.append(f"[file attachment: {part['filename']}]")
            elif kind is not None and "source" in part:
                shown.append(f"[{kind} attachment]")
            else:
                shown.append(show(part))
        return " ".join(shown)
    return show(content)
