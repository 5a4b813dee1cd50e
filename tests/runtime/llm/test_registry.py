"""Tests of resolve_model, config_of and prices."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.llm import (
    AnthropicModel,
    ChatModel,
    MockModel,
    OpenAIModel,
    SimModel,
    config_of,
    resolve_model,
    route_model,
)
from runtime.llm.base import LLMError
from runtime.llm.prices import cost_of, price_of
from runtime.llm.registry import split_spec

KEYS = {"OPENAI_API_KEY": "sk-x-123456", "ANTHROPIC_API_KEY": "sk-ant-x-123456"}


def test_default_is_sim_then_env_then_mocks() -> None:
    assert isinstance(resolve_model(None, env={}), SimModel)
    assert resolve_model(None, seed=7, env={}).seed == 7  # type: ignore[attr-defined]
    m = resolve_model(None, env={"AGENCY_MODEL": "openai/gpt-4o", **KEYS})
    assert isinstance(m, OpenAIModel) and m.model == "gpt-4o"
    # Scripted answers win over an ambient AGENCY_MODEL: a test must never reach a real model.
    mocked = resolve_model(
        None, mocks=[{"return": 1}], env={"AGENCY_MODEL": "openai/gpt-4o", **KEYS}
    )
    assert isinstance(mocked, MockModel)
    from_env = resolve_model(None, env={"AGENCY_LLM_MOCKS": '[{"return": 2}]'})
    assert isinstance(from_env, MockModel) and from_env.entries == [{"return": 2}]


def test_explicit_specs() -> None:
    assert isinstance(resolve_model("sim", env={}), SimModel)
    sim = resolve_model("sim/dice", seed=3, env={})
    assert config_of(sim) == {
        "provider": "sim",
        "model": "dice",
        "spec": "sim/dice",
        "base_url_host": None,
        "seed": 3,
    }
    mock = resolve_model("mock", mocks=[{"return": 1}], env={})
    assert isinstance(mock, MockModel) and len(mock.entries) == 1
    a = resolve_model("anthropic/claude-sonnet-4-5", env=KEYS)
    assert isinstance(a, AnthropicModel) and a.model == "claude-sonnet-4-5"
    o = resolve_model("ollama/llama3:8b", env={})
    assert (
        isinstance(o, OpenAIModel)
        and o.label == "ollama"
        and o.base_url == "http://localhost:11434/v1"
    )
    v = resolve_model("openai/meta-llama/Llama-3-8B", base_url="http://gpu:8000/v1", env={})
    assert isinstance(v, OpenAIModel) and v.model == "meta-llama/Llama-3-8B"
    assert config_of(v) == {
        "provider": "openai",
        "model": "meta-llama/Llama-3-8B",
        "spec": "openai/meta-llama/Llama-3-8B",
        "base_url_host": "gpu:8000",
    }


def test_bare_names_imply_the_provider() -> None:
    assert split_spec("gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert split_spec("claude-haiku-4-5") == ("anthropic", "claude-haiku-4-5")
    assert split_spec("o3-mini") == ("openai", "o3-mini")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "gemini/flash",
            "unknown model provider `gemini`.*known providers: openai, anthropic, ollama, sim, mock",
        ),
        ("llama3", "unknown model `llama3`"),
        ("openai/", "names no model"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(LLMError, match=message):
        resolve_model(spec, env=KEYS)


def test_settings_from_env() -> None:
    m = resolve_model(
        "openai/gpt-4o", env={**KEYS, "AGENCY_LLM_TIMEOUT": "5", "AGENCY_LLM_RETRIES": "0"}
    )
    assert m._endpoint.timeout == 5.0 and m._endpoint.retry.max_retries == 0  # type: ignore[attr-defined]
    with pytest.raises(LLMError, match="AGENCY_LLM_TIMEOUT must be a number of seconds above 0"):
        resolve_model("openai/gpt-4o", env={**KEYS, "AGENCY_LLM_TIMEOUT": "soon"})
    with pytest.raises(LLMError, match="AGENCY_LLM_RETRIES must be a whole number"):
        resolve_model("openai/gpt-4o", env={**KEYS, "AGENCY_LLM_RETRIES": "-1"})


def test_missing_key_is_reported_when_resolving() -> None:
    with pytest.raises(LLMError, match="set OPENAI_API_KEY"):
        resolve_model("openai/gpt-4o-mini", env={})


def test_config_of_a_foreign_model() -> None:
    class Replay:
        provider = "replay"
        model = "gpt-4o"

    assert config_of(Replay()) == {  # type: ignore[arg-type]
        "provider": "replay",
        "model": "gpt-4o",
        "spec": "replay/gpt-4o",
        "base_url_host": None,
    }


# -- prices -------------------------------------------------------------------------------


def test_prices_known_dated_unknown_and_free() -> None:
    assert cost_of("openai", "gpt-4o", 1_000_000, 1_000_000, env={}) == pytest.approx(12.5)
    assert price_of("openai", "gpt-4o-mini-2024-07-18", env={}) == (0.15, 0.60)
    assert price_of("anthropic", "claude-opus-4-5-20251101", env={}) == (5.0, 25.0)
    assert price_of("anthropic", "claude-opus-4-20250514", env={}) == (15.0, 75.0)
    assert cost_of("openai", "my-model", 10, 10, env={}) is None
    assert cost_of("ollama", "llama3", 10, 10, env={}) == 0.0
    assert cost_of("sim", "sim", 10, 10, env={}) == 0.0


def test_price_overrides(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"my-model": [1, 2], "openai/gpt-4o": [0, 0]}))
    env = {"AGENCY_PRICES": str(path)}
    assert cost_of("openai", "my-model", 1_000_000, 500_000, env=env) == pytest.approx(2.0)
    assert cost_of("openai", "gpt-4o", 1000, 1000, env=env) == 0.0
    path.write_text('{"bad": [1]}')
    import os

    os.utime(path, (1, 1))  # a new mtime, so the cache reloads
    with pytest.raises(LLMError, match=r"the price of `bad` .* must be \[input, output\]"):
        cost_of("openai", "x", 1, 1, env=env)
    with pytest.raises(LLMError, match="AGENCY_PRICES: cannot read"):
        resolve_model("openai/gpt-4o", env={**KEYS, "AGENCY_PRICES": str(tmp_path / "none.json")})


def test_route_model_for_a_call_that_names_a_model() -> None:
    mock = MockModel([])
    assert route_model(mock, "anthropic/claude-sonnet-4-5", env=KEYS) is mock
    sim = SimModel()
    assert route_model(sim, "gpt-4o", env=KEYS) is sim
    openai = resolve_model("openai/gpt-4o-mini", env=KEYS)
    assert route_model(openai, None, env=KEYS) is openai
    assert route_model(openai, "gpt-4o", env=KEYS) is openai
    assert route_model(openai, "openai/gpt-4o", env=KEYS) is openai
    assert route_model(openai, "my-finetune", env=KEYS) is openai
    cache: dict[str, ChatModel] = {}
    other = route_model(openai, "claude-haiku-4-5", cache, env=KEYS)
    assert isinstance(other, AnthropicModel) and other.model == "claude-haiku-4-5"
    assert route_model(openai, "claude-haiku-4-5", cache, env=KEYS) is other
    with pytest.raises(LLMError, match="unknown model provider"):
        route_model(openai, "gemini/flash", env=KEYS)


def test_runtime_imports_no_ui_and_no_httpx() -> None:
    code = (
        "import sys, runtime.llm; "
        "bad = [m for m in ('textual', 'rich', 'httpx') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
