"""A run that failed at `input()` (stdin could not be read) replays to the same failure: the
failed read is an observed effect of the record, not a question asked again of whatever stdin
the replay has (which would answer, and the replay would report a divergence)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.cli_helpers import AGENCY

PROGRAM = 'node main() {\n  print("asking")\n  const name = input("name? ")\n  print("hello ${name}")\n}\n'


def test_a_run_that_failed_at_input_replays_to_the_same_failure(tmp_path: Path) -> None:
    (tmp_path / "p.agency").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}

    def agency(*args: str, stdin: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGENCY, *args],
            cwd=tmp_path,
            env=env,
            stdin=stdin,  # type: ignore[arg-type]
            capture_output=True,
            text=True,
            timeout=120,
        )

    # Descriptor 0 open for writing only: reading it fails (EBADF), as a revoked terminal does.
    with open(tmp_path / "write-only", "w") as unreadable:
        run = agency("run", "p.agency", "--db", "r.db", stdin=unreadable)
    assert run.returncode == 1, run.stderr
    assert "p.agency:3:" in run.stderr and "input: cannot read a line" in run.stderr
    replay = agency("replay", "--last", "--db", "r.db", stdin=subprocess.DEVNULL)
    assert replay.returncode == 1, replay.stderr
    assert "input: cannot read a line" in replay.stderr, replay.stderr
    assert "diverge" not in replay.stderr and "Traceback" not in replay.stderr
    assert replay.stdout == run.stdout == "asking\n"
