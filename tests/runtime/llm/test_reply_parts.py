"""The parts of a multimodal user message (what attachToReply adds) on the wire, and the
pieces of std::thread's attachments that need no machine."""

from __future__ import annotations

import pytest

from runtime.errors import AgencyRuntimeError
from runtime.llm.anthropic import to_anthropic_messages
from runtime.llm.openai import to_openai_messages
from runtime.vm.reply_attachments import content_text, source_of, takes_images
from runtime.vm.values import to_plain

PARTS = [
    {"type": "text", "text": "[img_1 — image output of tool plot]"},
    {"type": "image", "source": {"kind": "base64", "base64": "AAAA", "mimeType": "image/png"}},
    {"type": "text", "text": "[img_2 — file output of tool report]"},
    {
        "type": "file",
        "filename": "r.pdf",
        "source": {"kind": "url", "url": "https://example.org/r.pdf"},
    },
]


def test_openai_sends_image_and_file_parts() -> None:
    [msg] = to_openai_messages([{"role": "user", "content": PARTS}])
    assert msg["content"] == [
        {"type": "text", "text": "[img_1 — image output of tool plot]"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "[img_2 — file output of tool report]"},
        {"type": "file", "file": {"filename": "r.pdf", "file_data": "https://example.org/r.pdf"}},
    ]


def test_anthropic_sends_image_and_document_blocks() -> None:
    _, [turn] = to_anthropic_messages([{"role": "user", "content": PARTS}])
    assert turn["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
    }
    assert turn["content"][3] == {
        "type": "document",
        "source": {"type": "url", "url": "https://example.org/r.pdf"},
    }


def test_a_plain_list_content_is_still_text() -> None:
    [msg] = to_openai_messages([{"role": "user", "content": [1, 2]}])
    assert msg["content"] == "[1, 2]"


def test_programs_read_placeholders_never_bytes() -> None:
    assert content_text(PARTS) == (
        "[img_1 — image output of tool plot] [image attachment] "
        "[img_2 — file output of tool report] [file attachment: r.pdf]"
    )


def test_sources() -> None:
    assert to_plain(source_of("data:image/gif;base64,R0lG", "", False)) == {
        "kind": "base64",
        "base64": "R0lG",
        "mimeType": "image/gif",
    }
    assert to_plain(source_of("https://x.org/a.png", "", False)) == {
        "kind": "url",
        "url": "https://x.org/a.png",
    }
    assert to_plain(source_of("a.png", "image/png", False)) == {
        "kind": "path",
        "path": "a.png",
        "mimeType": "image/png",
    }
    with pytest.raises(AgencyRuntimeError, match="needs an explicit mimeType"):
        source_of("AAAA", "", True)
    with pytest.raises(AgencyRuntimeError, match="must be base64"):
        source_of("data:text/plain,hello", "", False)


@pytest.mark.parametrize(
    ("model", "images"),
    [
        ("gpt-3.5-turbo", False),
        ("openai/gpt-4", False),
        ("gpt-4o-mini", True),
        ("claude-sonnet-4-5", True),
        ("deterministic", True),
    ],
)
def test_which_models_take_images(model: str, images: bool) -> None:
    assert takes_images(model) is images


def test_a_recorded_message_with_attachments_reads_as_placeholders() -> None:
    from runtime.record.raw_state import message_view

    parts = [
        {"type": "text", "text": "[img_1 — image output of tool look]"},
        {"type": "image", "source": {"kind": "base64", "base64": "iVBORw0KGgo=" * 50}},
        {"type": "file", "filename": "notes.pdf", "source": {"kind": "base64", "base64": "JVBE"}},
    ]
    shown = message_view({"role": "user", "content": parts}).content
    assert (
        shown
        == "[img_1 — image output of tool look] [image attachment] [file attachment: notes.pdf]"
    )
    assert "iVBOR" not in shown
