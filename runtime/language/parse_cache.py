"""Provides `parse_bundled`: the syntax tree of one of the runtime's own Agency files (the
prelude, a `std::` module), kept beside their bytecode so that a process parses it only when the
file or the parser changed.

Every program is compiled with the prelude, so every `agency` process that runs or checks one
parsed its ~800 lines again: about 75 ms, a sixth of the start-up of `agency run`. Loading the
pickled tree takes about a fifth of that. The cache lives where Python keeps bytecode (the
file's `__pycache__`, or the mirror of its folder under `sys.pycache_prefix`) and, like bytecode,
is not written when `sys.dont_write_bytecode` is set. Its name holds a digest of the file's text,
the name the tree is parsed under, the Python version and the parser's own sources (each file's
name, size and modification time), so an edit to any of them parses again; a cache that cannot
be read (truncated, from another version) is parsed over and replaced.

`python -m runtime.language.parse_cache` writes the caches of every bundled file whatever
`sys.dont_write_bytecode` says, as `compileall` does for bytecode (`make` runs both).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import time
from functools import lru_cache
from pathlib import Path

from runtime.language.syntax import ast as A
from runtime.language.syntax import parse

__all__ = ["PRELUDE_PATH", "STD_DIR", "parse_bundled", "warm"]

PRELUDE_PATH = Path(__file__).with_name("prelude.agency")
STD_DIR = Path(__file__).with_name("std")  # the `std::` modules: std/X.agency
SYNTAX_DIR = Path(__file__).with_name("syntax")
RUNTIME_DIR = Path(__file__).parent.parent
SUFFIX = ".tree.pickle"


def parse_bundled(path: Path, name: str) -> tuple[A.Program, str]:
    """The tree of the Agency file `path`, parsed under `name`, and its text."""
    text = path.read_text(encoding="utf-8")
    cache = _cache_file(path, text, name)
    try:
        with open(cache, "rb") as f:
            tree = pickle.load(f)
        if type(tree) is A.Program:
            return tree, text
    except Exception:  # noqa: BLE001 - missing, truncated or foreign: parse it again
        pass
    tree = parse(text, name)
    if not sys.dont_write_bytecode:
        _write(cache, tree, path.name)
    return tree, text


def _cache_file(path: Path, text: str, name: str) -> Path:
    digest = hashlib.sha256(
        "\0".join((text, name, sys.version, _parser_fingerprint())).encode("utf-8")
    ).hexdigest()[:20]
    folder = path.parent.resolve()
    if sys.pycache_prefix:
        where = Path(sys.pycache_prefix) / folder.relative_to(folder.anchor)
    else:
        where = folder / "__pycache__"
    return where / f"{path.name}.{digest}{SUFFIX}"


@lru_cache(maxsize=1)
def _parser_fingerprint() -> str:
    """The parser's sources as they are now (the syntax package, and the modules of the spans
    its trees hold): each module's name, size and modification time."""
    with os.scandir(SYNTAX_DIR) as entries:
        files = [Path(e.path) for e in entries if e.name.endswith(".py")]
    files += [RUNTIME_DIR / "errors.py", RUNTIME_DIR / "frozen.py"]
    stats = sorted((f.name, (st := f.stat()).st_size, st.st_mtime_ns) for f in files)
    return repr(stats)


def _write(cache: Path, tree: A.Program, file_name: str) -> None:
    """Write the cache atomically, and drop the file's older ones beside it (best effort: a
    folder that cannot be written leaves the file to be parsed each time, as before)."""
    import tempfile  # (with shutil and random) only when a cache is written

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=".tree-")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(tree, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, cache)
        except BaseException:
            os.unlink(tmp)
            raise
        for old in cache.parent.glob(f"{file_name}.*{SUFFIX}"):
            if old != cache:
                old.unlink(missing_ok=True)
        # a write cut short by a kill leaves its temporary file: gone once surely abandoned
        for left in cache.parent.glob(".tree-*"):
            if left.stat().st_mtime < time.time() - 3600:
                left.unlink(missing_ok=True)
    except (OSError, RecursionError, pickle.PicklingError):
        pass


def warm() -> int:
    """Write the cache of the prelude and of every `std::` module; how many files."""
    files = [(PRELUDE_PATH, "<prelude>")] + [(p, str(p)) for p in sorted(STD_DIR.rglob("*.agency"))]
    for path, name in files:
        text = path.read_text(encoding="utf-8")
        _write(_cache_file(path, text, name), parse(text, name), path.name)
    return len(files)


if __name__ == "__main__":
    print(f"cached the trees of {warm()} bundled Agency files")
