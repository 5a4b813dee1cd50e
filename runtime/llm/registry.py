"""Provides `resolve_model`: from `--model provider/name` (or the environment) to a `ChatModel`.

Choice, first match wins:

1. an explicit spec: `openai/gpt-4o-mini`, `anthropic/claude-sonnet-4-5`, `ollama/llama3`,
   `sim` or `sim/NAME`, `mock` (a bare `gpt-…`/`o3…` or `claude-…` name implies its provider);
2. scripted answers: `mocks`, or the JSON text in `AGENCY_LLM_MOCKS`;
3. `AGENCY_MODEL`;
4. the simulated model (the CLI then prints `SimModel.announce()` to stderr).

Scripted answers come before `AGENCY_MODEL` so that a test suite's mocks are never sent to a
real model just because the shell has one configured.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from runtime.llm.base import ChatModel, LLMError
from runtime.llm.mock import ENV_MOCKS, MockModel, load_mocks
from runtime.llm.prices import load_overrides
from runtime.llm.sim import SimModel

ENV_MODEL = "AGENCY_MODEL"
ENV_TIMEOUT = "AGENCY_LLM_TIMEOUT"  # seconds per request to a remote model (default 60)
MAX_TIMEOUT = 365 * 86_400.0  # seconds; 1e300 (or inf) overflowed the request deadline
ENV_RETRIES = "AGENCY_LLM_RETRIES"  # retries after a 429/5xx/timeout (default 3)

KNOWN_PROVIDERS = ("openai", "anthropic", "ollama", "sim", "mock")
_EXAMPLES = "e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, ollama/llama3, sim"


def resolve_model(
    spec: str | None = None,
    *,
    seed: int = 0,
    mocks: list[Any] | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] = os.environ,
) -> ChatModel:
    """The model for `spec` (see the module docstring for the order of the fallbacks).

    `seed` seeds the simulated model; `base_url` (`--base-url`) points a remote provider at
    another server. Raises `LLMError` for an unknown provider, a missing API key or a bad
    setting, naming the fix.
    """
    if spec is None or not spec.strip():
        if mocks is None and env.get(ENV_MOCKS, "").strip():
            mocks = load_mocks(env[ENV_MOCKS])
        if mocks is not None:
            return MockModel(mocks)
        spec = env.get(ENV_MODEL, "").strip() or None
        if spec is None:
            return SimModel(seed)
    provider, name = split_spec(spec)
    if provider == "sim":
        return SimModel(seed, model=name)
    if provider == "mock":
        if mocks is None and env.get(ENV_MOCKS, "").strip():
            mocks = load_mocks(env[ENV_MOCKS])
        return MockModel(mocks or [])
    timeout = _number(env, ENV_TIMEOUT, 60.0)
    retries = int(_number(env, ENV_RETRIES, 3, integer=True))
    load_overrides(env)  # a bad AGENCY_PRICES file is reported now, not after a paid request
    if provider == "anthropic":
        from runtime.llm.anthropic import AnthropicModel  # lazy: httpx only when asked for

        return AnthropicModel(name, base_url, timeout=timeout, max_retries=retries, env=env)
    from runtime.llm.openai import OpenAIModel  # lazy: httpx only when asked for

    return OpenAIModel(
        name, base_url, timeout=timeout, max_retries=retries, label=provider, env=env
    )


def route_model(
    current: ChatModel,
    requested: str | None,
    cache: dict[str, ChatModel] | None = None,
    *,
    env: Mapping[str, str] = os.environ,
) -> ChatModel:
    """The model that should answer an `llm()` call whose options name `requested`.

    Scripted, simulated and replayed runs ignore the option (a test must not reach a real model
    because a program names one). A name for the current provider (`gpt-4o`, `openai/gpt-4o`,
    or a name that implies no provider) stays with `current`, which reads `params["model"]`;
    another provider's model is resolved once and kept in `cache`.
    """
    if not requested or current.provider in ("mock", "sim", "replay"):
        return current
    try:
        provider, _ = split_spec(requested)
    except LLMError:
        if "/" in requested:
            raise
        return current  # a bare name we cannot place: the current provider's to judge
    own = config_of(current).get("provider", current.provider)
    if provider == own:
        return current
    if cache is not None and requested in cache:
        return cache[requested]
    model = resolve_model(requested, env=env)
    if cache is not None:
        cache[requested] = model
    return model


def split_spec(spec: str) -> tuple[str, str]:
    """`"openai/gpt-4o-mini"` → `("openai", "gpt-4o-mini")`; raises `LLMError` when unknown."""
    text = spec.strip()
    if text in ("sim", "mock"):
        return text, text
    if "/" in text:
        provider, name = text.split("/", 1)
        provider = provider.strip().lower()
        if provider not in KNOWN_PROVIDERS:
            raise LLMError(
                f"unknown model provider `{provider}` in `{text}`; known providers: "
                f"{', '.join(KNOWN_PROVIDERS)} ({_EXAMPLES}); for another OpenAI-compatible "
                "server use openai/NAME with --base-url"
            )
        if not name.strip():
            raise LLMError(f"`{text}` names no model; write {provider}/NAME ({_EXAMPLES})")
        return provider, name.strip()
    lowered = text.lower()
    if lowered.startswith(("gpt-", "chatgpt-", "o1", "o3", "o4")):
        return "openai", text
    if lowered.startswith("claude-"):
        return "anthropic", text
    raise LLMError(
        f"unknown model `{text}`; write provider/name with a provider among "
        f"{', '.join(KNOWN_PROVIDERS)} ({_EXAMPLES})"
    )


def config_of(model: ChatModel) -> dict[str, Any]:
    """What identifies `model` in a run's stored config: provider, model, spec, base URL host
    (and the seed of a simulated model). Never a secret."""
    config = getattr(model, "config", None)
    if callable(config):
        data = config()
        if isinstance(data, dict):
            return dict(data)
    return {
        "provider": model.provider,
        "model": model.model,
        "spec": f"{model.provider}/{model.model}",
        "base_url_host": None,
    }


def _number(env: Mapping[str, str], key: str, default: float, integer: bool = False) -> float:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = -1
    # `not value >= 0` catches nan; a timeout of inf or 1e300 seconds failed only at the first
    # request ("__llm_call(): a number is too large").
    if not value >= 0 or (not integer and not 0 < value <= MAX_TIMEOUT):
        kind = (
            "a whole number, 0 or more"
            if integer
            else "a number of seconds above 0, at most a year"
        )
        raise LLMError(f"{key} must be {kind}, got {raw!r}")
    return value
