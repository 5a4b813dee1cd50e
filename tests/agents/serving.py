"""Starting `agency serve` for a test: a real uvicorn server on 127.0.0.1, on a free port the
server picks itself (--port 0) and prints once it listens."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


_pumped: dict[int, queue.Queue[str | None]] = {}  # pid -> its stdout's lines not yet read


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 60.0) -> str:
    """The first line of the process's stdout that holds `needle` (fails on exit or timeout)."""
    lines: queue.Queue[str | None] = queue.Queue()
    _pumped[proc.pid] = lines

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen = []
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no {needle!r} within {timeout}s; saw {seen}") from None
        if line is None:
            raise AssertionError(f"the process ended before {needle!r}: {''.join(seen)}")
        seen.append(line)
        if needle in line:
            return line


def wait_for_exit(proc: subprocess.Popen[str], timeout: float = 120.0) -> int:
    """The process's exit code. If it has not exited within `timeout` seconds, fail with where
    its threads stand: started with PYTHONFAULTHANDLER=1, it dumps them on SIGABRT."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        proc.wait(timeout=30)
        rest, lines = [], _pumped.get(proc.pid)
        while lines is not None:
            try:
                line = lines.get(timeout=5)
            except queue.Empty:
                break
            if line is None:
                break
            rest.append(line)
        raise AssertionError(f"no exit within {timeout}s; its threads:\n{''.join(rest)}") from None


@contextmanager
def serving(db: Path, *args: str) -> Iterator[str]:
    """The base URL of `agency serve --db DB --port 0 ARGS…`, stopped afterwards."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("AGENCY_TOKEN", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from debugger.cli import main; main()",
            "serve",
            "--db",
            str(db),
            "--port",
            "0",
            *args,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = wait_for_line(proc, "listening on ")
        yield line.split("listening on ", 1)[1].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
