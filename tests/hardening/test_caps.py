"""Issue 11, item 5: the caps on what a program may build and on how large the run store grows.
Each trips with its message and exit code, and leaves a run that `agency resume` continues."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENCY = [sys.executable, "-c", "from debugger.cli import main; main()"]

DOUBLING = """node main() {
  let s = "x"
  for (i in range(20)) {
    s = s + s
  }
  print(s.length)
}
"""


def agency(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    environ.update(env)
    return subprocess.run(
        [*AGENCY, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def last_run(cwd: Path) -> dict[str, object]:
    proc = agency(cwd, "runs", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)[-1]  # type: ignore[no-any-return]


def test_a_doubling_string_stops_at_the_cap_and_resumes_with_a_larger_one(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(DOUBLING)
    proc = agency(tmp_path, "run", "p.agency", AGENCY_MAX_STRING_LENGTH="100000")
    assert proc.returncode == 1, proc.stderr
    assert "p.agency:4:5: error: a string of 131,072 characters is longer than the 100,000" in (
        proc.stderr
    )
    assert "AGENCY_MAX_STRING_LENGTH" in proc.stderr and "internal error" not in proc.stderr
    assert last_run(tmp_path)["status"] == "failed"
    again = agency(tmp_path, "resume", "last", AGENCY_MAX_STRING_LENGTH="2000000")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().endswith("1048576")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('const s = "x".repeat(2 ** 31)', "a string of 2,147,483,648 characters"),
        ('let s = "x"\n  while (true) {\n    s = s + s\n  }', "a string of 268,435,456 characters"),
        ("const xs = range(2 ** 40)", "an array of 1,099,511,627,776 elements"),
        ("const xs = Array.from({length: 1e12})", "an array of 1,000,000,000,000 elements"),
        ("let xs = [1]\n  while (true) {\n    xs = [...xs, ...xs]\n  }", "an array of"),
    ],
)
def test_values_over_the_default_caps_are_refused_at_once(
    tmp_path: Path, line: str, message: str
) -> None:
    (tmp_path / "p.agency").write_text("node main() {\n  " + line + "\n}\n")
    proc = agency(tmp_path, "run", "--no-record", "p.agency")
    assert proc.returncode == 1, proc.stderr
    assert message in proc.stderr and "a program may build" in proc.stderr, proc.stderr
    assert "p.agency:" in proc.stderr and "internal error" not in proc.stderr


def test_push_stops_at_the_array_cap(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(
        "node main() {\n  const xs = []\n  while (true) {\n    xs.push(1)\n  }\n}\n"
    )
    proc = agency(tmp_path, "run", "--no-record", "p.agency", AGENCY_MAX_ARRAY_LENGTH="70000")
    assert proc.returncode == 1, proc.stderr
    assert "p.agency:4:5: error: an array of 70,001 elements is longer than the 70,000" in (
        proc.stderr
    )


def test_a_recorded_endless_loop_stops_at_the_store_size_cap(tmp_path: Path) -> None:
    (tmp_path / "loop.agency").write_text(
        "node main() {\n  let i = 0\n  while (true) {\n    i = i + 1\n  }\n}\n"
    )
    proc = agency(tmp_path, "run", "loop.agency", "--max-store-size", "1M")
    assert proc.returncode == 130, proc.stderr
    assert "the run store" in proc.stderr and "over the 1.0 MiB allowed" in proc.stderr
    assert "agency resume" in proc.stderr
    size = sum(p.stat().st_size for p in (tmp_path / ".agency").iterdir())
    assert size < 4 << 20
    run = last_run(tmp_path)
    assert run["status"] == "interrupted"
    env = agency(tmp_path, "run", "loop.agency", AGENCY_MAX_STORE_SIZE="1M")
    assert env.returncode == 130 and "AGENCY_MAX_STORE_SIZE" in env.stderr
    bad = agency(tmp_path, "run", "loop.agency", "--max-store-size", "lots")
    assert bad.returncode == 2 and "expected a size such as 500M" in bad.stderr  # usage


def test_the_caps_are_documented(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name in (
        "AGENCY_MAX_STRING_LENGTH",
        "AGENCY_MAX_ARRAY_LENGTH",
        "AGENCY_MAX_STORE_SIZE",
        "--max-store-size",
        "AGENCY_MAX_READ_BYTES",
    ):
        assert name in readme, name
    assert "--max-store-size" in agency(tmp_path, "run", "--help").stdout
