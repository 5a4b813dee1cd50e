"""Provides `AnthropicModel`: Anthropic's Messages API (`POST /v1/messages`), over plain httpx.

System messages are lifted into the top-level `system` field; tool calls and results travel as
`tool_use` / `tool_result` blocks. Structured output is a forced tool whose input schema is the
response schema when no other tools are on offer, and an instruction in the system prompt
otherwise (or when a compatible server refuses forced tools); either way the reply goes through
`parse_structured`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from runtime.llm.base import (
    MISSING,
    Completion,
    LLMError,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
    content_parts,
    content_text,
)
from runtime.llm.http import JsonEndpoint, RetryPolicy, host_of
from runtime.llm.prices import cost_of
from runtime.llm.schema import json_instruction, parse_structured

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("agency.llm")

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
ENV_KEY = "ANTHROPIC_API_KEY"
ENV_BASE_URL = "ANTHROPIC_BASE_URL"
RESPONSE_TOOL = "agency_response"


class AnthropicModel:
    """A `ChatModel` for Anthropic's Messages API (or a server that speaks it).

    `max_tokens` is the answer budget when `params` has no `maxTokens` (the API requires one).
    `sleep`, `backoff` and `transport` are as for `OpenAIModel`.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        *,
        max_tokens: int = 4096,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        env = os.environ if env is None else env
        self.model = model
        self.max_tokens = max_tokens
        self._env = env
        self.base_url = (base_url or env.get(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
        key = api_key or env.get(ENV_KEY) or None
        if key is None and host_of(self.base_url) == host_of(DEFAULT_BASE_URL):
            raise LLMError(
                f"anthropic: no API key for {host_of(self.base_url)}; set {ENV_KEY} or pass "
                "--base-url for a compatible local server",
                provider="anthropic",
            )
        headers = {"anthropic-version": API_VERSION, "Accept": "application/json"}
        if key:
            headers["x-api-key"] = key
        self._path = "/messages" if self.base_url.endswith("/v1") else "/v1/messages"
        self._endpoint = JsonEndpoint(
            provider="anthropic",
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            retry=RetryPolicy(max_retries=max_retries, base_delay=backoff, sleep=sleep),
            secrets=(key,) if key else (),
            transport=transport,
        )
        # Cleared when a server refuses the forced response tool; we then ask in the prompt.
        self.forced_tool_supported = True

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._endpoint.close()

    def config(self) -> dict[str, Any]:
        """What identifies this model in a run's stored config (no secrets)."""
        return {
            "provider": "anthropic",
            "model": self.model,
            "spec": f"anthropic/{self.model}",
            "base_url_host": host_of(self.base_url),
        }

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        response_schema: dict[str, Any] | None,
        params: dict[str, Any],
    ) -> Completion:
        """One Messages request (retried as needed); see `ChatModel.complete`."""
        model = _model_name(params.get("model"), self.model)
        system, wire = to_anthropic_messages(messages)
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": int(params.get("maxTokens") or self.max_tokens),
            "messages": wire,
        }
        if params.get("temperature") is not None:
            body["temperature"] = params["temperature"]
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        forced = (
            response_schema is not None
            and not tools
            and self.forced_tool_supported
            and response_schema.get("type") == "object"
        )
        if forced:
            assert response_schema is not None
            body["tools"] = [_response_tool(response_schema)]
            body["tool_choice"] = {"type": "tool", "name": RESPONSE_TOOL}
        elif response_schema is not None:
            system = _join(system, json_instruction(response_schema))
        if system:
            body["system"] = system

        start = time.perf_counter()
        try:
            data = self._endpoint.post(self._path, body)
        except LLMError as exc:
            if not (forced and exc.status in (400, 422) and "tool" in exc.detail.lower()):
                raise
            assert response_schema is not None
            log.info("%s: the server refused a forced tool; asking for JSON instead", model)
            self.forced_tool_supported = False
            del body["tools"], body["tool_choice"]
            body["system"] = _join(system, json_instruction(response_schema))
            forced = False
            data = self._endpoint.post(self._path, body)
        latency = (time.perf_counter() - start) * 1000
        return self._completion(data, model, response_schema, forced, latency)

    def _completion(
        self,
        data: dict[str, Any],
        model: str,
        response_schema: dict[str, Any] | None,
        forced: bool,
        latency: float,
    ) -> Completion:
        if data.get("type") == "error":
            err = data.get("error") if isinstance(data.get("error"), dict) else {}
            assert isinstance(err, dict)
            raise LLMError(
                f"anthropic: {self._endpoint.host} answered with an error: "
                f"{err.get('type', 'error')}: {err.get('message', '')}",
                provider="anthropic",
                detail=str(err.get("message", "")),
            )
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise LLMError(
                f"anthropic: the answer from {self._endpoint.host} has no content: "
                f"{json.dumps(data)[:200]}; is the base URL a Messages API endpoint?",
                provider="anthropic",
            )
        texts: list[str] = []
        calls: list[ToolCall] = []
        answer: Any = MISSING
        for i, block in enumerate(blocks):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                args = block.get("input")
                if forced and block.get("name") == RESPONSE_TOOL:
                    answer = args
                    continue
                if not isinstance(args, dict):
                    raise LLMError(
                        f"anthropic: the model called `{block.get('name')}` with input that is "
                        f"not an object: {json.dumps(args)[:200]}",
                        provider="anthropic",
                    )
                calls.append(
                    ToolCall(
                        id=str(block.get("id") or f"toolu_{i}"),
                        name=str(block.get("name", "")),
                        args=args,
                    )
                )
        text = "".join(texts)
        if answer is not MISSING:
            # The forced tool's input is the answer; it is also the message text to keep.
            text = json.dumps(answer, ensure_ascii=False)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        tokens_in = int(usage.get("input_tokens") or 0)
        tokens_out = int(usage.get("output_tokens") or 0)
        answered_by = str(data.get("model") or model)
        value: Any = MISSING
        if response_schema is not None and not calls:
            try:
                value = parse_structured(text, response_schema)
            except LLMError:
                value = MISSING  # the interpreter's own parse names the reply
        return Completion(
            text=text,
            tool_calls=tuple(calls),
            value=value,
            usage=Usage(
                tokens_in,
                tokens_out,
                cost_of("anthropic", answered_by, tokens_in, tokens_out, env=self._env),
            ),
            model=answered_by,
            provider=self.provider,
            latency_ms=latency,
            raw=data,
        )


