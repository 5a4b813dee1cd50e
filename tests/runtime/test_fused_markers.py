"""Fused step markers: a run reads back the same whichever way its markers are stored.

At full speed the machine writes one `FUSED` entry for a step's marker and the local its
statement stores (`x = a op b`, a loop head; `runtime.vm.fuse`, `runtime.record.format`), then the
value. Two properties pin it down:

- Reading: every batch of a recorded run rewritten as it was stored before (`marker, name,
  value`, version `BATCH_LOCALS`) reads back exactly as stored, for every conformance program:
  the same states, locations, kinds, depths and writes at every step.
- Writing: a program recorded with fused entries and without them (`fuse._STORES` empty) logs
  the same entries once a fused one is spelled out, for the corners of fused entries (an
  operator that fails after the marker, a loop that ends, a value that is a container).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import conformance_cases
import pytest

from runtime.errors import AgencyError
from runtime.language.program import compile_source
from runtime.record.format import (
    BATCH_FUSED,
    BATCH_LOCALS,
    BlobError,
    batch_entries,
    decode_batch,
    encode_record,
    fused_parts,
)
from runtime.record.raw_state import DecodedBatch
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore
from runtime.record.timeline import Timeline
from runtime.runs.recorder import _last_marker
from runtime.runs.recording import record_program
from runtime.runs.runner import RunConfig
from runtime.vm import fuse as fuse_module
from runtime.vm.limits import MAX_STRING_ENV, SMALL

MAX_STEPS = 3000  # compared per run


def _steps(n: int) -> list[int]:
    return list(range(n)) if n <= MAX_STEPS else sorted({*range(2000), *range(n - 1000, n)})


def _reads(tl: Timeline, steps: list[int]) -> list[str]:
    """What the timeline reads at `steps`, as text (NaN is then equal to itself)."""
    return [
        repr((tl.location_at(k), tl.kind_at(k), tl.depth_at(k), tl.writes_at(k), tl.state_at(k)))
        for k in steps
    ]


def _spelled_out(entries: list[Any]) -> list[Any]:
    """A batch's entries with each `FUSED` one as its marker and its name."""
    out: list[Any] = []
    for e in entries:
        if type(e) is bytes:
            out.extend(fused_parts(e))
        else:
            out.append(e)
    return out


def _check_reading(store: MemoryStore, run_id: str) -> int:
    """Rewrite the run's batches without fused entries; every read must stay the same."""
    tl = Timeline.open(store, run_id)
    steps = _steps(len(tl))
    want = _reads(tl, steps)
    fused = 0
    for branch in store._runs[run_id].branches.values():  # noqa: SLF001
        for i, (first, last, blob) in enumerate(branch.batches):
            head0, head1, head2, entries, _ = batch_entries(blob)
            fused += sum(type(e) is bytes for e in entries)
            plain = encode_record((head0, head1, head2, _spelled_out(entries), BATCH_LOCALS))
            branch.batches[i] = (first, last, plain)
    again = Timeline.open(store, run_id)
    assert _reads(again, steps) == want
    for k in steps[::-97]:  # each from its keyframe: fresh timelines, nothing cached
        assert _reads(Timeline.open(store, run_id), [k]) == [want[steps.index(k)]], k
    return fused


