"""Provides the simulated model: the offline default when no real model is configured.

It answers instantly, costs nothing and never calls tools. Answers are deterministic: the same
seed, the same request (messages and schema) and the same call number (`position`, which a
snapshot keeps and a restore does not roll back, like the mock queue's) give the same answer. So
a run is reproducible, and a request asked again after a restore gets a fresh answer, as it would
from a real model (the dice example rolls until it wins). Structured answers are valid for any schema `schema.py`
produces (a member of a literal union, 1–3 array items, every required field); plain-text
answers start with `[sim]` so nobody mistakes them for a real model's.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from runtime.llm.base import Completion, Message, ToolSpec, Usage, content_text, last_user_text
from runtime.llm.schema import unwrap_schema

_MAX_DEPTH = 6


class SimModel:
    """A `ChatModel` that makes up deterministic, schema-valid answers."""

    provider = "sim"

    def __init__(self, seed: int = 0, model: str = "sim") -> None:
        self.seed = seed
        self.model = model
        self.position = 0  # calls answered so far

    def __repr__(self) -> str:
        return f"SimModel(seed={self.seed})"

    @staticmethod
    def announce() -> str:
        """The line the CLI prints to stderr when it falls back to the simulated model."""
        return (
            "agency: using the simulated model (sim); "
            "set AGENCY_MODEL or pass --model to use a real one"
        )

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        response_schema: dict[str, Any] | None,
        params: dict[str, Any],
    ) -> Completion:
        """A made-up answer: schema-valid JSON when a schema is given, else `[sim] …` text."""
        rng = random.Random(self._request_seed(messages, response_schema))
        self.position += 1
        if response_schema is not None:
            answer = generate(response_schema, rng)
            text = json.dumps(answer, ensure_ascii=False)
            value = answer
            if unwrap_schema(response_schema) is not None and isinstance(answer, dict):
                value = answer["response"]
        else:
            prompt = " ".join(last_user_text(messages).split())
            if len(prompt) > 60:
                prompt = prompt[:59] + "…"
            text = f'[sim] simulated answer {rng.randint(1, 100)} to "{prompt}"'
            value = text
        input_chars = sum(len(content_text(m.get("content"))) for m in messages)
        return Completion(
            text=text,
            value=value,
            usage=Usage(input_chars // 4 + 1, len(text) // 4 + 1, 0.0),
            model=self.model,
            provider=self.provider,
            raw={"simulated": True, "seed": self.seed},
        )

    def config(self) -> dict[str, Any]:
        """What identifies this model in a run's stored config."""
        spec = "sim" if self.model == "sim" else f"sim/{self.model}"
        return {
            "provider": "sim",
            "model": self.model,
            "spec": spec,
            "base_url_host": None,
            "seed": self.seed,
        }

    def _request_seed(self, messages: list[Message], schema: dict[str, Any] | None) -> int:
        blob = json.dumps(
            [self.seed, self.position, messages, schema],
            sort_keys=True,
            default=repr,
            ensure_ascii=True,
        )
        return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big")


def generate(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """A value valid for `schema`, chosen with `rng` (small: strings, 1..10, 1–3 items)."""
    if not isinstance(schema, dict) or not schema:
        return f"simulated answer {rng.randint(1, 9)}"
    if "const" in schema:
        return schema["const"]
    if "enum" in schema and schema["enum"]:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = schema[key]
            if depth >= _MAX_DEPTH:
                # Deep down, prefer an option that ends the nesting.
                flat = [o for o in options if _is_leaf(o)]
                options = flat or options
            return generate(rng.choice(options), rng, depth + 1)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for sub in schema["allOf"]:
            if isinstance(sub, dict):
                merged.update(sub)
        return generate(merged, rng, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        kind = rng.choice(kinds)
    if kind == "string":
        return f"simulated answer {rng.randint(1, 9)}"
    if kind == "number" or kind == "integer":
        return rng.randint(1, 10)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "array":
        low = int(schema.get("minItems", 1 if depth < _MAX_DEPTH else 0))
        high = int(schema.get("maxItems", max(low, 3 if depth < _MAX_DEPTH else low)))
        count = rng.randint(low, max(low, high))
        return [generate(schema.get("items", {}), rng, depth + 1) for _ in range(count)]
    if kind == "object" or "properties" in schema:
        out: dict[str, Any] = {}
        required = set(schema.get("required") or ())
        for name, sub in (schema.get("properties") or {}).items():
            if name in required or (depth < _MAX_DEPTH and rng.random() < 0.5):
                out[name] = generate(sub, rng, depth + 1)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and depth < _MAX_DEPTH:
            for i in range(rng.randint(1, 2)):
                out[f"key{i + 1}"] = generate(extra, rng, depth + 1)
        return out
    return f"simulated answer {rng.randint(1, 9)}"


def _is_leaf(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    kind = schema.get("type")
    return kind not in ("array", "object") and "anyOf" not in schema and "oneOf" not in schema
