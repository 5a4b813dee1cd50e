"""A conditional breakpoint's condition read along a walk forward (`Timeline.scope_reader`)
sees exactly what a read at each step (`names_at`) sees, across batches and restores (a state
replaced mid-run); `c` stops where a step-by-step reading says, with or without
the write index, and still reports progress and takes Esc."""

from __future__ import annotations

import random

from debugger.expressions import compile_expression, scope_of
from debugger.session import Session
from tests.debugger.conftest import DICE, DICE_MOCKS, PROGRAMS, make_session

SUMS = PROGRAMS / "sums.agency"  # a 3,000-iteration loop: 9,000 steps, a few batches


def loop_session() -> Session:
    return make_session(SUMS)


def reference(s: Session, names: set[str], step: int) -> dict[str, object]:
    return scope_of(s.timeline.names_at(step, names))


def test_the_reader_sees_what_names_at_sees() -> None:
    for s, names in (
        (loop_session(), {"i", "total"}),
        (make_session(DICE, DICE_MOCKS), {"counter", "result", "cp"}),
    ):
        n = len(s.timeline)
        steps = list(range(n))
        read = s.timeline.scope_reader(names)
        assert [read(j) for j in steps] == [reference(s, names, j) for j in steps]
        rng = random.Random(7)
        walk = sorted(rng.sample(steps, min(n, 400)))
        read = s.timeline.scope_reader(names)
        assert [read(j) for j in walk] == [reference(s, names, j) for j in walk]
        shuffled = rng.sample(steps, min(n, 200))  # any order is served too
        assert [read(j) for j in shuffled] == [reference(s, names, j) for j in shuffled]


def stops_step_by_step(s: Session, line: int, text: str) -> int | None:
    """Where `c` from step 0 should stop: read the condition at every step, one at a time."""
    expr = compile_expression(text)
    for j in range(s.first + 1, s.last + 1):
        loc = s.timeline.location_at(j)
        if loc is not None and loc.line == line:
            try:
                if expr.evaluate(reference(s, set(expr.names), j)):
                    return j
            except Exception:  # noqa: BLE001 - not in scope: does not hold
                continue
    return None


def test_c_stops_where_a_step_by_step_reading_says() -> None:
    for indexed in (False, True):
        s = loop_session()
        if indexed:
            s.build_index(None, None)
        s.break_spec("6 if i % 700 == 699 && total > 0")
        want = stops_step_by_step(s, 6, "i % 700 == 699 && total > 0")
        assert want is not None
        stops = []
        while True:
            move = s.continue_forward(None, None)
            if not move.reason.startswith("breakpoint"):
                break
            stops.append(move.step)
        assert stops[0] == want
        assert [s.timeline.names_at(j, {"i"}).frames[-1].locals["i"] for j in stops] == [
            699,
            1399,
            2099,
            2799,
        ]


def test_a_long_walk_reports_progress_and_takes_esc() -> None:
    s = loop_session()
    s.break_spec("6 if i == 2999")
    seen: list[tuple[int, int]] = []
    move = s.continue_forward(
        lambda: len(seen) >= 1, lambda done, total: seen.append((done, total))
    )
    assert move.reason == "cancelled" and s.step == s.first
    assert seen and seen[0][1] >= len(s.timeline) - 2
    move = s.continue_forward(None, None)
    assert move.reason.startswith("breakpoint")


def test_a_compiled_condition_reads_as_the_tree_walk_does() -> None:
    from debugger.expressions import _Evaluator

    scopes = [
        {"i": 3, "total": 6, "xs": [1, 2, 3], "o": {"a": {"b": 2}}, "s": "hi", "n": None},
        {"i": 0, "total": 0, "xs": [], "o": {}, "s": "", "n": 1},
        {"i": "3"},
        {},
    ]
    texts = [
        "i == 3",
        "i % 2 == 1 && total > 5",
        "!(i > 2) || s == 'hi'",
        "n ?? i",
        "xs[0] + xs.length",
        "o.a?.b == 2",
        "o.a.b",
        "xs[i - 1]",
        "undefined == n",
        "i + '!'",
        "xs.includes(2)",  # a call: walked, not compiled
    ]
    for text in texts:
        expr = compile_expression(text)
        assert (expr.fast is None) == (text == "xs.includes(2)")
        for scope in scopes:
            got: object
            want: object
            try:
                want = _Evaluator(scope).eval(expr.tree)
            except Exception as exc:  # noqa: BLE001 - the same error either way
                want = (type(exc), str(exc))
            try:
                got = expr.evaluate(scope)
            except Exception as exc:  # noqa: BLE001
                got = (type(exc), str(exc))
            assert got == want, (text, scope)


def test_reverse_continue_reads_stretches_forward_and_stops_where_it_should() -> None:
    for indexed in (False, True):
        s = loop_session()
        if indexed:
            s.build_index(None, None)
        s.break_spec("6 if i % 700 == 699 && total > 0")
        s.goto(s.last)
        stops = []
        while True:
            move = s.reverse_continue(None, None)
            if not move.reason.startswith("breakpoint"):
                break
            stops.append(move.step)
        assert [s.timeline.names_at(j, {"i"}).frames[-1].locals["i"] for j in stops] == [
            2799,
            2099,
            1399,
            699,
        ]
