"""Byte-level damage, as a disk or a careless edit makes it: a checkpoint file cut short, with
bytes changed, dropped or inserted anywhere, and a run store with bytes flipped inside one of
its pages. Reading either gives an `AgencyError` (one line, naming the file or the run) or a
result; never another exception. (`checkpoint_fuzz` and `store_fuzz` change values inside
well-formed files; these change the bytes.) Bounded: well under ten seconds together."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from runtime.errors import AgencyError
from tests.cli_helpers import agency, clean, plain_workdir

PROGRAM = """node main() {
  let total = 0
  let items = ["a", "b"]
  const cp = checkpoint()
  const answer = llm("Pick a number")
  items.push(answer)
  total = total + 1
  print(total, items)
}
"""

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    phases=(Phase.generate,),
    suppress_health_check=list(HealthCheck),
    database=None,
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder with the program, a recorded run of it in `.agency/runs.db` (its log folded
    into the file) and step 4 of it as `cp.json`."""
    work = tmp_path_factory.mktemp("byte-fuzz")
    with pytest.MonkeyPatch.context() as patch:
        plain_workdir(work, patch)
        (work / "p.agency").write_text(PROGRAM)
        clean(agency("run", "p.agency"), 0)
        clean(agency("export", "last:4", "-o", "cp.json"), 0)
    with sqlite3.connect(work / ".agency" / "runs.db") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    yield work


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` cut short, or with a few bytes changed, dropped or inserted."""
    kind = draw(st.sampled_from(["cut", "change", "drop", "insert"]))
    at = draw(st.integers(0, len(data) - 1))
    if kind == "cut":
        return data[:at]
    if kind == "drop":
        return data[:at] + data[at + draw(st.integers(1, 64)) :]
    junk = draw(st.binary(min_size=1, max_size=8))
    if kind == "insert":
        return data[:at] + junk + data[at:]
    return data[:at] + junk + data[at + len(junk) :]


def test_a_damaged_checkpoint_file_is_one_error(recorded: Path, tmp_path: Path) -> None:
    from runtime.language.program import load_program
    from runtime.vm.checkpoint_reading import load_file
    from runtime.vm.rebuild import rebuild

    program = load_program(recorded / "p.agency")
    original = (recorded / "cp.json").read_bytes()
    rebuild(program, load_file(str(recorded / "cp.json"), program))  # the undamaged one reads
    target = tmp_path / "cp.json"

    @FUZZ
    @given(st.data())
    def attempt(data: st.DataObject) -> None:
        target.write_bytes(data.draw(damaged(original)))
        try:
            # What `agency run --checkpoint` does before the machine runs.
            rebuild(program, load_file(str(target), program))
        except AgencyError as exc:
            assert str(exc) and "\n" not in str(exc)

    attempt()


def test_a_run_store_with_a_damaged_page_is_read_or_refused(recorded: Path, tmp_path: Path) -> None:
    from debugger.run_reading import runs_text, show_text

    store = tmp_path / "runs.db"
    original = (recorded / ".agency" / "runs.db").read_bytes()
    page = 16384 if len(original) % 16384 == 0 else 4096
    pages = len(original) // page

    @FUZZ
    @given(
        st.integers(1, pages - 1),
        st.lists(st.tuples(st.integers(0, page - 1), st.integers(0, 255)), min_size=1, max_size=32),
    )
    def attempt(number: int, flips: list[tuple[int, int]]) -> None:
        data = bytearray(original)
        for offset, value in flips:
            data[number * page + offset] = value
        for leftover in (tmp_path / "runs.db-wal", tmp_path / "runs.db-shm"):
            leftover.unlink(missing_ok=True)
        store.write_bytes(bytes(data))
        for read in (
            lambda: runs_text(str(store), 50, True),
            lambda: show_text("last", str(store), 0, True),
            lambda: show_text("last:2", str(store), 0, False),
        ):
            try:
                read()
            except AgencyError as exc:
                assert str(exc)

    attempt()
    shutil.rmtree(tmp_path, ignore_errors=True)
