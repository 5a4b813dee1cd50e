"""A catastrophic regex (`re/(a|a)+$/` on forty `a`s and a `!` backtracks 2**40 times) is bounded
by `AGENCY_REGEX_TIMEOUT` in every method that runs a program's pattern, and a real process
running one stops on Ctrl-C or SIGTERM: the engine checks for signals while it matches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli_helpers import AGENCY, agency, clean, plain_workdir

SLOW = "re/(a|a)+$/"
INPUT = '"a".repeat(40) + "!"'


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENCY_REGEX_TIMEOUT", "0.2")
    return plain_workdir(tmp_path, monkeypatch)


@pytest.mark.parametrize(
    "expression",
    [
        f"{SLOW}.test(s)",
        f"{SLOW}.exec(s)",
        f"s =~ {SLOW}",
        f"s.match({SLOW})",
        "s.match(re/(a|a)+$/g)",
        "s.matchAll(re/(a|a)+$/g)",
        f"s.search({SLOW})",
        's.search("(a|a)+$")',
        f's.replace({SLOW}, "x")',
        's.replaceAll(re/(a|a)+$/g, "x")',
        f"s.split({SLOW})",
    ],
)
def test_each_regex_method_stops_at_the_time_limit(work: Path, expression: str) -> None:
    (work / "p.agency").write_text(
        f"node main() {{\n  const s = {INPUT}\n  const r = {expression}\n  print(r)\n}}\n"
    )
    started = time.monotonic()
    result = agency("run", "--no-record", "p.agency")
    assert time.monotonic() - started < 30
    clean(result, 1, "p.agency:3:", "took longer than the 0.2 s a regex may take")
    assert "(a|a)+$" in result.output and "AGENCY_REGEX_TIMEOUT" in result.output


def test_grep_stops_at_the_time_limit(work: Path) -> None:
    (work / "data.txt").write_text("a" * 40 + "!\n")
    (work / "p.agency").write_text(
        'import { grep } from "std::shell"\n\nnode main() {\n'
        '  const found = grep("(a|a)+$", dir: ".") with approve\n  print(found)\n}\n'
    )
    result = agency("run", "--no-record", "p.agency")
    clean(result, 0, '"success":false', "took longer than the 0.2 s")  # grep's failure result


def test_a_fast_regex_on_a_long_string_is_not_cut_short(work: Path) -> None:
    # The limit is on each call into the engine: split's loop makes one per piece, each well
    # inside the limit, however long the whole split takes.
    (work / "p.agency").write_text(
        "node main() {\n"
        '  const s = "ab,".repeat(50000)\n'
        "  print(s.split(re/,/).length)\n"
        "  print(s.split(re/(?:)/).length)\n"
        "}\n"
    )
    result = agency("run", "--no-record", "p.agency")
    clean(result, 0)
    assert result.output.split() == ["50001", "150000"]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_a_time_limit_that_is_no_number_of_seconds(
    work: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AGENCY_REGEX_TIMEOUT", value)
    (work / "p.agency").write_text('node main() {\n  print(re/a/.test("a"))\n}\n')
    clean(agency("run", "--no-record", "p.agency"), 1, "AGENCY_REGEX_TIMEOUT")


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"]
)
def test_a_long_match_stops_on_a_second_signal(tmp_path: Path, signum: int, code: int) -> None:
    # The first signal asks for a stop at the next step boundary, which a match never reaches;
    # the second stops the run where it is, inside the engine.
    (tmp_path / "p.agency").write_text(
        f'node main() {{\n  print("ready")\n  print({SLOW}.test("a".repeat(60) + "!"))\n}}\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    env["AGENCY_REGEX_TIMEOUT"] = "600"  # only the signal can end the match in time
    proc = subprocess.Popen(
        [*AGENCY, "run", "p.agency", "--db", "r.db"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signum)
        lines = [proc.stderr.readline() for _ in range(3)]  # the run's id, then the notice
        assert any("stopping after this step" in line for line in lines), lines
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("mock", "says"),
    [
        ({"urlPattern": "("}, 'fetchMocks[0]: "urlPattern": bad regex'),
        ({"url": "https://shop.test/a", "bodyPattern": "["}, '"bodyPattern": bad regex'),
        ({"urlPattern": ["a"]}, '"urlPattern" must be a string'),
        ({"urlPattern": "(a|a)+$"}, "took longer than the 0.2 s"),
        ({"url": "*a" * 40 + "*b"}, "no fetchMock matched"),  # at once, or the time limit
    ],
    ids=["bad-url-pattern", "bad-body-pattern", "not-a-string", "catastrophic", "star-glob"],
)
def test_fetch_mock_patterns_from_a_test_file(
    work: Path, mock: dict[str, object], says: str
) -> None:
    # They were an internal error (re.error) or a hang in the test runner.
    (work / "f.agency").write_text(
        'import { fetch } from "std::http"\n\nnode main() {\n'
        '  return fetch("https://shop.test/' + "a" * 60 + '!") with approve\n}\n'
    )
    suite = {
        "fetchMocks": [{**mock, "return": 1}],
        "tests": [{"nodeName": "main", "expectedOutput": "1"}],
    }
    (work / "f.test.json").write_text(json.dumps(suite))
    result = agency("test", "f.test.json")
    assert result.exit_code == 1 and "internal error" not in result.output, result.output
    assert says in result.output, result.output


def test_a_policy_glob_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # `{a,b}` twenty times spelled out a million alternatives into one regex (a minute and a
    # gigabyte); `**a` thirty times backtracked polynomially in the value's length.
    from runtime.errors import AgencyRuntimeError
    from runtime.vm.builtins_policy import _policy_glob

    monkeypatch.setenv("AGENCY_REGEX_TIMEOUT", "0.2")
    started = time.monotonic()
    with pytest.raises(AgencyRuntimeError, match="more than 10,000 alternatives"):
        _policy_glob(None, ["{a,b}" * 20, "ab"], {})  # type: ignore[arg-type]
    assert time.monotonic() - started < 10
    assert _policy_glob(None, ["{a,b}{c,d}/**", "bd/x/y"], {})  # type: ignore[arg-type]
    assert not _policy_glob(None, ["**a" * 30 + "**b", "a" * 200], {})  # type: ignore[arg-type]
