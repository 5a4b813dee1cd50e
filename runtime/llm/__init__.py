"""Provides the LLM layer: the `ChatModel` contract and its providers.

`resolve_model(spec)` picks a model (mock, sim, openai, ollama, anthropic); `complete()` answers
one request with a `Completion`; `schema` turns Agency types into JSON schemas and checks
structured replies. The HTTP providers load lazily, so programs that never call a remote model
never import httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.llm.base import (
    MISSING,
    ChatModel,
    Completion,
    LLMError,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
)
from runtime.llm.mock import MockModel, load_mocks
from runtime.llm.prices import cost_of
from runtime.llm.registry import config_of, resolve_model, route_model
from runtime.llm.schema import (
    parse_structured,
    structured_value,
    tool_parameters,
    type_to_schema,
    validate,
    wrap_schema,
)
from runtime.llm.sim import SimModel

if TYPE_CHECKING:
    from runtime.llm.anthropic import AnthropicModel
    from runtime.llm.openai import OpenAIModel

__all__ = [
    "MISSING",
    "AnthropicModel",
    "ChatModel",
    "Completion",
    "LLMError",
    "Message",
    "MockModel",
    "OpenAIModel",
    "SimModel",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "config_of",
    "cost_of",
    "load_mocks",
    "parse_structured",
    "resolve_model",
    "route_model",
    "structured_value",
    "tool_parameters",
    "type_to_schema",
    "validate",
    "wrap_schema",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIModel":
        from runtime.llm.openai import OpenAIModel

        return OpenAIModel
    if name == "AnthropicModel":
        from runtime.llm.anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
