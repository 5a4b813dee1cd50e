"""Thin adapters that make an SDK client checkpoint a recorded agent after every tool
roundtrip: `wrap_openai` (chat completions) and `wrap_anthropic` (messages). Both are duck-typed:
the SDK packages are optional extras (`agency-debugger[openai]`, `[anthropic]`)."""

from __future__ import annotations

from typing import Any


class Answer:
    """A recorded answer given back when the SDK's own types are not installed: attributes
    for keys (`answer.choices[0].message.tool_calls`), `model_dump()` for the data."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return wrap(self._data[name])
        except KeyError:
            return None

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self._data)

    def __repr__(self) -> str:
        return f"Answer({self._data!r})"


def wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Answer(value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def as_dict(message: Any) -> dict[str, Any]:
    """A message as a dict (SDK objects by their `model_dump`)."""
    if isinstance(message, dict):
        return message
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        out = dump(exclude_none=True)
        return out if isinstance(out, dict) else {}
    return {}


def given(kwargs: dict[str, Any]) -> dict[str, Any]:
    """`kwargs` without the SDKs' "not given" placeholders (`omit`, `NOT_GIVEN`), which the
    SDK's helpers pass on for every argument left out."""
    return {k: v for k, v in kwargs.items() if type(v).__name__ not in ("Omit", "NotGiven")}


class Delegate:
    """Everything not overridden is the wrapped object's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
