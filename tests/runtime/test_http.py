"""std::http against a real server on 127.0.0.1 (no other network): requests are made, their
answers become Results, and a replayed run is served the recorded answers without sending a
request again."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.language.program import compile_source, load_program
from runtime.record.store import MemoryStore
from runtime.runs.recording import record_program
from runtime.runs.replay import replay_run
from runtime.runs.runner import RunConfig, decision_from
from runtime.vm.builtins_http import html_to_markdown, request_url
from runtime.vm.values import to_plain
from runtime.vm.writelog import HALTED


class _Handler(http.server.BaseHTTPRequestHandler):
    hits: list[tuple[str, str, str]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        self.hits.append((self.command, self.path, body))
        if self.path.startswith("/missing"):
            self._send(404, "text/plain", "no such thing here")
        elif self.path.startswith("/json"):
            self._send(200, "application/json", json.dumps({"n": 5, "echo": body}))
        else:
            self._send(200, "text/html", "<h1>Hello</h1><p>from <i>the</i> server</p>")

    def _send(self, status: int, kind: str, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.hits = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


PROGRAM = """
import { fetch, fetchJSON, fetchMarkdown } from "std::http"

node main(base: string): any {
  const page = fetchMarkdown(base, "/page") with approve
  const data = fetchJSON(base, "/json", method: "POST", body: {a: 1}) with approve
  const gone = fetch(base, "/missing") with approve
  return [page.value, data.value, gone.error.status, gone.error.body]
}
"""


def _record(base: str, root: Path) -> Any:
    source = root / "http.agency"
    source.write_text(PROGRAM, encoding="utf-8")
    program = load_program(source)
    config = RunConfig(args=[base], model_spec="sim", root=str(root), quiet=True)
    store = MemoryStore()
    rec = record_program(program, config, store, lambda p: decision_from("approve"))
    return store, rec


def test_requests_reach_the_server_and_become_results(server: str, tmp_path: Path) -> None:
    _, rec = _record(server, tmp_path)
    assert rec.machine.status == HALTED
    assert to_plain(rec.machine.result) == [
        "# Hello\n\nfrom *the* server",
        {"n": 5, "echo": '{"a":1}'},
        404,
        "no such thing here",
    ]
    assert [(m, p) for m, p, _ in _Handler.hits] == [
        ("GET", "/page"),
        ("POST", "/json"),
        ("GET", "/missing"),
    ]


def test_a_replay_sends_no_request(server: str, tmp_path: Path) -> None:
    store, rec = _record(server, tmp_path)
    sent = len(_Handler.hits)
    m, divergence = replay_run(store, store.get_run(rec.run_id), quiet=True, root=tmp_path)
    assert divergence is None
    assert json.dumps(to_plain(m.result)) == json.dumps(to_plain(rec.machine.result))
    assert len(_Handler.hits) == sent


def test_an_unreachable_host_is_a_failure_with_a_message(tmp_path: Path) -> None:
    # Port 9 on 127.0.0.1 (discard) is closed here: the connection is refused at once.
    src = (
        PROGRAM.replace("node main", "node unused")
        + """
node reach(): any {
  const r = fetch("http://127.0.0.1:9", "/x") with approve
  return r.error
}
"""
    )
    program = compile_source(src, "http.agency")
    config = RunConfig(node="reach", model_spec="sim", root=str(tmp_path), quiet=True)
    rec = record_program(program, config, MemoryStore(), lambda p: decision_from("approve"))
    assert "could not reach http://127.0.0.1:9/x" in str(to_plain(rec.machine.result))


def test_url_joining_and_markdown() -> None:
    assert request_url("https://a.test", "/x") == "https://a.test/x"
    assert request_url("https://a.test/", "/x") == "https://a.test/x"
    assert request_url("https://a.test/api", "v1") == "https://a.test/api/v1"
    assert request_url("https://a.test/api", "?q=1") == "https://a.test/api?q=1"
    assert request_url("https://a.test", "") == "https://a.test"
    md = html_to_markdown('<a href="https://b.test">B</a> &amp; <code>x</code><!-- c -->')
    assert md == "[B](https://b.test) & `x`"
