"""The concurrency forms parse to the calls the runtime runs, and bad ones get located
errors: `fork [ … ]` comprehensions, `parallel`/`seq` blocks, thread options and values."""

from __future__ import annotations

import pytest

from runtime.errors import AgencySyntaxError
from runtime.language.syntax import ast as A
from runtime.language.syntax import parse


def errors(source: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AgencySyntaxError) as info:
        parse(source, "t.agency")
    return [(d.message, d.span.line, d.span.col) for d in info.value.diagnostics]


def body_of(source: str) -> tuple[A.Stmt, ...]:
    program = parse(source, "t.agency")
    node = program.items[0]
    assert isinstance(node, A.FuncDecl) and node.body is not None
    return node.body.body


def test_fork_comprehension_is_a_call_with_a_block() -> None:
    (stmt,) = body_of("node main() {\n  const r = forkShared [f(x) for x in xs if x > 1]\n}")
    assert isinstance(stmt, A.VarDecl) and isinstance(stmt.value, A.Call)
    call = stmt.value
    assert call.callee == A.Name("fork")
    assert [a.name for a in call.args] == [None, "shared"]
    assert isinstance(call.args[0].value, A.ListComp) and call.block is not None


def test_fork_indexing_stays_indexing() -> None:
    (stmt,) = body_of("node main() {\n  const r = fork[0]\n}")
    assert isinstance(stmt, A.VarDecl) and isinstance(stmt.value, A.Index)


def test_parallel_arms_run_between_branch_calls() -> None:
    (block,) = body_of("node main() {\n  parallel {\n    let a = f()\n    seq { g() }\n  }\n}")
    assert isinstance(block, A.Block)
    calls = [
        s.expr.callee.id
        for s in block.body
        if isinstance(s, A.ExprStmt)
        and isinstance(s.expr, A.Call)
        and isinstance(s.expr.callee, A.Name)
    ]
    assert calls == [
        "__fork_branch",
        "__fork_branch_end",
        "__fork_branch",
        "__fork_branch_end",
        "__fork_end",
    ]


def test_a_call_named_parallel_is_still_a_call() -> None:
    (stmt,) = body_of("node main() {\n  parallel(3)\n}")
    assert isinstance(stmt, A.ExprStmt) and isinstance(stmt.expr, A.Call)


def test_async_is_the_call_itself() -> None:
    (stmt,) = body_of("node main() {\n  const a = async f(1)\n}")
    assert isinstance(stmt, A.VarDecl) and isinstance(stmt.value, A.Call)


def test_thread_value_binds_the_messages_after_the_block() -> None:
    (block,) = body_of('node main() {\n  const m = thread(label: "x") { g() }\n}')
    assert isinstance(block, A.Block)
    thread, store = block.body
    assert isinstance(thread, A.ThreadBlock) and thread.kind == "thread"
    assert isinstance(store, A.VarDecl) and store.target == A.PBind("m")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "node main() {\n  const r = fork [1, 2]\n}",
            ("`fork [ … ]` needs a comprehension, like `fork [f(x) for x in xs]`", 2, 18),
        ),
        (
            "node main() {\n  parallel(limit: 2) { f() }\n}",
            ("`parallel` takes only the option `shared: …`", 2, 12),
        ),
        (
            'node main() {\n  thread(colour: "red") { f() }\n}',
            (
                "`thread` takes the options `continue:`, `hidden:`, `label:`, `session:`, "
                "`summarize:`",
                2,
                10,
            ),
        ),
        (
            "node main() {\n  const a = async x + 1\n}",
            ("`async` must be followed by a call, like `async f(x)`", 2, 19),
        ),
    ],
)
def test_bad_forms_get_located_errors(source: str, expected: tuple[str, int, int]) -> None:
    assert errors(source)[0] == expected
