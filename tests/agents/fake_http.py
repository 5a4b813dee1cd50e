"""Provides `FakeModelServer`: a model API's fake on 127.0.0.1 for agents under test. A
subclass answers each POST (`reply`) with a JSON body, or with `Events` for a streamed answer
(server-sent events). It keeps the JSON bodies of the requests it served."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Events(list[tuple[str | None, str]]):
    """A streamed answer: (event name or None, data) for each server-sent event."""


class FakeModelServer:
    path = ""  # appended to the server's address in `url`

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                answer = fake.reply(self.path, body)
                self.send_response(200)
                if isinstance(answer, Events):
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for name, data in answer:
                        head = f"event: {name}\n" if name else ""
                        self.wfile.write(f"{head}data: {data}\n\n".encode())
                        self.wfile.flush()
                    return
                data = json.dumps(answer).encode()
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def reply(self, path: str, body: dict[str, Any]) -> dict[str, Any] | Events:
        raise NotImplementedError

    def __enter__(self) -> Any:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
