"""Provides the host functions behind `std::fs` and the file probes of `std::shell`, and the
`(filename, dir)` path rule they share with `read`/`write`.

A file is named by `filename` inside a directory `dir`: `filename` must stay inside `dir` (no
absolute path, no `~`, no `..` escape, no symlink leading out). A relative `dir` resolves against
the working directory. Whatever changes the world must stay inside the working directory (or
a directory the world declares writable: `World.writable`); a read may look at a directory the
program names explicitly (`__dirname`, an absolute `dir`).

Changes (remove, mkdir, copy, move) go through the effect journal (`perform`): a resumed or
replayed run never does them twice. Reads and probes go through `observe`: re-execution from a
record is served the recorded answer.
"""

from __future__ import annotations

import os
import stat as _stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.language.files import protected_reason
from runtime.vm.boundary import well_formed
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.effects import observe, perform
from runtime.vm.values import JSArray, JSObject, to_number, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

SKIPPED_DIRS = frozenset({"node_modules", ".git", "dist", "build", ".next", ".cache"})


def _s(v: Any) -> str:
    return v if type(v) is str else to_str(v)


def runtime_owned(root: Path, p: Path) -> str | None:
    """What the runtime keeps at `p` (the run store, `.agency/`, a file being written), if so."""
    if ".agency" in p.relative_to(root).parts:
        return "inside .agency/, where runs are recorded"
    return protected_reason(p)


def owning_root(m: Machine, p: Path) -> Path | None:
    """The working directory, or the writable directory, that `p` is inside (None: neither)."""
    roots: tuple[Path, ...] = (m.world.root, *m.world.writable)
    for root in roots:
        if p == root or root in p.parents:
            return root
    return None


def shown_path(m: Machine, p: Path) -> str:
    """`p` as the program and the journal name it: relative to the working directory, so a run
    replayed or resumed in another directory asks for the same file; absolute outside it."""
    root: Path = m.world.root
    return p.relative_to(root).as_posix() if p == root or root in p.parents else str(p)


def base_dir(m: Machine, dir_: Any, *, changes: bool, what: str) -> Path:
    """The directory `dir_` names (the working directory for "" or "."). A directory a change
    happens in must be inside the working directory."""
    root: Path = m.world.root
    text = "" if dir_ is None else _s(dir_)
    if text.startswith("~"):
        raise AgencyRuntimeError(f"{what}: `~` is not expanded; pass an absolute directory")
    base = (root / text).resolve() if text not in ("", ".") else root
    if changes and owning_root(m, base) is None:
        raise AgencyRuntimeError(
            f"{what}: {text!r} is outside the working directory {root}; "
            "changes may only happen inside it"
        )
    return base


def inside(m: Machine, filename: Any, dir_: Any, *, changes: bool, what: str) -> Path:
    """`filename` inside `dir_`, checked (see the module docstring)."""
    name = _s(filename) if filename is not None else ""
    if not name:
        raise AgencyRuntimeError(f"{what}: expected a file name, got {to_str(filename)!r}")
    # The file name is checked against `dir` first, so an escape is reported with the sentence
    # that says how to retry even when `dir` itself is not a place changes may happen.
    base = base_dir(m, dir_, changes=False, what=what)
    # The sentence that tells a model how to retry (the reference's wording, which programs match).
    retry = f"To {'write' if changes else 'read from'} somewhere else, pass that directory in dir."
    if name.startswith("~") or os.path.isabs(name):
        raise AgencyRuntimeError(
            f"{what}: the file name {name!r} must be relative to the directory {str(base)!r}. "
            + retry
        )
    if "\0" in name or well_formed(name) != name:
        raise AgencyRuntimeError(
            f"{what}: path {name!r} holds a NUL character or a lone surrogate: no file has that name"
        )
    p = (base / name).resolve()
    if p != base and base not in p.parents:
        raise AgencyRuntimeError(f"{what}: {name!r} escapes the directory {str(base)!r}. " + retry)
    if changes:
        base_dir(m, dir_, changes=True, what=what)
    owner = owning_root(m, p)
    refused = runtime_owned(owner, p) if owner is not None else None
    if refused is not None:
        raise AgencyRuntimeError(f"{what}: path {name!r} is {refused}; programs cannot touch it")
    return p


def _target(m: Machine, target: Any, what: str, allowed: Any) -> Path:
    """A path to change (remove, mkdir): relative to the working directory, or absolute, and
    inside it (or a writable directory); when `allowed` lists directories, inside one of them."""
    name = _s(target) if target is not None else ""
    if os.path.isabs(name) and os.path.normpath(name) != os.sep:
        # `remove(__dirname + "/out.txt")`: the same rule, with the parent as `dir`.
        parent, leaf = os.path.split(os.path.normpath(name))
        p = inside(m, leaf, parent, changes=True, what=what)
    else:
        p = inside(m, target, ".", changes=True, what=what)
    roots = [(m.world.root / _s(a)).resolve() for a in (allowed or [])]
    if roots and not any(p == r or r in p.parents for r in roots):
        raise AgencyRuntimeError(f"{what}: {_s(target)!r} is not inside the allowed paths")
    return p


