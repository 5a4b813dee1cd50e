"""Provides the file host functions added for `std::index`, `std::shell` and `std::skills`:
writing text with a mode, reading and writing bytes as base64, searching file contents, and
scanning a directory of skill files.

Paths follow the `(filename, dir)` rule of builtins_fs.py (`inside`): the file stays inside
`dir`, and a file that changes stays inside the working directory. Writes go through the
effect journal (`perform`): a resumed or replayed run never writes twice. Reads go through
`observe`: re-execution from the record is served what was read.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.files import read_bytes, read_text
from runtime.vm.boundary import well_formed
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_fs import SKIPPED_DIRS, base_dir, check_allowed, inside, shown_path
from runtime.vm.builtins_std import front_matter
from runtime.vm.effects import content_hash, observe, perform
from runtime.vm.values import JSArray, JSObject, RegexTime, compiled_regex, to_number, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

WRITE_MODES = ("overwrite", "append", "create-only")


def _s(v: Any) -> str:
    return v if type(v) is str else to_str(v)


def _mode(v: Any, what: str) -> str:
    mode = "overwrite" if v is None else _s(v)
    if mode not in WRITE_MODES:
        raise AgencyRuntimeError(
            f"{what}: mode must be overwrite, append or create-only, not {mode!r}"
        )
    return mode


def _write_bytes(m: Machine, kind: str, filename: Any, dir_: Any, data: bytes, mode: str) -> Any:
    path = inside(m, filename, "." if dir_ is None else dir_, changes=True, what=kind)
    shown = shown_path(m, path)

    def act() -> bool:
        if mode == "create-only" and (path.exists() or path.is_symlink()):
            raise AgencyRuntimeError(f"{kind}: {shown} already exists (mode is create-only)")
        try:
            if mode == "append":
                with open(path, "ab") as fh:
                    fh.write(data)
            else:
                _atomic_write_bytes(path, data)
        except OSError as exc:
            raise AgencyRuntimeError(f"{kind}: cannot write {shown}: {exc.strerror}") from None
        return True

    digest = content_hash(data.decode("latin-1"))
    args = {"path": shown, "mode": mode, "bytes": len(data), "sha256": digest}
    if mode == "append":
        # Whether an append happened shows only against the size the file had before it,
        # noted in the journal first (a resumed run must not append twice, nor skip it).
        return perform(
            m,
            kind,
            args,
            act,
            before=lambda: _size(path),
            done_since=lambda n: _grew(path, n, data),
        )
    return perform(m, kind, args, act, lambda: _holds(path, data))


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None  # (no file yet: the append makes it)


def _grew(path: Path, size: Any, data: bytes) -> bool:
    """Whether the file at `path`, `size` bytes long before (None: absent), now ends with
    exactly `data` after them."""
    start = size if type(size) is int else 0
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size != start + len(data):
                return False
            fh.seek(start)
            return fh.read() == data
    except OSError:
        return False


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    # (a missing parent directory is an error, as in the reference: `mkdir` makes one)
    tmp = path.with_name(f".{path.name}.agency-tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except OSError:
        return False


@builtin("__file_prepare")
def _file_prepare(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    """Check, before anything is asked, that `filename` may be used inside `dir` (`changes`:
    written, so also inside the working directory); an error saying how to retry otherwise."""
    filename, dir_ = arg(args, named, 0, "filename"), arg(args, named, 1, "dir")
    changes = bool(arg(args, named, 2, "changes", False))
    what = "write" if changes else "read"
    inside(m, filename, "." if dir_ is None else dir_, changes=changes, what=what)
    return True


@builtin("__file_write")
def _file_write(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Write text to `filename` inside `dir` with a mode: overwrite, append or create-only."""
    text = well_formed(_s(arg(args, named, 1, "content", "")))
    mode = _mode(arg(args, named, 3, "mode"), "write")
    filename, dir_ = arg(args, named, 0, "filename"), arg(args, named, 2, "dir")
    return _write_bytes(m, "write", filename, dir_, text.encode("utf-8"), mode)


