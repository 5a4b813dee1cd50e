"""Provides the scripted model: answers come from a queue written by the test author.

Each entry answers one request (each tool round is a request)::

    [{"return": 2}, {"toolCall": {"name": "add", "args": {"a": 4}}}, {"return": "done"}]

`{"return": value}` answers with `value` (as text: strings as they are, anything else as JSON);
`{"toolCall": {...}}` (or `{"toolCalls": [...]}`) asks for tool calls. `"delayMs": n` makes the
answer take n milliseconds, as a slow model would; a time guard whose budget runs out first
cancels the request (the entry is used up, and the request is made again if the guard goes on). The queue's `position`
belongs to the run, not to the program: a restore does not rewind it, but checkpoints save it
so a machine rebuilt from one continues with the right answer.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from runtime.errors import AgencyError
from runtime.language.files import JSONTooDeep, loads_json, read_text
from runtime.llm.base import DEADLINE, Completion, LLMError, Message, ToolCall, ToolSpec, Usage
from runtime.llm.schema import unwrap_schema

ENV_MOCKS = "AGENCY_LLM_MOCKS"
SYNTHETIC_COST = 0.000002  # USD per answer of the test provider
MAX_DELAY_MS = 600_000.0  # an entry's `delayMs` at most (ten minutes)
_SHAPE = 'each entry must be {"return": value} or {"toolCall": {"name": ..., "args": {...}}}'


class MockModel:
    """A `ChatModel` that serves scripted answers in order."""

    provider = "mock"
    model = "mock"

    def __init__(self, entries: list[Any], synthetic_usage: bool = False) -> None:
        if not isinstance(entries, list):
            raise LLMError(f"mock answers must be a JSON list; {_SHAPE}", provider="mock")
        self.entries: list[dict[str, Any]] = [_check_entry(e, i) for i, e in enumerate(entries)]
        self.position = 0
        # The test provider (`useTestLLMProvider`): every answer costs SYNTHETIC_COST and
        # 1 + 1 tokens, under the model name "deterministic", so cost accounting is testable.
        self.usage = Usage(1, 1, SYNTHETIC_COST) if synthetic_usage else Usage(0, 0, 0.0)
        if synthetic_usage:
            self.model = "deterministic"

    def __repr__(self) -> str:
        return f"MockModel({len(self.entries)} entries, position={self.position})"

    @property
    def remaining(self) -> int:
        """How many answers are left."""
        return max(0, len(self.entries) - self.position)

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        response_schema: dict[str, Any] | None,
        params: dict[str, Any],
    ) -> Completion:
        """The next scripted answer; raises `LLMError` when the queue is exhausted."""
        if self.position >= len(self.entries):
            n = len(self.entries)
            raise LLMError(
                f"the mock queue is exhausted after {n} answer{'' if n == 1 else 's'}; "
                "add more entries to the mock file",
                provider="mock",
            )
        index = self.position
        entry = self.entries[index]
        self.position += 1
        if _delayed(entry):
            return Completion(
                text="",
                model=self.model,
                provider=self.provider,
                raw={"mock_index": index},
                cancelled=True,
            )
        if "return" in entry:
            value = entry["return"]
            # A mock written as {"response": v} for a typed llm() means v, like a real reply.
            if (
                response_schema is not None
                and unwrap_schema(response_schema) is not None
                and isinstance(value, dict)
                and list(value) == ["response"]
            ):
                # The text stays the reply as a model writes it, wrapper and all (compact,
                # as JavaScript writes JSON): it is what the thread holds.
                text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
                value = value["response"]
            else:
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            return Completion(
                text=text,
                value=value,
                usage=self.usage,
                model=self.model,
                provider=self.provider,
                raw={"mock_index": index},
            )
        calls = entry["toolCalls"] if "toolCalls" in entry else [entry["toolCall"]]
        return Completion(
            text="",
            tool_calls=tuple(
                ToolCall(
                    id=str(c.get("id") or f"mock_{index}_{i}"),
                    name=c["name"],
                    args=dict(c.get("args") or {}),
                )
                for i, c in enumerate(calls)
            ),
            usage=self.usage,
            model=self.model,
            provider=self.provider,
            raw={"mock_index": index},
        )

    def config(self) -> dict[str, Any]:
        """What identifies this model in a run's stored config (no secrets)."""
        return {"provider": "mock", "model": "mock", "spec": "mock", "base_url_host": None}