def check_allowed(m: Machine, p: Path, allowed: Any, what: str) -> None:
    """With a non-empty `allowed` list (directories, relative to the working directory), `p`
    must be one of them or inside one."""
    roots = [(m.world.root / _s(a)).resolve() for a in (allowed or [])]
    if roots and not any(p == r or r in p.parents for r in roots):
        raise AgencyRuntimeError(f"{what}: {str(p)!r} is not inside the allowed paths")


def _gone(p: Path) -> bool:
    return not p.exists() and not p.is_symlink()


@builtin("__fs_remove")
def _fs_remove(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    target = arg(args, named, 0, "target")
    p = _target(m, target, "remove", arg(args, named, 1, "allowedPaths"))

    def act() -> bool:
        try:
            if p.is_dir() and not p.is_symlink():
                import shutil  # (with bz2 and lzma) for the programs that remove a folder

                shutil.rmtree(p)
            elif not _gone(p):
                p.unlink()
        except OSError as exc:
            raise AgencyRuntimeError(
                f"remove: cannot remove {_s(target)}: {exc.strerror}"
            ) from None
        return True

    return perform(m, "remove", {"path": shown_path(m, p)}, act, lambda: _gone(p))


@builtin("__fs_mkdir")
def _fs_mkdir(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    target = arg(args, named, 0, "dir")
    p = _target(m, target, "mkdir", arg(args, named, 1, "allowedPaths"))

    def act() -> bool:
        if p.exists() and not p.is_dir():
            raise AgencyRuntimeError(f"mkdir: {_s(target)} exists and is not a directory")
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AgencyRuntimeError(f"mkdir: cannot create {_s(target)}: {exc.strerror}") from None
        return True

    return perform(m, "mkdir", {"path": shown_path(m, p)}, act, p.is_dir)


def _copy_or_move(m: Machine, args: list[Any], named: dict[str, Any], kind: str) -> Any:
    src_arg, dst_arg = arg(args, named, 0, "src"), arg(args, named, 1, "dest")
    allowed = arg(args, named, 2, "allowedPaths")
    src, dst = _target(m, src_arg, kind, allowed), _target(m, dst_arg, kind, allowed)

    def act() -> bool:
        if _gone(src):
            raise AgencyRuntimeError(f"{kind}: {_s(src_arg)} does not exist")
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            import shutil  # (with bz2 and lzma) for the programs that copy or move

            if kind == "move":
                shutil.move(str(src), str(dst))
            elif src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copy2(src, dst)
        except OSError as exc:
            raise AgencyRuntimeError(f"{kind}: {exc.strerror or exc}") from None
        return True

    done = (lambda: _gone(src) and dst.exists()) if kind == "move" else None
    # Named relative to the working directory (absolute only outside it), so a replay in
    # another directory asks for the same change.
    return perform(m, kind, {"path": shown_path(m, src), "to": shown_path(m, dst)}, act, done)


@builtin("__fs_copy")
def _fs_copy(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return _copy_or_move(m, args, named, "copy")


@builtin("__fs_move")
def _fs_move(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return _copy_or_move(m, args, named, "move")


@builtin("__fs_apply_edits")
def _fs_apply_edits(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """`text` with the replacements `edits` ({oldText, newText, replaceAll?}) applied in order;
    each oldText must occur exactly once unless replaceAll. Pure: the caller reads and writes."""
    text = _s(arg(args, named, 0, "text", ""))
    edits = arg(args, named, 1, "edits") or []
    if type(edits) is not JSArray:
        raise AgencyRuntimeError("edit: `edits` must be a list of {oldText, newText}")
    for i, e in enumerate(edits):
        if type(e) is not JSObject or type(e.get("oldText")) is not str:
            raise AgencyRuntimeError(f"edit: edits[{i}] must be {{oldText, newText}}")
        old, new = e["oldText"], _s(e.get("newText") if e.get("newText") is not None else "")
        count = text.count(old) if old else 0
        if count == 0:
            raise AgencyRuntimeError(f"edit: edits[{i}].oldText was not found")
        if count > 1 and not e.get("replaceAll"):
            raise AgencyRuntimeError(
                f"edit: edits[{i}].oldText occurs {count} times; make it unique or set replaceAll"
            )
        text = text.replace(old, new)
    return text


# -- probes (std::shell) -------------------------------------------------------------------------


def _probe_path(m: Machine, filename: Any, dir_: Any, what: str) -> Path:
    if dir_ is None or _s(dir_) == "":
        name = _s(filename) if filename is not None else ""
        if not name:
            raise AgencyRuntimeError(f"{what}: expected a path")
        if name == "~" or name.startswith("~/"):  # a probe may look at the home directory
            name = os.path.expanduser(name)
        return (m.world.root / name).resolve()
    return inside(m, filename, dir_, changes=False, what=what)


def _kind(p: Path, follow: bool = False) -> str:
    try:
        st = p.stat() if follow else p.lstat()
    except OSError:
        return "missing"
    if _stat.S_ISLNK(st.st_mode):
        return "symlink"
    if _stat.S_ISDIR(st.st_mode):
        return "dir"
    return "file" if _stat.S_ISREG(st.st_mode) else "other"


@builtin("__fs_exists")
def _fs_exists(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    filename, dir_ = arg(args, named, 0, "filename"), arg(args, named, 1, "dir")
    p = _probe_path(m, filename, dir_, "exists")
    check_allowed(m, p, arg(args, named, 2, "allowedPaths"), "exists")
    where = {"path": _s(filename), "dir": _s(dir_) if dir_ else ""}
    return observe(m, "exists", where, lambda: p.exists())


@builtin("__fs_stat")
def _fs_stat(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    filename, dir_ = arg(args, named, 0, "filename"), arg(args, named, 1, "dir")
    follow = bool(arg(args, named, 2, "followSymlinks", False))
    p = _probe_path(m, filename, dir_, "stat")
    check_allowed(m, p, arg(args, named, 3, "allowedPaths"), "stat")

    def act() -> JSObject:
        kind = _kind(p, follow)
        if kind == "missing":
            return JSObject({"exists": False, "type": "missing", "size": 0, "mtime": 0})
        st = p.stat() if follow else p.lstat()
        return JSObject(
            {
                "exists": True,
                "type": kind,
                "size": st.st_size,
                "mtime": int(st.st_mtime * 1000),
            }
        )

    return observe(m, "stat", {"path": _s(filename), "dir": _s(dir_) if dir_ else ""}, act)


@builtin("__fs_ls")
def _fs_ls(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    dir_ = arg(args, named, 0, "dir", ".")
    recursive = bool(arg(args, named, 1, "recursive", False))
    limit = int(to_number(arg(args, named, 2, "maxResults", 1000)))
    base = base_dir(m, dir_, changes=False, what="ls")
    check_allowed(m, base, arg(args, named, 3, "allowedPaths"), "ls")

    def entry(p: Path) -> JSObject:
        kind = _kind(p)
        size = p.lstat().st_size if kind == "file" else 0
        rel = p.relative_to(base).as_posix()
        return JSObject({"name": p.name, "path": rel, "type": kind, "size": size})

    def act() -> JSArray:
        if not base.is_dir():
            raise AgencyRuntimeError(f"ls: {_s(dir_)} is not a directory")
        out = JSArray()
        todo = [base]
        while todo and len(out) < limit:
            d = todo.pop(0)
            for p in sorted(d.iterdir(), key=lambda q: q.name):
                if len(out) >= limit:
                    break
                out.append(entry(p))
                if recursive and p.is_dir() and not p.is_symlink() and p.name not in SKIPPED_DIRS:
                    todo.append(p)
        return out

    return observe(m, "ls", {"dir": _s(dir_), "recursive": recursive}, act)


@builtin("__fs_glob")
def _fs_glob(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    pattern = _s(arg(args, named, 0, "pattern", ""))
    dir_ = arg(args, named, 1, "dir", ".")
    limit = int(to_number(arg(args, named, 2, "maxResults", 500)))
    base = base_dir(m, dir_, changes=False, what="glob")
    check_allowed(m, base, arg(args, named, 3, "allowedPaths"), "glob")
    if not pattern or pattern.startswith("/") or ".." in Path(pattern).parts:
        raise AgencyRuntimeError(f"glob: {pattern!r} must be a relative pattern inside the dir")

    patterns = expand_braces(pattern)

    def act() -> JSArray:
        found = sorted(
            {
                p.relative_to(base).as_posix()
                for one in patterns
                for p in base.glob(one)
                if not (set(p.relative_to(base).parts) & SKIPPED_DIRS)
            }
        )
        return JSArray(found[:limit])

    return observe(m, "glob", {"dir": _s(dir_), "pattern": pattern}, act)


def expand_braces(pattern: str) -> list[str]:
    """`a.{ts,md}` as `a.ts` and `a.md` (nested and repeated groups too); an unbalanced brace
    is an error."""
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                break
            if depth == 0:
                inner, parts, level, last = pattern[start + 1 : i], [], 0, 0
                for j, c in enumerate(inner):
                    level += (c == "{") - (c == "}")
                    if c == "," and level == 0:
                        parts.append(inner[last:j])
                        last = j + 1
                parts.append(inner[last:])
                head, tail = pattern[:start], pattern[i + 1 :]
                return [x for part in parts for x in expand_braces(head + part + tail)]
    if depth != 0:
        raise AgencyRuntimeError(f"glob: unbalanced braces in pattern {pattern!r}")
    return [pattern]