@builtin("__file_read")
def _file_read(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The text of `filename` inside `dir`; with `offset` (1-based line) or `limit` (lines),
    that window of lines and a note saying what was left out."""
    filename, dir_ = arg(args, named, 0, "filename"), arg(args, named, 1, "dir")
    path = inside(m, filename, "." if dir_ is None else dir_, changes=False, what="read")

    def act() -> str:
        try:
            return read_text(path, "read:", AgencyRuntimeError, _s(filename))
        except OSError as exc:
            raise AgencyRuntimeError(f"read: cannot read {_s(filename)}: {exc.strerror}") from None

    text: str = observe(m, "read", {"path": _s(filename), "dir": _s(dir_ or ".")}, act)
    offset, limit = arg(args, named, 2, "offset"), arg(args, named, 3, "limit")
    return _window(text, to_number(offset or 0), to_number(limit or 0))


def _window(text: str, offset: float, limit: float) -> str:
    """Lines `offset`.. (1-based) of `text`, at most `limit` of them (0: no bound), as the
    reference's read paginates; the whole text when neither is asked for."""
    if offset <= 0 and limit <= 0:
        return text
    lines = text.split("\n")
    start = int(offset) if offset > 0 else 1
    count = int(limit) if limit > 0 else len(lines) - (start - 1)
    part = lines[start - 1 : start - 1 + count]
    out = "\n".join(part)
    if start - 1 + count < len(lines):
        out += f"\n... [truncated: showing {start}-{start + len(part) - 1} of {len(lines)} lines]"
    return out


@builtin("__file_write_binary")
def _file_write_binary(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """Decode base64 and write the bytes to `filename` inside `dir`."""
    encoded = _s(arg(args, named, 1, "base64", ""))
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise AgencyRuntimeError("writeBinary: the content is not valid base64") from None
    mode = _mode(arg(args, named, 3, "mode"), "writeBinary")
    return _write_bytes(
        m, "writeBinary", arg(args, named, 0, "filename"), arg(args, named, 2, "dir"), data, mode
    )


@builtin("__file_read_binary")
def _file_read_binary(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The bytes of `filename` inside `dir`, as base64."""
    filename, dir_ = arg(args, named, 0, "filename"), arg(args, named, 1, "dir")
    path = inside(m, filename, "." if dir_ is None else dir_, changes=False, what="readBinary")

    def act() -> str:
        try:
            data = read_bytes(path, "readBinary:", AgencyRuntimeError, _s(filename))
        except OSError as exc:
            raise AgencyRuntimeError(
                f"readBinary: cannot read {_s(filename)}: {exc.strerror}"
            ) from None
        return base64.b64encode(data).decode("ascii")

    return observe(m, "readBinary", {"path": _s(filename), "dir": _s(dir_ or ".")}, act)


@builtin("__file_grep")
def _file_grep(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """[{file, line, text}] for each line under `dir` that the regex `pattern` matches, at
    most `maxResults`, files in name order (node_modules, .git, dist, build… skipped)."""
    source, flags = _s(arg(args, named, 0, "pattern", "")), _s(arg(args, named, 2, "flags", ""))
    pattern = compiled_regex(source, flags)
    dir_ = arg(args, named, 1, "dir", ".")
    limit = int(to_number(arg(args, named, 3, "maxResults", 200)))
    base = base_dir(m, dir_, changes=False, what="grep")
    check_allowed(m, base, arg(args, named, 4, "allowedPaths"), "grep")

    def act() -> JSArray:
        if not base.is_dir():
            raise AgencyRuntimeError(f"grep: {_s(dir_)} is not a directory")
        out = JSArray()
        _grep_tree(base, pattern, (source, flags), limit, out)
        return out

    return observe(m, "grep", {"dir": _s(dir_), "pattern": pattern.pattern}, act)


def _grep_tree(
    base: Path, pattern: Any, written: tuple[str, str], limit: int, out: JSArray
) -> None:
    """Append to `out` each line under `base` that `pattern` matches, up to `limit` lines."""
    clock = RegexTime(*written)
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            full = Path(root) / name
            try:
                text = full.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            rel = full.relative_to(base).as_posix()
            with clock:
                for i, line in enumerate(text.split("\n")):
                    if pattern.search(line, timeout=clock.limit):
                        out.append(JSObject({"file": rel, "line": i + 1, "text": line}))
                        if len(out) >= limit:
                            return


@builtin("__skills_scan")
def _skills_scan(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The skills in a directory: [{location, fields}] with each file's front matter. Layout
    "standard": one `<skill>/SKILL.md` per sub-directory; "flat": the `.md`/`.markdown` files
    directly in it (`recursive`: under it). A missing directory has none."""
    dir_ = _s(arg(args, named, 0, "dir", ""))
    layout = _s(arg(args, named, 1, "layout", "standard"))
    recursive = bool(arg(args, named, 2, "recursive", False))
    base = base_dir(m, dir_, changes=False, what="skillsDir")

    def act() -> JSArray:
        if not base.is_dir():
            return JSArray()
        if layout == "standard":
            found = base.glob("*/SKILL.md")
        else:
            pick = base.rglob if recursive else base.glob
            found = (p for ext in ("*.md", "*.markdown") for p in pick(ext))
        out = JSArray()
        for path in sorted(found):
            try:
                fields, _ = front_matter(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                fields = {}
            rel = path.relative_to(base).as_posix()
            out.append(JSObject({"location": rel, "fields": JSObject(fields)}))
        return out

    return observe(m, "skillsDir", {"dir": dir_, "layout": layout}, act)


# -- std::git ------------------------------------------------------------------------------------

GIT_TIMEOUT_S = 60


@builtin("__git_run")
def _git_run(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """`git ARGS` run in the repository directory `dir` (inside the working directory): its
    stdout; a non-zero exit is an error carrying git's message. `changes` says whether the
    command changes the repository: then it is an effect (journaled, never run twice), else a
    read (re-execution is served the recorded output)."""
    dir_ = _s(arg(args, named, 0, "dir", ""))
    argv = arg(args, named, 1, "args") or JSArray()
    changes = bool(arg(args, named, 2, "changes", False))
    if not dir_:
        raise AgencyRuntimeError(
            "git: no repository directory: pass `cwd`, or set one with setAgentCwd(...)"
        )
    if type(argv) is not JSArray:
        raise AgencyRuntimeError("git: expected a list of arguments")
    words = [_s(a) for a in argv]
    where = base_dir(m, dir_, changes=True, what="git")
    # git looks for the repository no higher than the working directory: never at a repository
    # the working directory happens to sit in.
    ceiling = str(m.world.root.parent)
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_CEILING_DIRECTORIES=ceiling)

    import subprocess  # for the programs that run git (start-up time)

    def act() -> str:
        if not where.is_dir():
            raise AgencyRuntimeError(f"git: {dir_} is not a directory")
        try:
            p = subprocess.run(
                ["git", *words],
                cwd=where,
                capture_output=True,
                text=True,
                env=env,
                stdin=subprocess.DEVNULL,
                timeout=GIT_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AgencyRuntimeError(f"git {' '.join(words)}: {exc}") from None
        if p.returncode != 0:
            why = (p.stderr or p.stdout).strip() or f"exit code {p.returncode}"
            raise AgencyRuntimeError(f"git {' '.join(words)}: {why}")
        return p.stdout

    facts = {"dir": dir_, "args": words}
    return perform(m, "git", facts, act) if changes else observe(m, "git", facts, act)


# -- std::args -----------------------------------------------------------------------------------


@builtin("__process_argv")
def _process_argv(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The program's own command-line arguments: an input of the run (re-execution from the
    record is served the recorded list)."""
    return observe(m, "argv", {}, lambda: JSArray(getattr(m.world, "argv", [])))
