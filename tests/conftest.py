"""Suite-wide fixtures."""

from __future__ import annotations

import gc
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cache_bytecode_outside_the_checkout() -> None:
    """With PYTHONDONTWRITEBYTECODE set (some CI images and sandboxes set it), every process the
    suite starts would compile the runtime's sources again, and pytest would rewrite every test
    module's assertions again, in each xdist worker and in each of the hundreds of `agency`
    subprocesses (about half a CPU second each). The bytecode goes instead to a per-user cache
    under the temporary directory (`sys.pycache_prefix`, which pytest's rewrite cache follows),
    so nothing is written beside the sources, as the setting asks. Set here, at the start of the
    session, it holds for the workers and the subprocesses, which inherit the environment."""
    if not sys.dont_write_bytecode or sys.pycache_prefix is not None:
        return
    prefix = Path(tempfile.gettempdir()) / f"agency-tests-pycache-{os.getuid()}"
    try:
        prefix.mkdir(mode=0o700, exist_ok=True)
        st = prefix.lstat()
        mine = st.st_uid == os.getuid() and prefix.is_dir() and not st.st_mode & 0o022
    except OSError:
        return
    if not mine:  # not a private directory of ours: compile as asked rather than trust it
        return
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


_cache_bytecode_outside_the_checkout()


@pytest.fixture(autouse=True, scope="session")
def _scratch_working_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test starts in a scratch directory, never in the checkout: a test that runs a program
    which writes a relative path (an example's `write("deleted.log", …)`, an export's `-o`) leaves
    nothing in the repository, whichever test forgot to `chdir`. Tests that need the checkout name
    it from `__file__`."""
    before = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    try:
        yield
    finally:
        os.chdir(before)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (every test item, the imported modules: over a million objects in
    a worker) lives as long as the session; frozen, the cyclic collector stops walking it at each
    full collection, and an explicit `gc.collect()` (the store fuzzer calls one per attempt to
    close the stores its commands left open) looks only at what tests made since."""
    gc.collect()
    gc.freeze()
