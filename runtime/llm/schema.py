"""Provides JSON schemas for Agency types, and the checking of structured replies against them.

`type_to_schema` turns a type annotation (`runtime.language.syntax.ast` type nodes) into a JSON schema;
`validate` checks a value against such a schema and says why it does not match;
`parse_structured` reads a model's reply (bare or fenced JSON, wrapped in `{"response": ...}` or
not) and returns the value or raises an `LLMError` that names the expected type and the reply.

Only the part of JSON Schema that `type_to_schema` produces (plus `const`, `oneOf`, `integer`,
`minItems`/`maxItems`) is understood; that is all a provider is ever sent.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from runtime.errors import LLMError
from runtime.language.schemas import (
    Schema,
    json_equal,
    tool_parameters,
    type_to_schema,
    wrap_schema,
)

__all__ = [
    "Schema",
    "describe",
    "json_instruction",
    "parse_structured",
    "structured_value",
    "tool_parameters",
    "type_to_schema",
    "unwrap_schema",
    "validate",
    "wrap_schema",
]


# --------------------------------------------------------------------------------------------
# Validation


def unwrap_schema(schema: Schema) -> Schema | None:
    """The inner schema when `schema` is a `wrap_schema` wrapper, else None."""
    props = schema.get("properties")
    if (
        schema.get("type") == "object"
        and isinstance(props, dict)
        and list(props) == ["response"]
        and list(schema.get("required") or ()) == ["response"]
    ):
        inner = props["response"]
        return inner if isinstance(inner, dict) else None
    return None


def json_instruction(schema: Schema) -> str:
    """What we tell a model that cannot be handed the schema any other way."""
    return (
        "Reply with JSON only, no prose and no code fences. The JSON must match this JSON "
        f"schema:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def validate(value: Any, schema: Schema) -> str | None:
    """None when `value` matches `schema`, else a short human reason."""
    return _check(value, schema, "")


def _check(v: Any, s: Any, path: str) -> str | None:
    if s is True or s == {}:
        return None
    if s is False:
        return f"{_at(path)}no value is allowed here"
    if not isinstance(s, dict):
        return None
    if "const" in s and not json_equal(v, s["const"]):
        return f"{_at(path)}expected {_show(s['const'])}, got {_show(v)}"
    if "enum" in s and not any(json_equal(v, e) for e in s["enum"]):
        return f"{_at(path)}expected {describe(s)}, got {_show(v)}"
    for key in ("anyOf", "oneOf"):
        if key in s:
            reasons = [_check(v, sub, path) for sub in s[key]]
            if all(r is not None for r in reasons):
                # Point into the one branch of the right shape, when only one has it.
                shaped = [r for sub, r in zip(s[key], reasons, strict=True) if _has_type(v, sub)]
                if len(shaped) == 1 and shaped[0] is not None:
                    return shaped[0]
                return f"{_at(path)}expected {describe(s)}, got {_show(v)}"
    if "allOf" in s:
        for sub in s["allOf"]:
            r = _check(v, sub, path)
            if r is not None:
                return r
    t = s.get("type")
    if t is not None:
        kinds = t if isinstance(t, list) else [t]
        if not any(_is_type(v, k) for k in kinds):
            return f"{_at(path)}expected {describe(s)}, got {_show(v)}"
    if isinstance(v, list):
        if "minItems" in s and len(v) < s["minItems"]:
            return f"{_at(path)}expected at least {s['minItems']} item(s), got {len(v)}"
        if "maxItems" in s and len(v) > s["maxItems"]:
            return f"{_at(path)}expected at most {s['maxItems']} item(s), got {len(v)}"
        items = s.get("items")
        if isinstance(items, dict):
            for i, x in enumerate(v):
                r = _check(x, items, f"{path}[{i}]")
                if r is not None:
                    return r
    if isinstance(v, dict):
        props = s.get("properties") or {}
        for k in s.get("required") or ():
            if k not in v:
                return f"{_at(path)}missing field `{k}`"
        for k, x in v.items():
            sub_path = f"{path}.{k}" if path else str(k)
            if k in props:
                r = _check(x, props[k], sub_path)
            elif "additionalProperties" in s:
                extra = s["additionalProperties"]
                if extra is False:
                    return f"{_at(path)}unexpected field `{k}`"
                r = _check(x, extra, sub_path)
            else:
                r = None
            if r is not None:
                return r
    return None


def _is_type(v: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(v, str)
    if kind == "number":
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    if kind == "integer":
        return (
            isinstance(v, int | float)
            and not isinstance(v, bool)
            and math.isfinite(v)
            and float(v).is_integer()
        )
    if kind == "boolean":
        return isinstance(v, bool)
    if kind == "null":
        return v is None
    if kind == "array":
        return isinstance(v, list | tuple)
    if kind == "object":
        return isinstance(v, dict)
    return True


def _has_type(v: Any, s: Any) -> bool:
    if not isinstance(s, dict) or "type" not in s:
        return False
    kinds = s["type"] if isinstance(s["type"], list) else [s["type"]]
    return any(_is_type(v, k) for k in kinds)


def _at(path: str) -> str:
    return f"at {path}: " if path else ""


def _show(v: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------------------------
# Describing schemas as Agency types (for error messages)


def describe(schema: Any, limit: int = 200) -> str:
    """The schema written as an Agency type, e.g. `{mood: "happy" | "sad", score?: number}`."""
    text = _describe(schema)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(s: Any) -> str:
    if s is True or s == {} or not isinstance(s, dict):
        return "any"
    if "const" in s:
        return _show(s["const"])
    if "enum" in s:
        return " | ".join(_show(e) for e in s["enum"])
    for key in ("anyOf", "oneOf"):
        if key in s:
            return " | ".join(_describe(sub) for sub in s[key])
    t = s.get("type")
    if isinstance(t, list):
        return " | ".join(_describe({**s, "type": k}) for k in t)
    if t == "array":
        inner = _describe(s.get("items", {}))
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if t == "object":
        props = s.get("properties")
        if props:
            required = set(s.get("required") or ())
            fields = ", ".join(
                f"{k}{'' if k in required else '?'}: {_describe(v)}" for k, v in props.items()
            )
            return "{" + fields + "}"
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            return f"Record<string, {_describe(extra)}>"
        return "object"
    if t == "integer":
        return "integer"
    if isinstance(t, str):
        return t
    return "any"


# --------------------------------------------------------------------------------------------
# Reading structured replies

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
_NOT_JSON = object()


def parse_structured(text: str, schema: Schema) -> Any:
    """The value in a model's reply `text` for `schema`.

    Accepts bare JSON, ```json fenced JSON, and JSON after a line of prose. For the
    `{"response": T}` wrapper, returns the unwrapped value and also accepts a bare value of
    type T; a reply that is not JSON is accepted as-is when T admits a string. Raises
    `LLMError("expected <type> but the model replied: <reply>")` otherwise.
    """
    inner = unwrap_schema(schema)
    target = inner if inner is not None else schema
    candidates = _json_candidates(text)
    reason: str | None = None
    for value in candidates:
        ok, result, why = _match(value, schema, inner)
        if ok:
            return result
        reason = reason or why
    # Prose (or a bare `5` where a string is wanted) is the answer itself when T admits a string.
    if not any(isinstance(c, dict | list) for c in candidates):
        plain = _plain(text)
        if validate(plain, target) is None:
            return plain
    raise _mismatch(target, text, reason)


def structured_value(value: Any, schema: Schema) -> Any:
    """A ready value (a mock answer, say) checked against `schema` and unwrapped like
    `parse_structured` does; raises the same `LLMError` when it does not match."""
    ok, result, why = _match(value, schema, unwrap_schema(schema))
    if ok:
        return result
    target = unwrap_schema(schema) or schema
    raise _mismatch(target, _show(value, 10_000), why)


def _match(value: Any, schema: Schema, inner: Schema | None) -> tuple[bool, Any, str | None]:
    if inner is None:
        why = validate(value, schema)
        return why is None, value, why
    if isinstance(value, dict) and "response" in value:
        why = validate(value["response"], inner)
        if why is None:
            return True, value["response"], None
        if validate(value, inner) is None:
            return True, value, None
        return False, None, why
    why = validate(value, inner)
    return why is None, value, why


def _mismatch(target: Schema, text: str, reason: str | None) -> LLMError:
    reply = text.strip()
    if len(reply) > 300:
        reply = reply[:299] + "…"
    message = f"expected {describe(target)} but the model replied: {reply or '(nothing)'}"
    # Only add the reason when it says more than the headline does.
    if reason and not reason.startswith("expected "):
        message += f" ({reason})"
    return LLMError(message, detail=reason or "")


def _plain(text: str) -> str:
    """The reply with a surrounding code fence removed and whitespace trimmed."""
    stripped = text.strip()
    m = _FENCE.fullmatch(stripped)
    return m.group(2).strip() if m else stripped


def _json_candidates(text: str) -> list[Any]:
    """Every JSON value the reply plausibly means, most likely first."""
    found: list[Any] = []
    sources = [m.group(2) for m in _FENCE.finditer(text)]
    sources.append(text)
    for src in sources:
        value = _loads(src.strip())
        if value is not _NOT_JSON:
            found.append(value)
    if not found:
        # JSON after some prose ("Here you go: {...}").
        decoder = json.JSONDecoder()
        for m in re.finditer(r"[\[{]", text):
            try:
                value, _ = decoder.raw_decode(text, m.start())
            except ValueError:
                continue
            found.append(value)
            break
    return found


def _loads(src: str) -> Any:
    if not src:
        return _NOT_JSON
    try:
        return json.loads(src)
    except ValueError:
        return _NOT_JSON