def _delayed(entry: dict[str, Any]) -> bool:
    """Wait out an entry's `delayMs`; True when the request's DEADLINE came first (the wait then
    ends there, and the request is cancelled)."""
    delay = entry.get("delayMs")
    if not isinstance(delay, int | float) or isinstance(delay, bool) or delay <= 0:
        return False
    until = time.monotonic() + min(float(delay), MAX_DELAY_MS) / 1000
    deadline = DEADLINE.get()
    if deadline is not None and deadline < until:
        time.sleep(max(0.0, deadline - time.monotonic()))
        return True
    time.sleep(max(0.0, until - time.monotonic()))
    return False


def _check_entry(entry: Any, index: int) -> dict[str, Any]:
    where = f"mock entry {index + 1}"
    if not isinstance(entry, dict):
        raise LLMError(f"{where} is {json.dumps(entry)[:60]}; {_SHAPE}", provider="mock")
    delay = entry.get("delayMs")
    if delay is not None and (
        not isinstance(delay, int | float)
        or isinstance(delay, bool)
        or not 0 <= delay <= MAX_DELAY_MS
    ):
        raise LLMError(
            f'{where}: "delayMs" must be a number of milliseconds from 0 to {MAX_DELAY_MS:g}',
            provider="mock",
        )
    kinds = [k for k in ("return", "toolCall", "toolCalls") if k in entry]
    if len(kinds) != 1:
        raise LLMError(f"{where} has keys {sorted(entry)}; {_SHAPE}", provider="mock")
    if kinds[0] == "return":
        return entry
    calls = entry["toolCalls"] if kinds[0] == "toolCalls" else [entry["toolCall"]]
    if not isinstance(calls, list) or not calls:
        raise LLMError(f'{where}: "toolCalls" must be a non-empty list', provider="mock")
    for call in calls:
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("name"), str)
            or not isinstance(call.get("args", {}), dict)
        ):
            raise LLMError(
                f'{where}: a tool call must be {{"name": "tool", "args": {{...}}}}, '
                f"got {json.dumps(call)[:60]}",
                provider="mock",
            )
    return entry


def load_mocks(source: str | Path) -> list[Any]:
    """The mock entries in a file (`--mock FILE`) or in JSON text (`AGENCY_LLM_MOCKS`).

    A string that starts with `[` or `{` is JSON text, anything else a path. The JSON is a list
    of entries, or an object with an `llmMocks` list (as in a test suite).
    """
    if isinstance(source, Path) or not source.lstrip().startswith(("[", "{")):
        path = Path(source)
        try:
            text = read_text(path, "the mock file")
        except OSError as exc:
            raise LLMError(
                f"cannot read the mock file {path}: {exc.strerror or exc}", provider="mock"
            ) from None
        except AgencyError as exc:  # a FIFO, a device, over the size limit
            raise LLMError(str(exc), provider="mock") from None
        except UnicodeDecodeError:
            raise LLMError(
                f"the mock file {path} is not UTF-8 text (expected a JSON list)", provider="mock"
            ) from None
        origin = f"the mock file {path}"
    else:
        text = source
        origin = "the mock answers"
    try:
        data = loads_json(text)
    except JSONTooDeep as exc:
        raise LLMError(f"{origin}: {exc.msg}", provider="mock") from None
    except json.JSONDecodeError as exc:
        raise LLMError(
            f"{origin} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            provider="mock",
        ) from None
    if isinstance(data, dict) and isinstance(data.get("llmMocks"), list):
        data = data["llmMocks"]
    if not isinstance(data, list):
        raise LLMError(f"{origin} must be a JSON list of entries; {_SHAPE}", provider="mock")
    for i, entry in enumerate(data):
        _check_entry(entry, i)
    return data
