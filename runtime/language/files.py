"""Provides safe reading of input files, and the paths no program may touch.

Every file the runtime reads as input (a program, an import, `--mock`, `--checkpoint`, `read()`,
`loadFromDisk()`) goes through `read_text`: it must be a regular file (a FIFO, a device or a
directory is refused at once, never waited on) and at most `max_read_bytes()` long (64 MiB by
default, `AGENCY_MAX_READ_BYTES` to change it).

`protect(path, what)` marks a file the runtime itself owns (the run store and its `-wal` /
`-shm` / `-journal`, a checkpoint being written): the file builtins refuse it, see
`protected_reason`. It lives here, below both `vm` and `record`, so the store can protect itself
and the machine's `World` can check, without either importing the other.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

from runtime.errors import AgencyError

__all__ = [
    "CHECKPOINT_MAX_DEPTH",
    "DEFAULT_MAX_READ_BYTES",
    "JSONTooDeep",
    "MAX_JSON_DEPTH",
    "MAX_READ_ENV",
    "STORE_SUFFIXES",
    "check_regular",
    "kind_of",
    "loads_json",
    "max_read_bytes",
    "protect",
    "protected_reason",
    "read_bytes",
    "read_text",
]

DEFAULT_MAX_READ_BYTES = 64 << 20
MAX_READ_ENV = "AGENCY_MAX_READ_BYTES"
# Suffixes SQLite writes beside a database.
STORE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def max_read_bytes() -> int:
    """The largest file the runtime reads as input: `$AGENCY_MAX_READ_BYTES`, else 64 MiB."""
    text = os.environ.get(MAX_READ_ENV, "").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value <= 0:
            raise AgencyError(f"{MAX_READ_ENV}={text!r}: expected a positive number of bytes")
        return value
    return DEFAULT_MAX_READ_BYTES


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size_text(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    return f"{n} bytes"


def check_regular(path: str | os.PathLike[str], what: str) -> None:
    """Refuse (AgencyError naming the path) an existing path that is not a regular file."""
    try:
        st = os.stat(path)
    except OSError:
        return  # missing: the caller's own open says so
    if not stat.S_ISREG(st.st_mode):
        raise AgencyError(f"{what} {os.fspath(path)} is {kind_of(st.st_mode)}, not a regular file")


def read_bytes(
    path: str | os.PathLike[str],
    what: str,
    error: type[AgencyError] = AgencyError,
    shown: str | None = None,
) -> bytes:
    """The bytes of a regular file of at most `max_read_bytes()`.

    A FIFO or device is opened without blocking and refused; a file over the limit is refused
    before it is read. OSError (missing, no permission) passes through for the caller to word.
    Messages name the file as `shown` (default: `path`).
    """
    name = shown if shown is not None else os.fspath(path)
    limit = max_read_bytes()
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):  # as open() would say
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{what} {name} is {kind_of(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise error(_too_big(name, what, limit, st.st_size))
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise error(_too_big(name, what, limit, None))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_big(name: str, what: str, limit: int, size: int | None) -> str:
    has = f" ({size} bytes)" if size is not None else ""
    return (
        f"{what} {name} is larger than the {_size_text(limit)} the runtime reads"
        f"{has}; set {MAX_READ_ENV} to read larger files"
    )


def read_text(
    path: str | os.PathLike[str],
    what: str,
    error: type[AgencyError] = AgencyError,
    shown: str | None = None,
) -> str:
    """`read_bytes` decoded as UTF-8 (UnicodeDecodeError passes through)."""
    return read_bytes(path, what, error, shown).decode("utf-8")


def _json_integer(text: str) -> int | float:
    """A JSON integer: exact while it is short, else the double JavaScript reads (a 5,000-digit
    integer is Infinity, never a number Python refuses to print)."""
    return int(text) if len(text) <= 300 else float(text)


MAX_JSON_DEPTH = 256
"""How deeply JSON from outside may nest (arrays and objects inside each other). The runtime
walks values recursively (converting, printing, recording, checkpointing); measured, it handles
values nested about 320 deep, so input nested deeper would fail later at a random place with
Python's recursion error. A checkpoint file wraps the program's values a few levels deep: it is
read with `CHECKPOINT_MAX_DEPTH`."""

CHECKPOINT_MAX_DEPTH = MAX_JSON_DEPTH + 64


class JSONTooDeep(json.JSONDecodeError):
    """JSON nested deeper than the limit: a `JSONDecodeError` (so every reader that reports bad
    JSON reports this too) whose `msg` is "nested too deeply (limit N levels)"."""

    def __init__(self, doc: str, pos: int, limit: int) -> None:
        super().__init__(f"nested too deeply (limit {limit} levels)", doc, pos)
        self.limit = limit


def loads_json(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` for input from outside (a mock file, `--args`, a checkpoint, `JSON.parse`):
    integers of any length are read as JavaScript reads them; errors as json.loads raises them,
    and nesting deeper than `max_depth` is a `JSONTooDeep` (never a RecursionError)."""
    try:
        value = json.loads(text, parse_int=_json_integer)
    except RecursionError:
        raise JSONTooDeep(text, _too_deep_at(text, max_depth), max_depth) from None
    if _deeper_than(value, max_depth):
        raise JSONTooDeep(text, _too_deep_at(text, max_depth), max_depth)
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether parsed JSON nests more than `limit` containers deep (a walk without recursion,
    over containers only)."""
    if type(value) is not list and type(value) is not dict:
        return False
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        container, depth = todo.pop()
        if depth > limit:
            return True
        items = container.values() if type(container) is dict else container
        todo.extend((x, depth + 1) for x in items if type(x) is list or type(x) is dict)
    return False


def _too_deep_at(text: str, limit: int) -> int:
    """The offset in `text` of the bracket that opens level `limit + 1` (0 if none is found:
    the text is not JSON past the limit either); strings are skipped."""
    depth = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return i
        elif ch in "]}":
            depth -= 1
    return 0


# -- files the runtime owns ----------------------------------------------------------------------

_lock = threading.Lock()
_protected: dict[str, str] = {}  # resolved path -> what it is
# (device, inode) -> (path, what it is), for hard links; checked against the path again, since
# a deleted file's inode number is soon given to another file.
_inodes: dict[tuple[int, int], tuple[str, str]] = {}


def protect(path: str | os.PathLike[str], what: str) -> None:
    """Keep `path` out of reach of the file builtins for the rest of the process."""
    p = Path(path).resolve()
    with _lock:
        _protected[str(p)] = what
        try:
            st = os.stat(p)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode):
            _inodes[(st.st_dev, st.st_ino)] = (str(p), what)


def protected_reason(path: Path) -> str | None:
    """What the runtime keeps at `path` (a resolved path), or None when a program may use it."""
    if path.name.endswith(".agency-tmp"):
        return "a file the runtime is writing"
    with _lock:
        what = _protected.get(str(path))
        if what is not None:
            return what
        if not _inodes:
            return None
        inodes = dict(_inodes)
    try:
        st = os.stat(path)
    except OSError:
        return None
    found = inodes.get((st.st_dev, st.st_ino))
    if found is None:
        return None
    try:
        now = os.stat(found[0])
    except OSError:
        return None  # the protected file is gone: this is another file with its inode number
    return found[1] if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) else None
