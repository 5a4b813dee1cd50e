"""What the SIGTERM tests share: the programs they stop, starting `agency` with its output
piped, and holding a model request in flight."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from tests.lifecycle.harness import AGENCY, TIMEOUT, LLMServer, agency_env

EXIT_TERMINATED = 143

# Long enough that no process reaches its end in the time a signal takes to arrive.
LOOP = """\
node main() {
  print("ready")
  let n = 0
  for (i in range(3000000)) {
    n = n + 1
  }
  write("done.txt", "n=${n}") with approve
  return n
}
"""

ASKS = """\
node main() {
  print("ready")
  let first = llm("first question")
  let second = llm("second question")
  return [first, second]
}
"""


def start(work: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    """`agency ARGS` in `work`, stdout and stderr piped as text."""
    return subprocess.Popen(
        [*AGENCY, *args],
        cwd=work,
        env=agency_env(**env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ask_and_hold(
    work: Path, server: LLMServer, run_args: tuple[str, ...], **env: str
) -> subprocess.Popen[str]:
    """`agency run prog.agency RUN_ARGS` of ASKS against `server`, its first model request
    held in flight there."""
    (work / "prog.agency").write_text(ASKS)
    server.hold(1)
    model = ("--model", "openai/fake-model", "--base-url", server.url)
    proc = start(work, "run", "prog.agency", *run_args, *model, **env)
    deadline = time.monotonic() + TIMEOUT
    while server.count() < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert server.count() == 1, proc.communicate()
    return proc


def terminate(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Send SIGTERM and wait for the process to end as a stopped command does: exit 143, no
    traceback. Its (stdout, stderr)."""
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == EXIT_TERMINATED, (proc.returncode, err)
    assert "Traceback" not in err and "Traceback" not in out, err
    return out, err


def signal_and_wait_until_heard(
    proc: subprocess.Popen[str], signum: signal.Signals = signal.SIGTERM
) -> None:
    """Send `signum` (SIGTERM or SIGINT) and read stderr until the process says it is
    stopping because of it."""
    assert proc.stderr is not None
    proc.send_signal(signum)
    line = proc.stderr.readline()
    while line and "stopping" not in line:
        line = proc.stderr.readline()
    assert ("SIGTERM" if signum == signal.SIGTERM else "Ctrl-C") in line, line