def _logged(program_source: str, fused: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every entry a recording of the program stored, fused ones spelled out."""
    if not fused:
        monkeypatch.setattr(fuse_module, "_STORES", {})
    try:
        store = MemoryStore()
        program = compile_source(program_source, "fused.agency")
        rec = record_program(program, RunConfig(model_spec="sim", quiet=True), store)
    finally:
        monkeypatch.undo()
    out: list[Any] = [rec.machine.status]
    for _, _, blob in store._runs[rec.run_id].branches[0].batches:  # noqa: SLF001
        out.extend(_spelled_out(batch_entries(blob)[3]))
    if fused:
        assert _check_reading(store, rec.run_id) > 1000
    return repr(out)


_PARAMS = conformance_cases.params()


@pytest.mark.parametrize(("suite", "index"), _PARAMS)
def test_conformance_runs_read_back_the_same_without_fused_markers(
    suite: str, index: int, tmp_path: Path
) -> None:
    case = conformance_cases.load(suite, index)
    test = case.test
    work = tmp_path / "work"
    work.mkdir()
    config = RunConfig(
        node=test.get("nodeName", "main"),
        args=case.args,
        named=case.named,
        mocks=test.get("llmMocks"),
        root=str(work),
        quiet=True,
        fetch_mocks=case.fetch_mocks,
    )
    if config.mocks is None:
        config.model_spec = "sim"
    store = MemoryStore()
    try:
        rec = record_program(case.program, config, store, answer=case.answers())
    except AgencyError as exc:
        pytest.skip(f"run raised {type(exc).__name__} (not a timeline matter): {exc}")
    _check_reading(store, rec.run_id)


CORNERS = """
def grow(s, more) {
  let out = s + more
  return out
}

def risky(n) {
  let total = 0
  let i = 0
  while (i < n) {
    i = i + 1
    total = total + i * 2
  }
  return total
}

node main() {
  let xs = []
  for (i in range(3000)) {
    xs.push(i)
  }
  let total = 0
  for (x in xs) {
    if (x % 3 == 0) {
      total += x
    }
  }
  let rows = [[1], {a: 2}, "s", 4.5, null, true]
  let seen = []
  for (r in rows) {
    seen.push(r)
  }
  let j = 0
  let text = "a"
  while (j < 40) {
    j = j + 1
    text = text + j
    let joined = xs + 1
  }
  let k = 0
  let acc = "x"
  let chunk = "0123456789012345678901234567890123456789"
  while (k < 3000) {
    k = k + 1
    let half = k / 4
    let big = k * 9007199254740993
    acc = grow(acc, chunk) catch "x"
  }
  return risky(2000) + total
}
"""


def test_corners_log_the_same_fused_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_STRING_ENV, str(SMALL))  # `acc + chunk` fails now and then
    fused = _logged(CORNERS, True, monkeypatch)
    monkeypatch.setenv(MAX_STRING_ENV, str(SMALL))
    assert fused == _logged(CORNERS, False, monkeypatch)
    assert fused.startswith("['finished'")


def test_an_operator_that_fails_after_the_marker_leaves_its_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `x = a op b` fails in its operator: the step began, its marker is recorded, no write.
    source = """node main() {
  let i = 0
  let text = "0123456789"
  while (i < 3000) {
    i = i + 1
    if (i > 1500) {
      text = text + text
    }
  }
  return text
}
"""
    monkeypatch.setenv(MAX_STRING_ENV, str(SMALL))
    fused = _logged(source, True, monkeypatch)
    monkeypatch.setenv(MAX_STRING_ENV, str(SMALL))
    assert fused == _logged(source, False, monkeypatch)
    assert fused.startswith("['failed'")
    monkeypatch.setenv(MAX_STRING_ENV, str(SMALL))
    store = SQLiteStore(tmp_path / "runs.db")
    rec = record_program(compile_source(source, "f.agency"), RunConfig(model_spec="sim"), store)
    steps = _steps(len(rec.timeline))
    want = _reads(rec.timeline, steps)
    store.close()
    again = SQLiteStore(tmp_path / "runs.db")
    try:
        assert _reads(Timeline.open(again, rec.run_id), steps) == want
    finally:
        again.close()


def test_fused_batches_decode_and_older_versions_still_read() -> None:
    entries = [8, b"16\x00x", 7, (6, "f", "def", ("n",), {}, 1, 1), b"24\x00n", "a", (7,), 32]
    first, before, after, got = decode_batch(encode_record((5, 1, 1, entries, BATCH_FUSED)))
    assert (first, before, after) == (5, 1, 1)
    assert got == [
        8,
        16,
        (1, 0, "x", 7),
        (6, "f", "def", ("n",), {}, 1, 1),
        24,
        (1, 1, "n", "a"),
        (7,),
        32,
    ]
    batch = DecodedBatch(encode_record((5, 1, 1, entries, BATCH_FUSED)))
    assert batch.marks == [0, 1, 4, 7]
    assert [batch.marker(s) for s in range(5, 9)] == [8, 16, 24, 32]
    assert batch.record(6) == (2, 0, (), 1)
    assert batch.record(7) == (3, 0, ((1, 0, "x", 7), (6, "f", "def", ("n",), {}, 1, 1)), 2)
    assert batch.record(8) == (4, 0, ((1, 1, "n", "a"), (7,)), 1)
    # a batch of the version before reads as it did
    old = [8, "x", 7, 16]
    assert decode_batch(encode_record((5, 1, 1, old, BATCH_LOCALS)))[3] == [8, (1, 0, "x", 7), 16]
    for damaged in ([8, b"16x", 7], [8, b"\x00x", 7], [8, b"16\x00", 7], [8, b"16\x00x"]):
        with pytest.raises(BlobError, match="damaged step batch"):
            decode_batch(encode_record((5, 1, 1, damaged, BATCH_FUSED)))
        with pytest.raises(BlobError, match="damaged step batch"):
            DecodedBatch(encode_record((5, 1, 1, damaged, BATCH_FUSED)))


def test_the_last_marker_of_a_log_may_be_fused() -> None:
    # A run stopped mid-step stores the log up to its last marker; a fused one is that marker.
    log = [8, "x", 16, b"24\x00y", 7, (6, "f", "def", (), {}, 1, 1), "z", 24]
    assert _last_marker(log) == (3, 1)
    assert _last_marker([8, b"24\x00y", 7, (6, "f", "def", (), {}, 1, 1)]) == (1, 1)