def to_anthropic_messages(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Our message dicts as (system prompt, Messages API turns).

    System messages are joined into the system prompt; tool results become `tool_result`
    blocks in a user turn; consecutive turns of one role are merged, as the API requires
    all results of one tool round in the single user turn that follows it.
    """
    system = ""
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        role = m.get("role")
        content = content_text(m.get("content"))
        if role == "system":
            system = _join(system, content)
        elif role == "user" and (parts := content_parts(m.get("content"))) is not None:
            push("user", [_anthropic_part(p) for p in parts])
        elif role == "user":
            push("user", [{"type": "text", "text": content or "(empty)"}])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if content:
                blocks.append({"type": "text", "text": content})
            for c in m.get("tool_calls") or ():
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": str(c["id"]),
                        "name": c["name"],
                        "input": c.get("args") or {},
                    }
                )
            push("assistant", blocks or [{"type": "text", "text": "(empty)"}])
        elif role == "tool":
            push(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": str(m.get("tool_call_id", "")),
                        "content": content,
                    }
                ],
            )
        else:
            raise LLMError(
                f"anthropic: cannot send a message with role {role!r}", provider="anthropic"
            )
    return system, out


def _anthropic_part(part: dict[str, Any]) -> dict[str, Any]:
    """One part of a multimodal user message as a Messages API block (a file is a document)."""
    kind, source = part.get("type"), part.get("source")
    if kind in ("image", "file") and isinstance(source, dict):
        block = "image" if kind == "image" else "document"
        if source.get("kind") == "url":
            return {"type": block, "source": {"type": "url", "url": source.get("url", "")}}
        media = source.get("mimeType") or ("image/png" if kind == "image" else "application/pdf")
        data = {"type": "base64", "media_type": media, "data": source.get("base64", "")}
        return {"type": block, "source": data}
    return {"type": "text", "text": content_text(part.get("text", part)) or "(empty)"}


def _response_tool(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": RESPONSE_TOOL,
        "description": "Give your final answer by calling this tool; its input is the answer.",
        "input_schema": schema,
    }


def _join(first: str, second: str) -> str:
    return f"{first}\n\n{second}" if first and second else first or second


def _model_name(requested: Any, default: str) -> str:
    if not isinstance(requested, str) or not requested.strip():
        return default
    return requested.strip().removeprefix("anthropic/")
