"""A fake Anthropic messages server on 127.0.0.1, for agents under test: `/v1/messages`, also
streamed (`stream=True`: server-sent events, text and tool input cut in pieces).

While fewer than `rolls` tool results are in, it answers with a `roll` tool use (id `tu_N`);
then with text, or with `{"rolls": N}` when asked for a JSON schema (`output_config.format`).
It counts the requests it served."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.fake_http import Events, FakeModelServer
from tests.agents.fake_openai import pieces


class FakeAnthropic(FakeModelServer):
    def __init__(self, rolls: int = 2) -> None:
        self.rolls = rolls
        self.structured = False
        super().__init__()

    def reply(self, path: str, body: dict[str, Any]) -> dict[str, Any] | Events:
        self.structured = bool((body.get("output_config") or {}).get("format"))
        answer = self.answer(body["messages"])
        if not body.get("stream"):
            return answer
        return Events((e["type"], json.dumps(e)) for e in message_events(answer))

    def answer(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        done = sum(
            1
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        )
        content: list[dict[str, Any]] = []
        if not self.structured:  # a JSON answer has no text besides
            content.append({"type": "text", "text": f"Roll number {done + 1}."})
        if done < self.rolls:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"tu_{done + 1}",
                    "name": "roll",
                    "input": {"n": done + 1},
                }
            )
        else:
            said = json.dumps({"rolls": done}) if self.structured else f"Rolled {done} times."
            content = [{"type": "text", "text": said}]
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": "fake-claude",
            "content": content,
            "stop_reason": "tool_use" if done < self.rolls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10 * len(messages), "output_tokens": 5},
        }


def message_events(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The raw events of a streamed message giving `answer`."""
    start = {
        **answer,
        "content": [],
        "stop_reason": None,
        "usage": {**answer["usage"], "output_tokens": 1},
    }
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for i, block in enumerate(answer["content"]):
        if block["type"] == "text":
            out.append(
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        else:
            out.append(
                {"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}}
            )
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(json.dumps(block["input"]))
            ]
        out += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        out.append({"type": "content_block_stop", "index": i})
    out.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": answer["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": answer["usage"]["output_tokens"]},
        }
    )
    out.append({"type": "message_stop"})
    return out
