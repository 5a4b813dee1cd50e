"""`agency` commands as processes of their own, without a Python start-up each: a server process
imports the command once and forks a child per command, which runs it as `agency` would (its
own working directory, standard input from /dev/null, output to files, the interpreter's exit
and its exit handlers included). A test that starts a hundred commands to kill them (the crash
matrix) spent most of its CPU starting Python and importing the runtime.

`python -m tests.runtime.agency_forks` is the server: it reads one JSON request a line
(`{"start": [cwd, out, err, args]}` or `{"wait": pid}`) and answers one line each (the child's
pid, or its exit code as `subprocess` gives it: -9 for SIGKILL). `Forks` is the client, one
server per thread that uses it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[2]


def _child(cwd: str, out: str, err: str, args: list[str]) -> int:
    """In the forked child: become `agency ARGS` run in `cwd`; its exit code."""
    import random

    random.seed()  # not the sequence every other child of the server goes on with
    os.chdir(cwd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, out), (2, err)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own, for its life
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    sys.argv = ["agency", *args]
    from debugger.cli import main

    try:
        main()
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


def serve() -> int:
    """The server's loop; in a child, the child's exit code (the interpreter then ends as a
    process running the command would: exit handlers, stores closed)."""
    import debugger.cli  # noqa: F401 - what every child needs, imported once
    import runtime.record.sqlite_store  # noqa: F401
    import runtime.runs.recording  # noqa: F401
    import runtime.runs.resume  # noqa: F401

    for line in sys.stdin:
        request = json.loads(line)
        if "start" in request:
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                return _child(*request["start"])
            answer: Any = pid
        else:
            _, status = os.waitpid(request["wait"], 0)
            answer = os.waitstatus_to_exitcode(status)
        sys.stdout.write(f"{json.dumps(answer)}\n")
        sys.stdout.flush()
    return 0


class Forked:
    """One command the server started; as much of `subprocess.Popen` as the tests use."""

    def __init__(self, forks: Forks, pid: int, out: Path, err: Path) -> None:
        self.forks, self.pid, self.out, self.err = forks, pid, out, err
        self.returncode: int | None = None

    def _ended(self) -> bool:
        """Whether the command has ended (a zombie until the server waits for it)."""
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        return state in ("Z", "X")

    def poll(self) -> int | None:
        if self.returncode is None and self._ended():
            self.wait()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            deadline = None if timeout is None else time.monotonic() + timeout
            while deadline is not None and not self._ended():
                if time.monotonic() > deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    self.returncode = int(self.forks.ask({"wait": self.pid}))
                    raise subprocess.TimeoutExpired(f"agency (pid {self.pid})", timeout or 0)
                time.sleep(0.005)
            self.returncode = int(self.forks.ask({"wait": self.pid}))
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return self.out.read_text(), self.err.read_text()


class Forks:
    """Starts `agency` commands through a server of this thread's own (started on first use)."""

    def __init__(self, env: dict[str, str], scratch: Path) -> None:
        self.env, self.scratch = env, scratch
        self.local = threading.local()
        self.servers: list[subprocess.Popen[str]] = []
        self.lock = threading.Lock()
        self.count = 0

    def _server(self) -> subprocess.Popen[str]:
        server = getattr(self.local, "server", None)
        if server is None:
            server = subprocess.Popen(
                [sys.executable, "-m", "tests.runtime.agency_forks"],
                cwd=REPO,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            self.local.server = server
            with self.lock:
                self.servers.append(server)
        return server

    def ask(self, request: dict[str, Any]) -> Any:
        server = self._server()
        stdin: IO[str] = server.stdin  # type: ignore[assignment]
        stdout: IO[str] = server.stdout  # type: ignore[assignment]
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server ended (exit {server.wait()})")
        return json.loads(line)

    def start(self, cwd: Path, *args: str) -> Forked:
        with self.lock:
            self.count += 1
            n = self.count
        out, err = self.scratch / f"{n}.out", self.scratch / f"{n}.err"
        pid = self.ask({"start": [str(cwd), str(out), str(err), list(args)]})
        return Forked(self, int(pid), out, err)

    def run(self, cwd: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        forked = self.start(cwd, *args)
        out, err = forked.communicate(timeout)
        return subprocess.CompletedProcess(["agency", *args], forked.wait(), out, err)

    def close(self) -> None:
        for server in self.servers:
            if server.stdin is not None:
                server.stdin.close()
            server.wait(30)
            if server.stdout is not None:
                server.stdout.close()


if __name__ == "__main__":
    sys.exit(serve())
