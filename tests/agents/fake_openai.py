"""A fake OpenAI-compatible server on 127.0.0.1, for agents under test: chat completions and
responses, each also streamed (`stream=True`: server-sent events, the text and the tool call
arguments cut in pieces as a real server does).

It answers deterministically from the conversation it is sent: while fewer than `emails` tool
results are in, it asks for `send_email` to the next person (tool call id `call_N`); then it
answers with text, or with `{"sent": N}` when asked for a JSON schema (chat's `response_format`,
responses' `text.format`). It counts the requests it served."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.fake_http import Events, FakeModelServer


class FakeOpenAI(FakeModelServer):
    path = "/v1"

    def __init__(self, emails: int = 3) -> None:
        self.emails = emails
        self.structured = False
        super().__init__()

    def reply(self, path: str, body: dict[str, Any]) -> dict[str, Any] | Events:
        self.structured = bool(
            body.get("response_format") or (body.get("text") or {}).get("format")
        )
        if path.endswith("/responses"):
            answer = self.response(body["input"])
            events = response_events(answer) if body.get("stream") else None
        else:
            answer = self.answer(body["messages"])
            usage = (body.get("stream_options") or {}).get("include_usage")
            events = chat_chunks(answer, bool(usage)) if body.get("stream") else None
        if events is None:
            return answer
        return Events([*((None, json.dumps(e)) for e in events), (None, "[DONE]")])

    def answer(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done < self.emails:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{done + 1}",
                        "type": "function",
                        "function": {
                            "name": "send_email",
                            "arguments": json.dumps({"to": f"person{done + 1}@example.com"}),
                        },
                    }
                ],
            }
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": self.said(done)}
            finish = "stop"
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": 10 * len(messages),
                "completion_tokens": 5,
                "total_tokens": 10 * len(messages) + 5,
            },
        }

    def said(self, done: int) -> str:
        """The final answer's text once `done` emails are sent."""
        return json.dumps({"sent": done}) if self.structured else f"Sent {done} emails."

    def response(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """The responses API's answer to `items`: a `function_call` item, or a message."""
        done = sum(1 for i in items if i.get("type") == "function_call_output")
        n = len(self.requests)
        if done < self.emails:
            output: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{done + 1}",
                "name": "send_email",
                "arguments": json.dumps({"to": f"person{done + 1}@example.com"}),
                "status": "completed",
            }
        else:
            output = {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": self.said(done), "annotations": []}],
            }
        return {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1700000000,
            "model": "fake-model",
            "status": "completed",
            "output": [output],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 10 * len(items),
                "output_tokens": 5,
                "total_tokens": 10 * len(items) + 5,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }


def pieces(text: str) -> list[str]:
    """`text` cut in pieces of 4 characters, as a stream sends it."""
    return [text[i : i + 4] for i in range(0, len(text), 4)] or [""]


def chat_chunks(answer: dict[str, Any], usage: bool) -> list[dict[str, Any]]:
    """The chunks of a streamed chat completion giving `answer`."""
    head = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    message = answer["choices"][0]["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": "" if message.get("content") else None})]
    out += [chunk({"content": p}) for p in pieces(message.get("content") or "")]
    for i, call in enumerate(message.get("tool_calls") or ()):
        fn = call["function"]
        first = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": fn["name"], "arguments": ""},
        }
        out.append(chunk({"tool_calls": [first]}))
        out += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in pieces(fn["arguments"])
        ]
    out.append(chunk({}, answer["choices"][0]["finish_reason"]))
    if usage:
        out.append({**head, "choices": [], "usage": answer["usage"]})
    return out


def response_events(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of a streamed response giving `answer`."""
    started = {**answer, "status": "in_progress", "output": []}
    out: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for i, item in enumerate(answer["output"]):
        out.append({"type": "response.output_item.added", "output_index": i, "item": item})
        if item["type"] == "function_call":
            out += [
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": i,
                    "delta": p,
                }
                for p in pieces(item["arguments"])
            ]
        else:
            out += [
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": i,
                    "content_index": 0,
                    "delta": p,
                    "logprobs": [],
                }
                for p in pieces(item["content"][0]["text"])
            ]
        out.append({"type": "response.output_item.done", "output_index": i, "item": item})
    out.append({"type": "response.completed", "response": answer})
    return [{**e, "sequence_number": n} for n, e in enumerate(out)]
