"""Guards (`guard(cost:, time:) { … }`), `saveDraft` and `finalize`: what the conformance
programs in tests/programs/guards cannot show (located errors, the trip's interrupt payload)."""

from __future__ import annotations

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.program import compile_source
from runtime.llm.mock import MockModel
from runtime.runs.runner import decision_from
from runtime.vm.builtins import World
from runtime.vm.machine import Machine
from runtime.vm.values import to_plain
from runtime.vm.writelog import HALTED, INTERRUPTED


def _diagnostics(source: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AgencySyntaxError) as info:
        compile_source(source, "prog.agency")
    return [(d.message, d.span.line, d.span.col) for d in info.value.diagnostics]


def test_a_second_finalize_is_reported_where_it_is() -> None:
    source = "def f() {\n  return 1\n  finalize { return 2 }\n  finalize { return 3 }\n}\n"
    found = _diagnostics(source + "node main() { return f() }\n")
    assert ("a function or block can have only one `finalize`", 4, 3) in found


def test_finalize_as_needs_a_name() -> None:
    found = _diagnostics("def f() {\n  return 1\n  finalize as { return 2 }\n}\n")
    assert any(line == 3 and "finalize as" in msg for msg, line, _ in found)


def test_finalize_outside_a_function_is_reported() -> None:
    found = _diagnostics("finalize { print(1) }\nnode main() { return 1 }\n")
    assert ("`finalize` outside a function", 1, 1) in found


GUARDED = """
node main() {
  const r = guard(cost: 0.000001, label: "budget") {
    saveDraft("half")
    const a = llm("one")
    return a
  }
  return [isSuccess(r), r.value]
}
"""


def _machine(tmp_path: object) -> Machine:
    program = compile_source(GUARDED, "prog.agency")
    model = MockModel([{"return": "pong"}], synthetic_usage=True)
    return Machine(program, "main", [], {}, model=model, world=World(root=tmp_path, quiet=True))


def test_an_unhandled_trip_waits_for_the_user_with_its_payload(tmp_path: object) -> None:
    m = _machine(tmp_path)
    m.run()
    assert m.status == INTERRUPTED
    pending = to_plain(m.pending)
    assert pending["effect"] == "std::guard"
    data = pending["data"]
    assert (data["dimension"], data["limit"], data["label"]) == ("cost", 0.000001, "budget")
    assert data["spent"] > data["limit"]
    assert data["draftValue"] == "half"
    m.answer_interrupt(decision_from("reject", None))
    m.run()
    assert m.status == HALTED
    assert to_plain(m.result) == [True, "half"]


def test_the_user_can_grant_more_budget(tmp_path: object) -> None:
    m = _machine(tmp_path)
    m.run()
    m.answer_interrupt(decision_from("approve", {"maxCost": 1}))
    m.run()
    assert m.status == HALTED
    assert to_plain(m.result) == [True, "pong"]
