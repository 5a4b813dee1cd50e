"""Provides the host side of std::fs's `applyPatch`: a unified diff applied to the files it names.

The diff is read the way the reference reads it: `--- old` / `+++ new` headers (an `a/` or `b/`
prefix dropped; `--- /dev/null` creates the file), `@@ -l,n +l,n @@` hunks, and in a hunk only
the lines starting with a space, `+` or `-` (anything else, such as `\\ No newline at end of
file`, is skipped). Each hunk replaces its old text (context and removed lines) with its new text
(context and added lines). The old text must be found in the file as it is now: the occurrence
nearest the line the hunk names is used, so a file that moved a little still takes its patch; a
hunk whose old text is nowhere in the file fails the whole patch before anything is written.

Every file is read first (an observed input, so a replay is served what was read) and the new
contents are all written in one journaled effect: a resumed or replayed run never writes twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.files import read_text
from runtime.vm.boundary import well_formed
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_fs import _target, shown_path
from runtime.vm.effects import atomic_write, content_hash, file_holds, observe, perform
from runtime.vm.values import JSArray, JSObject, to_str

if TYPE_CHECKING:
    from pathlib import Path

    from runtime.vm.machine import Machine

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    old_start: int
    lines: list[str] = field(default_factory=list)

    def texts(self) -> tuple[str, str]:
        """The hunk's old text and new text."""
        before = [line[1:] for line in self.lines if line[0] in " -"]
        after = [line[1:] for line in self.lines if line[0] in " +"]
        return "\n".join(before), "\n".join(after)


@dataclass
class FilePatch:
    path: str
    is_new: bool
    hunks: list[Hunk] = field(default_factory=list)


def _first_token(text: str) -> str:
    match = re.match(r"\S+", text)
    return match.group() if match else ""


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def parse_patch(patch: str) -> list[FilePatch]:
    """The files a unified diff changes, with their hunks."""
    lines = patch.split("\n")
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- "):
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if not following.startswith("+++ "):
                raise AgencyRuntimeError("applyPatch: malformed diff, missing +++ after ---")
            old, new = _first_token(line[4:]), _first_token(following[4:])
            current = FilePatch(
                _strip_prefix(old if new == "/dev/null" else new), old.endswith("/dev/null")
            )
            files.append(current)
            hunk = None
            i += 2
            continue
        if line.startswith("@@"):
            if current is None:
                raise AgencyRuntimeError("applyPatch: hunk before file header")
            header = _HUNK.match(line)
            if header is None:
                raise AgencyRuntimeError(f"applyPatch: malformed hunk header: {line}")
            hunk = Hunk(int(header.group(1)))
            current.hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "+", "-"):
            hunk.lines.append(line)
        i += 1
    return files


def _line_offset(text: str, line: int) -> int:
    """Where 1-based line `line` of `text` starts (the end for a line past it)."""
    offset = 0
    for _ in range(max(line - 1, 0)):
        nl = text.find("\n", offset)
        if nl < 0:
            return len(text)
        offset = nl + 1
    return offset


def apply_hunks(original: str, hunks: list[Hunk], path: str) -> str:
    """`original` with every hunk applied in order (see the module docstring)."""
    text = original
    shift = 0  # lines the hunks applied so far added (or removed)
    for n, hunk in enumerate(hunks, 1):
        before, after = hunk.texts()
        expected = _line_offset(text, hunk.old_start + shift)
        if before == "":
            at = 0 if text == "" else expected
            insert = after if text == "" or at >= len(text) else after + "\n"
            text = text[:at] + insert + text[at:]
        else:
            found = [m.start() for m in re.finditer(re.escape(before), text)]
            if not found:
                raise AgencyRuntimeError(
                    f"applyPatch: hunk #{n} could not be applied to {path}; the surrounding "
                    "context does not match the current file contents"
                )
            at = min(found, key=lambda start: abs(start - expected))
            text = text[:at] + after + text[at + len(before) :]
        shift += after.count("\n") - before.count("\n")
    return text


@builtin("__fs_apply_patch")
def _fs_apply_patch(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    """Apply a unified diff; {applied: how many files, files: their paths as the diff names them}."""
    patch = to_str(arg(args, named, 0, "patch", ""))
    allowed = arg(args, named, 1, "allowedPaths")
    files = parse_patch(patch)
    targets: list[tuple[FilePatch, Path]] = [
        (f, _target(m, f.path, "applyPatch", allowed)) for f in files
    ]
    updates: list[tuple[Path, str]] = []
    for f, p in targets:
        original = ""
        if not f.is_new:

            def read(p: Path = p, name: str = f.path) -> str:
                try:
                    return read_text(p, "applyPatch:", AgencyRuntimeError, name)
                except OSError as exc:
                    raise AgencyRuntimeError(
                        f"applyPatch: cannot read {name}: {exc.strerror}"
                    ) from None

            original = observe(m, "read", {"path": shown_path(m, p)}, read)
        updates.append((p, well_formed(apply_hunks(original, f.hunks, f.path))))

    def act() -> bool:
        for p, text in updates:
            try:
                atomic_write(p, text)
            except OSError as exc:
                raise AgencyRuntimeError(
                    f"applyPatch: cannot write {shown_path(m, p)}: {exc.strerror}"
                ) from None
        return True

    perform(
        m,
        "applyPatch",
        {"files": [shown_path(m, p) for p, _ in updates], "hash": content_hash(patch)},
        act,
        lambda: all(file_holds(p, text) for p, text in updates),
    )
    return JSObject({"applied": len(files), "files": JSArray(f.path for f in files)})
