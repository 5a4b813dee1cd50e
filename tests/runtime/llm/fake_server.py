"""Provides a scripted HTTP server on 127.0.0.1 for testing the remote providers offline.

`FakeServer` answers POSTs from a queue of `Reply`s (the last one repeats when the queue runs
dry) and records every request it received, headers and JSON body included. `openai_answer`,
`openai_tool_call`, `anthropic_answer`, `anthropic_text` and `anthropic_tool_use` build the
bodies the two APIs send back.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a status, a body (JSON-encoded unless bytes/str), a delay."""

    status: int = 200
    body: Any = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""  # the body as it came over the wire


class FakeServer:
    """A threaded HTTP server; use as a context manager, `url` is its base URL."""

    def __init__(self, *replies: Reply) -> None:
        self.replies: list[Reply] = list(replies)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with server._lock:
                    server.requests.append(
                        Request(
                            self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw
                        )
                    )
                    if len(server.replies) > 1:
                        reply = server.replies.pop(0)
                    elif server.replies:
                        reply = server.replies[0]
                    else:
                        reply = Reply(500, {"error": {"message": "no scripted reply"}})
                if reply.delay and server._stop.wait(reply.delay):
                    return
                if isinstance(reply.body, bytes):
                    payload = reply.body
                elif isinstance(reply.body, str):
                    payload = reply.body.encode()
                else:
                    payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def count(self) -> int:
        """How many requests the server has received so far."""
        with self._lock:
            return len(self.requests)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# -- answer bodies ------------------------------------------------------------------------------


def openai_answer(
    content: str | None = "ok",
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    model: str = "test-model",
    tokens: tuple[int, int] = (100, 10),
) -> dict[str, Any]:
    """A Chat Completions answer: text and/or tool calls, with usage."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
    }


def openai_tool_call(id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One entry of a Chat Completions message's `tool_calls`."""
    return {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def anthropic_answer(
    *blocks: dict[str, Any],
    model: str = "claude-sonnet-4-5-20250929",
    tokens: tuple[int, int] = (200, 20),
) -> dict[str, Any]:
    """A Messages API answer made of content blocks, with usage."""
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(blocks),
        "stop_reason": stop,
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }


def anthropic_text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def anthropic_tool_use(id: str, name: str, args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": args}
