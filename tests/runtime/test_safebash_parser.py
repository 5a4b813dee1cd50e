"""The bash subset std::safeBash parses (runtime/vm/builtins_safebash.py): what each word
becomes, what is refused outright, and that printing a parse back gives a string that parses
to the same tree."""

from __future__ import annotations

import pytest

from runtime.vm.builtins_safebash import BashSyntaxError, _Parser, render
from runtime.vm.values import to_plain


def parse(text: str) -> list:
    return to_plain(_Parser(text).script())


def words(text: str) -> list:
    return [w for w in parse(text)[0]["args"]]


def test_words_are_classified() -> None:
    assert words("cmd x -n --staged --format=%s a/b 'q  q' \"$HOME/x\" $V") == [
        {"tag": "literal", "text": "x"},
        {"tag": "flag", "flagName": "-n"},
        {"tag": "flag", "flagName": "--staged"},
        {"tag": "flag", "flagName": "--format", "flagValue": "%s"},
        {"tag": "path", "text": "a/b"},
        {"tag": "singleQuoted", "text": "q  q"},
        {
            "tag": "doubleQuoted",
            "parts": [{"tag": "variable", "name": "HOME"}, {"tag": "literal", "text": "/x"}],
        },
        {"tag": "variable", "name": "V"},
    ]


def test_adjacent_parts_make_one_word() -> None:
    assert words("echo $A.txt")[0] == {
        "tag": "interpolatedVariable",
        "parts": [{"tag": "variable", "name": "A"}, {"tag": "literal", "text": ".txt"}],
    }


def test_assignments_redirects_and_chains() -> None:
    (tree,) = parse("A=1 B= git status 2> err >> out || (echo a && echo b)")
    assert tree["tag"] == "or"
    left = tree["left"]
    assert [a["name"] for a in left["assignments"]] == ["A", "B"]
    assert left["assignments"][1]["value"] is None
    assert left["command"] == {"tag": "literal", "text": "git"}
    assert [(r.get("fd"), r["op"]) for r in left["redirects"]] == [(2, ">"), (None, ">>")]
    assert tree["right"]["tag"] == "parens"
    assert tree["right"]["command"]["tag"] == "and"


def test_sequences_split_on_semicolons_and_newlines() -> None:
    assert len(parse("a; b\nc;")) == 3


@pytest.mark.parametrize(
    "text",
    [
        "ls | wc",
        "sleep 1 &",
        "cmd 2>&1",
        "cat <<EOF",
        "echo `id`",
        "echo $(id)",
        "cat ~/x",
        "git checkout -- .",
        "echo 'open",
        '"$X"',
        "(a; b)",
    ],
)
def test_outside_the_grammar(text: str) -> None:
    with pytest.raises(BashSyntaxError):
        _Parser(text).script()


@pytest.mark.parametrize(
    "text",
    [
        "git   status   --short",
        "echo 'a  b' \"c $D\" e\\ f > 'my file'",
        "X=1 ./run.sh -v --n=2 < in && (false || echo ok)",
    ],
)
def test_rendering_parses_back_to_the_same_tree(text: str) -> None:
    tree = _Parser(text).script()
    printed = "; ".join(render(c) for c in tree)
    assert to_plain(_Parser(printed).script()) == to_plain(tree)
