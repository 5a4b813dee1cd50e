"""Superinstructions (runtime/vm/fuse.py) change how fast a program runs, never what it does.

A program runs step by step twice, with and without them: every step must be at the same
location with the same locals and the same write log, and the run must end the same way. The
fused code keeps every instruction but the first of each sequence where it was, so jumps into a
sequence, re-entered statements and rebuilt snapshots still find what the compiler emitted.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

import runtime.vm.link as link_module
from runtime.language.bytecode import OP_NAMES, STEP, STEP_NEXT
from runtime.language.program import compile_source
from runtime.vm.fuse import INT_FAST
from runtime.vm.machine import Machine

PROGRAMS = {
    "loops": """node main() {
  let i = 0
  let total = 0
  while (i < 20) {
    i = i + 1
    total = total + i * 2 - i % 3
    if (i > 3 && total < 100) {
      total += 1
    }
  }
  let xs = []
  for (k in range(5)) {
    xs.push(k)
  }
  for (x in xs) {
    if (x % 2 == 0) {
      total = total - x
    }
  }
  for (key, v in {a: 1, b: 2}) {
    total = total + v
  }
  return total
}
""",
    "mixed types": """node main() {
  let s = "a"
  let n = 1
  let f = 0.5
  let t = s + n
  n = n + f
  let big = 9007199254740993
  big = big * 3
  let z = null
  z = z + 1
  while (s < "aaa") {
    s = s + "a"
  }
  if (n == 1.5) {
    print("yes " + s + " " + big + " " + z)
  }
  return [s, t, n, big, z]
}
""",
    "calls": """def fib(n) {
  if (n < 2) {
    return n
  }
  return fib(n - 1) + fib(n - 2)
}

node main() {
  let r = fib(8)
  let q = r / 0
  return [r, q]
}
""",
    "errors": """def risky(n) {
  let m = n - 1
  let bad = m < 0
  if (bad) {
    return failure("negative")
  }
  let x = [1][m] + n / m
  return m
}

node main() {
  let a = risky(2)
  let b = risky(0)
  let c = risky(-1) catch 99
  let d = 0
  d = d + {}
  return [a, isFailure(b), c, d]
}
""",
    "pushes": """static const fixed = [1, 2]

node main() {
  let xs = []
  let i = 0
  while (i < 5) {
    xs.push(i)
    xs.push(xs)
    i = i + 1
  }
  let f = fixed
  let n = 3
  let frozen = f.push(n) catch "refused"
  return [xs.length, frozen]
}
""",
    "nested writes": """node main() {
  let big = 4503599627370490
  let k = 0
  let total = 0
  let f = 1.5
  let s = "x"
  while (k < 8) {
    k = k + 1
    big = big + k * 1000000000
    total = total - k % 3
    total = total + k * k
    f = f + k * f
    s = s + k * 2
  }
  let neg = -7
  neg = neg + neg % 4
  return [big, total, f, s, neg, big * big]
}
""",
}


class LogAll:
    """Stands in for the recorder: every write goes to the write log as readable text."""

    def __init__(self, wlog: list[Any]) -> None:
        self.wlog = wlog
        self.pushes: dict[int, Any] = {}  # (no list's push is logged by the machine itself)

    def enc_now(self, v: Any) -> Any:
        return ("value", repr(v))

    def enc_record(self, record: Any) -> Any:
        return repr(record)

    def log_frame(self, frame: Any, position: Any) -> None:
        self.wlog.append(("frame", frame.code.name, position))

    def log_set(self, obj: Any, key: Any, value: Any) -> None:
        self.wlog.append(("set", repr(obj), key, repr(value)))

    def log_splice(self, arr: Any, start: int, delete: int, items: Any) -> None:
        self.wlog.append(("splice", repr(arr), start, delete, repr(items)))

    def log_push(self, arr: Any, item: Any) -> None:
        self.wlog.append(("push", repr(arr), repr(item)))


def _trace(source: str, fused: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    if not fused:
        monkeypatch.setattr(link_module, "fuse", lambda code: None)
    program = compile_source(source, "fuse.agency")
    m = Machine(program)
    m.wlog = []
    m.rec = LogAll(m.wlog)
    m.on_step = lambda machine, kind: machine.wlog.append(("step", kind))  # type: ignore[union-attr]
    trace: list[Any] = []
    while not m.done:
        m.step()
        frame = m.frames[-1] if m.frames else None
        trace.append(
            (
                m.step_index,
                str(m.location),
                frame.pc if frame else None,
                frame.stmt_pc if frame else None,
                repr(sorted(frame.locals.items())) if frame else None,
                repr(m.wlog),
            )
        )
    trace.append((m.status, repr(m.result), m.error and m.error.message, m.output))
    monkeypatch.undo()
    return trace


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fused_runs_step_for_step_like_unfused(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _trace(PROGRAMS[name], False, monkeypatch)
    fused = _trace(PROGRAMS[name], True, monkeypatch)
    assert plain[-1][0] == "finished", plain[-1]
    assert len(plain) > 10
    assert fused == plain


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_unrecorded_runs_end_like_unfused(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with no recorder and no per-step hook takes the shortcuts `_trace` never does
    (a STEP_NEXT's derived write done without its instructions)."""

    def run(fused: bool) -> Any:
        if not fused:
            monkeypatch.setattr(link_module, "fuse", lambda code: None)
        m = Machine(compile_source(PROGRAMS[name], "fuse.agency"))
        m.run()
        monkeypatch.undo()
        return (m.status, repr(m.result), m.error and m.error.message, m.output, m.step_index)

    assert run(True) == run(False)


def test_fusing_keeps_every_other_instruction_in_place() -> None:
    plain = compile_source(PROGRAMS["loops"], "fuse.agency")
    fused = compile_source(PROGRAMS["loops"], "fuse.agency")
    Machine(fused)  # links, and so fuses
    for name, code in plain.functions.items():
        if code.file != "fuse.agency":
            continue
        after = fused.functions[name]
        assert len(after.ops) == len(code.ops)
        changed = [pc for pc, (a, b) in enumerate(zip(code.ops, after.ops)) if a != b]
        assert changed, "expected superinstructions in a loop-heavy function"
        for pc in changed:
            assert after.ops[pc] >= STEP_NEXT, OP_NAMES[after.ops[pc]]
            if after.ops[pc] == STEP_NEXT:
                assert code.ops[pc] == STEP
        # Every statement still starts at its STEP's pc: checkpoints re-enter there.
        assert [after.ops[pc] in (STEP, STEP_NEXT) for pc in code.step_pcs] == [True] * len(
            code.step_pcs
        )


INTS = [0, 1, -1, 2, -3, 7, 2**53, 2**53 + 1, -(2**53) - 1, 10**20, -(10**20)]


@pytest.mark.parametrize("fn", list(INT_FAST), ids=lambda f: f.__name__)
def test_int_shortcuts_give_javascripts_results(fn: Any) -> None:
    fast = INT_FAST[fn]
    for a in INTS:
        for b in INTS:
            want, got = fn(a, b), fast(a, b)
            if isinstance(want, float) and math.isnan(want):
                assert isinstance(got, float) and math.isnan(got), (fn.__name__, a, b)
            else:
                assert (got, type(got)) == (want, type(want)), (fn.__name__, a, b)
