"""PostgreSQL for the tests: the server `.ci/run` starts (`AGENCY_TEST_POSTGRES`), one fresh
schema per test, and a throwaway cluster of a test's own for the tests that kill the server.

Locally, without `AGENCY_TEST_POSTGRES`, the tests that need PostgreSQL are skipped with the
reason; in CI (`CI=true`) they fail instead, so a CI that lost its server cannot pass.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ENV = "AGENCY_TEST_POSTGRES"


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: .ci/run must provide PostgreSQL)")
    pytest.skip(reason)


def server_url() -> str:
    """The URL of the test server, or skip (fail in CI) when there is none."""
    url = os.environ.get(ENV)
    if not url:
        _missing(f"needs PostgreSQL: set {ENV}=postgresql://user@127.0.0.1:PORT/db (.ci/run does)")
    return str(url)


def with_schema(url: str, schema: str) -> str:
    """`url` with `schema` first on the search path (where the store creates its tables)."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query)
    query.append(("options", f"-csearch_path={schema}"))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


@contextmanager
def fresh_schema(url: str | None = None) -> Iterator[str]:
    """A URL whose store lives in a new, empty schema, dropped afterwards."""
    import psycopg

    base = url or server_url()
    schema = "t_" + secrets.token_hex(6)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(base, schema)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    return Path(dirs[-1]) if dirs else None


class Cluster:
    """A PostgreSQL server of the test's own (initdb into a temporary folder, pg_ctl start -w),
    on 127.0.0.1, run as the `postgres` user when the tests run as root."""

    def __init__(self) -> None:
        bindir = _bindir()
        if bindir is None or not (bindir / "initdb").exists():
            _missing("needs PostgreSQL's initdb and pg_ctl (apt-get install postgresql)")
        assert bindir is not None
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="agency-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user:
            shutil.chown(self.dir, self.user)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "agency", "--no-sync")
        self.url = f"postgresql://agency@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, cwd=self.dir)
        if done.returncode:
            log = self.dir / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{tool} failed: {done.stderr.decode()[-2000:]}\n{tail}")

    def start(self) -> None:
        """Start the server as this process's child (so a killed server is reaped here) and wait
        for its "ready to accept connections" line."""
        cmd = [
            str(self.bindir / "postgres"),
            "-D",
            str(self.data),
            "-c",
            "listen_addresses=127.0.0.1",
            "-p",
            str(self.port),
            "-k",
            str(self.dir),
        ]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, cwd=self.dir)
        assert self.proc.stderr is not None
        seen = []
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            seen.append(line)
            if "ready to accept connections" in line:
                break
        else:
            raise RuntimeError("the PostgreSQL server did not start:\n" + "".join(seen[-20:]))
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # drain the log

    def pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def kill(self) -> None:
        """SIGKILL the server (postmaster) and its backends, and wait until they are gone."""
        import signal

        pid = self.pid()
        doomed = [pid, *_children(pid)]
        for victim in doomed:
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()  # runuser reaps the postmaster, then ends

    def stop(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            self.kill()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                text = fh.read()
        except OSError:
            continue
        if int(text[text.rfind(")") + 2 :].split()[1]) == pid:
            out.append(int(entry))
    return out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
