"""Issue 11: the last readers of input files go through the hardened reader (a FIFO is refused
at once, a file over the limit is refused), and read-only commands leave nothing beside the
store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runtime.runs.testing import run_suite

AGENCY = [sys.executable, "-c", "from debugger.cli import main; main()"]
OK = 'node main() {\n  print("hi")\n}\n'


def agency(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    environ.update(env)
    return subprocess.run(
        [*AGENCY, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_test_suite_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "s.test.json")
    proc = agency(tmp_path, "test", "s.test.json")  # hung until the timeout before the fix
    assert proc.returncode == 1 and "FIFO" in proc.stdout + proc.stderr, proc
    (outcome,) = run_suite(tmp_path / "s.test.json")
    assert not outcome.passed and "FIFO" in outcome.detail


def test_a_test_suite_over_the_read_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.test.json").write_text('{"tests": [' + " " * 5000 + "]}")
    proc = agency(tmp_path, "test", "s.test.json", AGENCY_MAX_READ_BYTES="4096")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "larger than the 4096 bytes" in proc.stdout + proc.stderr


def test_replay_refuses_a_source_turned_fifo(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(OK)
    assert agency(tmp_path, "run", "p.agency").returncode == 0
    (tmp_path / "p.agency").unlink()
    os.mkfifo(tmp_path / "p.agency")
    proc = agency(tmp_path, "replay", "last")  # times out before the fix
    assert proc.returncode not in (0, 70) and "FIFO" in proc.stderr, proc.stderr


def test_read_only_commands_leave_no_wal_or_shm(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(OK)
    assert agency(tmp_path, "run", "p.agency").returncode == 0
    store = tmp_path / ".agency"
    assert sorted(os.listdir(store)) == ["runs.db"]
    for args in (["runs"], ["runs", "--json"], ["show", "last:0"], ["show", "last"]):
        proc = agency(tmp_path, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert sorted(os.listdir(store)) == ["runs.db"], args
    proc = agency(tmp_path, "export", "last:0", "-o", str(tmp_path / "cp.json"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(store)) == ["runs.db"]


def test_a_huge_runs_limit_is_no_limit(tmp_path: Path) -> None:
    (tmp_path / "ok.agency").write_text(OK)
    assert agency(tmp_path, "run", "ok.agency").returncode == 0
    proc = agency(tmp_path, "runs", "--limit", "9" * 30, "--json")  # internal error before
    assert proc.returncode == 0 and '"status": "finished"' in proc.stdout, proc.stderr


def test_a_database_url_that_does_not_parse_is_refused_without_its_password(
    tmp_path: Path,
) -> None:
    proc = agency(tmp_path, "runs", "--db", "postgresql://ada:s3cret@[::1/db")  # exit 70 before
    assert proc.returncode == 2 and "Invalid IPv6 URL" in proc.stderr, proc.stderr
    assert "s3cret" not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr


def test_exporting_a_run_whose_program_is_gone_names_the_run(tmp_path: Path) -> None:
    (tmp_path / "ok.agency").write_text(OK)
    assert agency(tmp_path, "run", "ok.agency").returncode == 0
    (tmp_path / "ok.agency").unlink()  # or a damaged `source_path` in the store (store_fuzz)
    proc = agency(tmp_path, "export", "last:1", "-o", "cp.json")
    assert proc.returncode == 66, proc.stderr
    assert "is re-executed from its program, which cannot be read: ok.agency: no such file" in (
        proc.stderr
    )
    assert not (tmp_path / "cp.json").exists()
