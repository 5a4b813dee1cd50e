"""Provides `OpenAIModel`: any OpenAI-compatible Chat Completions endpoint, over plain httpx.

OpenAI itself, Ollama (`ollama/NAME`), vLLM, LM Studio, llama.cpp's server: anything that
speaks `POST {base_url}/chat/completions`. Tools are sent as functions; structured output as
`response_format: json_schema` (strict when the schema allows it), falling back to asking for
JSON in the system prompt when a server refuses `response_format`.
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
    data_uri,
)
from runtime.llm.http import JsonEndpoint, RetryPolicy, host_of
from runtime.llm.prices import cost_of
from runtime.llm.schema import json_instruction, parse_structured

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("agency.llm")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
ENV_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"


class OpenAIModel:
    """A `ChatModel` for an OpenAI-compatible Chat Completions endpoint.

    `label` is "openai", or "ollama" for the local shortcut (no key, free, its own messages).
    `sleep` and `backoff` shape the retries (tests pass a sleep that does not wait);
    `transport` is an httpx transport, for tests.
    """

    provider = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        *,
        label: str = "openai",
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        env = os.environ if env is None else env
        self.model = model
        self.label = label
        self._env = env
        if label == "ollama":
            host = env.get("OLLAMA_HOST", "").strip()
            default = f"http://{host.removeprefix('http://')}/v1" if host else OLLAMA_BASE_URL
            self.base_url = (base_url or default).rstrip("/")
            key = api_key  # a local server needs no key; never send it an OpenAI one
        else:
            self.base_url = (base_url or env.get(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
            key = api_key or env.get(ENV_KEY) or None
            if key is None and host_of(self.base_url) == host_of(DEFAULT_BASE_URL):
                raise LLMError(
                    f"openai: no API key for {host_of(self.base_url)}; set {ENV_KEY} or pass "
                    "--base-url for a local server",
                    provider="openai",
                )
        headers = {"Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._endpoint = JsonEndpoint(
            provider=label,
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            retry=RetryPolicy(max_retries=max_retries, base_delay=backoff, sleep=sleep),
            secrets=(key,) if key else (),
            transport=transport,
        )
        # Cleared the first time the server refuses `response_format`; we then ask for JSON
        # in the prompt for the rest of the run instead of being refused on every request.
        self.json_schema_supported = True

    def __repr__(self) -> str:
        return f"OpenAIModel(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._endpoint.close()

    def config(self) -> dict[str, Any]:
        """What identifies this model in a run's stored config (no secrets)."""
        return {
            "provider": self.label,
            "model": self.model,
            "spec": f"{self.label}/{self.model}",
            "base_url_host": host_of(self.base_url),
        }

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        response_schema: dict[str, Any] | None,
        params: dict[str, Any],
    ) -> Completion:
        """One Chat Completions request (retried as needed); see `ChatModel.complete`."""
        model = _model_name(params.get("model"), self.model, self.label)
        wire = to_openai_messages(messages)
        body: dict[str, Any] = {"model": model, "messages": wire}
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
        if params.get("temperature") is not None:
            body["temperature"] = params["temperature"]
        if params.get("maxTokens") is not None:
            # api.openai.com wants the newer name; other servers know only the older one.
            on_openai = host_of(self.base_url) == host_of(DEFAULT_BASE_URL)
            body["max_completion_tokens" if on_openai else "max_tokens"] = int(params["maxTokens"])
        use_format = (
            response_schema is not None
            and self.json_schema_supported
            and response_schema.get("type") == "object"
        )
        if use_format:
            assert response_schema is not None
            body["response_format"] = response_format(response_schema)
        elif response_schema is not None:
            body["messages"] = with_json_instruction(wire, response_schema)

        start = time.perf_counter()
        try:
            data = self._endpoint.post("/chat/completions", body)
        except LLMError as exc:
            if not (use_format and _refuses_format(exc)):
                raise
            assert response_schema is not None
            log.info("%s: the server refused response_format; asking for JSON instead", model)
            self.json_schema_supported = False
            del body["response_format"]
            body["messages"] = with_json_instruction(wire, response_schema)
            data = self._endpoint.post("/chat/completions", body)
        latency = (time.perf_counter() - start) * 1000
        return self._completion(data, model, response_schema, latency)

    def _completion(
        self,
        data: dict[str, Any],
        model: str,
        response_schema: dict[str, Any] | None,
        latency: float,
    ) -> Completion:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMError(
                f"{self.label}: the answer from {self._endpoint.host} has no choices: "
                f"{json.dumps(data)[:200]}; is the base URL an OpenAI-compatible endpoint?",
                provider=self.label,
            )
        message = choices[0].get("message") or {}
        text = _text_of(message.get("content"))
        if not text and isinstance(message.get("refusal"), str):
            text = message["refusal"]
        calls = tuple(self._tool_call(c, i) for i, c in enumerate(message.get("tool_calls") or ()))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        tokens_in = int(usage.get("prompt_tokens") or 0)
        tokens_out = int(usage.get("completion_tokens") or 0)
        answered_by = str(data.get("model") or model)
        value: Any = MISSING
        if response_schema is not None and not calls:
            try:
                value = parse_structured(text, response_schema)
            except LLMError:
                value = MISSING  # the interpreter's own parse names the reply
        return Completion(
            text=text,
            tool_calls=calls,
            value=value,
            usage=Usage(
                tokens_in,
                tokens_out,
                cost_of(self.label, answered_by, tokens_in, tokens_out, env=self._env),
            ),
            model=answered_by,
            provider=self.provider,
            latency_ms=latency,
            raw=data,
        )

    def _tool_call(self, call: Any, index: int) -> ToolCall:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise LLMError(
                f"{self.label}: the model sent a malformed tool call: {json.dumps(call)[:200]}",
                provider=self.label,
            )
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise LLMError(
                    f"{self.label}: the model called `{fn['name']}` with arguments that are not "
                    f"JSON: {args[:200]}",
                    provider=self.label,
                ) from None
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise LLMError(
                f"{self.label}: the model called `{fn['name']}` with arguments that are not an "
                f"object: {json.dumps(args)[:200]}",
                provider=self.label,
            )
        return ToolCall(id=str(call.get("id") or f"call_{index}"), name=fn["name"], args=args)


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Our message dicts in the Chat Completions wire format."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        content = content_text(m.get("content"))
        if role == "assistant" and m.get("tool_calls"):
            out.append(
                {
                    "role": "assistant",
                    "content": content or None,
                    "tool_calls": [
                        {
                            "id": str(c["id"]),
                            "type": "function",
                            "function": {
                                "name": c["name"],
                                "arguments": json.dumps(c.get("args") or {}, ensure_ascii=False),
                            },
                        }
                        for c in m["tool_calls"]
                    ],
                }
            )
        elif role == "tool":
            out.append(
                {"role": "tool", "tool_call_id": str(m.get("tool_call_id", "")), "content": content}
            )
        elif role == "user" and (parts := content_parts(m.get("content"))) is not None:
            out.append({"role": "user", "content": [_openai_part(p) for p in parts]})
        elif role in ("system", "user", "assistant"):
            out.append({"role": role, "content": content})
        else:
            raise LLMError(f"openai: cannot send a message with role {role!r}", provider="openai")
    return out


