"""std::fs applyPatch's diff reading and hunk application (runtime/vm/builtins_patch.py)."""

from __future__ import annotations

import pytest

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtins_patch import apply_hunks, parse_patch

DIFF = """--- a/x.txt
+++ b/x.txt
@@ -3,3 +3,3 @@
 c
-d
+D
 e
\\ No newline at end of file
"""


def test_headers_prefixes_and_new_files() -> None:
    files = parse_patch(DIFF + "--- /dev/null\n+++ b/y/new.txt\n@@ -0,0 +1 @@\n+hi\n")
    assert [(f.path, f.is_new, len(f.hunks)) for f in files] == [
        ("x.txt", False, 1),
        ("y/new.txt", True, 1),
    ]
    assert files[0].hunks[0].texts() == ("c\nd\ne", "c\nD\ne")


def test_the_occurrence_nearest_the_named_line_is_changed() -> None:
    text = "c\nd\ne\nx\nc\nd\ne\n"
    hunks = parse_patch(DIFF.replace("-3,3 +3,3", "-5,3 +5,3"))[0].hunks
    assert apply_hunks(text, hunks, "x.txt") == "c\nd\ne\nx\nc\nD\ne\n"


def test_a_file_that_moved_still_takes_its_patch() -> None:
    assert apply_hunks("new top\na\nb\nc\nd\ne\n", parse_patch(DIFF)[0].hunks, "x.txt") == (
        "new top\na\nb\nc\nD\ne\n"
    )


def test_missing_context_fails_naming_the_hunk() -> None:
    with pytest.raises(AgencyRuntimeError, match="hunk #1 could not be applied to x.txt"):
        apply_hunks("a\nb\n", parse_patch(DIFF)[0].hunks, "x.txt")


@pytest.mark.parametrize(
    ("diff", "message"),
    [
        ("--- a/x\nnot a header\n", "missing \\+\\+\\+ after ---"),
        ("@@ -1 +1 @@\n", "hunk before file header"),
        ("--- a/x\n+++ b/x\n@@ nonsense @@\n", "malformed hunk header"),
    ],
)
def test_malformed_diffs(diff: str, message: str) -> None:
    with pytest.raises(AgencyRuntimeError, match=message):
        parse_patch(diff)
