"""A statement `x = a <op> b` on two ints is recorded as one entry, its step marker and its
write together, without the value (`R_STEP_WRITE`): a reader recomputes it from the state
before the step. A push is two entries, its container's shared head and the item. A run
recorded that way reads back exactly as the same run recorded a step at a time (where every
write carries its value): every state, location, depth and changed name. (All 612 conformance
programs were compared this way once, by hand: the only differences were their own clocks,
random numbers, run ids and memory use, which is why they are not a test here.)"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from runtime.language.int_ops import INT_OP_INDEX, INT_OPS
from runtime.language.program import compile_source
from runtime.record.format import (
    R_DERIVED,
    R_NESTED,
    R_OUTPUT,
    R_PUSHED,
    R_STEP_LOCAL,
    R_STEP_PUSH,
    R_STEP_WRITE,
    batch_entries,
)
from runtime.record.sqlite_store import SQLiteStore
from runtime.record.store import MemoryStore
from runtime.record.timeline import Timeline
from runtime.runs.recorder import Recorder
from runtime.runs.recording import record_program, start_run
from runtime.runs.runner import RunConfig, new_machine

LOOP = """node main() {
  let i = 0
  let total = 0
  let flag = false
  while (i < 300) {
    i = i + 1
    total = total + i
    flag = i % 7 == 0
    total = total * 3
    total = total % 1000003
  }
  return total
}
"""


def _record(src: str, per_step: bool, store: Any, then: Any = None) -> Timeline:
    """Record `src`; with `then`, the run stops at its interrupt and goes on answered `then`."""
    program = compile_source(src, "derived.agency")
    Recorder.per_step = per_step
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rec = record_program(program, RunConfig(model_spec="sim", root=tmp, quiet=True), store)
            if then is not None:
                assert rec.machine.status == "interrupted"
                rec.continue_run(then)
                assert rec.machine.status == "finished"
    finally:
        Recorder.per_step = False
    return rec.timeline


def _entries(tl: Timeline) -> Iterator[Any]:
    for batch in tl.store.batches(tl.run_id, tl.branch, 0, len(tl)):
        yield from batch_entries(batch.blob)[3]


def _same_reading(got: Timeline, want: Timeline) -> None:
    assert len(got) == len(want)
    n = len(want)
    for k in range(n):  # forward, a step at a time (the cursor reuses the state before)
        g, w = got.state_at(k), want.state_at(k)
        assert g == w or repr(g) == repr(w), f"step {k}"  # (a NaN is not equal to itself)
        assert got.location_at(k) == want.location_at(k)
        assert got.depth_at(k) == want.depth_at(k)
        assert got.changed_names(k) == want.changed_names(k), f"step {k}"
    fresh = Timeline(got.store, got.run_id, got.branch, locations=got.locations)
    for k in [n - 1, 0, n // 2, n // 3, 1, n - 2]:  # random reads, from keyframes
        g, w = fresh.state_at(k), want.state_at(k)
        assert g == w or repr(g) == repr(w), f"step {k}"
    assert list(got.markers_from(0)) == list(want.markers_from(0))


@pytest.mark.parametrize("sqlite", [False, True])
def test_a_loop_of_int_statements_reads_as_recorded_a_step_at_a_time(
    sqlite: bool, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "runs.db") if sqlite else MemoryStore()
    got = _record(LOOP, False, store)
    want = _record(LOOP, True, MemoryStore())
    entries = list(_entries(got))
    derived = [e for e in entries if type(e) is tuple and e[0] == R_STEP_WRITE]
    # four statements of five are `x = a <op> b` (`flag = …` is two operators); the steps where
    # the machine looked at its limits (a flush) log the marker and the write apart
    assert len(derived) >= 3 * 300
    assert not any(type(e) is tuple and e[0] == R_STEP_WRITE for e in _entries(want))
    _same_reading(got, want)
    total = 0
    for i in range(1, 301):
        total = (total + i) * 3 % 1000003
    last = got.state_at(len(got) - 2)  # (the end step has no frames)
    assert (last.frames[-1].locals["i"], last.frames[-1].locals["total"]) == (300, total)


NESTED_LOOP = """node main() {
  let total = 0
  let k = 3
  for (i in range(200)) {
    total = total + i * 2
    k = k - (i % 3)
    total = total + (k * i)
  }
  k = k + (total < 1)
  return [total, k]
}
"""


def test_a_statement_a_op_c_op_d_on_ints_is_one_entry_too() -> None:
    got = _record(NESTED_LOOP, False, MemoryStore())
    want = _record(NESTED_LOOP, True, MemoryStore())
    nested = [e for e in _entries(got) if type(e) is tuple and e[0] == R_STEP_WRITE]
    assert all(e[6] == R_NESTED for e in nested)
    assert len(nested) >= 3 * 200 - 10  # (but for the flushes)
    _same_reading(got, want)
    total, k = 0, 3
    for i in range(200):
        total = total + i * 2
        k = k - i % 3
        total = total + k * i
    last = got.state_at(len(got) - 2)
    # (a comparison is a boolean, not an int: `k + (total < 1)` ran its instructions: k + 1)
    assert (last.frames[-1].locals["total"], last.frames[-1].locals["k"]) == (total, k + 1)


@contextmanager
def _before_statement(src: str, steps: int) -> Iterator[tuple[Any, MemoryStore, Any, int]]:
    """A recorded run of `src` stepped `steps` times, to a statement's step before it runs:
    (the machine, its store, the recording, that step's marker, taken off the write log)."""
    program = compile_source(src, "s.agency")
    with tempfile.TemporaryDirectory() as tmp:
        machine = new_machine(program, RunConfig(model_spec="sim", root=tmp, quiet=True))
        store = MemoryStore()
        rec = start_run(program, machine, store)
        machine.step(steps)
        wlog = machine.wlog
        assert wlog is not None and type(wlog[-1]) is int
        yield machine, store, rec, wlog.pop()


def test_a_derived_write_that_ends_a_stopped_step_goes_on_in_the_next_batch() -> None:
    # A run stopped within a step stores the steps started so far (`finish`); when the last
    # one's marker is an R_STEP_WRITE, its write is the stopped step's, which goes on in the
    # next batch: stored there as an R_DERIVED, read on the state before it. (No program stops
    # that way today: a stop within a step comes after a step of the prelude's own.)
    source = "node main() {\n  let a = 1\n  a = a + 5\n  return a\n}\n"
    with _before_statement(source, 2) as (machine, store, rec, marker):  # `a = a + 5`
        entry = (R_STEP_WRITE, marker, "a", "a", 5, INT_OP_INDEX[INT_OPS["+"]], False)
        tl, step = _stopped_within_step(machine, rec, entry, (R_DERIVED, *entry[2:]))
        before, after = tl.state_at(step - 1), tl.state_at(step)
        assert before.frames[-1].locals["a"] == 1
        assert after.frames[-1].locals["a"] == 6 and after.output[-1:] == ("hi",)
        assert tl.changed_names(step) == {"a"}
        fresh = Timeline(store, rec.run_id, 0, locations=tl.locations)
        assert fresh.state_at(step) == after


def _stopped_within_step(machine: Any, rec: Any, entry: Any, alone: Any) -> tuple[Timeline, int]:
    """Log `entry` (a step marker with its write), then an output, and stop within that step:
    the write goes on in the next batch as `alone`. (The timeline, the step after it.)"""
    wlog = machine.wlog
    wlog.append(entry)
    wlog.append((R_OUTPUT, "hi"))  # the step goes on, and stops
    rec.recorder.flush_chunk(machine, at_marker=False)
    assert wlog[0] == alone
    machine.step_index += 1
    wlog.append(rec.recorder.marker("step"))
    rec.recorder.flush_chunk(machine)
    return rec.timeline, machine.step_index


PUSH_LOOP = """node main() {
  let xs = []
  let ys = [0]
  for (i in range(300)) {
    xs.push(i)
    let half = i % 2
    ys.push(half)
  }
  let label = "text"
  xs.push(label)
  xs.push([label])
  return [xs.length, ys.length]
}
"""


def test_a_push_statement_is_one_entry_read_on_the_state_before_it() -> None:
    got = _record(PUSH_LOOP, False, MemoryStore())
    want = _record(PUSH_LOOP, True, MemoryStore())
    pushes = [e for e in _entries(got) if type(e) is tuple and e[0] == R_STEP_PUSH]
    assert len(pushes) >= 2 * 299 - 10  # (the first push of a list goes the long way)
    assert {e[3] for e in pushes} == {"i", "half", "label"}
    _same_reading(got, want)
    lines = [getattr(want.location_at(k), "line", None) for k in range(len(want))]
    k = lines.index(5, 20)  # a step of `xs.push(i)`, some way into the loop
    assert got.changed_names(k + 1) == want.changed_names(k + 1) == {"xs"}


def test_a_frozen_list_is_not_pushed_to_by_the_one_entry_push() -> None:
    source = """node main() {
  let xs = []
  let i = 0
  while (i < 5) {
    xs.push(i)
    if (i == 3) {
      Object.freeze(xs)
    }
    i = i + 1
  }
  return xs.length
}
"""
    tl = _record(source, False, MemoryStore())
    last = tl.state_at(len(tl) - 1)
    assert last.status == "failed" and "frozen" in str(last.error)
    assert tl.state_at(len(tl) - 2).frames[-1].locals["xs"] == [0, 1, 2, 3]


def test_a_push_that_ends_a_stopped_step_goes_on_in_the_next_batch() -> None:
    # As a derived write does (above): stored there as an R_PUSHED, read on the state before it.
    source = "node main() {\n  let xs = [7]\n  let v = 5\n  xs.push(v)\n  return xs\n}\n"
    with _before_statement(source, 3) as (machine, store, rec, marker):  # `xs.push(v)`
        xs = machine.frames[-1].locals["xs"]
        oid = rec.recorder.oid_of(xs)
        xs.append(5)
        tl, step = _stopped_within_step(
            machine, rec, (R_STEP_PUSH, marker, oid, "v"), (R_PUSHED, oid, "v")
        )
        before, after = tl.state_at(step - 1), tl.state_at(step)
        assert before.frames[-1].locals["xs"] == [7]
        assert after.frames[-1].locals["xs"] == [7, 5] and after.output[-1:] == ("hi",)
        assert tl.changed_names(step) == {"xs"}
        fresh = Timeline(store, rec.run_id, 0, locations=tl.locations)
        assert fresh.state_at(step) == after


LOOP_HEADS = """node main() {
  let total = 0
  for (i in range(250)) {
    total = total + i
  }
  let seen = []
  for (v in [3, "three", [3], { n: 3 }, null, 2.5, [[1]], 7]) {
    seen.push(v)
  }
  for (c in "abc") {
    total = total + 1
  }
  for (j in range(2)) {
  }
  return [total, seen.length]
}
"""


def test_a_loop_head_is_its_step_and_its_variable_in_one_entry() -> None:
    # `for (i in …)`: the head's step and `i`'s name are one entry, the value the next
    # (R_STEP_LOCAL), whatever the value is (a number, a string, a list, an object, null);
    # a loop's last test, which ends it, is a marker alone.
    got = _record(LOOP_HEADS, False, MemoryStore())
    want = _record(LOOP_HEADS, True, MemoryStore())
    heads = [e for e in _entries(got) if type(e) is tuple and e[0] == R_STEP_LOCAL]
    assert {e[2] for e in heads} == {"i", "v", "c", "j"}
    assert len(heads) >= 250 + 8 + 3 + 2 - 10  # (steps where the machine flushed go apart)
    assert not any(type(e) is tuple and e[0] == R_STEP_LOCAL for e in _entries(want))
    _same_reading(got, want)
    last = got.state_at(len(got) - 2)
    assert last.frames[-1].locals["total"] == sum(range(250)) + 3
    lines = [getattr(want.location_at(k), "line", None) for k in range(len(want))]
    k = lines.index(3, 20)  # a step of the loop head, some way into the loop
    assert got.changed_names(k + 1) == want.changed_names(k + 1) == {"i"}


def test_a_loop_head_that_ends_a_stopped_step_goes_on_in_the_next_batch() -> None:
    # As a derived write does (above): its marker ends the batch, and its variable's write,
    # name and value, begins the next.
    source = "node main() {\n  let x = 1\n  x = 2\n  return x\n}\n"
    with _before_statement(source, 2) as (machine, store, rec, marker):  # `x = 2`
        wlog = machine.wlog
        machine.frames[-1].locals["x"] = "four"
        wlog.append((R_STEP_LOCAL, marker, "x"))
        wlog.append("four")
        wlog.append((R_OUTPUT, "hi"))  # the step goes on, and stops
        rec.recorder.flush_chunk(machine, at_marker=False)
        assert wlog[:2] == ["x", "four"]
        machine.step_index += 1
        wlog.append(rec.recorder.marker("step"))
        rec.recorder.flush_chunk(machine)
        tl, step = rec.timeline, machine.step_index
        before, after = tl.state_at(step - 1), tl.state_at(step)
        assert before.frames[-1].locals["x"] == 1
        assert after.frames[-1].locals["x"] == "four" and after.output[-1:] == ("hi",)
        assert tl.changed_names(step) == {"x"}
        fresh = Timeline(store, rec.run_id, 0, locations=tl.locations)
        assert fresh.state_at(step) == after


_VARS = ["a", "b", "c"]


@st.composite
def _stmt(draw: Any, depth: int = 0) -> str:
    v, w = draw(st.sampled_from(_VARS)), draw(st.sampled_from(_VARS))
    n = draw(st.integers(-9, 9))
    op = draw(st.sampled_from(["+", "-", "*", "%", "<", "==", "/"]))
    u = draw(st.sampled_from(_VARS))
    op2 = draw(st.sampled_from(["+", "-", "*", "%", "<", "/"]))
    kinds = ["local", "const", "mixed", "call", "push", "add", "nested", "nested-local"]
    kinds += ["while", "if", "for", "for-var", "for-each"] if depth < 2 else []
    kind = draw(st.sampled_from(kinds))
    if kind == "local":
        return f"{v} = {v} {op} {w}"
    if kind == "const":
        return f"{v} = {w} {op} {n}"
    if kind == "nested":  # `a <op> (c <op> d)`: one entry too, when both are ints
        return f"{v} = {v} {op} ({w} {op2} {n})"
    if kind == "nested-local":
        return f"{v} = {w} {op} ({u} {op2} {v})"
    if kind == "mixed":  # not an int: the write keeps its value
        return f'{v} = {w} {op} "{n}"' if op == "+" else f"{v} = {w} {op} 0.5"
    if kind == "call":
        return f"{v} = twice({w})"
    if kind == "push":  # an append, of a number or of a new list
        return f"xs.push({v})" if n % 2 else f"xs.push([{v}, {w}])"
    if kind == "add":
        return f"seen.add({v} % 3)"
    inner = "\n".join(draw(st.lists(_stmt(depth + 1), min_size=1, max_size=3)))
    if kind == "if":
        return f"if ({v} > {n}) {{\n{inner}\n}}"
    if kind == "for":
        return f"for (f{depth} in range({n}, {n + 3})) {{\n{v} = {v} + f{depth}\n{inner}\n}}"
    if kind == "for-var":  # a variable of the function as a loop's (the loop's own), or a
        # range of fractions
        start = f"{n} + 0.5" if n % 3 == 0 else str(n)
        return f"for ({v} in range({start}, {n + 3})) {{\n{inner}\n}}"
    if kind == "for-each":  # numbers and a list as the loop variable's values
        return f"for ({v} in [{n}, [{w}], {u} + 1]) {{\n{inner}\n}}"
    counter = f"k{depth}"
    return f"let {counter} = 0\nwhile ({counter} < 3) {{\n{counter} = {counter} + 1\n{inner}\n}}"


@st.composite
def _program(draw: Any) -> str:
    body = "\n".join(draw(st.lists(_stmt(), min_size=1, max_size=6)))
    return (
        "def twice(x: any) {\n  let y = x\n  y = y * 2\n  return y\n}\n"
        f"node main() {{\nlet a = 1\nlet b = 2\nlet c = 3\nconst xs = []\nconst seen = new Set()\n"
        f"{body}\nreturn [a, b, c, xs, seen.size]\n}}\n"
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=_program())
def test_generated_programs_read_as_recorded_a_step_at_a_time(src: str) -> None:
    note(src)
    got = _record(src, False, MemoryStore())
    want = _record(src, True, MemoryStore())
    _same_reading(got, want)


CALLS_THEN_LOOP = """node main() {
  let said = ""
  let k = 0
  while (k < 40) {
    said = llm("say something")
    k = k + 1
  }
  let i = 0
  while (i < 6000) {
    i = i + 1
  }
  return i
}
"""


def test_batches_keep_to_the_chunk_limit_after_steps_stored_at_once() -> None:
    # An llm() call's step is stored as soon as it ends (`Recorder.mark`), outside the
    # machine's own looks at the write log; the rate it then measures must start there, or a
    # loop after many calls was stored as one batch at the end of the run.
    sizes: list[int] = []

    class Sizes(MemoryStore):
        def append_batch(self, run: str, branch: int, first: int, last: int, blob: Any) -> None:
            sizes.append(len(batch_entries(blob)[3]))
            super().append_batch(run, branch, first, last, blob)

    _record(CALLS_THEN_LOOP, False, Sizes())
    assert max(sizes) <= Recorder.chunk_limit
    assert len(sizes) >= 6000 * 2 // Recorder.chunk_limit + 40


@given(a=st.integers(-(2**60), 2**60), b=st.integers(-(2**60), 2**60))
def test_the_int_remainder_takes_the_dividends_sign_as_javascript_does(a: int, b: int) -> None:
    got = INT_OPS["%"](a, b)
    if b == 0:
        assert got != got  # NaN
    else:  # a - b * trunc(a / b), in exact integers
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        assert got == a - b * quotient and type(got) is int