def _openai_part(part: dict[str, Any]) -> dict[str, Any]:
    """One part of a multimodal user message in the Chat Completions format."""
    kind, source = part.get("type"), part.get("source")
    if kind == "image" and isinstance(source, dict):
        return {"type": "image_url", "image_url": {"url": data_uri(source)}}
    if kind == "file" and isinstance(source, dict):
        return {
            "type": "file",
            "file": {"filename": part.get("filename") or "file", "file_data": data_uri(source)},
        }
    return {"type": "text", "text": content_text(part.get("text", part))}


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The `response_format` for `schema`: strict when every field is required and typed."""
    strict = strict_schema(schema)
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "response",
            "schema": strict if strict is not None else schema,
            "strict": strict is not None,
        },
    }


def strict_schema(s: Any) -> dict[str, Any] | None:
    """`s` in the form OpenAI's strict mode accepts, or None when it cannot be.

    Strict mode needs every object closed (`additionalProperties: false`) with every property
    required, and no untyped (`any`) parts; optional fields and `any` fall back to non-strict.
    """
    if not isinstance(s, dict) or not s:
        return None
    if "anyOf" in s:
        subs = [strict_schema(x) for x in s["anyOf"]]
        if any(x is None for x in subs):
            return None
        return {**s, "anyOf": subs}
    kind = s.get("type")
    if kind == "object":
        props = s.get("properties")
        if not isinstance(props, dict) or not props:
            return None
        if s.get("additionalProperties", False) is not False:
            return None
        if set(s.get("required") or ()) != set(props):
            return None
        closed: dict[str, Any] = {}
        for name, sub in props.items():
            strict_sub = strict_schema(sub)
            if strict_sub is None:
                return None
            closed[name] = strict_sub
        return {**s, "properties": closed, "additionalProperties": False}
    if kind == "array":
        items = strict_schema(s.get("items"))
        return None if items is None else {**s, "items": items}
    if isinstance(kind, list) and ("object" in kind or "array" in kind):
        return None
    if kind is None and "enum" not in s and "const" not in s:
        return None
    return s


def with_json_instruction(
    wire: list[dict[str, Any]], schema: dict[str, Any]
) -> list[dict[str, Any]]:
    """`wire` with the JSON instruction appended to its system message (added if missing)."""
    note = json_instruction(schema)
    out = [dict(m) for m in wire]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{note}".lstrip()
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


def _refuses_format(exc: LLMError) -> bool:
    detail = exc.detail.lower()
    return exc.status in (400, 422) and any(
        word in detail for word in ("response_format", "json_schema", "response format")
    )


def _model_name(requested: Any, default: str, label: str) -> str:
    """The wire model name: `params["model"]` without our own provider prefix, else ours."""
    if not isinstance(requested, str) or not requested.strip():
        return default
    name = requested.strip()
    for prefix in (f"{label}/", "openai/"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _text_of(content: Any) -> str:
    """Message content as text; some servers send a list of `{"type": "text"}` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return str(content)
