"""An append that a process was performing when it died is neither repeated nor lost.

An overwrite shows whether it happened (the file holds exactly these bytes), an append does
not: the file's end may be an earlier append's. So the journal notes the file's size before
each append, and a resumed run checks the one append in doubt against it. Each case stops the
recording process at one point of the third append (before its note, between its note and the
write, between the write and its journal entry) and resumes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.language.program import load_program
from runtime.record.sqlite_store import SQLiteStore
from runtime.runs.journal import StoreJournal
from runtime.runs.processes import mark_running
from runtime.runs.recording import start_run
from runtime.runs.resume import resume_run
from runtime.runs.runner import RunConfig, new_machine
from runtime.vm.effects import BEFORE
from runtime.vm.writelog import HALTED

PROGRAM = """node main() {
  let n = 0
  for (i in range(5)) {
    write("log.txt", "line ${i}\\n", mode: "append") with approve
    n = n + 1
  }
  return n
}
"""
EXPECTED = "".join(f"line {i}\n" for i in range(5))


class Died(BaseException):
    """The recording process is gone (raised where a kill would land)."""


def _die_at_third_append(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    puts: list[str] = []
    original = StoreJournal.put

    def put(self: StoreJournal, key: str, entry: dict[str, Any]) -> None:
        note = key.endswith(BEFORE)
        if not note:
            puts.append(key)
        if point == "before the note" and note and len(puts) == 2:
            raise Died
        original(self, key, entry)
        if point == "after the note" and note and len(puts) == 2:
            raise Died

    monkeypatch.setattr(StoreJournal, "put", put)
    if point == "after the write":
        appended = []

        def put_after(self: StoreJournal, key: str, entry: dict[str, Any]) -> None:
            if not key.endswith(BEFORE):
                appended.append(key)
                if len(appended) == 3:
                    raise Died  # written to the file, not yet to the journal
            original(self, key, entry)

        monkeypatch.setattr(StoreJournal, "put", put_after)


@pytest.mark.parametrize("point", ["before the note", "after the note", "after the write"])
def test_the_append_in_doubt_happens_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    source = tmp_path / "p.agency"
    source.write_text(PROGRAM)
    program = load_program(str(source))
    with SQLiteStore(tmp_path / "runs.db") as store:
        machine = new_machine(program, RunConfig(model_spec="sim", root=str(tmp_path), quiet=True))
        rec = start_run(program, machine, store, {"provider": "sim", "model": "sim", "spec": "sim"})
        mark_running(store, rec.run_id, tmp_path, program)
        machine.host.journal = StoreJournal(store, rec.run_id)
        with monkeypatch.context() as patch:
            _die_at_third_append(patch, point)
            with pytest.raises(Died):
                machine.run()
        store.flush()
        machine.wlog = None  # the process is gone: nothing more is recorded
        store.update_run(rec.run_id, status="interrupted")
        written = (tmp_path / "log.txt").read_text()
        assert written.count("\n") == (3 if point == "after the write" else 2)

        m = resume_run(store, store.get_run(rec.run_id))
        assert m.status == HALTED, m.error
        assert m.result == 5
        assert (tmp_path / "log.txt").read_text() == EXPECTED
