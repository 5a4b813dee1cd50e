"""std::markdown's parser (runtime/vm/builtins_markdown.py): the node shapes of the reference's
`parse()` for the less common constructs, and that any text parses without an exception."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.vm.builtins_markdown import parse_markdown


def blocks(text: str) -> list[object]:
    result = parse_markdown(text)
    assert result["success"] is True
    return result["blocks"]  # type: ignore[no-any-return]


def test_setext_heading_hard_break_and_rule() -> None:
    assert blocks("Title\n===\n\nline one  \nline two\n\n***\n") == [
        {"type": "heading", "level": 1, "content": [{"type": "inline-text", "content": "Title"}]},
        {
            "type": "paragraph",
            "content": [
                {"type": "inline-text", "content": "line one"},
                {"type": "inline-hard-break"},
                {"type": "inline-text", "content": "line two"},
            ],
        },
        {"type": "horizontal-rule"},
    ]


def test_snake_case_underscores_stay_text_and_entities_decode() -> None:
    (para,) = blocks("a_b_c &amp; &#65;")
    assert para == {
        "type": "paragraph",
        "content": [
            {"type": "inline-text", "content": "a"},
            {"type": "inline-text", "content": "_"},
            {"type": "inline-text", "content": "b"},
            {"type": "inline-text", "content": "_"},
            {"type": "inline-text", "content": "c "},
            {"type": "inline-text", "content": "&"},
            {"type": "inline-text", "content": " "},
            {"type": "inline-text", "content": "A"},
        ],
    }


def test_unresolved_references_become_text() -> None:
    # As in the reference, whose grammar tries a link definition before a footnote definition:
    # `[^1]: the note` is the link definition `^1` (url "the"), so the footnote stays text.
    got = blocks("see [x][nope] and [^1]\n\n[^1]: the note")
    assert got[0]["content"][1] == {"type": "inline-text", "content": "[x]"}  # type: ignore[index]
    assert got[0]["content"][3] == {"type": "inline-text", "content": "[^1]"}  # type: ignore[index]
    assert got[1] == {"type": "paragraph", "content": [{"type": "inline-text", "content": " note"}]}


def test_nested_list_and_indented_code() -> None:
    got = blocks("- a\n  - b\n\npara\n\n    code\n")
    assert got[0]["items"][0]["content"][1]["type"] == "list"  # type: ignore[index]
    assert got[2] == {"type": "code-block", "language": None, "content": "code\n"}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="#*_`[]()!<>~\\&|-+:.1 x\n\t\"'^=", max_size=60))
def test_any_text_parses(text: str) -> None:
    result = parse_markdown(text)
    assert result["success"] is True
