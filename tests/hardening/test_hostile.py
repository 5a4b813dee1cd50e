"""Hostile inputs found by hand, one test per class: each gave an internal error (exit 70), ran
on from a damaged file, or read a file it had no business reading. The one acceptable answer is
one clear line and a non-zero exit (or, for a valid program, the JavaScript result)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import AgencyError
from tests.cli_helpers import agency, clean, plain_workdir

CHAT = 'node main() {\n  let a = llm("first")\n  let b = 1\n  print(b)\n  let c = llm("second")\n  print(a, c)\n}\n'


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return plain_workdir(tmp_path, monkeypatch)


# -- number literals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "shown"),
    [
        ("9" * 10_000, "Infinity"),  # Python refuses to convert an int of over 4,300 digits
        ("0x" + "f" * 4_000, "Infinity"),  # an int too large for a float
        ("1" + "0" * 400, "Infinity"),
        ("9007199254740993", "9007199254740992"),  # past 2**53: the nearest double
        ("123456789012345678901234567890", "1.2345678901234568e+29"),
    ],
    ids=["10k-digits", "4k-hex-digits", "1e400", "2**53+1", "30-digits"],
)
def test_huge_number_literals_are_javascript_numbers(work: Path, literal: str, shown: str) -> None:
    (work / "n.agency").write_text(f"node main() {{\n  print({literal})\n}}\n")
    result = agency("run", "--no-record", "n.agency")
    clean(result, 0)
    assert result.stdout.splitlines()[0] == shown


def test_a_huge_number_as_an_object_key(work: Path) -> None:
    big = "9" * 5_000
    source = f"node main() {{\n  print(Object.keys({{{big}: 1, 0x{'f' * 300}: 2, 1e300: 3}}))\n}}\n"
    # Both huge keys are Infinity: one key, as in JavaScript.
    (work / "k.agency").write_text(source)
    result = agency("run", "--no-record", "k.agency")
    clean(result, 0)
    assert json.loads(result.stdout.splitlines()[0]) == ["Infinity", "1e+300"]


def test_parse_int_of_a_huge_hexadecimal_number(work: Path) -> None:
    (work / "p.agency").write_text(f'node main() {{\n  print(parseInt("{"f" * 400}", 16))\n}}\n')
    result = agency("run", "--no-record", "p.agency")
    clean(result, 0)
    assert result.stdout.splitlines()[0] == "Infinity"


# -- checkpoint files ----------------------------------------------------------------------------


@pytest.fixture
def checkpoint(work: Path) -> dict[str, Any]:
    """Step 3 of a recorded run of `CHAT` (before its second `llm()`), as a checkpoint file's
    JSON."""
    (work / "chat.agency").write_text(CHAT)
    clean(agency("run", "chat.agency"), 0)
    clean(agency("export", "last:3", "-o", "cp.json"), 0)
    data: dict[str, Any] = json.loads((work / "cp.json").read_text())
    return data


def tampered(work: Path, data: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> str:
    changed = json.loads(json.dumps(data))
    edit(changed)
    (work / "bad.json").write_text(json.dumps(changed))
    result = agency("run", "--no-record", "chat.agency", "--checkpoint", "bad.json")
    clean(result, 2, "bad.json")
    assert "internal error" not in result.output
    return result.output


def test_the_untampered_checkpoint_runs(work: Path, checkpoint: dict[str, Any]) -> None:
    clean(agency("run", "--no-record", "chat.agency", "--checkpoint", "cp.json"), 0)


@pytest.mark.parametrize("frozen", [5, "x", [[1]], ["99999"]])
def test_machine_frozen_of_the_wrong_type(
    work: Path, checkpoint: dict[str, Any], frozen: Any
) -> None:
    # `revive` iterated it after every check had passed: TypeError, exit 70.
    out = tampered(work, checkpoint, lambda d: d["machine"].__setitem__("frozen", frozen))
    assert "frozen" in out or "heap entry" in out


def test_a_version_of_true_is_not_version_1(work: Path, checkpoint: dict[str, Any]) -> None:
    out = tampered(work, checkpoint, lambda d: d.__setitem__("version", True))
    assert "unsupported checkpoint version" in out


@pytest.mark.parametrize("message", [{"role": 5, "content": "x"}, {"content": "no role"}])
def test_a_message_without_a_role(
    work: Path, checkpoint: dict[str, Any], message: dict[str, Any]
) -> None:
    # It ran on, and a provider would have been sent a message with no role.
    out = tampered(work, checkpoint, lambda d: d["threads"]["threads"]["0"].append(message))
    assert "has no role" in out


def test_the_debugger_reads_only_the_source_a_checkpoint_was_taken_from(
    work: Path, checkpoint: dict[str, Any]
) -> None:
    from debugger.debug_command import checkpoint_source
    from runtime.api import continue_from

    assert checkpoint_source("cp.json") == "chat.agency"
    secret = work / "secret.txt"
    secret.write_text("password: hunter2\n")
    for path in (str(secret), "secret.txt"):
        checkpoint["source"]["path"] = path
        (work / "other.json").write_text(json.dumps(checkpoint))
        with pytest.raises(AgencyError, match="has changed since") as caught:
            checkpoint_source("other.json")  # parsed it as a program, its lines in the error
        assert "hunter2" not in str(caught.value)
        with pytest.raises(AgencyError, match="has changed since") as caught:
            continue_from("other.json", record=False)  # the public API, likewise
        assert "hunter2" not in str(caught.value)


# -- run stores ----------------------------------------------------------------------------------


def test_text_that_is_not_utf8_in_one_run_does_not_hide_the_others(work: Path) -> None:
    # sqlite3 raised on the first such value: `agency runs` failed for every run ("read failed:
    # Could not decode to UTF-8 column ...") instead of marking the one damaged.
    import sqlite3

    (work / "chat.agency").write_text(CHAT)
    clean(agency("run", "chat.agency"), 0)
    clean(agency("run", "chat.agency"), 0)
    with sqlite3.connect(work / ".agency" / "runs.db") as conn:
        first, second = (r for (r,) in conn.execute("SELECT id FROM runs ORDER BY created_at"))
        for column in ("config_json", "source_path"):
            conn.execute(
                f"UPDATE runs SET {column} = CAST(X'7b22ff223a317d' AS TEXT) WHERE id = ?", (first,)
            )
    listing = agency("runs")
    clean(listing, 0, first, second, "damaged")
    clean(agency("show", second), 0)
    clean(agency("replay", first), 1, first, "damaged")


# -- command lines -------------------------------------------------------------------------------


def test_a_huge_limit_before_click_parses_it(work: Path) -> None:
    # `agency runs --limit N` is answered before click (debugger.entry), which converted N with
    # int(): over 4,300 digits a traceback, exit 1.
    import subprocess
    import sys

    entry = [sys.executable, "-c", "from debugger.entry import main; main()"]
    proc = subprocess.run(
        [*entry, "runs", "--limit", "9" * 5_000], cwd=work, capture_output=True, text=True
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "--limit" in proc.stderr


@pytest.mark.parametrize("command", [["show"], ["export", "-o", "cp.json"], ["replay"], ["resume"]])
def test_a_run_id_that_is_not_utf8(work: Path, command: list[str]) -> None:
    # A non-UTF-8 argument arrives with lone surrogates; sqlite3 could not bind it (exit 70).
    (work / "chat.agency").write_text(CHAT)
    clean(agency("run", "chat.agency"), 0)
    clean(agency(*command, "r\udcff"), 2, "no run 'r\\udcff'")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["resume", ""], "give a run id"),  # was read as "the latest run"
        (["resume", "  "], "give a run id"),
        (["run", "chat.agency", "--checkpoint", ""], "--checkpoint: give a checkpoint file"),
    ],
    ids=["resume-empty", "resume-blank", "checkpoint-empty"],
)
def test_an_empty_argument_is_refused_not_taken_for_a_default(
    work: Path, args: list[str], says: str
) -> None:
    (work / "chat.agency").write_text(CHAT)
    clean(agency("run", "chat.agency"), 0)
    clean(agency(*args), 2, says)


def test_a_step_in_other_digits_and_a_huge_run_id(work: Path) -> None:
    (work / "chat.agency").write_text(CHAT)
    clean(agency("run", "chat.agency"), 0)
    clean(agency("show", "last:\u0663"), 2, "expected RUN or RUN:STEP")  # Arabic-Indic 3
    result = agency("show", "x" * 100_000)
    clean(result, 2, "no run 'xxx")
    assert len(result.output) < 300  # the id is not echoed whole


@pytest.mark.parametrize(
    "url", ["not a url", "http://[::1", "ftp://host/v1", "http://host:99999/v1", "http://\udcff/"]
)
def test_a_base_url_that_cannot_be_sent_to(work: Path, url: str) -> None:
    # `http://[::1` and a non-UTF-8 host were internal errors; the others failed at the
    # first llm() call, after five seconds of retries.
    (work / "chat.agency").write_text(CHAT)
    result = agency("run", "--no-record", "chat.agency", "--model", "openai/x", "--base-url", url)
    clean(result, 1, "is not an http:// or https:// URL with a host")
    assert "internal error" not in result.output


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_serve_on_a_port_out_of_range(work: Path, port: str) -> None:
    clean(agency("serve", "--port", port), 2, "--port")


# -- .test.json suites and the environment -------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("evaluationCriteria", 5, "must be a list of objects"),  # was an internal error
        ("argv", 5, "must be a list of strings"),  # was an internal error
        ("retry", 10**18, "must be a whole number from 0 to 100"),  # ran until killed
        ("retry", "x", "must be a whole number"),  # no retry
        ("timeoutMs", "x", "must be a number of milliseconds above 0"),  # no timeout
        ("timeoutMs", -5, "must be a number of milliseconds above 0"),
        ("fakeClock", "no", "must be true or false"),  # a true one
    ],
)
def test_a_case_field_of_the_wrong_type(work: Path, field: str, value: Any, says: str) -> None:
    from runtime.runs.testing import run_suite

    (work / "p.agency").write_text("node main() {\n  return 1\n}\n")
    case = {"nodeName": "main", "input": "", "expectedOutput": "2", field: value}
    (work / "p.test.json").write_text(json.dumps({"tests": [case]}))
    (outcome,) = run_suite(work / "p.test.json")
    assert not outcome.passed and says in outcome.detail, outcome.detail
    result = agency("test", "p.test.json")
    clean(result, 1, says)


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
def test_an_llm_timeout_that_is_no_number_of_seconds(work: Path, value: str) -> None:
    # Taken, then the first request failed ("__llm_call(): a number is too large").
    from runtime.errors import LLMError
    from runtime.llm.registry import resolve_model

    env = {"AGENCY_LLM_TIMEOUT": value, "OPENAI_API_KEY": "k"}
    with pytest.raises(LLMError, match="AGENCY_LLM_TIMEOUT must be a number of seconds"):
        resolve_model("openai/x", base_url="http://127.0.0.1:9/v1", env=env)


# -- programs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("filler", [";", "(", "a ", "1, "])
def test_a_program_of_too_many_tokens_stops_at_the_cap(
    monkeypatch: pytest.MonkeyPatch, filler: str
) -> None:
    # A 10 MB line of `;` (10 million tokens) was lexed whole before any error: 90 s, 2 GB.
    from runtime.errors import AgencySyntaxError
    from runtime.language.syntax import lexer, parse

    monkeypatch.setattr(lexer, "MAX_TOKENS", 1_000)
    with pytest.raises(AgencySyntaxError) as caught:
        parse("node main() {\n  let x = [" + filler * 5_000 + "\n}\n", "big.agency")
    messages = [d.message for d in caught.value.diagnostics]
    assert any("more than 1,000 tokens in one file" in m for m in messages), messages
    assert not any("end of file" in m for m in messages), messages  # the cut is not an error
    parse("node main() {\n" + "  print(1)\n" * 100 + "}\n", "small.agency")  # under the cap


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "--db", "LONG.db"],  # Path.exists() raised ENAMETOOLONG (exit 70)
        ["run", "p.agency", "--db", "LONG.db"],
        ["debugger", "--trace", "LONG.db", "--run", "last"],
        ["copy", "--from", "LONG.db", "--to", "other.db"],
        ["run", "LONG/p.agency"],
        ["check", "p.agency/LONG.agency"],  # a file where a directory should be
    ],
)
def test_a_path_the_system_refuses(work: Path, command: list[str]) -> None:
    (work / "p.agency").write_text('node main() {\n  print("hi")\n}\n')
    long = "a" * 300  # longer than a file name may be (255 bytes)
    result = agency(*[arg.replace("LONG", long) for arg in command])
    assert result.exit_code not in (0, 70), result.output
    assert "internal error" not in result.output
    assert ("too long" in result.output) or ("Not a directory" in result.output), result.output


def test_input_with_no_stdin_at_all(work: Path) -> None:
    # Started with descriptor 0 closed (`agency run p.agency <&-`), sys.stdin is None:
    # input() failed with "cannot use these arguments". It is the end of input, as /dev/null.
    import os
    import subprocess
    import sys

    (work / "p.agency").write_text('node main() {\n  const a = input("? ")\n  print(a.length)\n}\n')
    proc = subprocess.run(
        [sys.executable, "-c", "from debugger.cli import main; main()", "run", "p.agency"],
        cwd=work,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.close(0),  # noqa: PLW1509 - no threads in the child yet
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["0"]


@pytest.mark.parametrize("command", [["runs"], ["run", "chat.agency"]])
def test_a_negative_schema_version(work: Path, command: list[str]) -> None:
    # `runs` read it as a store; `run` migrated "up" from it and ran the first migration again
    # ("migration to schema v-4 failed: table runs already exists").
    import sqlite3

    (work / "chat.agency").write_text(CHAT)
    clean(agency("run", "chat.agency"), 0)
    with sqlite3.connect(work / ".agency" / "runs.db") as conn:
        conn.execute("UPDATE meta SET value = '-5' WHERE key = 'schema_version'")
    clean(agency(*command), 2, "the schema version -5 is not one agency writes")


@pytest.mark.parametrize("separator", ['""', '","'])
def test_split_is_held_to_the_array_cap(
    work: Path, monkeypatch: pytest.MonkeyPatch, separator: str
) -> None:
    # `"x".repeat(100_000_000).split("")` built 100M strings (1.7 GB) past the 64 Mi cap.
    monkeypatch.setenv("AGENCY_MAX_ARRAY_LENGTH", "70000")
    (work / "s.agency").write_text(
        f'node main() {{\n  const s = "x,".repeat(80000)\n  print(s.split({separator}).length)\n}}\n'
    )
    clean(agency("run", "--no-record", "s.agency"), 1, "longer than the 70,000")
    monkeypatch.setenv("AGENCY_MAX_ARRAY_LENGTH", "200000")
    clean(agency("run", "--no-record", "s.agency"), 0)
