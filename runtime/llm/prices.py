"""Provides what a request cost: USD per million input and output tokens for known models.

The table covers well-known OpenAI and Anthropic models (list prices, standard tier, no caching
discounts). A dated snapshot (`gpt-4o-mini-2024-07-18`, `claude-sonnet-4-20250514`) is priced
as its family. `AGENCY_PRICES` names a JSON file `{"model": [input, output], ...}` whose entries
override or extend the table (keys may also be `provider/model`). Unknown models cost `None`,
never a guess; local and simulated models cost nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from runtime.llm.base import LLMError

ENV_PRICES = "AGENCY_PRICES"

# model: (USD per 1M input tokens, USD per 1M output tokens)
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4-5": (5.00, 25.00),
}

# Providers whose requests cost nothing (local servers, simulations).
FREE_PROVIDERS = frozenset({"mock", "sim", "ollama", "replay"})

_cache: dict[tuple[str, float], dict[str, tuple[float, float]]] = {}


def cost_of(
    provider: str,
    model: str,
    usage_in: int,
    usage_out: int,
    *,
    env: Mapping[str, str] | None = None,
) -> float | None:
    """The USD cost of one request, or None when the model's price is unknown."""
    if provider in FREE_PROVIDERS:
        return 0.0
    price = price_of(provider, model, env=env)
    if price is None:
        return None
    per_in, per_out = price
    return (usage_in * per_in + usage_out * per_out) / 1_000_000


def price_of(
    provider: str, model: str, *, env: Mapping[str, str] | None = None
) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens for `model`, or None when unknown."""
    overrides = load_overrides(env)
    for table in (overrides, PRICES):
        for key in (f"{provider}/{model}", model):
            if key in table:
                return table[key]
        family = _family(model, table)
        if family is not None:
            return table[family]
    return None


def load_overrides(env: Mapping[str, str] | None = None) -> dict[str, tuple[float, float]]:
    """The prices in the `AGENCY_PRICES` file ({} when unset); raises `LLMError` when bad."""
    path_text = (os.environ if env is None else env).get(ENV_PRICES, "").strip()
    if not path_text:
        return {}
    path = Path(path_text)
    try:
        mtime = path.stat().st_mtime
    except OSError as exc:
        raise LLMError(
            f"{ENV_PRICES}: cannot read {path}: {exc.strerror or exc}; point it at a JSON file "
            'like {"my-model": [0.5, 1.5]} or unset it'
        ) from None
    cached = _cache.get((str(path), mtime))
    if cached is not None:
        return cached
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LLMError(f"{ENV_PRICES}: {path} is not valid JSON ({exc})") from None
    table: dict[str, tuple[float, float]] = {}
    if not isinstance(data, dict):
        raise LLMError(
            f'{ENV_PRICES}: {path} must hold an object like {{"my-model": [0.5, 1.5]}} '
            "(USD per million input and output tokens)"
        )
    for name, pair in data.items():
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(p, int | float) and not isinstance(p, bool) for p in pair)
        ):
            raise LLMError(
                f"{ENV_PRICES}: the price of `{name}` in {path} must be [input, output] in "
                f"USD per million tokens, got {json.dumps(pair)}"
            )
        table[str(name)] = (float(pair[0]), float(pair[1]))
    _cache[(str(path), mtime)] = table
    return table


def _family(model: str, table: Mapping[str, tuple[float, float]]) -> str | None:
    """The longest table key that `model` is a dated or tagged variant of."""
    best: str | None = None
    for key in table:
        if "/" in key:
            continue
        if model.startswith((key + "-", key + ":", key + "@")) and (
            best is None or len(key) > len(best)
        ):
            best = key
    return best
