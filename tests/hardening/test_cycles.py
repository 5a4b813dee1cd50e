"""A value that holds itself: `print` shows it as console.log does (`<ref *1>` on the container,
`[Circular *1]` where it comes back), interpolation joins a cyclic array as JavaScript's join
does, and JSON.stringify refuses it with an error naming the path that closes the circle. Before,
each said "value is too deeply nested"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import agency, clean, plain_workdir


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return plain_workdir(tmp_path, monkeypatch)


def run(work: Path, body: str) -> tuple[int, str]:
    (work / "p.agency").write_text("node main() {\n" + body + "}\n")
    result = agency("run", "--no-record", "p.agency")
    assert "too deeply nested" not in result.output
    return result.exit_code, result.output


def test_print_marks_where_a_value_comes_back(work: Path) -> None:
    code, out = run(
        work,
        "  let o = {a: 1}\n  o.self = o\n  print(o)\n  let xs = [1]\n  xs.push(xs)\n  print(xs)\n"
        "  print({inside: [o]})\n",
    )
    assert code == 0, out
    assert out.splitlines() == [
        '<ref *1> {"a":1,"self":[Circular *1]}',
        "<ref *1> [1,[Circular *1]]",
        '{"inside":[<ref *1> {"a":1,"self":[Circular *1]}]}',
    ]


def test_two_objects_that_hold_each_other(work: Path) -> None:
    code, out = run(
        work, '  let x = {n: "x"}\n  let y = {n: "y", x: x}\n  x.y = y\n  print({x: x, y: y})\n'
    )
    assert code == 0, out
    assert out.strip() == (
        '{"x":<ref *1> {"n":"x","y":{"n":"y","x":[Circular *1]}},'
        '"y":<ref *2> {"n":"y","x":<ref *1> {"n":"x","y":[Circular *2]}}}'
    )


def test_a_shared_value_that_is_no_cycle_prints_twice(work: Path) -> None:
    code, out = run(work, "  let a = [1]\n  print({p: a, q: [a, a]})\n")
    assert code == 0, out
    assert out.strip() == '{"p":[1],"q":[[1],[1]]}'


def test_json_stringify_of_a_cycle_is_an_error_naming_the_path(work: Path) -> None:
    (work / "p.agency").write_text(
        "node main() {\n  let o = {list: [1]}\n  o.list.push({back: o})\n"
        "  print(JSON.stringify(o))\n}\n"
    )
    clean(
        agency("run", "--no-record", "p.agency"),
        1,
        "p.agency:4:",
        "JSON.stringify cannot convert a circular structure: value.list[1].back refers back",
    )


@pytest.mark.parametrize(
    "use",
    ["print(a)", "print(JSON.stringify(a).length)", 'print("${a}".length)'],
    ids=["print", "stringify", "interpolation"],
)
def test_a_value_sharing_itself_forty_levels_deep_is_refused_before_it_is_written(
    work: Path, use: str
) -> None:
    # A few hundred bytes of heap that write 2**40 copies of `[1]`: refused by its size at
    # once, not written until memory runs out.
    (work / "p.agency").write_text(
        "node main() {\n  let a = [1]\n  for (i in range(40)) {\n    a = [a, a, {l: a}]\n  }\n"
        f"  {use}\n}}\n"
    )
    clean(agency("run", "--no-record", "p.agency"), 1, "p.agency:6:", "a program may build")
