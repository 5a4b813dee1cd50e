"""Provides how the debugger writes values: `json_type` (the Agency name of a value's type) and
`describe_value` (a one-line, Agency-looking rendering cut to a width).

Values are the plain JSON-like data of `runtime.record.views`. No `textual` or `rich` here: the
session and every widget share these.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["describe_value", "json_type"]


def json_type(value: Any) -> str:
    """The Agency name of a value's type: number, string, boolean, null, array, object, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        if "$result" in value:
            return "result"
        if "$function" in value:
            return "function"
        return "object"
    return type(value).__name__


def _number_text(v: float) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == int(v) and abs(v) < 1e21:
        return str(int(v))
    return repr(v)


def describe_value(value: Any, limit: int = 80) -> str:
    """A one-line, Agency-looking rendering of a view value, cut to about `limit` characters."""
    out: list[str] = []
    budget = [limit]

    def put(text: str) -> bool:
        out.append(text)
        budget[0] -= len(text)
        return budget[0] >= 0

    def walk(v: Any) -> bool:
        if v is None:
            return put("null")
        if isinstance(v, bool):
            return put("true" if v else "false")
        if isinstance(v, int | float):
            return put(_number_text(v))
        if isinstance(v, str):
            return put(json.dumps(v, ensure_ascii=False))
        if isinstance(v, list | tuple):
            if not put("["):
                return False
            for i, item in enumerate(v):
                if i and not put(", "):
                    return False
                if not walk(item):
                    return False
            return put("]")
        if isinstance(v, dict):
            if v.get("$result") in ("success", "failure") and len(v) == 2:
                kind = v["$result"]
                if not put(f"{kind}("):
                    return False
                if not walk(v.get("value" if kind == "success" else "error")):
                    return False
                return put(")")
            if "$function" in v and len(v) == 1:
                return put(f"<def {v['$function']}>")
            if not put("{"):
                return False
            for i, (k, item) in enumerate(v.items()):
                if i and not put(", "):
                    return False
                key = k if re.fullmatch(r"[A-Za-z_]\w*", str(k)) else json.dumps(str(k))
                if not put(f"{key}: "):
                    return False
                if not walk(item):
                    return False
            return put("}")
        return put(str(v))

    complete = walk(value)
    text = "".join(out)
    if not complete or len(text) > limit:
        text = text[: max(limit - 1, 1)] + "…"
    return text
